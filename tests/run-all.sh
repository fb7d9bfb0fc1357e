#!/bin/bash
# The whole slurm-vm test suite, as CI runs it (.ci/run calls exactly this):
# install dependencies, build, unit tests, unit tests under ASan+UBSan, bounded
# fuzzing, the packages (tests/packaging.sh), the test guest, and the
# cluster tests on a real Slurm + libvirtd (test_headline.sh on the
# installed Debian packages).
#
#   tests/run-all.sh            everything
#   FUZZ_SECONDS=N              seconds per fuzz target (default 6)
#   SKIP_CLUSTER=1              unit tests, sanitizers and fuzzing only
#   SLURM_SOURCE_DIR=DIR        where the configured Slurm source tree for
#                               gres/ibvf is kept (default under
#                               /var/cache/slurm-vm; fetched once)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
fuzz_seconds=${FUZZ_SECONDS:-6}
jobs=$(nproc)
passed=0
failed=0
failures=()
start=$(date +%s)

# Each stage's name and start, for the table at the end (issue #42).
stage_names=()
stage_starts=()
stage() {
	stage_names+=("$*")
	stage_starts+=("$(date +%s)")
	printf '\n=== %s (%ds) ===\n' "$*" $(($(date +%s) - start))
}

# The stages and their times, then the ten slowest cluster tests (host and
# platforms: run.sh's "PASS|FAIL NAME (Ns)" lines), on stdout and in
# build/ci-times.txt.
times_table() {
	local i end n=${#stage_names[@]} log
	{
		echo "stage times (s):"
		for ((i = 0; i < n; i++)); do
			end=$(date +%s)
			[ $((i + 1)) -lt "$n" ] && end=${stage_starts[$((i + 1))]}
			printf '%6d  %s\n' $((end - stage_starts[i])) "${stage_names[$i]}"
		done
		printf '%6d  total\n' $(($(date +%s) - start))
		echo "the ten slowest cluster tests (s):"
		for log in build/cluster.log build/platform-trixie.log build/platform-forky.log; do
			[ -f "$log" ] || continue
			sed -n "s/^\(PASS\|FAIL\) \([^ ]*\) (\([0-9]*\)s)\$/\3 \2 \1/p" "$log" |
				sed "s|\$| (${log#build/})|"
		done | sort -rn | head -10 | awk '{ printf "%6d  %s %s %s\n", $1, $2, $3, $4 }'
	} | tee build/ci-times.txt
}

record() { # record NAME STATUS
	if [ "$2" = 0 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures+=("$1")
	fi
}

# Adds the PASS/FAIL counts of an automake test-suite.log.
record_make_check() { # record_make_check BUILDDIR STATUS LABEL
	local log=$1/test-suite.log p f
	if [ ! -f "$log" ]; then
		record "$3: no test-suite.log" 1
		return
	fi
	p=$(sed -n 's/^# PASS: *//p' "$log")
	f=$(($(sed -n 's/^# FAIL: *//p' "$log") + $(sed -n 's/^# ERROR: *//p' "$log")))
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" != 0 ] || [ "$2" != 0 ]; then
		failures+=("$3")
		[ "$f" != 0 ] || failed=$((failed + 1))
		cat "$log" >&2
	fi
}

# --enable-werror: every warning fails CI (the packages build without it).
# MAKE_TARGETS: what to make (default all).
configure_build() { # configure_build DIR CONFIGURE-ARGS...
	local dir=$1
	shift
	mkdir -p "$dir"
	(cd "$dir" && "$repo/configure" --prefix=/usr --sysconfdir=/etc \
		--localstatedir=/var --enable-werror "$@" >configure.log 2>&1) || {
		tail -30 "$dir/configure.log" >&2
		return 1
	}
	# shellcheck disable=SC2086 # MAKE_TARGETS: one word per target
	make -C "$dir" -j"$jobs" ${MAKE_TARGETS:-all} >"$dir/make.log" 2>&1 || {
		grep -E 'error|warning|\*\*\*' "$dir/make.log" | head -40 >&2
		return 1
	}
}

# The cluster tests each platform runs, each for what differs there (the
# rest run on the host's alone); the platform's Debian packages and the -N2
# headline job from them run in every platform_stage:
#   test_slurm_basic       the release's SPANK, Prolog and Epilog interfaces
#                          (compat.h), plain jobs untouched
#   test_gres_plugin       gres/ibvf built against the release's source
#                          (trixie: forky's source is not on the mirror)
#   test_vm_batch          the release's batch step, --vm-batch's srun back
#                          to the host, the extern step's sleep (or none)
#   test_user_cannot_drain libslurm's hostile SPANK_* submission path of the
#                          release, and its job faults
#   test_cloud_image       the platform's libvirtd and qemu with cloud-init
#                          guests, Open MPI over the release's PMIx plugin
#   test_guest_mix         trixie's own cloud image: Debian's cloud kernel,
#                          Open MPI 5 and PMIx 5 in the guest
#   test_shares_virtiofs   Debian 13's Rust virtiofsd (bookworm has none)
#   test_share_bench       9p against virtiofs, only comparable there
#   test_accounting        slurmdbd on MariaDB 11, the release's cgroup and
#                          jobacct_gather plugins: the guest counted once
#   test_warm_start        libvirt 11.3 restores a save image unlike 9.0
#                          (two opens), its shares virtiofs, hot-plugged
platform_tests_trixie=(test_slurm_basic test_gres_plugin test_vm_batch
	test_user_cannot_drain test_cloud_image test_guest_mix
	test_shares_virtiofs test_share_bench test_accounting test_warm_start)
# forky's own image (build-cloud.sh --suite forky) is not among them yet:
# under TCG here it takes about 310 s to its agent (issue #27); the Debian
# 12 cloud image (test_cloud_image) runs in two guests there (Open MPI over
# PMIx not: forky's Slurm package has no mpi/pmix plugin).
platform_tests_forky=(test_slurm_basic test_vm_batch test_user_cannot_drain
	test_cloud_image test_accounting)

# Adds a platform run's counts: its make check and its cluster tests.
record_platform() { # record_platform SUITE STATUS
	local log=build/platform-$1.log p f summary
	p=$(sed -n 's/^# PASS: *//p' "$log" | awk '{s += $1} END {print s + 0}')
	f=$(sed -n 's/^# \(FAIL\|ERROR\): *//p' "$log" | awk '{s += $1} END {print s + 0}')
	# Each cluster run's "N passed, M failed".
	while read -r summary; do
		p=$((p + ${summary%% passed*}))
		summary=${summary#*passed, }
		f=$((f + ${summary%% failed*}))
	done < <(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" || true)
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$2" != 0 ]; then
		failures+=("platform $1")
		[ "$f" != 0 ] || failed=$((failed + 1))
	fi
}

# Waits until the background image job wrote FILE (each of its parts
# writes its exit status in order) or ended.
images_wait() { # images_wait FILE
	while [ ! -f "$1" ] && kill -0 "$images_pid" 2>/dev/null; do
		sleep 5
	done
}

# A platform's stage: the build, packages and make check of the background
# job in the suite's root; tests/platform/run.sh SUITE runs the cluster tests
# TEST... there and the headline job from the packages.
platform_stage() { # platform_stage SUITE DESCRIPTION TEST...
	local suite=$1 rc=0 debs_rc
	stage "platform $suite: $2 (tests/platform/run.sh)"
	shift 2
	images_wait "build/platform-$suite-check.rc"
	if [ "$(cat "build/platform-$suite.rc" 2>/dev/null || echo 1)" != 0 ]; then
		record "platform $suite: root (see build/guest-images.log)" 1
		return
	fi
	# The build and the packages of the background job (the build is
	# made here when that failed: its errors are shown).
	grep -E "^(platform/|build-debs:)" "build/platform-$suite-debs.log" || true
	debs_rc=$(cat "build/platform-$suite-debs.rc" 2>/dev/null || echo 1)
	[ "$debs_rc" = 0 ] || tail -n 40 "build/platform-$suite-debs.log"
	# make check's counts go into this stage's log.
	{ grep -v "^platform/" "build/platform-$suite-check.log" || true; } |
		tee "build/platform-$suite.log"
	[ "$(cat "build/platform-$suite-check.rc" 2>/dev/null || echo 1)" = 0 ] || rc=1
	# shellcheck disable=SC2016 # expanded inside the root
	tests/platform/run.sh --keep "$suite" -- bash -c '
		rc=0 debs_rc=$1
		shift
		[ $# = 0 ] || tests/cluster/run.sh "$@" || rc=1
		# The -N2 headline job from the packages (installed in the
		# root, purged afterwards).
		if [ "$debs_rc" = 0 ]; then
			SLURM_VM_DEBS=/var/tmp/svm-debs tests/cluster/run.sh test_headline || rc=1
		fi
		exit "$rc"' platform-check "$debs_rc" "$@" 2>&1 |
		tee -a "build/platform-$suite.log" || rc=$?
	record "platform $suite: the Debian packages (build/platform-$suite-debs.log)" "$debs_rc"
	record_platform "$suite" "$rc"
}

# Images and roots are cached by content on the machine, not in the clone:
# a fresh clone (CI's) finds what an earlier run built. Each in-tree cache
# directory that is not there yet becomes a link into SVM_CACHE (default
# /var/cache/slurm-vm/tree); the scripts that fill them check their
# content as before.
svm_cache=${SVM_CACHE:-/var/cache/slurm-vm/tree}
for d in tests/guest/cache tests/guest/cache-cloud tests/guest/cache-cloud-trixie \
	tests/guest/cache-cloud-forky tests/platform/cache; do
	{ [ -e "$d" ] || [ -L "$d" ]; } && continue
	mkdir -p "$svm_cache/${d//\//-}"
	ln -s "$svm_cache/${d//\//-}" "$d"
done

stage "dependencies"
scripts/install-deps.sh
# gres/ibvf is built against the Slurm source of exactly the installed
# version: apt-get source + configure once (~1 min), cached afterwards.
slurm_src=${SLURM_SOURCE_DIR:-/var/cache/slurm-vm/slurm-wlm-$(slurmd -V | awk '{print $2}')}
with_slurm_source=()
rc=0
scripts/install-deps.sh --slurm-source "$slurm_src" || rc=$?
record "Slurm source for gres/ibvf" "$rc"
[ "$rc" = 0 ] && with_slurm_source=(--with-slurm-source="$slurm_src")
# OpenSM's partition parser for test_opensm_parse.sh: its source, cached.
opensm_src=${OPENSM_SOURCE_DIR:-/var/cache/slurm-vm/opensm}
rc=0
scripts/install-deps.sh --opensm-source "$opensm_src" || rc=$?
record "OpenSM source for its partition parser" "$rc"
export OPENSM_SOURCE_DIR=$opensm_src

stage "build"
autoreconf -fi >/dev/null 2>&1
configure_build build "${with_slurm_source[@]}"
tail -n1 build/configure.log

# The test guest (with this build's agent) and the stock cloud image
# (mmdebstrap: mostly waiting on the mirror and dpkg) are built, or found up
# to date by content, while the unit tests, sanitizers, fuzzing and packages
# run; the cluster tests wait for them. Each writes its exit status.
images_pid=
if [ "${SKIP_CLUSTER:-0}" != 1 ]; then
	rm -f build/guest-image.rc build/cloud-image.rc \
		build/cloud-trixie-image.rc build/platform-root.rc \
		build/platform-trixie.rc build/platform-forky.rc \
		build/platform-trixie-debs.rc build/platform-forky-debs.rc \
		build/platform-trixie-check.rc \
		build/platform-forky-check.rc
	(
		rc=0
		tests/guest/build.sh --agent build/agent/slurm-vm-agent || rc=$?
		echo "$rc" >build/guest-image.rc
		rc=0
		tests/guest/build-cloud.sh || rc=$?
		echo "$rc" >build/cloud-image.rc
		# The Debian 13 guest of test_guest_mix.sh.
		rc=0
		tests/guest/build-cloud.sh --suite trixie || rc=$?
		echo "$rc" >build/cloud-trixie-image.rc
		# The clean Debian root of the admin's path test.
		rc=0
		nice tests/platform/test_admin_path.sh --prepare || rc=$?
		echo "$rc" >build/platform-root.rc
		# The Debian 13 platform's root and Slurm source (cached).
		rc=0
		nice tests/platform/run.sh --prepare trixie || rc=$?
		echo "$rc" >build/platform-trixie.rc
		rc=0
		nice tests/platform/run.sh --prepare forky || rc=$?
		echo "$rc" >build/platform-forky.rc
		# Each platform's -Werror build, its packages and its unit
		# tests, in the scratch overlay its stage goes on in (run.sh
		# --keep): meanwhile the host's cluster tests, whose guests
		# leave CPU time over.
		for suite in trixie forky; do
			rc=0
			[ "$(cat "build/platform-$suite.rc")" = 0 ] &&
				nice tests/platform/run.sh "$suite" -- \
					env DEB_BUILD_OPTIONS=nocheck tests/platform/debs.sh \
					/var/tmp/svm-debs >"build/platform-$suite-debs.log" 2>&1 ||
				rc=$?
			echo "$rc" >"build/platform-$suite-debs.rc"
			rc=0
			# shellcheck disable=SC2016 # expanded inside the root
			[ "$(cat "build/platform-$suite.rc")" = 0 ] &&
				nice tests/platform/run.sh --keep "$suite" -- bash -c '
					rc=0
					make -C "$BUILD_DIR" -j"$(nproc)" check >"$BUILD_DIR/check.log" 2>&1 || rc=$?
					grep -E "^# (TOTAL|PASS|SKIP|FAIL|ERROR):" "$BUILD_DIR/check.log"
					[ "$rc" = 0 ] || { cat "$BUILD_DIR/test-suite.log"; echo "unit tests failed"; }
					exit "$rc"' >"build/platform-$suite-check.log" 2>&1 ||
				rc=$?
			echo "$rc" >"build/platform-$suite-check.rc"
		done
	) >build/guest-images.log 2>&1 </dev/null &
	images_pid=$!
	# Whatever ends this script, the image builds end (and clean up)
	# before it does.
	trap 'wait "$images_pid" 2>/dev/null || true' EXIT
fi

stage "unit tests"
rc=0
make -C build -j"$jobs" check >build/check.log 2>&1 || rc=$?
record_make_check build "$rc" "unit tests"
grep -E '^(PASS|FAIL|ERROR|SKIP):' build/check.log || true

stage "unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
rc=0
configure_build build-asan --enable-sanitizers || rc=$?
if [ "$rc" = 0 ]; then
	# HWLOC_COMPONENTS=-pci: hwloc's PCI plugin (libhwloc-plugins, which
	# libopenmpi3 pulls in) leaves libpciaccess's pci.ids name cache to
	# the process and is unloaded before LeakSanitizer looks, so every
	# topology load would count as a leak of an unknown module. Without
	# the plugin our sysfs inventory gives the NUMA nodes, as it does
	# where libhwloc-plugins is not installed.
	HWLOC_COMPONENTS=-pci ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		make -C build-asan -j"$jobs" check >build-asan/check.log 2>&1 || rc=$?
	record_make_check build-asan "$rc" "sanitizer unit tests"
	grep -E '^(PASS|FAIL|ERROR|SKIP):' build-asan/check.log || true
else
	record "sanitizer build" "$rc"
fi

stage "fuzzing (${fuzz_seconds}s per target)"
rc=0
# Only the fuzz targets: the rest of a clang build is what the gcc builds
# above already checked.
fuzz_targets=$(sed -n 's/^noinst_PROGRAMS += //p' tests/fuzz/local.mk | tr '\n' ' ')
MAKE_TARGETS=$fuzz_targets configure_build build-fuzz CC=clang-14 \
	--enable-fuzzing --enable-sanitizers || rc=$?
if [ "$rc" = 0 ]; then
	tests/fuzz/run.sh "$fuzz_seconds" "$repo/build-fuzz" || rc=$?
fi
record "fuzzing" "$rc"

stage "packages (Debian, RPM spec)"
rc=0
tests/packaging.sh "$repo/build-debs" || rc=$?
record "packages" "$rc"
# test_headline.sh installs them and runs the headline job on them.
[ "$rc" = 0 ] && export SLURM_VM_DEBS="$repo/build-debs"

if [ "${SKIP_CLUSTER:-0}" != 1 ]; then
	stage "test guest and stock cloud image (built since the build stage)"
	# The platform roots are still being prepared meanwhile: the platform
	# stages wait for them.
	images_wait build/platform-root.rc
	grep -v '^\(Get:\|Fetched\|I: \)' build/guest-images.log || true
	record "test guest build" "$(cat build/guest-image.rc 2>/dev/null || echo 1)"
	# The stock cloud image of test_cloud_image.sh, built once per run
	# (cached by content) rather than inside that test's time limit.
	record "stock cloud image build" "$(cat build/cloud-image.rc 2>/dev/null || echo 1)"
	record "Debian 13 cloud image build" "$(cat build/cloud-trixie-image.rc 2>/dev/null || echo 1)"

	stage "the admin's path: the guide on a clean Debian 12 root"
	rc=0
	if [ "$(cat build/platform-root.rc 2>/dev/null || echo 1)" != 0 ]; then
		echo "the clean Debian root was not built: see build/guest-images.log" >&2
		rc=1
	elif [ -z "${SLURM_VM_DEBS:-}" ]; then
		echo "no packages to install (the packages stage failed)" >&2
		rc=1
	else
		tests/platform/test_admin_path.sh >build/admin-path.log 2>&1 || rc=$?
		grep -E '^(admin-path: .*(ok|FAIL):|test_admin_path:|PASS|FAIL)' build/admin-path.log || true
	fi
	record "admin's path (tests/platform/test_admin_path.sh)" "$rc"

	stage "cluster tests (real slurmctld, slurmd, libvirtd)"
	rc=0
	BUILD_DIR="$repo/build" tests/cluster/run.sh | tee build/cluster.log || rc=$?
	summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' build/cluster.log | tail -1 || true)
	if [ -n "$summary" ]; then
		p=${summary%% passed*}
		f=${summary#*passed, }
		f=${f%% failed*}
		passed=$((passed + p))
		failed=$((failed + f))
		[ "$f" = 0 ] || failures+=("cluster tests")
	fi
	[ "$rc" = 0 ] || [ -n "$summary" ] || record "cluster test runner" "$rc"

	# Slurm 24.11 (Debian 13) and 26.05 (forky): the build with -Werror,
	# the unit tests and the cluster tests that show a platform works, in
	# its own root with its own slurmctld, slurmd, libvirtd and qemu.
	platform_stage trixie "Slurm 24.11, libvirt 11, qemu 10" \
		"${platform_tests_trixie[@]}"
	platform_stage forky "Slurm 26.05, libvirt 12, qemu 11" \
		"${platform_tests_forky[@]}"
fi

stage "done"
times_table
for f in "${failures[@]+"${failures[@]}"}"; do
	echo "failed: $f"
done
echo "total time: $(($(date +%s) - start))s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
