#!/bin/bash
# cluster-timeout: 420
# The README's "every benchmark as one table", in its short mode: `bench/run.sh
# --short` from the build as it is (no `make check` before it), every bench of
# bench/ once with its fewest iterations. Each must run, print its BENCH
# lines and at least one ratio against a peer measured in the same run; a
# bench the README points users at must keep working. Prints the time the
# short mode took.
set -euo pipefail
. "$(dirname "$0")/harness.sh"

logs=$(mktemp -d "${HARNESS_TMPROOT:-/tmp}/bench.XXXXXX")
t0=$(date +%s)
rc=0
SVM_BENCH_LOGS=$logs "$HARNESS_REPO/bench/run.sh" --short "$BUILD_DIR" \
	>"$logs/table.md" 2>"$logs/run.err" || rc=$?
secs=$(($(date +%s) - t0))
cat "$logs/table.md"
echo "bench/run.sh --short took ${secs}s"
[ "$rc" = 0 ] && ok "bench/run.sh --short exited 0 in ${secs}s" ||
	fail "bench/run.sh --short exited $rc after ${secs}s"

# Every bench there is: plan_bench and bench/*_bench.sh.
benches=(plan)
for f in "$HARNESS_REPO"/bench/*_bench.sh; do
	benches+=("$(basename "$f" _bench.sh)")
done
for b in "${benches[@]}"; do
	st=$(grep -E "^\| $b \| (ran|skipped|\*\*failed)" "$logs/table.md" | head -n1 || true)
	# Rows: | bench | figure | value unit | peer | ratio | note |
	ratios=$(awk -F' \\| ' -v b="$b" '$1 == "| " b && $5 ~ /^[0-9]+(\.[0-9]+)?$/' \
		"$logs/table.md" | wc -l)
	if [[ "$st" == "| $b | ran, "* ]] && [ "$ratios" -gt 0 ]; then
		ok "$b: ${st#"| $b | "}"
	else
		fail "$b: ${st:-not run}; $ratios rows with a ratio"
		for f in "$logs/$b.err" "$logs/$b.out"; do
			[ -s "$f" ] && tail -n 15 "$f" | sed "s|^|    $b: |"
		done
	fi
done

[ "$failures" = 0 ] && rm -rf "$logs"
[ "$failures" = 0 ]
