#!/bin/bash
# Builds a stock Debian 12 generic cloud image from Debian packages with
# mmdebstrap: what a centre or a collaborator would hand a user, with nothing
# of slurm-vm in it (the agent comes from the seed).
#
#   tests/guest/build-cloud.sh [--suite bookworm|trixie|forky] [--force]
#                              [--out DIR]
#
# --suite trixie builds the Debian 13 equivalent, debian13.qcow2 in
# tests/guest/cache-cloud-trixie/: Open MPI 5 and PMIx 5, netplan.io with
# systemd-networkd and systemd-resolved instead of ifupdown (what Debian's
# trixie cloud images ship: cloud-init renders netplan), and gcc with
# libopenmpi-dev, so that a job compiles its MPI program for the guest's
# Open MPI (the host's is Debian 12's Open MPI 4). Its package versions come
# from the mirror's Packages indexes of trixie (the host's apt knows
# bookworm only). --suite forky likewise builds forky.qcow2 in
# tests/guest/cache-cloud-forky/ (Open MPI 6, PMIx 7, cloud-init 26) from
# forky's main (its Release file is past its Valid-Until date: not checked).
# Next to each of these two, the same image with Debian's cloud kernel
# (linux-image-cloud-amd64) in place of the generic one, as Debian's
# "genericcloud" images boot: debian13-cloud.qcow2, forky-cloud.qcow2. That
# kernel has no 9p (nor have RHEL-family kernels): its shares need virtiofs.
#
# Output (default tests/guest/cache-cloud/, gitignored), printed:
#   debian12.qcow2  one disk: MBR partition table, GRUB 2 (i386-pc) in the
#                   MBR and the gap after it, one ext4 root partition with
#                   systemd, cloud-init, openssh-server, the generic
#                   kernel of Debian's "generic" cloud image
#                   (linux-image-amd64, initramfs-tools; the "genericcloud"
#                   image's linux-image-cloud-amd64 has no 9p, so no
#                   SharedDirs= over 9p), ifupdown and
#                   isc-dhcp-client (Debian 12's cloud images use them),
#                   dbus (as Debian's cloud images, "needed for acpi
#                   shutdown to work": systemd-logind, which powers off on
#                   the ACPI button, needs the system bus; without it
#                   every epilog waits the whole ShutdownTimeout),
#                   openmpi-bin, mpich, libucx0, rdma-core, ibverbs-utils.
#                   Boots with SeaBIOS (a catalog entry with no Kernel=);
#                   console on ttyS0. Like Debian's image: no machine-id, no
#                   SSH host keys (cloud-init and systemd make them on first
#                   boot), all of cloud-init's datasources.
#
# Rebuilds only when an input changed: this script, the candidate versions of
# the packages above (apt-cache policy on the host, same mirror), mmdebstrap's
# and grub-pc-bin's versions. Needs root (mmdebstrap --mode=root,
# file ownership), mmdebstrap, grub-pc-bin (grub-mkimage), fdisk (sfdisk),
# qemu-img, and apt access to a Debian mirror. No loop device: mke2fs -d
# writes the root file system straight into the disk image at its offset.
# shellcheck disable=SC2016 # the hooks' $1 is mmdebstrap's, not ours
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=$here/cache-cloud
force=0
suite=bookworm
mirror=${SVM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${SVM_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
# The kernel command line of Debian's generic cloud images.
cmdline="console=tty0 console=ttyS0,115200 earlyprintk=ttyS0,115200 consoleblank=0"

die() {
	echo "guest/build-cloud.sh: $*" >&2
	exit 1
}

usage() {
	sed -n '2,38s/^# \{0,1\}//p' "$0"
	exit "${1:-0}"
}

while [ $# -gt 0 ]; do
	case "$1" in
	--out)
		[ $# -ge 2 ] || die "--out needs a directory"
		out=$2
		shift 2
		;;
	--suite)
		[ $# -ge 2 ] || die "--suite needs bookworm, trixie or forky"
		suite=$2
		shift 2
		;;
	--force) force=1; shift ;;
	-h | --help) usage 0 ;;
	*) echo "guest/build-cloud.sh: unknown argument '$1'" >&2; usage 2 >&2 ;;
	esac
done

common_pkgs="systemd-sysv dbus cloud-init openssh-server linux-image-amd64
	initramfs-tools sudo netbase grub-pc-bin grub2-common openmpi-bin mpich
	libucx0 rdma-core ibverbs-utils"
case "$suite" in
bookworm)
	pkgs="$common_pkgs ifupdown isc-dhcp-client"
	image_name=debian12.qcow2
	;;
trixie | forky)
	pkgs="$common_pkgs netplan.io systemd-resolved gcc libc6-dev
	libopenmpi-dev"
	# With the cloud kernel too: its package is installed with the
	# generic one and each image keeps one of them (purge_kernels).
	pkgs="$pkgs linux-image-cloud-amd64"
	image_name=debian13.qcow2
	[ "$suite" = trixie ] || image_name=forky.qcow2
	cloud_image_name=${image_name%.qcow2}-cloud.qcow2
	[ "$out" != "$here/cache-cloud" ] || out=$here/cache-cloud-$suite
	;;
*) die "--suite $suite: bookworm, trixie or forky" ;;
esac
# The suite's apt sources and their Packages indexes: forky's main only
# (as the platform roots), whose Release is past its Valid-Until date.
sources=("deb $mirror $suite main" "deb $mirror $suite-updates main"
	"deb $security $suite-security main")
indexes=("$mirror/dists/$suite/main" "$mirror/dists/$suite-updates/main"
	"$security/dists/$suite-security/main")
if [ "$suite" = forky ]; then
	sources=("deb [check-valid-until=no] $mirror $suite main")
	indexes=("$mirror/dists/$suite/main")
fi

for tool in mmdebstrap apt-cache grub-mkimage sfdisk mke2fs qemu-img \
	sha256sum; do
	command -v "$tool" >/dev/null ||
		die "'$tool' not found: apt-get install mmdebstrap grub-pc-bin fdisk qemu-utils"
done
[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap --mode=root; the image's files must be owned by root)"

# "pkg=version" lines, one per package and index that has it.
suite_versions() { # the suite's Packages indexes on the mirror
	local url
	local url
	for url in "${indexes[@]}"; do
		curl -fsSL "$url/binary-amd64/Packages.xz" | xz -dc ||
			die "cannot read $url (SVM_DEBIAN_MIRROR?)"
	done | awk -v want=" $(tr -s ' \t\n' '   ' <<<"$pkgs") " '
		/^Package: / { p = $2 }
		/^Version: / && index(want, " " p " ") { print p "=" $2 }' | sort
}
if [ "$suite" = bookworm ]; then
	# One apt-cache call (one per package takes seconds).
	# shellcheck disable=SC2086 # pkgs: one word per package
	versions=$(apt-cache policy $pkgs 2>/dev/null |
		awk '/^[^ ]/ { sub(":$", ""); p = $0 }
			/^ *Candidate:/ { print p "=" $2 }')
else
	versions=$(suite_versions)
fi
for p in $pkgs; do
	case "$versions" in
	*"$p="[0-9]*) ;;
	*) die "no version of $p in $suite (bookworm: run apt-get update)" ;;
	esac
done
tools="$(dpkg-query -W -f='${Package}=${Version} ' mmdebstrap grub-pc-bin)"
inputs_sum=$(
	{
		sha256sum <"$0"
		echo "$versions"
		echo "$tools"
	} | sha256sum | cut -d' ' -f1
)

image=$out/$image_name
cloud_image=${cloud_image_name:+$out/$cloud_image_name}
mkdir -p "$out"
if [ "$force" = 0 ] && [ -s "$image" ] && { [ -z "$cloud_image" ] || [ -s "$cloud_image" ]; } &&
	[ "$(cat "$out/stamp" 2>/dev/null)" = "$inputs_sum" ]; then
	echo "guest/build-cloud.sh: up to date" >&2
	echo "$image"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/svm-cloud.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "guest/build-cloud.sh: building in $tmp" >&2
start=$(date +%s)

root=$tmp/root
uuid=$(cat /proc/sys/kernel/random/uuid)
# What Debian's image builder leaves: fstab by UUID, a GRUB configuration
# (written here: update-grub cannot probe a disk from a chroot), no
# machine-id (systemd makes one on first boot), no SSH host keys (cloud-init
# makes them), no downloaded packages.
# shellcheck disable=SC2086 # pkgs: one word per package
include=$(printf '%s,' $pkgs)
network_hook=()
[ "$suite" != bookworm ] ||
	network_hook=(--customize-hook='printf "auto lo\niface lo inet loopback\n\nsource /etc/network/interfaces.d/*\n" >"$1/etc/network/interfaces"')
# trixie and forky: netplan's generator writes systemd-networkd's files from what
# cloud-init renders; networkd and resolved are enabled, as in Debian's image.
[ "$suite" = bookworm ] ||
	network_hook=(--customize-hook='chroot "$1" systemctl enable systemd-networkd systemd-resolved')
mmdebstrap --mode=root --variant=important --format=directory \
	--components=main --include="${include%,}" \
	--customize-hook="echo 'UUID=$uuid / ext4 rw,discard,errors=remount-ro 0 1' >\"\$1/etc/fstab\"" \
	--customize-hook="echo debian >\"\$1/etc/hostname\"" \
	--customize-hook=': >"$1/etc/machine-id"; rm -f "$1/var/lib/dbus/machine-id" "$1"/etc/ssh/ssh_host_*' \
	"${network_hook[@]}" \
	--customize-hook='rm -rf "$1"/var/cache/apt/*.bin "$1"/var/lib/apt/lists/*_Packages' \
	"$suite" "$root" "${sources[@]}" >&2 ||
	die "mmdebstrap failed (mirror reachable? see above)"

# make_disk ROOT QCOW2: the bootable disk of ROOT (its one kernel).
make_disk() {
	local root=$1 kimg kver used fs_mib disk=$tmp/disk.raw
	local grub_dir=$1/usr/lib/grub/i386-pc
	kimg=$(find "$root/boot" -maxdepth 1 -name 'vmlinuz-*' | head -n 1)
	[ -n "$kimg" ] || die "the image has no kernel in /boot"
	kver=${kimg##*/vmlinuz-}
	[ -f "$root/boot/initrd.img-$kver" ] || die "the image has no initrd for $kver"
	mkdir -p "$root/boot/grub/i386-pc"
	cp "$grub_dir"/*.mod "$grub_dir"/*.lst "$root/boot/grub/i386-pc/"
	cat >"$root/boot/grub/grub.cfg" <<EOF
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
set timeout=0
menuentry 'Debian GNU/Linux' {
	search --no-floppy --fs-uuid --set=root $uuid
	linux /boot/vmlinuz-$kver root=UUID=$uuid ro $cmdline
	initrd /boot/initrd.img-$kver
}
EOF

	# Disk: 1 MiB before the partition (MBR + GRUB's core image), the
	# root file system with a quarter free (cloud-init's growpart would
	# grow it into a larger disk).
	used=$(du -sm "$root" | cut -f1)
	fs_mib=$((used + used / 4 + 256))
	rm -f "$disk"
	truncate -s "$((fs_mib + 1))M" "$disk"
	echo 'label: dos
start=2048, type=83, bootable' | sfdisk -q "$disk" >&2 ||
		die "sfdisk failed"
	mke2fs -q -t ext4 -L root -U "$uuid" -d "$root" -E offset=1048576 \
		"$disk" "${fs_mib}M" >&2 || die "mke2fs -d failed"

	# GRUB as grub-install does it for a BIOS disk: boot.img (the MBR
	# code, not the partition table) in sector 0; core.img (which finds
	# /boot/grub on the partition) from sector 1, where boot.img's
	# default block list points.
	grub-mkimage -O i386-pc -d "$grub_dir" -o "$tmp/core.img" \
		-p '(hd0,msdos1)/boot/grub' biosdisk part_msdos ext2 ||
		die "grub-mkimage failed"
	[ "$(stat -c %s "$tmp/core.img")" -lt $((2047 * 512)) ] ||
		die "GRUB's core image does not fit before the partition"
	dd if="$grub_dir/boot.img" of="$disk" bs=440 count=1 conv=notrunc status=none
	dd if="$tmp/core.img" of="$disk" bs=512 seek=1 conv=notrunc status=none

	qemu-img convert -f raw -O qcow2 "$disk" "$tmp/disk.qcow2" ||
		die "qemu-img convert failed"
	rm -f "$disk"
	mv "$tmp/disk.qcow2" "$2"
	echo "guest/build-cloud.sh: $2: $kver, ${fs_mib} MiB root" >&2
}

# purge_kernels ROOT cloud|generic: that flavour's kernel packages leave
# ROOT (dpkg --purge, their maintainer scripts run in the chroot).
purge_kernels() {
	local kpkgs
	kpkgs=$(chroot "$1" dpkg-query -W -f '${db:Status-Abbrev}${Package}\n' 'linux-image-*' |
		sed -n 's/^ii *//p' |
		if [ "$2" = cloud ]; then grep -- '-cloud-amd64$'; else grep -v -- '-cloud-amd64$'; fi)
	[ -n "$kpkgs" ] || die "no $2 kernel package in $1"
	# shellcheck disable=SC2086 # one word per package
	DEBIAN_FRONTEND=noninteractive chroot "$1" dpkg --purge $kpkgs >&2 || die "dpkg --purge $kpkgs failed in $1"
}

# The cloud kernel's image from a copy of the root, then the generic one.
if [ -n "$cloud_image" ]; then
	cp -a "$root" "$tmp/root-cloud"
	purge_kernels "$tmp/root-cloud" generic
	make_disk "$tmp/root-cloud" "$cloud_image"
	rm -rf "$tmp/root-cloud"
	purge_kernels "$root" cloud
fi
make_disk "$root" "$image"
echo "$inputs_sum" >"$out/stamp"
echo "guest/build-cloud.sh: built in $(($(date +%s) - start)) s" >&2
echo "$image"
