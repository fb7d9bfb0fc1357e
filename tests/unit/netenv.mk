# The job network's defaults for MPI in a task of the guest (agent).
check_PROGRAMS += tests/unit/test_netenv
TESTS += tests/unit/test_netenv
tests_unit_test_netenv_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_netenv_LDADD = common/channel/libslurmvm-channel.la $(CMOCKA_LIBS)
