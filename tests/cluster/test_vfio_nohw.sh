#!/bin/bash
# cluster-timeout: 300
# DeviceAttach=vfio on a machine without an IOMMU: everything of the device
# path up to libvirt's start of the guest, which cannot work here (no VFIO
# device exists on this host) and is said so. No guest boots.
# - prebound: the fixture's functions are on vfio-pci; each of the job's
#   group files (the harness's fake /dev/vfio/N) is given to the job user,
#   journaled (DEVOWNER), and put back to root 0600 when libvirt refuses the
#   hostdev: a job fault, the node stays up;
# - prebound, group files held by a process of a user (left over from a job
#   that ended): killed, the files reclaimed, the node stays up;
# - the epilog of a job whose batch script still holds its lent group file:
#   the file back to root, the holder killed;
# - prebound, a group file held open by a process of root's: a node fault
#   (drained), naming the holder, nothing given away;
# - managed: libvirt does not know the fixture's functions, so the detach
#   fails: a node fault; the epilog's reattach of the journaled DETACH fails
#   too and it exits 1 (a device it cannot vouch for).
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
uid=$(id -u "$user")
guest_cluster_start 60 DeviceAttach=vfio DeviceBinding=prebound
node=${HARNESS_NODES[0]}
devdir=$HARNESS_DIR/nodes/$node/dev/vfio
[ -d "$devdir" ] || devdir=$(dirname "$(grep -o 'File=[^ ]*' "$HARNESS_ETC/gres.conf" | head -1 | cut -d= -f2)")

submit() { harness_as_user "$user" sbatch --parsable -c2 --mem=1G "$@"; }
logged() { grep -q "job $1: $2" "$HARNESS_VM_LOG"; }
wait_end() {
	harness_wait "${2:-60}" "job $1 to end" bash -c \
		"squeue -h -j $1 -t all -o %T | grep -Eqx 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL'"
}
owners() { stat -c '%n %u:%g %a' "$devdir"/[0-9]* | sed "s|$devdir/||" | tr '\n' ' '; }
node_state() { sinfo -h -N -o %t | head -1; }
resume() { scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true; }
before=$(owners)

# --- prebound: files given, libvirt refuses, files back
a=$(submit --vm-image=testguest --gres=gpu:1,ibvf:1 --wrap 'true')
wait_end "$a" 120 || fail "job $a did not end"
given=$(grep -c "job $a: .* given to uid $uid for the job" "$HARNESS_VM_LOG" || true)
[ "$given" = 2 ] && ok "job $a: its 2 group files were given to $user: $(grep -o "job $a: [^ ]* given" "$HARNESS_VM_LOG" | sed "s|$devdir/||" | tr '\n' ' ')" ||
	fail "job $a: $given group files given, wanted 2"
# libvirt's refusal, logged by the job's prolog process
ppid=$(grep "job $a: VM requested" "$HARNESS_VM_LOG" | sed -n 's/.*slurm-vm-prolog\[\([0-9]*\)\].*/\1/p' | head -1)
refusal=$(grep "slurm-vm-prolog\[$ppid\] error: libvirt refused the guest" "$HARNESS_VM_LOG" | sed 's/.*error: //' || true)
if [ -n "$ppid" ] && [ -n "$refusal" ] && logged "$a" "prolog done in .*: job fault"; then
	ok "job $a: a job fault, libvirt cannot start VFIO hostdevs here: $refusal"
else
	grep "job $a" "$HARNESS_VM_LOG" | tail -5
	fail "job $a: no libvirt refusal logged"
fi
harness_wait 30 "group files back" bash -c "[ \"\$(stat -c '%n %u:%g %a' '$devdir'/[0-9]* | sed 's|$devdir/||' | tr '\n' ' ')\" = '$before' ]" &&
	ok "group files back to their owners after the job: $before" ||
	fail "group files now $(owners), were $before"
case "$(node_state)" in idle | mix | alloc) ok "job fault only: node $(node_state)" ;; *) fail "node $(node_state)" ;; esac

# --- prebound, the group files held by a process of the user whose job
# ended (a batch script's child that opened them while they were lent):
# killed and the files reclaimed, never a drain
/usr/bin/python3 -c 'import os, sys, time
fds = [os.open(f, os.O_PATH) for f in sys.argv[2:]]
os.setgid(int(sys.argv[1])); os.setuid(int(sys.argv[1])); time.sleep(300)' "$uid" "$devdir"/[0-9]* &
uholder=$!
harness_wait 10 "the user's holder" bash -c "[ \"\$(stat -c %u /proc/$uholder)\" = $uid ]" ||
	fail "the user's holder did not start"
d=$(submit --vm-image=testguest --gres=gpu:1,ibvf:1 --wrap 'true')
wait_end "$d" 120 || fail "job $d did not end"
logged "$d" ".* was held by 1 process of a user whose job ended (uid $uid" &&
	ok "job $d: $(grep -o "job $d: .* was held by .*" "$HARNESS_VM_LOG" | sed "s|$devdir/||" | head -1)" ||
	fail "job $d: no reclaim of the user's holder logged: $(grep "job $d: .*held" "$HARNESS_VM_LOG" | tail -2)"
harness_wait 10 "the holder to be gone" bash -c "! kill -0 $uholder 2>/dev/null" &&
	ok "the user's holder is gone" || fail "the user's holder $uholder still runs"
wait "$uholder" 2>/dev/null || true
logged "$d" "prolog done in .*: job fault" && ok "job $d: then a job fault (libvirt), as without the holder" ||
	fail "job $d: $(grep "job $d: prolog done" "$HARNESS_VM_LOG")"
case "$(node_state)" in idle | mix | alloc) ok "user's holder: node $(node_state)" ;; *)
	fail "user's holder: node $(node_state)"
	resume
	;;
esac

# --- the epilog of a job whose batch script opened its lent group file
# (a journal as the prolog writes it, the file still the user's): the file
# goes back and the user's holder is killed
g=$(ls "$devdir" | grep -E '^[0-9]+$' | head -1)
st=$HARNESS_DIR/vm/state/job-999999.0
mkdir -p "$(dirname "$st")" && mkdir -m 0711 "$st"
printf 'DEVOWNER\t%s\t0\t0\t600\n' "$devdir/$g" >"$st/journal"
chmod 0600 "$st/journal"
chown "$uid" "$devdir/$g"
/usr/bin/python3 -c 'import os, sys, time; fd = os.open(sys.argv[2], os.O_PATH)
os.setgid(int(sys.argv[1])); os.setuid(int(sys.argv[1])); time.sleep(300)' "$uid" "$devdir/$g" &
uholder=$!
harness_wait 10 "the user's holder" bash -c "[ \"\$(stat -c %u /proc/$uholder)\" = $uid ]" ||
	fail "the user's holder did not open $g"
rc=0
env -i PATH="$PATH" SLURM_CONF="$SLURM_CONF" SLURM_JOB_ID=999999 SPANK_VM_IMAGE=testguest \
	"$HARNESS_BIN/slurm-vm-epilog" >/dev/null 2>&1 || rc=$?
[ "$rc" = 0 ] && [ "$(stat -c '%u:%g %a' "$devdir/$g")" = "0:0 600" ] &&
	harness_wait 5 "the holder to be gone" bash -c "! kill -0 $uholder 2>/dev/null" &&
	ok "epilog: group $g back to 0:0 600 and the user's holder killed ($(grep -o "$devdir/$g: 1 process.*" "$HARNESS_VM_LOG" | sed "s|$devdir/||" | tail -1))" ||
	fail "epilog: rc=$rc, holder $(kill -0 "$uholder" 2>/dev/null && echo alive || echo gone), group $g $(stat -c '%u:%g %a' "$devdir/$g")"
kill -9 "$uholder" 2>/dev/null || true
wait "$uholder" 2>/dev/null || true
chown 0:0 "$devdir/$g" && chmod 600 "$devdir/$g"
rm -rf "$st"

# --- prebound, a group file held open by root: node fault, nothing given
g=$(ls "$devdir" | grep -E '^[0-9]+$' | head -1)
/usr/bin/python3 -c 'import os, sys, time; fd = os.open(sys.argv[1], os.O_PATH); time.sleep(120)' "$devdir/$g" &
holder=$!
sleep 0.5
b=$(submit --vm-image=testguest --gres=gpu:2,ibvf:2 --wrap 'true')
harness_wait 60 "job $b's prolog" bash -c "grep -q 'job $b: .* is held by process' '$HARNESS_VM_LOG'" &&
	ok "job $b: $(grep -o "job $b: .* is held by process [0-9]*" "$HARNESS_VM_LOG" | sed "s|$devdir/||" | tail -1)" ||
	fail "job $b: no 'held by' refusal"
kill "$holder" 2>/dev/null || true
harness_wait 30 "the node to drain" bash -c "sinfo -h -N -o %t | grep -q drain" &&
	ok "node drained: $(node_state)" || fail "node $(node_state), not drained"
[ "$(owners)" = "$before" ] && ok "nothing given away: $(owners)" || fail "group files now $(owners)"
scancel "$b" 2>/dev/null || true
resume

# --- managed: libvirt knows no such device here
harness_vmconf_set DeviceBinding managed
c=$(submit --vm-image=testguest --gres=gpu:1 --wrap 'true')
harness_wait 60 "job $c's prolog" bash -c "grep -q 'libvirt does not know PCI device' '$HARNESS_VM_LOG'" &&
	ok "managed: $(grep -o 'libvirt does not know PCI device [0-9a-f:.]*' "$HARNESS_VM_LOG" | tail -1): node fault" ||
	fail "job $c: no detach failure"
scancel "$c" 2>/dev/null || true
rc=0
env -i SLURM_CONF="$SLURM_CONF" SLURM_JOB_ID="$c" SPANK_VM_IMAGE=testguest \
	"$HARNESS_BIN/slurm-vm-epilog" >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] && ok "epilog: the journaled DETACH cannot be undone -> exit 1 (drain)" ||
	fail "epilog after a failed detach: rc=$rc"
resume
harness_vmconf_set DeviceBinding prebound
[ "$failures" = 0 ]
