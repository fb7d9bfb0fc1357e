#!/bin/bash
# Every benchmark of the suite in one run, as one markdown table.
#
#   bench/run.sh [--short] [BUILD-DIR]  (root; BUILD-DIR default build/)
#   make bench                          (the same, from the build tree)
#
# --short runs every bench once with the fewest iterations that still give
# each of its figures and ratios (SVM_BENCH_SHORT=1, which each bench reads),
# and the benches that boot guests on one node (bench/cluster.sh) on one
# test cluster started once: a check that every bench works, not figures to
# quote. CI runs it (tests/cluster/test_bench_short.sh).
#
# Runs, in this order, each bench that exists:
#   build/bench/plan_bench      planner and domain XML vs the topology load
#   bench/vm_bench.sh           prolog phases, libvirt start, epilog, the
#                               time a job without --vm-image pays
#   bench/task_bench.sh         srun task start in the guest vs bare srun
#   bench/channel_bench.sh      guest channel: exec latency vs
#                               qemu-guest-agent, round trip, throughput
#   bench/*_bench.sh            any other bench, in name order
# Each finds the build through $BUILD_DIR (exported) and prints lines
#   BENCH|<name>|<value>|<unit>|<peer measured in the same run, or ->|<ratio or ->|<note>
# which become the table's rows; a bench that is missing or not built is
# listed as skipped; one that fails, prints no BENCH lines or no ratio
# against a peer measured in the same run as failed (its log is kept).
# Figures from guests under TCG (no KVM, as on CI machines) carry the label
# "TCG" from their bench: regression figures for this machine, not
# production ones.
#
# Environment: SVM_BENCH_ONLY="plan channel" runs only those; SVM_GUEST_LOCK
# =FILE runs each bench that boots a guest under flock FILE (machines shared
# by several test runs); SVM_BENCH_LOGS=DIR keeps every bench's output there
# (default: a temporary directory, removed unless a bench failed).
# Exit status: 0 when every bench that exists ran and gave its ratios, 1
# otherwise.
set -uo pipefail

plan_iters=200
if [ "${1:-}" = --short ]; then
	export SVM_BENCH_SHORT=1
	plan_iters=20
	shift
fi

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build=$(cd "${1:-${BUILD_DIR:-$top/build}}" 2>/dev/null && pwd) ||
	{ echo "bench/run.sh: no build directory ${1:-${BUILD_DIR:-$top/build}}" >&2; exit 2; }
export BUILD_DIR=$build
only=${SVM_BENCH_ONLY:-}

[ "$(id -u)" = 0 ] || { echo "bench/run.sh: run as root (the benches start libvirtd, slurmd and guests)" >&2; exit 2; }
# The shared cluster runs beside every bench: the whole run holds the lock.
if [ "${SVM_BENCH_SHORT:-0}" = 1 ] && [ -n "${SVM_GUEST_LOCK:-}" ]; then
	exec env -u SVM_GUEST_LOCK flock "$SVM_GUEST_LOCK" "$0" --short "$build"
fi

if [ -n "${SVM_BENCH_LOGS:-}" ]; then
	logs=$SVM_BENCH_LOGS
	mkdir -p "$logs"
	keep_logs=1
else
	logs=$(mktemp -d /tmp/slurm-vm-bench.XXXXXX)
	keep_logs=0
fi

# name | command | boots a guest (1/0); scripts not named here come last and
# are taken to boot guests.
benches=(
	"plan|$build/bench/plan_bench $plan_iters|0"
	"vm|$here/vm_bench.sh|1"
	"task|$here/task_bench.sh|1"
	"channel|$here/channel_bench.sh $build|1"
)
for f in "$here"/*_bench.sh; do
	case " ${benches[*]} " in *"$f"*) continue ;; esac
	[ -e "$f" ] && benches+=("$(basename "$f" _bench.sh)|$f|1")
done

joins_cluster() { grep -q '^bench_cluster_start' "${1%% *}" 2>/dev/null; }
# --short: the benches that join the shared cluster last, one after the
# other, so that no other bench runs beside it (two-node clusters, their own
# libvirtd).
if [ "${SVM_BENCH_SHORT:-0}" = 1 ]; then
	own=() joining=()
	for b in "${benches[@]}"; do
		IFS='|' read -r _ cmd _ <<<"$b"
		if joins_cluster "$cmd"; then joining+=("$b"); else own+=("$b"); fi
	done
	benches=("${own[@]}" "${joining[@]+"${joining[@]}"}")
fi

rows=()
status=()
failed=0
start=$(date +%s)
shared_up=0
# --short: the one cluster of the benches that join it (bench_cluster_start),
# started at the first of them, stopped when this script exits (the
# harness's EXIT trap); what a bench leaves running there is cancelled
# before the next.
if [ "${SVM_BENCH_SHORT:-0}" = 1 ]; then
	# shellcheck source=../tests/cluster/harness.sh
	. "$top/tests/cluster/harness.sh"
	# shellcheck source=../tests/cluster/guest.sh
	. "$top/tests/cluster/guest.sh"
	# shellcheck source=cluster.sh
	. "$here/cluster.sh"
fi
shared_cluster() {
	if [ "$shared_up" = 0 ]; then
		bench_shared_cluster_start "$logs/cluster.env" >&2
		export SVM_BENCH_CLUSTER=$logs/cluster.env
		shared_up=1
		return
	fi
	scancel --quiet -u svmtest 2>/dev/null
	# shellcheck disable=SC2016 # squeue runs in that shell
	harness_wait 60 "the previous bench's jobs to end" \
		sh -c '[ -z "$(squeue -h -o %i)" ]' || true
}
for b in "${benches[@]}"; do
	IFS='|' read -r name cmd guest <<<"$b"
	if [ -n "$only" ] && [[ " $only " != *" $name "* ]]; then
		continue
	fi
	prog=${cmd%% *}
	if [ ! -x "$prog" ]; then
		status+=("| $name | skipped | \`${prog#"$top"/}\` does not exist (not built, or not written yet) |")
		continue
	fi
	if [ "${SVM_BENCH_SHORT:-0}" = 1 ] && joins_cluster "$prog"; then
		shared_cluster
	fi
	echo "bench/run.sh: running $name: $cmd" >&2
	t0=$(date +%s)
	rc=0
	# shellcheck disable=SC2086 # cmd is words
	if [ "$guest" = 1 ] && [ -n "${SVM_GUEST_LOCK:-}" ]; then
		flock "$SVM_GUEST_LOCK" $cmd >"$logs/$name.out" 2>"$logs/$name.err" || rc=$?
	else
		$cmd >"$logs/$name.out" 2>"$logs/$name.err" || rc=$?
	fi
	secs=$(($(date +%s) - t0))
	n=0 ratios=0
	while IFS= read -r line; do
		rows+=("$name|${line#BENCH|}")
		n=$((n + 1))
		IFS='|' read -r _ _ _ _ _ ratio _ <<<"$line"
		[[ "$ratio" =~ ^[0-9]+(\.[0-9]+)?$ ]] && ratios=$((ratios + 1))
	done < <(grep '^BENCH|' "$logs/$name.out")
	if [ "$rc" != 0 ]; then
		failed=$((failed + 1))
		keep_logs=1
		status+=("| $name | **failed** (exit $rc, ${secs}s) | $(tail -n 1 "$logs/$name.err" | tr '|' '/') — logs: $logs/$name.{out,err} |")
	elif [ "$n" = 0 ] || [ "$ratios" = 0 ]; then
		failed=$((failed + 1))
		keep_logs=1
		status+=("| $name | **failed**: $n figures, $ratios ratios (${secs}s) | every bench prints a ratio against a peer of the same run; its output: $logs/$name.out |")
	else
		status+=("| $name | ran, $n figures, $ratios ratios (${secs}s) | |")
	fi
done

kvm="no usable KVM: guests run under TCG"
[ -w /dev/kvm ] && kvm="/dev/kvm present (the benches' guests still use TCG unless they say otherwise)"
short=
[ "${SVM_BENCH_SHORT:-0}" = 1 ] && short=" (--short: fewest iterations, a check, not figures to quote)"
echo "# slurm-vm benchmarks, $(date -u +%Y-%m-%dT%H:%MZ), $(($(date +%s) - start)) s$short"
echo
echo "host: $(uname -r), $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) CPUs; $kvm."
echo "Every ratio is against a peer measured in the same run. Rows marked **TCG** come from"
echo "emulated guests: regression figures for this machine, not what a KVM node delivers."
echo
# A peer that is another row of the same bench is shown with its value.
declare -A figure=()
for r in "${rows[@]+"${rows[@]}"}"; do
	IFS='|' read -r bench fig value unit _ <<<"$r"
	figure[$bench/$fig]="$value $unit"
done
# Figures held against another bench's of this run (bench|figure|peer
# bench|peer figure|row name|note): the job network's budget is set against
# the whole prolog, which vm_bench measures.
cross=(
	"jobnet|network phase, 1024-node job (1023 peers): setup|vm|prolog: own overhead (whole minus guest boot-to-ready)|network phase, 1024-node job, against the whole prolog (guest boot excluded)|the peer: vm_bench's median prolog of a 1-node job, this run"
	"jobnet|network phase, 1024-node job (1023 peers): setup|vm|prolog: whole, guest boot included|network phase, 1024-node job, against the whole prolog (TCG guest boot included)|the peer: vm_bench's median prolog of a 1-node job, this run; TCG"
)
for c in "${cross[@]}"; do
	IFS='|' read -r b f pb pf name note <<<"$c"
	a=${figure[$b/$f]:-} p=${figure[$pb/$pf]:-}
	[ -n "$a" ] && [ -n "$p" ] && [ "${a#* }" = "${p#* }" ] || continue
	r=$(awk -v x="${a% *}" -v y="${p% *}" 'BEGIN { if (y > 0) printf "%.3f", x / y; else print "-" }')
	rows+=("$b|$name|${a% *}|${a#* }|$pf|$r|$note")
	figure[$b/$pf]=$p
done
echo "| bench | figure | value | peer (same run) | ratio | note |"
echo "|---|---|---|---|---|---|"
for r in "${rows[@]+"${rows[@]}"}"; do
	IFS='|' read -r bench fig value unit peer ratio note <<<"$r"
	[ -n "${figure[$bench/$peer]:-}" ] && peer="$peer: ${figure[$bench/$peer]}"
	case "$note" in *TCG*) fig="**TCG** $fig" ;; esac
	printf '| %s | %s | %s %s | %s | %s | %s |\n' "$bench" "$fig" "$value" "$unit" \
		"${peer:--}" "${ratio:--}" "${note:-}"
done
echo
echo "| bench | status | |"
echo "|---|---|---|"
printf '%s\n' "${status[@]}"

if [ "$keep_logs" = 1 ]; then
	echo >&2
	echo "bench/run.sh: logs kept in $logs" >&2
else
	rm -rf "$logs"
fi
[ "$failed" = 0 ]
