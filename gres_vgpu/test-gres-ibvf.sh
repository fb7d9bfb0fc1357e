#!/bin/sh
# make check: gres_ibvf.so loads with every symbol resolved against the
# installed libslurmfull (RTLD_NOW) and has all entry points. Skips (77)
# without slurmd.
set -eu
slurmd=$(command -v slurmd) || { echo "SKIP: no slurmd"; exit 77; }
lib=$(ldd "$slurmd" | sed -n 's/.*libslurmfull.so => \([^ ]*\) .*/\1/p')
[ -n "$lib" ] || { echo "SKIP: slurmd links no libslurmfull.so"; exit 77; }
exec gres_vgpu/ibvf-dlopen "$lib" gres_vgpu/.libs/gres_ibvf.so
