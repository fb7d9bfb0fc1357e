#!/bin/bash
# README command 1: install, build, start a local test cluster (real
# slurmctld, slurmd, libvirtd) and run the headline job
#
#   sbatch -N1 --vm-image=testguest --gres=gpu:1,ibvf:1 job.sh
#
# as a normal user, with job.sh = doc/examples/job.sh: the guest's kernel,
# its vCPU pinning and planned devices, and an MPI_Allreduce over two ranks
# (Debian's MPICH, srun --mpi=pmi2) inside the guest. Prints what happened,
# stops the cluster and checks that nothing is left: no domain, overlay,
# state directory or process. Exits 0 only if the job completed with exit
# code 0:0 and nothing was left. BUILD_DIR (default build/) is the build
# tree; HARNESS_KEEP=1 keeps the cluster's directory.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

say() { printf '\n### %s\n' "$*"; }

say "installing dependencies (apt-get, idempotent)"
scripts/install-deps.sh

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

say "building the test guest (Debian kernel, busybox, slurm-vm-agent, MPICH)"
tests/guest/build.sh --agent "$build/agent/slurm-vm-agent"

say "starting the test cluster"
. tests/cluster/harness.sh
harness_ensure_test_users
HARNESS_LIBVIRT=1 harness_start
user=svmtest
. tests/cluster/guest.sh
guest_add_to_catalog testguest \
	"Description=slurm-vm test guest (Debian kernel, busybox, agent, MPICH)"
sinfo -N -o '%N %c CPUs, %m MB, %G, %t'
cluster_dir=$HARNESS_DIR

# The job script users read as the example: doc/examples/job.sh.
work=$HARNESS_WORK/$user
install -m 0755 -o "$user" doc/examples/job.sh "$work/job.sh"
say "job.sh (doc/examples/job.sh)"
grep -v '^#' "$work/job.sh" | sed '/^$/d'

say "sbatch -N1 --vm-image=testguest --gres=gpu:1,ibvf:1 job.sh (as $user, in $work)"
jobid=$(harness_as_user "$user" sbatch --parsable -N1 --vm-image=testguest \
	--gres=gpu:1,ibvf:1 job.sh)
echo "submitted job $jobid"
harness_wait 600 "job $jobid to end" \
	bash -c "squeue -h -j $jobid -t all -o %T | grep -Eqx 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY'" ||
	true
state=$(squeue -h -j "$jobid" -t all -o '%T %r')
exit_code=$(scontrol show job "$jobid" | sed -n 's/.* ExitCode=\([^ ]*\).*/\1/p')

say "job $jobid: $state, ExitCode=$exit_code"
scontrol show job -d "$jobid" | grep -E 'JobState|NodeList|GRES=|CPU_IDs|TresPerNode|GresEnforceBind' || true

say "job output (slurm-$jobid.out)"
cat "$work/slurm-$jobid.out" 2>/dev/null || echo "(no output file)"

say "what slurm-vm did on the node (vm.conf LogFile)"
grep "job $jobid:" "$HARNESS_VM_LOG" || echo "(nothing logged)"

# A job shows COMPLETED once its epilog is done; allow for a slow one.
no_leftovers() { [ -z "$(guest_leftovers "$jobid")" ]; }
harness_wait 60 "job $jobid's guest to be gone" no_leftovers || true
left=$(guest_leftovers "$jobid")

say "stopping the test cluster"
harness_stop
after=""
[ -e "$cluster_dir" ] && after+=" $cluster_dir"
virsh -q list --all --name 2>/dev/null | grep -q "^slurmvm-job-$jobid\." &&
	after+=" domain"
pgrep -f "$cluster_dir" >/dev/null && after+=" processes"

say "result"
echo "job $jobid: ${state%% *}, exit code $exit_code"
echo "after the job: ${left:-nothing of its guest left (no domain, overlay, state, relay, qemu)}"
echo "after stopping the cluster: ${after:-nothing left (no cluster directory, domain or process)}"
[ "${state%% *}" = COMPLETED ] && [ "$exit_code" = 0:0 ] && [ -z "$left" ] &&
	[ -z "$after" ]
