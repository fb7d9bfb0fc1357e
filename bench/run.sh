#!/bin/bash
# Every benchmark of the suite in one run, as one markdown table.
#
#   bench/run.sh [BUILD-DIR]          (root; BUILD-DIR default build/)
#   make bench                        (the same, from the build tree)
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
# listed as skipped, one that fails as failed (its log is kept), one that
# prints no BENCH lines is named with its log. Figures from
# guests under TCG (no KVM, as on CI machines) carry the label "TCG" from
# their bench: regression figures for this machine, not production ones.
#
# Environment: SVM_BENCH_ONLY="plan channel" runs only those; SVM_GUEST_LOCK
# =FILE runs each bench that boots a guest under flock FILE (machines shared
# by several test runs); SVM_BENCH_LOGS=DIR keeps every bench's output there
# (default: a temporary directory, removed unless a bench failed).
# Exit status: 0 when every bench that exists ran, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build=$(cd "${1:-${BUILD_DIR:-$top/build}}" 2>/dev/null && pwd) ||
	{ echo "bench/run.sh: no build directory ${1:-${BUILD_DIR:-$top/build}}" >&2; exit 2; }
export BUILD_DIR=$build
only=${SVM_BENCH_ONLY:-}

[ "$(id -u)" = 0 ] || { echo "bench/run.sh: run as root (the benches start libvirtd, slurmd and guests)" >&2; exit 2; }

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
	"plan|$build/bench/plan_bench 200|0"
	"vm|$here/vm_bench.sh|1"
	"task|$here/task_bench.sh|1"
	"channel|$here/channel_bench.sh $build|1"
)
for f in "$here"/*_bench.sh; do
	case " ${benches[*]} " in *"$f"*) continue ;; esac
	[ -e "$f" ] && benches+=("$(basename "$f" _bench.sh)|$f|1")
done

rows=()
status=()
failed=0
start=$(date +%s)
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
	n=0
	while IFS= read -r line; do
		rows+=("$name|${line#BENCH|}")
		n=$((n + 1))
	done < <(grep '^BENCH|' "$logs/$name.out")
	if [ "$rc" != 0 ]; then
		failed=$((failed + 1))
		keep_logs=1
		status+=("| $name | **failed** (exit $rc, ${secs}s) | $(tail -n 1 "$logs/$name.err" | tr '|' '/') — logs: $logs/$name.{out,err} |")
	elif [ "$n" = 0 ]; then
		keep_logs=1
		status+=("| $name | ran, but prints no BENCH lines (${secs}s) | its output: $logs/$name.out |")
	else
		status+=("| $name | ran, $n figures (${secs}s) | |")
	fi
done

kvm="no usable KVM: guests run under TCG"
[ -w /dev/kvm ] && kvm="/dev/kvm present (the benches' guests still use TCG unless they say otherwise)"
echo "# slurm-vm benchmarks, $(date -u +%Y-%m-%dT%H:%MZ), $(($(date +%s) - start)) s"
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
