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

# Item 11: a root job. Without AllowRoot the relay refused `--uid 0` and the
# prolog drained the node; now the prolog refuses the job.
drain_root_job_without_allowroot() {
	local job
	job=$(cd "$work" && "$raw" "$work" "$limits_script" VM_IMAGE=testguest)
	limits_refused "a root job with AllowRoot=no" \
		"the job runs as root and AllowRoot=no" "$job"
}
DRAIN_CASES+=(root_job_without_allowroot)

# With AllowRoot=yes the relay is told so, and the root job's task runs as
# root in the guest. Its qemu, outside the job's cgroup, is bounded by the
# job's memory (<memtune><hard_limit>, applied by libvirt's cgroup).
drain_root_job_with_allowroot() {
	local job out dom mem limit cg cglimit=
	harness_vmconf_set AllowRoot yes
	job=$(cd "$work" && "$raw" "$work" \
		$'#!/bin/sh\nsrun id -u\necho "step exit $?"\nsleep 60\n' \
		VM_IMAGE=testguest)
	harness_wait 300 "job $job's step" grep -q "step exit" "$work/raw-$job.out"
	harness_vmconf_set AllowRoot no
	dom=slurmvm-job-$job.0
	limit=$(virsh memtune "$dom" 2>/dev/null | awk '/hard_limit/ {print $3}')
	mem=$(sed -n "s/.*job $job: node .*, memory \([0-9]*\)M.*/\1/p" "$HARNESS_VM_LOG" | head -1)
	cg=$(find /sys/fs/cgroup/memory/machine -maxdepth 1 -name "*job?$job*" 2>/dev/null | head -1)
	[ -n "$cg" ] && cglimit=$(cat "$cg/memory.limit_in_bytes")
	scancel "$job"
	drain_wait_end "$job" || fail "root job $job did not end"
	# Its epilog stops the guest: the node completes the job meanwhile.
	harness_wait 120 "the node to finish job $job" bash -c \
		"sinfo -h -N -o %t | grep -vqx 'comp'" || true
	out=$(cat "$work/raw-$job.out" 2>/dev/null || true)
	if grep -qx 0 <<<"$out" && grep -q "step exit 0" <<<"$out"; then
		ok "a root job with AllowRoot=yes runs as root in its guest"
	else
		fail "a root job with AllowRoot=yes: $out"
	fi
	if [ -z "$mem" ] || [ "$limit" != $((mem * 1024)) ]; then
		fail "qemu's hard_limit ${limit:-none} KiB, the job has ${mem:-?}M"
	elif [ "$cglimit" != $((mem << 20)) ]; then
		fail "qemu's memory cgroup ${cg:-none}: limit ${cglimit:-none}, not ${mem}M"
	else
		ok "qemu bounded at the job's ${mem}M (libvirt memtune, $cg)"
	fi
}
DRAIN_CASES+=(root_job_with_allowroot)
