# slurm-vm-prolog: boots the job's guest (slurmd Prolog, root).
sbin_PROGRAMS += prolog/slurm-vm-prolog
prolog_slurm_vm_prolog_SOURCES = prolog/prolog.c
prolog_slurm_vm_prolog_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
prolog_slurm_vm_prolog_LDADD = common/libslurmvm.la $(SLURM_LIBS)
