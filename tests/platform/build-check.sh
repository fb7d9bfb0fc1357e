#!/bin/bash
# Builds slurm-vm with --enable-werror against the Slurm of a Debian suite,
# runs its unit tests (make check) there, and checks that slurmd loads the
# gres/ibvf plugin built from that Slurm's source
# (tests/platform/gres-ibvf-check.sh), in the suite's platform root:
#
#   tests/platform/build-check.sh SUITE     (trixie: Slurm 24.11, forky: 26.05)
#
# tests/platform/run.sh does the root, the Slurm source and the build; where
# the mirror has no source of the suite's Slurm (forky's 26.05.5) gres/ibvf
# is skipped, saying so. Needs root. Measured on the 2-core machine: a root
# in 140-360 s (once; cached), Slurm's source in 100-170 s (once; cached),
# the build 85-130 s, make check 40-90 s, slurmd's load of gres/ibvf 1-3 s.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# = 1 ] || {
	echo "usage: tests/platform/build-check.sh trixie|forky|bookworm" >&2
	exit 2
}
# shellcheck disable=SC2016 # expanded inside the root
exec "$here/run.sh" "$1" -- bash -c '
set -eu
t=$(date +%s)
make -C "$BUILD_DIR" -j"$(nproc)" check >"$BUILD_DIR/check.out" 2>&1 ||
	{ tail -n 80 "$BUILD_DIR/test-suite.log"; exit 1; }
grep -E "^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):" "$BUILD_DIR/check.out"
echo "build-check: make check in $(($(date +%s) - t)) s" >&2
if [ -z "$SVM_SLURM_SOURCE" ]; then
	echo "build-check: SKIP gres/ibvf on $SVM_PLATFORM: no source of its Slurm" >&2
	exit 0
fi
tests/platform/gres-ibvf-check.sh "$BUILD_DIR" .'
