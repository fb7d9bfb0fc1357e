#!/bin/bash
# Builds slurm-vm with --enable-werror and runs its unit tests (make check)
# against the Slurm of a Debian suite, inside that suite's platform root
# (tests/platform/root.sh).
#
#   tests/platform/build-check.sh SUITE     (trixie: Slurm 24.11, forky: 26.05)
#
# The root (the build dependencies of scripts/install-deps.sh for SUITE) is
# built or reused by tests/platform/root.sh (SVM_ROOT_TOOL=PATH to use
# another copy of it; SVM_ROOT_CACHE as for it). The source tree is bound
# read-only at /src; the build is out of tree in the root's scratch
# overlay (SVM_BUILD_SCRATCH, default /var/tmp/slurm-vm-build-check/SUITE,
# emptied first), so the host's build/ is untouched. gres/ibvf is built
# against the suite's Slurm source (tests/platform/slurm-source.sh, cached)
# and slurmd must load it (tests/platform/gres-ibvf-check.sh: slurmd -G lists
# the VFs only the plugin detects); where the mirror has no source of that
# Slurm (forky's 26.05.5 here) that part is skipped, saying so. Needs root.
# Prints the time each part took.
#
# Measured on the 2-core machine (shared): a root is built in 140-360 s
# (once; cached), Slurm's source in 100-170 s (once; cached), the build and
# make check take 160-290 s, slurmd's load of gres/ibvf 1-3 s. trixie: 33
# pass (gres/ibvf's included), 2 skip; forky: 31 pass, 3 skip, gres/ibvf
# skipped (no 26.05.5 source on the mirror). The skips: test_jobnet.sh's
# namespace part (no nftables in the root), test_opensm_parse.sh (no OpenSM
# source), and on forky test_channel_local.sh (its root has no useradd:
# passwd).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
root_tool=${SVM_ROOT_TOOL:-$here/root.sh}
suite=${1:-}
case "$suite" in
trixie | forky | bookworm) ;;
*)
	echo "usage: tests/platform/build-check.sh trixie|forky|bookworm" >&2
	exit 2
	;;
esac
scratch=${SVM_BUILD_SCRATCH:-/var/tmp/slurm-vm-build-check/$suite}

# scripts/install-deps.sh's BUILD list without what is named by the host's
# release (clang-14, llvm-14) or serves only the cluster and gres/ibvf
# tests, plus the tools the unit tests run (hwloc, xmllint, lua5.1) and configure
# checks for (genisoimage).
pkgs=(build-essential autoconf automake libtool pkg-config
	libslurm-dev libvirt-dev libhwloc-dev libpci-dev libxml2-dev
	libibverbs-dev libcmocka-dev slurmd
	genisoimage hwloc libxml2-utils lua5.1 python3 python3-yaml qemu-utils
	iproute2 procps)

start=$(date +%s)
root=$("$root_tool" build "$suite" "${pkgs[@]}")
echo "build-check: $suite root ready in $(($(date +%s) - start)) s" >&2

start=$(date +%s)
rc=0
slurm_src=$("$here/slurm-source.sh" "$root") || rc=$?
case $rc in
0) echo "build-check: Slurm's source for gres/ibvf ready in $(($(date +%s) - start)) s" >&2 ;;
# Not on the mirror: the rest is still checked, gres/ibvf said loudly not.
3) echo "build-check: SKIP gres/ibvf on $suite: no source of its Slurm (see above)" >&2 ;;
*) exit "$rc" ;;
esac

rm -rf --one-file-system "$scratch"
start=$(date +%s)
# shellcheck disable=SC2016 # expanded inside the root
"$root_tool" enter --scratch "$scratch" --bind "$src:/src" \
	${slurm_src:+--bind "$slurm_src:$slurm_src"} "$root" -- bash -c '
set -eu
grep -h "define SLURM_VERSION_NUMBER" /usr/include/slurm/slurm_version.h
rm -rf /var/tmp/svm-src /var/tmp/svm-build
# autoreconf writes into the source: work on a copy, not the bound tree.
mkdir -p /var/tmp/svm-src /var/tmp/svm-build
tar -C /src --exclude=./.git --exclude="./build*" --exclude=./tests/platform/cache \
	-cf - . | tar -C /var/tmp/svm-src -xf -
cd /var/tmp/svm-src && autoreconf -fi >/dev/null 2>&1
cd /var/tmp/svm-build
/var/tmp/svm-src/configure --prefix=/usr --sysconfdir=/etc \
	--localstatedir=/var --enable-werror ${1:+--with-slurm-source="$1"} \
	>configure.out 2>&1 ||
	{ tail -30 configure.out; exit 1; }
nice make -j2 >make.out 2>&1 || { grep -B2 -A8 "error" make.out | head -80; exit 1; }
nice make -j2 check >check.out 2>&1 ||
	{ tail -40 check.out; cat test-suite.log | tail -80; exit 1; }
grep -E "^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):" check.out
echo "build-check: build and make check in $(($(date +%s) - $2)) s" >&2
[ -n "$1" ] || exit 0
t=$(date +%s)
/src/tests/platform/gres-ibvf-check.sh /var/tmp/svm-build /var/tmp/svm-src
echo "build-check: slurmd loads gres/ibvf: checked in $(($(date +%s) - t)) s" >&2
' build-check "$slurm_src" "$start"
