# room: epilog uses: core job front hw vm slurm
# slurm-vm-epilog: what slurmd runs (Epilog, root) for every job, libc only:
# a plain job leaves at once; a VM job gets slurm-vm-epilog-vm, which tears
# its guest down (common/front/front.h).
sbin_PROGRAMS += epilog/slurm-vm-epilog
epilog_slurm_vm_epilog_SOURCES = epilog/front.c
epilog_slurm_vm_epilog_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/epilog
epilog_slurm_vm_epilog_LDADD = common/front/libslurmvm-front.la
pkglibexec_PROGRAMS += epilog/slurm-vm-epilog-vm
epilog_slurm_vm_epilog_vm_SOURCES = epilog/epilog.c
epilog_slurm_vm_epilog_vm_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/epilog
epilog_slurm_vm_epilog_vm_LDADD = common/slurm/libslurmvm-slurm.la \
	common/vm/libslurmvm-vm.la
