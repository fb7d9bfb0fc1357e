# The guests of this node's StateDir and their reclaim (common/reclaim.h);
# whether their jobs ended, from slurmctld (common/jobfate.h), in a library of
# its own: spank_vm.so takes libslurmvm in and must not link libslurm.
common_libslurmvm_la_SOURCES += common/reclaim.c common/reclaim.h

noinst_LTLIBRARIES += common/libslurmvm-slurm.la
common_libslurmvm_slurm_la_SOURCES = common/jobfate.c common/jobfate.h
common_libslurmvm_slurm_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
common_libslurmvm_slurm_la_LIBADD = $(SLURM_LIBS)
