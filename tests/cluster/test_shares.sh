#!/bin/bash
# cluster-timeout: 480
# vm.conf SharedDirs= (issue 14): the admin's directories in the guest at
# the same paths, with the job user's rights on the host. One guest:
#   - a job script that writes $PWD/out.txt from two tasks and reads an
#     input from $HOME runs as on bare metal, in the job's working
#     directory, no "couldn't chdir"; the host sees the output, owned by
#     the user, as soon as the step ends;
#   - the job, submitted through libslurm with forged SPANK_* values that
#     name other directories, gets the admin's shares and nothing more;
#   - a step whose directory is outside every share starts in /tmp with a
#     message that names SharedDirs;
#   - root in the guest (AllowRoot=yes, the host's root through the relay)
#     creates files owned by the job user, cannot read, chmod or chown
#     another user's 0600 file, cannot write where the user cannot, and a
#     symlink in the share leads to nothing of the host's;
#   - qemu, which serves the shares, runs with the user's uid, gid and
#     supplementary groups: a file of one of them is readable;
#   - check-config reports shares that are missing, not directories or in
#     a directory a user may change, and refuses SharedDirTransport=virtiofs
#     without the Rust virtiofsd;
#     a share missing when a job starts is the node's fault, named.
# SVM_SHARE_TRANSPORT=virtiofs (test_shares_virtiofs.sh): the same over
# virtiofs, each share served by a Rust virtiofsd the prolog starts as the
# user (with the user's groups), stopped when the job ends.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
other=svmtest2
raw=$BUILD_DIR/tests/cluster/svm-submit-raw
[ -x "$raw" ] || harness_skip "no $raw (make check builds it)"
transport=${SVM_SHARE_TRANSPORT:-9p}
if [ "$transport" = virtiofs ]; then
	virtiofsd=/usr/libexec/virtiofsd
	harness_rust_virtiofsd "$virtiofsd" ||
		harness_skip "no Rust virtiofsd at $virtiofsd (Debian 13 and later: apt-get install virtiofsd)"
fi
guest_cluster_start 240 AllowRoot=yes
harness_vmconf_set SharedDirTransport "$transport"
# The user runs it: a copy outside a checkout the user may not enter.
raw=$(harness_world_copy "$raw" 0755)
harness_vmconf_set SharedDirs "$HARNESS_WORK,/home"
work=$HARNESS_WORK/$user
home=$(getent passwd "$user" | cut -d: -f6)
uid=$(id -u "$user")
case "$home" in
/home/*) ;;
*) harness_skip "$user's home $home is not under /home" ;;
esac

# --- check-config: what a share must be, and the transport
bad=$HARNESS_DIR/badshares
mkdir -p "$bad"
cp "$HARNESS_ETC"/*.conf "$bad/"
sed -i '/^SharedDirs=/d; /^SharedDirTransport=/d; /^VirtiofsdPath=/d' "$bad/vm.conf"
harness_as_user "$user" mkdir -p "$home/shares-proj"
echo "SharedDirs=$HARNESS_WORK,/nonexistent/scratch,/etc/hostname,$home/shares-proj" >>"$bad/vm.conf"
out=$("$BUILD_DIR/admin/slurm-vm" check-config --slurm-conf "$bad/slurm.conf" 2>&1) || true
rmdir "$home/shares-proj"
for want in "SharedDirs: /nonexistent/scratch: No such file or directory" \
	"SharedDirs: /etc/hostname is not a directory" \
	"SharedDirs: $home/shares-proj: its parent $home is not root's or is writable by others" \
	"ok:      SharedDirs: $HARNESS_WORK is shared"; do
	grep -qF -- "$want" <<<"$out" && ok "check-config: $want" ||
		fail "check-config does not say '$want': $out"
done
printf '%s\n' SharedDirTransport=virtiofs VirtiofsdPath=/nonexistent/virtiofsd >>"$bad/vm.conf"
out=$("$BUILD_DIR/admin/slurm-vm" check-config --slurm-conf "$bad/slurm.conf" 2>&1) || true
grep -qF "problem: SharedDirs: SharedDirTransport=virtiofs, but VirtiofsdPath=/nonexistent/virtiofsd is missing or not an executable file" <<<"$out" &&
	ok "check-config refuses SharedDirTransport=virtiofs without the Rust virtiofsd" ||
	fail "check-config on virtiofs: $out"

# --- a share missing on the node: the node's fault, named, before any guest
node=$(sinfo -h -N -o %N | head -1)
harness_vmconf_set SharedDirs "$HARNESS_WORK,/nonexistent/scratch"
nf=$(harness_as_user "$user" sbatch --parsable -c1 --mem=768M --vm-image=testguest --wrap true)
harness_wait 60 "job $nf's prolog to fail" grep -q "job $nf: SharedDirs: /nonexistent/scratch: No such file or directory: guests cannot mount it" "$HARNESS_VM_LOG" &&
	ok "a missing share: the prolog names it: $(grep -o "job $nf: SharedDirs: .*" "$HARNESS_VM_LOG" | head -1)" ||
	fail "a missing share: $(grep "job $nf" "$HARNESS_VM_LOG" | tail -3)"
harness_wait 30 "node $node to drain" bash -c "sinfo -h -N -o %t | grep -q drain" &&
	ok "a missing share drains the node (the admin's to fix, as check-config says)" ||
	fail "node after a missing share: $(sinfo -h -N -o %t)"
grep -q "job $nf: phase boot" "$HARNESS_VM_LOG" && fail "job $nf's prolog went on to boot"
scancel "$nf"
harness_wait 60 "job $nf to end" bash -c "! squeue -h -j $nf 2>/dev/null | grep -q ." || true
scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
harness_vmconf_set SharedDirs "$HARNESS_WORK,/home"
harness_wait 30 "node $node back" bash -c "sinfo -h -N -o %t | grep -Eqx 'idle|mix'" || true
# The epilog of the requeued job looks for its next restart's state; what
# the admin runs after a drain, `slurm-vm cleanup`, takes the rest.
"$BUILD_DIR/admin/slurm-vm" cleanup >/dev/null 2>&1 || true
guest_nothing_left "$nf"

# --- the host's side: an input in $HOME, another user's private file, links
# that lead out of the share, a directory outside every share
echo "input-$$" >"$home/shares-input.txt"
chown "$user:" "$home/shares-input.txt"
secret_dir=$HARNESS_WORK/$other
mkdir -p "$secret_dir"
chown "$other:" "$secret_dir"
chmod 0755 "$secret_dir"
echo "private-$$" >"$secret_dir/private.txt"
chown "$other:" "$secret_dir/private.txt"
chmod 0600 "$secret_dir/private.txt"
# A project group's file: the user reads it only as a member of that
# supplementary group.
getent group svmshare >/dev/null || groupadd svmshare
id -nG "$user" | grep -qw svmshare || usermod -aG svmshare "$user"
echo "team-$$" >"$secret_dir/team.txt"
chown "$other:svmshare" "$secret_dir/team.txt"
chmod 0640 "$secret_dir/team.txt"
outside=$HARNESS_DIR/outside
mkdir -p "$outside"
chmod 0755 "$outside"
echo "outside-$$" >"$outside/readable.txt"
chmod 0644 "$outside/readable.txt"
harness_as_user "$user" ln -sfn /etc/shadow "$work/shadow-link"
harness_as_user "$user" ln -sfn "$outside/readable.txt" "$work/outside-link"
rm -f "$work/out.txt" "$work/step.done"

# The job script as a user writes it for bare metal.
script=$(guest_shares_script "$outside")
job=$(harness_as_user "$user" "$raw" "$work" "$script" VM_IMAGE=testguest VM_MEM=512 \
	VM_SHARED_DIRS=/etc VM_SHARES=/etc,/root VM_SHARE=/var VM_MOUNT=/etc)
harness_wait 300 "job $job's first step" test -s "$work/step.done" ||
	harness_die "job $job's first step did not end: $(tail -5 "$work/raw-$job.out" 2>/dev/null)"
# Right after the step: both tasks' lines, in the guest, with the input.
guest_kernel=$(guest_kernel_version)
got=$(sort "$work/out.txt" 2>/dev/null || true)
want=$(printf 'task 0 %s input-%s\ntask 1 %s input-%s' "$guest_kernel" $$ "$guest_kernel" $$)
if [ "$(cat "$work/step.done")" = "step exit 0" ] && [ "$got" = "$want" ]; then
	ok "two tasks in the guest wrote \$PWD/out.txt with the input from \$HOME: $(tr '\n' '|' <<<"$got")"
else
	fail "out.txt: '$got' (want '$want'), $(cat "$work/step.done")"
fi
owner=$(stat -c %U:%a "$work/out.txt" 2>/dev/null || true)
[ "${owner%%:*}" = "$user" ] && ok "out.txt on the host belongs to $user ($owner)" ||
	fail "out.txt on the host: owner $owner"
harness_wait 60 "the second step" grep -q '^/' "$work/raw-$job.out" || true
if grep -q "couldn't chdir to \`$work'" "$work/raw-$job.out"; then
	fail "a task could not enter the job's directory: $(cat "$work/raw-$job.out")"
else
	ok "no \"couldn't chdir\" for the job's directory"
fi
if grep -q "^/tmp$" "$work/raw-$job.out" &&
	grep -q "couldn't chdir to \`$outside': No such file or directory: going to /tmp instead (the guest has the host's directories only under vm.conf SharedDirs=)" "$work/raw-$job.out"; then
	ok "a directory outside the shares: /tmp, and the message names SharedDirs"
else
	fail "outside the shares: $(cat "$work/raw-$job.out")"
fi

# --- only the admin's shares, whatever the job passed
dom=slurmvm-job-$job.0
want_dirs=$(printf '%s\n' /home "$HARNESS_WORK" | sort | tr '\n' ' ')
xml=$(virsh -c qemu:///system dumpxml "$dom" 2>/dev/null)
servers=()
if [ "$transport" = 9p ]; then
	dirs=$(sed -n "s/.*<source dir='\([^']*\)'.*/\1/p" <<<"$xml" | sort | tr '\n' ' ')
	servers=("$(pgrep -f "guest=$dom," | head -1)")
else
	# Each share by its virtiofsd's socket; what each serves, from its
	# command line.
	nsock=$(grep -c "<source socket='/" <<<"$xml" || true)
	[ "$nsock" = 2 ] && ! grep -q "<source dir=" <<<"$xml" &&
		ok "the domain names the shares by their virtiofsd's sockets only" ||
		fail "the domain's filesystems: $(grep -A3 '<filesystem' <<<"$xml")"
	# Each share's virtiofsd leads its session (the prolog's setsid);
	# its sandbox child runs beside it.
	mapfile -t servers < <(pgrep -u "$user" -x virtiofsd)
	dirs=$(for p in "${servers[@]}"; do
		[ "$(ps -o sid= -p "$p" | tr -d ' ')" = "$p" ] || continue
		tr '\0' '\n' <"/proc/$p/cmdline" | sed -n 's/^--shared-dir=//p'
	done | sort | tr '\n' ' ')
fi
[ "$dirs" = "$want_dirs" ] && ok "the guest is served exactly SharedDirs over $transport: $dirs" ||
	fail "the guest is served '$dirs', want '$want_dirs'"
mounts=$(guest_exec "$user" "$job" -- sh -c "grep ' $transport ' /proc/mounts" 2>&1 || true)
nmounts=$(grep -c " $transport " <<<"$mounts" || true)
opts=(".*trans=virtio" ".*mmap")
[ "$transport" = 9p ] || opts=("" "")
if [ "$nmounts" = 2 ] && grep -q "^svmshare[01] $HARNESS_WORK $transport ${opts[0]}" <<<"$mounts" &&
	grep -q "^svmshare[01] /home $transport ${opts[1]}" <<<"$mounts" &&
	! grep -q " /etc \| /root \| /var " <<<"$mounts"; then
	ok "the guest mounts the two shares at their host paths over $transport and nothing else"
else
	fail "the guest's $transport mounts: $mounts"
fi

# --- what serves the shares (qemu for 9p, each virtiofsd) has the user's
# identity
ugroups=$(id -G "$user" | tr ' ' '\n' | sort -n | tr '\n' ' ')
[ "${#servers[@]}" -gt 0 ] && [ -n "${servers[0]}" ] || fail "no process serves the shares of $dom"
for qpid in "${servers[@]}"; do
	[ -n "$qpid" ] || continue
	what=$(cat "/proc/$qpid/comm" 2>/dev/null)
	q=$(awk '/^(Uid|Gid):/ { $1 = ""; print }' "/proc/$qpid/status" | tr -s ' \t' ' ' | tr '\n' ' ')
	qgroups=$(awk '/^Groups:/ { $1 = ""; print }' "/proc/$qpid/status" | tr ' \t' '\n\n' | grep . | sort -n | tr '\n' ' ')
	gid=$(id -g "$user")
	if [ "$q" = " $uid $uid $uid $uid  $gid $gid $gid $gid " ] && [ "$qgroups" = "$ugroups" ]; then
		ok "$what ($qpid) runs as uid $uid gid $gid with $user's groups ($qgroups)"
	else
		fail "$what's ($qpid) identity: $q; groups '$qgroups', want '$ugroups'"
	fi
done

# --- root in the guest: the host's root through the relay (AllowRoot=yes)
as_guest_root() {
	"$HARNESS_BIN/slurm-vm-exec" --socket "$(guest_state_dir "$job")/sock/relay.sock" \
		--cwd /tmp -- "$@"
}
who=$(as_guest_root id -u 2>&1 || true)
[ "$who" = 0 ] || fail "not root in the guest: '$who'"
as_guest_root sh -c "echo made-by-root >'$work/root-made.txt'; mkdir '$work/root-dir'" || true
owner=$(stat -c %U "$work/root-made.txt" "$work/root-dir" 2>/dev/null | sort -u | tr '\n' ' ')
[ "$owner" = "$user " ] && ok "files and directories guest root creates belong to $user on the host" ||
	fail "guest root's files on the host belong to '$owner'"
out=$(as_guest_root cat "$secret_dir/private.txt" 2>&1 || true)
if ! grep -q "private-$$" <<<"$out" && grep -qi "permission denied" <<<"$out"; then
	ok "guest root cannot read $other's 0600 file: $out"
else
	fail "guest root read $other's private file: $out"
fi
out=$(as_guest_root cat "$secret_dir/team.txt" 2>&1 || true)
grep -qx "team-$$" <<<"$out" &&
	ok "guest root reads $other's 0640 file of group svmshare, one of $user's supplementary groups" ||
	fail "the group svmshare's file from the guest: $out"
# Owners as the guest sees them: the user's own; another's over 9p, nobody
# in virtiofsd's namespace (only the user's ids are mapped there).
view=$(as_guest_root stat -c %u "$work/out.txt" "$secret_dir/private.txt" 2>&1 | tr '\n' ' ' || true)
want_view="$uid $(id -u "$other") "
[ "$transport" = 9p ] || want_view="$uid 65534 "
[ "$view" = "$want_view" ] &&
	ok "in the guest, $user's file is $uid's and $other's is ${want_view#* }over $transport" ||
	fail "owners in the guest: '$view', want '$want_view'"
as_guest_root sh -c "chmod 0644 '$secret_dir/private.txt'; chown 0:0 '$secret_dir/private.txt'; chown $uid '$secret_dir/private.txt'; echo x >>'$secret_dir/private.txt'; rm -f '$secret_dir/private.txt'; echo x >'$HARNESS_WORK/root-was-here'" >/dev/null 2>&1 || true
st=$(stat -c '%U %a %s' "$secret_dir/private.txt" 2>/dev/null || echo gone)
want_st="$other 600 $(stat -c %s "$secret_dir/private.txt" 2>/dev/null || echo 0)"
if [ "$st" = "$want_st" ] && [ "$(cat "$secret_dir/private.txt")" = "private-$$" ] &&
	[ ! -e "$HARNESS_WORK/root-was-here" ]; then
	ok "guest root cannot chmod, chown, append to or remove $other's file, nor write in a root-owned directory ($st)"
else
	fail "$other's file after guest root: $st; root-was-here: $(ls "$HARNESS_WORK/root-was-here" 2>&1)"
fi
# The guest resolves a link itself, in its own tree: /etc/shadow is the
# guest's, and a host file outside the shares is not there at all.
as_guest_root cat "$work/shadow-link" >"$HARNESS_DIR/shadow.via-link" 2>&1 || true
as_guest_root cat /etc/shadow >"$HARNESS_DIR/shadow.guest" 2>&1 || true
out=$(as_guest_root cat "$work/outside-link" 2>&1 || true)
if cmp -s "$HARNESS_DIR/shadow.via-link" "$HARNESS_DIR/shadow.guest" &&
	! cmp -s "$HARNESS_DIR/shadow.via-link" /etc/shadow &&
	! grep -q "outside-$$" <<<"$out" && grep -q "No such file" <<<"$out"; then
	ok "symlinks in the share lead into the guest's tree, not the host's: /etc/shadow is the guest's; $out"
else
	fail "a symlink in the share: via link '$(head -c 200 "$HARNESS_DIR/shadow.via-link")', guest's '$(head -c 200 "$HARNESS_DIR/shadow.guest")', outside: $out"
fi

scancel "$job"
harness_wait 120 "job $job to end" bash -c \
	"squeue -h -j $job -t all -o %T | grep -Eqx 'CANCELLED|COMPLETED|FAILED'" || true
harness_wait 60 "job $job's guest to go" bash -c "! virsh -c qemu:///system list --name | grep -qx $dom" || true
guest_nothing_left "$job"
if [ "$transport" = virtiofs ]; then
	left=$(for p in "${servers[@]}"; do [ ! -e "/proc/$p" ] || echo "$p"; done)
	[ -z "$left" ] && ok "the job's virtiofsd (${servers[*]}) ended with it" ||
		fail "virtiofsd left after job $job: $left"
fi
guest_node_up "shares"
rm -f "$home/shares-input.txt"
[ "$failures" = 0 ]
