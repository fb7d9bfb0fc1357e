#!/bin/bash
# Jobs submitted straight through libslurm with hand-made SPANK_* values
# (spank_vm.so never sees them, as with slurmrestd): the prolog refuses each,
# no guest is started, no overlay made, the job's step fails with the reason
# (the cause itself, as the prolog logged it),
# and the node stays up.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
raw=$BUILD_DIR/tests/cluster/svm-submit-raw
[ -x "$raw" ] || harness_skip "$raw is not built (make check builds it)"
harness_ensure_test_users
harness_start
# The user runs it: a copy outside a checkout the user may not enter.
raw=$(harness_world_copy "$raw" 0755)
harness_vmconf_set AllowUserImages yes
harness_add_catalog_image testimg "" raw
img=$HARNESS_IMAGES
qemu-img create -q -f qcow2 -u -b /etc/shadow -F raw "$img/steal.qcow2" 64M
qemu-img create -q -f qcow2 -o data_file=/etc/shadow,data_file_raw=on "$img/data.qcow2" 64M 2>/dev/null ||
	qemu-img create -q -f qcow2 -o data_file="$img/d.raw" "$img/data.qcow2" 64M
chmod 0644 "$img"/*.qcow2
work=$HARNESS_WORK/$user
script=$'#!/bin/sh\nsrun cat /etc/hostname\necho "step exit $?"\n'

# hostile NAME EXPECTED-IN-LOG SPANK-VALUES...
hostile() {
	local what=$1 msg=$2 job out log
	shift 2
	job=$(harness_as_user "$user" "$raw" "$work" "$script" "$@")
	harness_wait 60 "job $job to end" bash -c \
		"squeue -h -j $job -t all -o %T | grep -Eqx 'COMPLETED|FAILED|CANCELLED'" ||
		{ fail "$what: job $job did not end"; return; }
	out=$(cat "$work/raw-$job.out" 2>/dev/null || true)
	# The prolog's lines for this job: from its request to its end.
	log=$(sed -n "/job $job: VM requested/,/job $job: VM job ended/p" "$HARNESS_VM_LOG")
	if ! grep -q "$msg" <<<"$log"; then
		fail "$what: the prolog did not say '$msg'"
		tail -3 <<<"$log"
	elif ! grep -q "step exit [1-9]" <<<"$out" ||
		! grep -q "is not available, so this step cannot run" <<<"$out"; then
		fail "$what: the step was not refused: $out"
	elif ! grep -q "$msg" <<<"$out"; then
		fail "$what: the step's message does not say why: $out"
	elif grep -q "job $job: phase overlay" "$HARNESS_VM_LOG"; then
		fail "$what: the prolog went on to make an overlay"
	else
		ok "$what refused: $(grep "$msg" <<<"$log" | head -1 | sed 's/.*error: //')"
	fi
}

hostile "a host file as image" "lies outside the allowed image directories" \
	VM_IMAGE=/etc/shadow
hostile "a qcow2 backed by a host file" "lies outside the allowed image directories" \
	VM_IMAGE="$img/steal.qcow2"
hostile "a qcow2 with a data-file" "external data file" \
	VM_IMAGE="$img/data.qcow2"
hostile "a path as image name" "not a valid image name\|absolute path" \
	VM_IMAGE=../../etc/shadow
hostile "an absurd vCPU count" "SPANK_VM_CPUS=.* is not a vCPU count" \
	VM_IMAGE=testimg VM_CPUS=99999999999999999999
hostile "a negative memory size" "SPANK_VM_MEM=.* is not a size" \
	VM_IMAGE=testimg VM_MEM=-5
hostile "a newline in the image name" "not a valid image name\|unknown image" \
	VM_IMAGE=$'testimg\nFAKE LOG LINE'
# The reason may hold the guest's console: the job's steps show it to the
# job's user, nobody else reads it, though its path is predictable. It is
# root's: a file of the user's in the state directory (on /run) could be
# made writable and grown until the node's /run is full.
job=$(harness_as_user "$user" "$raw" "$work" \
	$'#!/bin/sh\nsrun true\necho "step exit $?"\nsleep 60\n' \
	VM_IMAGE=testimg VM_CPUS=999)
reason=$(guest_state_dir "$job")/reason
if ! harness_wait 60 "job $job's step to fail" grep -q "step exit" "$work/raw-$job.out"; then
	fail "reason: the step of job $job did not end"
elif ! grep -q "more than the .* CPUs the job has on this node" "$work/raw-$job.out"; then
	fail "reason: the step of job $job did not show it: $(cat "$work/raw-$job.out")"
elif [ "$(stat -c %a:%U "$reason")" != "400:root" ]; then
	fail "reason: $(stat -c %a:%U "$reason"), not 400:root"
elif harness_as_user "$user" sh -c "chmod 600 '$reason' && echo x >>'$reason'" 2>/dev/null; then
	fail "reason: the job's user can make $reason writable and write it"
elif harness_as_user svmtest2 cat "$reason" >/dev/null 2>&1; then
	fail "reason: another user reads $reason"
else
	ok "reason: root's (0400), shown by the job's step; its user cannot write it, another user cannot read it"
fi
scancel "$job"
harness_wait 60 "job $job to end" bash -c \
	"squeue -h -j $job -t all -o %T | grep -Eqx 'COMPLETED|FAILED|CANCELLED'" ||
	fail "reason: job $job did not end"
# (its epilog: the node completes it, then is idle again)
harness_wait 60 "the node to finish job $job" bash -c \
	"sinfo -h -N -o %t | grep -vqx 'comp'" || true

# The logger keeps one message on one line.
if grep -q '^FAKE LOG LINE' "$HARNESS_VM_LOG"; then
	fail "a newline in a SPANK value forged a log line"
else
	ok "no forged log line"
fi
guest_node_up

[ "$failures" = 0 ]
