# room: slurm uses: core job hw vm
# What needs libslurm, which spank_vm.so must not link: whether a job has
# ended (slurmctld) and reclaiming its guest only then (vm), gres.conf's
# lines of a node (libslurm's hostlist, hw's numbering), what the prolog
# asks slurmctld (ctld.h, in plain types). The top room of common/: nothing
# below it links libslurm, and only this room includes <slurm/slurm.h>
# (scripts/check-rooms).
# slurmconf.h: the one slurm.conf reader, as each release reads it.
# compat.h: what differs between the Slurm releases it builds against.
noinst_LTLIBRARIES += common/slurm/libslurmvm-slurm.la
common_slurm_libslurmvm_slurm_la_SOURCES = \
	common/slurm/jobfate.c \
	common/slurm/jobfate.h \
	common/slurm/gresconf.c \
	common/slurm/gresconf.h \
	common/slurm/ctld.c \
	common/slurm/ctld.h \
	common/slurm/ctld_job.h \
	common/slurm/compat.c \
	common/slurm/compat.h \
	common/slurm/slurmconf.c \
	common/slurm/slurmconf.h \
	common/slurm/stepd.c \
	common/slurm/stepd.h
common_slurm_libslurmvm_slurm_la_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/slurm $(SLURM_CPPFLAGS) \
	$(HWLOC_CFLAGS)
common_slurm_libslurmvm_slurm_la_LIBADD = $(SLURM_LIBS)
