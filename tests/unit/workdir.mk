# Where a task starts in the guest (agent/guest/workdir.c): the host's directory
# only from a share, else /tmp with the reason.
check_PROGRAMS += tests/unit/test_workdir
tests_unit_test_workdir_SOURCES = tests/unit/test_workdir.c \
	agent/guest/workdir.c agent/guest/workdir.h
tests_unit_test_workdir_CPPFLAGS = $(UNIT_CPPFLAGS) \
	-I$(top_srcdir)/agent/guest
tests_unit_test_workdir_LDADD = common/core/libslurmvm-core.la $(CMOCKA_LIBS)
TESTS += tests/unit/test_workdir
