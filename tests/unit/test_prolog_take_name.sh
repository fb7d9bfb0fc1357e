#!/bin/sh
# The prolog of a job whose state name an older job's state holds (job ids
# wrap) that cannot be removed (prolog/prolog.c, prolog_take_state_name):
# the job's fault, not the node's, when the older guest cannot hold
# devices: the prolog succeeds, the job's steps find a reason that names
# `slurm-vm cleanup`, and nothing of the new job is made. Only an older
# guest that may still hold devices (a device file it could not give back)
# fails the prolog, which drains the node. The built prolog, run as slurmd
# runs it (root; no slurmd here, so no drain is asked for), with Boot=no.
set -eu
build=${BUILD_DIR:-$(pwd)}
prolog=$build/prolog/slurm-vm-prolog-vm
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (StateDir is root's)"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

mkdir -m 0755 "$t/state" "$t/overlay"
cat >"$t/vm.conf" <<CONF
StateDir=$t/state
OverlayDir=$t/overlay
LogFile=$t/log
Boot=no
ShutdownTimeout=0
CONF
# The older job's state, its journal's one record ($2...) failing to undo.
old_state() { # job record...
	d=$t/state/job-$1.0
	shift
	mkdir -m 0711 "$d"
	(IFS=$(printf '\t') && echo "$*") >"$d/journal"
	chmod 0600 "$d/journal"
}
run_prolog() { # job
	env -i PATH="$PATH" SLURM_CONF="$t/slurm.conf" SLURM_JOB_ID="$1" \
		SLURM_JOB_USER=nobody SLURM_JOB_UID=65534 SPANK_VM_IMAGE=img \
		"$prolog" >>"$t/out" 2>&1
}

# An overlay outside OverlayDir is never deleted: its removal fails, and
# no guest is involved.
old_state 40 OVERLAY /etc/passwd
rc=0
run_prolog 40 || rc=$?
check "a state that cannot be removed is the job's fault: the prolog succeeds (rc $rc)" \
	'[ "$rc" = 0 ]'
check "the job's steps find the reason, naming slurm-vm cleanup" \
	'grep -q "slurm-vm cleanup" "$t/state/job-40.0/reason" 2>/dev/null'
check "the older job's state stays for cleanup; /etc/passwd untouched" \
	'[ -s "$t/state/job-40.0/journal" ] && [ -s /etc/passwd ]'
check "nothing of the new job is made" \
	'[ "$(ls "$t/state")" = job-40.0 ] && [ -z "$(ls "$t/overlay")" ] &&
	 [ "$(ls "$t/state/job-40.0")" = "$(printf "journal\nreason")" ]'

# A VFIO group file that could not be given back (here a regular file,
# which is never touched): the older guest may still hold the device.
touch "$t/vfio-7"
old_state 41 DEVOWNER "$t/vfio-7" 0 0 0600
rc=0
run_prolog 41 || rc=$?
check "a device the older guest may still hold is the node's fault (rc $rc)" \
	'[ "$rc" != 0 ] && grep -q "job 41: .*may still hold its devices" "$t/log"'
check "no reason for the steps then: the node drains" \
	'[ ! -e "$t/state/job-41.0/reason" ]'

[ "$fails" = 0 ] || { sed 's/^/    /' "$t/log" "$t/out"; exit 1; }
