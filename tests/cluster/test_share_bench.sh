#!/bin/bash
# cluster-timeout: 420
# bench/share_bench.sh in its short mode where both transports run (a Rust
# virtiofsd installed: the Debian 13 platform), issue 28: 9p and virtiofs
# against the host directory and virtiofs against 9p, in the same run, each
# row with its ratio. Where only 9p runs, test_bench_short.sh has it.
set -euo pipefail
. "$(dirname "$0")/harness.sh"

harness_rust_virtiofsd ||
	harness_skip "no Rust virtiofsd: only 9p, which test_bench_short.sh measures"
[ -x "$BUILD_DIR/bench/share_ops" ] || harness_skip "no $BUILD_DIR/bench/share_ops (make check builds it)"
out=${HARNESS_TMPROOT:-/tmp}/share-bench.$$
rc=0
SVM_BENCH_SHORT=1 "$HARNESS_REPO/bench/share_bench.sh" >"$out" 2>"$out.err" || rc=$?
grep '^BENCH|' "$out" || true
[ "$rc" = 0 ] && ok "bench/share_bench.sh exited 0" || {
	fail "bench/share_bench.sh exited $rc"
	tail -n 20 "$out.err"
}
for what in "9p share in the guest" "virtiofs share in the guest"; do
	for op in "sequential write" "sequential read" "create.stat.unlink" "tar -x"; do
		grep -E "^BENCH\|[^|]*$op[^|]*, $what\|[0-9.]+\|s\|the host directory: [0-9.]+ s\|[0-9.]+\|(TCG|KVM)" "$out" >/dev/null &&
			ok "$op, $what: a figure and its ratio to the host directory" ||
			fail "no '$op, $what' row with a ratio"
	done
done
n=$(grep -cE '^BENCH\|[a-z]+: virtiofs share in the guest\|[0-9.]+\|s\|the 9p share, same run: [0-9.]+ s\|[0-9.]+\|' "$out" || true)
[ "$n" = 4 ] && ok "virtiofs against 9p in the same run: 4 rows with their ratio" ||
	fail "virtiofs against 9p: $n rows"
rm -f "$out" "$out.err"
[ "$failures" = 0 ]
