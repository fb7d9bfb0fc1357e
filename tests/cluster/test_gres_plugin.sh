#!/bin/bash
# cluster-timeout: 420
# gres/ibvf (gres_ibvf.so, built with --with-slurm-source) in a real
# slurmctld and slurmd:
#  1. with gres.conf's Name=ibvf File= lines: `sbatch --gres=ibvf:2` gets
#     SLURM_JOB_IBVFS in the Prolog (the prolog logs it and checks it
#     against its own mapping), the Epilog and the batch job, and
#     SLURM_STEP_IBVFS in a step's tasks, all matching `slurmd -G` and the
#     sysfs fixture; gres.conf changed under a running slurmd makes the
#     prolog refuse the mismatch and drain the node;
#  2. with IbvfAutoDetect=yes and no Name=ibvf lines: slurmd -G lists
#     exactly the lines `slurm-vm gres` prints, and a job gets them;
#  3. the same cluster without the plugin: the prolog maps the VFs itself
#     and the job runs: removing the plugin leaves the suite working; but
#     IbvfAutoDetect=yes without the plugin is refused (check-config says
#     so, the prolog drains the node rather than guess a numbering).
# The oracle is slurmd's own numbering (`slurmd -G`), the job's IDX list and
# the fixture's IOMMU groups, never our code.
set -euo pipefail
. "$(dirname "$0")/harness.sh"

so=$BUILD_DIR/gres_vgpu/.libs/gres_ibvf.so
[ -f "$so" ] || harness_skip "$so not built: configure --with-slurm-source=DIR (scripts/install-deps.sh --slurm-source DIR)"

sysfs=$HARNESS_REPO/tests/fixtures/sysfs/cluster
user=svmtest

# The PCI function in IOMMU group N of the fixture (one per group here).
group_addr() { basename "$(ls -d "$sysfs/kernel/iommu_groups/$1/devices/"*)"; }

# slurmd -G's ibvf rows: "File Cores", in slurmd's index order.
ibvf_table() {
	timeout 60 slurmd -G -N "${HARNESS_NODES[0]}" -f "$SLURM_CONF" 2>&1 |
		grep 'Gres Name=ibvf ' |
		sed 's/.* File=\([^ ]*\) Cores=\([^ ]*\) .*/\1 \2/'
}

# What SLURM_JOB_IBVFS must be for IDX list "0,1" (or "0-1"), from slurmd -G
# and the fixture.
expected_ibvfs() {
	local part i file out=""
	for part in ${1//,/ }; do
		for i in $(seq "${part%-*}" "${part#*-}"); do
			file=$(ibvf_table | sed -n "$((i + 1))p" | awk '{print $1}')
			out+="${out:+,}$i=$(group_addr "$(basename "$file")")"
		done
	done
	echo "$out"
}

job_done() {
	local st
	st=$(scontrol -o show job "$1" 2>/dev/null) || return 1
	case "$st" in *Reason=launch_failed* | *Reason=JobHeld*) ;;
	*JobState=PENDING* | *JobState=RUNNING* | *JobState=CONFIGURING* | *JobState=COMPLETING*) return 1 ;;
	esac
	! sinfo -h -N -t completing -o %N | grep -q .
}

# submit OUTFILE ARGS...: a batch job as $user writing OUTFILE; its id.
submit() {
	local out=$1
	shift
	harness_as_user "$user" timeout 30 sbatch --parsable -c1 --mem=256M \
		-o "$out" "$@"
}

log_value() { # log_value PATTERN: the last SLURM_JOB_IBVFS=... on such a line
	grep -E "$1" "$HARNESS_VM_LOG" 2>/dev/null | tail -1 |
		sed -n 's/.*SLURM_JOB_IBVFS=\([^ ]*\).*/\1/p'
}

# vm_job_check LABEL: a VM job with --gres=ibvf:2 (Boot=no: the prolog
# plans, boots nothing); SLURM_JOB_IBVFS in the Prolog, the Epilog and the
# batch script.
vm_job_check() {
	local label=$1 out id want got i
	out=$HARNESS_WORK/$user/vm-$label.out
	id=$(submit "$out" --vm-image=testimg --gres=ibvf:2 \
		--wrap 'echo "job env: SLURM_JOB_IBVFS=${SLURM_JOB_IBVFS-unset}"')
	harness_wait 90 "job $id to end" job_done "$id" ||
		fail "$label: job $id did not end: $(scontrol -o show job "$id")"
	harness_wait 20 "job $id's epilog line" grep -q "job $id: VM job ended" "$HARNESS_VM_LOG" || true
	want=$(expected_ibvfs "0-1")
	got=$(log_value "job $id: SLURM_JOB_IBVFS=.*agrees")
	if [ -n "$want" ] && [ "$got" = "$want" ]; then
		ok "$label: Prolog of job $id: SLURM_JOB_IBVFS=$got agrees with slurmd -G and the fixture"
	else
		fail "$label: Prolog of job $id logged SLURM_JOB_IBVFS='$got', slurmd -G + fixture say '$want'"$'\n'"$(grep "job $id:" "$HARNESS_VM_LOG" | tail -5)"
	fi
	got=$(log_value "job $id: epilog: SLURM_JOB_IBVFS=")
	[ "$got" = "$want" ] && ok "$label: Epilog of job $id: SLURM_JOB_IBVFS=$got" ||
		fail "$label: Epilog of job $id logged SLURM_JOB_IBVFS='$got', want '$want'"
	got=$(sed -n 's/^job env: SLURM_JOB_IBVFS=//p' "$out" 2>/dev/null)
	[ "$got" = "$want" ] && ok "$label: batch job $id: SLURM_JOB_IBVFS=$got" ||
		fail "$label: batch job $id has SLURM_JOB_IBVFS='$got', want '$want' ($(cat "$out" 2>&1))"
	# The prolog's own mapping, too: the same functions.
	for i in 0 1; do
		got=$(grep "job $id: ibvf $i = PCI " "$HARNESS_VM_LOG" | tail -1 | sed 's/.* = PCI \([^ ]*\) .*/\1/')
		[ "$got" = "$(expected_ibvfs "$i" | cut -d= -f2)" ] ||
			fail "$label: job $id: the prolog mapped ibvf $i to '$got'"
	done
}

harness_ensure_test_users

# ---- 1. gres/ibvf with gres.conf's File= lines
export HARNESS_GRES_PLUGIN=1
harness_start
harness_add_catalog_image testimg "" raw
grep -q "^PluginDir=$HARNESS_BIN/plugins:" "$SLURM_CONF" || fail "no PluginDir with the plugin in slurm.conf"
for d in slurmctld "slurmd-${HARNESS_NODES[0]}"; do
	if grep -q "Gres InfiniBand VF plugin (slurm-vm) loaded" "$HARNESS_DIR/log/$d.log"; then
		ok "$d loaded gres/ibvf: $(grep -m1 -o 'gres/ibvf.*\|Gres InfiniBand VF plugin.*loaded' "$HARNESS_DIR/log/$d.log")"
	else
		fail "$d did not load gres/ibvf: $(grep -i 'gres' "$HARNESS_DIR/log/$d.log" | tail -5)"
	fi
done
echo "slurmd -G (ibvf):"; ibvf_table | sed 's/^/  /'
vm_job_check "gres.conf"

# A plain job (no --vm-image) with one VF: the batch script's
# SLURM_JOB_IBVFS and the task's SLURM_STEP_IBVFS name the same VF.
out=$HARNESS_WORK/$user/plain.out
id=$(submit "$out" --gres=ibvf:1 --wrap 'echo "job: $SLURM_JOB_IBVFS"; srun sh -c "echo task: \$SLURM_STEP_IBVFS"')
harness_wait 60 "job $id to end" job_done "$id" || fail "plain job $id did not end"
job_val=$(sed -n 's/^job: //p' "$out")
task_val=$(sed -n 's/^task: //p' "$out")
if [[ "$job_val" =~ ^([01])=([0-9a-f:.]+)$ ]] && [ "$job_val" = "$(expected_ibvfs "${BASH_REMATCH[1]}")" ] &&
	[ "$task_val" = "$job_val" ]; then
	ok "plain job $id: SLURM_JOB_IBVFS=$job_val, its task's SLURM_STEP_IBVFS=$task_val"
else
	fail "plain job $id: job '$job_val', task '$task_val' ($(cat "$out" 2>&1))"
fi
grep -q "job $id:" "$HARNESS_VM_LOG" && fail "plain job $id left lines in the slurm-vm log"

# gres.conf reordered under the running slurmd (no restart): slurmd still
# numbers the old way, the prolog reads the new file and must refuse to
# hand out devices by either numbering: a node fault, the node drains.
f=$HARNESS_ETC/gres.conf
{ grep -v 'Name=ibvf' "$f"; grep 'Name=ibvf' "$f" | tac; } >"$f.new"
mv "$f.new" "$f"
id=$(submit /dev/null --vm-image=testimg --gres=ibvf:2 --wrap true)
harness_wait 60 "node to drain" bash -c "sinfo -h -N -t drain,drained,draining -o %N | grep -q ." ||
	fail "mismatch: the node did not drain (job $id: $(scontrol -o show job "$id" | grep -o 'JobState=[^ ]*'))"
if grep -q "ibvf . is PCI .* here but SLURM_JOB_IBVFS=.*number the VFs differently" "$HARNESS_VM_LOG" &&
	grep -q "job $id: the devices and CPUs Slurm allocated .* do not match this node" "$HARNESS_VM_LOG"; then
	ok "mismatch refused: $(grep -o "ibvf . is PCI .* differently" "$HARNESS_VM_LOG" | tail -1)"
else
	fail "mismatch: no clear message in $HARNESS_VM_LOG: $(tail -8 "$HARNESS_VM_LOG")"
fi
scancel "$id" 2>/dev/null || true
harness_stop

# ---- 2. IbvfAutoDetect=yes: the VFs from sysfs, no Name=ibvf in gres.conf
harness_config_hook() {
	local dev=$HARNESS_DIR/nodes/${HARNESS_NODES[0]}/dev/vfio
	sed -i '/Name=ibvf/d' "$HARNESS_ETC/gres.conf"
	harness_vmconf_set IbvfAutoDetect yes
	harness_vmconf_set VfioDir "$dev"
}
harness_start
harness_add_catalog_image testimg "" raw
unset -f harness_config_hook
grep -q 'Name=ibvf' "$HARNESS_ETC/gres.conf" && fail "gres.conf still has ibvf lines"
want=$("$HARNESS_BIN/slurm-vm" gres --config "$HARNESS_VM_CONF" |
	sed -n 's/^Name=ibvf File=\([^ ]*\) Cores=\([^ ]*\)$/\1 \2/p')
got=$(ibvf_table)
echo "slurm-vm gres (ibvf):"; echo "$want" | sed 's/^/  /'
echo "slurmd -G (ibvf):"; echo "$got" | sed 's/^/  /'
if [ -n "$want" ] && [ "$(echo "$want" | wc -l)" = 2 ] && [ "$got" = "$want" ]; then
	ok "detection: slurmd -G lists exactly the ibvf lines of slurm-vm gres, in its order"
else
	fail "detection: slurmd -G has '$got', slurm-vm gres prints '$want'"
fi
vm_job_check "detected"
cc=$("$HARNESS_BIN/slurm-vm" check-config 2>&1 || true)
grep -q "IbvfAutoDetect=yes with $HARNESS_BIN/plugins/gres_ibvf.so" <<<"$cc" &&
	ok "check-config: IbvfAutoDetect=yes with the plugin in PluginDir" ||
	fail "check-config with the plugin: $(grep -i ibvf <<<"$cc")"
harness_stop

# ---- 3. without the plugin: count-only ibvf, the prolog's own mapping
export HARNESS_GRES_PLUGIN=0
harness_start
harness_add_catalog_image testimg "" raw
grep -q "^PluginDir=" "$SLURM_CONF" && fail "PluginDir still set without the plugin"
out=$HARNESS_WORK/$user/noplugin.out
id=$(submit "$out" --vm-image=testimg --gres=ibvf:2 \
	--wrap 'echo "job env: SLURM_JOB_IBVFS=${SLURM_JOB_IBVFS-unset}"')
harness_wait 90 "job $id to end" job_done "$id" || fail "job $id did not end without the plugin"
state=$(scontrol -o show job "$id" | grep -o 'JobState=[^ ]*')
[ "$state" = JobState=COMPLETED ] && ok "without gres/ibvf: VM job $id $state" ||
	fail "without gres/ibvf: VM job $id $state"
grep -q "job $id: SLURM_JOB_IBVFS" "$HARNESS_VM_LOG" && fail "without the plugin the prolog saw SLURM_JOB_IBVFS"
n=$(grep -c "job $id: ibvf [01] = PCI " "$HARNESS_VM_LOG" || true)
[ "$n" = 2 ] && ok "without gres/ibvf: the prolog mapped both VFs itself" ||
	fail "without gres/ibvf: the prolog mapped $n VFs: $(grep "job $id" "$HARNESS_VM_LOG" | tail -3)"
grep -q 'SLURM_JOB_IBVFS=unset' "$out" && ok "without gres/ibvf: the job has no SLURM_JOB_IBVFS" ||
	fail "without gres/ibvf: job output $(cat "$out" 2>&1)"
if sinfo -h -N -t drain,drained,draining -o %N | grep -q .; then
	fail "without gres/ibvf: node drained: $(sinfo -h -R)"
else
	ok "without gres/ibvf: node not drained"
fi

# IbvfAutoDetect=yes without the plugin: slurmd numbers gres.conf's lines,
# the prolog would number detected ones. check-config names the problem;
# the prolog refuses (node fault) instead of guessing.
harness_vmconf_set IbvfAutoDetect yes
cc=$("$HARNESS_BIN/slurm-vm" check-config 2>&1 || true)
grep -q "IbvfAutoDetect=yes in vm.conf but no gres_ibvf.so in PluginDir" <<<"$cc" &&
	ok "check-config: $(grep -o 'IbvfAutoDetect=yes in vm.conf but no gres_ibvf.so[^:]*' <<<"$cc")" ||
	fail "check-config without the plugin: $(grep -i ibvf <<<"$cc")"
id=$(submit /dev/null --vm-image=testimg --gres=ibvf:1 --wrap true)
harness_wait 60 "node to drain" bash -c "sinfo -h -N -t drain,drained,draining -o %N | grep -q ." ||
	fail "IbvfAutoDetect=yes without the plugin: node not drained"
grep -q "IbvfAutoDetect=yes in vm.conf but slurmd gave no SLURM_JOB_IBVFS" "$HARNESS_VM_LOG" &&
	ok "IbvfAutoDetect=yes without the plugin: prolog refused, node drained" ||
	fail "IbvfAutoDetect=yes without the plugin: $(tail -4 "$HARNESS_VM_LOG")"
scancel "$id" 2>/dev/null || true

[ "$failures" = 0 ]
