#!/bin/bash
# The prolog's network phase (JobNetwork=vxlan, common/net/) for a simulated
# 1024-node job: this node's bridge, VXLAN device, 2046 forwarding entries
# for its 1023 peers and the job's nft tables, set up and torn down from the
# journal in a network namespace of its own (no Slurm, no guest), against
# the same for a 2-node job in the same run. The budget: under 1 s.
#
#   bench/jobnet_bench.sh [RUNS]     (BUILD_DIR: the build, default build/)
#
# Prints BENCH| lines (see bench/run.sh). Root; needs nft. Builds its
# driver, svm-jobnet (a check program), with make when it is not built.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$here/../build}
runs=${1:-5}
[ "${SVM_BENCH_SHORT:-0}" = 1 ] && runs=${1:-1} # bench/run.sh --short
drv=$build/tests/unit/svm-jobnet
[ "$(id -u)" = 0 ] || { echo "jobnet_bench: run as root" >&2; exit 2; }
# Right after `make` (the README's build) the check programs are not built.
make -C "$build" -s tests/unit/svm-jobnet >&2 ||
	{ echo "jobnet_bench: cannot build $drv (make -C $build tests/unit/svm-jobnet)" >&2; exit 2; }

ns=svmjb$$
work=$(mktemp -d)
trap 'ip netns del "$ns" 2>/dev/null; rm -rf "$work"' EXIT
ip netns add "$ns"
ip netns exec "$ns" ip link add ul0 mtu 9000 type veth peer name ul1
ip netns exec "$ns" ip addr add 198.19.3.24/15 dev ul0
ip netns exec "$ns" ip link set ul0 up
printf 'StateDir=%s\nJobNetwork=vxlan\nJobNetworkUnderlay=ul0\n' "$work/state" >"$work/vm.conf"

# measure NODES: median setup and teardown times (ms) of a job with NODES
# nodes, this one last.
measure() {
	local n=$1 job nodes=() i
	for i in $(seq 0 $((n - 1))); do nodes+=("b$i=198.19.$((i / 250)).$((i % 250 + 1))"); done
	for r in $(seq 1 "$runs"); do
		job=$((n * 100 + r))
		ip netns exec "$ns" "$drv" setup "$work/vm.conf" "$job" $((n - 1)) "${nodes[@]}" |
			awk '/^setup/ { printf "%s ", $2 * 1000 }'
		t0=$(date +%s.%N)
		ip netns exec "$ns" "$drv" teardown "$work/vm.conf" "$job" >/dev/null
		echo "$(date +%s.%N) $t0" | awk '{ print ($1 - $2) * 1000 }'
	done | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
print("%.1f %.1f" % tuple(statistics.median(c) for c in zip(*rows)))'
}
read -r big_setup big_down < <(measure 1024)
read -r small_setup small_down < <(measure 2)
left=$(ip netns exec "$ns" ip -o link | grep -c ' svm[btx]' || true)
ratio=$(awk -v a="$big_setup" -v b="$small_setup" 'BEGIN { printf "%.1f", a / b }')
echo "BENCH|network phase, 1024-node job (1023 peers): setup|$big_setup|ms|2-node job: $small_setup ms|$ratio|median of $runs; budget 1000 ms; links left after teardown: $left"
echo "BENCH|network phase, 1024-node job: teardown from the journal|$big_down|ms|2-node job: $small_down ms|-|median of $runs"
