# Items 4, 5 and 11 of "Fix what has landed": a device file held after
# the job it was lent to, storage a job leaves on the node's filesystems,
# and state of an earlier job with the same id (job ids wrap).
# shellcheck shell=bash

storage_state=$HARNESS_DIR/vm/state
storage_overlays=$HARNESS_DIR/vm/overlay
storage_devdir=$HARNESS_DIR/nodes/${HARNESS_NODES[0]}/dev/vfio
[ -d "$storage_devdir" ] ||
	storage_devdir=$(dirname "$(grep -o 'File=[^ ]*' "$HARNESS_ETC/gres.conf" | head -1 | cut -d= -f2)")

# Item 4: a process of the user still holds the group files after the job
# they were lent to (here: opened, then turned into the user's). The next
# VM job that gets one kills it instead of draining. The same job's batch
# script (item 5) tries to store a file beside its relay socket in /run.
drain_held_device_and_sock_write() {
	local uid holder job out
	uid=$(id -u "$user")
	/usr/bin/python3 -c 'import os, sys, time
fds = [os.open(f, os.O_PATH) for f in sys.argv[2:]]
os.setgid(int(sys.argv[1])); os.setuid(int(sys.argv[1])); time.sleep(300)' \
		"$uid" "$storage_devdir"/[0-9]* &
	holder=$!
	harness_wait 10 "the user's holder" bash -c "[ \"\$(stat -c %u /proc/$holder)\" = $uid ]" ||
		fail "the user's holder did not start"
	out=$work/sock-write.out
	rm -f "$out"
	# -c1: the GPU's cores are its socket's (enforce-binding), and the
	# harness's node has one core per socket on Slurm 24.11+.
	job=$(harness_as_user "$user" sbatch --parsable -c1 --mem=1G \
		--vm-image=testguest --gres=gpu:1 -o /dev/null --wrap \
		"s=$storage_state/job-\$SLURM_JOB_ID.0/sock; { [ -S \$s/relay.sock ] && echo -n 'socket '; if echo x >\$s/junk 2>/dev/null; then echo written; else echo refused; fi; } >$out")
	drain_wait_end "$job" 180 || fail "job $job did not end"
	grep -q "job $job: .* was held by [0-9]* process.* of a user whose job ended (uid $uid" "$HARNESS_VM_LOG" &&
		ok "held device: $(grep -o "job $job: .* was held by .*" "$HARNESS_VM_LOG" | sed "s|$storage_devdir/||" | head -1)" ||
		fail "held device: job $job logged no reclaim: $(grep "job $job: .*held" "$HARNESS_VM_LOG" | tail -1)"
	harness_wait 10 "the holder to be gone" bash -c "! kill -0 $holder 2>/dev/null" &&
		ok "held device: the user's holder is gone" ||
		fail "held device: the user's holder $holder still runs"
	kill -9 "$holder" 2>/dev/null || true
	wait "$holder" 2>/dev/null || true
	[ "$(cat "$out" 2>/dev/null)" = "socket refused" ] &&
		ok "sock/: the job user cannot store a file beside the relay socket" ||
		fail "sock/: a file written there: $(cat "$out" 2>/dev/null || echo 'no output')"
	return 0
}
DRAIN_CASES+=(held_device_and_sock_write)

# Item 5: an image whose overlay may grow beyond OverlayMaxSize (1024 GiB
# by default): refused by the prolog as a job fault, no overlay made.
drain_image_beyond_overlay_max() {
	local job big=$img/storage-huge.qcow2
	qemu-img create -q -f qcow2 "$big" 2T && chmod 0644 "$big" ||
		{ fail "qemu-img create $big"; return 0; }
	job=$(drain_submit_raw $'#!/bin/sh\nsrun true\necho "step exit $?"\n' \
		VM_IMAGE="$big")
	drain_wait_end "$job" || fail "job $job did not end"
	grep -q "job $job: refused: image .* has a virtual size of 2048 GiB.*OverlayMaxSize=1024" "$HARNESS_VM_LOG" &&
		ok "2 TiB image: refused ($(grep -o 'virtual size of 2048 GiB[^:]*' "$HARNESS_VM_LOG" | tail -1))" ||
		fail "2 TiB image: not refused for its size: $(grep "job $job: .*refused" "$HARNESS_VM_LOG" | tail -1)"
	[ ! -e "$storage_overlays/job-$job.0.qcow2" ] && ok "2 TiB image: no overlay made" ||
		fail "2 TiB image: an overlay was made"
	rm -f "$big"
	return 0
}
DRAIN_CASES+=(image_beyond_overlay_max)

# Item 11: the next job id's state directory is left from an earlier job
# (ids wrap) that ran with --vm-keep and whose epilog never ran. The new
# job (without --vm-keep) must not inherit the keep marker: after it, its
# state and the earlier job's overlay are gone.
drain_keep_marker_of_earlier_job() {
	local prev next st ov job
	prev=$(harness_as_user "$user" sbatch --parsable -o /dev/null --wrap true)
	next=$((prev + 1))
	st=$storage_state/job-$next.0
	ov=$storage_overlays/job-$next.0.qcow2
	drain_wait_end "$prev" || true
	mkdir -m 0711 "$st" && : >"$st/keep" && : >"$ov" &&
		printf 'OVERLAY\t%s\n' "$ov" >"$st/journal" && chmod 0600 "$st/journal" ||
		{ fail "cannot plant $st"; return 0; }
	job=$(drain_submit_raw $'#!/bin/sh\ntrue\n' VM_IMAGE=no-such-image)
	[ "$job" = "$next" ] || fail "job id $job, not the planted $next"
	drain_wait_end "$job" || fail "job $job did not end"
	harness_wait 20 "job $job's state to go" bash -c "[ ! -e '$st' ] && [ ! -e '$ov' ]" &&
		ok "earlier job's keep marker: not inherited, state and overlay gone after job $job" ||
		fail "earlier job's keep marker inherited: left $(ls "$st" 2>/dev/null | tr '\n' ' ') $([ -e "$ov" ] && echo overlay)"
	rm -rf "$st" "$ov"
	return 0
}
DRAIN_CASES+=(keep_marker_of_earlier_job)
