#!/bin/bash
# BootMode=warm (issue #30, doc/design.md section 7) on a two-node cluster
# with the job network, a share and the stand-in devices:
# - the first job of the test guest's image and shape makes each node's
#   template (booted without any job's identity, saved) and is restored
#   from it; the second job (another user) is restored at once;
# - each restored guest is its job's before the first task: the node's
#   hostname, the job user with their uid and groups, the job network's
#   address on job0 (the guests reach each other by node name), the share
#   mounted at its host path, the clock set, and the planned devices
#   hot-plugged at the addresses the plan gives them;
# - two jobs restored from one template differ in their RNG output,
#   machine-id and (where the guest has them) SSH host keys; nothing of the
#   template's identity (its hostname) shows;
# - the job user's ~/.ssh/authorized_keys is in the restored guest, theirs
#   and 0600, as a cold boot's seed gives it;
# - a user who kills their restored qemu gets a cold boot that starts from
#   a clean state (its own virtiofsd where the shares are virtiofs); one
#   who keeps stopping it (SIGSTOP) gets a job fault within BootTimeout,
#   never a prolog that outlasts its budget and drains the node; a user
#   in 200 groups of long names (one 64 KiB frame could not carry them)
#   is restored; an image whose kernel another user owns boots cold, its
#   files never run by the template's root qemu (issue #41);
# - a damaged template is a cold boot with the reason in the log, never a
#   failed job; afterwards nothing of the jobs is left on either node.
# cluster-timeout: 900
set -uo pipefail

. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

failures=0
declare -A warm_pci warm_akeys
guest_centre_config
HARNESS_NODE_COUNT=2 guest_cluster_start 180 JobNetwork=vxlan \
	JobNetworkUnderlay=eth0 BootMode=warm
harness_vmconf_set SharedDirs "$HARNESS_WORK"
token=warm-$RANDOM-$RANDOM
echo "$token" >"$HARNESS_WORK/warm-token"
chmod 0644 "$HARNESS_WORK/warm-token"
# svmtest's key on the host: the seed and the persona carry it to the guest
akeys_home=$(getent passwd svmtest | cut -d: -f6)
akeys_line="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIWarmStartTestKeyNotARealKey0000000 $token"
akeys_saved=
if [ -e "$akeys_home/.ssh/authorized_keys" ]; then
	akeys_saved=$HARNESS_WORK/authorized_keys.svmtest
	cp -p "$akeys_home/.ssh/authorized_keys" "$akeys_saved"
fi
install -d -o svmtest -g "$(id -gn svmtest)" -m 0700 "$akeys_home/.ssh"
echo "$akeys_line" >>"$akeys_home/.ssh/authorized_keys"
chown svmtest "$akeys_home/.ssh/authorized_keys"
chmod 0600 "$akeys_home/.ssh/authorized_keys"
akeys_restore() {
	if [ -n "$akeys_saved" ]; then
		cp -p "$akeys_saved" "$akeys_home/.ssh/authorized_keys"
	else
		rm -f "$akeys_home/.ssh/authorized_keys"
	fi
}
# The long groups of section 3b, gone whatever ends the test: in place
# (each node's /etc/group is a copy bound over it, tests/cluster/libvirt.sh;
# a rename would not reach it).
long_groups_drop() {
	grep -v '^svmtest-long-group-' /etc/group >/etc/group.svmt-tmp
	cat /etc/group.svmt-tmp >/etc/group
	rm -f /etc/group.svmt-tmp
}
long_groups_remove() {
	local node
	for node in n1 n2; do
		harness_node_exec "$node" bash -c "$(declare -f long_groups_drop); long_groups_drop"
	done
	long_groups_drop
}
harness_exit_hook() {
	akeys_restore
	long_groups_drop
}

cat >"$HARNESS_WORK/warm-job.sh" <<'EOS'
#!/bin/bash
cat >"$PWD/warm-task.sh" <<'EOT'
n=$SLURMD_NODENAME
echo "who $n: $(hostname) $(id -un) $(id -u) $(id -Gn | tr ' ' ,)"
echo "lgroups $n: $(grep -c "^svmtest-long-group-.*:$(id -un)\$" /etc/group)"
echo "rng $n: $(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "mid $n: $(cat /etc/machine-id 2>/dev/null || echo none)"
echo "addr $n: $(ip -4 -o addr show job0 2>/dev/null | awk '{print $4}')"
echo "share $n: $(cat "$1" 2>&1)"
echo "clock $n: $(date +%s)"
pci=
for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor"):$(cat "$d/device")" = 0x1af4:0x1044 ] && pci="$pci${d##*/} "
done
echo "pci $n: $pci"
echo "hosts $n: $(grep -c template /etc/hosts /etc/hostname 2>/dev/null | tr '\n' ' ')"
k=$(cat /etc/ssh/ssh_host_*_key.pub 2>/dev/null | md5sum | cut -c1-32)
ls /etc/ssh/ssh_host_*_key.pub >/dev/null 2>&1 || k=none
echo "hostkey $n: $k"
a=$HOME/.ssh/authorized_keys
if [ -f "$a" ] && [ ! -L "$a" ]; then
	echo "akeys $n: $(stat -c '%U %a' "$a") $(grep -c "$2" "$a")"
else
	echo "akeys $n: none"
fi
EOT
n=$SLURM_JOB_NUM_NODES
srun -N"$n" -n"$n" --ntasks-per-node=1 sh "$PWD/warm-task.sh" "$1" "$(cat "$1")"
[ "$n" = 2 ] || exit 0
srun -N1 -n1 -w n2 sh -c 'timeout 60 nc -l -p 7777 | sed "s/^/net: n2 got /"' &
srun -N1 -n1 -w n1 sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do echo "hello from n1" | nc -w 5 n2 7777 && exit 0; sleep 2; done; echo "net: n1 cannot reach n2"'
wait
EOS
chmod 0755 "$HARNESS_WORK/warm-job.sh"

# run_job USER [SBATCH-ARGS]: runs a job (two nodes unless told) as USER
# to its end; its id in $job, its output in $HARNESS_WORK/USER/warm.out
run_job() {
	local user=$1
	shift
	job=$(harness_as_user "$user" timeout 30 sbatch --parsable -N2 "$@" -c1 \
		--vm-cpus=1 --gres=gpu:1 --vm-image=testguest \
		-o "$HARNESS_WORK/$user/warm.out" "$HARNESS_WORK/warm-job.sh" \
		"$HARNESS_WORK/warm-token" 2>&1)
	[[ "$job" =~ ^[0-9]+$ ]] || { fail "sbatch as $user: $job"; exit 1; }
	harness_wait 400 "job $job" sh -c "[ -z \"\$(squeue -h -j $job)\" ]" ||
		fail "job $job did not end"
	harness_wait 60 "the epilogs" sh -c '[ -z "$(sinfo -h -N -t completing -o %N)" ]'
}

# checks JOB USER OUT: the restored guests were the job's
check_job() {
	local job=$1 user=$2 out=$3 node want l addr
	sed 's/^/    job: /' "$out"
	for node in n1 n2; do
		want="who $node: $node $user $(id -u "$user") $(id -Gn "$user" | tr ' ' ,)"
		grep -qxF "$want" "$out" && ok "job $job on $node: $want" ||
			fail "job $job on $node: '$(grep "^who $node:" "$out")', wanted '$want'"
		addr=$(sed -n "s/^addr $node: //p" "$out")
		[[ "$addr" =~ ^[0-9.]+/[0-9]+$ ]] && ok "job $job on $node: job0 $addr" ||
			fail "job $job on $node: no address on job0 ('$addr')"
		grep -qxF "share $node: $token" "$out" && ok "job $job on $node: the share at $HARNESS_WORK" ||
			fail "job $job on $node: share: $(grep "^share $node:" "$out")"
		l=$(sed -n "s/^clock $node: //p" "$out")
		[ -n "$l" ] && [ $((l > $(date +%s) - 600)) = 1 ] && ok "job $job on $node: the clock is now's" ||
			fail "job $job on $node: clock '$l', host $(date +%s)"
		grep -qx "hosts $node: .*:0 .*:0 " "$out" &&
			ok "job $job on $node: nothing of the template's hostname in /etc/hosts, /etc/hostname" ||
			fail "job $job on $node: the template shows: $(grep "^hosts $node:" "$out")"
	done
	grep -q "^net: n2 got hello from n1$" "$out" &&
		ok "job $job: n1's guest reached n2's guest by name over the job network" ||
		fail "job $job: no exchange between the guests: $(grep '^net:' "$out" | tr '\n' ' ')"
}

# 1. The first job makes both templates, the second is restored at once.
run_job svmtest
j1=$job
for node in n1 n2; do
	tpl=$(ls -d "$HARNESS_DIR/nodes/$node/vm/warm/"*/ 2>/dev/null | head -1)
	[ -n "$tpl" ] && [ -f "$tpl/template" ] &&
		[ "$(stat -c '%U %a' "$tpl/overlay.qcow2")" = "root 444" ] &&
		ok "$node: template $(basename "$tpl"): overlay root's, 0444; $(du -sh "$tpl/state.save" | cut -f1) saved" ||
		fail "$node: no whole template in $HARNESS_DIR/nodes/$node/vm/warm: $(ls -la "$tpl" 2>&1 | tr '\n' ' ')"
done
grep -q "warm template [0-9a-f]* booted and saved" "$HARNESS_VM_LOG" &&
	ok "$(grep -o "warm template [0-9a-f]* booted and saved.*" "$HARNESS_VM_LOG" | head -1)" ||
	fail "no template was made: $(grep "job $j1: boots cold" "$HARNESS_VM_LOG" | head -2)"
[ "$(grep -c "job $j1: restored from warm template" "$HARNESS_VM_LOG")" = 2 ] &&
	ok "job $j1: both guests restored from their node's template" ||
	fail "job $j1: $(grep "job $j1: \(boots cold\|restored\)" "$HARNESS_VM_LOG" | tr '\n' ' ')"
check_job "$j1" svmtest "$HARNESS_WORK/svmtest/warm.out"

run_job svmtest2
j2=$job
[ "$(grep -c "job $j2: restored from warm template" "$HARNESS_VM_LOG")" = 2 ] &&
	! grep -q "job $j2: warm template .* booted" "$HARNESS_VM_LOG" &&
	ok "job $j2: restored on both nodes from the templates job $j1 made: $(grep -o "job $j2: restored from warm template.*" "$HARNESS_VM_LOG" | head -1)" ||
	fail "job $j2: $(grep "job $j2: \(boots cold\|restored\|warm\)" "$HARNESS_VM_LOG" | tr '\n' ' ')"
check_job "$j2" svmtest2 "$HARNESS_WORK/svmtest2/warm.out"
o1=$HARNESS_WORK/svmtest/warm.out o2=$HARNESS_WORK/svmtest2/warm.out
for node in n1 n2; do
	for k in rng mid; do
		a=$(sed -n "s/^$k $node: //p" "$o1") b=$(sed -n "s/^$k $node: //p" "$o2")
		[ -n "$a" ] && [ "$a" != none ] && [ "$a" != "$b" ] &&
			ok "$node: jobs $j1 and $j2, one template: $k differs ($a, $b)" ||
			fail "$node: jobs $j1 and $j2 share $k: '$a' '$b'"
	done
	# SSH host keys: new in each restored guest (the busybox test guest
	# has no sshd and no keys: nothing to compare there)
	a=$(sed -n "s/^hostkey $node: //p" "$o1") b=$(sed -n "s/^hostkey $node: //p" "$o2")
	if [ "$a" = none ] && [ "$b" = none ]; then
		ok "$node: the test guest has no ssh host keys: their fingerprints not compared"
	else
		[ -n "$a" ] && [ "$a" != none ] && [ "$b" != none ] && [ "$a" != "$b" ] &&
			ok "$node: jobs $j1 and $j2, one template: ssh host keys differ ($a, $b)" ||
			fail "$node: jobs $j1 and $j2: ssh host keys '$a' '$b'"
	fi
	# svmtest's authorized_keys, the user's and 0600, with the host's key
	a=$(sed -n "s/^akeys $node: //p" "$o1")
	[ "$a" = "svmtest 600 1" ] &&
		ok "job $j1 on $node: the user's authorized_keys is in the restored guest ($a)" ||
		fail "job $j1 on $node: authorized_keys in the restored guest: '$a'"
	warm_akeys[$node]=$a
	# The stand-in devices at the plan's guest addresses: a cold boot of
	# the same request puts them at the same ones (below).
	warm_pci[$node]=$(sed -n "s/^pci $node: //p" "$o2")
done

# user_loop USER SIGNAL JOB [once]: as USER, sends SIGNAL to JOB's qemu as
# soon as it runs (and again every 0.1 s unless once); its pid in $loop.
user_loop() {
	harness_as_user "$1" bash -c '
		while :; do
			for p in $(pgrep -u "$(id -u)" -f "guest=slurmvm-job-$2\\."); do
				kill -s "$1" "$p" 2>/dev/null && [ "$3" = once ] && exit 0
			done
			sleep 0.1
		done' user-loop "$2" "$3" "${4:-}" &
	loop=$!
}

# 2. The user kills their restored qemu: the cold boot that follows starts
# its own virtiofsd, relay and overlay (it reused the dead virtiofsd's
# sockets: "libvirt could not start the guest").
job=$(harness_as_user svmtest2 timeout 30 sbatch --parsable -N1 -w n2 -c1 \
	--vm-cpus=1 --gres=gpu:1 --vm-image=testguest \
	-o "$HARNESS_WORK/svmtest2/warm.out" "$HARNESS_WORK/warm-job.sh" \
	"$HARNESS_WORK/warm-token" 2>&1)
user_loop svmtest2 KILL "$job" once
harness_wait 400 "job $job" sh -c "[ -z \"\$(squeue -h -j $job)\" ]" || fail "job $job did not end"
kill "$loop" 2>/dev/null
wait "$loop" 2>/dev/null
harness_wait 60 "the epilogs" sh -c '[ -z "$(sinfo -h -N -t completing -o %N)" ]'
j4=$job
grep -q "job $j4: boots cold: .*template" "$HARNESS_VM_LOG" &&
	ok "killed restored qemu: $(grep -o "job $j4: boots cold.*" "$HARNESS_VM_LOG" | head -1)" ||
	fail "job $j4, its restored qemu killed: $(grep "job $j4: \(boots cold\|restored\|guest ready\)" "$HARNESS_VM_LOG" | tr '\n' ' ')"
grep -qxF "who n2: n2 svmtest2 $(id -u svmtest2) $(id -Gn svmtest2 | tr ' ' ,)" "$HARNESS_WORK/svmtest2/warm.out" &&
	grep -qxF "share n2: $token" "$HARNESS_WORK/svmtest2/warm.out" &&
	ok "job $j4 ran cold after its restored guest was killed, its share mounted" ||
	fail "job $j4 after its restored guest was killed: $(tr '\n' ' ' <"$HARNESS_WORK/svmtest2/warm.out")"

# 3. The user keeps stopping their restored qemu (SIGSTOP, as any process of
# theirs may): one BootTimeout for the whole prolog, then a job fault with
# the reason; the prolog waited BootTimeout twice (restored, then cold)
# and slurmd killed it past PrologEpilogTimeout: a drained node.
harness_vmconf_set BootTimeout 30
t0=$(date +%s)
job=$(harness_as_user svmtest2 timeout 30 sbatch --parsable -N1 -w n2 -c1 \
	--vm-cpus=1 --gres=gpu:1 --vm-image=testguest \
	-o "$HARNESS_WORK/svmtest2/warm.out" "$HARNESS_WORK/warm-job.sh" \
	"$HARNESS_WORK/warm-token" 2>&1)
user_loop svmtest2 STOP "$job"
harness_wait 300 "job $job" sh -c "[ -z \"\$(squeue -h -j $job)\" ]" || fail "job $job did not end"
t=$(($(date +%s) - t0))
kill "$loop" 2>/dev/null
wait "$loop" 2>/dev/null
harness_wait 60 "the epilogs" sh -c '[ -z "$(sinfo -h -N -t completing -o %N)" ]'
harness_vmconf_set BootTimeout 180
j5=$job
[ "$t" -le 75 ] && ok "job $j5, its qemu stopped: ended ${t}s after sbatch (BootTimeout=30)" ||
	fail "job $j5, its qemu stopped: ended ${t}s after sbatch, BootTimeout=30: the prolog waited more than once"
grep -q "did not become ready within BootTimeout=30s" "$HARNESS_WORK/svmtest2/warm.out" &&
	ok "job $j5: the steps say why: $(grep -o "the guest .*BootTimeout=30s[^\"]*" "$HARNESS_WORK/svmtest2/warm.out" | head -1)" ||
	fail "job $j5's output does not say why: $(tr '\n' ' ' <"$HARNESS_WORK/svmtest2/warm.out" | cut -c1-400)"
s=$(sinfo -h -N -o '%N %t' | sort | tr '\n' ' ')
[ "$s" = "n1 idle n2 idle " ] && ok "after the stopped guest, both nodes idle: $s" || { fail "nodes after the stopped guest: $s"; sinfo -R; }

# 3b. A user in many groups with long names: their identity is more than
# one 64 KiB frame, which the relay refused (it did not start: a node
# fault on every node of the job). It goes in several frames now.
long=$(printf 'x%.0s' $(seq 1 200))
for i in $(seq 1 200); do
	echo "svmtest-long-group-$i-$long:x:$((61000 + i)):svmtest2"
done >"$HARNESS_WORK/long-groups"
cat "$HARNESS_WORK/long-groups" >>/etc/group
for node in n1 n2; do
	harness_node_exec "$node" sh -c "cat '$HARNESS_WORK/long-groups' >>/etc/group"
	n=$(harness_node_exec "$node" getent group svmtest-long-group-200-"$long" | cut -d: -f3)
	[ "$n" = 61200 ] || fail "$node: the long groups are not in its /etc/group ('$n')"
done
run_job svmtest2
j6=$job
long_groups_remove
[ "$(grep -c "job $j6: restored from warm template" "$HARNESS_VM_LOG")" = 2 ] &&
	ok "job $j6 (200 groups of 230-character names: 96 KiB of identity): restored on both nodes" ||
	fail "job $j6 (200 long groups): $(grep "job $j6: \(boots cold\|restored\|warm\)" "$HARNESS_VM_LOG" | tr '\n' ' ')"
# The guest's /etc/group, the persona's (the task's own groups are
# slurmctld's, cached from before the groups were added).
for node in n1 n2; do
	n=$(sed -n "s/^lgroups $node: //p" "$HARNESS_WORK/svmtest2/warm.out")
	[ "$n" = 200 ] && ok "job $j6 on $node: the guest's user is in all 200 long groups" ||
		fail "job $j6 on $node: the guest's user is in '$n' of the 200 long groups"
done
# 3c. The template's qemu is root's: an image file another user can
# change (here the catalog's kernel, given to svmtest) boots cold, and no
# template of it is made or restored.
kernel=$(sed -n 's/^Kernel=//p' "$HARNESS_CATALOG"/testguest.image 2>/dev/null | head -1)
[ -n "$kernel" ] || kernel=$(ls "$HARNESS_DIR"/vm/boot/vmlinu* 2>/dev/null | head -1)
owner=$(stat -c %u:%g "$kernel")
chown svmtest "$kernel"
run_job svmtest -N1 -w n1
j7=$job
chown "$owner" "$kernel"
grep -q "job $j7: boots cold: .*vmlinu.* is not root's alone" "$HARNESS_VM_LOG" &&
	! grep -q "job $j7: restored from warm template" "$HARNESS_VM_LOG" &&
	ok "a kernel svmtest owns: $(grep -o "job $j7: boots cold: .* is not root's alone" "$HARNESS_VM_LOG" | head -1)" ||
	fail "job $j7 with a kernel svmtest owns ($kernel): $(grep "job $j7: \(boots cold\|restored\|warm\)" "$HARNESS_VM_LOG" | tr '\n' ' ')"
grep -q "^who n1: n1 svmtest" "$HARNESS_WORK/svmtest/warm.out" &&
	ok "job $j7 ran cold" || fail "job $j7: $(head -c 300 "$HARNESS_WORK/svmtest/warm.out")"

# 4. A damaged template is a cold boot, with the reason logged.
for f in "$HARNESS_DIR"/nodes/n1/vm/warm/*/state.save; do
	chmod u+w "$f" && truncate -s 200 "$f"
done
run_job svmtest -N1 -w n1
j3=$job
grep -q "job $j3: boots cold: template .* cannot be restored" "$HARNESS_VM_LOG" &&
	ok "damaged template: $(grep -o "job $j3: boots cold.*" "$HARNESS_VM_LOG" | head -1)" ||
	fail "job $j3 with a damaged template: $(grep "job $j3: \(boots cold\|restored\|guest ready\)" "$HARNESS_VM_LOG" | tr '\n' ' ')"
state=$(sacct -n -X -j "$j3" -o State 2>/dev/null | tr -d ' ')
grep -q "^who n1: n1 svmtest" "$HARNESS_WORK/svmtest/warm.out" &&
	ok "job $j3 ran cold ($state)" || fail "job $j3: $(cat "$HARNESS_WORK/svmtest/warm.out")"
for node in n1; do
	cold=$(sed -n "s/^pci $node: //p" "$HARNESS_WORK/svmtest/warm.out")
	[ -n "$cold" ] && [ "$cold" = "${warm_pci[$node]}" ] &&
		ok "$node: the hot-plugged stand-in is where a cold boot puts it: $cold" ||
		fail "$node: stand-in at '${warm_pci[$node]}' restored, '$cold' cold"
	# The same keys warm as cold; the busybox test guest's seed reader
	# installs none cold (cloud-init images do)
	cold=$(sed -n "s/^akeys $node: //p" "$HARNESS_WORK/svmtest/warm.out")
	if [ "$cold" = none ]; then
		ok "$node: the cold test guest has no authorized_keys (its seed reader installs none); warm: ${warm_akeys[$node]}"
	else
		[ "$cold" = "${warm_akeys[$node]}" ] &&
			ok "$node: authorized_keys warm as cold: $cold" ||
			fail "$node: authorized_keys '${warm_akeys[$node]}' restored, '$cold' cold"
	fi
done
akeys_restore

for job in "$j1" "$j2"; do
	for node in n1 n2; do
		guest_nothing_left "$job" "$node"
	done
done
guest_nothing_left "$j3" n1
guest_nothing_left "$j4" n2
guest_nothing_left "$j5" n2
for node in n1 n2; do
	guest_nothing_left "$j6" "$node"
done
guest_nothing_left "$j7" n1
for node in n1 n2; do
	guest_jobnet_nothing_left "$node"
	harness_node_exec "$node" virsh -q list --name 2>/dev/null | grep -q svm-warm &&
		fail "$node: a template domain still runs"
done
s=$(sinfo -h -N -o '%N %t' | sort | tr '\n' ' ')
[ "$s" = "n1 idle n2 idle " ] && ok "both nodes idle: $s" || { fail "nodes: $s"; sinfo -R; }
[ "$failures" = 0 ]
