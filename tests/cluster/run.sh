#!/bin/bash
# Runs the cluster tests: every tests/cluster/test_*.sh, or the ones named
# (test_x, test_x.sh or a path), each in its own process with a timeout.
#
#   tests/cluster/run.sh [TEST...]
#
# One line per test: "PASS name (Ns)", "FAIL name (Ns)" followed by the tail
# of its output, or "SKIP name: reason" (exit status 77; the reason is the
# test's last "SKIP: ..." line). Last line: "N passed, N failed" (", N
# skipped" when some were). Exit status 1 when a test failed.
#
# Environment: BUILD_DIR (default: <repo>/build), CLUSTER_TEST_TIMEOUT
# (seconds per test, default 300; a test may lower or raise its own with a
# "# cluster-timeout: N" line), CLUSTER_TEST_TAIL (lines of a failed test's
# output shown, default 40), CLUSTER_TEST_LOGS (directory for the outputs;
# default a new one under /tmp, removed when all passed), CLUSTER_TEST_ROOT
# (where each test's harness directory is made, default /var/lib/svmt: a
# root-owned path as a node's spool is). HARNESS_* settings
# (see harness.sh) pass through to the tests.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$repo/build}
timeout_default=${CLUSTER_TEST_TIMEOUT:-300}
test_root_parent=${CLUSTER_TEST_ROOT:-/var/lib/svmt}
tail_lines=${CLUSTER_TEST_TAIL:-40}

# shellcheck source=tests/cluster/harness.sh
. "$here/harness.sh" # for harness_sweep only: starts nothing

tests=()
if [ "$#" -gt 0 ]; then
	for t in "$@"; do
		name=${t##*/}
		name=${name%.sh}
		[ -f "$here/$name.sh" ] || {
			echo "run.sh: no test $here/$name.sh" >&2
			exit 2
		}
		tests+=("$here/$name.sh")
	done
else
	for t in "$here"/test_*.sh; do
		[ -f "$t" ] && tests+=("$t")
	done
fi

if [ -n "${CLUSTER_TEST_LOGS:-}" ]; then
	logs=$CLUSTER_TEST_LOGS
	mkdir -p "$logs"
	own_logs=0
else
	logs=$(mktemp -d /tmp/slurm-vm-cluster-tests.XXXXXX)
	chmod 0755 "$logs"
	own_logs=1
fi

passed=0 failed=0 skipped=0
current_root="" test_pid=""
# Interrupted: stop the running test (timeout passes the signal on, its
# EXIT trap stops its cluster), sweep what it left, then stop.
on_signal() {
	if [ -n "$test_pid" ]; then
		kill -TERM "$test_pid" 2>/dev/null
		wait "$test_pid" 2>/dev/null
	fi
	[ -n "$current_root" ] && harness_sweep "$current_root"
	echo "interrupted${name:+ during $name}"
	exit 130
}
trap on_signal INT TERM

for t in "${tests[@]}"; do
	name=$(basename "$t" .sh)
	secs=$(sed -n 's/^# cluster-timeout: *\([0-9][0-9]*\).*/\1/p' "$t" | head -n1)
	secs=${secs:-$timeout_default}
	out=$logs/$name.log
	# The test's harness directory goes in here, so whatever a killed
	# test leaves behind can be found and stopped. Short: unix sockets
	# live below it. Under root-owned /var/lib as a node's spool is
	# (/var/lib/slurm/slurmd), not /tmp: a guest user cannot create
	# these paths in the guest, as on a real node.
	mkdir -p -m 0755 "$test_root_parent"
	current_root=$(mktemp -d "$test_root_parent/XXXXXX")
	chmod 0755 "$current_root"
	t0=$(date +%s)
	# In the background, so a signal to this script reaches it at once.
	HARNESS_TMPROOT=$current_root timeout -k 30 "$secs" bash "$t" \
		>"$out" 2>&1 </dev/null &
	test_pid=$!
	wait "$test_pid" 2>/dev/null # (no "Killed" notice from bash)
	rc=$?
	test_pid=""
	dt=$(($(date +%s) - t0))
	# Leftovers of a test that was killed before its EXIT trap ran.
	sweep=$(harness_sweep "$current_root" 2>&1)
	[ -z "$sweep" ] || printf '%s\n' "$sweep" >>"$out"
	case "$rc" in
	0)
		echo "PASS $name (${dt}s)"
		passed=$((passed + 1))
		;;
	77)
		reason=$(sed -n 's/^SKIP: *//p' "$out" | tail -n1)
		echo "SKIP $name: ${reason:-$(tail -n1 "$out")}"
		skipped=$((skipped + 1))
		;;
	*)
		why=""
		if [ "$rc" = 124 ] || { [ "$rc" = 137 ] && [ "$dt" -ge "$secs" ]; }; then
			why=", timed out after ${secs}s"
		elif [ "$rc" -gt 128 ]; then
			why=" (killed by signal $((rc - 128)))"
		fi
		echo "FAIL $name (${dt}s)"
		echo "---- $name: exit status $rc$why"
		if grep -qE '^(FAIL|harness: error)' "$out"; then
			echo "failed checks:"
			grep -E '^(FAIL|harness: error)' "$out" | head -n 20 | cut -c1-300 | sed 's/^/    /'
		fi
		echo "last $tail_lines lines of $out:"
		tail -n "$tail_lines" "$out" | sed 's/^/    /'
		echo "----"
		failed=$((failed + 1))
		;;
	esac
	# A passed test's harness directory is gone; a kept one stays.
	rmdir "$current_root" 2>/dev/null
	current_root=""
done

if [ "$failed" = 0 ] && [ "$own_logs" = 1 ]; then
	rm -rf "$logs"
else
	echo "test outputs: $logs"
fi
summary="$passed passed, $failed failed"
[ "$skipped" = 0 ] || summary+=", $skipped skipped"
echo "$summary"
[ "$failed" = 0 ]
