#!/bin/bash
# The job network's boundaries seen from inside a guest, on two real nodes
# (harness_start 2, JobNetwork=vxlan): two jobs A and B of two nodes each
# run at once (one vCPU per guest), and from A's guest on n1, as root in
# it:
#   - A's own peer on n2 receives its datagrams (the control: the probe
#     works, so the checks below can fail) and its subnet broadcast;
#   - the underlay is out of reach: the harness's bridge address (slurmctld's
#     ControlAddr), n1's own NodeAddr and n2's NodeAddr, each routed on-link
#     through job0 to the MAC of n1's job bridge (what a guest would try to
#     get past the node), answer no ping and receive no datagram;
#   - job B's guests receive nothing of A: not the broadcast, not a datagram
#     to B's guest MAC, and A's guests nothing of B's (B's own pair reaches
#     itself at the same time: each job reaches its own peer only);
#   - a spoofed source IP (a third address of the job subnet) and a spoofed
#     source MAC (`ip link set job0 address ...`) are dropped: n2's guest
#     receives the genuine datagrams sent before and after them, not them;
#   - raw frames to the IEEE link-local groups 01:80:c2:00:00:0e, :00, :03
#     (which a bridge passes to the port's own stack past its hooks), with
#     the ControlAddr or the guest's own address as source, to n1's
#     NodeAddr and as VXLAN with B's VNI from n2's address, reach nothing
#     of n1's IP stack (a prerouting counter), no sink and not B's guest;
#   - each guest's tap has no IPv6 address and the netdev table bound to it.
# Arrival is counted where a packet would land: UDP sinks (svm-net-bench,
# tests/guest/files/net_bench.c; the host's build/bench/net_bench) in B's
# guests, A's n2 guest, both node namespaces and the root namespace.
#
# How the test is root in the guest: AllowRoot=yes and the jobs submitted by
# root, so the probes are ordinary srun steps of the job that run as uid 0
# in the guest, the same path a job's own tasks take. That is what the
# threat model grants a user (root in their own guest: their own image, its
# kernel's CAP_NET_ADMIN and raw sockets); qemu-guest-agent through the
# node's libvirtd would also give root in the guest, but by a host-side
# channel no user has, so it would prove less about what a user can do.
# cluster-timeout: 360
set -uo pipefail

. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

failures=0
HARNESS_NODE_COUNT=2 guest_cluster_start 180 JobNetwork=vxlan \
	JobNetworkUnderlay=eth0 AllowRoot=yes
w=$HARNESS_WORK/isolation
mkdir -p "$w"
nb=$BUILD_DIR/bench/net_bench
[ -x "$nb" ] || harness_die "$nb not built"
port=$((20000 + RANDOM % 20000))

# Two jobs of two nodes each, one vCPU per guest: both fit at once.
submit() {
	timeout 30 sbatch --parsable -N2 -c1 --vm-cpus=1 --mem=768M \
		--vm-image=testguest -o /dev/null --wrap 'sleep 900' 2>&1
}
A=$(submit)
B=$(submit)
[[ "$A" =~ ^[0-9]+$ ]] && [[ "$B" =~ ^[0-9]+$ ]] || harness_die "sbatch: '$A' '$B'"
harness_wait 120 "jobs $A and $B to start" sh -c "[ \"\$(squeue -h -j $A,$B -t R | wc -l)\" = 2 ]" ||
	harness_die "jobs $A and $B do not run at once: $(squeue -h -j "$A,$B" 2>&1)"
ok "jobs $A and $B, two nodes each, run at once"
step() { # JOB NODE CMD...: one task in JOB's guest on NODE, as root
	local job=$1 node=$2
	shift 2
	timeout 300 srun --jobid="$job" --overlap -D /tmp -N1 -n1 -w "$node" "$@" </dev/null
}

# Each guest: uid, job0's address and MAC (srun waits for the prologs).
declare -A gip gmac
for j in A B; do
	for node in n1 n2; do
		out=$(step "${!j}" "$node" sh -c 'echo "$(id -u) $(ip -4 addr show dev job0 |
			sed -n "s/.*inet \([0-9.]*\/[0-9]*\).*/\1/p") $(cat /sys/class/net/job0/address)"' 2>&1)
		read -r uid cidr m <<<"$out"
		if [ "$uid" = 0 ] && [[ "$cidr" == */* ]] && [ -n "$m" ]; then
			gip[$j$node]=${cidr%/*}
			gmac[$j$node]=$m
			echo "    job $j (${!j}) $node guest: root, job0 $cidr $m"
		else
			harness_die "job $j (${!j}) $node: no root task or no job0 in the guest: $out"
		fi
	done
done
prefix=$(step "$A" n1 sh -c 'ip -4 addr show dev job0' | sed -n 's/.*inet [0-9.]*\/\([0-9]*\).*/\1/p')
bcast=$(step "$A" n1 ipcalc -b "${gip[An1]}/$prefix" | sed -n 's/^BROADCAST=//p')
spoof=${gip[An1]%.*}.$((${gip[An1]##*.} + 2)) # a third index of the subnet
fake_mac=02:00:5e:00:53:01
# (Not from /sys: the node's namespace sees the host's sysfs.)
brmac=$(harness_node_exec n1 ip -o link show dev "svmb$(printf %08x "$A")" |
	sed -n 's/.* link\/ether \([0-9a-f:]*\) .*/\1/p')
[ -n "$brmac" ] || harness_die "n1: no MAC of job $A's bridge"
ctld=$HARNESS_NET.1
addr1=${HARNESS_NODE_ADDR[n1]}
addr2=${HARNESS_NODE_ADDR[n2]}

# The sinks: B's guests, A's n2 guest, both nodes, the host. Read once
# the probes are done; then the jobs' end stops those in the guests, a
# "stop" datagram the others.
secs=240
pids=()
step "$A" n2 svm-net-bench udp-sink "$port" $secs >"$w/A-n2" 2>&1 &
pids+=($!)
step "$B" n1 svm-net-bench udp-sink "$port" $secs >"$w/B-n1" 2>&1 &
pids+=($!)
step "$B" n2 svm-net-bench udp-sink "$port" $secs >"$w/B-n2" 2>&1 &
pids+=($!)
harness_node_exec n1 timeout $secs "$nb" udp-sink "$port" $secs >"$w/node-n1" 2>&1 &
pids+=($!)
harness_node_exec n2 timeout $secs "$nb" udp-sink "$port" $secs >"$w/node-n2" 2>&1 &
pids+=($!)
timeout $secs "$nb" udp-sink "$port" $secs >"$w/host" 2>&1 &
pids+=($!)
sinks="A-n2 B-n1 B-n2 node-n1 node-n2 host"
for s in $sinks; do
	harness_wait 30 "the $s sink" grep -q '^udp-sink: listening' "$w/$s" ||
		fail "the $s sink did not start: $(head -3 "$w/$s")"
done

# A's probe on n1, as root in the guest.
probe='set -u
peer=$1 peer_mac=$2 bmac=$3 bcast=$4 spoof=$5 fake=$6 brmac=$7 port=$8
me=$9 bvni=${10} bip=${11} ctld=${12} node1=${13} node2=${14}
shift 11
send() { svm-net-bench udp-send "$@" || echo "probe: udp-send $* failed"; }
arp -i job0 -s "$peer" "$peer_mac"
send "$peer" "$port" A-genuine-1
# Job B'"'"'s guest on n2: its MAC (its address is our peer'"'"'s).
arp -i job0 -s "$peer" "$bmac"
send "$peer" "$port" A-to-B-mac
arp -i job0 -s "$peer" "$peer_mac"
send "$bcast" "$port" A-broadcast
# The underlay, on-link through job0 to the node bridge'"'"'s MAC.
for t in "$@"; do
	ip route add "$t/32" dev job0
	arp -i job0 -s "$t" "$brmac"
	send "$t" "$port" "A-to-$t"
	ping -c 1 -w 2 "$t" >/dev/null 2>&1 && echo "probe: $t answers ping"
done
# Raw frames to the IEEE link-local groups, which a bridge hands to the
# port'"'"'s own stack past its hooks: to n1 from ControlAddr and from our
# own address, and as VXLAN from n2 with B'"'"'s VNI to B'"'"'s n1 guest.
for g in 0e 00 03; do
	for src in "$ctld" "$me"; do
		svm-net-bench raw-udp job0 "01:80:c2:00:00:$g" "$src" "$node1" \
			"$port" "A-group-$g-from-$src" || echo "probe: raw-udp failed"
	done
	svm-net-bench raw-vxlan job0 "01:80:c2:00:00:$g" "$node2" "$node1" \
		"$bvni" "$bip" "$port" "A-group-$g-vxlan" || echo "probe: raw-vxlan failed"
done
ip addr add "$spoof/32" dev job0
send -s "$spoof" "$peer" "$port" A-spoofed-ip
ip addr del "$spoof/32" dev job0
orig=$(cat /sys/class/net/job0/address)
ip link set job0 address "$fake"
# The MAC change flushed the neighbours: no ARP with the fake MAC, the
# datagram itself must be dropped.
arp -i job0 -s "$peer" "$peer_mac"
send "$peer" "$port" A-spoofed-mac
ip link set job0 address "$orig"
send "$peer" "$port" A-genuine-2
echo probe: done'
bvni=$(harness_node_exec n1 ip -d link show dev "svmx$(printf %08x "$B")" |
	sed -n 's/.*vxlan id \([0-9]*\) .*/\1/p')
[ -n "$bvni" ] || harness_die "n1: no VNI of job $B"
# What of the group-addressed frames reaches n1's IP stack at all.
harness_node_exec n1 nft "add table inet svm_test_group; add chain inet svm_test_group pre { type filter hook prerouting priority -400; }; add rule inet svm_test_group pre ether daddr 01:80:c2:00:00:00-01:80:c2:00:00:0f counter" ||
	harness_die "n1: cannot add the group counter"
step "$A" n1 sh -c "$probe" probe "${gip[An2]}" "${gmac[An2]}" "${gmac[Bn2]}" \
	"$bcast" "$spoof" "$fake_mac" "$brmac" "$port" "${gip[An1]}" "$bvni" \
	"${gip[Bn1]}" "$ctld" "$addr1" "$addr2" >"$w/probe-A" 2>&1
# B's own pair at the same time: its peer and its broadcast.
step "$B" n1 sh -c 'svm-net-bench udp-send "$1" "$3" B-genuine &&
	svm-net-bench udp-send "$2" "$3" B-broadcast && echo probe: done' probe \
	"${gip[Bn2]}" "$bcast" "$port" >"$w/probe-B" 2>&1
sed 's/^/    A probe: /' "$w/probe-A"
grep -qx 'probe: done' "$w/probe-A" && grep -qx 'probe: done' "$w/probe-B" ||
	fail "a probe did not finish: $(cat "$w/probe-A" "$w/probe-B" | tr '\n' ' ')"
sleep 2 # the last datagrams' way to the sinks
for s in $sinks; do
	sed "s/^/    $s: /" "$w/$s"
done

got() { grep -qx "udp-sink: got $2 from $3" "$w/$1"; }
# The controls: each job's peer gets its own job's datagrams.
for m in A-genuine-1 A-genuine-2 A-broadcast; do
	got A-n2 "$m" "${gip[An1]}" && ok "A's n2 guest received $m from A's n1 guest" ||
		fail "A's n2 guest did not receive $m (the control)"
done
for m in B-genuine B-broadcast; do
	got B-n2 "$m" "${gip[Bn1]}" && ok "B's n2 guest received $m from B's n1 guest" ||
		fail "B's n2 guest did not receive $m (the control)"
done
# nothing SINK PATTERN WHAT: SINK received no datagram matching PATTERN.
nothing() {
	local l
	l=$(grep "udp-sink: got $2" "$w/$1")
	[ -z "$l" ] && ok "$1 received nothing $3" || fail "$1 received $3: $l"
}
# Another job's guests: nothing of the other job.
nothing B-n1 A- "of job A (its broadcast, a datagram to B's guest MAC)"
nothing B-n2 A- "of job A (its broadcast, a datagram to B's guest MAC)"
nothing A-n2 B- "of job B (its broadcast)"
# The underlay: no sink on the nodes or the host got anything, no ping answer.
for s in node-n1 node-n2 host; do
	nothing "$s" "" "from A's guest ($ctld, $addr1, $addr2 tried)"
done
l=$(grep 'answers ping' "$w/probe-A")
[ -z "$l" ] && ok "no ping answer from $ctld (ControlAddr), $addr1 (n1) or $addr2 (n2)" ||
	fail "a guest reached the underlay: $l"
n=$(harness_node_exec n1 nft list chain inet svm_test_group pre | sed -n 's/.*counter packets \([0-9]*\) .*/\1/p')
harness_node_exec n1 nft delete table inet svm_test_group
[ "$n" = 0 ] && ok "frames to 01:80:c2:00:00:0e, :00, :03 (spoofed ControlAddr, own address, VXLAN into B) reach nothing of n1's IP stack" ||
	fail "$n frames to the link-local groups reached n1's IP stack"
# Spoofing: dropped, while the genuine ones before and after arrived.
nothing A-n2 A-spoofed-ip "spoofed from source IP $spoof (dropped)"
nothing A-n2 A-spoofed-mac "spoofed from source MAC $fake_mac (dropped)"

# The guests' taps (libvirt's, IPv6 on when made): locked before the guest
# ran, IPv6 off (no link-local address to reach the node by), the netdev
# table on the tap, no route the node took from a guest's RA.
for j in A B; do
	tap=svmt$(printf %08x "${!j}")
	for node in n1 n2; do
		v6=$(harness_node_exec "$node" ip -6 addr show dev "$tap" 2>&1)
		tbl=$(harness_node_exec "$node" nft list table netdev "svm_job_${!j}" 2>&1)
		rt=$(harness_node_exec "$node" ip -6 route show default 2>&1)
		if [ -z "$v6" ] && [[ "$tbl" == *"device \"$tap\""* ]] && [ -z "$rt" ]; then
			ok "job $j $node: tap $tap has no IPv6 address, its netdev table is bound to it, no IPv6 default route"
		else
			fail "job $j $node: tap $tap: IPv6 '$v6', table '$tbl', default route '$rt'"
		fi
	done
done

# Both jobs end; nothing of either is left on either node.
scancel "$A" "$B"
harness_node_exec n1 "$nb" udp-send 127.0.0.1 "$port" stop
harness_node_exec n2 "$nb" udp-send 127.0.0.1 "$port" stop
"$nb" udp-send 127.0.0.1 "$port" stop
wait "${pids[@]}" # the sinks only, not the harness's daemons
harness_wait 120 "jobs $A and $B to end" sh -c "[ -z \"\$(squeue -h -j $A,$B)\" ]" ||
	fail "jobs $A $B did not end"
harness_wait 90 "the epilogs" sh -c '[ -z "$(sinfo -h -N -t completing -o %N)" ]'
for node in n1 n2; do
	guest_nothing_left "$A" "$node"
	guest_nothing_left "$B" "$node"
done
s=$(sinfo -h -N -o '%N %t' | sort | tr '\n' ' ')
[ "$s" = "n1 idle n2 idle " ] && ok "both nodes idle: $s" || { fail "nodes: $s"; sinfo -R; }

[ "$failures" = 0 ]
