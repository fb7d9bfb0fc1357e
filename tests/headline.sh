#!/bin/bash
# README command 1: install, build, start a local test cluster of two nodes
# (real slurmctld; two slurmd, each in network and mount namespaces of its
# own with its own libvirtd; JobNetwork=vxlan over their underlay) and run
# the headline job
#
#   sbatch -N2 --vm-image=testguest --gres=gpu:1,ibvf:1 job.sh
#
# as a normal user, with job.sh = doc/examples/job.sh: one guest per node,
# each guest's kernel, hostname and devices, and MPI (Debian's MPICH, srun
# --mpi=pmi2) with one rank per guest: an MPI_Allreduce and a point-to-point
# ring over the job network. While the job runs it shows each node's guest
# as that node's libvirtd has it (vCPU pinning, planned devices). Prints what
# happened, checks that nothing of the job is left on either node (no
# domain, overlay, state directory, process, job network link or nftables
# table), stops the cluster and checks that nothing of it is left. Exits 0
# only if the job completed with exit code 0:0 and nothing was left.
# BUILD_DIR (default build/) is the build tree; SLURM_VM_INSTALLED=1 runs
# the installed packages instead (no build); HARNESS_KEEP=1 keeps the
# cluster's directory.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

say() { printf '\n### %s\n' "$*"; }

if [ -n "${SVM_PLATFORM:-}" ]; then
	# tests/platform/run.sh: the platform root has them, by that suite's names.
	say "dependencies: the $SVM_PLATFORM platform root's"
else
	say "installing dependencies (apt-get, idempotent)"
	scripts/install-deps.sh
fi

if [ "${SLURM_VM_INSTALLED:-0}" = 1 ]; then
	# CI: the Debian packages, installed (tests/cluster/test_headline.sh)
	say "using the installed slurm-vm packages, no build tree"
	dpkg-query -W -f='${Package} ${Version}\n' slurm-vm slurm-vm-spank slurm-vm-agent
	export HARNESS_INSTALLED=1
else
	say "building"
	build=${BUILD_DIR:-$repo/build}
	[ -x configure ] || autoreconf -fi >/dev/null 2>&1
	mkdir -p "$build"
	if [ ! -f "$build/Makefile" ]; then
		(cd "$build" && "$repo/configure" --prefix=/usr --sysconfdir=/etc \
			--localstatedir=/var >configure.log 2>&1) ||
			{ tail -20 "$build/configure.log"; exit 1; }
	fi
	make -C "$build" -j"$(nproc)" >"$build/make.log" 2>&1 ||
		{ grep -E 'error' "$build/make.log" | head -20; exit 1; }
	export BUILD_DIR=$build
fi

. tests/cluster/harness.sh
. tests/cluster/guest.sh
say "building the test guest (Debian kernel, busybox, slurm-vm-agent, MPICH)"
guest_build

say "starting the test cluster: nodes n1 and n2, each with its own libvirtd"
# TCG: two guests boot at once on this machine's cores.
HARNESS_NODE_COUNT=2 guest_cluster_start 300 JobNetwork=vxlan \
	JobNetworkUnderlay=eth0
# The users' directories in the guests at the same paths: the job runs in
# its submit directory there.
harness_vmconf_set SharedDirs "$HARNESS_WORK"
guest_catalog_entry testguest \
	"Description=slurm-vm test guest (Debian kernel, busybox, agent, MPICH)"
user=svmtest
sinfo -N -o '%N %c CPUs, %m MB, %G, %t'
cluster_dir=$HARNESS_DIR

# The job script users read as the example: doc/examples/job.sh.
work=$HARNESS_WORK/$user
install -m 0755 -o "$user" doc/examples/job.sh "$work/job.sh"
say "job.sh (doc/examples/job.sh)"
grep -v '^#' "$work/job.sh" | sed '/^$/d'

say "sbatch -N2 --vm-image=testguest --gres=gpu:1,ibvf:1 job.sh (as $user, in $work)"
jobid=$(harness_as_user "$user" sbatch --parsable -N2 --vm-image=testguest \
	--gres=gpu:1,ibvf:1 job.sh)
echo "submitted job $jobid"

# Each node's guest as that node's own libvirtd runs it: the domain exists
# from the prolog's start to the epilog, so it is looked at once it shows.
node_domain() {
	harness_node_exec "$1" virsh -q list --name 2>/dev/null |
		grep -E -m1 "job-$jobid([^0-9]|\$)"
}
say "each node's guest, from its own libvirtd (virsh, while the job runs)"
for node in "${HARNESS_NODES[@]}"; do
	harness_wait 300 "$node's guest of job $jobid" node_domain "$node" ||
		{ echo "$node: no guest of job $jobid"; continue; }
	dom=$(node_domain "$node")
	echo "$node: domain $dom"
	harness_node_exec "$node" virsh vcpupin "$dom" |
		sed -n "s/^ *\([0-9][0-9]*\) *\([0-9].*\)/$node: vCPU \1 -> host CPU \2/p" || true
	harness_node_exec "$node" virsh dumpxml "$dom" | grep -o '<svm:device [^>]*>' |
		sed "s/<svm:device /$node: device /; s/ *\/*>\$//" || true
done

job_ended() {
	squeue -h -j "$jobid" -t all -o %T |
		grep -Eqx 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY'
}
# On this machine the job ends in about a minute; one that has not after
# five is stuck: show where, then cancel it, so that its epilogs still run
# and what they leave behind is still checked.
if ! harness_wait 300 "job $jobid to end" job_ended; then
	say "job $jobid is stuck: its steps, its processes and guests"
	squeue -s -j "$jobid" -o '%i %j %T %M %N' || true
	for node in "${HARNESS_NODES[@]}"; do
		harness_node_exec "$node" ps -eo pid,ppid,user,etime,args |
			grep -E "slurmstepd|slurm-vm-|qemu" | grep -v grep |
			cut -c1-200 | sed "s/^/$node: /" || true
		for con in "$HARNESS_DIR/nodes/$node"/vm/state/job-"$jobid".*/console.log; do
			[ -e "$con" ] || continue
			echo "--- $node: last lines of the guest's console"
			tail -n 20 "$con"
		done
	done
	scancel "$jobid" || true
	harness_wait 120 "job $jobid to end after scancel" job_ended || true
fi
state=$(squeue -h -j "$jobid" -t all -o '%T %r')
exit_code=$(scontrol show job "$jobid" | sed -n 's/.* ExitCode=\([^ ]*\).*/\1/p')

say "job $jobid: $state, ExitCode=$exit_code"
scontrol show job -d "$jobid" | grep -E 'JobState|NodeList|GRES=|CPU_IDs|TresPerNode|GresEnforceBind' || true

say "job output (slurm-$jobid.out)"
cat "$work/slurm-$jobid.out" 2>/dev/null || echo "(no output file)"

say "what slurm-vm did on the nodes (vm.conf LogFile, shared by both)"
grep "job $jobid:" "$HARNESS_VM_LOG" || echo "(nothing logged)"

# A job shows COMPLETED once its epilogs are done; allow for a slow one.
# Left on a node: the guest (domain, overlay, state, relay, qemu), the job
# network's links and nftables tables.
node_leftovers() {
	local node=$1 left
	left=$(guest_leftovers "$jobid" "$node")
	left+=$(harness_node_exec "$node" ip -o link 2>/dev/null |
		grep -o ' svm[^:@]*' | tr -d '\n' || true)
	left+=$(harness_node_exec "$node" nft list tables 2>/dev/null |
		grep -o " svm_job_$jobid\$" | tr -d '\n' || true)
	echo "${left# }"
}
no_leftovers() {
	local node
	for node in "${HARNESS_NODES[@]}"; do
		[ -z "$(node_leftovers "$node")" ] || return 1
	done
}
harness_wait 60 "job $jobid's guests to be gone" no_leftovers || true
left=""
for node in "${HARNESS_NODES[@]}"; do
	l=$(node_leftovers "$node")
	[ -z "$l" ] || left+="$node: $l; "
done
nodes="${HARNESS_NODES[*]}"

say "stopping the test cluster"
harness_stop
after=""
[ -e "$cluster_dir" ] && after+=" $cluster_dir"
pgrep -f "$cluster_dir" >/dev/null && after+=" processes"
pgrep -f "guest=[^,]*job-${jobid}[^0-9]" >/dev/null && after+=" qemu"

say "result"
echo "job $jobid: ${state%% *}, exit code $exit_code"
echo "after the job: ${left:-nothing of it left on $nodes (no domain, overlay, state, relay, qemu, job network link or nftables table)}"
echo "after stopping the cluster: ${after:-nothing left (no cluster directory, daemon, qemu or other process)}"
[ "${state%% *}" = COMPLETED ] && [ "$exit_code" = 0:0 ] && [ -z "$left" ] &&
	[ -z "$after" ]
