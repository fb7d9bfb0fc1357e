#!/bin/sh
# Installs every build and test dependency of slurm-vm on Debian 12.
# Idempotent: packages already present are left alone, no service is started.
#
#   scripts/install-deps.sh [--slurm-source DIR]
#
# --slurm-source DIR: also provide the configured Slurm source tree the
# gres/ibvf plugin is built against (configure --with-slurm-source=DIR):
# `apt-get source slurm-wlm` of exactly the installed slurmd version
# (adding a deb-src entry when apt has none), unpacked into DIR and
# configured as Debian builds it, for its config.h. Nothing is done when DIR
# already holds that version configured.
set -eu

slurm_source=""
case "${1:-}" in
--slurm-source)
	[ -n "${2:-}" ] || {
		echo "install-deps: --slurm-source needs a directory" >&2
		exit 2
	}
	slurm_source=$2
	;;
"") ;;
*)
	echo "usage: scripts/install-deps.sh [--slurm-source DIR]" >&2
	exit 2
	;;
esac

BUILD="build-essential autoconf automake libtool pkg-config clang-14
	libclang-rt-14-dev clang-format llvm-14
	libslurm-dev libvirt-dev libhwloc-dev libpci-dev libxml2-dev
	libibverbs-dev libcmocka-dev libmpich-dev libopenmpi-dev"
# libpmix-dev: Slurm's mpi/pmix opens its libpmix.so, which no Slurm package
# pulls in (srun --mpi=pmix); openmpi-bin: the host's Open MPI reference run;
# mmdebstrap, grub-pc-bin, fdisk: the stock cloud image (build-cloud.sh).
TEST="slurmd slurmctld slurm-client libvirt-daemon libvirt-daemon-driver-qemu
	libpmix-dev openmpi-bin
	libvirt-clients qemu-system-x86 qemu-utils hwloc libxml2-utils
	genisoimage cloud-init attr ovmf
	e2fsprogs cpio xz-utils zstd kmod iproute2 tmux procps psmisc
	util-linux python3 shellcheck nftables iputils-ping
	mmdebstrap grub-pc-bin fdisk"
# apt-get source unpacks with dpkg-source.
[ -z "$slurm_source" ] || TEST="$TEST dpkg-dev"

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: run as root (apt-get install)" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive

# The version of a source tree's configured config.h ("" when none).
source_tree_version() {
	sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"/\1/p' "$1/config.h" 2>/dev/null
}

# Some deb-src entry in apt's sources (one-line or deb822 format)?
have_deb_src() {
	grep -qsE '^[[:space:]]*(deb-src[[:space:]]|Types:.*deb-src)' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources
}

fetch_slurm_source() {
	dir=$1
	pkg_version=$(dpkg-query -W -f='${Version}' slurmd)
	upstream=${pkg_version%-*}
	upstream=${upstream#*:}
	if [ "$(source_tree_version "$dir")" = "$upstream" ]; then
		echo "install-deps: $dir: Slurm $upstream source, configured"
		return 0
	fi
	if ! have_deb_src; then
		# shellcheck disable=SC1091 # the running system's
		codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
		echo "install-deps: adding deb-src entries for $codename"
		cat >/etc/apt/sources.list.d/slurm-vm-src.sources <<-EOF
		# Added by slurm-vm scripts/install-deps.sh --slurm-source
		Types: deb-src
		URIs: http://deb.debian.org/debian
		Suites: $codename $codename-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb-src
		URIs: http://deb.debian.org/debian-security
		Suites: $codename-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOF
		apt-get update -qq
	fi
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/slurm-src.XXXXXX")
	# The installed version exactly: a GRES plugin must match it.
	echo "install-deps: apt-get source slurm-wlm=$pkg_version"
	if ! (cd "$tmp" && apt-get source -qq "slurm-wlm=$pkg_version" >/dev/null 2>"$tmp/apt.log"); then
		apt-get update -qq
		(cd "$tmp" && apt-get source -qq "slurm-wlm=$pkg_version" >/dev/null) || {
			cat "$tmp/apt.log" >&2
			rm -rf "$tmp"
			echo "install-deps: cannot fetch the source of slurm-wlm $pkg_version" >&2
			return 1
		}
	fi
	# Debian's configure options that reach config.h (debian/rules).
	echo "install-deps: configuring Slurm $upstream for its config.h"
	(cd "$tmp/slurm-wlm-$upstream" &&
		./configure --prefix=/usr --libdir="/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)" \
			--sysconfdir=/etc/slurm --without-rpath --disable-debug \
			--enable-multiple-slurmd >configure.log 2>&1) || {
		tail -20 "$tmp/slurm-wlm-$upstream/configure.log" >&2
		rm -rf "$tmp"
		echo "install-deps: Slurm's configure failed" >&2
		return 1
	}
	rm -rf "$dir"
	mkdir -p "$(dirname "$dir")"
	mv "$tmp/slurm-wlm-$upstream" "$dir"
	rm -rf "$tmp"
	echo "install-deps: $dir: Slurm $upstream source, configured"
}

missing=""
for p in $BUILD $TEST; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	[ -z "$slurm_source" ] || fetch_slurm_source "$slurm_source"
	exit 0
fi

echo "install-deps: installing$missing"
# Packages must not start daemons on the build host: the test harness starts
# its own slurmctld/slurmd/libvirtd with private configuration.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	own_policy=1
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing
[ "$own_policy" = 1 ] && rm -f "$policy"
[ -z "$slurm_source" ] || fetch_slurm_source "$slurm_source"
# cloud-init is here only for `cloud-init schema` (the seed's tests); it has
# no daemon, but it must never configure this host at its next boot.
case " $missing " in
*" cloud-init "*) mkdir -p /etc/cloud && touch /etc/cloud/cloud-init.disabled ;;
esac
exit 0
