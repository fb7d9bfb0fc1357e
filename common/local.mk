# libslurmvm, in rooms by what each may link: a room's local.mk shows its
# dependencies, so a reader sees at a glance what a program may pull in.
#   core/   libc only: logging, strings, the guest channel's wire format.
#           The static guest agent links it.
#   job/    libc only: vm.conf, images checked as the user, the state
#           directory and journal, tasks. spank_vm.so links it: it is loaded
#           by every sbatch, srun and slurmstepd, VM job or not.
#   front/  libc only: the Prolog's and Epilog's fronts, all a plain job runs.
#   host/   libvirt, hwloc, libpci, libxml2: devices, placement, domain XML,
#           the hypervisor, the seed, teardown and reclaim. The prolog,
#           epilog and admin tool.
#   net/    libc only, root's: the job's private network on its node
#           (iproute2, nft) and running helper programs. The prolog,
#           epilog and admin tool; never spank_vm.so.
#   slurm/  libslurm: whether a job has ended (slurmctld), gres.conf's
#           lines of a node (its hostlists); apart because spank_vm.so must
#           not link libslurm.
# All are PIC so spank_vm.so can take them in. Headers are the contract.
include $(srcdir)/common/core/local.mk
include $(srcdir)/common/job/local.mk
include $(srcdir)/common/front/local.mk
include $(srcdir)/common/net/local.mk
include $(srcdir)/common/host/local.mk
include $(srcdir)/common/slurm/local.mk
