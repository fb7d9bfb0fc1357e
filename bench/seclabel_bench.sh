#!/bin/bash
# `virsh create` with qemu as the job user against qemu as qemu.conf's user
# (root in the harness), same daemon, same trivial domain (TCG, 64 MiB, no
# disk), alternating, ROUNDS each:
#
#   flock /tmp/slurm-vm-guest.lock bench/seclabel_bench.sh [ROUNDS] [USER]
#
# The job-user domain carries the prolog's <seclabel type='static'
# model='dac' relabel='no'><label>+UID:+GID</label>. Prints every time, the
# medians and their ratio, and a BENCH| line (see bench/run.sh). A ratio
# near 1 means the per-domain seclabel costs libvirt nothing: no capability
# re-probe (the cache check asks about qemu.conf's user, not the domain's),
# no relabeling.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-5}
[ "${SVM_BENCH_SHORT:-0}" = 1 ] && rounds=${1:-1} # bench/run.sh --short
user=${2:-nobody}
prefix=svmtest-
[ "$(id -u)" = 0 ] || { echo "seclabel_bench: run as root" >&2; exit 77; }
uid=$(id -u "$user")
gid=$(id -g "$user")

# shellcheck source=../tests/cluster/libvirt.sh
. "$here/../tests/cluster/libvirt.sh"
name=${prefix}seclabel-$$
work=$(mktemp -d /run/svm-seclabel.XXXXXX)
chmod 0755 "$work"
n=0
cleanup() {
	virsh -q -c "$LIBVIRT_URI" destroy "$name-$n" >/dev/null 2>&1 || true
	libvirt_stop "$prefix" || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

domain_xml() { # seclabel-or-empty
	cat <<XML
<domain type='qemu'>
  <name>@NAME@</name>
  <memory unit='MiB'>64</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <devices>
    <serial type='pty'><target port='0'/></serial>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
  </devices>
  $1
</domain>
XML
}
domain_xml "" >"$work/root.xml"
domain_xml "<seclabel type='static' model='dac' relabel='no'><label>+$uid:+$gid</label></seclabel>" \
	>"$work/user.xml"

libvirt_start "$prefix" >/dev/null
# A new name each time: a transient domain's name stays taken for a moment
# after destroy returns.
create_s() { # xml n -> seconds of `virsh create`, and qemu's uid
	local t0 t1 pid n=$2
	sed "s/@NAME@/$name-$n/" "$1" >"$work/cur.xml"
	t0=$(date +%s.%N)
	virsh -q -c "$LIBVIRT_URI" create "$work/cur.xml" >/dev/null
	t1=$(date +%s.%N)
	pid=$(cat "/run/libvirt/qemu/$name-$n.pid")
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $(ps -o uid= -p "$pid" | tr -d ' ')"
	virsh -q -c "$LIBVIRT_URI" destroy "$name-$n" >/dev/null
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

create_s "$work/root.xml" 0 >/dev/null # warm the capability cache
: >"$work/root.t"
: >"$work/user.t"
for _ in $(seq "$rounds"); do
	for kind in root user; do
		n=$((n + 1))
		read -r t quid <<<"$(create_s "$work/$kind.xml" "$n")"
		echo "virsh create, qemu as $kind: ${t}s (qemu uid $quid)"
		want=0
		[ "$kind" = user ] && want=$uid
		[ "$quid" = "$want" ] || { echo "seclabel_bench: qemu ran as uid $quid, not $want" >&2; exit 1; }
		echo "$t" >>"$work/$kind.t"
	done
done
mr=$(median <"$work/root.t")
mu=$(median <"$work/user.t")
echo "median virsh create: qemu as root ${mr}s, as $user (uid $uid) ${mu}s"
ratio=$(awk -v u="$mu" -v r="$mr" 'BEGIN { printf "%.2f", u / r }')
echo "ratio job user / root: $ratio"
# For bench/run.sh (BENCH|name|value|unit|peer|ratio|note).
echo "BENCH|virsh create, qemu as the job user (DAC seclabel)|$mu|s|virsh create, qemu as root: $mr s|$ratio|trivial TCG domain, no disk; median of $rounds, alternating"
