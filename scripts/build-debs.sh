#!/bin/sh
# Builds slurm-vm's Debian packages from this checkout's tracked files
# (debian/, debhelper) and checks them with lintian.
#
#   scripts/build-debs.sh [OUTDIR]      (default: build-debs/)
#
# Needs root only for the build dependencies (scripts/install-deps.sh, then
# `apt-get build-dep` is not needed: install-deps has them all, plus
# debhelper and lintian, which this script installs). The gres/ibvf package
# is built against the Slurm source tree of scripts/install-deps.sh
# --slurm-source (SLURM_SOURCE, default /var/cache/slurm-vm/slurm-wlm-<ver>);
# without one, DEB_BUILD_PROFILES=pkg.slurm-vm.nogresibvf leaves it out.
# The build runs `make check` as every Debian build does (buildd included):
# DEB_BUILD_OPTIONS=nocheck skips it. It builds without -Werror
# (debian/rules), with Debian's hardening flags. Prints the .deb files and
# lintian's verdict; exits 1 when the build or its tests fail or lintian
# reports an error or warning. A failed build shows its cause first (the
# configure, compiler or test lines that say it) and keeps the whole log
# as OUTDIR/build.log.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/build-debs}
version=$(sed -n '1s/.*(\(.*\)-[^-]*).*/\1/p' "$repo/debian/changelog")

for p in debhelper lintian fakeroot dpkg-dev; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="${missing:-} $p"
done
if [ -n "${missing:-}" ]; then
	# Say all it installs or upgrades with them, not just their names.
	pulled=$(apt-get install -s --no-install-recommends $missing 2>/dev/null |
		sed -n 's/^Inst \([^ ]*\).*/\1/p' | tr '\n' ' ')
	echo "build-debs: installing$missing with apt-get;" \
		"with their dependencies, $(echo $pulled | wc -w) packages: $pulled"
	# Its chatter (debconf's "delaying package configuration" on stderr
	# where apt-utils is missing) only when it fails: a failed build's
	# cause is the first thing this script says on stderr.
	apt_log=$(mktemp "${TMPDIR:-/tmp}/slurm-vm-apt.XXXXXX")
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >"$apt_log" 2>&1 || {
		cat "$apt_log" >&2
		rm -f "$apt_log"
		echo "build-debs: apt-get install$missing failed" >&2
		exit 1
	}
	rm -f "$apt_log"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/slurm-vm-debs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
src=$tmp/slurm-vm-$version
mkdir -p "$src"
(cd "$repo" && git ls-files -z | xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$src"
# As a buildd builds, as a user other than root (Rules-Requires-Root: no):
# the tests that need root skip themselves there (debian/rules), and a
# package build makes no network namespaces on the build host.
builder=""
if [ "$(id -u)" = 0 ]; then
	chown -R nobody:nogroup "$tmp"
	builder="setpriv --reuid=nobody --regid=nogroup --clear-groups"
fi
echo "build-debs: dpkg-buildpackage in $src${builder:+ as nobody}"
mkdir -p "$out"
(cd "$src" && HOME=$tmp $builder dpkg-buildpackage -us -uc -b -j"$(nproc)" \
	>"$tmp/build.log" 2>&1) || {
	cp "$tmp/build.log" "$out/build.log"
	# The cause first: configure's own message (debhelper prints
	# config.log's #defines after it), a compiler's error, a failed test.
	# (configure's own, not dh_auto_configure's: after a "checking" line)
	cause=$(grep -E -o '(^| )configure: error: .*' "$tmp/build.log" |
		sed 's/^ //' | head -5)
	[ -n "$cause" ] || cause=$(grep -E '^(FAIL|ERROR|XFAIL):|: error:|^make.*Error' \
		"$tmp/build.log" | head -20)
	[ -n "$cause" ] || cause=$(tail -20 "$tmp/build.log")
	echo "$cause" | sed 's/^/build-debs: /' >&2
	if grep -q 'is not a configured Slurm source tree' "$tmp/build.log"; then
		echo "build-debs: make one with scripts/install-deps.sh --slurm-source DIR" \
			"(SLURM_SOURCE=DIR), or build without gres/ibvf:" \
			"DEB_BUILD_PROFILES=pkg.slurm-vm.nogresibvf $0" >&2
	fi
	echo "build-debs: dpkg-buildpackage failed; the whole log: $out/build.log" >&2
	exit 1
}
# automake's summary of `make check` (dh_auto_test), unless nocheck
checks=$(sed -n 's/^# \(TOTAL\|PASS\|SKIP\|FAIL\|ERROR\): *\([0-9]*\)/\1 \2/p' "$tmp/build.log" |
	awk '{n[$1] += $2} END {if (n["TOTAL"]) printf "%d tests, %d passed, %d skipped, %d failed", n["TOTAL"], n["PASS"], n["SKIP"], n["FAIL"] + n["ERROR"]}')
echo "build-debs: make check: ${checks:-not run}"
rm -f "$out"/*.deb
cp "$tmp/build.log" "$out/build.log"
cp "$tmp"/*.deb "$tmp"/*.changes "$tmp"/*.buildinfo "$out"/
ls -1 "$out"/*.deb
# Errors and warnings fail; the overrides in debian/*.lintian-overrides say
# why each accepted tag is right.
rc=0
lintian --fail-on error,warning --suppress-tags-from-file /dev/null \
	"$out"/*.changes || rc=$?
[ "$rc" = 0 ] && echo "build-debs: lintian clean (errors and warnings)"
exit "$rc"
