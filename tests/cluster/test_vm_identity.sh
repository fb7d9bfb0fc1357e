#!/bin/bash
# cluster-timeout: 420
# Who the guest and its qemu are, in one guest boot:
# - the cloud-init NoCloud seed the prolog makes (journaled SEED): its
#   user-data passes `cloud-init schema`; the guest (busybox, no cloud-init:
#   tests/guest/files/seed reads the seed disk) takes its hostname from
#   meta-data and the job user's name, uid and groups from user-data; the
#   kernel command line names no host;
# - an authorized_keys that is a planted symlink to a root-only file is read
#   as the user, so nothing of it reaches the seed;
# - qemu runs as the job user (DAC seclabel, relabel='no'): ps shows the
#   user's uid, the overlay is the user's in a 0711 root directory, and the
#   base image's owner, mode and xattrs are what they were before the job;
# - afterwards the seed is gone with the rest.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
uid=$(id -u "$user")
gid=$(id -g "$user")
home=$(getent passwd "$user" | cut -d: -f6)

guest_cluster_start 120 ShutdownTimeout=5
node=${HARNESS_NODES[0]}
image=$HARNESS_IMAGES/testguest.qcow2
# A mark libvirt would have to keep: a DAC relabel remembers owners in
# trusted.libvirt.security.* xattrs; a user xattr of our own must survive.
setfattr -n user.svmtest.mark -v before "$image"
image_meta() {
	echo "$(stat -c '%U:%G %a %s' "$image") $(getfattr -d -m - --absolute-names "$image" 2>/dev/null | grep -v '^#' | sort | tr '\n' ' ')"
}
before=$(image_meta)

# The user's authorized_keys: a link to a file only root may read.
mkdir -p "$home/.ssh"
chown "$user:" "$home/.ssh"
ln -sfn /etc/shadow "$home/.ssh/authorized_keys"
chown -h "$user:" "$home/.ssh/authorized_keys"

job=$(harness_as_user "$user" sbatch --parsable -c2 --mem=1G \
	--vm-image=testguest --wrap 'sleep 300')
harness_wait 180 "job $job's guest" grep -q "job $job: guest ready" "$HARNESS_VM_LOG" ||
	{ tail -20 "$HARNESS_VM_LOG"; harness_die "no guest"; }
ok "$(grep -o "job $job: guest ready.*" "$HARNESS_VM_LOG")"
ok "prolog phases: $(grep -o "job $job: phase [a-z+]* [0-9.]*s" "$HARNESS_VM_LOG" | sed 's/.*phase //' | tr '\n' ' ')"
state=$(guest_state_dir "$job")
dom=slurmvm-job-$job.0

# --- the seed
if /usr/bin/cloud-init schema -c "$state/seed/user-data" >/dev/null 2>&1; then
	ok "user-data passes cloud-init schema"
else
	fail "cloud-init schema: $(/usr/bin/cloud-init schema -c "$state/seed/user-data" 2>&1 | tail -3)"
fi
grep -qx "instance-id: \"slurmvm-job-$job.0\"" "$state/seed/meta-data" &&
	grep -qx "local-hostname: \"$node\"" "$state/seed/meta-data" &&
	ok "meta-data: instance-id slurmvm-job-$job.0, local-hostname $node" ||
	fail "meta-data: $(cat "$state/seed/meta-data")"
grep -q "^SEED	seed$" "$state/journal" && ok "SEED is journaled" || fail "no SEED in the journal"
# the user's keys, groups and network plan: the user's alone (qemu runs as
# the user), never the primary group's, which a site may share
[ "$(stat -c '%U %a' "$state/seed.iso")" = "$user 600" ] &&
	ok "seed.iso is $user's, 0600" || fail "seed.iso: $(stat -c '%U:%G %a' "$state/seed.iso")"
xml=$(virsh dumpxml "$dom")
grep -q "<source file='$state/seed.iso'" <<<"$xml" && grep -q "<target dev='vdb' bus='virtio'/>" <<<"$xml" &&
	ok "the seed is the domain's read-only virtio disk vdb" || fail "no seed disk vdb in the domain"
if grep -q "ssh_authorized_keys" "$state/seed/user-data" || grep -q 'root:' "$state/seed/user-data"; then
	fail "the planted authorized_keys link reached the seed"
else
	ok "authorized_keys -> /etc/shadow: read as $user, nothing of it in the seed"
fi
grep -q "authorized_keys not used" "$HARNESS_VM_LOG" && ok "the prolog said why: $(grep -o 'authorized_keys not used.*' "$HARNESS_VM_LOG" | tail -1)" ||
	fail "no warning about the refused authorized_keys"

# --- the guest took its identity from the seed
out=$(guest_exec "$user" "$job" -- sh -c 'hostname; id -un; id -u; id -gn; cat /proc/cmdline' 2>&1) || true
want="$node
$user
$uid
$(id -gn "$user")"
if [ "$(head -4 <<<"$out")" = "$want" ]; then
	ok "guest: hostname $node, user $user uid $uid group $(id -gn "$user"), from the seed"
else
	fail "guest identity: '$out', wanted '$want'"
fi
grep -q "svm.hostname" <<<"$out" && fail "the kernel command line still names the host" ||
	ok "the kernel command line names no host: $(tail -1 <<<"$out")"

# --- qemu as the job user
pid=$(cat "/run/libvirt/qemu/$dom.pid" 2>/dev/null || true)
quid=$(ps -o uid= -p "${pid:-0}" 2>/dev/null | tr -d ' ' || true)
[ -n "$pid" ] && [ "$quid" = "$uid" ] && ok "qemu (pid $pid) runs as uid $uid ($user)" ||
	fail "qemu pid '${pid}' runs as uid '$quid', not $uid"
grep -q "<seclabel type='static' model='dac' relabel='no'>" <<<"$xml" &&
	grep -q "<label>+$uid:+$gid</label>" <<<"$xml" && ok "seclabel: static DAC +$uid:+$gid, relabel='no'" ||
	fail "no static DAC seclabel in the live XML"
ovl=$HARNESS_DIR/vm/overlay/job-$job.0.qcow2
[ "$(stat -c '%u:%g %a' "$ovl")" = "$uid:$gid 600" ] &&
	[ "$(stat -c '%U %a' "$(dirname "$ovl")")" = "root 711" ] &&
	ok "overlay is $user's 0600 in a root 0711 OverlayDir" ||
	fail "overlay $(stat -c '%U:%G %a' "$ovl"), dir $(stat -c '%U %a' "$(dirname "$ovl")")"
[ "$(image_meta)" = "$before" ] && ok "base image untouched while running: $before" ||
	fail "base image changed while running: $(image_meta) (was $before)"

scancel "$job"
harness_wait 60 "job $job to end" bash -c "! squeue -h -j $job | grep -q ." || true
harness_wait 60 "job $job's epilog" bash -c "[ ! -e '$state' ]" || fail "state dir left"
[ ! -e "$state/seed.iso" ] && ok "seed gone after the job" || fail "seed left"
[ "$(image_meta)" = "$before" ] && ok "base image unchanged after the job: owner, mode, xattrs" ||
	fail "base image changed: $(image_meta) (was $before)"
rm -f "$home/.ssh/authorized_keys"
guest_node_up
[ "$failures" = 0 ]
