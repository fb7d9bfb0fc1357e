#!/bin/bash
# check-config's mpi/pmix (pmix.c): the PMIx library of the release.
. "$(dirname "$0")/test-setup.sh"

# mpi/pmix of the distribution's PMIx (mpi_pmix_v5.so in Debian 13) and the
# library its Slurm release opens: 22.05 libpmix.so (libpmix-dev), 23.11
# and later libpmix.so.2 (libpmix2t64).
if [ "$release" -ge 2311 ]; then
	lib=libpmix.so.2 pkg=libpmix2t64
else
	lib=libpmix.so pkg=libpmix-dev
fi
: >"$cc/plugins/mpi_pmix_v5.so"
check
grep -qF "problem: $cc/plugins/mpi_pmix_v5.so opens $cc/pmix2/lib/$lib, which is missing" "$out" ||
	fail "mpi_pmix_v5.so without its $lib not reported"
[ "$(fix_for "mpi_pmix_v5.so opens")" = "install $pkg on every node (apt-get install $pkg)" ] ||
	fail "the PMIx fix is: $(fix_for "mpi_pmix_v5.so opens")"
mkdir -p "$cc/pmix2/lib" && : >"$cc/pmix2/lib/$lib"
check
grep -qF "ok:      srun --mpi=pmix: $cc/pmix2/lib/$lib is there" "$out" ||
	fail "with $lib there, mpi/pmix is still reported"
rm -r "$cc/plugins/mpi_pmix_v5.so" "$cc/pmix2"
exit 0
