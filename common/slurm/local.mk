# Whether a job has ended, from slurmctld: libslurm, which spank_vm.so
# must not link.
noinst_LTLIBRARIES += common/slurm/libslurmvm-slurm.la
common_slurm_libslurmvm_slurm_la_SOURCES = \
	common/slurm/jobfate.c \
	common/slurm/jobfate.h
common_slurm_libslurmvm_slurm_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
common_slurm_libslurmvm_slurm_la_LIBADD = $(SLURM_LIBS)
