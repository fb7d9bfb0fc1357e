# Items 1 and 11 of "Fix what has landed": a guest beyond the job's
# allocation, and a root job. Each is submitted through libslurm (no
# cli_filter, no spank_vm check): the prolog must refuse it as a job fault.
# shellcheck shell=bash

limits_script=$'#!/bin/sh\nsrun true\necho "step exit $?"\n'

# limits_refused WHAT EXPECTED JOB [OUTDIR]: the job ended, its step failed
# and said EXPECTED.
limits_refused() {
	local what=$1 msg=$2 job=$3 out
	drain_wait_end "$job" || {
		fail "$what: job $job did not end"
		return 0
	}
	out=$(cat "${4:-$work}/raw-$job.out" 2>/dev/null || true)
	if ! grep -q "step exit [1-9]" <<<"$out"; then
		fail "$what: the step ran: $out"
	elif ! grep -q -- "$msg" <<<"$out"; then
		fail "$what: the step's message does not say '$msg': $out"
	else
		ok "$what: refused ($(grep -o -- "$msg" <<<"$out" | head -1))"
	fi
}

# limits_try WHAT EXPECTED NAME=VALUE...: a job of the test user.
limits_try() {
	local what=$1 msg=$2
	shift 2
	limits_refused "$what" "$msg" "$(drain_submit_raw "$limits_script" "$@")"
}

# DefMemPerCPU gives a one-CPU job 1024M on the node.
drain_vm_mem_beyond_job() {
	limits_try "VM_MEM=200000 in a 1G job" "--vm-mem=200000M is more than the" \
		VM_IMAGE=testguest VM_MEM=200000
}
DRAIN_CASES+=(vm_mem_beyond_job)

drain_vm_cpus_beyond_job() {
	limits_try "VM_CPUS=999 in a one-core job" "--vm-cpus=999 is more than the" \
		VM_IMAGE=testguest VM_CPUS=999
}
DRAIN_CASES+=(vm_cpus_beyond_job)
