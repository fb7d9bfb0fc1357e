#!/bin/bash
# The guest channel's figures, all from one run with one guest: round-trip
# latency and stream throughput through slurm-vm-relay + the virtio-serial
# channel + slurm-vm-agent, and the time to run a command against the peer
# every libvirt user has, qemu-guest-agent's guest-exec over the same
# transport (a virtio-serial port of the same guest, reached with
# `virsh qemu-agent-command`), as a ratio.
#
#   bench/channel_bench.sh [BUILD-DIR]      (root; BUILD-DIR default build/)
#
# Boots the test guest (tests/guest/build.sh, which has qemu-ga too) under a
# harness-started libvirtd with both ports, starts slurm-vm-relay for the
# user svmtest (created when absent) and measures, as that user:
#   exec latency      N x `slurm-vm-exec -- true` (process start to exit)
#   stream round trip M x 1 byte through `slurm-vm-exec -- cat`, one session
#                     (build/bench/channel_echo)
#   throughput        MIB MiB host -> guest `cat` -> host, and one way
#                     each: guest `dd` -> host, host -> guest `dd`, in MiB/s
# and, as root (qemu:///system), the qga peer:
#   N x guest-exec of /bin/true, then guest-exec-status until exited: what
#   a qga user must do to run a command; and N x guest-ping (virsh's floor).
# Prints one table with medians and p90s and the ratio slurm-vm exec latency
# / qga exec latency. Under TCG (no KVM here) these are regression figures,
# not production ones; the header says so.
#
# SVM_BENCH_N (50), SVM_BENCH_ECHO (200), SVM_BENCH_MIB (64) set the sizes
# (SVM_BENCH_SHORT=1, bench/run.sh --short: 5, 20, 2);
# SVM_KEEP_STATE=1 keeps the work directory (console, relay and qga logs).
# Takes 2-4 minutes (the first guest build one more). Everything it started
# is stopped on exit, also on failure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build=$(cd "${1:-${BUILD_DIR:-$top/build}}" && pwd)
if [ "${SVM_BENCH_SHORT:-0}" = 1 ]; then
	n=${SVM_BENCH_N:-5} echo_n=${SVM_BENCH_ECHO:-20} mib=${SVM_BENCH_MIB:-2}
else
	n=${SVM_BENCH_N:-50} echo_n=${SVM_BENCH_ECHO:-200} mib=${SVM_BENCH_MIB:-64}
fi
user=svmtest
prefix=${SVM_LIBVIRT_PREFIX:-svmtest-}
name=${prefix}bench-$$

relay_bin=$build/agent/slurm-vm-relay
exec_bin=$build/agent/slurm-vm-exec
agent_bin=$build/agent/slurm-vm-agent
echo_bin=$build/bench/channel_echo

die() {
	echo "channel_bench: $*" >&2
	exit 1
}
log() {
	echo "channel_bench: $*" >&2
}

[ "$(id -u)" = 0 ] || die "run as root (qemu:///system, relay, test user)"
for b in "$relay_bin" "$exec_bin" "$agent_bin" "$echo_bin"; do
	[ -x "$b" ] || die "$b not built: cd $build && make -j2"
done
for tool in libvirtd virsh qemu-system-x86_64 qemu-img setpriv; do
	command -v "$tool" >/dev/null ||
		die "'$tool' not installed: run scripts/install-deps.sh"
done
for v in "$n" "$echo_n" "$mib"; do
	case "$v" in '' | *[!0-9]* | 0) die "sizes must be positive integers" ;; esac
done
id "$user" >/dev/null 2>&1 || useradd -M -N -s /bin/sh "$user" ||
	die "cannot create the user $user"
uid=$(id -u "$user")
gid=$(id -g "$user")

# shellcheck source-path=SCRIPTDIR source=../tests/cluster/libvirt.sh
. "$top/tests/cluster/libvirt.sh"

# Root-owned and not group/world-writable, traversable by the user: the
# relay makes sock/ root's 0711 and the socket the user's.
work=$(mktemp -d /run/svm-bench.XXXXXX)
chmod 755 "$work"
# The user runs copies: the build tree may be where the user cannot enter
# (a checkout in root's 0700 home or a private CI directory), and there
# slurm-vm-exec as the user is "Permission denied".
install -m 0755 "$exec_bin" "$work/slurm-vm-exec"
install -m 0755 "$echo_bin" "$work/${echo_bin##*/}"
exec_bin=$work/slurm-vm-exec
echo_bin=$work/${echo_bin##*/}
sock=$work/sock/relay.sock
libvirt_up=0
measuring=
cleanup() {
	local rc=$? pid
	trap - EXIT INT TERM
	# timeout(1) leads its own process group and passes the signal on to it.
	if [ -n "$measuring" ]; then
		kill "$measuring" 2>/dev/null || true
		wait "$measuring" 2>/dev/null || true
	fi
	if pid=$(cat "$work/relay.pid" 2>/dev/null) && [ -n "$pid" ] &&
		kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
	fi
	if [ "$libvirt_up" = 1 ]; then
		virsh -q -c "$LIBVIRT_URI" destroy "$name" >/dev/null 2>&1 || true
		libvirt_stop "$prefix" || true
	fi
	if [ "$rc" != 0 ] && [ -s "$work/console.log" ]; then
		echo "--- console log (tail) ---" >&2
		tail -n 20 "$work/console.log" >&2
		[ -s "$work/relay.log" ] && tail -n 10 "$work/relay.log" >&2
	fi
	if [ -n "${SVM_KEEP_STATE:-}" ]; then
		echo "kept: $work" >&2
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the guest, with both ports -------------------------------------------
if ! mapfile -t built < <("$top/tests/guest/build.sh" --agent "$agent_bin"); then
	die "tests/guest/build.sh failed (see its message above)"
fi
[ "${#built[@]}" = 5 ] || die "tests/guest/build.sh failed (see above)"
kernel=${built[4]} initrd=${built[1]} rootfs=${built[2]}
cmdline="$(cat "${built[3]}") svm.hostname=$name"
disk=$work/disk.qcow2
qemu-img create -q -f qcow2 -b "$rootfs" -F qcow2 "$disk"
for v in "$kernel" "$initrd" "$disk" "$work" "$cmdline"; do
	case "$v" in *[\&\<\>\'\"\|]*) die "'$v' has characters unsafe in XML" ;; esac
done
xml=$work/domain.xml
# qemu-ga's channel has no source path: libvirt makes and owns the socket.
sed -e "s|@NAME@|$name|" -e "s|@MEMORY_MIB@|256|" \
	-e "s|@KERNEL@|$kernel|" -e "s|@INITRD@|$initrd|" \
	-e "s|@CMDLINE@|$cmdline|" -e "s|@DISK@|$disk|" \
	-e "s|@CONSOLE_LOG@|$work/console.log|" \
	-e "s|@AGENT_SOCKET@|$work/agent.sock|" \
	-e "/<memballoon/i\\
    <channel type='unix'>\\
      <target type='virtio' name='org.qemu.guest_agent.0'/>\\
    </channel>" \
	"$top/tests/guest/domain.xml.in" >"$xml"
grep -q '@[A-Z_]*@' "$xml" && die "unfilled field in $xml"
grep -q org.qemu.guest_agent.0 "$xml" || die "no qemu-ga channel in $xml"

libvirt_up=1
libvirt_start "$prefix" || die "libvirt_start failed (see above)"
t_boot=$EPOCHREALTIME
virsh -q -c "$LIBVIRT_URI" create "$xml" >"$work/create.out" 2>&1 ||
	die "virsh create failed: $(cat "$work/create.out")"
for ((i = 0; i < 600; i++)); do
	grep -q SLURM-VM-GUEST-READY "$work/console.log" 2>/dev/null && break
	sleep 0.2
done
grep -q SLURM-VM-GUEST-READY "$work/console.log" ||
	die "the guest did not print SLURM-VM-GUEST-READY within 120 s"
boot_s=$(awk -v a="$t_boot" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

"$relay_bin" --channel "$work/agent.sock" --socket "$sock" --uid "$uid" \
	--gid "$gid" --daemon --pidfile "$work/relay.pid" \
	--log-file "$work/relay.log" >"$work/relay.out" 2>&1 ||
	die "slurm-vm-relay did not start: $(cat "$work/relay.out")"

# as_user CMD...: CMD as the test user, from / (its home may not exist).
as_user() {
	(cd / && setpriv --reuid="$uid" --regid="$gid" --init-groups "$@")
}
as_user "$exec_bin" --socket "$sock" --timeout 120 --wait-ready >/dev/null ||
	die "the guest agent was not ready through the relay within 120 s"
guest_kernel=$(as_user "$exec_bin" --socket "$sock" --cwd /tmp -- uname -r </dev/null) ||
	die "slurm-vm-exec -- uname -r failed"

qga() { # JSON
	virsh -q -c "$LIBVIRT_URI" qemu-agent-command --timeout 30 "$name" "$1"
}
for ((i = 0; i < 300; i++)); do
	qga '{"execute":"guest-ping"}' >/dev/null 2>&1 && break
	sleep 0.2
done
qga '{"execute":"guest-ping"}' >/dev/null ||
	die "qemu-ga does not answer guest-ping within 60 s"
log "guest up ${boot_s}s after virsh create; measuring (N=$n, M=$echo_n, ${mib} MiB)"

# ---- measurements ---------------------------------------------------------
# Samples in microseconds, one a line; ${EPOCHREALTIME/./} is the time in us
# without forking.

# measure CMD...: CMD as the test user, at most 10 minutes, in the background
# so that a signal reaches the cleanup at once (a foreground child would
# delay the trap until it ends).
measure() {
	local rc=0
	timeout 600 setpriv --reuid="$uid" --regid="$gid" --init-groups "$@" &
	measuring=$!
	wait "$measuring" || rc=$?
	measuring=
	return "$rc"
}

# slurm-vm exec latency (2 warm-ups first: page cache, relay, agent).
# shellcheck disable=SC2016 # expanded by the inner bash
measure bash -c '
	cd / || exit 1
	for ((i = -2; i < $1; i++)); do
		t0=${EPOCHREALTIME/./}
		"$2" --socket "$3" --cwd /tmp -- true </dev/null || exit 1
		t1=${EPOCHREALTIME/./}
		[ "$i" -ge 0 ] && echo $((t1 - t0))
	done' bench "$n" "$exec_bin" "$sock" >"$work/exec.us" ||
	die "slurm-vm-exec -- true failed"

# Streaming round trip: 1 byte through cat in the guest, one session.
measure "$echo_bin" "$echo_n" -- "$exec_bin" --socket "$sock" --cwd /tmp -- cat \
	>"$work/echo.us" || die "the echo round trips through cat failed"

# Throughput, checking the byte count that arrived. The guest side of the
# one-way runs is busybox dd with 64 KiB blocks: busybox `head -c` from
# /dev/zero manages only ~4 MiB/s under TCG by itself (measured: 16 MiB in
# 4.2 s against 0.9 s with dd), which would be a figure of head, not of the
# channel.
bytes=$((mib * 1048576))
blocks=$((mib * 16))
# shellcheck disable=SC2016
measure bash -c '
	cd / || exit 1
	set -o pipefail
	bytes=$1 blocks=$2
	shift 2
	t0=${EPOCHREALTIME/./}
	got=$(head -c "$bytes" /dev/zero | "$@" -- cat | wc -c)
	t1=${EPOCHREALTIME/./}
	[ "$got" = "$bytes" ] || { echo "cat: $got of $bytes bytes" >&2; exit 1; }
	echo $((t1 - t0))
	t0=${EPOCHREALTIME/./}
	got=$("$@" -- dd if=/dev/zero bs=65536 count="$blocks" </dev/null 2>/dev/null | wc -c)
	t1=${EPOCHREALTIME/./}
	[ "$got" = "$bytes" ] || { echo "guest->host: $got of $bytes bytes" >&2; exit 1; }
	echo $((t1 - t0))
	t0=${EPOCHREALTIME/./}
	got=$(head -c "$bytes" /dev/zero | "$@" -- \
		sh -c "dd of=/dev/null bs=65536 iflag=fullblock 2>&1 >/dev/null" |
		sed -n "s/ records in\$//p")
	t1=${EPOCHREALTIME/./}
	[ "$got" = "$blocks+0" ] || { echo "host->guest: $got of $blocks blocks" >&2; exit 1; }
	echo $((t1 - t0))' bench "$bytes" "$blocks" \
	"$exec_bin" --socket "$sock" --cwd /tmp >"$work/tput.us" ||
	die "the throughput runs failed"
{ read -r cat_us && read -r out_us && read -r in_us; } <"$work/tput.us"

# qemu-guest-agent: guest-exec, then guest-exec-status until exited (no
# sleep between polls: the fastest a qga user can get the exit status).
: >"$work/qga.us"
: >"$work/qga.polls"
exec_json='{"execute":"guest-exec","arguments":{"path":"/bin/true","capture-output":true}}'
for ((i = -2; i < n; i++)); do
	t0=${EPOCHREALTIME/./}
	out=$(qga "$exec_json") || die "guest-exec failed: $out"
	pid=$(printf '%s' "$out" | sed -n 's/.*"pid": *\([0-9][0-9]*\).*/\1/p')
	[ -n "$pid" ] || die "guest-exec answered without a pid: $out"
	polls=0
	while :; do
		polls=$((polls + 1))
		st=$(qga "{\"execute\":\"guest-exec-status\",\"arguments\":{\"pid\":$pid}}") ||
			die "guest-exec-status failed: $st"
		case "$st" in *'"exited": *true'* | *'"exited":true'*) break ;; esac
		[ "$polls" -lt 1000 ] || die "guest-exec pid $pid not exited after 1000 polls"
	done
	t1=${EPOCHREALTIME/./}
	case "$st" in *'"exitcode":0'* | *'"exitcode": 0'*) ;;
	*) die "/bin/true through qga did not exit 0: $st" ;; esac
	[ "$i" -ge 0 ] || continue
	echo $((t1 - t0)) >>"$work/qga.us"
	echo "$polls" >>"$work/qga.polls"
done
: >"$work/ping.us"
for ((i = 0; i < n; i++)); do
	t0=${EPOCHREALTIME/./}
	qga '{"execute":"guest-ping"}' >/dev/null || die "guest-ping failed"
	t1=${EPOCHREALTIME/./}
	echo $((t1 - t0)) >>"$work/ping.us"
done

# ---- the table ------------------------------------------------------------
# stat FILE: "median p90" in ms (nearest rank).
stat_ms() {
	sort -n "$1" | awk '{ v[NR] = $1 }
		END {
			if (NR == 0) exit 1
			m = int((NR + 1) / 2); p = int(0.9 * NR + 0.999999)
			printf "%.2f %.2f\n", v[m] / 1000, v[p] / 1000
		}'
}
read -r exec_med exec_p90 < <(stat_ms "$work/exec.us")
read -r echo_med echo_p90 < <(stat_ms "$work/echo.us")
read -r qga_med qga_p90 < <(stat_ms "$work/qga.us")
read -r ping_med ping_p90 < <(stat_ms "$work/ping.us")
polls=$(awk '{ s += $1 } END { printf "%.1f", s / NR }' "$work/qga.polls")
mibs() { awk -v b="$bytes" -v us="$1" 'BEGIN { printf "%.1f", b / 1048576 / (us / 1e6) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)

echo "# slurm-vm guest channel bench, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# TCG (qemu type='qemu', no KVM): REGRESSION figures for this machine," \
	"not production ones"
echo "# host: $(uname -r), $cpu, $(nproc) cores;" \
	"guest: $guest_kernel, 1 vCPU, 256 MiB, q35, booted in ${boot_s}s"
echo "# slurm-vm: slurm-vm-exec -> relay -> virtio-serial -> agent, as uid $uid;" \
	"qga: virsh qemu-agent-command -> libvirtd -> virtio-serial -> qemu-ga"
printf '%-58s %s\n' "figure" "value"
printf '%-58s %s\n' "slurm-vm exec latency, \`true\` (N=$n)" \
	"median $exec_med ms, p90 $exec_p90 ms"
printf '%-58s %s\n' "slurm-vm stream round trip, 1 byte via \`cat\` (M=$echo_n)" \
	"median $echo_med ms, p90 $echo_p90 ms"
printf '%-58s %s\n' "slurm-vm throughput host->guest cat->host ($mib MiB)" \
	"$(mibs "$cat_us") MiB/s"
printf '%-58s %s\n' "slurm-vm throughput one-way guest dd -> host ($mib MiB)" \
	"$(mibs "$out_us") MiB/s"
printf '%-58s %s\n' "slurm-vm throughput one-way host -> guest dd ($mib MiB)" \
	"$(mibs "$in_us") MiB/s"
printf '%-58s %s\n' "qga exec latency, guest-exec + status polls (N=$n)" \
	"median $qga_med ms, p90 $qga_p90 ms ($polls status polls/exec)"
printf '%-58s %s\n' "qga guest-ping via virsh (N=$n)" \
	"median $ping_med ms, p90 $ping_p90 ms"
printf '%-58s %s\n' "ratio exec latency slurm-vm / qga (medians)" \
	"$(ratio "$exec_med" "$qga_med")"
printf '%-58s %s\n' "ratio exec latency slurm-vm / qga (p90s)" \
	"$(ratio "$exec_p90" "$qga_p90")"

# Machine-readable lines for bench/run.sh:
# BENCH|name|value|unit|peer (same run)|ratio|note
tcg="TCG guest (no KVM): regression figure"
echo "BENCH|channel: task exec latency, median|$exec_med|ms|qemu-guest-agent guest-exec: $qga_med ms|$(ratio "$exec_med" "$qga_med")|$tcg"
echo "BENCH|channel: task exec latency, p90|$exec_p90|ms|qemu-guest-agent guest-exec: $qga_p90 ms|$(ratio "$exec_p90" "$qga_p90")|$tcg"
echo "BENCH|channel: qemu-guest-agent guest-ping via virsh, median|$ping_med|ms|-|-|$tcg; the floor of any qga call"
echo "BENCH|channel: 1-byte round trip through cat, median|$echo_med|ms|-|-|$tcg"
echo "BENCH|channel: throughput host -> guest cat -> host|$(mibs "$cat_us")|MiB/s|-|-|$tcg; $mib MiB"
echo "BENCH|channel: throughput guest -> host|$(mibs "$out_us")|MiB/s|-|-|$tcg; $mib MiB"
echo "BENCH|channel: throughput host -> guest|$(mibs "$in_us")|MiB/s|-|-|$tcg; $mib MiB"
