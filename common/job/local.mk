# room: job uses: core
# libc only (and libslurmvm-core): spank_vm.so links this and nothing more.
noinst_LTLIBRARIES += common/job/libslurmvm-job.la
common_job_libslurmvm_job_la_SOURCES = \
	common/job/image.c \
	common/job/image.h \
	common/job/journal.c \
	common/job/journal.h \
	common/job/kvconf.c \
	common/job/kvconf.h \
	common/job/multiprog.c \
	common/job/multiprog.h \
	common/job/qcow2.c \
	common/job/qcow2.h \
	common/job/request.c \
	common/job/request.h \
	common/job/taskenv.c \
	common/job/taskenv.h \
	common/job/user.c \
	common/job/user.h \
	common/job/vmconf.c \
	common/job/vmconf.h
# placement.h's types only (no hwloc calls).
common_job_libslurmvm_job_la_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS)
common_job_libslurmvm_job_la_LIBADD = common/core/libslurmvm-core.la
