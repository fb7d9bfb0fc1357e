#!/bin/bash
# cluster-timeout: 480
# A stock Debian 12 cloud image (tests/guest/build-cloud.sh: GRUB, systemd,
# cloud-init 22.4, nothing of slurm-vm) from the catalog, booted by the real
# prolog with no special case: cloud-init reads the seed, creates the job
# user with the host's uid, gid and groups, names and addresses the job
# network's NIC, installs and starts the agent; srun tasks run in it as the
# user; nothing is left after the job. With the shares on and the spool
# under root-owned /var/lib (tests/cluster/run.sh), as on a real node: Open
# MPI over PMIx (srun --mpi=pmix, two ranks, one in each of the two nodes' guests), whose PMIx clients get scratch
# directories that exist in the guest and are the user's (the host's
# SlurmdSpoolDir paths cannot be made there); a task whose directory is
# outside the shares (the user's home, which cloud-init made in the guest
# too) starts in /tmp with the message. At the job's end the guest
# shuts down on the ACPI power button (the image has D-Bus, so
# systemd-logind handles it, as the admin guide's section 5 asks): the
# epilog's DOMAIN phase takes seconds, not ShutdownTimeout, and the log
# says "shut down". Prints boot-to-ready of this image and of the busybox
# test guest in the same run (TCG).
set -uo pipefail
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/guest.sh"

user=svmtest
# Two nodes of their own (namespaces, NodeAddr on the underlay): the job
# network needs a NodeAddr to carry it, and Open MPI runs across both
# guests. Each node's libvirtd has a cgroup of its own (libvirt.sh), so the
# two guests of the job, alike in name, are not held by one memory limit.
nodes=2
HARNESS_NODE_COUNT=$nodes guest_cluster_start 240 JobNetwork=vxlan JobNetworkUnderlay=eth0
shutdown_timeout=60
harness_vmconf_set ShutdownTimeout "$shutdown_timeout"
harness_vmconf_set SharedDirs "$HARNESS_WORK"
work=$HARNESS_WORK/$user
mkdir -p "$work"
chown "$user:" "$work"

# Built once and cached by content (~75 s when it is not).
t0=$(date +%s)
# HARNESS_CLOUD_DIR: build-cloud.sh's output made beforehand
# (tests/platform/run.sh: the host's image on another platform).
if [ -n "${HARNESS_CLOUD_DIR:-}" ]; then
	cloud=$HARNESS_CLOUD_DIR/debian12.qcow2
	[ -f "$cloud" ] || harness_die "HARNESS_CLOUD_DIR: no $cloud"
elif ! cloud=$("$HARNESS_REPO/tests/guest/build-cloud.sh" 2>"$HARNESS_DIR/log/cloud-build.log"); then
	tail -20 "$HARNESS_DIR/log/cloud-build.log" >&2
	harness_die "tests/guest/build-cloud.sh failed"
fi
echo "# cloud image: $(($(date +%s) - t0)) s to build or check"
image=$HARNESS_IMAGES/debian12.qcow2
cp "$cloud" "$image"
chmod 0644 "$image"
# A disk with its own bootloader: no Kernel=, SeaBIOS boots it.
harness_add_catalog_image debian12 "$image" qcow2

ready_secs() { # job: "guest ready N.Ns after boot" of the prolog
	sed -n "s/.*job $1: guest ready \([0-9.]*\)s after boot.*/\1/p" \
		"$HARNESS_VM_LOG" | tail -n 1
}
run_job() { # image nodes tasks: the job id once its guests are ready
	local job
	job=$(harness_as_user "$user" sbatch --parsable -N"$2" -n"$3" -c1 --mem=1G \
		--vm-image="$1" --wrap 'sleep 900')
	harness_wait 300 "job $job's guests ($1)" sh -c \
		"[ \$(grep -c 'job $job: guest ready' '$HARNESS_VM_LOG') -ge $2 ]" || {
		grep "job $job" "$HARNESS_VM_LOG" | tail -n 30 >&2
		harness_die "no guest for job $job ($1)"
	}
	echo "$job"
}
step() { # job srun-args...
	local job=$1
	shift
	harness_as_user "$user" timeout 120 srun --jobid="$job" --overlap -O \
		--chdir=/tmp "$@"
}

# The MPI program, built on the host for the image's Open MPI (Debian 12's,
# as the host's), in the shared directory.
mpicc.openmpi -O2 -o "$work/svm-ompi-allreduce" \
	"$HARNESS_REPO/tests/guest/files/mpi_allreduce.c" ||
	harness_die "mpicc.openmpi failed"
chmod 0755 "$work/svm-ompi-allreduce"

hold=$(guest_hold_core "$user" n2)
job=$(run_job debian12 "$nodes" 2)
scancel "$hold"
cloud_ready=$(ready_secs "$job")

want=$(id "$user")
out=$(step "$job" -n1 id 2>&1) || true
[ "$out" = "$want" ] && ok "srun -n1 id in the cloud image: $out" ||
	fail "srun -n1 id: '$out', on the host '$want'"

out=$(step "$job" -n1 sh -c 'cat /etc/os-release; echo "PID1=$(cat /proc/1/comm)"' 2>&1) || true
if grep -qx 'ID=debian' <<<"$out" && grep -qx 'VERSION_ID="12"' <<<"$out" &&
	grep -qx 'PID1=systemd' <<<"$out"; then
	ok "the task runs in Debian 12 with systemd as PID 1"
else
	fail "os-release/PID 1: $out"
fi

# cloud-init's renderer (ifupdown here) named the NIC and gave it the
# planned address, which the seed's /etc/hosts entry gives the node's name
# (the node the step ran on: either of the two).
out=$(step "$job" -n1 sh -c 'echo "node=$(hostname)"; cat /etc/hosts; ip -4 -o addr show dev job0' 2>&1) || true
node=$(sed -n 's/^node=//p' <<<"$out")
addr=$(awk -v n="$node" '$2 == n && $1 !~ /^127\./ { print $1 }' <<<"$out")
if [ -n "$node" ] && [ -n "$addr" ] && grep -q "job0 .*inet $addr/" <<<"$out"; then
	ok "cloud-init configured job0 with $addr, in /etc/hosts as $node"
else
	fail "job0 of the guest on '$node' (its /etc/hosts entry '$addr'): $out"
fi

# SharedDirs=: cloud-init's bootcmd mounted the share over 9p (the cloud
# kernel's modules) before the agent started; the task starts in the
# directory it asked for and what it writes is the user's on the host.
rm -f "$work/cloud.out"
out=$(step "$job" --chdir="$work" -n1 sh -c 'pwd; echo "from $(uname -r)" >cloud.out' 2>&1) || true
if [ "$out" = "$work" ] && [ "$(stat -c %U "$work/cloud.out" 2>/dev/null)" = "$user" ] &&
	grep -q '^from [0-9]' "$work/cloud.out"; then
	ok "the task started in the shared $work and wrote cloud.out, $user's on the host: $(cat "$work/cloud.out")"
else
	fail "shared directory: '$out'; cloud.out: $(ls -l "$work/cloud.out" 2>&1) $(cat "$work/cloud.out" 2>/dev/null)"
fi

# The user's home on the host is not shared here (SharedDirs= is the work
# directory only), and cloud-init made a home of that name in the guest:
# the task starts in /tmp, as anywhere outside the shares, and the step's
# stderr says so; not silently in the guest's own directory.
home=$(getent passwd "$user" | cut -d: -f6)
out=$(step "$job" --chdir="$home" -n1 pwd 2>"$HARNESS_DIR/log/home-step.err") || true
if [ -d "$home" ] && [ "$out" = /tmp ] &&
	grep -qF "couldn't chdir to \`$home': the guest's own directory, not on a share: going to /tmp instead (the guest has the host's directories only under vm.conf SharedDirs=)" "$HARNESS_DIR/log/home-step.err"; then
	ok "the host's $home, not shared: the task starts in /tmp and the step says why"
else
	fail "cwd $home outside the shares: '$out', stderr: $(cat "$HARNESS_DIR/log/home-step.err")"
fi

# Where the boot's time goes, as the guest saw it (information, TCG).
step "$job" -n1 sh -c 'echo "uptime $(cut -d" " -f1 /proc/uptime) s at this task";
	cloud-init analyze show 2>/dev/null | grep -E "^(Finished stage|Total Time)";
	cloud-init analyze blame 2>/dev/null | grep -m 6 "s ("' 2>&1 | sed 's/^/# guest: /'

# Open MPI in the guest, its PMIx clients served by the node's slurmstepd
# through the channel: every rank's MPI_Init needs the job-level scratch
# directories Slurm's PMIx server hands out (under SlurmdSpoolDir).
# Debian's Slurm 26.05.5 (forky) ships no mpi/pmix plugin (its PMIx 7 is
# past what Slurm's configure takes): there srun --mpi=pmix cannot run, on
# bare metal either.
spool=$(scontrol show config | sed -n 's/^SlurmdSpoolDir *= *//p')
if ! srun --mpi=list 2>&1 | grep -qw pmix; then
	echo "# no mpi/pmix plugin in Slurm $(slurmd -V | cut -d' ' -f2) here: Open MPI over PMIx not run"
else
	guest_ompi_allreduce "$nodes" 4 \
		"Open MPI over PMIx in $nodes cloud guest(s) (shares on, spool $spool)" \
		step "$job" --chdir="$work"
fi

scancel "$job"
harness_wait 120 "job $job to end" bash -c "! squeue -h -j $job | grep -q ." || true
for n in $(seq "$nodes"); do
	harness_wait $((shutdown_timeout + 30)) "job $job's epilog on n$n" bash -c "[ ! -e '$HARNESS_DIR/nodes/n$n/vm/state/job-$job.0' ]" || true
	guest_nothing_left "$job" "n$n"
	guest_jobnet_nothing_left "n$n"
done
guest_node_up "the cloud image's job"

# The guest shut down on the ACPI power button: the epilog's DOMAIN phase
# (its own timing) took seconds, and it logged a shutdown, not a destroy
# after ShutdownTimeout.
# Both nodes' guests: the longest DOMAIN phase, one shutdown per node.
domain_secs=$(sed -n "s/.*job $job: epilog phase DOMAIN \([0-9.]*\)s.*/\1/p" "$HARNESS_VM_LOG" | sort -n | tail -n 1)
if [ "$(grep -c "guest slurmvm-job-$job.0 shut down" "$HARNESS_VM_LOG")" = "$nodes" ] &&
	[ -n "$domain_secs" ] && awk -v s="$domain_secs" -v max=$((shutdown_timeout / 2)) 'BEGIN { exit !(s < max) }'; then
	ok "the cloud guests shut down on the ACPI power button: epilog DOMAIN phase ${domain_secs}s at most (ShutdownTimeout=${shutdown_timeout}s)"
else
	fail "the cloud guest's shutdown: epilog DOMAIN phase '${domain_secs}'s (ShutdownTimeout=${shutdown_timeout}s):"
	grep -E "guest slurmvm-job-$job\.0 |job $job: epilog phase DOMAIN" "$HARNESS_VM_LOG" | sed 's/^/    /'
fi

# The busybox test guest in the same run, for the comparison.
bjob=$(run_job testguest 1 1)
busybox_ready=$(ready_secs "$bjob")
scancel "$bjob"
echo "# boot-to-ready (TCG): debian12 cloud image ${cloud_ready}s, busybox test guest ${busybox_ready}s"
[ "$failures" = 0 ]
