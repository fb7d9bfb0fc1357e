# room: core uses: -
# libc only: logging, strings, files, the clock, running helper programs,
# a process into another's cgroups.
# The static guest agent compiles its sources in (agent/guest/local.mk).
noinst_LTLIBRARIES += common/core/libslurmvm-core.la
common_core_libslurmvm_core_la_SOURCES = \
	common/core/cgroup.c \
	common/core/cgroup.h \
	common/core/clock.h \
	common/core/fileutil.c \
	common/core/fileutil.h \
	common/core/log.c \
	common/core/log.h \
	common/core/macro.h \
	common/core/pidfile.c \
	common/core/pidfile.h \
	common/core/run.c \
	common/core/run.h \
	common/core/sortutil.h \
	common/core/strutil.c \
	common/core/strutil.h
common_core_libslurmvm_core_la_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/core
