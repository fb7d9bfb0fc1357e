#!/bin/bash
# cluster-timeout: 900
# Guests that outlive their job, and libvirtd going away under a guest:
#   - `slurm-vm list` shows a running job's guest: user, state, devices;
#   - libvirtd restarted mid-job: the guest keeps running, a task still
#     runs in it, and the epilog afterwards tears everything down;
#   - a job ending while libvirtd is down: its epilog keeps the state and
#     exits 1 (Slurm drains the node); the guest still holds its devices and
#     `slurm-vm list` says its job ended; `slurm-vm cleanup` touches nothing while
#     slurmctld does not answer, nor with another StateDir (a second
#     cluster sharing this libvirtd); --dry-run names it;
#   - the next job that needs its device reclaims it in its prolog and runs;
#   - a prolog meeting a device held by a RUNNING job's guest fails as a
#     node fault with the reason, and leaves that guest alone;
#   - `slurm-vm cleanup` reclaims the guest of a job whose epilog never ran
#     (a no-op epilog stands in for a lost or killed one); nothing is left;
#   - a device file another process holds open: the prolog fails as a node
#     fault naming the process, and boots nothing.
# Three guest boots in all. Run under the guest lock (it restarts libvirtd).
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
guest_cluster_start 60 ShutdownTimeout=5

submit() {
	harness_as_user "$user" sbatch --parsable -c2 --mem=1G \
		--vm-image=testguest --gres=gpu:1,ibvf:1 "$@"
}
domain_of() { echo "slurmvm-job-$1.0"; }
running() { virsh -q list --name | grep -qx "$(domain_of "$1")"; }
logged() { grep -q "job $1: $2" "$HARNESS_VM_LOG"; }
svm() { "$HARNESS_BIN/slurm-vm" "$@"; }
list_line() { svm list --parsable 2>/dev/null | grep "^$1\\.0|" || true; }
ended() {
	harness_wait "${2:-120}" "job $1 to end" bash -c \
		"squeue -h -j $1 -t all -o %T | grep -Eqx 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL'"
}
ready() {
	if harness_wait 180 "job $1's guest to be ready" logged "$1" "guest ready"; then
		ok "job $1: $(grep -o "guest ready.*" "$HARNESS_VM_LOG" | tail -1)"
	else
		fail "job $1: no guest"
		grep "job $1:" "$HARNESS_VM_LOG" | tail -10
		exit 1
	fi
}
addrs() { virsh dumpxml "$(domain_of "$1")" | grep -o '<svm:device address="[^"]*"' | sed 's/.*="//;s/"//' | sort; }

# The epilog slurmd runs, swapped for a no-op and back: a job ended this
# way leaves its guest as a lost or killed epilog would.
epilog_bin=$HARNESS_BIN/slurm-vm-epilog
epilog_off() {
	cp -p "$epilog_bin" "$epilog_bin.real"
	printf '#!/bin/sh\nexit 0\n' >"$epilog_bin.noop"
	chmod 0755 "$epilog_bin.noop"
	mv -f "$epilog_bin.noop" "$epilog_bin"
}
epilog_on() { mv -f "$epilog_bin.real" "$epilog_bin"; }

# --- a job's guest, listed; libvirtd restarted under it
a=$(submit --wrap 'sleep 300')
ready "$a"
line=$(list_line "$a")
IFS='|' read -r _ l_user l_slurm l_guest l_state l_devs <<<"$line"
if [ "$l_user" = "$user" ] && [ "$l_slurm" = RUNNING ] && [ "$l_guest" = running ] &&
	[ "$l_state" = yes ] && [[ "$l_devs" == gpu:0=*,ibvf:0=* ]]; then
	ok "slurm-vm list: $line"
else
	fail "slurm-vm list for job $a: '$line'"
	svm list || true
fi

t0=$(harness_now)
if libvirt_restart; then
	ok "libvirtd restarted under job $a in $(harness_elapsed "$t0")s"
	running "$a" && ok "job $a: its guest still runs after the restart" ||
		fail "job $a: the guest is gone after the libvirtd restart"
	out=$(guest_exec "$user" "$a" -- sh -c 'echo "in $(uname -n): $((6 * 7))"' 2>&1) || true
	grep -q ": 42$" <<<"$out" && ok "job $a: a task still runs in its guest ($out)" ||
		fail "job $a: exec after the restart: $out"
	[ "$(list_line "$a" | cut -d'|' -f4)" = running ] &&
		ok "slurm-vm list sees the guest through the new libvirtd" ||
		fail "slurm-vm list after the restart: $(list_line "$a")"
else
	rc=$?
	[ "$rc" = 2 ] && echo "note: libvirtd is not the harness's; restart part skipped" ||
		fail "libvirt_restart failed"
fi
scancel "$a"
ended "$a" || fail "job $a did not end"
harness_wait 60 "job $a's teardown" bash -c "[ ! -e '$(guest_state_dir "$a")' ]" || true
logged "$a" "epilog phase DOMAIN" && ok "job $a: epilog after the restart: $(grep "job $a: VM job ended" "$HARNESS_VM_LOG" | tail -1 | sed 's/.*VM job ended: //')" ||
	fail "job $a: no epilog teardown logged"
guest_nothing_left "$a"
guest_node_up

# --- a job ending while libvirtd is down: its epilog cannot stop the guest,
# keeps the state for later and fails, so Slurm drains the node
b=$(submit --wrap 'sleep 300')
ready "$b"
b_addrs=$(addrs "$b")
end_b() {
	scancel "$b"
	harness_wait 90 "job $b's epilog" logged "$b" "VM job ended"
}
rc=0
libvirt_restart end_b || rc=$?
if [ "$rc" = 2 ]; then
	echo "note: libvirtd is not the harness's: job $b ends without an epilog instead"
	epilog_off
	end_b
	epilog_on
elif [ "$rc" = 0 ]; then
	logged "$b" "VM job ended: .*may still hold its devices: draining" &&
		ok "job $b: epilog without libvirtd: $(grep -o "job $b: VM job ended.*" "$HARNESS_VM_LOG" | tail -1)" ||
		fail "job $b: epilog without libvirtd: $(grep "job $b: " "$HARNESS_VM_LOG" | tail -3)"
	harness_wait 30 "the node to drain" bash -c "sinfo -h -N -o %t | grep -q '^drain'" &&
		ok "node $(sinfo -h -N -o %t) (reason: $(sinfo -h -N -o %E))" || fail "node $(sinfo -h -N -o %t), not drained"
	scontrol update nodename="${HARNESS_NODES[0]}" state=resume
else
	fail "libvirt_restart around job $b's end failed ($rc)"
fi
ended "$b" || fail "job $b did not end"
running "$b" && [ -d "$(guest_state_dir "$b")" ] && ok "job $b ended, its guest left running with its state" ||
	fail "job $b: expected a leftover guest"
line=$(list_line "$b")
[[ "$(cut -d'|' -f3 <<<"$line")" == ended:* ]] && [ "$(cut -d'|' -f4 <<<"$line")" = running ] &&
	ok "slurm-vm list: $line" || fail "slurm-vm list for ended job $b: '$line'"

# slurmctld not answering: nothing is touched.
etc2=$HARNESS_DIR/etc-noctld
cp -a "$HARNESS_ETC" "$etc2"
sed -i "s/^\(SlurmctldHost=[^(]*\).*/\1(127.0.0.1)/;s/^SlurmctldPort=.*/SlurmctldPort=$(harness_free_port)/" "$etc2/slurm.conf"
grep -q '^SlurmctldPort=' "$etc2/slurm.conf" || echo "SlurmctldPort=$(harness_free_port)" >>"$etc2/slurm.conf"
# libslurm retries a dead controller for about MessageTimeout: keep it short.
sed -i '/^MessageTimeout=/d' "$etc2/slurm.conf"
echo MessageTimeout=3 >>"$etc2/slurm.conf"
t0=$(harness_now)
rc=0
out=$(SLURM_CONF=$etc2/slurm.conf svm cleanup 2>&1) || rc=$?
if [ "$rc" = 1 ] && grep -q "nothing reclaimed" <<<"$out" && running "$b" && [ -d "$(guest_state_dir "$b")" ]; then
	ok "cleanup without slurmctld: exit 1, guest untouched ($(harness_elapsed "$t0")s): $(grep 'nothing reclaimed' <<<"$out" | head -1)"
else
	fail "cleanup without slurmctld: rc=$rc: $out"
fi

# Another StateDir (another cluster on this libvirtd): not its guest.
etc3=$HARNESS_DIR/etc-other
cp -a "$HARNESS_ETC" "$etc3"
mkdir -m 0700 -p "$HARNESS_DIR/vm/state-other"
sed -i "s|^StateDir=.*|StateDir=$HARNESS_DIR/vm/state-other|" "$etc3/vm.conf"
rc=0
out=$(SLURM_CONF=$etc3/slurm.conf svm cleanup 2>&1) || rc=$?
listed=$(SLURM_CONF=$etc3/slurm.conf svm list --parsable 2>&1 | grep -c "^$b\\." || true)
if [ "$rc" = 0 ] && [ "$listed" = 0 ] && running "$b"; then
	ok "another StateDir neither lists nor reclaims job $b's guest"
else
	fail "cleanup with another StateDir: rc=$rc listed=$listed: $out"
fi
out=$(svm cleanup --dry-run 2>&1) || true
grep -q "would reclaim job-$b.0" <<<"$out" && running "$b" && ok "cleanup --dry-run: $(grep "would reclaim" <<<"$out")" ||
	fail "cleanup --dry-run: $out"

# --- the next job needs its devices: its prolog reclaims them
c=$(submit --wrap 'sleep 300')
ready "$c"
c_addrs=$(addrs "$c")
shared=$(comm -12 <(echo "$b_addrs") <(echo "$c_addrs") | tr '\n' ' ')
[ -n "$shared" ] && ok "job $c got job $b's devices: $shared" ||
	fail "job $c ($c_addrs) does not need job $b's devices ($b_addrs): the reclaim was not exercised"
if logged "$c" "[a-z]* [0-9]* (PCI [^)]*) was held by the guest of ended job $b"; then
	ok "job $c: $(grep -o "job $c: [a-z]* [0-9]* (PCI.*reclaimed.*" "$HARNESS_VM_LOG" | head -1)"
else
	fail "job $c: no reclaim of job $b logged"
fi
# The waiting job does not wait for a clean shutdown (ShutdownTimeout=5):
# nothing of the leftover guest is kept.
secs=$(grep -o "job $c: phase reclaim [0-9.]*" "$HARNESS_VM_LOG" | head -1 | sed 's/.* //')
awk -v s="${secs:-99}" 'BEGIN { exit !(s < 3) }' && ok "job $c: reclaim took ${secs}s (guest destroyed, no ACPI wait)" ||
	fail "job $c: reclaim took ${secs:-?}s"
guest_nothing_left "$b"

# A prolog whose device a RUNNING job's guest holds: a node fault, and that
# guest stays. (Run by hand as slurmd would, for job c's next incarnation.)
rc=0
env -i PATH="$PATH" SLURM_CONF="$SLURM_CONF" SLURM_JOB_ID="$c" SLURM_JOB_RESTART_COUNT=1 \
	SLURMD_NODENAME="${HARNESS_NODES[0]}" SLURM_JOB_UID="$(id -u "$user")" \
	SLURM_JOB_GID="$(id -g "$user")" SLURM_JOB_USER="$user" SPANK_VM_IMAGE=testguest \
	"$HARNESS_BIN/slurm-vm-prolog" 2>/dev/null || rc=$?
if [ "$rc" = 1 ] && logged "$c" "[a-z]* [0-9]* (PCI [^)]*) is held by the guest of job $c, which slurmctld says is RUNNING" &&
	running "$c"; then
	ok "device held by a running job's guest: node fault: $(grep -o "job $c: [a-z]* [0-9]* (PCI [^)]*) is held.*RUNNING" "$HARNESS_VM_LOG" | head -1)"
else
	fail "prolog against a running job's guest: rc=$rc"
	grep "job $c:" "$HARNESS_VM_LOG" | tail -5
fi
env -i PATH="$PATH" SLURM_CONF="$SLURM_CONF" SLURM_JOB_ID="$c" SLURM_JOB_RESTART_COUNT=1 \
	SPANK_VM_IMAGE=testguest "$epilog_bin" || fail "epilog of $c.1 failed"
[ ! -e "$(guest_state_dir "$c" 1)" ] && running "$c" && ok "its epilog removed $c.1's state, job $c's guest runs on" ||
	fail "after the $c.1 epilog"

# --- slurm-vm cleanup reclaims an ended job's guest
epilog_off
scancel "$c"
ended "$c" || fail "job $c did not end"
sleep 2
epilog_on
running "$c" || fail "job $c: expected a leftover guest"
rc=0
out=$(svm cleanup 2>&1) || rc=$?
if [ "$rc" = 0 ] && grep -q "reclaimed job-$c.0" <<<"$out"; then
	ok "slurm-vm cleanup: $(grep "reclaimed job-$c.0" <<<"$out")"
else
	fail "slurm-vm cleanup: rc=$rc: $out"
fi
guest_nothing_left "$c"
[ -z "$(svm list --parsable 2>/dev/null)" ] && ok "slurm-vm list: no guests left" ||
	fail "slurm-vm list: $(svm list --parsable 2>&1)"

# --- a device file some other process holds: a node fault naming it. A
# plain job has the devices; its VM prolog is run by hand (no boot). The
# fake /dev/vfio nodes have no driver, so the holder keeps O_PATH fds.
d=$(harness_as_user "$user" sbatch --parsable -c2 --mem=1G --gres=gpu:1,ibvf:1 --wrap 'sleep 300')
harness_wait 60 "job $d to run" bash -c "squeue -h -j $d -o %T | grep -qx RUNNING" || fail "job $d does not run"
python3 -c 'import os, sys, time
fds = [os.open(p, os.O_PATH) for p in sys.argv[1:]]
time.sleep(300)' "$HARNESS_DIR"/nodes/*/dev/vfio/[0-9]* &
holder=$!
sleep 1
rc=0
env -i PATH="$PATH" SLURM_CONF="$SLURM_CONF" SLURM_JOB_ID="$d" SLURMD_NODENAME="${HARNESS_NODES[0]}" \
	SLURM_JOB_UID="$(id -u "$user")" SLURM_JOB_GID="$(id -g "$user")" SLURM_JOB_USER="$user" \
	SPANK_VM_IMAGE=testguest "$HARNESS_BIN/slurm-vm-prolog" 2>/dev/null || rc=$?
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
if [ "$rc" = 1 ] && logged "$d" "[a-z]* [0-9]* (.*/vfio/[0-9]*) is held by process $holder (python3)"; then
	ok "device file held by another process: node fault: $(grep -o "job $d: [a-z]* [0-9]* (.*) is held by process.*" "$HARNESS_VM_LOG" | head -1)"
else
	fail "prolog against a held device file: rc=$rc: $(grep "job $d:" "$HARNESS_VM_LOG" | tail -3)"
fi
running "$d" && fail "job $d: a guest was booted"
env -i PATH="$PATH" SLURM_CONF="$SLURM_CONF" SLURM_JOB_ID="$d" SPANK_VM_IMAGE=testguest \
	"$epilog_bin" 2>/dev/null || fail "epilog of $d failed"
[ ! -e "$(guest_state_dir "$d")" ] || fail "job $d: state left after its epilog"
scancel "$d"
ended "$d" || true
guest_node_up

[ "$failures" = 0 ]
