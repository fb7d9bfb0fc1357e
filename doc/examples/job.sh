#!/bin/sh
# The README's headline job, as a user submits it:
#
#   sbatch -N2 --vm-image=IMAGE --gres=gpu:1,ibvf:1 job.sh
#
# One guest per node. The batch script itself runs on the first node (the
# host); every srun step runs inside the job's guests. It prints each
# guest's kernel and hostname, the vCPU pinning and the planned devices of
# this node's guest (read from libvirt's read-only socket, as any user may),
# the devices as each guest sees them, runs an MPI program with one rank per
# guest through PMI-2 (srun --mpi=pmi2), over the job's private network
# (JobNetwork=vxlan: the tasks' MPI and UCX defaults name it), and ends with
# that step's exit status. tests/headline.sh submits exactly this file.
#
# The MPI program: svm-mpi-allreduce of the slurm-vm test guest (an
# MPI_Allreduce of the rank ids and a ring of MPI_Sendrecv, each rank checks
# what it got). With another image, set MPI_PROGRAM to an MPI program inside
# it (MPICH or another MPI that speaks PMI-1 or PMI-2; PMIx is not supported
# yet).
#SBATCH -N2
#SBATCH --ntasks-per-node=1
#SBATCH --mem=1G
#SBATCH --job-name=slurm-vm-headline

prog=${MPI_PROGRAM:-svm-mpi-allreduce}
# slurm-vm names the guest's libvirt domain after the job and its restart
# count (a requeued job gets a new guest).
domain=slurmvm-job-$SLURM_JOB_ID.${SLURM_RESTART_COUNT:-0}
virsh_ro() { virsh -r -c "${LIBVIRT_DEFAULT_URI:-qemu:///system}" "$@"; }

echo "job $SLURM_JOB_ID: batch script on $(hostname), host kernel $(uname -r), nodes $SLURM_JOB_NODELIST"

echo "--- each guest's hostname and kernel: srun -N2 --ntasks-per-node=1"
# shellcheck disable=SC2016 # expanded in the guest
srun -N2 --ntasks-per-node=1 sh -c 'echo "guest $(hostname): kernel $(uname -r)"'

# With vm.conf SharedDirs= holding the submit directory, the tasks start in
# it, inside the guest, and what they write there is on the host.
echo "--- the working directory in each guest: srun -N2 --ntasks-per-node=1 pwd"
# shellcheck disable=SC2016 # expanded in the guest
srun -N2 --ntasks-per-node=1 sh -c 'echo "guest $(hostname): in $(pwd)" >"out.$(hostname)"'
cat out.* && rm -f out.*

echo "--- vCPU pinning of $(hostname)'s guest: virsh -r vcpupin $domain (vCPU: host CPU)"
if command -v virsh >/dev/null 2>&1; then
	virsh_ro vcpupin "$domain" | sed -n 's/^ *\([0-9][0-9]*\) *\([0-9].*\)/vCPU \1 -> host CPU \2/p'
	virsh_ro emulatorpin "$domain" | sed -n 's/^ *\*: *\([0-9].*\)/emulator threads -> host CPU \1/p'
	echo "--- devices $(hostname)'s guest was planned with (the domain's slurm-vm metadata)"
	virsh_ro dumpxml "$domain" | grep -o '<svm:device [^>]*>' |
		sed 's/<svm:device //; s/ *\/*>$//'
else
	echo "(virsh is not installed on $(hostname): no pinning shown)"
fi

echo "--- PCI devices outside each guest's root bus, as the guest sees them"
# shellcheck disable=SC2016 # expanded in the guest
srun -N2 --ntasks-per-node=1 sh -c 'for d in /sys/bus/pci/devices/*; do
	case ${d##*/} in 0000:00:*) continue ;; esac
	echo "guest $(hostname): ${d##*/} vendor $(cat $d/vendor) device $(cat $d/device) NUMA node $(cat $d/numa_node)"
done'

echo "--- MPI: srun --mpi=pmi2 -N2 -n2 --ntasks-per-node=1 $prog (one rank per guest)"
srun --mpi=pmi2 -N2 -n2 --ntasks-per-node=1 "$prog"
rc=$?
echo "--- the MPI step's exit status: $rc"
exit "$rc"
