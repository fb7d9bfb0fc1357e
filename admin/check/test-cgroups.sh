#!/bin/bash
# check-config's adoption of the guest into the job's extern step
# (cgroups.c): accounting, limits, core specialization, huge pages.
. "$(dirname "$0")/test-setup.sh"

# The guest adopted into the job's extern step (issue #29): a centre's
# configuration says nothing of it; each setting that hides the guest from
# accounting or limits gives its own warning (note: no sacct, core
# specialization with ConstrainCores, huge pages in the pool).
cp "$cc/slurm.conf.base" "$cc/slurm.conf"
: >>"$cc/vm.conf"
cp "$cc/vm.conf" "$cc/vm.conf.adopt"
printf '%s\n' PrologFlags=Alloc,Contain ProctrackType=proctrack/cgroup \
	TaskPlugin=task/affinity,task/cgroup JobAcctGatherType=jobacct_gather/cgroup \
	AccountingStorageType=accounting_storage/slurmdbd UnkillableStepTimeout=300 >>"$cc/slurm.conf"
printf 'CgroupPlugin=cgroup/v1\nconstraincores=yes # any case\n' >"$cc/cgroup.conf"
mkdir -p "$cc/sys/kernel/mm/hugepages/hugepages-2048kB"
echo 0 >"$cc/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
echo "SysfsRoot=$cc/sys" >>"$cc/vm.conf"
cp "$cc/slurm.conf" "$cc/slurm.conf.centre"
check
grep -qF "ok:      JobAcctGatherType=jobacct_gather/cgroup: the guest's MaxRSS is its cgroup's RSS (cgroup v1 total_rss" "$out" ||
	fail "jobacct_gather/cgroup on cgroup v1: MaxRSS not explained"
for w in "lacks Contain" ProctrackType= "lacks task/cgroup" "JobAcctGatherType=" \
	AccountingStorageType= ulimit_pam_adopt UnkillableStepTimeout= "ConstrainCores=yes" "huge pages"; do
	grep -F "$w" "$out" | grep -q "^\(warning\|note\):" && fail "a centre's configuration gives: $w"
done
adopt_case() { # SETTING EXPECTED: slurm.conf.centre with SETTING, EXPECTED printed
	{ cat "$cc/slurm.conf.centre"; echo "$1"; } >"$cc/slurm.conf"
	check
	grep -qF "$2" "$out" || fail "$1: not reported as: $2"
}
adopt_case PrologFlags=Alloc "note:    PrologFlags=Alloc lacks Contain: the guest stays outside the job"
adopt_case ProctrackType=proctrack/linuxproc "note:    ProctrackType=proctrack/linuxproc: adopting the guest counts and kills nothing"
adopt_case TaskPlugin=task/affinity "note:    TaskPlugin=task/affinity lacks task/cgroup: the guest is counted but not constrained"
adopt_case JobAcctGatherType=jobacct_gather/none "note:    JobAcctGatherType=jobacct_gather/none: nothing of the guest"
adopt_case JobAcctGatherType=jobacct_gather/linux "ok:      JobAcctGatherType=jobacct_gather/linux: the guest's MaxRSS is its processes' RSS, VFIO-pinned RAM included"
adopt_case AccountingStorageType=accounting_storage/none "note:    AccountingStorageType=accounting_storage/none: sacct shows no job"
adopt_case LaunchParameters=enable_nss_slurm,ulimit_pam_adopt "warning: LaunchParameters=enable_nss_slurm,ulimit_pam_adopt: the adopted qemu gets the job's resource limits"
adopt_case UnkillableStepTimeout=60 "warning: UnkillableStepTimeout=60 with DeviceAttach=vfio"
[ "$(awk '/^warning: UnkillableStepTimeout/ { getline; sub(/^ *fix: /, ""); print }' "$out")" = UnkillableStepTimeout=180 ] ||
	fail "the UnkillableStepTimeout fix is not 180 s"
adopt_case "NodeName=n[0-3] CpuSpecList=0-1" "note:    ConstrainCores=yes with core specialization: the guest's emulator and I/O threads leave the housekeeping cores"
{ cat "$cc/slurm.conf.centre"; echo UnkillableStepTimeout=60; } >"$cc/slurm.conf"
echo DeviceAttach=emulate >>"$cc/vm.conf"
check
grep -q "UnkillableStepTimeout" "$out" && fail "UnkillableStepTimeout reported without DeviceAttach=vfio"
adopt_case "NodeName=n2 CpuSpecList=0-1" "ok:      JobAcctGatherType"
grep -q "core specialization" "$out" && fail "another node's CpuSpecList applied to n1"
cp "$cc/vm.conf.adopt" "$cc/vm.conf"
echo "SysfsRoot=$cc/sys" >>"$cc/vm.conf"
echo 512 >"$cc/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"
check
grep -qF "note:    512 huge pages in this node's pool: a --vm-hugepages guest's RAM is not in the job's memory cgroup" "$out" ||
	fail "huge pages in the pool not noted"
cp "$cc/vm.conf.adopt" "$cc/vm.conf"
rm -r "$cc/cgroup.conf" "$cc/sys"
cp "$cc/slurm.conf.base" "$cc/slurm.conf"
exit 0
