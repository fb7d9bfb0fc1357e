#!/bin/sh
# gres_vgpu/compile-check.sh TREE: compiles the Slurm half of gres/ibvf
# against a configured Slurm source tree of any release, to check the
# SLURM_VERSION_NUMBER guards without installing that Slurm (a plugin can
# only be linked and loaded against the installed version, see configure).
# For example the trixie source (24.11):
#   apt-get source slurm-wlm (from a trixie deb-src), ./configure in it
#   gres_vgpu/compile-check.sh .../slurm-24.11.5
set -eu
tree=${1:?usage: gres_vgpu/compile-check.sh CONFIGURED-SLURM-TREE}
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$tree/config.h" ] || { echo "compile-check: $tree has no config.h: run its ./configure" >&2; exit 2; }
version=$(sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"/\1/p' "$tree/config.h")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for f in gres_ibvf.c slurm_gres_common.c; do
	${CC:-cc} -std=gnu11 -fPIC -Wall -Werror -Wno-unused-function \
		-Wno-pointer-sign -iquote "$tree" -I"$tree" -DSLURM_PLUGIN_DEBUG \
		-c "$here/$f" -o "$out/${f%.c}.o"
done
echo "compile-check: gres/ibvf's Slurm half compiles against Slurm $version; entry points:"
nm "$out/gres_ibvf.o" | sed -n 's/.* T \(gres_p_.*\)/  \1/p'
