# slurm-vm-prolog: boots the job's guest (slurmd Prolog, root).
sbin_PROGRAMS += prolog/slurm-vm-prolog
prolog_slurm_vm_prolog_SOURCES = prolog/prolog.c prolog/prolog.h prolog/boot.c \
	prolog/alloc.c prolog/alloc.h prolog/gresconf.c
prolog_slurm_vm_prolog_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) \
	$(HWLOC_CFLAGS) $(LIBXML_CFLAGS)
prolog_slurm_vm_prolog_LDADD = common/libslurmvm-slurm.la common/libslurmvm.la \
	$(SLURM_LIBS)
