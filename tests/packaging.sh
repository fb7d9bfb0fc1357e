#!/bin/bash
# The packages, as far as this machine can build them:
#  - Debian: scripts/build-debs.sh (dpkg-buildpackage with its `make check`
#    and Debian's hardening flags, without -Werror, as a buildd builds;
#    lintian with errors and warnings failing; each accepted tag explained
#    in debian/*.lintian-overrides) into build-debs/, which
#    tests/cluster/test_headline.sh installs;
#  - RPM (slurm-vm.spec): rpmspec --parse and rpmbuild -bs with and without
#    gres/ibvf, rpmlint on the spec and the source RPM (filters with reasons
#    in slurm-vm.rpmlintrc), and rpmbuild -bb --nodeps: Debian has none of
#    the RPM build dependencies as RPMs, but the build runs with Debian's
#    libraries, and rpm refuses any file `make install` installs that no
#    %files section names (lint of those binary RPMs is not taken: Debian's
#    rpm has no brp-strip or brp-compress, so they differ from a real
#    EL build);
#  - one version in configure.ac, debian/changelog and the spec;
#  - both slurm-vm packages create the directories the example
#    configuration names;
#  - build-debs without the Slurm source tree gres/ibvf needs shows
#    configure's message first and keeps the log;
#  - the built slurm-vm's postinst, postrm and trigger with real dpkg: the
#    statoverride that lets job users' qemu into /var/lib/libvirt/qemu
#    (tests/statoverride.sh).
#
#   tests/packaging.sh [OUTDIR]    (default build-debs/; run as root)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
out=${1:-$repo/build-debs}
fails=0
ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

t=$(mktemp -d "${TMPDIR:-/tmp}/slurm-vm-rpm.XXXXXX")
trap 'rm -rf "$t"' EXIT

v_ac=$(sed -n 's/^AC_INIT(\[slurm-vm\], \[\([^]]*\)\].*/\1/p' configure.ac)
v_deb=$(sed -n '1s/.*(\(.*\)-[^-]*).*/\1/p' debian/changelog)
v_rpm=$(sed -n 's/^Version:[[:space:]]*//p' slurm-vm.spec)
[ "$v_ac" = "$v_deb" ] && [ "$v_ac" = "$v_rpm" ] &&
	ok "one version everywhere: $v_ac" ||
	fail "versions differ: configure.ac $v_ac, debian/changelog $v_deb, slurm-vm.spec $v_rpm"

# Without the Slurm source tree gres/ibvf needs: configure's own message
# comes first, with what to do, and the whole log is kept.
rc=0
SLURM_SOURCE=/nonexistent/slurm DEB_BUILD_OPTIONS=nocheck \
	scripts/build-debs.sh "$t/nosource" >"$t/nosource.out" 2>"$t/nosource.err" || rc=$?
if [ "$rc" = 1 ] &&
	head -1 "$t/nosource.err" | grep -qF "build-debs: configure: error: --with-slurm-source=/nonexistent/slurm is not a configured Slurm source tree" &&
	grep -qF "DEB_BUILD_PROFILES=pkg.slurm-vm.nogresibvf" "$t/nosource.err" &&
	grep -qF "the whole log: $t/nosource/build.log" "$t/nosource.err" &&
	grep -q 'configure: error:' "$t/nosource/build.log"; then
	ok "build-debs without a Slurm source tree: configure's error first, the log kept"
else
	fail "build-debs without a Slurm source tree (rc=$rc): $(head -5 "$t/nosource.err")"
fi

if scripts/build-debs.sh "$out" | tee "$t/debs.log"; then
	debs=$(for d in "$out"/*.deb; do case "$d" in *-dbgsym_*) ;; *) printf '%s ' "${d##*/}" ;; esac; done)
	ok "Debian packages built, lintian clean: $debs"
	# the tests ran in the package build, as on a buildd
	checks=$(sed -n 's/^build-debs: make check: //p' "$t/debs.log")
	case "$checks,${DEB_BUILD_OPTIONS:-}" in
	*" 0 failed",*) ok "make check in dpkg-buildpackage: $checks" ;;
	*nocheck*) ok "make check in dpkg-buildpackage skipped: DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS" ;;
	*) fail "make check did not run in dpkg-buildpackage: ${checks:-no summary}" ;;
	esac
else
	fail "Debian packages (scripts/build-debs.sh, make check included)"
fi

for p in rpm rpmlint; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
done
slurm_src=${SLURM_SOURCE_DIR:-/var/cache/slurm-vm/slurm-wlm-$(slurmd -V | awk '{print $2}')}
ibvf=(--with gres_ibvf --define "_slurm_source $slurm_src")
dirs=(--define "_topdir $t" --define "_sourcedir $t" --define "_srcrpmdir $t"
	--define "_rpmdir $t")
# the tracked files as they are now, as a release tarball would hold them
git ls-files -z | xargs -0 tar -cf - --no-recursion --transform "s,^,slurm-vm-$v_rpm/," |
	gzip >"$t/slurm-vm-$v_rpm.tar.gz"

for with in without with; do
	args=()
	[ "$with" = with ] && args=("${ibvf[@]}")
	if pkgs=$(rpmspec -q "${args[@]}" slurm-vm.spec 2>"$t/err"); then
		ok "rpmspec --parse ($with gres_ibvf): $(tr '\n' ' ' <<<"$pkgs")"
	else
		fail "rpmspec ($with gres_ibvf): $(cat "$t/err")"
	fi
	rm -f "$t"/*.src.rpm
	if rpmbuild -bs "${args[@]}" "${dirs[@]}" slurm-vm.spec >"$t/bs.log" 2>&1; then
		ok "rpmbuild -bs ($with gres_ibvf): $(basename "$t"/*.src.rpm)"
	else
		fail "rpmbuild -bs ($with gres_ibvf): $(tail -5 "$t/bs.log")"
	fi
done
if rpmlint -r slurm-vm.rpmlintrc slurm-vm.spec "$t"/*.src.rpm >"$t/lint.log" 2>&1; then
	ok "rpmlint: $(tail -1 "$t/lint.log")"
else
	fail "rpmlint: $(grep -E ': [EW]: ' "$t/lint.log" | head -10)"
fi
# --nocheck: %check is the `make check` the Debian build just ran.
if rpmbuild -bb --nodeps --nocheck "${ibvf[@]}" "${dirs[@]}" slurm-vm.spec >"$t/bb.log" 2>&1; then
	ok "rpmbuild -bb --nodeps: every installed file in a package: $(cd "$t/x86_64" && ls | tr '\n' ' ')"
else
	fail "rpmbuild -bb: $(grep -A5 'RPM build errors' "$t/bb.log" || tail -10 "$t/bb.log")"
fi

# The directories the example configuration names (ImageCatalog, ImageDirs,
# SlurmdSpoolDir's parent) come with the slurm-vm package.
deb=$(ls "$out"/slurm-vm_*.deb 2>/dev/null | head -1 || true)
rpmf=$(ls "$t"/x86_64/slurm-vm-[0-9]*.rpm 2>/dev/null | head -1 || true)
deb_files=$([ -z "$deb" ] || dpkg-deb -c "$deb")
rpm_files=$([ -z "$rpmf" ] || rpm -qlp "$rpmf" 2>/dev/null)
missing=
for d in etc/slurm/vm-images.d var/lib/slurm-vm/images \
	var/lib/slurm/slurmd; do
	grep -q " \./$d/\$" <<<"$deb_files" || missing="$missing deb:/$d"
	grep -qx "/$d" <<<"$rpm_files" || missing="$missing rpm:/$d"
done
[ -z "$missing" ] && ok "the packages create the example configuration's directories" ||
	fail "directories the example configuration names, missing from the packages:$missing"

# The built slurm-vm package's statoverride of /var/lib/libvirt/qemu with
# real dpkg, against libvirt-daemon-system's own rule (#25 item 1).
if [ -n "$deb" ] && tests/statoverride.sh "$deb" >"$t/so.log" 2>&1; then
	ok "the built slurm-vm's statoverride of /var/lib/libvirt/qemu (tests/statoverride.sh): $(grep -c '^ok:' "$t/so.log") checks"
else
	fail "tests/statoverride.sh ${deb:-(no slurm-vm .deb)}: $(grep -v '^ok:' "$t/so.log" 2>/dev/null | head -10)"
fi

[ "$fails" = 0 ] && echo PASS || echo "FAIL: $fails checks"
[ "$fails" = 0 ]
