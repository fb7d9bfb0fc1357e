#!/bin/bash
# A vm.conf SharedDirs= share from inside the guest against the same
# operations on the host directory itself, over each transport this node
# has (9p, served by qemu as the job user; virtiofs, served by a Rust
# virtiofsd the prolog starts as the job user, where one is installed:
# Debian 13 and later), measured in the same run on the same test cluster:
#   sequential write of 256 MiB (fsync'd), sequential read of it,
#   2000 x (create, stat, unlink) of a small file, and a metadata-heavy
#   real task: tar -x of a source tree (this checkout's files).
# With both transports, virtiofs against 9p as well.
#
#   bench/share_bench.sh [RUNS]   (root; the build from $BUILD_DIR, default
#                                 build/; RUNS of each, default 3, medians)
#
# The same static program (build/bench/share_ops, copied into the share)
# does the first three on both sides and times them itself, so neither the
# task start nor an exec is counted; tar is timed where it runs. Without
# KVM the guest runs under TCG, which emulates every guest instruction of
# the share's client and its copies: the guest figures are then regression
# figures for this machine, not production ones, and say "TCG". Prints
# BENCH| lines (see bench/run.sh). SVM_BENCH_SHORT=1 (bench/run.sh
# --short): 1 run, 8 MiB, 100 files, common/'s tree, the guest destroyed at
# the end. Boots
# a guest per transport: on shared machines run it under the guest lock
# (flock /tmp/slurm-vm-guest.lock bench/share_bench.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
export BUILD_DIR
BUILD_DIR=$(cd "${BUILD_DIR:-$top/build}" && pwd)
short_conf=()
if [ "${SVM_BENCH_SHORT:-0}" = 1 ]; then
	runs=${1:-1} mib=8 files=100 short_conf=(ShutdownTimeout=1) tree_dirs=(common)
else
	runs=${1:-3} mib=256 files=2000 tree_dirs=()
fi
case "$runs" in '' | *[!0-9]* | 0) echo "share_bench: RUNS must be a positive integer" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "share_bench: run as root (it starts slurmctld, slurmd and libvirtd)" >&2; exit 2; }
ops=$BUILD_DIR/bench/share_ops
virtiofsd=${SVM_VIRTIOFSD:-/usr/libexec/virtiofsd}
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
# virtiofs where a Rust virtiofsd is installed (Debian 13 and later).
transports=(9p)
! harness_rust_virtiofsd "$virtiofsd" || transports+=(virtiofs)
work=$HARNESS_WORK/$user
install -o "$user" -m 0755 "$ops" "$work/share_ops"
harness_as_user "$user" mkdir -p "$work/guest" "$work/host"
# The metadata-heavy task: unpacking a source tree (this checkout's files;
# short: its common/).
git -C "$top" ls-files -z "${tree_dirs[@]}" |
	tar -C "$top" --null -T - -cf "$HARNESS_DIR/tree.tar" 2>/dev/null ||
	tar -C "$top" --exclude=./build\* --exclude=./tests/guest/cache\* \
		--exclude=./tests/platform/cache -cf "$HARNESS_DIR/tree.tar" \
		"${tree_dirs[@]:-.}"
install -o "$user" -m 0644 "$HARNESS_DIR/tree.tar" "$work/tree.tar"
tree_files=$(tar -tf "$work/tree.tar" | wc -l)

in_guest() { guest_exec "$user" "$job" -- "$work/share_ops" "$@"; }
on_host() { harness_as_user "$user" "$work/share_ops" "$@"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# untar DIR: seconds to unpack the tree into DIR (emptied first), timed
# where it runs (in the guest or on the host), so no task start is counted:
# date's nanoseconds where it has them (coreutils), else /proc/uptime's
# 10 ms (busybox).
# shellcheck disable=SC2016 # expanded by the sh that runs it
untar_cmd='now() {
		t=$(date +%s.%N 2>/dev/null)
		case "$t" in "" | *[!0-9.]*) read -r t _ </proc/uptime ;; esac
		echo "$t"
	}
	rm -rf "$1/tree" && mkdir "$1/tree" && t0=$(now) &&
	tar -xf "$2" -C "$1/tree" && t1=$(now) &&
	awk -v a="$t0" -v b="$t1" "BEGIN { printf \"%.3f\\n\", b - a }"'
untar_guest() { guest_exec "$user" "$job" -- sh -c "$untar_cmd" sh "$1" "$work/tree.tar"; }
untar_host() { harness_as_user "$user" sh -c "$untar_cmd" sh "$1" "$work/tree.tar"; }

# measure NAME OP ARGS...: RUNS of OP in the guest and on the host,
# alternating, each side in its own directory; one BENCH line, and the
# guest's median in $HARNESS_DIR/median.TRANSPORT.OP.
measure() {
	local name=$1 op=$2 r g h guest host ratio
	shift 2
	: >"$HARNESS_DIR/g.$op"
	: >"$HARNESS_DIR/h.$op"
	for r in $(seq "$runs"); do
		if [ "$op" = untar ]; then
			g=$(untar_guest "$work/guest") || harness_die "tar -x in the guest failed: $g"
			h=$(untar_host "$work/host") || harness_die "tar -x on the host failed: $h"
		else
			g=$(in_guest "$op" "${@//@/$work/guest}") || harness_die "share_ops $op in the guest failed: $g"
			h=$(on_host "$op" "${@//@/$work/host}") || harness_die "share_ops $op on the host failed: $h"
		fi
		echo "$g" >>"$HARNESS_DIR/g.$op"
		echo "$h" >>"$HARNESS_DIR/h.$op"
	done
	guest=$(median <"$HARNESS_DIR/g.$op")
	host=$(median <"$HARNESS_DIR/h.$op")
	echo "$guest" >"$HARNESS_DIR/median.$transport.$op"
	ratio=$(awk -v a="$guest" -v b="$host" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }')
	echo "BENCH|$name, $transport share in the guest|$guest|s|the host directory: $host s|$ratio|$note, median of $runs; $served"
}

for transport in "${transports[@]}"; do
	harness_vmconf_set SharedDirTransport "$transport"
	served="qemu serves the share as the job user"
	[ "$transport" = 9p ] || served="a virtiofsd the prolog started serves it as the job user"
	job=$(harness_as_user "$user" sbatch --parsable -c1 --mem=768M \
		--vm-image=testguest --wrap 'sleep 1800')
	harness_wait 300 "job $job's guest" grep -q "job $job: guest ready" "$HARNESS_VM_LOG" ||
		harness_die "no guest for job $job ($transport)"
	measure "sequential write of $mib MiB (fsync)" write @/big "$mib"
	measure "sequential read of $mib MiB" read @/big
	measure "$files x create+stat+unlink" files @ "$files"
	measure "tar -x of a source tree ($tree_files files)" untar
	rm -rf "$work/guest/big" "$work/host/big" "$work/guest/tree" "$work/host/tree"
	scancel "$job"
	harness_wait 120 "job $job to end" bash -c "! squeue -h -j $job | grep -q ." || true
done
# virtiofs against 9p, same guest image, same run.
if [ "${#transports[@]}" = 2 ]; then
	for op in write read files untar; do
		v=$(cat "$HARNESS_DIR/median.virtiofs.$op")
		p=$(cat "$HARNESS_DIR/median.9p.$op")
		ratio=$(awk -v a="$v" -v b="$p" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
		echo "BENCH|$op: virtiofs share in the guest|$v|s|the 9p share, same run: $p s|$ratio|$note, medians of $runs"
	done
fi
