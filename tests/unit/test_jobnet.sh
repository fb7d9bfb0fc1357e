#!/bin/bash
# The job network (common/net/jobnet.h) for real, without Slurm or guests:
# two "node" network namespaces on an underlay bridge (in a namespace of its
# own standing for the rest of the site, MTU 9000), the job network set up
# in each by svm-jobnet, a veth in place of each guest's tap with the
# planned MAC, IP and MTU in a "guest" namespace. Guests of a job reach each
# other and nothing else; spoofed frames are dropped; the journal's teardown
# leaves nothing. Root only (skipped otherwise); the trap removes every
# namespace, also on failure. The network-config is checked by cloud-init's
# own converter whenever cloud-init is installed.
set -u
build=${BUILD_DIR:-$(pwd)}
drv=$build/tests/unit/svm-jobnet
t=$(mktemp -d)
ns=svmjn$$
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
nsx() { local n=$1; shift; ip netns exec "$ns-$n" "$@"; }
cleanup() {
	for n in g1a g2a g1b g2b n1 n2 ul; do ip netns del "$ns-$n" 2>/dev/null; done
	rm -rf "$t"
}
trap cleanup EXIT

# The planned network-config, read by cloud-init 22.4 itself (its schema
# command validates only cloud-config): a static address matched by MAC.
printf 'JobNetwork=vxlan\nJobNetworkUnderlay=ul0\nJobNetworkSubnet=10.77.0.0/16\n' >"$t/plan.conf"
if command -v cloud-init >/dev/null; then
	"$drv" doc "$t/plan.conf" 4242 1 9000 network-config n1=192.0.2.1 n2=192.0.2.2 >"$t/nc.yaml"
	cloud-init devel net-convert -p "$t/nc.yaml" -k yaml -d "$t/nc" -D debian -O networkd >/dev/null 2>&1
	f="$t/nc/etc/systemd/network/10-cloud-init-job0.network"
	check "network-config: cloud-init renders address, MTU and MAC match" \
		"grep -qx 'Address=10.77.0.2/16' '$f' && grep -qx 'MTUBytes=8950' '$f' && grep -qx 'MACAddress=02:00:10:92:00:01' '$f'"
fi

# check-config names a missing underlay and accepts one that is there.
mkdir "$t/cc"
printf 'ClusterName=x\nSlurmctldHost=h\n' >"$t/cc/slurm.conf"
printf 'JobNetwork=vxlan\nJobNetworkUnderlay=nosuch0\n' >"$t/cc/vm.conf"
"$build/admin/slurm-vm" check-config --slurm-conf "$t/cc/slurm.conf" >"$t/cc/out" 2>&1
check "check-config: a missing underlay is a problem naming it" \
	"grep -q '^problem: JobNetworkUnderlay=nosuch0: no such interface' '$t/cc/out'"
printf 'JobNetwork=vxlan\nJobNetworkUnderlay=lo\n' >"$t/cc/vm.conf"
"$build/admin/slurm-vm" check-config --slurm-conf "$t/cc/slurm.conf" >"$t/cc/out" 2>&1
check "check-config: an underlay that is there is ok" \
	"grep -q '^ok: *JobNetworkUnderlay=lo: MTU' '$t/cc/out'"
# Slurm's default MaxJobId (67043328) outnumbers the default VNIs: a
# warning naming both; a MaxJobId within the range is ok.
check "check-config: JobNetworkVni narrower than MaxJobId is a warning" \
	"grep -q '^warning: JobNetworkVni=100000-16000000 holds 15900001 VNIs, fewer than MaxJobId=67043328' '$t/cc/out'"
printf 'ClusterName=x\nSlurmctldHost=h\nMaxJobId=15000000\n' >"$t/cc/slurm.conf"
"$build/admin/slurm-vm" check-config --slurm-conf "$t/cc/slurm.conf" >"$t/cc/out" 2>&1
check "check-config: a MaxJobId within JobNetworkVni is ok" \
	"grep -q '^ok: *JobNetworkVni=100000-16000000: a VNI for each of MaxJobId=15000000' '$t/cc/out' && ! grep -q '^warning: JobNetworkVni' '$t/cc/out'"

if [ "$(id -u)" != 0 ] || ! command -v nft >/dev/null || ! ip netns add "$ns-ul" 2>/dev/null; then
	echo "SKIP: the namespace part needs root, nft (nftables) and network namespaces"
	[ "$fails" = 0 ] || exit 1
	exit 77
fi

# --- the test bed: underlay bridge, two nodes (198.18.0.0/15 is for tests)
ul=198.18.77
for n in n1 n2 g1a g2a g1b g2b; do ip netns add "$ns-$n"; done
for n in ul n1 n2 g1a g2a g1b g2b; do nsx "$n" ip link set lo up; done
nsx ul ip link add br0 mtu 9000 type bridge
nsx ul ip addr add "$ul.254/24" dev br0
nsx ul ip link set br0 up
i=0
for n in n1 n2; do
	i=$((i + 1))
	nsx ul ip link add "v$n" mtu 9000 type veth peer name ul0 netns "$ns-$n"
	nsx ul ip link set "v$n" master br0 up
	nsx "$n" ip addr add "$ul.$i/24" dev ul0
	nsx "$n" ip link set ul0 mtu 9000 up
	printf 'StateDir=%s\nJobNetwork=vxlan\nJobNetworkUnderlay=ul0\nJobNetworkVni=1000-1999\nJobNetworkSubnet=10.77.0.0/16\n' \
		"$t/state-$n" >"$t/$n.conf"
done
nodes=("n1=$ul.1" "n2=$ul.2")

# A job on both nodes; its guests' veths in place of their taps.
# job_up JOB SUFFIX
job_up() {
	local job=$1 s=$2 i=0 n hex mac ip g
	hex=$(printf '%08x' "$job")
	for n in n1 n2; do
		if ! nsx "$n" "$drv" setup "$t/$n.conf" "$job" "$i" "${nodes[@]}" >"$t/setup-$n-$job" 2>&1; then
			echo "setup of job $job on $n failed:"; cat "$t/setup-$n-$job"; return 1
		fi
		mac=$("$drv" doc "$t/$n.conf" "$job" "$i" 9000 mac "${nodes[@]}")
		ip=$("$drv" doc "$t/$n.conf" "$job" "$i" 9000 ip "${nodes[@]}")
		g=g${n#n}$s
		nsx "$n" ip link add "svmt$hex" type veth peer name eth0 netns "$ns-$g"
		# libvirt gives a tap its bridge's MTU
		nsx "$n" ip link set "svmt$hex" mtu 8950 master "svmb$hex" up
		nsx "$g" ip link set eth0 address "$mac" mtu 8950 up
		nsx "$g" ip addr add "$ip/16" dev eth0
		# The guest is root: a route to everything, straight out.
		nsx "$g" ip route add default dev eth0
		# what the prolog does between libvirt's tap and the guest's
		# first instruction
		nsx "$n" "$drv" tap "$t/$n.conf" "$job" "$i" "${nodes[@]}" >>"$t/setup-$n-$job" 2>&1 ||
			echo "tap guard of job $job on $n failed: $(cat "$t/setup-$n-$job")"
		i=$((i + 1))
	done
}
check "job A set up on both nodes" "job_up 1001 a"
check "job B set up on both nodes" "job_up 1002 b"
# (Its time is bench/jobnet_bench.sh's figure, not a check here.)
echo "setup of job A on n1: $(cat "$t/setup-n1-1001")"
check "bridge has no address and no IPv6 link-local" \
	"[ -z \"\$(nsx n1 ip -o addr show dev svmb000003e9)\" ] && [ \"\$(nsx n1 cat /proc/sys/net/ipv6/conf/svmb000003e9/disable_ipv6)\" = 1 ]"
# (iproute2 6.15, Debian 13, prints nolearning further on the line.)
check "VXLAN: VNI from the job, nolearning, on ul0, port 4789; MTU 8950" \
	"nsx n1 ip -d link show svmx000003e9 | grep 'vxlan id 1001 local $ul.1 dev ul0 srcport 0 0 dstport 4789 ' | grep -q ' nolearning ' && nsx n1 ip link show svmx000003e9 | grep -q 'mtu 8950' && nsx n1 ip link show svmb000003e9 | grep -q 'mtu 8950'"

# --- the job network works
check "guests of job A ping each other across the nodes" \
	"nsx g1a ping -c 2 -W 2 10.77.0.2 >/dev/null"
check "a 8922-byte ping fits (MTU 8950 end to end, no fragments)" \
	"nsx g1a ping -c 1 -W 2 -M do -s 8922 10.77.0.2 >/dev/null"
nsx g2a python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.0.2", 5555)); s.listen(1); s.settimeout(10)
c, _ = s.accept(); c.sendall(c.recv(100)[::-1]); c.close()' &
srv=$!
sleep 0.5
out=$(nsx g1a python3 -c '
import socket
c = socket.create_connection(("10.77.0.2", 5555), timeout=5)
c.sendall(b"olleh"); print(c.recv(100).decode())' 2>&1)
wait "$srv"
check "a TCP connection between job A's guests works" "[ '$out' = hello ]"

# --- isolation. Counters where the frames would arrive: a drop in the
# guest cannot be mistaken for an unreachable route.
probe() { # NS NAME DEVICE-OR-HOOK MATCH
	local hook="type filter hook input priority 0;"
	[ "$3" = input ] || hook="type filter hook ingress device $3 priority 0;"
	local fam=inet; [ "$3" = input ] || fam=netdev
	nsx "$1" nft "add table $fam probe; add chain $fam probe $2 { $hook }; add rule $fam probe $2 $4 counter"
}
count() { nsx "$1" nft list chain "$2" probe "$3" | awk '/counter/ { print $(NF-2) }'; }
probe n1 p_in input "ip saddr 10.77.0.0/16"
probe n2 p_in input "ip saddr 10.77.0.0/16"
probe ul p_in input "ip saddr 10.77.0.0/16"
b1=$(nsx n1 cat /sys/class/net/svmb000003e9/address 2>/dev/null || nsx n1 ip -o link show svmb000003e9 | sed 's/.*ether \([^ ]*\).*/\1/')
for target in "$ul.1" "$ul.2" "$ul.254"; do
	nsx g1a ping -c 1 -W 1 "$target" >/dev/null 2>&1
	# as if the guest knew the bridge's MAC
	nsx g1a ip neigh replace "$target" lladdr "$b1" dev eth0
	nsx g1a ping -c 1 -W 1 "$target" >/dev/null 2>&1
	nsx g1a python3 -c "import socket; socket.create_connection(('$target', 22), timeout=1)" 2>/dev/null
done
check "a guest reaches no node's underlay address and not the host" \
	"[ \$(count n1 inet p_in) = 0 ] && [ \$(count n2 inet p_in) = 0 ] && [ \$(count ul inet p_in) = 0 ]"

macs_b=$(for i in 0 1; do "$drv" doc "$t/n1.conf" 1002 $i 9000 mac "${nodes[@]}"; done | paste -sd,)
probe g2a fromb eth0 "ether saddr { $macs_b }"
mac2a=$("$drv" doc "$t/n2.conf" 1001 1 9000 mac "${nodes[@]}")
nsx g1b ip neigh replace 10.77.0.2 lladdr "$mac2a" dev eth0
nsx g1b ping -c 2 -W 1 10.77.0.2 >/dev/null 2>&1
check "job B's guest reaches job B's (same address, own network)" \
	"nsx g1b ip neigh del 10.77.0.2 dev eth0; nsx g1b ping -c 1 -W 2 10.77.0.2 >/dev/null"
check "no frame of job B reaches job A's guest" "[ \$(count g2a netdev fromb) = 0 ]"

probe g2a spoof eth0 "ether saddr 02:aa:bb:cc:dd:ee"
probe g2a spoofip eth0 "ip saddr 10.77.0.99"
probe g2a spoofarp eth0 "arp saddr ip 10.77.0.99"
mac1a=$(nsx g1a cat /sys/class/net/eth0/address)
nsx g1a ip link set eth0 address 02:aa:bb:cc:dd:ee
nsx g1a ip neigh flush dev eth0
nsx g1a ping -c 2 -W 1 10.77.0.2 >/dev/null 2>&1
nsx g1a ip link set eth0 address "$mac1a"
nsx g1a ip addr add 10.77.0.99/16 dev eth0
nsx g1a ip neigh flush dev eth0
nsx g1a ping -c 2 -W 1 -I 10.77.0.99 10.77.0.2 >/dev/null 2>&1
nsx g1a ip addr del 10.77.0.99/16 dev eth0
# The spoofed pings left 10.77.0.2 unresolved, still probing: its failure
# would drop the next ping's packet.
nsx g1a ip neigh flush dev eth0
check "a spoofed source MAC is dropped" "[ \$(count g2a netdev spoof) = 0 ]"
check "a spoofed source IP (IPv4 and ARP) is dropped" \
	"[ \$(count g2a netdev spoofip) = 0 ] && [ \$(count g2a netdev spoofarp) = 0 ]"
check "the guest with its own MAC and IP still gets through" \
	"nsx g1a ping -c 1 -W 2 10.77.0.2 >/dev/null"
probe g2a inject eth0 "ether saddr 02:aa:bb:cc:dd:01"
nsx ul python3 -c '
import socket
hdr = bytes([8, 0, 0, 0]) + (1001).to_bytes(3, "big") + b"\0"
frame = b"\xff" * 6 + bytes.fromhex("02aabbccdd01") + b"\x08\x06" + b"\0" * 28
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(3): s.sendto(hdr + frame, ("198.18.77.2", 4789))'
sleep 0.3
check "VXLAN into job A's VNI from outside the job's nodes is dropped" \
	"[ \$(count g2a netdev inject) = 0 ]"

# --- frames to the IEEE link-local group addresses (01:80:c2:00:00:0X),
# which a bridge hands to its ingress port's own stack past its hooks, and a
# router advertisement: g1a sends them raw (svm-rawframe below) with a
# spoofed source. Counted in n1's inet prerouting (before any job rule) and
# in job B's guest on n1, which a VXLAN datagram with B's VNI and n2's
# address would reach.
cat >"$t/rawframe.py" <<'PY'
import socket, struct, sys
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def ipv4_udp(src, dst, dport, data):
    udp = struct.pack("!HHHH", 40000, dport, 8 + len(data), 0) + data
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + udp
def ra(src_mac):
    src = bytes.fromhex("fe80000000000000") + bytes.fromhex("0000000000000001")
    dst = socket.inet_pton(socket.AF_INET6, "ff02::1")
    pio = struct.pack("!BBBBIII16s", 3, 4, 64, 0xc0, 86400, 14400, 0,
                      socket.inet_pton(socket.AF_INET6, "2001:db8:77::"))
    body = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, 1800, 0, 0) + pio
    pseudo = src + dst + struct.pack("!I3xB", len(body), 58)
    body = body[:2] + struct.pack("!H", csum(pseudo + body)) + body[4:]
    return struct.pack("!IHBB16s16s", 0x60000000, len(body), 58, 255, src, dst) + body
dev, kind = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((dev, 0))
me = s.getsockname()[4]
for group in ("0e", "00", "03"):
    dst = bytes.fromhex("0180c20000" + group)
    if kind == "udp":  # SRC DST PORT
        pkt, et = ipv4_udp(sys.argv[3], sys.argv[4], int(sys.argv[5]), b"x" * 8), 0x0800
    elif kind == "vxlan":  # SRC DST VNI: a broadcast into that VNI
        inner = b"\xff" * 6 + bytes.fromhex("02aabbccdd02") + b"\x08\x06" + b"\0" * 28
        hdr = bytes([8, 0, 0, 0]) + int(sys.argv[5]).to_bytes(3, "big") + b"\0"
        pkt, et = ipv4_udp(sys.argv[3], sys.argv[4], 4789, hdr + inner), 0x0800
    else:
        pkt, et = ra(me), 0x86dd
    for i in range(3):
        s.send(dst + me + struct.pack("!H", et) + pkt)
PY
nsx n1 nft "add chain inet probe p_pre { type filter hook prerouting priority -400; }; add rule inet probe p_pre ip saddr $ul.254 udp dport 7777 counter"
probe g1b groupvx eth0 "ether saddr 02:aa:bb:cc:dd:02"
nsx n1 python3 -c '
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 7777)); s.settimeout(2)
n = 0
try:
    while True: s.recv(100); n += 1
except OSError: pass
open("'"$t"'/sink", "w").write(str(n))' &
sink=$!
sleep 0.3
g1ip=$("$drv" doc "$t/n1.conf" 1001 0 9000 ip "${nodes[@]}")
nsx g1a python3 "$t/rawframe.py" eth0 udp "$ul.254" "$ul.1" 7777
nsx g1a python3 "$t/rawframe.py" eth0 udp "$g1ip" "$ul.1" 7777
nsx g1a python3 "$t/rawframe.py" eth0 vxlan "$ul.2" "$ul.1" 1002
nsx g1a python3 "$t/rawframe.py" eth0 ra
wait "$sink"
check "group-addressed frames (01:80:c2:00:00:0e, :00, :03) reach nothing of the node's IP stack" \
	"[ \$(nsx n1 nft list chain inet probe p_pre | awk '/counter/ { print \$(NF-2) }') = 0 ] && [ \$(cat '$t/sink') = 0 ]"
check "... nor, as VXLAN with job B's VNI and n2's address, job B's guest" \
	"[ \$(count g1b netdev groupvx) = 0 ]"
check "the guest's port (tap) has no IPv6 address and IPv6 off" \
	"[ -z \"\$(nsx n1 ip -6 addr show dev svmt000003e9)\" ] && [ \"\$(nsx n1 cat /proc/sys/net/ipv6/conf/svmt000003e9/disable_ipv6)\" = 1 ]"
check "the node took no router advertisement from the guest" \
	"[ -z \"\$(nsx n1 ip -6 route show default)\" ] && ! nsx n1 ip -6 addr | grep -q 2001:db8:77"

# --- failures: a missing underlay is named; a half-made network is undone
printf 'StateDir=%s\nJobNetwork=vxlan\nJobNetworkUnderlay=nosuch0\n' "$t/state-bad" >"$t/bad.conf"
nsx n1 "$drv" setup "$t/bad.conf" 7 0 "${nodes[@]}" >"$t/bad.out" 2>&1
check "missing underlay: fails naming the interface" "grep -q 'underlay interface nosuch0' '$t/bad.out'"
# Job 2001 gets job 1001's VNI on a range of 1000: the job is refused
# naming job 1001 (its fault, not the node's), before anything is made.
rc=0
nsx n1 "$drv" setup "$t/n1.conf" 2001 0 "${nodes[@]}" >"$t/clash.out" 2>&1 || rc=$?
check "a VNI held by another running job refuses the job naming that job" \
	"[ $rc = 1 ] && grep -q 'VNI 1001 is held by job 1001 running on this node' '$t/clash.out' && ! nsx n1 ip link show svmb000007d1 >/dev/null 2>&1"
nsx n1 "$drv" teardown "$t/n1.conf" 2001 >/dev/null 2>&1
# A VXLAN device the suite did not make holds VNI 1500: job 1500's cannot be
# made.
nsx n1 ip link add clash0 type vxlan id 1500 dev ul0 local "$ul.1" dstport 4789
rc=0
nsx n1 "$drv" setup "$t/n1.conf" 1500 0 "${nodes[@]}" >"$t/clash.out" 2>&1 || rc=$?
nsx n1 ip link del clash0
check "a VXLAN that cannot be made fails the setup" "[ $rc = 1 ] && grep -q 'creating the bridge and VXLAN device failed' '$t/clash.out'"
check "... and its teardown removes the bridge made before" \
	"nsx n1 '$drv' teardown '$t/n1.conf' 1500 >/dev/null && ! nsx n1 ip link show svmb000005dc >/dev/null 2>&1"

# --- 1023 peers: the network phase of a 1024-node job
big=()
for i in $(seq 0 1023); do big+=("b$i=198.19.$((i / 250)).$((i % 250 + 1))"); done
nsx n1 ip addr add 198.19.3.24/15 dev ul0
nsx n1 "$drv" setup "$t/n1.conf" 3000 1023 "${big[@]}" >"$t/big.out" 2>&1
echo "1024-node job, 1023 peers: $(cat "$t/big.out")"
check "1023 peers: 2046 forwarding entries" \
	"[ \$(nsx n1 bridge fdb show dev svmx00000bb8 | grep -c 'dst 198.19') = 2046 ]"
nsx n1 "$drv" teardown "$t/n1.conf" 3000 >/dev/null

# --- teardown from the journal: nothing left, and again is harmless
for g in g1a g2a g1b g2b; do ip netns del "$ns-$g"; done # the guests' taps go
for n in n1 n2; do
	for job in 1001 1002; do
		nsx "$n" "$drv" teardown "$t/$n.conf" "$job" >"$t/td-$n-$job" 2>&1 || cat "$t/td-$n-$job"
		nsx "$n" "$drv" teardown "$t/$n.conf" "$job" >>"$t/td-$n-$job" 2>&1 || echo "second teardown failed"
	done
done
check "teardown twice: every step succeeds" "! grep -v ' 0 failed' '$t'/td-*"
for n in n1 n2; do
	check "$n: no link of the suite left" "! nsx $n ip -o link | grep ' svm[btx]'"
	check "$n: no nftables table left" "[ -z \"\$(nsx $n nft list tables | grep -v probe)\" ]"
done
[ "$fails" = 0 ]
