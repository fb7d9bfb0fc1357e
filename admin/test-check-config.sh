#!/bin/bash
# `make check` test of slurm-vm check-config on a node laid out as Debian
# ships Slurm: plugstack.conf only includes plugstack.conf.d/*.conf, and
# spank_vm.so is in PluginDir. Each planted fault is reported, and its fix,
# run as printed, makes the next check-config pass that check:
#  - spank_vm.so's line in an included file (absolute and relative include)
#    is found; no line at all: the fix drops a file into plugstack.conf.d/
#    and leaves plugstack.conf as shipped;
#  - a spank_vm.so line naming a path where no plugin is;
#  - SlurmdSpoolDir (with %n) missing, or (as root) not SlurmdUser's;
#  - ImageCatalog and ImageDirs missing; the catalog empty;
#  - no vm.conf: said plainly, with the installed example to copy;
#  - no cli_filter.lua: the fix copies the installed example;
#  - slurm.conf as the release built against reads it: Include, blanks
#    around '=', implied Alloc, several Prolog= lines, RunInJob refused,
#    PrologTimeout, and mpi/pmix's library of the release;
#  - gres.conf Cores= splitting a socket (Slurm 24.11 and later);
#  - SharedDirTransport=: the transport in effect; virtiofs refused with
#    the reason (no virtiofsd, qemu's C one), taken by the Rust one;
#  - (as root) libvirt's qemu directory 0750, as libvirt-daemon-system
#    leaves it, and a closed directory above it: tried as nobody.
# Run from the build directory (automake sets $srcdir).
set -euo pipefail

svm=${SLURM_VM:-./admin/slurm-vm}
svm=$(cd "$(dirname "$svm")" && pwd)/$(basename "$svm")
cc=$(mktemp -d)
trap 'rm -rf "$cc"' EXIT
cc=$(cd "$cc" && pwd -P)
out=$cc/out

fail() {
	echo "FAIL: $*" >&2
	[ -f "$out" ] && sed 's/^/    /' "$out" >&2
	exit 1
}

check() { # runs check-config on $cc's slurm.conf as node n1, output in $out
	"$svm" check-config --slurm-conf "$cc/slurm.conf" --node n1 >"$out" 2>&1 || true
}

fix_for() { # PATTERN: the fix printed under the problem matching PATTERN
	awk -v pat="$1" 'found && /^         fix: / { sub(/^         fix: /, ""); print; exit }
		/^problem: / { found = index($0, pat) > 0 }' "$out"
}

run_fix() { # PATTERN: runs that problem's fix as the admin would paste it
	local fix
	fix=$(fix_for "$1")
	[ -n "$fix" ] || fail "no fix for: $1"
	(cd / && sh -c "$fix") || fail "the fix does not run: $fix"
}

mkdir -p "$cc/plugins" "$cc/plugstack.conf.d"
: >"$cc/plugins/spank_vm.so"
cat >"$cc/slurm.conf" <<EOF
ClusterName=x
SlurmctldHost=h
PluginDir=$cc/plugins
SlurmdUser=$(id -un)
SlurmdSpoolDir=$cc/spool/%n
PlugStackConfig=$cc/plugstack.conf
EOF
: >"$cc/vm.conf"
echo "include $cc/plugstack.conf.d/*.conf" >"$cc/plugstack.conf"
cp "$cc/plugstack.conf" "$cc/plugstack.conf.shipped"

# Item 4: the line is in an included file, found as slurmd finds it.
echo "required spank_vm.so config=$cc/vm.conf" >"$cc/plugstack.conf.d/vm.conf"
check
grep -qF "ok:      $cc/plugstack.conf loads $cc/plugins/spank_vm.so ($cc/plugstack.conf.d/vm.conf:1)" "$out" ||
	fail "spank_vm.so in plugstack.conf.d/ (absolute include) not found"
echo "include plugstack.conf.d/*.conf # relative: from plugstack.conf's directory" >"$cc/plugstack.conf"
check
grep -qF "loads $cc/plugins/spank_vm.so" "$out" ||
	fail "spank_vm.so in plugstack.conf.d/ (relative include) not found"
cp "$cc/plugstack.conf.shipped" "$cc/plugstack.conf"

# No line: the fix adds a file to the included directory (made if need be).
rm -r "$cc/plugstack.conf.d"
check
grep -qF "problem: $cc/plugstack.conf does not load spank_vm.so" "$out" ||
	fail "a plugstack.conf that loads no spank_vm.so not reported"
run_fix "does not load spank_vm.so"
cmp -s "$cc/plugstack.conf" "$cc/plugstack.conf.shipped" ||
	fail "the fix changed plugstack.conf instead of adding to plugstack.conf.d/"
check
grep -qF "loads $cc/plugins/spank_vm.so ($cc/plugstack.conf.d/slurm-vm.conf:1)" "$out" ||
	fail "after its fix, spank_vm.so is still not loaded"

# Item 3: a line naming a path where there is no plugin (the old guide's).
echo "required /usr/lib/slurm-vm/spank_vm.so config=$cc/vm.conf" >"$cc/plugstack.conf.d/slurm-vm.conf"
check
grep -qF "problem: $cc/plugstack.conf.d/slurm-vm.conf:1: /usr/lib/slurm-vm/spank_vm.so is not there" "$out" ||
	fail "a spank_vm.so line naming a missing file not reported"
run_fix "/usr/lib/slurm-vm/spank_vm.so is not there"
grep -qxF "required $cc/plugins/spank_vm.so config=$cc/vm.conf" "$cc/plugstack.conf.d/slurm-vm.conf" ||
	fail "the fix did not name the installed plugin: $(cat "$cc/plugstack.conf.d/slurm-vm.conf")"
check
grep -qF "loads $cc/plugins/spank_vm.so" "$out" || fail "after its fix, spank_vm.so is still not found"

# Item 2: SlurmdSpoolDir (%n: the node's name) missing.
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

# Item 8: the image catalog and image directory missing, then empty.
printf 'ImageCatalog=%s\nImageDirs=%s\n' "$cc/catalog" "$cc/images" >"$cc/vm.conf"
check
grep -qF "problem: ImageCatalog=$cc/catalog is not a directory" "$out" ||
	fail "a missing ImageCatalog not reported"
run_fix "ImageCatalog=$cc/catalog is not a directory"
check
grep -qF "problem: ImageDirs=$cc/images is not a directory" "$out" ||
	fail "a missing ImageDirs directory not reported"
run_fix "ImageDirs=$cc/images is not a directory"
check
grep -q "^problem: Image" "$out" && fail "after their fixes, the image directories are still reported"
grep -qF "warning: ImageCatalog=$cc/catalog is empty" "$out" ||
	fail "an empty catalog not reported"

# Item 8: no vm.conf is said as such; the fixes name the installed examples.
rm "$cc/vm.conf"
check
grep -qF "problem: $cc/vm.conf does not exist" "$out" || fail "a missing vm.conf not reported as missing"
grep -q "does not parse" "$out" && fail "a missing vm.conf reported as not parsing"
fix_for "$cc/vm.conf does not exist" | grep -q "^cp /.*/examples/vm.conf.example $cc/vm.conf " ||
	fail "the missing vm.conf's fix copies no installed example"
fix_for "no cli_filter/lua" | grep -q " cp /.*/examples/cli_filter.lua $cc/cli_filter.lua$" ||
	fail "the cli_filter fix copies no installed example"
fix_for "no cli_filter/lua" | grep -q " etc/cli_filter.lua" &&
	fail "the cli_filter fix names the source tree's etc/cli_filter.lua"
# slurm.conf as the Slurm release slurm-vm is built against reads it (the
# one reader, common/slurm/slurmconf.h; each release's rules in
# tests/unit/test_slurmconf): blanks around '=', an Include, the implied
# Alloc, several Prolog= lines (24.05), RunInJob refused, PrologTimeout
# (25.05), and mpi/pmix's library of the release.
cp "$cc/slurm.conf" "$cc/slurm.conf.base"
check
release=$(sed -n 's/^ok: .* read as Slurm \([0-9]*\)\.\([0-9]*\) does .*/\1\2/p' "$out")
[ -n "$release" ] || fail "check-config does not say which Slurm release's rules it applies"
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
echo "PrologEpilogTimeout=200" >>"$cc/slurm.conf"
if [ "$release" -ge 2505 ]; then
	echo "PrologTimeout=3000" >>"$cc/slurm.conf"
	check
	grep -qF "ok:      PrologTimeout=3000 covers the Prolog's" "$out" ||
		fail "PrologTimeout (25.05) does not override PrologEpilogTimeout"
	grep -qF "ok:      PrologEpilogTimeout=200 covers the Epilog's" "$out" ||
		fail "the Epilog's timeout is not PrologEpilogTimeout without EpilogTimeout"
else
	check
	grep -qF "problem: PrologEpilogTimeout=200 is less than BootTimeout" "$out" ||
		fail "a PrologEpilogTimeout shorter than a boot not reported"
fi
cp "$cc/slurm.conf.base" "$cc/slurm.conf"

# The guest adopted into the job's extern step (issue #29): a centre's
# configuration says nothing of it; each setting that hides the guest from
# accounting or limits gives its own warning (note: no sacct, core
# specialization with ConstrainCores, huge pages in the pool).
cp "$cc/slurm.conf.base" "$cc/slurm.conf"
: >>"$cc/vm.conf"
cp "$cc/vm.conf" "$cc/vm.conf.adopt"
printf '%s\n' PrologFlags=Alloc,Contain ProctrackType=proctrack/cgroup \
	TaskPlugin=task/affinity,task/cgroup JobAcctGatherType=jobacct_gather/cgroup \
	AccountingStorageType=accounting_storage/slurmdbd UnkillableStepTimeout=300 >>"$cc/slurm.conf"
printf 'CgroupPlugin=cgroup/v1\nconstraincores=yes # any case\n' >"$cc/cgroup.conf"
mkdir -p "$cc/sys/kernel/mm/hugepages/hugepages-2048kB"
echo 0 >"$cc/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
echo "SysfsRoot=$cc/sys" >>"$cc/vm.conf"
cp "$cc/slurm.conf" "$cc/slurm.conf.centre"
check
grep -qF "ok:      JobAcctGatherType=jobacct_gather/cgroup: the guest's MaxRSS is its cgroup's RSS (cgroup v1 total_rss" "$out" ||
	fail "jobacct_gather/cgroup on cgroup v1: MaxRSS not explained"
for w in "lacks Contain" ProctrackType= "lacks task/cgroup" "JobAcctGatherType=" \
	AccountingStorageType= ulimit_pam_adopt UnkillableStepTimeout= "ConstrainCores=yes" "huge pages"; do
	grep -F "$w" "$out" | grep -q "^\(warning\|note\):" && fail "a centre's configuration gives: $w"
done
adopt_case() { # SETTING EXPECTED: slurm.conf.centre with SETTING, EXPECTED printed
	{ cat "$cc/slurm.conf.centre"; echo "$1"; } >"$cc/slurm.conf"
	check
	grep -qF "$2" "$out" || fail "$1: not reported as: $2"
}
adopt_case PrologFlags=Alloc "note:    PrologFlags=Alloc lacks Contain: the guest stays outside the job"
adopt_case ProctrackType=proctrack/linuxproc "note:    ProctrackType=proctrack/linuxproc: adopting the guest counts and kills nothing"
adopt_case TaskPlugin=task/affinity "note:    TaskPlugin=task/affinity lacks task/cgroup: the guest is counted but not constrained"
adopt_case JobAcctGatherType=jobacct_gather/none "note:    JobAcctGatherType=jobacct_gather/none: nothing of the guest"
adopt_case JobAcctGatherType=jobacct_gather/linux "ok:      JobAcctGatherType=jobacct_gather/linux: the guest's MaxRSS is its processes' RSS, VFIO-pinned RAM included"
adopt_case AccountingStorageType=accounting_storage/none "note:    AccountingStorageType=accounting_storage/none: sacct shows no job"
adopt_case LaunchParameters=enable_nss_slurm,ulimit_pam_adopt "warning: LaunchParameters=enable_nss_slurm,ulimit_pam_adopt: the adopted qemu gets the job's resource limits"
adopt_case UnkillableStepTimeout=60 "warning: UnkillableStepTimeout=60 with DeviceAttach=vfio"
[ "$(awk '/^warning: UnkillableStepTimeout/ { getline; sub(/^ *fix: /, ""); print }' "$out")" = UnkillableStepTimeout=180 ] ||
	fail "the UnkillableStepTimeout fix is not 180 s"
adopt_case "NodeName=n[0-3] CpuSpecList=0-1" "note:    ConstrainCores=yes with core specialization: the guest's emulator and I/O threads leave the housekeeping cores"
{ cat "$cc/slurm.conf.centre"; echo UnkillableStepTimeout=60; } >"$cc/slurm.conf"
echo DeviceAttach=emulate >>"$cc/vm.conf"
check
grep -q "UnkillableStepTimeout" "$out" && fail "UnkillableStepTimeout reported without DeviceAttach=vfio"
adopt_case "NodeName=n2 CpuSpecList=0-1" "ok:      JobAcctGatherType"
grep -q "core specialization" "$out" && fail "another node's CpuSpecList applied to n1"
cp "$cc/vm.conf.adopt" "$cc/vm.conf"
echo "SysfsRoot=$cc/sys" >>"$cc/vm.conf"
echo 512 >"$cc/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
check
grep -qF "note:    512 huge pages in this node's pool: a --vm-hugepages guest's RAM is not in the job's memory cgroup" "$out" ||
	fail "huge pages in the pool not noted"
cp "$cc/vm.conf.adopt" "$cc/vm.conf"
rm -r "$cc/cgroup.conf" "$cc/sys"
cp "$cc/slurm.conf.base" "$cc/slurm.conf"

# mpi/pmix of the distribution's PMIx (mpi_pmix_v5.so in Debian 13) and the
# library its Slurm release opens: 22.05 libpmix.so (libpmix-dev), 23.11
# and later libpmix.so.2 (libpmix2t64).
if [ "$release" -ge 2311 ]; then
	lib=libpmix.so.2 pkg=libpmix2t64
else
	lib=libpmix.so pkg=libpmix-dev
fi
: >"$cc/plugins/mpi_pmix_v5.so"
check
grep -qF "problem: $cc/plugins/mpi_pmix_v5.so opens $cc/pmix2/lib/$lib, which is missing" "$out" ||
	fail "mpi_pmix_v5.so without its $lib not reported"
[ "$(fix_for "mpi_pmix_v5.so opens")" = "install $pkg on every node (apt-get install $pkg)" ] ||
	fail "the PMIx fix is: $(fix_for "mpi_pmix_v5.so opens")"
mkdir -p "$cc/pmix2/lib" && : >"$cc/pmix2/lib/$lib"
check
grep -qF "ok:      srun --mpi=pmix: $cc/pmix2/lib/$lib is there" "$out" ||
	fail "with $lib there, mpi/pmix is still reported"
rm -r "$cc/plugins/mpi_pmix_v5.so" "$cc/pmix2"

# gres.conf Cores= of one NUMA node on an SNC2 node (two NUMA nodes per
# socket): slurmctld 24.11 and later refuses it and drains the node; the
# fix is whole sockets. Earlier releases take it. (Each release's rule on
# this topology: tests/unit/test_slurmconf, test_gres_cores.)
printf 'TopologyFile=%s\n' "$(cd "${srcdir:-.}" && pwd)/tests/fixtures/topology/24em64t-2p4n3c2t-snc2-pci.xml" >>"$cc/vm.conf"
echo "NodeName=n1 Name=gpu File=/dev/null Cores=3-5" >"$cc/gres.conf"
check
if [ "$release" -ge 2411 ]; then
	grep -qF "problem: $cc/gres.conf:1: Name=gpu Cores=3-5 splits socket 0: slurmctld of Slurm ${release:0:2}.${release:2} refuses it" "$out" ||
		fail "a Cores= splitting a socket not reported on Slurm $release"
	[ "$(fix_for "Cores=3-5 splits socket 0")" = "Cores=0-5 (whole sockets), or regenerate gres.conf with \`slurm-vm gres\`" ] ||
		fail "the Cores= fix is: $(fix_for "Cores=3-5 splits socket 0")"
	echo "NodeName=n1 Name=gpu File=/dev/null Cores=0-5" >"$cc/gres.conf"
	check
	grep -qF "ok:      $cc/gres.conf: all 1 device files of node n1 exist, every Cores= holds whole sockets" "$out" ||
		fail "whole sockets in Cores= still reported"
else
	grep -q "splits socket" "$out" && fail "Slurm $release takes any Cores=, yet reported"
	grep -qF "ok:      $cc/gres.conf: all 1 device files of node n1 exist" "$out" ||
		fail "the gres.conf line not checked"
fi
rm "$cc/gres.conf"

# SharedDirTransport=: the transport in effect, and why; virtiofs refused
# with the reason where VirtiofsdPath= is missing or qemu's C virtiofsd
# (root only: slurm-vm runs virtiofsd as the job user), the real one where
# qemu 7.x installed it; a stand-in prints what the Rust one does.
# The share: a directory of root's whose parents are root's, as a real
# share is (this test also runs as nobody, in a package build).
share=/usr/share
cp "$cc/vm.conf" "$cc/vm.conf.base"
with_shares() { # vm.conf lines after the base and SharedDirs=$share
	{ cat "$cc/vm.conf.base"; echo "SharedDirs=$share"; printf '%s\n' "$@"; } >"$cc/vm.conf"
	check
}
c_virtiofsd=/usr/lib/qemu/virtiofsd
# Not root (a package build): qemu's C virtiofsd fails (setgroups) before
# it prints its version, so the stand-in says it; likewise where that path
# is Debian 13's link to the Rust one.
if [ ! -x "$c_virtiofsd" ] || [ -L "$c_virtiofsd" ] || [ "$(id -u)" != 0 ]; then
	c_virtiofsd=$cc/c-virtiofsd
	printf '#!/bin/sh\necho "virtiofsd version 7.2.22"\n' >"$c_virtiofsd"
	chmod +x "$c_virtiofsd"
fi
printf '#!/bin/sh\necho "virtiofsd 1.13.2"\n' >"$cc/rust-virtiofsd"
chmod +x "$cc/rust-virtiofsd"
# The default, auto: 9p without a Rust virtiofsd, virtiofs with one.
with_shares "VirtiofsdPath=$cc/none"
grep -qF "ok:      SharedDirs: served over 9p (SharedDirTransport=auto, VirtiofsdPath=$cc/none" "$out" ||
	fail "the default transport (auto, no virtiofsd: 9p) not reported"
grep -qF "SharedDirs: $share is shared with the guests over 9p" "$out" ||
	fail "the share's transport not named"
with_shares "VirtiofsdPath=$cc/rust-virtiofsd"
grep -qF "ok:      SharedDirs: served over virtiofs (SharedDirTransport=auto, VirtiofsdPath=$cc/rust-virtiofsd is the Rust virtiofsd)" "$out" ||
	fail "the default transport (auto, the Rust virtiofsd: virtiofs) not reported"
with_shares SharedDirTransport=9p "VirtiofsdPath=$cc/rust-virtiofsd"
grep -qF "ok:      SharedDirs: served over 9p (SharedDirTransport=9p)" "$out" ||
	fail "SharedDirTransport=9p not reported"
with_shares SharedDirTransport=virtiofs "VirtiofsdPath=$c_virtiofsd"
grep -qF "problem: SharedDirs: SharedDirTransport=virtiofs, but VirtiofsdPath=$c_virtiofsd is qemu's C virtiofsd, which must run as root (slurm-vm runs virtiofsd as the job user): the prolog drains the node" "$out" ||
	fail "virtiofs by qemu's C virtiofsd not refused"
fix_for "is qemu's C virtiofsd" | grep -qF "install the Rust virtiofsd" ||
	fail "the fix for the C virtiofsd is: $(fix_for "is qemu's C virtiofsd")"
with_shares SharedDirTransport=virtiofs "VirtiofsdPath=$cc/none"
grep -qF "problem: SharedDirs: SharedDirTransport=virtiofs, but VirtiofsdPath=$cc/none is missing or not an executable file" "$out" ||
	fail "virtiofs without virtiofsd not refused"
with_shares SharedDirTransport=virtiofs "VirtiofsdPath=$cc/rust-virtiofsd"
grep -qF "ok:      SharedDirs: served over virtiofs (SharedDirTransport=virtiofs, VirtiofsdPath=$cc/rust-virtiofsd is the Rust virtiofsd)" "$out" ||
	fail "virtiofs by the Rust virtiofsd not taken"
grep -qF "SharedDirs: $share is shared with the guests over virtiofs" "$out" ||
	fail "the share's transport (virtiofs) not named"
with_shares SharedDirTransport=auto "VirtiofsdPath=$c_virtiofsd"
grep -qF "ok:      SharedDirs: served over 9p (SharedDirTransport=auto, VirtiofsdPath=$c_virtiofsd is qemu's C virtiofsd" "$out" ||
	fail "auto with qemu's C virtiofsd is not 9p, or not said why"
grep -q "problem: SharedDirs: SharedDirTransport" "$out" && fail "auto reported as a problem"
cp "$cc/vm.conf.base" "$cc/vm.conf"

# Item 1: libvirt's qemu directory as Debian's libvirt-daemon-system leaves
# it (libvirt-qemu's 0750; daemon stands in for libvirt-qemu), and a
# directory above it closed too: qemu, as the job user, could not reach
# its domain-ID-NAME/ in either. Each is reported, tried as nobody; the
# fixes, run as printed (dpkg-statoverride on a private dpkg database),
# let nobody in, and libvirt-daemon-system's postinst (its
# add_statoverrides, 9.0.0-4, as an upgrade runs it) keeps them.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && id daemon >/dev/null 2>&1; then
	lv=$cc/var/lib/libvirt/qemu
	mkdir -p "$lv/channel/target" "$cc/dpkg"
	: >"$cc/dpkg/statoverride"
	chmod 0755 "$cc" "$cc/var" "$cc/var/lib"
	chmod 0700 "$cc/var/lib/libvirt"
	chown daemon:daemon "$lv"
	chmod 0750 "$lv"
	check_lv() {
		"$svm" check-config --slurm-conf "$cc/slurm.conf" --node n1 \
			--libvirt-dir "$lv" >"$out" 2>&1 || true
	}
	check_lv
	grep -qF "problem: $lv: an ordinary user cannot enter it (tried as nobody: Permission denied)" "$out" ||
		fail "libvirt's qemu directory as libvirt-daemon-system leaves it (0750) not reported"
	grep -qF "problem: $cc/var/lib/libvirt: an ordinary user cannot enter it" "$out" ||
		fail "a closed directory above libvirt's qemu directory not reported"
	fix_for "$lv: an ordinary user" | grep -qF "dpkg-statoverride --update --add daemon daemon 0751 $lv" ||
		fail "the fix for $lv is not a statoverride keeping its owner, 0751"
	export DPKG_ADMINDIR=$cc/dpkg
	# an admin's earlier statoverride (the one libvirt's 0750 came from)
	dpkg-statoverride --add daemon daemon 0750 "$lv"
	run_fix "$lv: an ordinary user"
	[ "$(dpkg-statoverride --list "$lv")" = "daemon daemon 751 $lv" ] ||
		fail "after the fix, the statoverride is: $(dpkg-statoverride --list "$lv")"
	run_fix "$cc/var/lib/libvirt: an ordinary user"
	check_lv
	grep -qF "ok:      $lv: an ordinary user can enter it and every directory above (tried as nobody)" "$out" ||
		fail "after their fixes, libvirt's qemu directory is still reported"
	for dir in "$lv/" "$lv/channel/" "$lv/channel/target/"; do
		if ! dpkg-statoverride --list "${dir}" >/dev/null 2>&1; then
			[ ! -e "${dir}" ] || chown daemon:daemon "${dir}"
			[ ! -e "${dir}" ] || chmod 0750 "${dir}"
		fi
	done
	check_lv
	grep -qF "ok:      $lv: an ordinary user can enter it" "$out" ||
		fail "libvirt-daemon-system's postinst undid the fix"
	unset DPKG_ADMINDIR
	# Not the system's libvirt (a private libvirtd, or none): nothing said.
	"$svm" check-config --slurm-conf "$cc/slurm.conf" --node n1 \
		--libvirt-dir "$cc/none/qemu" >"$out" 2>&1 || true
	grep -qF "$cc/none" "$out" && fail "a missing libvirt directory was reported"
fi
# BootMode=warm runs the catalog image's files in root's qemu (the
# template): a layer, kernel or initrd another user owns, or below a
# directory group or others may write, is reported (as root: the tree is
# under /run, root's, since $cc is below /tmp, which anyone may write).
if [ "$(id -u)" = 0 ] && [ "$(stat -c '%u %a' /run)" = "0 755" ]; then
	wt=$(mktemp -d /run/svm-cc-warm-XXXXXX)
	trap 'rm -rf "$cc" "$wt"' EXIT
	chmod 755 "$wt"
	mkdir -m 755 "$wt/catalog" "$wt/images"
	qemu-img create -q -f qcow2 "$wt/images/deb.qcow2" 1M
	: >"$wt/images/vmlinuz"
	: >"$wt/images/initrd.img"
	chmod 644 "$wt/images/deb.qcow2" "$wt/images/vmlinuz" "$wt/images/initrd.img"
	printf 'Path=%s\nFormat=qcow2\nKernel=%s\nInitrd=%s\nBootMode=warm\n' \
		"$wt/images/deb.qcow2" "$wt/images/vmlinuz" "$wt/images/initrd.img" \
		>"$wt/catalog/deb.image"
	{ cat "$cc/vm.conf.base"; printf 'ImageCatalog=%s\nImageDirs=%s\n' \
		"$wt/catalog" "$wt/images"; } >"$cc/vm.conf"
	check
	grep -qF "ok:      $wt/catalog: all 1 images resolve" "$out" ||
		fail "a warm image of root's files not taken"
	chown nobody "$wt/images/vmlinuz"
	check
	grep -qF "problem: catalog image deb boots warm, but $wt/images/vmlinuz is not root's alone" "$out" ||
		fail "a warm image's kernel another user owns not reported"
	chown root "$wt/images/vmlinuz"
	chmod 775 "$wt/images"
	check
	grep -qF "problem: catalog image deb boots warm, but $wt/images is not root's alone" "$out" ||
		fail "a warm image in a group-writable directory not reported"
	run_fix "catalog image deb boots warm"
	check
	grep -qF "ok:      $wt/catalog: all 1 images resolve" "$out" ||
		fail "after its fix, the warm image is still reported"
	# Cold: root's qemu never runs them, nothing to say.
	chmod 775 "$wt/images"
	sed -i 's/^BootMode=warm$/BootMode=cold/' "$wt/catalog/deb.image"
	check
	grep -qF "boots warm" "$out" && fail "a cold image's files reported"
	rm -rf "$wt"
fi
exit 0
