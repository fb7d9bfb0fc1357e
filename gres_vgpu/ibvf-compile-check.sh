#!/bin/sh
# gres_vgpu/ibvf-compile-check.sh TREE: compiles the Slurm half of gres/ibvf
# against a configured Slurm source tree of any release, to check the
# SLURM_VERSION_NUMBER guards without installing that Slurm (a plugin can
# only be linked and loaded against the installed version, see configure),
# and that it defines exactly the entry points that release looks up. For
# example a release's tag, configured (only config.h is used):
#   git -C slurm archive slurm-23-02-8-1 | tar -C s23 -xf -; (cd s23 && ./configure)
#   gres_vgpu/ibvf-compile-check.sh s23
# tests/platform/slurm-source.sh makes a platform's tree (24.11, 26.05).
set -eu
tree=${1:?usage: gres_vgpu/ibvf-compile-check.sh CONFIGURED-SLURM-TREE}
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
# The entry points Slurm's GRES interface looks up (plugin_context_create
# fails on a missing one: slurmd would not load the plugin), against ours.
for f in src/interfaces/gres.c src/common/gres.c; do
	[ -f "$tree/$f" ] && break
done
sed -n '/syms\[\] = {/,/};/p' "$tree/$f" | grep -o '"gres_p_[a-z_]*"' | tr -d '"' | sort >"$out/wanted"
nm "$out/gres_ibvf.o" | sed -n 's/.* T \(gres_p_.*\)/\1/p' | sort >"$out/defined"
[ -s "$out/wanted" ] || { echo "compile-check: no syms[] in $tree/$f" >&2; exit 2; }
if ! cmp -s "$out/wanted" "$out/defined"; then
	echo "compile-check: Slurm $version looks up (<) and gres_ibvf.c defines (>) different entry points:" >&2
	diff "$out/wanted" "$out/defined" | grep '^[<>]' >&2
	exit 1
fi
echo "compile-check: gres/ibvf's Slurm half compiles against Slurm $version with its $(wc -l <"$out/wanted") entry points"
