#!/bin/bash
# Boots the test guest (tests/guest/build.sh) under a real libvirtd with TCG
# and checks that it prints SLURM-VM-GUEST-READY on its serial console within
# $SVM_GUEST_READY_TIMEOUT seconds (60), then that `virsh shutdown` (ACPI
# power button) powers it off within 30 s. Prints the libvirt time (virsh
# create until the qemu process exists) and the time to ready.
#
#   tests/cluster/test_guest_boot.sh        exit 0 pass, 77 skip, else fail
#
# SVM_GUEST_AGENT=PATH builds the guest with that static agent binary
# (default: $BUILD_DIR's, as the other cluster tests do, so the cached image
# serves them all rather than being rebuilt without an agent and back).
# SVM_KEEP_STATE=1 keeps the work directory (console log, XML, libvirt logs).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
guest_dir=$(cd "$here/../guest" && pwd)
prefix=${SVM_LIBVIRT_PREFIX:-svmtest-}
name=${prefix}boot-$$
timeout=${SVM_GUEST_READY_TIMEOUT:-60}

skip() {
	echo "SKIP: $*"
	exit 77
}
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
now() { date +%s.%N; }
elapsed() { # since
	awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'
}

[ "$(id -u)" = 0 ] || skip "needs root (qemu:///system, mke2fs -d as root)"
for tool in libvirtd virsh virt-xml-validate qemu-system-x86_64 qemu-img; do
	command -v "$tool" >/dev/null ||
		skip "'$tool' not installed: run scripts/install-deps.sh"
done

# shellcheck source-path=SCRIPTDIR source=libvirt.sh
. "$here/libvirt.sh"

work=$(mktemp -d /run/svm-boot.XXXXXX)
cleanup() {
	local rc=$?
	virsh -q -c "$LIBVIRT_URI" destroy "$name" >/dev/null 2>&1 || true
	libvirt_stop "$prefix" || true
	if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -s "$work/console.log" ]; then
		echo "--- console log (tail) ---" >&2
		tail -n 25 "$work/console.log" >&2
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

agent_args=()
if [ -z "${SVM_GUEST_AGENT:-}" ] && [ -x "${BUILD_DIR:-}/agent/slurm-vm-agent" ]; then
	SVM_GUEST_AGENT=$BUILD_DIR/agent/slurm-vm-agent
fi
if [ -n "${SVM_GUEST_AGENT:-}" ]; then
	agent_args=(--agent "$SVM_GUEST_AGENT")
fi
if ! mapfile -t built < <("$guest_dir/build.sh" "${agent_args[@]}"); then
	fail "tests/guest/build.sh failed (see its message above)"
fi
kernel=${built[4]} # vmlinux: PVH boot, faster than vmlinuz under TCG
initrd=${built[1]}
rootfs=${built[2]}
cmdline="$(cat "${built[3]}") svm.hostname=$name"

# A copy-on-write overlay: the built image stays pristine and shareable.
disk=$work/disk.qcow2
qemu-img create -q -f qcow2 -b "$rootfs" -F qcow2 "$disk" ||
	fail "qemu-img create of the overlay $disk failed"

xml=$work/domain.xml
for v in "$kernel" "$initrd" "$disk" "$work" "$cmdline"; do
	case "$v" in
	*[\&\<\>\'\"\|]*) fail "'$v' contains characters unsafe in the XML" ;;
	esac
done
sed -e "s|@NAME@|$name|" -e "s|@MEMORY_MIB@|256|" \
	-e "s|@KERNEL@|$kernel|" -e "s|@INITRD@|$initrd|" \
	-e "s|@CMDLINE@|$cmdline|" -e "s|@DISK@|$disk|" \
	-e "s|@CONSOLE_LOG@|$work/console.log|" \
	-e "s|@AGENT_SOCKET@|$work/agent.sock|" \
	"$guest_dir/domain.xml.in" >"$xml"
if grep -q '@[A-Z_]*@' "$xml"; then
	fail "unfilled field in $xml: $(grep -o '@[A-Z_]*@' "$xml" | head -n 1)"
fi
virt-xml-validate "$xml" domain >/dev/null 2>&1 ||
	fail "$xml does not validate: $(virt-xml-validate "$xml" domain 2>&1 | tail -n 3)"

libvirt_start "$prefix" || fail "libvirt_start failed (see above)"

# libvirt time: virsh create until the qemu process exists (libvirt writes
# the pid file from the forked child just before it execs qemu).
pidfile=/run/libvirt/qemu/$name.pid
t_create=$(now)
virsh -q -c "$LIBVIRT_URI" create "$xml" >"$work/create.out" 2>&1 &
create_pid=$!
libvirt_time=
while :; do
	if [ -s "$pidfile" ] && qpid=$(_libvirt_pid "$pidfile") &&
		[ "$(readlink "/proc/$qpid/exe" 2>/dev/null)" != "" ] &&
		tr '\0' ' ' <"/proc/$qpid/cmdline" | grep -q qemu-system; then
		libvirt_time=$(elapsed "$t_create")
		t_qemu=$(now)
		break
	fi
	if ! kill -0 "$create_pid" 2>/dev/null; then
		wait "$create_pid" ||
			fail "virsh create failed: $(cat "$work/create.out")"
		# create returned before we saw the process: measure now.
		libvirt_time=$(elapsed "$t_create")
		t_qemu=$(now)
		break
	fi
	awk -v t="$(elapsed "$t_create")" 'BEGIN { exit !(t > 120) }' &&
		fail "no qemu process 120 s after virsh create"
	sleep 0.02
done
wait "$create_pid" || fail "virsh create failed: $(cat "$work/create.out")"
create_time=$(elapsed "$t_create")

ready=
while :; do
	if grep -q 'SLURM-VM-GUEST-READY' "$work/console.log" 2>/dev/null; then
		ready=$(elapsed "$t_create")
		ready_qemu=$(elapsed "$t_qemu")
		break
	fi
	# Fail only on a definite answer: virsh may time out on a busy host.
	state=$(virsh -q -c "$LIBVIRT_URI" domstate "$name" 2>&1 || true)
	case "$state" in
	*"shut off"* | *crashed* | *"failed to get domain"* | *"Domain not found"*)
		fail "guest stopped before it was ready (domstate: $state)"
		;;
	esac
	awk -v t="$(elapsed "$t_create")" -v m="$timeout" \
		'BEGIN { exit !(t > m) }' && break
	sleep 0.2
done
[ -n "$ready" ] ||
	fail "no SLURM-VM-GUEST-READY on the console within ${timeout}s of virsh create"
[ -S "$work/agent.sock" ] || fail "agent channel socket $work/agent.sock missing"

# Clean shutdown through the ACPI power button (busybox acpid -> poweroff).
# A press before the guest's acpid listens is lost (an edge event), so it is
# pressed again every 5 s, as a person at the console would.
t_shutdown=$(now)
virsh -q -c "$LIBVIRT_URI" shutdown "$name" >/dev/null ||
	fail "virsh shutdown $name failed"
shutdown_time=
presses=1
while :; do
	if awk -v t="$(elapsed "$t_shutdown")" -v n="$presses" 'BEGIN { exit !(t > 5 * n) }'; then
		virsh -q -c "$LIBVIRT_URI" shutdown "$name" >/dev/null 2>&1 || true
		presses=$((presses + 1))
	fi
	if ! virsh -q -c "$LIBVIRT_URI" domstate "$name" 2>/dev/null |
		grep -q running; then
		shutdown_time=$(elapsed "$t_shutdown")
		break
	fi
	awk -v t="$(elapsed "$t_shutdown")" 'BEGIN { exit !(t > 30) }' && break
	sleep 0.2
done
[ -n "$shutdown_time" ] ||
	fail "guest still running 30 s after virsh shutdown (ACPI power button, $presses presses)"

echo "libvirt time (virsh create -> qemu process): ${libvirt_time}s"
echo "virsh create returned after: ${create_time}s"
echo "boot to SLURM-VM-GUEST-READY: ${ready}s after virsh create" \
	"(${ready_qemu}s after qemu started)"
echo "virsh shutdown (ACPI) until powered off: ${shutdown_time}s"
echo "PASS: $name booted"
