#!/bin/bash
# The prolog resolves exactly the devices slurmd allocated, by PCI address.
# The oracle is independent of our code: slurmd's own numbering (`slurmd -G`),
# the job's IDX list (`scontrol show job -d`) and the sysfs fixture's IOMMU
# groups. Also: two jobs sharing the node get disjoint devices, a shuffled
# gres.conf renumbers them, and a missing File= stops slurmd 22.05 itself.
set -euo pipefail
. "$(dirname "$0")/harness.sh"

sysfs=$HARNESS_REPO/tests/fixtures/sysfs/cluster
user=svmtest

# The PCI function in IOMMU group N of the fixture (one per group here).
group_addr() { basename "$(ls -d "$sysfs/kernel/iommu_groups/$1/devices/"*)"; }

# "0-1,3" -> 0 1 3, one a line.
expand_list() {
	local part
	for part in ${1//,/ }; do
		seq "${part%-*}" "${part#*-}"
	done
}

# expected NAME IDX-LIST: the PCI addresses slurmd's numbering gives.
expected() {
	local name=$1 list=$2 i file
	expand_list "$list" | while read -r i; do
		file=$(harness_gres_table | awk -v n="$name" '$1 == n' | sed -n "$((i + 1))p" | awk '{print $3}')
		group_addr "$(basename "$file")"
	done | sort
}

# IDX list of NAME in a running job's `scontrol show job -d` (empty if none:
# the caller says so, set -e must not end the test silently).
job_idx() {
	scontrol show job -d "$1" | grep -o "$2:[0-9]*(IDX:[^)]*)" |
		sed 's/.*IDX:\([^)]*\))/\1/' || true
}

# PCI addresses the prolog logged for NAME of job ID.
prolog_addrs() {
	grep "job $1: $2 [0-9]* = PCI " "$HARNESS_VM_LOG" |
		sed 's/.* = PCI \([^ ]*\) .*/\1/' | sort || true
}

submit_running() { # submit_running GRES -> job id, once running
	local id
	id=$(harness_as_user "$user" sbatch --parsable --vm-image=testimg -c1 \
		--mem=256M --gres="$1" --wrap 'sleep 8')
	harness_wait 60 "job $id to run" \
		bash -c "squeue -h -j $id -o %T | grep -qx RUNNING" || {
		squeue -j "$id" -o '%i %T %r'
		return 1
	}
	# RUNNING comes before the prolog is through (PrologFlags=Alloc runs
	# it at allocation): the oracle needs its device lines.
	harness_wait 120 "prolog of job $id" \
		grep -q "job $id: prolog done" "$HARNESS_VM_LOG" || return 1
	echo "$id"
}

check_job() { # check_job ID: prolog's devices == slurmd's numbering
	local id=$1 name idx want got
	for name in gpu ibvf; do
		idx=$(job_idx "$id" "$name")
		[ -n "$idx" ] || { fail "job $id has no $name IDX"; continue; }
		want=$(expected "$name" "$idx")
		got=$(prolog_addrs "$id" "$name")
		if [ "$want" = "$got" ] && [ -n "$got" ]; then
			echo "ok: job $id $name IDX:$idx -> $(echo $got)"
		else
			fail "job $id $name IDX:$idx: prolog resolved '$(echo $got)', slurmd -G says '$(echo $want)'"
		fi
	done
}

harness_ensure_test_users
harness_start
harness_add_catalog_image testimg "" raw
echo "slurmd -G:"; harness_gres_table | sed 's/^/  /'

# One job with two VFs.
a=$(submit_running gpu:1,ibvf:2)
check_job "$a"
# Two jobs at once on the node (one core each) must get disjoint devices.
b=$(submit_running gpu:1,ibvf:1)
c=$(submit_running gpu:1,ibvf:1) || true
[ -n "$c" ] || c=$(submit_running gpu:1,ibvf:1)
check_job "$b"
check_job "$c"
dup=$(cat <(prolog_addrs "$b" gpu) <(prolog_addrs "$b" ibvf) \
	<(prolog_addrs "$c" gpu) <(prolog_addrs "$c" ibvf) | sort | uniq -d)
if [ -z "$dup" ]; then
	echo "ok: jobs $b and $c got disjoint devices"
else
	fail "jobs $b and $c share $dup"
fi
scancel "$a" "$b" "$c" 2>/dev/null || true
harness_stop

# Shuffled gres.conf: the device lines of each name in reverse order.
harness_config_hook() {
	local f=$HARNESS_ETC/gres.conf
	{ grep -v '^NodeName' "$f"; grep '^NodeName.*Name=gpu' "$f" | tac
	  grep '^NodeName.*Name=ibvf' "$f" | tac; } >"$f.new"
	mv "$f.new" "$f"
}
harness_start
harness_add_catalog_image testimg "" raw
echo "slurmd -G after shuffling:"; harness_gres_table | sed 's/^/  /'
first=$(harness_gres_table | awk '$1 == "gpu"' | head -1 | awk '{print $3}')
[ "$(basename "$first")" = 13 ] || fail "shuffled gres.conf: slurmd -G's first gpu is $first"
d=$(submit_running gpu:1,ibvf:1)
check_job "$d"
scancel "$d" 2>/dev/null || true

# A missing File= early in gres.conf: slurmd 22.05 does not skip it (which
# would shift every later index) but refuses to start, so no job can get a
# misnumbered device. Checked with slurmd's own `-G` on a copy.
unset -f harness_config_hook
copy=$HARNESS_DIR/missing
mkdir -p "$copy"
cp "$HARNESS_ETC"/*.conf "$copy/"
sed -i '0,/Name=gpu File=[^ ]*/s//Name=gpu File=\/nonexistent\/vfio\/99/' "$copy/gres.conf"
rc=0
out=$(timeout 90 slurmd -G -N "${HARNESS_NODES[0]}" -f "$copy/slurm.conf" 2>&1) || rc=$?
if [ "$rc" != 0 ] && grep -q "can't stat gres.conf file /nonexistent/vfio/99" <<<"$out"; then
	echo "ok: slurmd refuses a missing File= (rc=$rc): $(grep -o "fatal.*" <<<"$out" | head -1)"
else
	fail "slurmd with a missing File=: rc=$rc, $(tail -3 <<<"$out")"
fi

[ "$failures" = 0 ]
