# room: prolog uses: core channel job front net hw vm slurm
# slurm-vm-prolog: what slurmd runs (Prolog, root) for every job, libc only:
# a plain job leaves at once; a VM job gets slurm-vm-prolog-vm, which boots
# its guest (common/front/front.h).
sbin_PROGRAMS += prolog/slurm-vm-prolog
prolog_slurm_vm_prolog_SOURCES = prolog/front.c
prolog_slurm_vm_prolog_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/prolog
prolog_slurm_vm_prolog_LDADD = common/front/libslurmvm-front.la
pkglibexec_PROGRAMS += prolog/slurm-vm-prolog-vm
prolog_slurm_vm_prolog_vm_SOURCES = prolog/prolog.c prolog/prolog.h \
	prolog/state.c prolog/start.c prolog/boot.c prolog/bind.c prolog/fault.c prolog/ib.c prolog/net.c prolog/alloc.c prolog/alloc.h \
	prolog/virtiofs.c prolog/warm.c
# No $(SLURM_CPPFLAGS): libslurm is common/slurm's (slurm/ctld.h).
prolog_slurm_vm_prolog_vm_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/prolog \
	$(HWLOC_CFLAGS) $(LIBXML_CFLAGS)
prolog_slurm_vm_prolog_vm_LDADD = common/slurm/libslurmvm-slurm.la \
	common/vm/libslurmvm-vm.la
# slurm-vm-adopt: the guest's processes into the job's extern step, run by
# spank_vm.so there (libslurm's stepd socket, as pam_slurm_adopt).
pkglibexec_PROGRAMS += prolog/slurm-vm-adopt
prolog_slurm_vm_adopt_SOURCES = prolog/adopt.c prolog/adopt_target.c \
	prolog/hold.c prolog/hold.h \
	prolog/holdgate.c prolog/holdgate.h
prolog_slurm_vm_adopt_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/prolog \
	$(HWLOC_CFLAGS) $(LIBXML_CFLAGS)
prolog_slurm_vm_adopt_LDADD = common/slurm/libslurmvm-slurm.la \
	common/vm/libslurmvm-vm.la
