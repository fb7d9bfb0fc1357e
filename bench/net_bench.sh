#!/bin/bash
# The job network's TCP latency and throughput: between the two nodes'
# guests of one `sbatch -N2` job (JobNetwork=vxlan: the guests' virtio NICs,
# taps, the job's bridges and VXLAN over the underlay) against the same
# between the two node namespaces over the underlay itself (the peer,
# measured in the same run, alternating with the guests').
#
#   bench/net_bench.sh [N]      (root; the build from $BUILD_DIR, default
#                               build/; N runs of each, default 3)
#
# Starts a 2-node test cluster (tests/cluster/harness.sh `harness_start 2`:
# each node a slurmd in its own network namespace, veth to the underlay
# bridge, MTU 9000) and one job of two nodes, one vCPU per guest. Each run:
# svm-net-bench (tests/guest/files/net_bench.c; the host's build is
# build/bench/net_bench) serves on n2 and n1's client makes
# SVM_NET_ROUNDS (2000) round trips of 64 bytes, then sends SVM_NET_MIB (32)
# MiB in bulk. Prints medians over the N runs and lines
#   BENCH|<name>|<value>|<unit>|<peer or ->|<ratio or ->|<note>
# for bench/run.sh. The guests run under TCG here (no KVM): their figures
# are regression figures for this machine, not production ones, and say
# "TCG". SVM_BENCH_SHORT=1 (bench/run.sh --short): N 1, 200 round trips,
# 2 MiB, the guests destroyed at the end. Takes about 2 minutes with the
# guests' boot. Boots guests: run it
# under the guest lock on shared machines
#   flock /tmp/slurm-vm-guest.lock bench/net_bench.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
export BUILD_DIR
BUILD_DIR=$(cd "${BUILD_DIR:-$top/build}" && pwd)
short_conf=()
if [ "${SVM_BENCH_SHORT:-0}" = 1 ]; then
	n=${1:-1} rounds=${SVM_NET_ROUNDS:-200} mib=${SVM_NET_MIB:-2}
	short_conf=(ShutdownTimeout=1)
else
	n=${1:-3} rounds=${SVM_NET_ROUNDS:-2000} mib=${SVM_NET_MIB:-32}
fi
for v in "$n" "$rounds" "$mib"; do
	case "$v" in '' | *[!0-9]* | 0) echo "net_bench: N, SVM_NET_ROUNDS and SVM_NET_MIB must be positive integers" >&2; exit 2 ;; esac
done
[ "$(id -u)" = 0 ] || {
	echo "net_bench: run as root (it starts slurmctld, slurmd and libvirtd)" >&2
	exit 2
}
nb=$BUILD_DIR/bench/net_bench
[ -x "$nb" ] || { echo "net_bench: $nb not built (make)" >&2; exit 2; }

# shellcheck source=../tests/cluster/harness.sh
. "$top/tests/cluster/harness.sh"
# shellcheck source=../tests/cluster/guest.sh
. "$top/tests/cluster/guest.sh"

user=svmtest
HARNESS_NODE_COUNT=2 guest_cluster_start 300 JobNetwork=vxlan JobNetworkUnderlay=eth0 \
	"${short_conf[@]+"${short_conf[@]}"}"
if [ -w /dev/kvm ] && grep -qi '^DomainType *= *kvm' "$HARNESS_VM_CONF"; then
	note=KVM
else
	note="TCG guests (no KVM): regression figure"
fi

job=$(harness_as_user "$user" sbatch --parsable -N2 -c1 --vm-cpus=1 --mem=768M \
	--vm-image=testguest -o /dev/null --wrap 'sleep 3600')
harness_wait 120 "job $job to start" sh -c "squeue -h -j $job -t R | grep -q ." ||
	harness_die "job $job does not start: $(squeue -h -j "$job" 2>&1)"
step() { # NODE CMD...: one task in the job's guest on NODE
	local node=$1
	shift
	harness_as_user "$user" timeout 300 srun --jobid="$job" --overlap -D /tmp \
		-N1 -n1 -w "$node" "$@" </dev/null
}
# n2's guest address on the job network, from its /etc/hosts (srun waits
# for the prologs).
guest_n2=$(step n1 awk '$2 == "n2" { print $1 }' /etc/hosts) ||
	harness_die "no step in job $job's guest on n1"
[ -n "$guest_n2" ] || harness_die "job $job's guest on n1 has no address for n2"
port=$((20000 + RANDOM % 20000))

# One measurement: "RTT_MEDIAN RTT_P90 MIB_PER_S" from the client's line.
measure() { # guest|node
	local out pid
	if [ "$1" = guest ]; then
		step n2 svm-net-bench tcp-serve "$port" 120 >/dev/null &
		pid=$!
		out=$(step n1 svm-net-bench tcp-client "$guest_n2" "$port" "$rounds" "$mib")
	else
		harness_node_exec n2 "$nb" tcp-serve "$port" 120 >/dev/null &
		pid=$!
		out=$(harness_node_exec n1 "$nb" tcp-client "${HARNESS_NODE_ADDR[n2]}" \
			"$port" "$rounds" "$mib")
	fi
	wait "$pid" || harness_die "$1: the server failed (client: $out)"
	# net-bench: rtt median U us p90 U us; bulk N MiB in S s: R MiB/s
	sed -n 's/^net-bench: rtt median \([0-9.]*\) us p90 \([0-9.]*\) us; .*: \([0-9.]*\) MiB\/s$/\1 \2 \3/p' <<<"$out" |
		grep . || harness_die "$1: no figures from the client: $out"
}

declare -A samples
for ((i = 0; i < n; i++)); do
	for kind in guest node; do
		read -r med p90 tput <<<"$(measure "$kind")"
		[ -n "${tput:-}" ] || harness_die "run $((i + 1)) $kind: no figures"
		samples[${kind}_rtt]+="$med "
		samples[${kind}_p90]+="$p90 "
		samples[${kind}_tput]+="$tput "
		echo "net_bench: run $((i + 1)) $kind: rtt median $med us, p90 $p90 us, $tput MiB/s" >&2
	done
done
scancel "$job"

median() {
	tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '
		{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] }'
}
ratio() { printf '%.3f' "$(echo "$1 / $2" | bc -l)"; }
for f in guest_rtt guest_p90 guest_tput node_rtt node_p90 node_tput; do
	declare "m_$f=$(median "${samples[$f]}")"
done

echo "net_bench: medians of $n runs; $rounds round trips of 64 bytes, $mib MiB bulk"
echo "net_bench: guests: $note"
printf '%-36s %12s %12s %12s\n' "" "rtt median" "rtt p90" throughput
printf '%-36s %9s us %9s us %6s MiB/s\n' "guest n1 -> guest n2 (job network)" \
	"$m_guest_rtt" "$m_guest_p90" "$m_guest_tput"
printf '%-36s %9s us %9s us %6s MiB/s\n' "node n1 -> node n2 (underlay)" \
	"$m_node_rtt" "$m_node_p90" "$m_node_tput"
g="guest-to-guest TCP over the job network"
h="node-to-node TCP over the underlay"
echo "BENCH|$g: 64 B round trip, median|$m_guest_rtt|us|$h: 64 B round trip, median|$(ratio "$m_guest_rtt" "$m_node_rtt")|$note; median of $n runs of $rounds"
echo "BENCH|$g: 64 B round trip, p90|$m_guest_p90|us|$h: 64 B round trip, p90|$(ratio "$m_guest_p90" "$m_node_p90")|$note; median of $n runs"
echo "BENCH|$g: throughput|$m_guest_tput|MiB/s|$h: throughput|$(ratio "$m_guest_tput" "$m_node_tput")|$note; $mib MiB, median of $n runs"
echo "BENCH|$h: 64 B round trip, median|$m_node_rtt|us|-|-|network namespaces, veth to a bridge (MTU 9000); median of $n runs of $rounds"
echo "BENCH|$h: 64 B round trip, p90|$m_node_p90|us|-|-|median of $n runs"
echo "BENCH|$h: throughput|$m_node_tput|MiB/s|-|-|$mib MiB, median of $n runs"
