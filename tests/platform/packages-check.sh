#!/bin/bash
# Builds slurm-vm's Debian packages inside a Debian suite's platform root
# (tests/platform/root.sh), against that suite's Slurm, as
# tests/packaging.sh builds them on the host: scripts/build-debs.sh, that is
# dpkg-buildpackage as nobody with the package's own `make check`
# (nocheck not set) and Debian's hardening flags, then lintian with errors
# and warnings failing.
#
#   tests/platform/packages-check.sh SUITE     (trixie: Slurm 24.11)
#
# The root (debian/control's Build-Depends as SUITE names them, the tools
# the unit tests run, debhelper, dpkg-dev, fakeroot, lintian and git for
# build-debs.sh's list of tracked files) is built or reused by
# tests/platform/root.sh in its own cache directory
# (tests/platform/cache/packages; SVM_ROOT_CACHE=DIR elsewhere): root.sh
# keeps one root per suite and cache directory, so this list must not
# replace build-check.sh's root. The checkout's tracked files (as they are
# in the work tree) are copied into the root's scratch overlay
# (SVM_BUILD_SCRATCH, default /var/tmp/slurm-vm-packages-check/SUITE,
# emptied first); the .deb files, the build log and lintian's verdict stay
# in its upper/var/tmp/svm-debs. gres/ibvf is built against the suite's
# Slurm source (tests/platform/slurm-source.sh, cached; SLURM_SOURCE for
# debian/rules); where the mirror has none, with
# DEB_BUILD_PROFILES=pkg.slurm-vm.nogresibvf, saying so. Needs root.
# Prints the time each part took. Measured on the shared 2-core machine
# (trixie): the root 364 s (once; cached), the build, its make check (33
# pass, 4 skip) and lintian 250-830 s (the longer alongside another build).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
root_tool=${SVM_ROOT_TOOL:-$here/root.sh}
suite=${1:-}
case "$suite" in
trixie | forky | bookworm) ;;
*)
	echo "usage: tests/platform/packages-check.sh trixie|forky|bookworm" >&2
	exit 2
	;;
esac
scratch=${SVM_BUILD_SCRATCH:-/var/tmp/slurm-vm-packages-check/$suite}
export SVM_ROOT_CACHE=${SVM_ROOT_CACHE:-$here/cache/packages}

# debian/control's Build-Depends, the packaging tools build-debs.sh wants,
# and build-check.sh's tools the unit tests run.
pkgs=(debhelper dpkg-dev fakeroot lintian git build-essential
	autoconf automake libtool pkgconf libslurm-dev slurmd
	libvirt-dev libhwloc-dev libpci-dev libxml2-dev libcmocka-dev
	libibverbs-dev genisoimage hwloc libxml2-utils lua5.1 python3
	python3-yaml qemu-utils iproute2 procps)

start=$(date +%s)
root=$("$root_tool" build "$suite" "${pkgs[@]}")
echo "packages-check: $suite root ready in $(($(date +%s) - start)) s" >&2

start=$(date +%s)
rc=0
slurm_src=$("$here/slurm-source.sh" "$root") || rc=$?
case $rc in
0) echo "packages-check: Slurm's source for gres/ibvf ready in $(($(date +%s) - start)) s" >&2 ;;
3) echo "packages-check: SKIP the gres/ibvf package on $suite: no source of its Slurm (see above)" >&2 ;;
*) exit "$rc" ;;
esac

rm -rf --one-file-system "$scratch"
mkdir -p "$scratch"
# build-debs.sh packs the tracked files (git ls-files): the worktree's .git
# is not inside the root, so they go in as a tar file.
git -C "$src" ls-files -z | (cd "$src" && xargs -0 tar -cf - --no-recursion) \
	>"$scratch/src.tar"
start=$(date +%s)
# shellcheck disable=SC2016 # expanded inside the root
"$root_tool" enter --scratch "$scratch/root" --bind "$scratch/src.tar:/var/tmp/src.tar" \
	${slurm_src:+--bind "$slurm_src:$slurm_src"} "$root" -- bash -c '
set -eu
dpkg-query -W libslurm-dev slurmd slurm-wlm-basic-plugins | sed "s/^/packages-check: /"
rm -rf /var/tmp/svm-src /var/tmp/svm-debs
mkdir -p /var/tmp/svm-src
tar -C /var/tmp/svm-src -xf /var/tmp/src.tar
cd /var/tmp/svm-src
git init -q . && git add -A
if [ -n "$1" ]; then
	export SLURM_SOURCE=$1
else
	export DEB_BUILD_PROFILES=pkg.slurm-vm.nogresibvf
fi
nice scripts/build-debs.sh /var/tmp/svm-debs
for d in /var/tmp/svm-debs/*.deb; do
	case "$d" in *-dbgsym_*) continue ;; esac
	echo "packages-check: ${d##*/}: $(dpkg-deb -f "$d" Depends)"
done
echo "packages-check: dpkg-buildpackage, make check and lintian in $(($(date +%s) - $2)) s" >&2
' packages-check "$slurm_src" "$start"
