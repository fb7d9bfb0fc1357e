# A share's virtiofsd stopped by the journal's replay (common/vm/teardown.c,
# VIRTIOFSD): only the process the pid file names, by command and start
# time; an unrelated one survives.
check_PROGRAMS += tests/unit/test_teardown_virtiofsd
tests_unit_test_teardown_virtiofsd_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_teardown_virtiofsd_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_teardown_virtiofsd
