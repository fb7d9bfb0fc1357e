#!/bin/bash
# cluster-timeout: 720
# A VM job on the real cluster (libvirtd, test guest under TCG,
# DeviceAttach=emulate): the guest is pinned as planned, its devices are in
# the metadata and visible in the guest, tasks run in it as the job user
# through the relay; afterwards nothing is left. Faults: a guest that never
# becomes ready, one whose qemu dies while it boots (refused at once, not
# after BootTimeout), qemu killed mid-job, the epilog run twice, a prolog killed
# midway. Each ends with nothing left and the node up.
# IbPartitions=yes on a writable copy of the node's sysfs fixture: the job's
# VF takes the job's GUIDs (mlx5's sriov/<n>/) while it runs and gets its
# old ones back after; the record for the subnet manager's side comes and
# goes with the job, and `slurm-vm ib-partitions` asks slurmctld which jobs
# still run.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest

# Where slurmdbd is installed, as a centre runs: no cgroup of a job left
# after any of these faults either.
guest_centre_config
guest_cluster_start 60 ShutdownTimeout=5
guest_add_to_catalog deadguest "Cmdline=console=ttyS0 root=/dev/nonexistent rootwait"

submit() { harness_as_user "$user" sbatch --parsable -c2 --mem=1G "$@"; }
domain_of() { echo "slurmvm-job-$1.0"; }
running() { virsh -q list --name | grep -qx "$(domain_of "$1")"; }
logged() { grep -q "job $1: $2" "$HARNESS_VM_LOG"; }
job_state() { squeue -h -j "$1" -t all -o %T; }
wait_end() {
	harness_wait "${2:-120}" "job $1 to end" bash -c \
		"squeue -h -j $1 -t all -o %T | grep -Eqx 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL'"
}

# IbPartitions=yes: the prolog writes the VF's sriov/<n>/: a copy
sys=$HARNESS_DIR/sysfs
cp -a "$HARNESS_REPO/tests/fixtures/sysfs/cluster" "$sys"
mkdir -p "$HARNESS_DIR/ibrec"
printf 'Default=0x7fff, ipoib : ALL=full, SELF=full;\n' >"$HARNESS_DIR/partitions.base"
harness_vmconf_set SysfsRoot "$sys"
harness_vmconf_set IbPartitions yes
harness_vmconf_set IbPartitionDir "$HARNESS_DIR/ibrec"
vf_files() { # the settings of every VF of the fixture's ConnectX-6
	local d
	for d in "$sys"/bus/pci/devices/0000:3f:00.0/sriov/*; do
		echo "$(basename "$d"):$(cat "$d/node" "$d/port" "$d/policy" | tr '\n' ' ')"
	done
}
ibparts() {
	"$HARNESS_BIN/slurm-vm" ib-partitions --base "$HARNESS_DIR/partitions.base" \
		--records "$HARNESS_DIR/ibrec" --output "$HARNESS_DIR/partitions.conf"
}
vf_before=$(vf_files)

# --- a normal VM job
a=$(submit --vm-image=testguest --gres=gpu:1,ibvf:1 --wrap 'sleep 120')
if harness_wait 180 "job $a's guest to be ready" logged "$a" "guest ready"; then
	ok "job $a: $(grep -o "guest ready.*" "$HARNESS_VM_LOG" | tail -1)"
else
	fail "job $a: no guest"
	tail -20 "$HARNESS_VM_LOG"
fi
dom=$(domain_of "$a")
xml=$(virsh dumpxml "$dom" 2>/dev/null || true)

# Pinning: each vCPU -> the PU of the plan, and the threads really are.
plan=$(grep "job $a: plan: cell 0:" "$HARNESS_VM_LOG" | sed 's/.*vCPU->PU //')
for pair in $plan; do
	v=${pair%->*} pu=${pair#*->}
	grep -q "<vcpupin vcpu='$v' cpuset='$pu'/>" <<<"$xml" ||
		fail "vCPU $v not pinned to $pu in the domain XML"
done
while read -r v tid; do
	want=$(grep -o "<vcpupin vcpu='$v' cpuset='[^']*'" <<<"$xml" | sed "s/.*cpuset='//;s/'//")
	got=$(taskset -pc "$tid" | sed 's/.*: //')
	[ "$got" = "$want" ] || fail "vCPU $v thread $tid runs on $got, not $want"
done < <(virsh qemu-monitor-command "$dom" --hmp 'info cpus' |
	sed -n 's/.*CPU #\([0-9]*\).*thread_id=\([0-9]*\).*/\1 \2/p')
ok "job $a: vCPUs pinned as planned ($plan), threads included"
grep -q "<memnode cellid='0' mode='strict'" <<<"$xml" && ok "job $a: guest memory bound strict" ||
	fail "no strict <memnode> in the domain"

# Devices: in the metadata by their host address, and in the guest.
for addr in $(grep "job $a: [a-z]* [0-9]* = PCI" "$HARNESS_VM_LOG" | sed 's/.* = PCI \([^ ]*\) .*/\1/'); do
	grep -q "<svm:device address=\"$addr\"" <<<"$xml" && ok "metadata holds $addr" ||
		fail "metadata lacks $addr"
done
out=$(guest_exec "$user" "$a" -- sh -c 'id -u; for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor):$(cat $d/device)" = 0x1af4:0x1044 ] && echo "$(basename $d) numa=$(cat $d/numa_node) path=$(readlink -f $d)"; done; exit 7' 2>&1) && rc=0 || rc=$?
if [ "$rc" = 7 ] && [ "$(head -1 <<<"$out")" = "$(id -u "$user")" ]; then
	ok "job $a: a task ran in the guest as $user (uid $(id -u "$user")), exit 7 came back"
else
	fail "job $a: exec in the guest: rc=$rc out=$out"
fi
n=$(grep -c ' numa=0' <<<"$out" || true)
if [ "$n" = 2 ]; then
	ok "job $a: the guest sees 2 device stand-ins in its NUMA cell 0: $(grep numa= <<<"$out" | tr '\n' ' ')"
else
	fail "job $a: guest devices: $out"
fi
# The fixture's GPU and VF share a PCIe switch (as on a DGX-1): in the
# guest they sit on the planned downstream ports of one switch.
want=$(grep "job $a: plan: guest PCI: .*downstream port:" "$HARNESS_VM_LOG" |
	sed 's/.*downstream port: \([^ ]*\) .*/\1/' | sort | tr '\n' ' ')
got=$(sed -n 's/^\([^ ]*\) numa=.*/\1/p' <<<"$out" | sort | tr '\n' ' ')
# .../pci0000:f8/<root port>/<upstream port>/<downstream port>/<device>
ups=$(sed -n 's/.* path=.*\/pci[^/]*\/[^/]*\/\([^/]*\)\/[^/]*\/[^/]*$/\1/p' <<<"$out" | sort -u)
if [ "$want" = "$got" ] && [ "$(wc -w <<<"$want")" = 2 ] && [ "$(wc -l <<<"$ups")" = 1 ] && [ -n "$ups" ]; then
	ok "job $a: GPU and VF under one switch in the guest (upstream port $ups), at the planned $want"
else
	fail "job $a: planned downstream ports '$want', guest has '$got' under upstream port(s) '$ups': $out"
fi
# InfiniBand partition: the VF's GUIDs are the job's, the record is there
vfline=$(grep "job $a: VF .*port GUID" "$HARNESS_VM_LOG" | head -1)
port_guid=$(sed 's/.*port GUID //' <<<"$vfline")
pkey=$(printf '0x%04x' $((0x1000 + a % (0x7ffe - 0x1000 + 1))))
rec=$HARNESS_DIR/ibrec/job-$a.${HARNESS_NODES[0]}
if [ -n "$port_guid" ] && grep -q " $port_guid Follow" <<<"$(vf_files)" &&
	grep -qx "pkey $pkey" "$rec" 2>/dev/null &&
	grep -qx "guid 0x$(tr -d : <<<"$port_guid")" "$rec"; then
	ok "job $a: its VF took port GUID $port_guid (policy Follow), the record names it with P_Key $pkey"
else
	fail "job $a: VF GUIDs or record wrong: log '$vfline', VFs $(vf_files), record $(cat "$rec" 2>&1)"
fi
out=$(ibparts 2>&1) || fail "slurm-vm ib-partitions: $out"
grep -q "^slurmvm_job$a=$pkey, ipoib :" "$HARNESS_DIR/partitions.conf" &&
	grep -qx "	0x$(tr -d : <<<"$port_guid")=full;" "$HARNESS_DIR/partitions.conf" &&
	ok "job $a: slurm-vm ib-partitions gives the running job its partition ($out)" ||
	fail "job $a: no partition for the running job: $(cat "$HARNESS_DIR/partitions.conf")"
scancel "$a"
wait_end "$a" || fail "job $a did not end"
harness_wait 30 "job $a's record to go" bash -c "[ ! -e '$rec' ]" &&
	[ "$(vf_files)" = "$vf_before" ] &&
	ok "job $a: after the job the VF has its old GUIDs and policy back, the record is gone" ||
	fail "job $a: after the job: VFs $(vf_files) (were $vf_before), record $(ls "$HARNESS_DIR/ibrec")"
# a record of an ended job (a node that crashed keeps its own): left out
printf 'job %s\npkey %s\nguid 0x%s\n' "$a" "$pkey" "$(tr -d : <<<"$port_guid")" >"$rec"
out=$(ibparts 2>&1) || fail "slurm-vm ib-partitions: $out"
rm -f "$rec"
! grep -q "slurmvm_job$a" "$HARNESS_DIR/partitions.conf" && grep -q "1 stale record" <<<"$out" &&
	ok "job $a ended: its partition leaves partitions.conf ($out)" ||
	fail "job $a ended, partitions.conf still: $(cat "$HARNESS_DIR/partitions.conf") ($out)"
harness_wait 30 "job $a's cleanup" bash -c "! virsh -q list --name | grep -qx $dom" || true
sleep 1
guest_nothing_left "$a"
guest_node_up

# --- a guest that never becomes ready: the job fails, the node stays up
harness_vmconf_set BootTimeout 20
b=$(submit --vm-image=deadguest --wrap 'true')
wait_end "$b" 180 || fail "job $b did not end"
if logged "$b" "the guest's agent was not ready within 20s"; then
	ok "job $b: never ready -> refused with the reason"
else
	fail "job $b: no 'not ready' in the log"
	grep "job $b:" "$HARNESS_VM_LOG" | tail -5
fi
guest_nothing_left "$b"
guest_node_up

# --- qemu dies while the guest boots: the job fails at once, not after
# BootTimeout, and says why
harness_vmconf_set BootTimeout 300
b=$(submit --vm-image=deadguest --wrap 'true')
harness_wait 120 "job $b's domain" running "$b" || fail "job $b: no domain"
sleep 2
pkill -9 -f "guest=$(domain_of "$b")," || fail "no qemu for job $b"
killed=$(date +%s)
wait_end "$b" 120 || fail "job $b did not end"
if logged "$b" "guest $(domain_of "$b") stopped .* before its agent was ready" &&
	[ $(($(date +%s) - killed)) -lt 100 ]; then
	ok "job $b: qemu died while booting -> refused in $(($(date +%s) - killed)) s, not BootTimeout=300"
else
	fail "job $b: qemu died while booting: $(($(date +%s) - killed)) s to the end"
	grep "job $b:" "$HARNESS_VM_LOG" | tail -5
fi
guest_nothing_left "$b"
guest_node_up
harness_vmconf_set BootTimeout 60

# --- qemu killed mid-job: the epilog cleans up what is left
c=$(submit --vm-image=testguest --wrap 'sleep 120')
harness_wait 180 "job $c's guest" logged "$c" "guest ready" || fail "job $c: no guest"
pkill -9 -f "guest=$(domain_of "$c")," || fail "no qemu for job $c"
sleep 2
scancel "$c"
wait_end "$c" || fail "job $c did not end"
sleep 2
guest_nothing_left "$c"
guest_node_up

# --- the epilog again, by hand, for a job long gone: nothing to do, exit 0
rc=0
env -i SLURM_CONF="$SLURM_CONF" SLURM_JOB_ID="$c" SPANK_VM_IMAGE=testguest \
	"$HARNESS_BIN/slurm-vm-epilog" || rc=$?
[ "$rc" = 0 ] && logged "$c" "VM job ended: no state on this node" && ok "epilog run twice: exit 0, nothing to undo" ||
	fail "second epilog: rc=$rc"

# --- a prolog killed midway (after the domain started), then the epilog
d=$(submit --vm-image=testguest --wrap 'sleep 120')
harness_wait 120 "job $d's domain" running "$d" || fail "job $d: no domain"
# Only this cluster's prolog (argv[0] is the path Slurm ran).
pkill -9 -f "^$HARNESS_BIN/slurm-vm-prolog" || fail "no prolog of job $d to kill"
scancel "$d"
wait_end "$d" || true
# slurmd may not run the epilog of a job whose prolog died: do it as it would.
env -i SLURM_CONF="$SLURM_CONF" SLURM_JOB_ID="$d" SPANK_VM_IMAGE=testguest \
	"$HARNESS_BIN/slurm-vm-epilog" || true
sleep 1
guest_nothing_left "$d"
scontrol update nodename="${HARNESS_NODES[0]}" state=resume >/dev/null 2>&1 || true

[ "$failures" = 0 ]
