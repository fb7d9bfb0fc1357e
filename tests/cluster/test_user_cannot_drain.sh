#!/bin/bash
# Every way a user has to drain a node, tried on one cluster with one guest
# image: each attempt (tests/cluster/drain/*.sh, sourced in name order) must
# end as a job fault or a refusal, and the node must stay in service after
# each. The parts are the items of "Fix what has landed"; each says which.
#
# A part defines drain_<name>() functions and lists them in DRAIN_CASES; this
# file runs each case, then checks the node (`drain_check_node CASE`).
# cluster-timeout: 900
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
raw=$BUILD_DIR/tests/cluster/svm-submit-raw
[ -x "$raw" ] || harness_skip "$raw is not built (make check builds it)"
guest_cluster_start 120 AllowUserImages=yes
# The user runs it: a copy outside a checkout the user may not enter.
raw=$(harness_world_copy "$raw" 0755)
work=$HARNESS_WORK/$user
img=$HARNESS_IMAGES

# drain_submit_raw SCRIPT NAME=VALUE...: a job through libslurm (no
# spank_vm checks), prints its id.
drain_submit_raw() {
	local script=$1
	shift
	harness_as_user "$user" "$raw" "$work" "$script" "$@"
}

# drain_wait_end JOB [SECONDS]: 0 once the job has ended, 1 on timeout.
drain_wait_end() {
	harness_wait "${2:-120}" "job $1 to end" bash -c \
		"squeue -h -j $1 -t all -o %T | grep -Eqx 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY'"
}

# drain_check_node CASE: the node is still in service after CASE; if not,
# it is resumed, since the next case needs it.
drain_check_node() {
	local before=$failures
	guest_node_up "$1"
	[ "$failures" = "$before" ] ||
		scontrol update nodename="$(sinfo -h -N -o %N | head -1)" \
			state=resume >/dev/null 2>&1 || true
}

DRAIN_CASES=()
for part in "$(dirname "$0")"/drain/*.sh; do
	[ -f "$part" ] || continue
	# shellcheck source=/dev/null
	. "$part"
done
[ "${#DRAIN_CASES[@]}" -gt 0 ] || harness_die "no drain cases in drain/"
for c in "${DRAIN_CASES[@]}"; do
	echo "--- $c"
	"drain_$c" || fail "$c: the case itself failed"
	drain_check_node "$c"
done

[ "$failures" = 0 ]
