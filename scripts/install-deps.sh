#!/bin/sh
# Installs every build and test dependency of slurm-vm on Debian 12.
# Idempotent: packages already present are left alone, no service is started.
#
#   scripts/install-deps.sh [--slurm-source DIR | --opensm-source DIR]
#
# --slurm-source DIR: also provide the configured Slurm source tree the
# gres/ibvf plugin is built against (configure --with-slurm-source=DIR):
# `apt-get source slurm-wlm` of exactly the installed slurmd version
# (adding a deb-src entry when apt has none), unpacked into DIR and
# configured as Debian builds it, for its config.h. Nothing is done when DIR
# already holds that version configured.
#
# --opensm-source DIR: OpenSM's source of the installed libopensm version
# (`apt-get source opensm`), unpacked into DIR: tests/unit/
# test_opensm_parse.sh compiles OpenSM's own partitions.conf parser from it.
set -eu

slurm_source=""
opensm_source=""
case "${1:-}" in
--slurm-source | --opensm-source)
	[ -n "${2:-}" ] || {
		echo "install-deps: $1 needs a directory" >&2
		exit 2
	}
	[ "$1" = --slurm-source ] && slurm_source=$2 || opensm_source=$2
	;;
"") ;;
*)
	echo "usage: scripts/install-deps.sh [--slurm-source DIR | --opensm-source DIR]" >&2
	exit 2
	;;
esac

BUILD="build-essential autoconf automake libtool pkg-config clang-14
	libclang-rt-14-dev clang-format llvm-14
	libslurm-dev libvirt-dev libhwloc-dev libpci-dev libxml2-dev
	libibverbs-dev libcmocka-dev libmpich-dev libopenmpi-dev
	libopensm-dev libibumad-dev"
# libpmix-dev: Slurm's mpi/pmix opens its libpmix.so, which no Slurm package
# pulls in (srun --mpi=pmix); openmpi-bin: the host's Open MPI reference run;
# mmdebstrap, grub-pc-bin, fdisk: the stock cloud image (build-cloud.sh).
# lua5.1: etc/cli_filter.lua run by the Lua of Slurm's cli_filter/lua
# (tests/unit/test_cli_filter.sh). slurmdbd, mariadb-server: the test
# cluster's accounting (HARNESS_ACCOUNTING=1, tests/cluster/test_accounting.sh).
TEST="slurmd slurmctld slurm-client slurmdbd mariadb-server
	libvirt-daemon libvirt-daemon-driver-qemu
	libpmix-dev openmpi-bin
	libvirt-clients qemu-system-x86 qemu-utils hwloc libxml2-utils
	genisoimage cloud-init attr ovmf
	e2fsprogs cpio xz-utils zstd kmod iproute2 tmux procps psmisc
	util-linux python3 shellcheck nftables iputils-ping
	mmdebstrap grub-pc-bin fdisk lua5.1"
# apt-get source unpacks with dpkg-source.
[ -z "$slurm_source$opensm_source" ] || TEST="$TEST dpkg-dev"

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

# apt-get source needs deb-src entries: the Debian archive's, added once.
ensure_deb_src() {
	have_deb_src && return 0
	# shellcheck disable=SC1091 # the running system's
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	echo "install-deps: adding deb-src entries for $codename"
	cat >/etc/apt/sources.list.d/slurm-vm-src.sources <<-EOF
	# Added by slurm-vm scripts/install-deps.sh (apt-get source)
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
	ensure_deb_src
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

# OpenSM's upstream source of the installed libopensm, unpacked (no
# build). Only the orig tarball: the mirror may lack the Debian diff
# (opensm_3.3.23-2.debian.tar.xz answers 404 here), which does not touch the
# partition parser.
fetch_opensm_source() {
	dir=$1
	pkg_version=$(dpkg-query -W -f='${source:Version}' libopensm-dev)
	upstream=${pkg_version%-*}
	if [ -f "$dir/opensm/osm_prtn_config.c" ] && [ "$(cat "$dir/.version" 2>/dev/null)" = "$pkg_version" ]; then
		echo "install-deps: $dir: OpenSM $upstream source"
		return 0
	fi
	ensure_deb_src
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/opensm-src.XXXXXX")
	line=$( (cd "$tmp" && apt-get source --print-uris -qq "opensm=$pkg_version") | grep "orig.tar" || true)
	if [ -z "$line" ]; then
		apt-get update -qq
		line=$( (cd "$tmp" && apt-get source --print-uris -qq "opensm=$pkg_version") | grep "orig.tar" || true)
	fi
	echo "install-deps: OpenSM $upstream: ${line%% *}"
	# 'URL' NAME SIZE SHA256:HEX
	python3 - "$tmp" $line <<-'PYEOF' || {
	import hashlib, sys, urllib.request
	tmp, url, name, size, digest = sys.argv[1:6]
	data = urllib.request.urlopen(url.strip("'"), timeout=120).read()
	algo, want = digest.split(":")
	if hashlib.new(algo.lower(), data).hexdigest() != want:
	    sys.exit("checksum mismatch for " + name)
	open(tmp + "/" + name, "wb").write(data)
	PYEOF
		rm -rf "$tmp"
		echo "install-deps: cannot fetch the source of opensm $pkg_version" >&2
		return 1
	}
	tar -xf "$tmp"/opensm_*.orig.tar.* -C "$tmp"
	rm -rf "$dir"
	mkdir -p "$(dirname "$dir")"
	mv "$tmp/opensm-$upstream" "$dir"
	echo "$pkg_version" >"$dir/.version"
	rm -rf "$tmp"
	echo "install-deps: $dir: OpenSM $upstream source"
}

missing=""
for p in $BUILD $TEST; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	[ -z "$slurm_source" ] || fetch_slurm_source "$slurm_source"
	[ -z "$opensm_source" ] || fetch_opensm_source "$opensm_source"
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
[ -z "$opensm_source" ] || fetch_opensm_source "$opensm_source"
# cloud-init is here only for `cloud-init schema` (the seed's tests); it has
# no daemon, but it must never configure this host at its next boot.
case " $missing " in
*" cloud-init "*) mkdir -p /etc/cloud && touch /etc/cloud/cloud-init.disabled ;;
esac
exit 0
