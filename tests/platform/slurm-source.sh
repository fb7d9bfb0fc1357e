#!/bin/bash
# The configured Slurm source tree of a platform root's Slurm, for building
# gres/ibvf there (configure --with-slurm-source=DIR): exactly the version
# of the root's libslurm-dev, with the config.h of Slurm's own configure run
# inside the root (its compiler and libraries), as
# scripts/install-deps.sh --slurm-source makes the host's.
#
#   tests/platform/slurm-source.sh ROOT
#       ROOT: a root of tests/platform/root.sh build with libslurm-dev and
#       build-essential. Prints the tree's directory,
#       /var/cache/slurm-vm/slurm-wlm-VERSION-SUITE-HASH
#       (SVM_SLURM_SOURCE_CACHE=DIR elsewhere): cached by what makes it (the
#       package version, the suite, this script), reused across runs and
#       roots.
#
# The mirror has no .dsc or Debian diff for every suite (trixie's give 404)
# but serves the orig tarball: that is what is fetched, from the Directory
# the suite's Sources index names, and kept in the cache directory. Where
# the mirror lacks it too (forky's slurm-wlm_26.05.5.orig.tar.gz, 404 here)
# the script stops with status 3, naming the file and its sha256: put a
# copy of it into the cache directory and run again. The Sources index is
# checked against the sha256 in the root's InRelease (apt checked its
# signature when it built the root), the tarball against the Sources
# index's sha256, the unpacked tree's and its config.h's version against
# the root's slurm/slurm_version.h. Debian's patches (not on the mirror)
# are not applied: the plugin is built against the internal headers of
# upstream's release of the same version (slurmd is that plus the patches).
# Needs root (tests/platform/root.sh enter), curl, xz.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root_tool=${SVM_ROOT_TOOL:-$here/root.sh}
cache=${SVM_SLURM_SOURCE_CACHE:-/var/cache/slurm-vm}

die() {
	echo "platform/slurm-source.sh: $*" >&2
	exit 1
}
say() { echo "platform/slurm-source.sh: $*" >&2; }

[ $# = 1 ] || die "usage: tests/platform/slurm-source.sh ROOT"
root=$(realpath "$1")
[ -f "$root/.svm-root-complete" ] || die "$root is not a root built by root.sh build"

suite=$(sed -n 's/^VERSION_CODENAME=//p' "$root/etc/os-release")
pkg_version=$(awk '/^Package: libslurm-dev$/ { p = 1 } p && /^Version: / { print $2; exit }' \
	"$root/var/lib/dpkg/status")
[ -n "$pkg_version" ] || die "$root has no libslurm-dev"
upstream=${pkg_version#*:}
upstream=${upstream%-*}
header_number=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' \
	"$root/usr/include/slurm/slurm_version.h")
IFS=. read -r major minor micro <<<"$upstream"
[ $((header_number)) = $((major << 16 | minor << 8 | micro)) ] ||
	die "libslurm-dev $pkg_version but slurm_version.h says $header_number"

# Slurm's configure as Debian's debian/rules runs it, for the options that
# reach config.h (install-deps.sh's fetch_slurm_source); no munge: a GRES
# plugin does not need it, and configure stops without its headers since 23.11.
# shellcheck disable=SC2016 # expanded inside the root
configure_cmd='./configure --prefix=/usr --libdir=/usr/lib/$(gcc -print-multiarch)
	--sysconfdir=/etc/slurm --without-rpath --disable-debug --enable-multiple-slurmd
	--disable-dependency-tracking --without-munge'

sum=$(
	{
		echo "$suite $pkg_version"
		echo "$configure_cmd"
		sed -n '/^# ---- what makes the tree$/,$p' "$0"
	} | sha256sum | cut -c1-16
)
dir=$cache/slurm-wlm-$upstream-$suite-$sum
if [ -f "$dir/.svm-source-complete" ]; then
	say "Slurm $upstream of $suite: up to date"
	echo "$dir"
	exit 0
fi

# ---- what makes the tree
start=$(date +%s)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/svm-slurm-src.XXXXXX")
trap 'rm -rf --one-file-system "$tmp"' EXIT

# The root's apt sources: "URI SUITE" of each deb line.
mapfile -t sources < <(cat "$root"/etc/apt/sources.list "$root"/etc/apt/sources.list.d/*.list 2>/dev/null |
	sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]\+\)[[:space:]]\+\([^[:space:]]\+\).*/\2 \3/p')
[ ${#sources[@]} -gt 0 ] || die "no deb lines in $root/etc/apt/sources.list"

# The slurm-wlm stanza of version $pkg_version in one of the suites' Sources.
stanza="" base=""
for s in "${sources[@]}"; do
	uri=${s%% *} dist=${s#* }
	uri=${uri%/}
	inrelease=$root/var/lib/apt/lists/$(echo "${uri#*://}" | tr / _)_dists_${dist}_InRelease
	[ -f "$inrelease" ] || die "no $inrelease: the root's apt lists are gone"
	want=$(awk '$3 == "main/source/Sources.xz" && length($1) == 64 { print $1 }' "$inrelease")
	[ -n "$want" ] || die "$inrelease lists no main/source/Sources.xz"
	curl -fsS --retry 3 -o "$tmp/Sources.xz" "$uri/dists/$dist/main/source/Sources.xz" ||
		die "cannot fetch $uri/dists/$dist/main/source/Sources.xz"
	[ "$(sha256sum <"$tmp/Sources.xz" | cut -d' ' -f1)" = "$want" ] ||
		die "$uri/dists/$dist/main/source/Sources.xz does not match $inrelease"
	xz -dc "$tmp/Sources.xz" >"$tmp/Sources"
	stanza=$(awk -v v="$pkg_version" '
		/^Package: / { keep = ($2 == "slurm-wlm"); text = "" }
		keep { text = text $0 "\n" }
		/^$/ && keep && index(text, "\nVersion: " v "\n") { printf "%s", text; exit }' "$tmp/Sources")
	if [ -n "$stanza" ]; then
		base=$uri
		break
	fi
done
[ -n "$stanza" ] || die "no slurm-wlm $pkg_version in the Sources of ${sources[*]}"
directory=$(sed -n 's/^Directory: //p' <<<"$stanza")
# " SHA256 SIZE NAME" under Checksums-Sha256:
read -r orig_sha orig_name < <(sed -n '/^Checksums-Sha256:/,/^[^ ]/p' <<<"$stanza" |
	awk '$3 ~ /\.orig\.tar\./ { print $1, $3; exit }')
[ -n "${orig_name:-}" ] || die "the Sources stanza of slurm-wlm $pkg_version names no orig tarball"
# A copy in the cache first (kept from an earlier fetch, or put there by
# hand where the mirror lacks it: forky's 26.05.5 answers 404 here).
if [ -f "$cache/$orig_name" ]; then
	cp "$cache/$orig_name" "$tmp/$orig_name"
else
	say "fetching $base/$directory/$orig_name"
	curl -fsS --retry 3 -o "$tmp/$orig_name" "$base/$directory/$orig_name" ||
		{
			say "cannot fetch $base/$directory/$orig_name (sha256 $orig_sha): put that file in $cache"
			exit 3
		}
fi
[ "$(sha256sum <"$tmp/$orig_name" | cut -d' ' -f1)" = "$orig_sha" ] ||
	die "$orig_name does not match the sha256 of the Sources index ($orig_sha)"
mkdir -p "$cache"
[ -f "$cache/$orig_name" ] || cp "$tmp/$orig_name" "$cache/$orig_name"

mkdir -p "$tmp/tree"
tar -C "$tmp/tree" --strip-components=1 -xf "$tmp/$orig_name"
tree_version=$(awk '$1 == "Micro:" { m = $2 } $1 == "Major:" { M = $2 } $1 == "Minor:" { n = $2 }
	END { print M "." n "." m }' "$tmp/tree/META")
[ "$tree_version" = "$upstream" ] || die "$orig_name unpacks Slurm $tree_version, not $upstream"

say "configuring Slurm $upstream in the $suite root (for its config.h)"
# shellcheck disable=SC2016 # expanded inside the root
"$root_tool" enter --scratch "$tmp/scratch" --bind "$tmp/tree:/slurm-src" "$root" -- \
	bash -c 'cd /slurm-src && nice '"${configure_cmd//$'\n'/ }"' >configure.log 2>&1' ||
	{
		tail -20 "$tmp/tree/configure.log" >&2
		die "Slurm's configure failed in the $suite root"
	}
config_version=$(sed -n 's/^#define SLURM_VERSION_STRING "\(.*\)"/\1/p' "$tmp/tree/config.h")
[ "$config_version" = "$upstream" ] || die "config.h says $config_version, not $upstream"

mkdir -p "$cache"
for old in "$cache/slurm-wlm-"*"-$suite-"*; do
	[ -d "$old" ] && rm -rf --one-file-system "$old"
done
touch "$tmp/tree/.svm-source-complete"
mv "$tmp/tree" "$dir"
say "Slurm $upstream of $suite in $(($(date +%s) - start)) s: $dir"
echo "$dir"
