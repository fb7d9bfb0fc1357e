#!/bin/bash
# check-config's libvirt directory (libvirt.c): (as root) libvirt's qemu
# directory 0750, as libvirt-daemon-system leaves it, and a closed
# directory above it: tried as nobody.
. "$(dirname "$0")/test-setup.sh"

# Item 1: libvirt's qemu directory as Debian's libvirt-daemon-system leaves
# it (libvirt-qemu's 0750; daemon stands in for libvirt-qemu), and a
# directory above it closed too: qemu, as the job user, could not reach
# its domain-ID-NAME/ in either. Each is reported, tried as nobody; the
# fixes, run as printed (dpkg-statoverride on a private dpkg database),
# let nobody in, and libvirt-daemon-system's postinst (its
# add_statoverrides, 9.0.0-4, as an upgrade runs it) keeps them.
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && id daemon >/dev/null 2>&1; then
	lv=$cc/var/lib/libvirt/qemu
	mkdir -p "$lv/channel/target" "$cc/dpkg"
	: >"$cc/dpkg/statoverride"
	chmod 0755 "$cc" "$cc/var" "$cc/var/lib"
	chmod 0700 "$cc/var/lib/libvirt"
	chown daemon:daemon "$lv"
	chmod 0750 "$lv"
	check_lv() {
		"$svm" check-config --slurm-conf "$cc/slurm.conf" --node n1 \
			--libvirt-dir "$lv" >"$out" 2>&1 || true
	}
	check_lv
	grep -qF "problem: $lv: an ordinary user cannot enter it (tried as nobody: Permission denied)" "$out" ||
		fail "libvirt's qemu directory as libvirt-daemon-system leaves it (0750) not reported"
	grep -qF "problem: $cc/var/lib/libvirt: an ordinary user cannot enter it" "$out" ||
		fail "a closed directory above libvirt's qemu directory not reported"
	fix_for "$lv: an ordinary user" | grep -qF "dpkg-statoverride --update --add daemon daemon 0751 $lv" ||
		fail "the fix for $lv is not a statoverride keeping its owner, 0751"
	export DPKG_ADMINDIR=$cc/dpkg
	# an admin's earlier statoverride (the one libvirt's 0750 came from)
	dpkg-statoverride --add daemon daemon 0750 "$lv"
	run_fix "$lv: an ordinary user"
	[ "$(dpkg-statoverride --list "$lv")" = "daemon daemon 751 $lv" ] ||
		fail "after the fix, the statoverride is: $(dpkg-statoverride --list "$lv")"
	run_fix "$cc/var/lib/libvirt: an ordinary user"
	check_lv
	grep -qF "ok:      $lv: an ordinary user can enter it and every directory above (tried as nobody)" "$out" ||
		fail "after their fixes, libvirt's qemu directory is still reported"
	for dir in "$lv/" "$lv/channel/" "$lv/channel/target/"; do
		if ! dpkg-statoverride --list "${dir}" >/dev/null 2>&1; then
			[ ! -e "${dir}" ] || chown daemon:daemon "${dir}"
			[ ! -e "${dir}" ] || chmod 0750 "${dir}"
		fi
	done
	check_lv
	grep -qF "ok:      $lv: an ordinary user can enter it" "$out" ||
		fail "libvirt-daemon-system's postinst undid the fix"
	unset DPKG_ADMINDIR
	# Not the system's libvirt (a private libvirtd, or none): nothing said.
	"$svm" check-config --slurm-conf "$cc/slurm.conf" --node n1 \
		--libvirt-dir "$cc/none/qemu" >"$out" 2>&1 || true
	grep -qF "$cc/none" "$out" && fail "a missing libvirt directory was reported"
fi
exit 0
