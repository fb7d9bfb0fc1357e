#!/bin/bash
# A vm.conf SharedDirs= share (9p, served by qemu as the job user) from
# inside the guest against the same operations on the host directory
# itself, measured in the same run on the same test cluster:
#   sequential write of 256 MiB (fsync'd), sequential read of it, and
#   2000 x (create, stat, unlink) of a small file.
#
#   bench/share_bench.sh [RUNS]   (root; the build from $BUILD_DIR, default
#                                 build/; RUNS of each, default 3, medians)
#
# The same static program (build/bench/share_ops, copied into the share)
# does the operations on both sides and times them itself, so neither the
# task start nor an exec is counted. Only the 9p transport runs on this
# machine (Debian 12 has no Rust virtiofsd). Without KVM the guest runs
# under TCG, which emulates every guest instruction of the 9p client and
# its copies: the guest figures are then regression figures for this
# machine, not production ones, and say "TCG". Prints BENCH| lines (see
# bench/run.sh). SVM_BENCH_SHORT=1 (bench/run.sh --short): 1 run, 8 MiB,
# 100 files, the guest destroyed at the end. Boots a guest: on shared machines run it under the guest
# lock (flock /tmp/slurm-vm-guest.lock bench/share_bench.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
export BUILD_DIR
BUILD_DIR=$(cd "${BUILD_DIR:-$top/build}" && pwd)
short_conf=()
if [ "${SVM_BENCH_SHORT:-0}" = 1 ]; then
	runs=${1:-1} mib=8 files=100 short_conf=(ShutdownTimeout=1)
else
	runs=${1:-3} mib=256 files=2000
fi
case "$runs" in '' | *[!0-9]* | 0) echo "share_bench: RUNS must be a positive integer" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "share_bench: run as root (it starts slurmctld, slurmd and libvirtd)" >&2; exit 2; }
ops=$BUILD_DIR/bench/share_ops
[ -x "$ops" ] || { echo "share_bench: no $ops: run make first" >&2; exit 2; }

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
install -o "$user" -m 0755 "$ops" "$work/share_ops"
harness_as_user "$user" mkdir -p "$work/guest" "$work/host"
job=$(harness_as_user "$user" sbatch --parsable -c1 --mem=768M \
	--vm-image=testguest --wrap 'sleep 1800')
harness_wait 300 "job $job's guest" grep -q "job $job: guest ready" "$HARNESS_VM_LOG" ||
	harness_die "no guest for job $job"

in_guest() { guest_exec "$user" "$job" -- "$work/share_ops" "$@"; }
on_host() { harness_as_user "$user" "$work/share_ops" "$@"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# measure NAME OP ARGS...: RUNS of OP in the guest and on the host,
# alternating, each side in its own directory; one BENCH line.
measure() {
	local name=$1 op=$2 r g h guest host ratio
	shift 2
	: >"$HARNESS_DIR/g.$op"
	: >"$HARNESS_DIR/h.$op"
	for r in $(seq "$runs"); do
		g=$(in_guest "$op" "${@//@/$work/guest}") || harness_die "share_ops $op in the guest failed: $g"
		h=$(on_host "$op" "${@//@/$work/host}") || harness_die "share_ops $op on the host failed: $h"
		echo "$g" >>"$HARNESS_DIR/g.$op"
		echo "$h" >>"$HARNESS_DIR/h.$op"
	done
	guest=$(median <"$HARNESS_DIR/g.$op")
	host=$(median <"$HARNESS_DIR/h.$op")
	ratio=$(awk -v a="$guest" -v b="$host" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }')
	echo "BENCH|$name, 9p share in the guest|$guest|s|the host directory: $host s|$ratio|$note, median of $runs; qemu serves the share as the job user"
}

measure "sequential write of $mib MiB (fsync)" write @/big "$mib"
measure "sequential read of $mib MiB" read @/big
measure "$files x create+stat+unlink" files @ "$files"
rm -f "$work/guest/big" "$work/host/big"
scancel "$job"
