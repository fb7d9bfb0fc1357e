# room: core uses: -
# libc only; linked statically into the guest agent.
noinst_LTLIBRARIES += common/core/libslurmvm-core.la
common_core_libslurmvm_core_la_SOURCES = \
	common/core/clock.h \
	common/core/fileutil.c \
	common/core/fileutil.h \
	common/core/log.c \
	common/core/log.h \
	common/core/macro.h \
	common/core/netenv.c \
	common/core/netenv.h \
	common/core/pmixenv.c \
	common/core/pmixenv.h \
	common/core/proto.c \
	common/core/proto.h \
	common/core/sortutil.h \
	common/core/strutil.c \
	common/core/strutil.h
