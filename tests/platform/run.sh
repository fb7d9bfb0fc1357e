#!/bin/bash
# Runs a command of the suite on a platform: a Debian suite's Slurm,
# libvirtd, qemu and MPI, inside that suite's root (tests/platform/root.sh).
#
#   tests/platform/run.sh SUITE [--] COMMAND [ARG...]
#   tests/platform/run.sh --prepare SUITE   the root and the Slurm source only
#   tests/platform/run.sh --keep SUITE [--] COMMAND [ARG...]
#                         in the scratch overlay an earlier run left (its
#                         build, and what its COMMAND made), building only
#                         when it has no build
#
# SUITE: trixie (Slurm 24.11), forky (26.05) or bookworm (22.05, the host's
# release, in a clean root). Builds or reuses the suite's cluster root (the
# packages of scripts/install-deps.sh that the suite has: build
# dependencies, slurmctld, slurmd, libvirtd, qemu, MPI), enters it with a
# scratch overlay (each run starts from the same clean root), copies this
# source tree into it, builds slurm-vm there with --enable-werror, and runs
# COMMAND in the copy with BUILD_DIR set to that build. So
#
#   tests/platform/run.sh trixie -- tests/cluster/run.sh test_headline
#
# runs a cluster test on Slurm 24.11 with trixie's libvirtd and qemu: the
# harness, unchanged, starts its own daemons under the root's private /run.
#
# The test guest is the host's (tests/guest/build.sh with the host build's
# agent: a static program, the same source, independent of the platform's
# libraries), bound in read-only as HARNESS_GUEST_DIR; likewise the stock
# cloud images when they were built (tests/guest/cache-cloud:
# HARNESS_CLOUD_DIR, cache-cloud-trixie and -forky:
# HARNESS_CLOUD_TRIXIE_DIR and HARNESS_CLOUD_FORKY_DIR). Build
# them first.
#
# Environment: SVM_ROOT_CACHE as for root.sh (the cluster roots go in its
# cluster/ subdirectory), SVM_PLATFORM_SCRATCH
# (default /var/tmp/slurm-vm-platform/SUITE: the overlay's writes and the
# build, emptied first), SVM_SLURM_SOURCE (a configured Slurm source tree of
# the suite's release, on the host; default tests/platform/slurm-source.sh's:
# gres/ibvf is built from it).
# Needs root. Exit status: COMMAND's, or 1 when the root or the build failed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
prepare=0 keep=0
case "${1:-}" in
--prepare) prepare=1 && shift ;;
--keep) keep=1 && shift ;;
esac
suite=${1:-}
[ $# -ge 2 ] || [ "$prepare" = 1 ] || {
	sed -n '2,14s/^# \{0,1\}//p' "$0" >&2
	exit 2
}
shift
[ "${1:-}" != -- ] || shift
case "$suite" in
bookworm | trixie | forky) ;;
*)
	echo "platform/run.sh: unknown suite '$suite' (trixie, forky, bookworm)" >&2
	exit 2
	;;
esac
scratch=${SVM_PLATFORM_SCRATCH:-/var/tmp/slurm-vm-platform/$suite}
export SVM_ROOT_CACHE=${SVM_ROOT_CACHE:-$here/cache}/cluster

# scripts/install-deps.sh's BUILD and TEST lists as every suite names
# them, without clang (its version is in the name; the fuzz build is the
# host's), mmdebstrap and grub (images are built on the host) and
# the linter shellcheck (the host lints); with the packaging tools of
# scripts/build-debs.sh (tests/platform/debs.sh), passwd (forky's
# minimal root has no useradd), the Rust virtiofsd of the shares over
# virtiofs (test_shares_virtiofs.sh), and slurmdbd with MariaDB for the
# cluster's accounting (HARNESS_ACCOUNTING=1, test_accounting.sh).
pkgs=(build-essential autoconf automake libtool pkg-config
	libslurm-dev libvirt-dev libhwloc-dev libpci-dev libxml2-dev
	libibverbs-dev libcmocka-dev libmpich-dev libopenmpi-dev
	libopensm-dev libibumad-dev
	slurmd slurmctld slurm-client libvirt-daemon libvirt-daemon-driver-qemu
	libpmix-dev openmpi-bin libvirt-clients qemu-system-x86 qemu-utils
	hwloc libxml2-utils genisoimage cloud-init attr ovmf e2fsprogs cpio
	xz-utils zstd kmod iproute2 tmux procps psmisc util-linux python3
	python3-yaml nftables iputils-ping fdisk lua5.1 file passwd
	debhelper dpkg-dev fakeroot lintian git virtiofsd slurmdbd mariadb-server)

t0=$(date +%s)
root=$("$here/root.sh" build "$suite" "${pkgs[@]}") || exit 1
echo "platform/run.sh: $suite root ready in $(($(date +%s) - t0)) s" >&2

binds=(--bind "$src:/src")
guest=$src/tests/guest/cache
[ -f "$guest/stamp" ] && binds+=(--bind "$guest:/var/tmp/svm-guest")
cloud=$src/tests/guest/cache-cloud
[ -d "$cloud" ] && binds+=(--bind "$cloud:/var/tmp/svm-cloud")
for s in trixie forky; do
	[ ! -d "$cloud-$s" ] || binds+=(--bind "$cloud-$s:/var/tmp/svm-cloud-$s")
done
# gres/ibvf is built from the suite's Slurm source (slurm-source.sh, cached);
# where the mirror has none (status 3: forky's 26.05.5) without it.
slurm_source="" rc=0
host_source=${SVM_SLURM_SOURCE:-$("$here/slurm-source.sh" "$root")} || rc=$?
case "$rc" in
0)
	binds+=(--bind "$host_source:/var/tmp/svm-slurm-source")
	slurm_source=/var/tmp/svm-slurm-source
	;;
3) echo "platform/run.sh: $suite: no source of its Slurm, gres/ibvf not built" >&2 ;;
*) exit 1 ;;
esac
[ "$prepare" = 0 ] || exit 0

[ "$keep" = 1 ] || rm -rf --one-file-system "$scratch"
# shellcheck disable=SC2016 # expanded inside the root
exec "$here/root.sh" enter --scratch "$scratch" "${binds[@]}" "$root" -- \
	env SVM_SUITE="$suite" SVM_SLURM_SOURCE="$slurm_source" bash -c '
set -eu
t0=$(date +%s)
if [ -f /var/tmp/svm-build/.svm-built ]; then
	echo "platform/run.sh: $SVM_SUITE: the build of an earlier run (--keep)" >&2
else
	# autoreconf writes into the source: a copy, not the bound tree.
	rm -rf /var/tmp/svm-src /var/tmp/svm-build
	mkdir -p /var/tmp/svm-src /var/tmp/svm-build
	tar -C /src --exclude=./.git --exclude="./build*" \
		--exclude=./tests/guest/cache --exclude="./tests/guest/cache-*" \
		--exclude=./tests/platform/cache -cf - . | tar -C /var/tmp/svm-src -xf -
	# The files of the source, as scripts/build-debs.sh lists them (git).
	cd /var/tmp/svm-src && git init -q . && git add -A
	autoreconf -fi >/dev/null 2>&1
	cd /var/tmp/svm-build
	with=
	[ -z "$SVM_SLURM_SOURCE" ] || with=--with-slurm-source=$SVM_SLURM_SOURCE
	/var/tmp/svm-src/configure --prefix=/usr --sysconfdir=/etc \
		--localstatedir=/var --enable-werror $with >configure.out 2>&1 ||
		{ tail -30 configure.out >&2; exit 1; }
	# With the test programs (make check TESTS=): cluster tests run some.
	nice make -j"$(nproc)" check TESTS= >make.out 2>&1 ||
		{ grep -B2 -A8 "error" make.out | head -80 >&2; exit 1; }
	echo "platform/run.sh: $SVM_SUITE: slurm-vm built against Slurm $(slurmd -V | cut -d" " -f2) in $(($(date +%s) - t0)) s" >&2
	: >/var/tmp/svm-build/.svm-built
fi
cd /var/tmp/svm-src
export BUILD_DIR=/var/tmp/svm-build SVM_PLATFORM=$SVM_SUITE
[ ! -f /var/tmp/svm-guest/stamp ] || export HARNESS_GUEST_DIR=/var/tmp/svm-guest
[ ! -d /var/tmp/svm-cloud ] || export HARNESS_CLOUD_DIR=/var/tmp/svm-cloud
[ ! -d /var/tmp/svm-cloud-trixie ] ||
	export HARNESS_CLOUD_TRIXIE_DIR=/var/tmp/svm-cloud-trixie
[ ! -d /var/tmp/svm-cloud-forky ] ||
	export HARNESS_CLOUD_FORKY_DIR=/var/tmp/svm-cloud-forky
exec "$@"
' svm-platform "$@"
