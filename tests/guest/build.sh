#!/bin/bash
# Builds the slurm-vm test guest from Debian packages and the files in
# tests/guest/files/, without installing anything on the host.
#
#   tests/guest/build.sh [--agent PATH] [--force] [--out DIR]
#
# Output (default tests/guest/cache/, gitignored), printed in this order:
#   vmlinuz      Debian 12 kernel (the one linux-image-amd64 depends on)
#   initrd.img   busybox + virtio/ext4 modules; mounts root= and switch_roots
#   rootfs.qcow2 ext4 (mke2fs -d, no loop mount): busybox init, prints
#                SLURM-VM-GUEST-READY on ttyS0 when up, respawns
#                /usr/sbin/slurm-vm-agent when the image has one, powers off
#                on the ACPI power button (virsh shutdown); also has
#                Debian's qemu-guest-agent (/usr/sbin/qemu-ga, with the
#                shared libraries it needs and the dynamic loader), started
#                when the domain has an org.qemu.guest_agent.0 port;
#                the MPI, PMI and network test programs: svm-pmi-check
#                (PMI-1/PMI-2 wire protocol over PMI_FD, static),
#                svm-net-bench (UDP sink/sender, TCP latency and
#                throughput, static; the host's is build/bench/net_bench)
#                and svm-mpi-allreduce
#                (C, built here against libmpich-dev) with Debian's MPICH
#                libraries (libmpich12 and the libraries it needs);
#                svm-ompi-allreduce, the same program built against
#                libopenmpi-dev, with Debian's Open MPI 4.1 and PMIx
#                runtime (libopenmpi3, libpmix2: their libraries, the MCA
#                components that need no fabric library, help texts)
#   cmdline      the kernel command line to boot it with
#   vmlinux      the same kernel as an uncompressed ELF: qemu boots it through
#                the PVH entry point, ~5 s faster under TCG; use it as <kernel>
#
# Rebuilds only when an input changed: this script, files/ (the test
# programs' sources too), the package versions, the host compiler and
# libmpich-dev and libopenmpi-dev that build the test programs, the agent
# binary. Downloads (apt-get download) are kept in cache/debs/, whatever
# --out says.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=$here/cache
agent=
force=0

die() {
	echo "guest/build.sh: $*" >&2
	exit 1
}

usage() {
	sed -n '2,31s/^# \{0,1\}//p' "$0"
	exit "${1:-0}"
}

while [ $# -gt 0 ]; do
	case "$1" in
	--agent)
		[ $# -ge 2 ] || die "--agent needs a path"
		agent=$2
		shift 2
		;;
	--out)
		[ $# -ge 2 ] || die "--out needs a directory"
		out=$2
		shift 2
		;;
	--force) force=1; shift ;;
	-h | --help) usage 0 ;;
	*) echo "guest/build.sh: unknown argument '$1'" >&2; usage 2 >&2 ;;
	esac
done

for tool in apt-get apt-cache dpkg-deb mke2fs qemu-img cpio gzip modprobe \
	depmod sha256sum xz od gcc mpicc.mpich chroot; do
	command -v "$tool" >/dev/null ||
		die "'$tool' not found: run scripts/install-deps.sh as root"
done
# mke2fs -d, depmod/modprobe and file ownership in the image need root.
[ "$(id -u)" = 0 ] || die "run as root (the image's files must be owned by root)"

if [ -n "$agent" ]; then
	if [ ! -f "$agent" ] || [ ! -x "$agent" ]; then
		die "--agent $agent: not an executable file"
	fi
	# A dynamic agent would not run: the guest has no libc.
	if command -v file >/dev/null &&
		file -L "$agent" | grep -q 'dynamically linked'; then
		die "--agent $agent is dynamically linked; build it static"
	fi
fi

# Package versions: the kernel linux-image-amd64 depends on, busybox-static,
# and the guest's dynamically linked programs' packages: qemu-guest-agent,
# MPICH's libmpich12, Open MPI's libopenmpi3 (and openmpi-common's help
# texts; zlib1g, which is no lib*), and the library packages they depend on,
# recursively (following only lib* packages: libc6, libglib2.0-0, libucx0,
# ...). Which of their shared objects the guest gets is decided after
# extraction (ld.so --list on each program).
#
# apt-cache reads every package list on each call (~1 s here: no pkgcache),
# so the lookups are one call per dependency level, and their answer is kept
# in $here/cache/apt-versions for as long as the package lists, the apt
# configuration and this script are the same: every cluster test asks.
apt_state() {
	{
		sha256sum <"$0"
		ls -l --time-style=+%s /var/lib/apt/lists/ /etc/apt/sources.list \
			/etc/apt/sources.list.d/ /etc/apt/preferences \
			/etc/apt/preferences.d/ 2>/dev/null || true
	} | sha256sum | cut -d' ' -f1
}

# apt_resolve: "package version architecture" lines, the kernel first.
apt_resolve() {
	local kmeta kpkg queue next done_pkgs=" " p d
	kmeta=$(apt-cache show --no-all-versions linux-image-amd64 2>/dev/null |
		sed -n 's/^Depends: //p' | head -n 1)
	kpkg=$(printf '%s\n' "$kmeta" | tr ',' '\n' |
		sed -n 's/^ *\(linux-image-[0-9][^ ]*-amd64\).*/\1/p' | head -n 1)
	[ -n "$kpkg" ] ||
		die "cannot find the kernel package of linux-image-amd64 (apt-get update?)"
	queue="qemu-guest-agent libmpich12 libopenmpi3 openmpi-common zlib1g"
	while [ -n "$queue" ]; do
		next=
		for p in $queue; do done_pkgs="$done_pkgs$p "; done
		# shellcheck disable=SC2086 # queue: one word per package
		for d in $(apt-cache depends --no-recommends --no-suggests \
			--no-conflicts --no-breaks --no-replaces --no-enhances $queue |
			sed -n 's/^ *|\{0,1\}\(Pre\)\{0,1\}Depends: \([^< ]*\).*/\2/p' |
			sed 's/:any$//' | LC_ALL=C sort -u); do
			case "$d" in lib*) ;; *) continue ;; esac
			case "$done_pkgs $next " in *" $d "*) continue ;; esac
			next="$next $d"
		done
		queue=${next# }
	done
	# shellcheck disable=SC2086 # done_pkgs: one word per package
	apt-cache show --no-all-versions "$kpkg" busybox-static $done_pkgs \
		2>/dev/null | awk -v order="$kpkg busybox-static$done_pkgs" '
		/^Package: / { p = $2 }
		/^Version: / { v[p] = $2 }
		/^Architecture: / { a[p] = $2 }
		END {
			n = split(order, o, " ")
			for (i = 1; i <= n; i++) {
				if (!(o[i] in v))
					exit 1
				print o[i], v[o[i]], a[o[i]]
			}
		}' || die "apt-cache does not know every package of $kpkg busybox-static$done_pkgs: run apt-get update"
}

apt_memo=$here/cache/apt-versions
state=$(apt_state)
if [ "$(head -n 1 "$apt_memo" 2>/dev/null)" = "$state" ]; then
	resolved=$(tail -n +2 "$apt_memo")
else
	resolved=$(apt_resolve) || exit 1
	mkdir -p "${apt_memo%/*}"
	printf '%s\n%s\n' "$state" "$resolved" >"$apt_memo.$$"
	mv -f "$apt_memo.$$" "$apt_memo"
fi
pkg_version() { printf '%s\n' "$resolved" | awk -v p="$1" '$1 == p { print $2 }'; }
pkg_arch() { printf '%s\n' "$resolved" | awk -v p="$1" '$1 == p { print $3 }'; }
kpkg=$(printf '%s\n' "$resolved" | awk 'NR == 1 { print $1 }')
kver_pkg=$(pkg_version "$kpkg")
bb_ver=$(pkg_version busybox-static)
kver=${kpkg#linux-image-}
dyn_versions=$(printf '%s\n' "$resolved" | awk 'NR > 2 { printf "%s%s=%s", s, $1, $2; s = " " }')
dyn_pkgs=$(printf '%s\n' "$resolved" | awk 'NR > 2 { printf "%s%s", s, $1; s = " " }')
# What builds the test programs: the compiler and the MPICH headers/library.
mpich_dev=$(dpkg-query -W -f='${Version}' libmpich-dev 2>/dev/null) ||
	die "libmpich-dev is not installed: run scripts/install-deps.sh"
ompi_dev=$(dpkg-query -W -f='${Version}' libopenmpi-dev 2>/dev/null) ||
	die "libopenmpi-dev is not installed: run scripts/install-deps.sh"
toolchain="$(gcc --version | head -n 1) libmpich-dev=$mpich_dev libopenmpi-dev=$ompi_dev"

agent_sum=none
[ -n "$agent" ] && agent_sum=$(sha256sum <"$agent" | cut -d' ' -f1)
inputs_sum=$(
	{
		sha256sum <"$0"
		(cd "$here/files" && find . -type f | LC_ALL=C sort |
			xargs sha256sum)
		echo "$kpkg=$kver_pkg busybox-static=$bb_ver agent=$agent_sum"
		echo "$dyn_versions"
		echo "$toolchain"
	} | sha256sum | cut -d' ' -f1
)

# Downloads are shared by every --out (an image with another agent needs
# the same packages).
debs=$here/cache/debs
mkdir -p "$out" "$debs"
# Printed in this order, one a line (callers read them by position).
outputs="$out/vmlinuz $out/initrd.img $out/rootfs.qcow2 $out/cmdline $out/vmlinux"
print_paths() {
	for f in $outputs; do
		echo "$f"
	done
}
if [ "$force" = 0 ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$inputs_sum" ]; then
	all=1
	for f in $outputs; do [ -s "$f" ] || all=0; done
	if [ "$all" = 1 ]; then
		echo "guest/build.sh: up to date ($kpkg $kver_pkg, busybox $bb_ver)" >&2
		print_paths
		exit 0
	fi
fi

# Download (kept): apt-get download names files pkg_ver_arch.deb, with the
# epoch's ':' escaped as %3a.
deb_of() { # package version
	local v=${2//:/%3a} arch
	arch=$(pkg_arch "$1")
	echo "$debs/${1}_${v}_${arch:-amd64}.deb"
}
# shellcheck disable=SC2086 # dyn_versions: one word per package
for p in "$kpkg=$kver_pkg" "busybox-static=$bb_ver" $dyn_versions; do
	name=${p%%=*}
	ver=${p#*=}
	deb=$(deb_of "$name" "$ver")
	[ -s "$deb" ] && continue
	echo "guest/build.sh: downloading $name $ver" >&2
	(cd "$debs" && apt-get download -q -o APT::Sandbox::User=root "$p" >&2) ||
		die "apt-get download $p failed (network? apt-get update?)"
	[ -s "$deb" ] || die "apt-get download $p did not produce $deb"
done

# The uncompressed ELF kernel inside the bzImage. Debian's kernel has
# CONFIG_PVH, so qemu boots the ELF directly (PVH entry point): no firmware
# linuxboot and no in-guest decompression, which under TCG halves the time to
# ready (~10.4 s -> ~5.7 s measured). Payload: xz (Debian 12) or zstd.
extract_vmlinux() { # bzImage out
	local magic off
	for magic in $'\xfd7zXZ' $'\x28\xb5\x2f\xfd'; do
		for off in $(LC_ALL=C grep -abo "$magic" "$1" | cut -d: -f1 | head -n 5); do
			case "$magic" in
			*XZ*) tail -c +"$((off + 1))" "$1" | xz -dc >"$2" 2>/dev/null || true ;;
			*) tail -c +"$((off + 1))" "$1" | zstd -qdc >"$2" 2>/dev/null || true ;;
			esac
			[ "$(head -c 4 "$2" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] &&
				return 0
		done
	done
	die "cannot extract the ELF kernel (vmlinux) from $1"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/svm-guest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "guest/build.sh: building in $tmp" >&2

dpkg-deb -x "$(deb_of "$kpkg" "$kver_pkg")" "$tmp/kernel"
dpkg-deb -x "$(deb_of busybox-static "$bb_ver")" "$tmp/busybox"
busybox=$tmp/busybox/bin/busybox
[ -x "$busybox" ] || die "busybox-static has no bin/busybox"
[ -f "$tmp/kernel/boot/vmlinuz-$kver" ] || die "no vmlinuz-$kver in $kpkg"

# Modules and their dependencies, in load order. depmod on the extracted tree
# (the deb ships no modules.dep), then modprobe --show-depends.
# virtio_pci: the bus; virtio_blk: root disk; ext4: root fs;
# virtio_console: the agent channel; virtio_net: later; button+evdev: ACPI
# power button for busybox acpid; isofs: the cloud-init seed (an ISO 9660
# read-only virtio disk), read by files/seed; 9pnet_virtio+9p and virtiofs:
# the shares (vm.conf SharedDirs=) the seed mounts.
modules="virtio_pci virtio_blk ext4 virtio_console virtio_net button evdev
	isofs 9pnet_virtio 9p virtiofs"
depmod -b "$tmp/kernel" "$kver"
mkdir -p "$tmp/initrd"
: >"$tmp/initrd/modules.list"
for m in $modules; do
	modprobe -d "$tmp/kernel" -S "$kver" --show-depends "$m" ||
		die "module $m not found in $kpkg"
done | while read -r kind path _; do
	# "insmod /abs/path.ko [opts]" or "builtin name"
	[ "$kind" = insmod ] || continue
	rel=${path#"$tmp/kernel"}
	grep -qxF "$rel" "$tmp/initrd/modules.list" && continue
	mkdir -p "$tmp/initrd$(dirname "$rel")"
	case "$rel" in
	*.ko) cp "$path" "$tmp/initrd$rel" ;;
	*.ko.xz) xz -dc "$path" >"$tmp/initrd${rel%.xz}"; rel=${rel%.xz} ;;
	*.ko.zst) zstd -qdc "$path" >"$tmp/initrd${rel%.zst}"; rel=${rel%.zst} ;;
	*) die "unexpected module file $rel" ;;
	esac
	echo "$rel" >>"$tmp/initrd/modules.list"
done
[ -s "$tmp/initrd/modules.list" ] || die "no modules selected"

# initrd: busybox (applet links made by /init at boot), modules, /init.
mkdir -p "$tmp/initrd/bin" "$tmp/initrd/dev" "$tmp/initrd/proc" \
	"$tmp/initrd/sys" "$tmp/initrd/newroot"
cp "$busybox" "$tmp/initrd/bin/busybox"
ln -s busybox "$tmp/initrd/bin/sh"
install -m 755 "$here/files/initrd-init" "$tmp/initrd/init"
(cd "$tmp/initrd" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) | gzip -1 >"$tmp/initrd.img"

# rootfs: busybox with all applet links, init files, users.
r=$tmp/rootfs
mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc/init.d,etc/acpi/PWRF,root,tmp,proc,sys,dev,run,var/log,home}
chmod 1777 "$r/tmp"
chmod 700 "$r/root"
cp "$busybox" "$r/bin/busybox"
"$busybox" --list-full | while read -r applet; do
	case "$applet" in
	bin/busybox) continue ;;
	bin/*) target=busybox ;;
	sbin/*) target=../bin/busybox ;;
	usr/bin/* | usr/sbin/*) target=../../bin/busybox ;;
	*) continue ;;
	esac
	[ -e "$r/$applet" ] || ln -s "$target" "$r/$applet"
done
[ -L "$r/sbin/init" ] || die "busybox has no init applet"
[ -L "$r/bin/sh" ] || ln -s busybox "$r/bin/sh"
install -m 644 "$here/files/inittab" "$r/etc/inittab"
install -m 755 "$here/files/rcS" "$r/etc/init.d/rcS"
install -m 755 "$here/files/agent" "$r/etc/init.d/agent"
install -m 755 "$here/files/shutdown" "$r/etc/init.d/shutdown"
install -m 755 "$here/files/seed" "$r/etc/init.d/seed"
install -m 755 "$here/files/acpi-power" "$r/etc/acpi/PWRF/00000080"
cat >"$r/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$r/etc/group" <<'EOF'
root:x:0:
tty:x:5:
nogroup:x:65534:
EOF
echo 'root::0:0:99999:7:::' >"$r/etc/shadow"
chmod 600 "$r/etc/shadow"
echo slurm-vm-guest >"$r/etc/hostname"
echo '127.0.0.1 localhost' >"$r/etc/hosts"
: >"$r/etc/fstab"
if [ -n "$agent" ]; then
	install -m 755 "$agent" "$r/usr/sbin/slurm-vm-agent"
fi

# The dynamically linked programs: qemu-guest-agent (the peer the channel
# benchmark compares against) and the MPI test program, built here against
# the host's libmpich-dev. Each gets the shared objects the extracted loader
# resolves for it against the extracted packages (what ldd would say), and
# the loader itself. The PMI test program is static: it needs nothing.
install -m 755 "$here/files/qemu-ga" "$r/etc/init.d/qemu-ga"
cflags="-O2 -Wall -Wextra -Werror"
# shellcheck disable=SC2086 # cflags: several words
gcc $cflags -static -o "$tmp/svm-pmi-check" "$here/files/pmi_check.c" ||
	die "cannot build files/pmi_check.c"
# shellcheck disable=SC2086
gcc $cflags -static -o "$tmp/svm-net-bench" "$here/files/net_bench.c" ||
	die "cannot build files/net_bench.c"
# shellcheck disable=SC2086
mpicc.mpich $cflags -o "$tmp/svm-mpi-allreduce" "$here/files/mpi_allreduce.c" ||
	die "cannot build files/mpi_allreduce.c with mpicc.mpich (libmpich-dev)"
# shellcheck disable=SC2086
mpicc.openmpi $cflags -o "$tmp/svm-ompi-allreduce" "$here/files/mpi_allreduce.c" ||
	die "cannot build files/mpi_allreduce.c with mpicc.openmpi (libopenmpi-dev)"
q=$tmp/dyn
mkdir -p "$q"
for p in $dyn_versions; do
	dpkg-deb -x "$(deb_of "${p%%=*}" "${p#*=}")" "$q"
done
dyn_ld=$q/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
[ -x "$q/usr/sbin/qemu-ga" ] || die "qemu-guest-agent has no usr/sbin/qemu-ga"
[ -f "$dyn_ld" ] || die "libc6 has no lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
mkdir -p "$r/lib/x86_64-linux-gnu" "$r/lib64" "$r/var"
install -m 755 "$q/usr/sbin/qemu-ga" "$r/usr/sbin/qemu-ga"
install -m 755 "$tmp/svm-mpi-allreduce" "$r/usr/bin/svm-mpi-allreduce"
install -m 755 "$tmp/svm-ompi-allreduce" "$r/usr/bin/svm-ompi-allreduce"
install -m 755 "$tmp/svm-pmi-check" "$r/usr/bin/svm-pmi-check"
install -m 755 "$tmp/svm-net-bench" "$r/usr/bin/svm-net-bench"
install -m 755 "$dyn_ld" "$r/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$r/lib64/ld-linux-x86-64.so.2"
# Open MPI and PMIx open their components (dlopen) from where Debian
# installs them: the guest gets them there, except those for fabrics the
# test guest has no library or device for (libfabric, PSM, verbs, usNIC,
# UCX), and the help texts their messages are made of.
ompi_lib=usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
pmix_lib=usr/lib/x86_64-linux-gnu/pmix2
[ -d "$q/$ompi_lib" ] && [ -d "$q/$pmix_lib/lib/pmix" ] ||
	die "libopenmpi3/libpmix2 have no $ompi_lib or $pmix_lib/lib/pmix"
mkdir -p "$r/$ompi_lib" "$r/$pmix_lib/lib/pmix" "$r/usr/share/openmpi"
components=
for c in "$q/$ompi_lib"/mca_*.so "$q/$pmix_lib"/lib/pmix/pmix_mca_*.so; do
	case "${c##*/}" in *ofi* | *psm* | *openib* | *usnic* | *ucx*) continue ;; esac
	install -m 644 "$c" "$r/${c#"$q"/}"
	components="$components $c"
done
cp -r "$q/$pmix_lib/share" "$r/$pmix_lib/share"
cp "$q"/usr/share/openmpi/help-*.txt "$r/usr/share/openmpi/"
# shellcheck disable=SC2086 # components: one word each
for prog in "$q/usr/sbin/qemu-ga" "$tmp/svm-mpi-allreduce" \
	"$tmp/svm-ompi-allreduce" $components; do
	libs=$("$dyn_ld" --library-path \
		"$q/lib/x86_64-linux-gnu:$q/usr/lib/x86_64-linux-gnu" \
		--list "$prog") ||
		die "the extracted loader cannot resolve ${prog##*/}'s libraries: $libs"
	if printf '%s\n' "$libs" | grep -q 'not found'; then
		die "${prog##*/} needs libraries none of $dyn_pkgs has:" \
			"$(printf '%s\n' "$libs" | grep 'not found' | tr -s ' \t\n' ' ')"
	fi
	# "\tlibglib-2.0.so.0 => /tmp/.../libglib-2.0.so.0.7400.6 (0x...)"
	printf '%s\n' "$libs" |
		sed -n 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) (.*/\1 \2/p' |
		while read -r soname path; do
			case "$soname" in */* | ld-linux*) continue ;; esac
			case "$path" in "$q"/*) ;; *)
				die "${prog##*/}: $soname resolved outside the packages: $path" ;;
			esac
			install -m 644 "$path" "$r/lib/x86_64-linux-gnu/$soname"
		done
done
[ -f "$r/lib/x86_64-linux-gnu/libc.so.6" ] ||
	install -m 644 "$q/lib/x86_64-linux-gnu/libc.so.6" "$r/lib/x86_64-linux-gnu/libc.so.6"
# qemu-ga's default pid file and state directory are under /var/run.
[ -e "$r/var/run" ] || ln -s ../run "$r/var/run"
# The dynamic programs against the guest's own tree only (its loader, no
# ld.so.cache, its libraries), as in the guest: caught here, not at boot.
chroot "$r" /usr/sbin/qemu-ga --version >/dev/null ||
	die "qemu-ga does not start with the guest's libraries"
for prog in svm-mpi-allreduce svm-ompi-allreduce; do
	chroot "$r" /lib64/ld-linux-x86-64.so.2 --list "/usr/bin/$prog" >/dev/null ||
		die "$prog's libraries are not all in the guest (see above)"
done

# The files plus room for the jobs' writes (at least the 96 MiB of old).
size_mb=$(($(du -sm "$r" | cut -f1) + 64))
[ "$size_mb" -ge 96 ] || size_mb=96
mke2fs -q -t ext4 -L svm-root -O ^has_journal -d "$r" -F \
	"$tmp/rootfs.img" "${size_mb}M" >&2
qemu-img convert -f raw -O qcow2 "$tmp/rootfs.img" "$tmp/rootfs.qcow2"

# Kernel command line the test domains use; svm.hostname= is appended.
# no_timer_check: on a busy host a TCG guest's kernel can miss the IO-APIC
# timer check's ticks and panic ("IO-APIC + timer doesn't work!"); with
# panic=-1 and on_reboot=destroy that ends qemu while booting. Fedora's and
# RHEL's cloud images boot with it for the same reason.
echo "console=ttyS0 root=/dev/vda rw loglevel=4 panic=-1 no_timer_check" >"$tmp/cmdline"

cp "$tmp/kernel/boot/vmlinuz-$kver" "$tmp/vmlinuz"
extract_vmlinux "$tmp/vmlinuz" "$tmp/vmlinux"
for f in vmlinuz vmlinux initrd.img rootfs.qcow2 cmdline; do
	mv -f "$tmp/$f" "$out/$f"
done
echo "$inputs_sum" >"$out/stamp"
echo "guest/build.sh: built from $kpkg $kver_pkg, busybox-static $bb_ver" \
	"($(wc -l <"$tmp/initrd/modules.list") modules)," \
	"qemu-guest-agent $(pkg_version qemu-guest-agent)," \
	"MPICH $(pkg_version libmpich12)," \
	"Open MPI $(pkg_version libopenmpi3), ${size_mb} MiB root" >&2
print_paths
