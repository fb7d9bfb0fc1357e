#!/bin/bash
# Boot-to-first-task, cold against warm (BootMode=, issue #30), on the test
# cluster (tests/cluster/harness.sh: real slurmctld, slurmd and libvirtd):
# for each image, the time from sbatch to the end of the job's first task
# (`srun true` in the guest, the batch script on the host notes the time
# when it returns), N jobs booted cold, then one job that makes the node's
# template (a cold boot and a save), then N restored from it. The peer of a
# warm start is the cold boot of the same image in the same run.
#
#   flock /tmp/slurm-vm-cluster.lock bench/warm_bench.sh [N]   (root; N 3)
#
# Images: the busybox test guest, and the stock Debian 12 cloud image
# (tests/guest/build-cloud.sh: systemd and cloud-init; HARNESS_CLOUD_DIR as
# for test_cloud_image.sh) unless SVM_BENCH_SHORT=1 (bench/run.sh --short:
# the test guest alone, N 1). Every guest here runs under TCG: the figures
# are this machine's, the ratio is what carries over.
#
# Prints a table, then one line per figure:
#   BENCH|<name>|<value>|<unit>|<peer or ->|<ratio or ->|<note>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
short=${SVM_BENCH_SHORT:-0}
if [ "$short" = 1 ]; then n=${1:-1}; else n=${1:-3}; fi
user=svmtest
BUILD_DIR=$(cd "${BUILD_DIR:-$here/../build}" && pwd)
export BUILD_DIR
. "$here/../tests/cluster/harness.sh"
. "$here/../tests/cluster/guest.sh"
. "$here/cluster.sh"

[ "$(id -u)" = 0 ] || { echo "warm_bench: run as root" >&2; exit 1; }
bench_cluster_start 300 ShutdownTimeout=5
work=$HARNESS_WORK/$user
images=(testguest)
if [ "$short" != 1 ]; then
	if [ -n "${HARNESS_CLOUD_DIR:-}" ]; then
		cloud=$HARNESS_CLOUD_DIR/debian12.qcow2
	else
		cloud=$("$here/../tests/guest/build-cloud.sh" 2>"$HARNESS_DIR/log/cloud-build.log") ||
			harness_die "tests/guest/build-cloud.sh failed"
	fi
	cp "$cloud" "$HARNESS_IMAGES/debian12.qcow2"
	chmod 0644 "$HARNESS_IMAGES/debian12.qcow2"
	harness_add_catalog_image debian12 "$HARNESS_IMAGES/debian12.qcow2" qcow2
	images+=(debian12)
fi

# first_task IMAGE: seconds from sbatch to the end of the first task in
# the guest, into $SECS; the job's id in $JOB
first_task() {
	local t0 t1 done=$work/first-task.$RANDOM
	t0=$(date +%s.%N)
	JOB=$(harness_as_user "$user" sbatch --parsable -c1 --mem=1G \
		--vm-image="$1" -o /dev/null \
		--wrap "srun true && date +%s.%N >$done")
	harness_wait 600 "job $JOB" sh -c "[ -z \"\$(squeue -h -j $JOB)\" ]" ||
		harness_die "job $JOB did not end"
	[ -s "$done" ] || harness_die "job $JOB ($1): its first task did not run: $(grep "job $JOB" "$HARNESS_VM_LOG" | tail -5)"
	t1=$(cat "$done")
	SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	harness_wait 120 "job $JOB's epilog" sh -c '[ -z "$(sinfo -h -N -t completing -o %N)" ]'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

lines=()
for image in "${images[@]}"; do
	harness_vmconf_set BootMode cold
	cold=()
	for ((i = 0; i < n; i++)); do
		first_task "$image"
		cold+=("$SECS")
	done
	harness_vmconf_set BootMode warm
	first_task "$image"
	make=$SECS
	grep -q "job $JOB: warm template [0-9a-f]* booted and saved" "$HARNESS_VM_LOG" ||
		harness_die "job $JOB ($image) made no template: $(grep "job $JOB: boots cold" "$HARNESS_VM_LOG")"
	warm=()
	for ((i = 0; i < n; i++)); do
		first_task "$image"
		grep -q "job $JOB: restored from warm template" "$HARNESS_VM_LOG" ||
			harness_die "job $JOB ($image) was not restored: $(grep "job $JOB: boots cold" "$HARNESS_VM_LOG")"
		warm+=("$SECS")
	done
	c=$(printf '%s\n' "${cold[@]}" | median)
	w=$(printf '%s\n' "${warm[@]}" | median)
	note="TCG guest (no KVM); sbatch to the end of srun true in the guest; median of $n"
	lines+=("BENCH|$image: first task, cold boot|$c|s|-|-|$note")
	lines+=("BENCH|$image: first task, warm start|$w|s|cold boot: $c s|$(awk -v a="$w" -v b="$c" 'BEGIN { printf "%.2f", a / b }')|$note")
	lines+=("BENCH|$image: first task, the job that makes the template|$make|s|cold boot: $c s|$(awk -v a="$make" -v b="$c" 'BEGIN { printf "%.2f", a / b }')|TCG guest; a cold boot, a save and a restore")
	harness_vmconf_set BootMode cold
done

printf '%-60s %10s %s\n' figure value peer/ratio
for l in "${lines[@]}"; do
	IFS='|' read -r _ name value unit peer ratio _ <<<"$l"
	printf '%-60s %8s %s  %s %s\n' "$name" "$value" "$unit" "$peer" "$ratio"
done
printf '%s\n' "${lines[@]}"
