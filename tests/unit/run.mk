# Running helper programs from root code (common/core/run.c): status,
# output, time limit, giving up early.
check_PROGRAMS += tests/unit/test_run
tests_unit_test_run_SOURCES = tests/unit/test_run.c
tests_unit_test_run_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_run_LDADD = common/core/libslurmvm-core.la $(CMOCKA_LIBS)
TESTS += tests/unit/test_run
