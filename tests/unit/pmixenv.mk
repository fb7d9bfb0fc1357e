# PMIx across the guest channel: the host's server port, the guest's env.
check_PROGRAMS += tests/unit/test_pmixenv
TESTS += tests/unit/test_pmixenv
tests_unit_test_pmixenv_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_pmixenv_LDADD = common/channel/libslurmvm-channel.la $(CMOCKA_LIBS)
