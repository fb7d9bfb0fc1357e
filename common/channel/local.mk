# room: channel uses: core
# libc only: the guest channel's wire format (doc/protocol.md), and the
# environment a task in the guest gets for PMIx and the job network.
# The static guest agent compiles its sources in (agent/guest/local.mk).
noinst_LTLIBRARIES += common/channel/libslurmvm-channel.la
common_channel_libslurmvm_channel_la_SOURCES = \
	common/channel/netenv.c \
	common/channel/netenv.h \
	common/channel/persona_format.c \
	common/channel/persona_format.h \
	common/channel/pmixenv.c \
	common/channel/pmixenv.h \
	common/channel/proto.c \
	common/channel/proto.h
common_channel_libslurmvm_channel_la_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/channel
common_channel_libslurmvm_channel_la_LIBADD = common/core/libslurmvm-core.la
