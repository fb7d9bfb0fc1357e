#!/bin/bash
# `srun` from a --vm-batch script in the guest against `srun` from the same
# script on the host, measured in the same run on the same test cluster.
#
#   bench/batch_bench.sh [N]    (root; the build from $BUILD_DIR, default
#                               build/; N steps per job, default 10)
#
# Starts the test cluster with the test guest and two VM jobs of one CPU
# each, side by side so that load on the machine hits both alike: one with
# --vm-batch (the script runs in the guest; each srun goes to the host
# through the batch session, agent/shared/hostcmd.h) and one without (the script
# runs on the host). Both scripts time N x `srun -n1 true` themselves (the
# steps' tasks run in the guest in both), after one warm-up step. Prints
# medians and p90s, the ratio, and lines
#   BENCH|<name>|<value>|<unit>|<peer or ->|<ratio or ->|<note>
# for tools. Without KVM the guests run under TCG: regression figures, not
# production ones, labelled "TCG". Takes 2-4 minutes. SVM_BENCH_SHORT=1
# (bench/run.sh --short): N 1 and the guests destroyed at the end, not shut
# down.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
export BUILD_DIR
BUILD_DIR=$(cd "${BUILD_DIR:-$top/build}" && pwd)
n=${1:-10}
short_conf=()
[ "${SVM_BENCH_SHORT:-0}" = 1 ] && n=${1:-1} short_conf=(ShutdownTimeout=1)
case "$n" in '' | *[!0-9]* | 0) echo "batch_bench: N must be a positive integer" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || {
	echo "batch_bench: run as root (it starts slurmctld, slurmd and libvirtd)" >&2
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
harness_vmconf_set SharedDirs "$HARNESS_WORK"
if [ -w /dev/kvm ] && grep -qi '^DomainType *= *kvm' "$HARNESS_VM_CONF"; then
	note=KVM
else
	note=TCG
fi
work=$HARNESS_WORK/$user
# Milliseconds per step, one line each, from the script itself: from
# /proc/uptime (10 ms steps), which the guest's busybox and the host share.
cat >"$work/bench.sh" <<'EOF'
#!/bin/sh
cs() { read -r up _ </proc/uptime; echo "${up%.*}${up#*.}"; }
srun -n1 true
i=0
while [ "$i" -lt "$1" ]; do
	t0=$(cs)
	srun -n1 true || echo "srun failed"
	t1=$(cs)
	echo "step_ms $(((t1 - t0) * 10))"
	i=$((i + 1))
done
EOF
chown "$user:" "$work/bench.sh"
chmod 0755 "$work/bench.sh"

guest=$(harness_as_user "$user" sbatch --parsable -c1 --mem=768M --vm-image=testguest \
	--vm-batch -o "$work/guest-%j.out" bench.sh "$n")
host=$(harness_as_user "$user" sbatch --parsable -c1 --mem=768M --vm-image=testguest \
	-o "$work/host-%j.out" bench.sh "$n")
ended() { ! squeue -h -j "$guest,$host" -o %T | grep -q .; }
harness_wait 900 "jobs $guest and $host to end" ended || harness_die "the jobs did not end"

# quantile Q (0..1) of the numbers on stdin, nearest rank, in seconds
quantile() {
	sort -g | awk -v q="$1" '{ v[NR] = $1 }
		END { i = int(q * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; printf "%.3f", v[i] / 1000 }'
}
for kind in guest host; do
	id=${!kind}
	out=$work/$kind-$id.out
	got=$(sed -n 's/^step_ms \([0-9]*\)$/\1/p' "$out" | wc -l)
	if [ "$got" != "$n" ] || grep -q 'srun failed' "$out"; then
		sed 's/^/    /' "$out" >&2
		harness_die "job $id ($kind) did not time $n steps"
	fi
	declare "med_$kind=$(sed -n 's/^step_ms //p' "$out" | quantile 0.5)"
	declare "p90_$kind=$(sed -n 's/^step_ms //p' "$out" | quantile 0.9)"
done
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }

echo "batch_bench: $n steps per job, two jobs side by side; $note guests (1 vCPU)"
printf '%-44s %10s %10s\n' "" median p90
printf '%-44s %9ss %9ss\n' "srun -n1 true from the script in the guest" "$med_guest" "$p90_guest"
printf '%-44s %9ss %9ss\n' "srun -n1 true from the script on the host" "$med_host" "$p90_host"
echo "BENCH|batch_srun_from_guest|$med_guest|s|batch_srun_from_host|$(ratio "$med_guest" "$med_host")|$note, --vm-batch, median of $n"
echo "BENCH|batch_srun_from_host|$med_host|s|-|-|$note, tasks in the guest, median of $n"
echo "BENCH|batch_srun_from_guest_p90|$p90_guest|s|batch_srun_from_host_p90|$(ratio "$p90_guest" "$p90_host")|$note"
