# slurm-vm-epilog: tears the job's guest down (slurmd Epilog, root).
sbin_PROGRAMS += epilog/slurm-vm-epilog
epilog_slurm_vm_epilog_SOURCES = epilog/epilog.c
epilog_slurm_vm_epilog_LDADD = common/libslurmvm.la
