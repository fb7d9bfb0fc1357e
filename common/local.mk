# libslurmvm, in rooms by what each may link: a room's local.mk shows its
# dependencies, so a reader sees at a glance what a program may pull in.
#   core/    libc only: logging, strings, files, the clock, running helper
#            programs. The static guest agent compiles it in.
#   channel/ libc only: the guest channel's wire format, the PMIx and job
#            network environment of a task in the guest. The agent too.
#   job/     libc only: vm.conf, images checked as the user, the state
#            directory and journal, tasks. spank_vm.so links it (with core
#            and channel): it is loaded by every sbatch, srun and
#            slurmstepd, VM job or not.
#   front/   libc only: the Prolog's and Epilog's fronts, all a plain job runs.
#   net/     libc only, root's: the job's private network on its node
#            (iproute2, nft). The prolog, epilog and admin tool.
#   hw/      hwloc, libpci: devices, placement, Slurm's numbering, gres.conf
#            generation, InfiniBand partitions, device file holders. The
#            gres/ibvf plugin links it; never libvirt.
#   vm/      libvirt, libxml2: domain XML, the hypervisor, the seed, the
#            guests of the StateDir, teardown and reclaim.
#   slurm/   libslurm: whether a job has ended (slurmctld), gres.conf's
#            lines of a node (its hostlists), what the prolog asks
#            slurmctld (ctld.h); apart and on top because spank_vm.so and
#            the gres plugin must not link libslurm. The only room that
#            includes <slurm/slurm.h> (scripts/check-rooms).
# Each room's local.mk says on its first line which rooms it may use
# (doc/design.md, "Rooms"); scripts/check-rooms holds the includes to it.
# All are PIC so spank_vm.so can take them in. Headers are the contract.
include $(srcdir)/common/core/local.mk
include $(srcdir)/common/channel/local.mk
include $(srcdir)/common/job/local.mk
include $(srcdir)/common/front/local.mk
include $(srcdir)/common/net/local.mk
include $(srcdir)/common/hw/local.mk
include $(srcdir)/common/vm/local.mk
include $(srcdir)/common/slurm/local.mk
