#!/bin/bash
# check-config's slurm.conf (slurm_conf.c):
#  - SlurmdSpoolDir (with %n) missing, or (as root) not SlurmdUser's;
#  - no cli_filter.lua: the fix copies the installed example;
#  - slurm.conf as the release built against reads it: Include, blanks
#    around '=', implied Alloc, several Prolog= lines, RunInJob refused.
. "$(dirname "$0")/test-setup.sh"

# Item 2: SlurmdSpoolDir (%n: the node's name) missing.
check
grep -qF "problem: SlurmdSpoolDir=$cc/spool/%n: $cc/spool/n1 is not a directory" "$out" ||
	fail "a missing SlurmdSpoolDir not reported"
run_fix "SlurmdSpoolDir=$cc/spool/%n"
check
grep -qF "ok:      SlurmdSpoolDir=$cc/spool/%n: $cc/spool/n1 is $(id -un)'s" "$out" ||
	fail "after its fix, SlurmdSpoolDir is still reported"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	chown nobody "$cc/spool/n1"
	check
	grep -qF "problem: SlurmdSpoolDir=$cc/spool/%n: $cc/spool/n1 is not owned by SlurmdUser root" "$out" ||
		fail "a SlurmdSpoolDir owned by nobody not reported"
	run_fix "is not owned by SlurmdUser"
	check
	grep -qF "ok:      SlurmdSpoolDir=$cc/spool/%n: $cc/spool/n1 is root's" "$out" ||
		fail "after its fix, SlurmdSpoolDir is still not root's"
fi

# No cli_filter.lua: the fix names the installed example.
check
fix_for "no cli_filter/lua" | grep -q " cp /.*/examples/cli_filter.lua $cc/cli_filter.lua$" ||
	fail "the cli_filter fix copies no installed example"
fix_for "no cli_filter/lua" | grep -q " etc/cli_filter.lua" &&
	fail "the cli_filter fix names the source tree's etc/cli_filter.lua"

# slurm.conf as the Slurm release slurm-vm is built against reads it (the
# one reader, common/slurm/slurmconf.h; each release's rules in
# tests/unit/test_slurmconf): blanks around '=', an Include, the implied
# Alloc, several Prolog= lines (24.05), RunInJob refused.
echo "Epilog = /usr/sbin/slurm-vm-epilog" >"$cc/scripts.conf"
printf '%s\n' "Prolog = /usr/sbin/slurm-vm-prolog" "Include scripts.conf" \
	"PrologFlags=Contain" >>"$cc/slurm.conf"
check
grep -qxF "ok:      Prolog=/usr/sbin/slurm-vm-prolog" "$out" ||
	fail "Prolog = ... (blanks around '=', as Slurm allows) not read"
grep -qxF "ok:      Epilog=/usr/sbin/slurm-vm-epilog" "$out" ||
	fail "the Epilog= line of an Included file not read"
grep -qF "ok:      PrologFlags=Contain sets Alloc" "$out" ||
	fail "PrologFlags=Contain (which implies Alloc) reported as lacking it"
echo "Include $cc/missing.conf" >>"$cc/slurm.conf"
check
grep -qF "slurm.conf:10: Include $cc/missing.conf: cannot read $cc/missing.conf" "$out" ||
	fail "an Include of a missing file (slurmctld does not start) not reported"
cp "$cc/slurm.conf.base" "$cc/slurm.conf"
printf '%s\n' "Prolog=/usr/sbin/slurm-vm-prolog" "Prolog=$cc/site-prolog" \
	"Epilog=/usr/sbin/slurm-vm-epilog" "PrologFlags=Alloc,RunInJob" >>"$cc/slurm.conf"
check
if [ "$release" -ge 2405 ]; then
	grep -qxF "ok:      Prolog=/usr/sbin/slurm-vm-prolog, $cc/site-prolog" "$out" ||
		fail "Slurm $release runs every Prolog= line's script: slurm-vm-prolog's not found"
	grep -qF "problem: PrologFlags=Alloc,RunInJob has RunInJob: the Prolog runs in the job's extern slurmstepd" "$out" ||
		fail "PrologFlags=RunInJob not refused"
	[ "$(fix_for "has RunInJob")" = "PrologFlags=Alloc,Contain (RunInJob's Contain and Alloc, without RunInJob)" ] ||
		fail "RunInJob's fix is: $(fix_for "has RunInJob")"
else
	grep -qF "problem: Prolog is $cc/site-prolog, not slurm-vm-prolog" "$out" ||
		fail "Slurm $release runs only the last Prolog= line: a site prolog after ours not reported"
	grep -qF "problem: PrologFlags=Alloc,RunInJob: Slurm ${release:0:2}.${release:2} has no flag RunInJob" "$out" ||
		fail "a PrologFlag unknown to Slurm $release not reported"
fi
cp "$cc/slurm.conf.base" "$cc/slurm.conf"
exit 0
