#!/bin/bash
# cluster-timeout: 600
# What a task in the guest finds, compared with a bare-metal task of the same
# cluster where Slurm defines it: its working directory (the job's on a
# share, or /tmp with slurmstepd's own error when the guest lacks it or has
# only its own directory of the name), its own --multi-prog
# line, an environment translated for the guest (GPU ordinals, CPU binding,
# TMPDIR per vm.conf TaskTmpDir, propagated limits and umask), and an
# interactive `srun --pty` shell driven through tmux, window size changes
# included. One guest for all of it.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
# A TaskProlog for every task of the cluster, VM or not; it speaks only
# when asked, so that the other checks see plain output.
harness_config_hook() {
	cat >"$HARNESS_DIR/task_prolog.sh" <<'EOF'
#!/bin/sh
[ -n "$SHOW_TASK_PROLOG" ] || exit 0
echo "print task prolog on $(uname -r) context=$SLURM_SCRIPT_CONTEXT"
echo "export FROM_TASK_PROLOG=yes it is"
echo "unset SHOW_TASK_PROLOG"
[ "$SHOW_TASK_PROLOG" = fail ] && exit 3
exit 0
EOF
	chmod 755 "$HARNESS_DIR/task_prolog.sh"
	echo "TaskProlog=$HARNESS_DIR/task_prolog.sh" >>"$HARNESS_ETC/slurm.conf"
}
guest_cluster_start 240
work=$HARNESS_WORK/$user
uid=$(id -u "$user")
guest_kernel=$(guest_kernel_version)

# A plain job takes GPU 0 and a CPU first, so that the VM job's GPU is
# slurmd's index 1 and its CPU is not necessarily vCPU 0's number.
plain=$(harness_as_user "$user" sbatch --parsable -c1 --mem=64M --gres=gpu:1 --wrap 'sleep 900')
harness_wait 60 "job $plain to run" bash -c "squeue -h -j $plain -o %T | grep -q RUNNING" ||
	harness_die "plain job $plain does not run"
job=$(harness_as_user "$user" sbatch --parsable -c1 --mem=768M --gres=gpu:1 \
	--vm-image=testguest --wrap 'sleep 900')
harness_wait 300 "job $job's guest" grep -q "job $job: guest ready" "$HARNESS_VM_LOG" ||
	harness_die "no guest for job $job"
detail=$(scontrol show job -d "$job")
host_cpu=$(grep -o 'CPU_IDs=[0-9]*' <<<"$detail" | head -1 | cut -d= -f2)
host_gpu=$(grep -o 'gpu:1(IDX:[0-9]*)' <<<"$detail" | grep -o '[0-9]*)' | tr -d ')')
echo "job $job: host CPU $host_cpu, GPU index $host_gpu (plain job $plain)"

step() { harness_as_user "$user" timeout 120 srun --jobid="$job" --overlap -O "$@"; }
plain_step() { harness_as_user "$user" timeout 120 srun --jobid="$plain" --overlap -O "$@"; }

# --- the working directory
# /var/log exists in the guest, but it is the guest's own, not the host's
# (no share): /tmp, and the step says why.
out=$(step -n2 --chdir=/var/log sh -c 'echo "$(id -u) $(pwd) $(uname -r)"' 2>&1 | sort -u) || true
if [ "$(grep -v chdir <<<"$out")" = "$uid /tmp $guest_kernel" ] &&
	grep -qF "couldn't chdir to \`/var/log': the guest's own directory, not on a share: going to /tmp instead" <<<"$out"; then
	ok "srun -n2 sh -c 'id -u; pwd': both tasks in the guest as uid $uid; the job's cwd /var/log is the guest's own: /tmp, with the message"
else
	fail "cwd /var/log: '$out'"
fi
# $work exists on the host (slurmstepd goes there) but not in the guest.
vm=$(step -n1 --chdir="$work" sh -c 'pwd' 2>&1) || true
host=$(plain_step -n1 --chdir=/nonexistent/dir sh -c 'pwd' 2>&1) || true
msg() { grep -o "couldn't chdir to \`[^']*': [^:]*: going to /tmp instead" <<<"$1" | sed "s/\`[^']*'/DIR/" | head -1; }
if [ "$(tail -1 <<<"$vm")" = /tmp ] && [ -n "$(msg "$vm")" ] && [ "$(msg "$vm")" = "$(msg "$host")" ] &&
	grep -q "\`$work'" <<<"$vm"; then
	ok "a cwd the guest lacks: /tmp with slurmstepd's words: $(grep chdir <<<"$vm")"
else
	fail "missing cwd: guest '$vm' vs bare metal '$host'"
fi

# --- --multi-prog: each task its own line; srun's mark never reaches a task
cat >"$work/multi.conf" <<'EOF'
# rank 0 shows the guest's kernel
0   sh -c 'echo "zero $(uname -r) ${SLURM_VM_MULTI_PROG:-unmarked}"'
1-2 echo line2 t=%t o=%o
EOF
chown "$user" "$work/multi.conf"
out=$(step -n3 --chdir=/tmp --multi-prog "$work/multi.conf" 2>&1 | sort) || true
want=$(printf '%s\n' "line2 t=1 o=0" "line2 t=2 o=1" "zero $guest_kernel unmarked" | sort)
[ "$out" = "$want" ] && ok "--multi-prog: each task ran its own line in the guest: $(tr '\n' ';' <<<"$out")" ||
	fail "--multi-prog: '$out'"
out=$(step -n1 --chdir=/tmp echo "0 not a multi-prog line" 2>&1) || true
[ "$out" = "0 not a multi-prog line" ] && ok "a plain step whose argument looks like a multi-prog line runs as given" ||
	fail "plain step: '$out'"
out=$(plain_step -n3 --chdir=/tmp --multi-prog "$work/multi.conf" 2>&1 | sort) || true
want=$(printf '%s\n' "line2 t=1 o=0" "line2 t=2 o=1" "zero $(uname -r) unmarked" | sort)
[ "$out" = "$want" ] && ok "a plain job's --multi-prog tasks: the same lines, no mark seen" ||
	fail "plain --multi-prog: '$out'"

# --- devices: slurmd's index 1 is the guest's only GPU, ordinal 0
out=$(step -n1 --chdir=/tmp --gres=gpu:1 sh -c 'echo "$SLURM_STEP_GPUS $CUDA_VISIBLE_DEVICES $ROCR_VISIBLE_DEVICES $GPU_DEVICE_ORDINAL"; n=0; for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor):$(cat $d/device)" = 0x1af4:0x1044 ] && n=$((n + 1)); done; echo $n' 2>&1) || true
host=$(plain_step -n1 --chdir=/tmp --gres=gpu:1 sh -c 'echo "$SLURM_STEP_GPUS $CUDA_VISIBLE_DEVICES"' 2>&1) || true
if [ "$(head -1 <<<"$out")" = "$host_gpu 0 0 0" ] && [ "$(tail -1 <<<"$out")" = 1 ] && [ "$host_gpu" = 1 ]; then
	ok "GPU $host_gpu of the host is CUDA/ROCR/GPU_DEVICE_ORDINAL 0 in the guest, which has 1 GPU (plain job's step: '$host')"
else
	fail "GPU variables: guest '$out' (host index $host_gpu), plain '$host'"
fi

# --- CPU binding: the host CPU is vCPU 0
out=$(step -n1 --chdir=/tmp --cpu-bind=map_cpu:"$host_cpu" sh -c 'echo "$SLURM_CPU_BIND|$SLURM_CPU_BIND_LIST|$(grep Cpus_allowed_list /proc/self/status | cut -f2)|${SLURM_VM_AFFINITY:-gone}"' 2>&1 | tail -1) || true
if [ "$out" = "quiet,map_cpu:0|0|0|gone" ]; then
	ok "--cpu-bind=map_cpu:$host_cpu is map_cpu:0 in the guest, and the task is on vCPU 0"
else
	fail "CPU binding (host CPU $host_cpu): '$out'"
fi

# --- TMPDIR per TaskTmpDir; host-only XDG_RUNTIME_DIR dropped; limits, umask
out=$(step -n1 --chdir=/tmp --export=ALL,TMPDIR=/host/only/tmp,XDG_RUNTIME_DIR=/run/user/$uid \
	sh -c 'echo "$TMPDIR ${XDG_RUNTIME_DIR:-none} $(env | grep -cE "^(UCX_NET_DEVICES|NCCL_IB_HCA|OMPI_MCA_[a-z]*_tcp_if_include|FI_TCP_IFACE|NCCL_SOCKET_IFNAME)=")"' 2>&1) || true
# (JobNetwork=none, no InfiniBand: no MPI network defaults either.)
[ "$out" = "/tmp none 0" ] && ok "default TaskTmpDir: TMPDIR=/tmp in the guest, XDG_RUNTIME_DIR dropped, no MPI network variable without a job network" ||
	fail "TMPDIR default: '$out'"
harness_vmconf_set TaskTmpDir "/tmp/svm-job-$job"
out=$(step -n1 --chdir=/tmp sh -c 'echo "$TMPDIR $(stat -c "%a %u" "$TMPDIR")"' 2>&1) || true
[ "$out" = "/tmp/svm-job-$job 700 $uid" ] && ok "TaskTmpDir=/tmp/svm-job-$job: made 0700 for uid $uid in the guest" ||
	fail "TaskTmpDir: '$out'"
harness_vmconf_set TaskTmpDir keep
out=$(step -n1 --chdir=/tmp --export=ALL,TMPDIR=/tmp/kept sh -c 'echo "$TMPDIR"' 2>&1) || true
[ "$out" = /tmp/kept ] && ok "TaskTmpDir=keep: the host's TMPDIR" || fail "TaskTmpDir=keep: '$out'"
harness_vmconf_set TaskTmpDir /tmp
vm=$(harness_as_user "$user" bash -c "ulimit -S -n 123; umask 027; timeout 120 srun --jobid=$job --overlap -O --chdir=/tmp --propagate=NOFILE sh -c 'echo \$(ulimit -n) \$(umask) \${SLURM_RLIMIT_NOFILE:-gone}'" 2>&1) || true
host=$(harness_as_user "$user" bash -c "ulimit -S -n 123; umask 027; timeout 120 srun --jobid=$plain --overlap -O --chdir=/tmp --propagate=NOFILE sh -c 'echo \$(ulimit -n) \$(umask) \${SLURM_RLIMIT_NOFILE:-gone}'" 2>&1) || true
[ "$vm" = "$host" ] && [ "${vm%% *}" = 123 ] && ok "propagated NOFILE and umask as on bare metal: $vm" ||
	fail "limits: guest '$vm' vs bare metal '$host'"

# --- TaskProlog: run on the node as for a bare-metal task, its exports and
# unsets reach the task in the guest, a failure fails the task
probe='echo "${FROM_TASK_PROLOG:-none} ${SHOW_TASK_PROLOG:-unset}"'
vm=$(step -n1 --chdir=/tmp --export=ALL,SHOW_TASK_PROLOG=1 sh -c "$probe; uname -r" 2>&1) || true
host=$(plain_step -n1 --chdir=/tmp --export=ALL,SHOW_TASK_PROLOG=1 sh -c "$probe; uname -r" 2>&1) || true
if [ "$(head -2 <<<"$vm")" = "$(head -2 <<<"$host")" ] &&
	[ "$(head -1 <<<"$vm")" = "task prolog on $(uname -r) context=prolog_task" ] &&
	[ "$(sed -n 2p <<<"$vm")" = "yes it is unset" ] &&
	[ "$(tail -1 <<<"$vm")" = "$guest_kernel" ]; then
	ok "TaskProlog ran on the node for the guest task as for a bare-metal one: $(head -2 <<<"$vm" | tr '\n' ';')"
else
	fail "TaskProlog: guest '$vm' vs bare metal '$host'"
fi
rc=0
vm=$(step -n1 --chdir=/tmp --export=ALL,SHOW_TASK_PROLOG=fail true 2>&1) || rc=$?
host_rc=0
host=$(plain_step -n1 --chdir=/tmp --export=ALL,SHOW_TASK_PROLOG=fail true 2>&1) || host_rc=$?
if [ "$rc" = 3 ] && [ "$host_rc" = 3 ] && grep -q "TaskProlog failed status=3" <<<"$vm"; then
	ok "a TaskProlog exiting 3 ends the guest task with 3, as on bare metal: $(grep -o 'TaskProlog failed status=3' <<<"$vm")"
else
	fail "failing TaskProlog: guest rc=$rc '$vm', bare metal rc=$host_rc '$host'"
fi

# --- srun --pty: an interactive shell in the guest through tmux
sock=$HARNESS_DIR/tmux.sock
tmux -S "$sock" new-session -d -x 80 -y 24 \
	"runuser -u $user -- env SLURM_CONF=$SLURM_CONF srun --jobid=$job --overlap -O --chdir=/tmp --pty sh; sleep 30"
pane() { tmux -S "$sock" capture-pane -p -J; }
typed() { tmux -S "$sock" send-keys -l "$1"; tmux -S "$sock" send-keys Enter; }
harness_wait 60 "the guest shell's prompt" bash -c "tmux -S '$sock' capture-pane -p | grep -q '[\$#] *\$'" || true
typed 'echo "K=$(uname -r) T=$(tty)"; stty size'
harness_wait 30 "stty size" bash -c "tmux -S '$sock' capture-pane -p | grep -q '^24 80'" || true
if pane | grep -q "^K=$guest_kernel T=/dev/pts/" && pane | grep -q '^24 80$'; then
	ok "srun --pty: a shell on a terminal in the guest, 24x80"
else
	fail "srun --pty: $(pane | grep -v '^$' | tail -5)"
fi
tmux -S "$sock" resize-window -x 100 -y 30 2>/dev/null || tmux -S "$sock" resize-pane -x 100 -y 30
sleep 1
typed 'stty size'
if harness_wait 30 "the new size" bash -c "tmux -S '$sock' capture-pane -p | grep -q '^30 100'"; then
	ok "the window size change reached the guest: stty size says 30 100"
else
	fail "window size: $(pane | grep -v '^$' | tail -5)"
fi
typed 'exit 3'
harness_wait 30 "the pty step to end" bash -c "! squeue -h -s -j $job -o %i | grep -qv '\.\(batch\|extern\)$'" &&
	ok "exit in the guest shell ended the step" || fail "the pty step still runs"
tmux -S "$sock" kill-server 2>/dev/null || true

scancel "$job" "$plain"
[ "$failures" = 0 ]
