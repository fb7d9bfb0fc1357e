# The host's server of the Slurm commands a --vm-batch script runs in the
# guest (agent/hostcmd_host.c), driven over a socketpair as a hostile guest.
check_PROGRAMS += tests/unit/test_hostcmd
tests_unit_test_hostcmd_SOURCES = tests/unit/test_hostcmd.c \
	agent/hostcmd.c agent/hostcmd.h agent/hostcmd_host.c \
	agent/hostcmd_env.c agent/hostcmd_env.h agent/util.c agent/util.h
tests_unit_test_hostcmd_CPPFLAGS = $(UNIT_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_hostcmd_LDADD = common/channel/libslurmvm-channel.la $(CMOCKA_LIBS)
TESTS += tests/unit/test_hostcmd
