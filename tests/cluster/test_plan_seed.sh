#!/bin/bash
# cluster-timeout: 240
# The hand test of the admin guide's section 5 (#25 item 7): a guest
# planned with `slurm-vm plan --xml --seed-dir DIR --user USER` and started
# with `virsh create`, no Slurm, gets the cloud-init seed the prolog would
# attach, so that what a job relies on is there:
#   - the seed: DIR/seed.iso, the user's, 0600, with the agent on it;
#   - the guest reads it (the busybox test guest's files/seed, the part of
#     cloud-init the tests use): the node's host name and the user;
#   - the agent answers through slurm-vm-relay (`slurm-vm-exec
#     --wait-ready`), and a task runs as the user, whom the guest knows by
#     name (`id -un`);
#   - vm.conf's SharedDirs= is mounted at its host path.
# A plan without --user is refused and writes nothing.
# Exit 0 pass, 77 skip, anything else fail.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$repo/build}
svm=$BUILD_DIR/admin/slurm-vm
relay_bin=$BUILD_DIR/agent/slurm-vm-relay
exec_bin=$BUILD_DIR/agent/slurm-vm-exec
agent_bin=$BUILD_DIR/agent/slurm-vm-agent
prefix=${SVM_LIBVIRT_PREFIX:-svmtest-}
name=${prefix}planseed-$$
user=svmtest

skip() {
	echo "SKIP: $*"
	exit 77
}
fail() {
	echo "FAIL: $*"
	exit 1
}

[ "$(id -u)" = 0 ] || skip "needs root (qemu:///system, the seed is the user's)"
for b in "$svm" "$relay_bin" "$exec_bin" "$agent_bin"; do
	[ -x "$b" ] || skip "$b not built"
done
for tool in libvirtd virsh qemu-img isoinfo setpriv; do
	command -v "$tool" >/dev/null ||
		skip "'$tool' not installed: run scripts/install-deps.sh"
done
id "$user" >/dev/null 2>&1 || useradd -M -N -s /bin/sh "$user" ||
	fail "cannot create the user $user"
uid=$(id -u "$user")
gid=$(id -g "$user")

# shellcheck source=tests/cluster/libvirt.sh
. "$here/libvirt.sh"

# Root's, traversable: the relay makes sock/ in it, the user runs a copy
# of slurm-vm-exec from it (the build tree may be closed to the user).
work=$(mktemp -d /run/svm-planseed.XXXXXX)
chmod 755 "$work"
install -m 0755 "$exec_bin" "$work/slurm-vm-exec"
libvirt_up=0
cleanup() {
	local rc=$? pid
	trap - EXIT INT TERM
	if pid=$(cat "$work/relay.pid" 2>/dev/null) && [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
	fi
	if [ "$libvirt_up" = 1 ]; then
		virsh -q -c "$LIBVIRT_URI" destroy "$name" >/dev/null 2>&1 || true
		libvirt_stop "$prefix" || true
	fi
	if [ "$rc" != 0 ] && [ -s "$work/console.log" ]; then
		echo "--- console log (tail) ---"
		tail -n 20 "$work/console.log"
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! mapfile -t built < <("$repo/tests/guest/build.sh" --agent "$agent_bin"); then
	fail "tests/guest/build.sh failed (see its message above)"
fi
[ "${#built[@]}" = 5 ] || fail "tests/guest/build.sh failed (see above)"
kernel=${built[4]} initrd=${built[1]} rootfs=${built[2]}
cmdline=$(cat "${built[3]}")
qemu-img create -q -f qcow2 -b "$rootfs" -F qcow2 "$work/disk.qcow2"
mkdir "$work/share"
echo "from the host" >"$work/share/hello"

cpu=$(cut -d, -f1 /sys/devices/system/cpu/online | cut -d- -f1)
plan=(--cpus "$cpu" --mem 1G --set RequireLocality=no --set DomainType=qemu
	--set CpuMode=maximum --set "HelperDir=$BUILD_DIR/agent"
	--set "SharedDirs=$work/share" --name "$name"
	--image "$rootfs" --overlay "$work/disk.qcow2" --kernel "$kernel"
	--initrd "$initrd" --cmdline "$cmdline"
	--console-log "$work/console.log" --channel "$work/agent.sock")

if "$svm" plan --xml "${plan[@]}" --seed-dir "$work/seed" \
	>"$work/nouser.xml" 2>"$work/nouser.err"; then
	fail "--seed-dir without --user was planned"
fi
grep -q -- "--user" "$work/nouser.err" ||
	fail "--seed-dir without --user: no reason: $(cat "$work/nouser.err")"
[ ! -e "$work/seed" ] || fail "a refused --seed-dir left $work/seed"

"$svm" plan --xml "${plan[@]}" --seed-dir "$work/seed" --user "$user" \
	>"$work/domain.xml" 2>"$work/plan.err" ||
	fail "slurm-vm plan --seed-dir: $(cat "$work/plan.err")"
grep -q "<source file=\"$work/seed/seed.iso\"/>" "$work/domain.xml" ||
	fail "the XML does not attach $work/seed/seed.iso"
[ "$(stat -c %U:%a "$work/seed/seed.iso")" = "$user:600" ] ||
	fail "seed.iso is $(stat -c %U:%a "$work/seed/seed.iso"), not $user's 0600"
isoinfo -R -f -i "$work/seed/seed.iso" | grep -qx /slurm-vm-agent ||
	fail "no agent on the seed: $(isoinfo -R -f -i "$work/seed/seed.iso")"
echo "ok: the seed is $user's with the agent on it"

libvirt_up=1
libvirt_start "$prefix" || fail "libvirt_start failed (see above)"
virsh -q -c "$LIBVIRT_URI" create "$work/domain.xml" >"$work/create.out" 2>&1 ||
	fail "virsh create failed: $(cat "$work/create.out")"

"$relay_bin" --channel "$work/agent.sock" --socket "$work/sock/relay.sock" \
	--uid "$uid" --gid "$gid" --daemon --pidfile "$work/relay.pid" \
	--log-file "$work/relay.log" >"$work/relay.out" 2>&1 ||
	fail "slurm-vm-relay did not start: $(cat "$work/relay.out")"
as_user() {
	(cd / && setpriv --reuid="$uid" --regid="$gid" --init-groups \
		"$work/slurm-vm-exec" --socket "$work/sock/relay.sock" "$@" </dev/null)
}
as_user --timeout 120 --wait-ready >/dev/null ||
	fail "the agent was not ready through the relay within 120 s"
echo "ok: agent ready"

host=$(hostname -s)
grep -q "seed: hostname $host, user $user uid $uid" "$work/console.log" ||
	fail "the guest did not read the seed's host name and user: $(grep seed: "$work/console.log")"
got=$(as_user --cwd /tmp -- id -un) || fail "slurm-vm-exec -- id -un failed"
[ "$got" = "$user" ] || fail "the task runs as '$got' in the guest, not $user"
echo "ok: the guest is $host and knows $user"

got=$(as_user --cwd /tmp -- cat "$work/share/hello") ||
	fail "the share $work/share is not in the guest: $(grep 'seed: share' "$work/console.log")"
[ "$got" = "from the host" ] || fail "the share's file reads '$got'"
echo "ok: SharedDirs $work/share mounted"
echo "PASS: plan --seed-dir boots a guest with its user, agent and share"
