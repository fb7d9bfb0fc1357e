#!/bin/bash
# Builds slurm-vm's Debian packages inside a Debian suite's platform root,
# against that suite's Slurm, as tests/packaging.sh builds them on the host
# (tests/platform/debs.sh: scripts/build-debs.sh, that is dpkg-buildpackage
# as nobody with the package's own make check and Debian's hardening
# flags, then lintian with errors and warnings failing), and prints each
# package's Depends:
#
#   tests/platform/packages-check.sh SUITE     (trixie: Slurm 24.11)
#
# The root, the Slurm source and a -Werror build come from
# tests/platform/run.sh (its scratch overlay keeps the packages in
# upper/var/tmp/svm-debs). Needs root. Measured on the shared 2-core
# machine (trixie): the build, its make check (33 pass, 4 skip) and
# lintian 250-830 s.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# = 1 ] || {
	echo "usage: tests/platform/packages-check.sh trixie|forky|bookworm" >&2
	exit 2
}
exec "$here/run.sh" "$1" -- tests/platform/debs.sh /var/tmp/svm-debs
