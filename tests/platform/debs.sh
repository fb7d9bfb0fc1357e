#!/bin/bash
# Inside a platform root (tests/platform/run.sh SUITE -- tests/platform/debs.sh
# OUT): builds slurm-vm's Debian packages against the suite's Slurm with
# scripts/build-debs.sh (dpkg-buildpackage as nobody, Debian's hardening
# flags, lintian failing on errors and warnings) into OUT. gres/ibvf is
# built from the Slurm source run.sh bound in (SVM_SLURM_SOURCE); without
# one (forky: the mirror has no 26.05.5 source) the package is left out
# with the pkg.slurm-vm.nogresibvf profile, saying so. DEB_BUILD_OPTIONS
# passes through (CI: nocheck, make check having run on the -Werror build
# of the same source in the same root).
set -euo pipefail

out=${1:?usage: tests/platform/debs.sh OUT}
[ -n "${SVM_PLATFORM:-}" ] || {
	echo "platform/debs.sh: run it inside a platform root (tests/platform/run.sh SUITE -- $0 OUT)" >&2
	exit 2
}
t0=$(date +%s)
if [ -n "${SVM_SLURM_SOURCE:-}" ]; then
	export SLURM_SOURCE=$SVM_SLURM_SOURCE
else
	echo "platform/debs.sh: $SVM_PLATFORM: no Slurm source, no gres/ibvf package" >&2
	export DEB_BUILD_PROFILES=pkg.slurm-vm.nogresibvf
fi
dpkg-query -W libslurm-dev slurmd slurm-wlm-basic-plugins | sed "s/^/platform\/debs.sh: /"
nice scripts/build-debs.sh "$out"
for d in "$out"/*.deb; do
	case "$d" in *-dbgsym_*) continue ;; esac
	echo "platform/debs.sh: ${d##*/}: $(dpkg-deb -f "$d" Depends)"
done
echo "platform/debs.sh: $SVM_PLATFORM: packages built in $(($(date +%s) - t0)) s" >&2
