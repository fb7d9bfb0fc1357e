# room: job uses: core channel
# libc only: vm.conf, images checked as the user, the state directory and
# journal, tasks. spank_vm.so links this (and core, channel) and nothing more.
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
	common/job/share_transport.c \
	common/job/share_transport.h \
	common/job/taskenv.c \
	common/job/taskenv.h \
	common/job/user.c \
	common/job/user.h \
	common/job/vmconf.c \
	common/job/vmconf.h
common_job_libslurmvm_job_la_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/job
common_job_libslurmvm_job_la_LIBADD = common/channel/libslurmvm-channel.la
