#!/bin/bash
# Task start latency: `srun` into a job's guest against bare-metal `srun` on
# the same node, measured in the same run on the same test cluster.
#
#   bench/task_bench.sh [N]     (root; the build from $BUILD_DIR, default
#                               build/; N steps per kind, default 20)
#
# Starts the test cluster (tests/cluster/harness.sh, with libvirtd and the
# test guest), one VM job (--vm-image) and one plain job (no --vm-image), one
# CPU each, and measures as the test user, alternating the two so that load
# on the machine hits both alike:
#   N x `srun --jobid=J --overlap -n1 true`          per job: start to end
#   N x `srun --jobid=J --overlap -O -nK true`       K tasks in one step
# Prints medians and p90s, the VM/bare-metal ratio and the time each task
# adds in the guest: (VM - bare metal) of the -nK steps over K. Lines of the
# form
#   BENCH|<name>|<value>|<unit>|<peer or ->|<ratio or ->|<note>
# are for tools (doc tables). Without KVM the guest runs under TCG: the
# figures are then regression figures, not production ones, and say "TCG".
#
# SVM_BENCH_TASKS (4) tasks per multi-task step; SVM_BENCH_SHORT=1
# (bench/run.sh --short): N 1 and guests destroyed at the end, not shut down. Takes 3-6 minutes with the guest boot. Boots a guest: run it under
# the guest lock on shared machines
#   flock /tmp/slurm-vm-guest.lock bench/task_bench.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
export BUILD_DIR
BUILD_DIR=$(cd "${BUILD_DIR:-$top/build}" && pwd)
n=${1:-20}
k=${SVM_BENCH_TASKS:-4}
# Short: the guest is destroyed after 1 s at the end (the epilog's ACPI
# shutdown is not measured here).
short_conf=()
[ "${SVM_BENCH_SHORT:-0}" = 1 ] && n=${1:-1} short_conf=(ShutdownTimeout=1)
for v in "$n" "$k"; do
	case "$v" in '' | *[!0-9]* | 0) echo "task_bench: N and SVM_BENCH_TASKS must be positive integers" >&2; exit 2 ;; esac
done
[ "$(id -u)" = 0 ] || {
	echo "task_bench: run as root (it starts slurmctld, slurmd and libvirtd)" >&2
	exit 2
}

# shellcheck source=../tests/cluster/harness.sh
. "$top/tests/cluster/harness.sh"
# shellcheck source=../tests/cluster/guest.sh
. "$top/tests/cluster/guest.sh"
# shellcheck source=cluster.sh
. "$here/cluster.sh"

user=svmtest
bench_cluster_start 300 "${short_conf[@]+"${short_conf[@]}"}"
if [ -w /dev/kvm ] && grep -qi '^DomainType *= *kvm' "$HARNESS_VM_CONF"; then
	note=KVM
else
	note=TCG
fi

vm=$(harness_as_user "$user" sbatch --parsable -c1 --mem=768M --vm-image=testguest --wrap 'sleep 3600')
plain=$(harness_as_user "$user" sbatch --parsable -c1 --mem=64M --wrap 'sleep 3600')
harness_wait 300 "job $vm's guest" grep -q "job $vm: guest ready" "$HARNESS_VM_LOG" ||
	harness_die "no guest for job $vm"
harness_wait 60 "job $plain to run" bash -c "squeue -h -j $plain -o %T | grep -q RUNNING" ||
	harness_die "job $plain does not run"

# One step, start to end, in seconds: timed_cmd JOB SRUN-ARGS... COMMAND...
timed_cmd() {
	local job=$1 t0 t1
	shift
	t0=$(date +%s.%N)
	harness_as_user "$user" timeout 120 srun --jobid="$job" --overlap -O --chdir=/tmp "$@" >/dev/null ||
		harness_die "srun --jobid=$job $* failed"
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}
timed_step() { timed_cmd "$@" true; }

# Warm both paths (first srun of a job, first exec of the guest).
timed_step "$vm" -n1 >/dev/null
timed_step "$plain" -n1 >/dev/null

declare -A samples
for ((i = 0; i < n; i++)); do
	samples[vm1]+="$(timed_step "$vm" -n1) "
	samples[host1]+="$(timed_step "$plain" -n1) "
	samples[vmk]+="$(timed_step "$vm" -n"$k") "
	samples[hostk]+="$(timed_step "$plain" -n"$k") "
done

# quantile Q (0..1) of the numbers in $1, nearest rank
quantile() {
	tr ' ' '\n' <<<"$1" | grep . | sort -g | awk -v q="$2" '
		{ v[NR] = $1 }
		END { i = int(q * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; printf "%.3f", v[i] }'
}
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
for kind in vm1 host1 vmk hostk; do
	declare "med_$kind=$(quantile "${samples[$kind]}" 0.5)"
	declare "p90_$kind=$(quantile "${samples[$kind]}" 0.9)"
done
per_task=$(printf '%.3f' "$(echo "($med_vmk - $med_hostk) / $k" | bc -l)")

echo "task_bench: $n steps each, alternating; $note guest (1 vCPU), bare metal on the same node"
printf '%-34s %10s %10s\n' "" median p90
printf '%-34s %9ss %9ss\n' "srun -n1 true, guest" "$med_vm1" "$p90_vm1"
printf '%-34s %9ss %9ss\n' "srun -n1 true, bare metal" "$med_host1" "$p90_host1"
printf '%-34s %9ss %9ss\n' "srun -n$k true, guest" "$med_vmk" "$p90_vmk"
printf '%-34s %9ss %9ss\n' "srun -n$k true, bare metal" "$med_hostk" "$p90_hostk"
echo "BENCH|task_start_n1_guest|$med_vm1|s|task_start_n1_host|$(ratio "$med_vm1" "$med_host1")|$note, median of $n"
echo "BENCH|task_start_n1_host|$med_host1|s|-|-|bare metal, median of $n"
echo "BENCH|task_start_n1_guest_p90|$p90_vm1|s|task_start_n1_host_p90|$(ratio "$p90_vm1" "$p90_host1")|$note"
echo "BENCH|task_start_n${k}_guest|$med_vmk|s|task_start_n${k}_host|$(ratio "$med_vmk" "$med_hostk")|$note, median of $n"
echo "BENCH|task_start_n${k}_host|$med_hostk|s|-|-|bare metal, median of $n"
echo "BENCH|task_added_per_task|$per_task|s|-|-|$note, (guest - bare metal) of -n$k steps / $k"
# MPI start over PMIx: Open MPI's trivial allreduce program with
# `srun --mpi=pmix -n2` in the guest (its PMIx client carried over the
# guest channel) against the same program on the host (slurmstepd's PMIx
# server next to it). The host's build of the guest's source.
work=$HARNESS_WORK/$user
mkdir -p "$work"
chown "$user:" "$work"
mpicc.openmpi -O2 -o "$work/svm-ompi-allreduce" "$top/tests/guest/files/mpi_allreduce.c"
chmod 0755 "$work/svm-ompi-allreduce"
m=$(((n + 3) / 4))
for ((i = 0; i < m; i++)); do
	samples[pmixvm]+="$(timed_cmd "$vm" --mpi=pmix -n2 svm-ompi-allreduce) "
	samples[pmixhost]+="$(timed_cmd "$plain" --mpi=pmix -n2 "$work/svm-ompi-allreduce") "
done
med_pmixvm=$(quantile "${samples[pmixvm]}" 0.5)
med_pmixhost=$(quantile "${samples[pmixhost]}" 0.5)
printf '%-34s %9ss\n' "srun --mpi=pmix -n2 MPI, guest" "$med_pmixvm"
printf '%-34s %9ss\n' "srun --mpi=pmix -n2 MPI, bare metal" "$med_pmixhost"
echo "BENCH|pmix_mpi_n2_guest|$med_pmixvm|s|pmix_mpi_n2_host|$(ratio "$med_pmixvm" "$med_pmixhost")|$note, Open MPI allreduce, median of $m"
echo "BENCH|pmix_mpi_n2_host|$med_pmixhost|s|-|-|bare metal, median of $m"
scancel "$vm" "$plain"
