#!/bin/bash
# cluster-timeout: 600
# srun steps of a VM job run in the guest and behave as on bare metal: one
# guest per node, every task in it as the job user; exit codes and deaths by
# signal reported as Slurm reports them for a host task (compared in the
# same run); signals from scancel reach the guest process; scancel ends the
# step within seconds; stdin reaches the task; 100 MB of stdout arrive intact.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
guest_cluster_start 240
work=$HARNESS_WORK/$user
guest_kernel=$(guest_kernel_version)

# One allocation with a guest; steps are run from the test as srun --jobid.
# One CPU, so that a plain job can run beside it for the comparison.
job=$(harness_as_user "$user" sbatch --parsable -c1 --mem=768M --vm-image=testguest \
	--wrap 'sleep 900')
harness_wait 300 "job $job's guest" grep -q "job $job: guest ready" "$HARNESS_VM_LOG" ||
	harness_die "no guest for job $job"
step() { harness_as_user "$user" timeout 120 srun --jobid="$job" --overlap -O --chdir=/tmp "$@"; }

out=$(step -n2 sh -c 'echo "$(uname -r) $(id -u)"' 2>/dev/null | sort -u)
if [ "$out" = "$guest_kernel $(id -u "$user")" ]; then
	ok "srun -n2 runs both tasks in the guest as $user: $out"
else
	fail "srun -n2: '$out' (guest kernel $guest_kernel)"
fi

rc=0
step -n1 sh -c 'exit 7' 2>/dev/null || rc=$?
[ "$rc" = 7 ] && ok "exit 7 in the guest: srun exits 7" || fail "exit 7: srun exited $rc"

# A task killed by SIGSEGV: srun's report and status as for a host task.
plain_rc=0
plain=$(harness_as_user "$user" timeout 60 srun -n1 -c1 --mem=64M sh -c 'kill -SEGV $$' 2>&1) || plain_rc=$?
vm_rc=0
vm=$(step -n1 sh -c 'kill -SEGV $$' 2>&1) || vm_rc=$?
norm() { grep -o 'Segmentation fault\|exited with exit code [0-9]*\|signal [0-9]*' | sort -u | tr '\n' ' '; }
if [ "$vm_rc" = "$plain_rc" ] && [ "$(norm <<<"$vm")" = "$(norm <<<"$plain")" ]; then
	ok "SIGSEGV in the guest reported as on the host: rc=$vm_rc, '$(norm <<<"$vm")'"
else
	fail "SIGSEGV: guest rc=$vm_rc '$vm' vs host rc=$plain_rc '$plain'"
fi

out=$(echo hi | step -n1 --input=0 cat 2>/dev/null) || true
[ "$out" = hi ] && ok "stdin reaches the guest task" || fail "stdin: '$out'"

want=$(head -c 100M /dev/zero | sha256sum | cut -d' ' -f1)
t0=$(date +%s)
got=$(step -n1 sh -c 'head -c 104857600 /dev/zero' 2>/dev/null | sha256sum | cut -d' ' -f1) || true
[ "$got" = "$want" ] && ok "100 MB of stdout intact in $(($(date +%s) - t0))s" ||
	fail "100 MB stdout: $got"

# scancel --signal=USR1 reaches the guest process; scancel ends the step.
harness_as_user "$user" srun --jobid="$job" --overlap -O --chdir=/tmp -n1 -o "$work/usr1.out" \
	sh -c 'trap "echo got USR1" USR1; echo started; while :; do sleep 1; done' &
srun_pid=$!
harness_wait 60 "the step to start" grep -q started "$work/usr1.out" || true
s=$(squeue -h -s -j "$job" -o %i | grep -v '\.\(batch\|extern\)$' | sort -t. -k2 -n | tail -1)
scancel --signal=USR1 "$s"
harness_wait 20 "USR1 in the guest" grep -q "got USR1" "$work/usr1.out" &&
	ok "scancel --signal=USR1 reached the guest process" || fail "USR1: $(cat "$work/usr1.out")"
t0=$(date +%s)
scancel "$s"
harness_wait 30 "the step to end" bash -c "! kill -0 $srun_pid 2>/dev/null" &&
	ok "scancel ended the step in $(($(date +%s) - t0))s" || fail "scancel: step still runs"

# scontrol suspend stops the guest process, resume continues it.
harness_as_user "$user" srun --jobid="$job" --overlap -O --chdir=/tmp -n1 -o "$work/count.out" \
	sh -c 'i=0; while :; do i=$((i + 1)); echo $i; sleep 0.5; done' &
count_pid=$!
harness_wait 60 "the counter to start" bash -c "[ -s '$work/count.out' ]" || true
sleep 2
scontrol suspend "$job"
sleep 2
a=$(wc -l <"$work/count.out")
sleep 4
b=$(wc -l <"$work/count.out")
scontrol resume "$job"
sleep 4
c=$(wc -l <"$work/count.out")
# A running counter writes 8 lines in 4 s; one may still be in flight.
if [ $((b - a)) -le 1 ] && [ "$c" -gt $((b + 2)) ]; then
	ok "scontrol suspend stopped the guest process ($a lines, still $b), resume continued it ($c)"
else
	fail "suspend/resume: lines $a -> $b while suspended, $c after resume"
fi
kill "$count_pid" 2>/dev/null || true

scancel "$job"
[ "$failures" = 0 ]
