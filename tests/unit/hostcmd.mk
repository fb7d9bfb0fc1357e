# The host's server of the Slurm commands a --vm-batch script runs in the
# guest (agent/host/hostcmd_host.c), driven over a socketpair as a hostile guest.
check_PROGRAMS += tests/unit/test_hostcmd
tests_unit_test_hostcmd_SOURCES = tests/unit/test_hostcmd.c \
	agent/shared/hostcmd.c agent/shared/hostcmd.h \
	agent/host/hostcmd_host.c agent/host/hostcmd_env.c \
	agent/host/hostcmd_env.h agent/shared/util.c agent/shared/util.h
tests_unit_test_hostcmd_CPPFLAGS = $(UNIT_CPPFLAGS) -I$(ROOMS)/agent_host \
	-I$(top_srcdir)/agent/host
tests_unit_test_hostcmd_LDADD = common/channel/libslurmvm-channel.la $(CMOCKA_LIBS)
TESTS += tests/unit/test_hostcmd
