#!/bin/bash
# cluster-timeout: 600
# The guest channel with a real guest: the prolog boots the test guest
# through libvirtd, the relay gets the agent's ready over virtio-serial, and
# tasks run through the relay as the job user. Two sessions at once, one of
# which never has its stdout read; another uid is refused; killing qemu
# fails the open session with a message saying the guest died.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest

guest_cluster_start 120
work=$HARNESS_WORK/$user

job=$(harness_as_user "$user" sbatch --parsable -c2 --mem=1G \
	--vm-image=testguest --wrap 'sleep 600')
harness_wait 180 "job $job's guest" grep -q "job $job: guest ready" "$HARNESS_VM_LOG" ||
	{ tail -20 "$HARNESS_VM_LOG"; harness_die "no guest"; }
ok "$(grep -o "job $job: guest ready.*" "$HARNESS_VM_LOG")"
sock=$(guest_state_dir "$job")/sock/relay.sock

# A command as a non-root uid: output and exit status.
out=$(guest_exec "$user" "$job" -- sh -c 'echo "uid=$(id -u) host=$(hostname)"; exit 3' 2>/dev/null) && rc=0 || rc=$?
[ "$rc" = 3 ] && [ "$out" = "uid=$(id -u "$user") host=$(hostname -s)" ] &&
	ok "ran as uid $(id -u "$user") in the guest: '$out', exit 3" ||
	fail "exec: rc=$rc out='$out'"

# Session 1 never has its stdout read (yes | a reader that sleeps), while
# session 2 pushes 8 MiB through cat in the guest and back.
harness_as_user "$user" bash -c "'$HARNESS_BIN/slurm-vm-exec' --socket '$sock' --cwd /tmp -- yes | sleep 120" &
stalled=$!
sleep 2
head -c 8M /dev/urandom >"$work/in.bin"
chown "$user" "$work/in.bin"
want=$(sha256sum <"$work/in.bin" | cut -d' ' -f1)
t0=$(date +%s)
got=$(harness_as_user "$user" bash -c "'$HARNESS_BIN/slurm-vm-exec' --socket '$sock' --cwd /tmp -- cat <'$work/in.bin'" |
	sha256sum | cut -d' ' -f1) || true
t=$(($(date +%s) - t0))
[ "$got" = "$want" ] && ok "8 MiB through the guest intact in ${t}s while another session's stdout was never read" ||
	fail "8 MiB exchange: checksum $got, want $want"
kill "$stalled" 2>/dev/null || true
pkill -u "$user" -f "slurm-vm-exec.*-- yes" 2>/dev/null || true

# Another uid is refused.
rc=0
out=$(harness_as_user svmtest2 "$HARNESS_BIN/slurm-vm-exec" --socket "$sock" --cwd /tmp -- true 2>&1) || rc=$?
[ "$rc" != 0 ] && ok "svmtest2 refused: $out" || fail "svmtest2 was let in: $out"

# Killing qemu fails the open session with the reason.
harness_as_user "$user" "$HARNESS_BIN/slurm-vm-exec" --socket "$sock" --cwd /tmp -- sleep 300 \
	>"$work/dead.out" 2>&1 &
pid=$!
sleep 3
pkill -9 -f "guest=slurmvm-job-$job.0," || fail "no qemu to kill"
rc=0
timeout 30 tail --pid="$pid" -f /dev/null || rc=$?
wait "$pid" && prc=0 || prc=$?
if [ "$rc" = 0 ] && [ "$prc" != 0 ] && grep -qi "guest.*\(died\|dead\|gone\)" "$work/dead.out"; then
	ok "killing qemu ended the session (exit $prc): $(cat "$work/dead.out")"
else
	fail "after killing qemu: rc=$rc exit=$prc out=$(cat "$work/dead.out")"
fi
scancel "$job"

[ "$failures" = 0 ]
