#!/bin/bash
# check-config's SharedDirs (shares.c): SharedDirTransport=, the transport
# in effect; virtiofs refused with the reason (no virtiofsd, qemu's C
# one), taken by the Rust one.
. "$(dirname "$0")/test-setup.sh"

# SharedDirTransport=: the transport in effect, and why; virtiofs refused
# with the reason where VirtiofsdPath= is missing or qemu's C virtiofsd
# (root only: slurm-vm runs virtiofsd as the job user), the real one where
# qemu 7.x installed it; a stand-in prints what the Rust one does.
# The share: a directory of root's whose parents are root's, as a real
# share is (this test also runs as nobody, in a package build).
share=/usr/share
cp "$cc/vm.conf" "$cc/vm.conf.base"
with_shares() { # vm.conf lines after the base and SharedDirs=$share
	{ cat "$cc/vm.conf.base"; echo "SharedDirs=$share"; printf '%s\n' "$@"; } >"$cc/vm.conf"
	check
}
c_virtiofsd=/usr/lib/qemu/virtiofsd
# Not root (a package build): qemu's C virtiofsd fails (setgroups) before
# it prints its version, so the stand-in says it; likewise where that path
# is Debian 13's link to the Rust one.
if [ ! -x "$c_virtiofsd" ] || [ -L "$c_virtiofsd" ] || [ "$(id -u)" != 0 ]; then
	c_virtiofsd=$cc/c-virtiofsd
	printf '#!/bin/sh\necho "virtiofsd version 7.2.22"\n' >"$c_virtiofsd"
	chmod +x "$c_virtiofsd"
fi
printf '#!/bin/sh\necho "virtiofsd 1.13.2"\n' >"$cc/rust-virtiofsd"
chmod +x "$cc/rust-virtiofsd"
# The default, auto: 9p without a Rust virtiofsd, virtiofs with one.
with_shares "VirtiofsdPath=$cc/none"
grep -qF "ok:      SharedDirs: served over 9p (SharedDirTransport=auto, VirtiofsdPath=$cc/none" "$out" ||
	fail "the default transport (auto, no virtiofsd: 9p) not reported"
grep -qF "SharedDirs: $share is shared with the guests over 9p" "$out" ||
	fail "the share's transport not named"
with_shares "VirtiofsdPath=$cc/rust-virtiofsd"
grep -qF "ok:      SharedDirs: served over virtiofs (SharedDirTransport=auto, VirtiofsdPath=$cc/rust-virtiofsd is the Rust virtiofsd)" "$out" ||
	fail "the default transport (auto, the Rust virtiofsd: virtiofs) not reported"
with_shares SharedDirTransport=9p "VirtiofsdPath=$cc/rust-virtiofsd"
grep -qF "ok:      SharedDirs: served over 9p (SharedDirTransport=9p)" "$out" ||
	fail "SharedDirTransport=9p not reported"
with_shares SharedDirTransport=virtiofs "VirtiofsdPath=$c_virtiofsd"
grep -qF "problem: SharedDirs: SharedDirTransport=virtiofs, but VirtiofsdPath=$c_virtiofsd is qemu's C virtiofsd, which must run as root (slurm-vm runs virtiofsd as the job user): the prolog drains the node" "$out" ||
	fail "virtiofs by qemu's C virtiofsd not refused"
fix_for "is qemu's C virtiofsd" | grep -qF "install the Rust virtiofsd" ||
	fail "the fix for the C virtiofsd is: $(fix_for "is qemu's C virtiofsd")"
with_shares SharedDirTransport=virtiofs "VirtiofsdPath=$cc/none"
grep -qF "problem: SharedDirs: SharedDirTransport=virtiofs, but VirtiofsdPath=$cc/none is missing or not an executable file" "$out" ||
	fail "virtiofs without virtiofsd not refused"
with_shares SharedDirTransport=virtiofs "VirtiofsdPath=$cc/rust-virtiofsd"
grep -qF "ok:      SharedDirs: served over virtiofs (SharedDirTransport=virtiofs, VirtiofsdPath=$cc/rust-virtiofsd is the Rust virtiofsd)" "$out" ||
	fail "virtiofs by the Rust virtiofsd not taken"
grep -qF "SharedDirs: $share is shared with the guests over virtiofs" "$out" ||
	fail "the share's transport (virtiofs) not named"
with_shares SharedDirTransport=auto "VirtiofsdPath=$c_virtiofsd"
grep -qF "ok:      SharedDirs: served over 9p (SharedDirTransport=auto, VirtiofsdPath=$c_virtiofsd is qemu's C virtiofsd" "$out" ||
	fail "auto with qemu's C virtiofsd is not 9p, or not said why"
grep -q "problem: SharedDirs: SharedDirTransport" "$out" && fail "auto reported as a problem"
cp "$cc/vm.conf.base" "$cc/vm.conf"
exit 0
