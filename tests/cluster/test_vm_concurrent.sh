#!/bin/bash
# cluster-timeout: 600
# Two VM jobs on one node at once, each with its own GPU and VF: two guests,
# disjoint devices in their metadata, each job's tasks in its own guest.
# Then a job cancelled while its guest boots: nothing is left.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
guest_cluster_start 240 ShutdownTimeout=5

submit() {
	harness_as_user "$user" sbatch --parsable -c1 --mem=768M \
		--vm-image=testguest "$@"
}
ready() { grep -q "job $1: guest ready" "$HARNESS_VM_LOG"; }
addrs() { virsh dumpxml "slurmvm-job-$1.0" | grep -o '<svm:device address="[^"]*"' | sed 's/.*="//;s/"//' | sort; }

a=$(submit --gres=gpu:1,ibvf:1 --wrap 'sleep 300')
b=$(submit --gres=gpu:1,ibvf:1 --wrap 'sleep 300')
if harness_wait 300 "both guests" bash -c "grep -q 'job $a: guest ready' '$HARNESS_VM_LOG' && grep -q 'job $b: guest ready' '$HARNESS_VM_LOG'"; then
	ok "two guests ready: $(grep -o "job [$a$b]: guest ready.*" "$HARNESS_VM_LOG" | tr '\n' ';')"
else
	fail "not both guests ready"
	grep -E "job ($a|$b):" "$HARNESS_VM_LOG" | tail -10
fi
da=$(addrs "$a")
db=$(addrs "$b")
if [ -n "$da" ] && [ -n "$db" ] && [ -z "$(comm -12 <(echo "$da") <(echo "$db"))" ]; then
	ok "disjoint devices: job $a $(echo $da), job $b $(echo $db)"
else
	fail "devices of jobs $a and $b: '$da' / '$db'"
fi
# Each job's task runs in its own guest: the instance-id of its cloud-init
# seed names the job.
for j in "$a" "$b"; do
	out=$(guest_exec "$user" "$j" -- cat /var/lib/cloud/data/instance-id 2>/dev/null) || true
	[ "$out" = "slurmvm-job-$j.0" ] && ok "job $j: a task ran in its own guest" ||
		fail "job $j: exec in its guest: $out"
done
scancel "$a" "$b"

# Cancelled while booting.
c=$(submit --wrap 'sleep 300')
harness_wait 120 "job $c's domain" bash -c "virsh -q list --name | grep -qx slurmvm-job-$c.0" ||
	fail "job $c: no domain"
scancel "$c"
harness_wait 120 "job $c to end" bash -c "squeue -h -j $c -t all -o %T | grep -Eqx 'CANCELLED|COMPLETED|FAILED'" || true
harness_wait 60 "job $c's guest to go" bash -c "! virsh -q list --name | grep -qx slurmvm-job-$c.0" ||
	fail "job $c's guest still runs"
for j in "$a" "$b" "$c"; do
	harness_wait 60 "job $j's state to go" bash -c "[ ! -e '$(guest_state_dir "$j")' ]" ||
		fail "job $j left its state directory"
	[ -e "$HARNESS_DIR/vm/overlay/job-$j.0.qcow2" ] && fail "job $j left its overlay"
	pgrep -f "slurm-vm-relay.*job-$j\\.0/" >/dev/null && fail "job $j left its relay"
done
ok "jobs $a $b $c: nothing left"
guest_node_up

[ "$failures" = 0 ]
