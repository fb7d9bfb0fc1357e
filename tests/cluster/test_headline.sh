#!/bin/bash
# cluster-timeout: 900
# The README's first command, end to end: tests/headline.sh installs,
# builds, starts a cluster, submits
#   sbatch -N1 --vm-image=testguest --gres=gpu:1,ibvf:1 job.sh
# (doc/examples/job.sh) as a normal user, stops the cluster and checks that
# nothing is left. Here its output is held against what a user must see:
# the job completed with 0:0; job.sh printed the guest's kernel (the test
# guest's, not the host's), the vCPU pinning the prolog planned, both
# planned devices and their stand-ins in the guest's NUMA node 0, and
# MPI_Allreduce's right sum on both ranks; nothing of the guest or the
# cluster was left.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
failures=0
ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

log=$(mktemp "${TMPDIR:-/tmp}/svm-headline.XXXXXX")
trap 'rm -f "$log"' EXIT
rc=0
"$repo/tests/headline.sh" >"$log" 2>&1 || rc=$?
show() { sed 's/^/    /' "$log"; }

[ "$rc" = 0 ] && ok "tests/headline.sh exited 0" || fail "tests/headline.sh exited $rc"

# Sections of headline.sh's output: "### TITLE" lines.
section() { awk -v t="$1" '/^### /{ on = index($0, t) == 5; next } on' "$log"; }
out=$(section "job output")
vmlog=$(section "what slurm-vm did")
result=$(section "result")

job=$(sed -n 's/^submitted job \([0-9]*\)$/\1/p' "$log")
[ -n "$job" ] || fail "no job was submitted"
grep -qx "job $job: COMPLETED, exit code 0:0" <<<"$result" &&
	ok "job $job COMPLETED with exit code 0:0" ||
	fail "job state: $(head -1 <<<"$result")"

guest_kernel=$(file -bL "$repo/tests/guest/cache/vmlinuz" | grep -o 'version [^ ]*' | cut -d' ' -f2)
# The first release-shaped line after the header: a task may first say on
# stderr that the batch script's directory is not in the guest.
got=$(sed -n '/^--- the guest.s kernel/,/^---/p' <<<"$out" | grep -m1 -x '[0-9][0-9a-z.+-]*' || true)
if [ -n "$guest_kernel" ] && [ "$got" = "$guest_kernel" ]; then
	ok "job.sh printed the guest's kernel: $got (host: $(uname -r))"
else
	fail "guest kernel: job.sh printed '$got', the test guest's is '$guest_kernel'"
fi

# Pinning: every "vCPU->PU" pair of the prolog's plan, as libvirt shows it.
plan=$(sed -n 's/.*plan: cell [0-9]*: .*vCPU->PU //p' <<<"$vmlog" | tr '\n' ' ')
pins=0
for pair in $plan; do
	if grep -qx "vCPU ${pair%->*} -> host CPU ${pair#*->}" <<<"$out"; then
		pins=$((pins + 1))
	else
		fail "pinning: no 'vCPU ${pair%->*} -> host CPU ${pair#*->}' in job.sh's output"
	fi
done
[ "$pins" -gt 0 ] && [ "$pins" = "$(wc -w <<<"$plan")" ] &&
	ok "job.sh printed the planned vCPU pinning: $plan" ||
	fail "pinning: plan '$plan', $pins shown"

# Devices: the prolog's allocation (gres index = PCI address) in the metadata
# job.sh printed, and one stand-in per device in the guest's NUMA node 0.
n=0
for addr in $(sed -n 's/.*job [0-9]*: [a-z]* [0-9]* = PCI \([^ ]*\) .*/\1/p' <<<"$vmlog"); do
	grep -q "address=\"$addr\"" <<<"$out" && n=$((n + 1)) ||
		fail "the planned device $addr is not in job.sh's output"
done
if [ "$n" = 2 ] && grep -q 'gres="gpu"' <<<"$out" && grep -q 'gres="ibvf"' <<<"$out"; then
	ok "job.sh printed both planned devices (a gpu and an ibvf)"
else
	fail "devices: $n of the prolog's addresses shown"
fi
standins=$(grep -c 'vendor 0x1af4 device 0x1044 NUMA node 0$' <<<"$out" || true)
[ "$standins" = 2 ] && ok "the guest sees both device stand-ins in its NUMA node 0" ||
	fail "the guest shows $standins device stand-ins in NUMA node 0"

mpi=$(grep -c '^mpi: rank [01] of 2 on .*: allreduce sum of ranks 1, expected 1: ok$' <<<"$out" || true)
if [ "$mpi" = 2 ] && grep -q '^mpi: MPICH Version:' <<<"$out" &&
	grep -qx -- "--- the MPI step's exit status: 0" <<<"$out"; then
	ok "srun --mpi=pmi2 -n2: MPICH's MPI_Allreduce right on both ranks, step exit 0"
else
	fail "MPI: $mpi ranks right"
fi

grep -q '^after the job: nothing of its guest left' <<<"$result" &&
	ok "after the job: no domain, overlay, state, relay or qemu" ||
	fail "$(grep '^after the job' <<<"$result")"
grep -q '^after stopping the cluster: nothing left' <<<"$result" &&
	! grep -q 'harness: sweeping' "$log" &&
	ok "after stopping the cluster: no directory, domain or process (none had to be swept)" ||
	fail "$(grep '^after stopping' <<<"$result") $(grep 'harness: sweeping' "$log")"

if [ "$failures" != 0 ]; then
	echo "--- tests/headline.sh's output:"
	show
else
	echo "--- the job's output and the result:"
	section "job output" | sed 's/^/    /'
	sed 's/^/    /' <<<"$result"
fi
[ "$failures" = 0 ]
