# shellcheck shell=bash
# Item 6 of "Fix what has landed": the children that run as the job user
# (the image check, the ~/.ssh/authorized_keys read) must not hang the
# prolog past PrologEpilogTimeout. A FIFO without a writer is what a user
# has at hand: its open blocks unless it is non-blocking. (A hung NFS or
# FUSE open is held by the deadline, tests/unit/test_user_deadline.c.)

DRAIN_FIFO_SCRIPT=$'#!/bin/sh\nsrun true\necho "step exit $?"\n'

# drain_fifo_job WHAT SECONDS VM_IMAGE: the job's output once it has ended,
# within SECONDS (the prolog did not wait on the FIFO).
drain_fifo_job() {
	local what=$1 secs=$2 job t0
	t0=$(harness_now)
	job=$(drain_submit_raw "$DRAIN_FIFO_SCRIPT" VM_IMAGE="$3") || {
		fail "$what: submission failed"
		return 1
	}
	drain_wait_end "$job" "$secs" || {
		fail "$what: job $job still runs after ${secs}s: the prolog waits on the FIFO"
		return 1
	}
	echo "$what: job $job ended after $(harness_elapsed "$t0")s" >&2
	cat "$work/raw-$job.out" 2>/dev/null
}

drain_fifo_image() {
	local fifo=$img/hang-$$.qcow2 out
	mkfifo -m 0644 "$fifo"
	chown "$user" "$fifo"
	out=$(drain_fifo_job "a FIFO as image" 60 "$fifo") || { rm -f "$fifo"; return 0; }
	rm -f "$fifo"
	if grep -q "step exit [1-9]" <<<"$out" &&
		grep -q "is not a regular file" <<<"$out"; then
		ok "a FIFO as image: a job fault, the step says 'is not a regular file'"
	else
		fail "a FIFO as image: the step was not refused with the reason: $out"
	fi
}
DRAIN_CASES+=(fifo_image)

drain_fifo_authorized_keys() {
	local home keys out
	home=$(getent passwd "$user" | cut -d: -f6)
	keys=$home/.ssh/authorized_keys
	harness_as_user "$user" sh -c "mkdir -p -m 700 '$home/.ssh' && rm -f '$keys' && mkfifo -m 600 '$keys'"
	out=$(drain_fifo_job "a FIFO as authorized_keys" 240 testguest) || { rm -f "$keys"; return 0; }
	rm -f "$keys"
	# Keys that cannot be read are not used; the guest is reachable
	# through the agent, so the job runs.
	if grep -q "step exit 0" <<<"$out"; then
		ok "a FIFO as authorized_keys: not read, the job's step ran"
	else
		fail "a FIFO as authorized_keys: the step did not run: $out"
	fi
}
DRAIN_CASES+=(fifo_authorized_keys)
