#!/bin/bash
# slurm-vm's postinst, postrm and trigger with real dpkg against a package
# that treats /var/lib/libvirt/qemu as Debian 12's libvirt-daemon-system
# does (ships it root's 0755; its postinst makes it libvirt-qemu's 0750 at
# every configure unless a dpkg statoverride names it: add_statoverrides in
# 9.0.0-4's postinst), in a scratch dpkg root (dpkg --root, maintainer
# scripts chrootless with DPKG_ROOT) and a private mount namespace whose
# /etc/passwd and /etc/group have libvirt-qemu:
#  - slurm-vm first, libvirt after: the trigger adds the statoverride and
#    the directory is 0751 (job users can enter it, nobody can list it);
#  - libvirt's upgrade (dpkg's unpack, then its postinst) keeps 0751;
#  - libvirt first, slurm-vm after (the guide's order): postinst does it;
#  - purging slurm-vm removes the statoverride it added, and libvirt's
#    next configure makes the directory 0750 again;
#  - an admin's own statoverride is neither replaced nor purged.
#
#   tests/statoverride.sh [SLURM_VM_DEB]   (root; default: a stand-in
#   package with debian/slurm-vm.{postinst,postrm,triggers})
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
deb=${1:+$(cd "$(dirname "$1")" && pwd)/$(basename "$1")}

if [ -z "${SVM_STATOVERRIDE_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
	exec env SVM_STATOVERRIDE_NS=1 unshare -m --propagation private \
		"$0" ${deb:+"$deb"}
fi

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
chmod 0755 "$t" # nobody must reach the scratch root's directories
fails=0
ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# libvirt-qemu, as libvirt-daemon-system's postinst would have added it
cp /etc/passwd "$t/passwd"
cp /etc/group "$t/group"
grep -q '^libvirt-qemu:' "$t/group" || echo 'libvirt-qemu:x:64055:' >>"$t/group"
grep -q '^libvirt-qemu:' "$t/passwd" ||
	echo 'libvirt-qemu:x:64055:64055:Libvirt Qemu:/var/lib/libvirt:/usr/sbin/nologin' >>"$t/passwd"
mount --bind "$t/passwd" /etc/passwd
mount --bind "$t/group" /etc/group

root=$t/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" \
	"$root/var/lib/dpkg/triggers"
: >"$root/var/lib/dpkg/status"
: >"$root/var/lib/dpkg/available"
dpkg_root() {
	dpkg --root="$root" --force-script-chrootless --force-depends \
		--force-unsafe-io "$@" >>"$t/dpkg.log" 2>&1 || {
		sed 's/^/    /' "$t/dpkg.log"
		return 1
	}
}

# PKG VERSION DIR: a .deb of DIR (its DEBIAN/ already there)
build_deb() {
	mkdir -p "$3/DEBIAN"
	cat >"$3/DEBIAN/control" <<CONTROL
Package: $1
Version: $2
Architecture: all
Maintainer: test <test@example.invalid>
Description: $1 stand-in for tests/statoverride.sh
CONTROL
	dpkg-deb --root-owner-group -Zgzip --build "$3" "$t/$1_$2.deb" >/dev/null
}

# The libvirt side: add_statoverrides's QEMU_DIRS loop, under DPKG_ROOT.
libvirt_deb() {
	local d=$t/libvirt-$1
	mkdir -p "$d/var/lib/libvirt/qemu/channel/target" "$d/DEBIAN"
	chmod -R 0755 "$d/var"
	cat >"$d/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
[ "$1" = configure ] || exit 0
for dir in /var/lib/libvirt/qemu/ /var/lib/libvirt/qemu/channel/ \
	/var/lib/libvirt/qemu/channel/target/; do
	if ! dpkg-statoverride --list "${dir}" >/dev/null 2>&1; then
		[ ! -e "${DPKG_ROOT:-}${dir}" ] || chown libvirt-qemu:libvirt-qemu "${DPKG_ROOT:-}${dir}"
		[ ! -e "${DPKG_ROOT:-}${dir}" ] || chmod 0750 "${DPKG_ROOT:-}${dir}"
	fi
done
POSTINST
	chmod 0755 "$d/DEBIAN/postinst"
	build_deb fake-libvirt-daemon-system "$1" "$d"
}

if [ -n "$deb" ]; then
	# dpkg processes a trigger only for a package whose dependencies are
	# there: empty stand-ins for them (the first of each alternative)
	dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*//; s/[[:space:]]//g' |
		sort -u | while read -r dep; do
			[ -n "$dep" ] || continue
			mkdir -p "$t/dep-$dep/DEBIAN"
			build_deb "$dep" 9:999 "$t/dep-$dep"
			dpkg_root -i "$t/${dep}_9:999.deb"
		done
	slurm_vm_deb=$deb
else
	d=$t/slurm-vm
	mkdir -p "$d/var/lib/slurm-vm/images" "$d/DEBIAN"
	for s in postinst postrm; do
		grep -v '^#DEBHELPER#$' "$repo/debian/slurm-vm.$s" >"$d/DEBIAN/$s"
		chmod 0755 "$d/DEBIAN/$s"
	done
	grep -v "^#" "$repo/debian/slurm-vm.triggers" >"$d/DEBIAN/triggers" || true
	build_deb slurm-vm 1 "$d"
	slurm_vm_deb=$t/slurm-vm_1.deb
fi
libvirt_deb 1
libvirt_deb 2

lv=$root/var/lib/libvirt/qemu
mode() { stat -c '%U:%G %a' "$1"; }
override() { DPKG_ROOT=$root dpkg-statoverride --list /var/lib/libvirt/qemu || true; }

# slurm-vm first: no libvirt yet, nothing to do
dpkg_root -i "$slurm_vm_deb"
[ -z "$(override)" ] && ok "slurm-vm without libvirt: no statoverride" ||
	fail "slurm-vm without libvirt added a statoverride: $(override)"

dpkg_root -i "$t/fake-libvirt-daemon-system_1.deb"
[ "$(mode "$lv")" = "libvirt-qemu:libvirt-qemu 751" ] &&
	[ "$(override)" = "libvirt-qemu libvirt-qemu 751 /var/lib/libvirt/qemu" ] &&
	ok "libvirt installed after slurm-vm: the trigger made $lv 0751 by a statoverride" ||
	fail "libvirt installed after slurm-vm: $lv is $(mode "$lv"), statoverride '$(override)'"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@" 2>/dev/null; }
as_nobody sh -c "cd '$lv'" && ok "nobody can enter $lv" || fail "nobody cannot enter $lv"
as_nobody ls "$lv" >/dev/null && fail "nobody can list $lv" || ok "nobody cannot list $lv"

dpkg_root -i "$t/fake-libvirt-daemon-system_2.deb"
[ "$(mode "$lv")" = "libvirt-qemu:libvirt-qemu 751" ] &&
	ok "libvirt's upgrade (unpack and postinst) keeps $lv 0751" ||
	fail "libvirt's upgrade made $lv $(mode "$lv")"

dpkg_root --purge slurm-vm
dpkg_root -i "$t/fake-libvirt-daemon-system_2.deb"
[ -z "$(override)" ] && [ "$(mode "$lv")" = "libvirt-qemu:libvirt-qemu 750" ] &&
	[ ! -e "$root/var/lib/slurm-vm" ] &&
	ok "purging slurm-vm removes its statoverride and marker; libvirt's own 0750 comes back" ||
	fail "after slurm-vm's purge: statoverride '$(override)', $lv $(mode "$lv")"

# the guide's order: libvirt-daemon-system first, then slurm-vm
dpkg_root -i "$slurm_vm_deb"
[ "$(mode "$lv")" = "libvirt-qemu:libvirt-qemu 751" ] &&
	ok "slurm-vm installed after libvirt: its postinst made $lv 0751" ||
	fail "slurm-vm installed after libvirt: $lv is $(mode "$lv")"
dpkg_root --purge slurm-vm
dpkg_root -i "$t/fake-libvirt-daemon-system_2.deb"

# an admin's own statoverride: kept, and not purged with slurm-vm
DPKG_ROOT=$root dpkg-statoverride --update --add root root 0755 /var/lib/libvirt/qemu
dpkg_root -i "$slurm_vm_deb"
dpkg_root --purge slurm-vm
[ "$(override)" = "root root 755 /var/lib/libvirt/qemu" ] &&
	ok "an admin's own statoverride is kept through slurm-vm's install and purge" ||
	fail "the admin's statoverride became '$(override)'"

[ "$fails" = 0 ] || exit 1
