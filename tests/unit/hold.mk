# slurm-vm-adopt --hold (prolog/holdgate.c, issue #41): the extern step's
# sleep goes at the job's end alone, never on a user's scancel -s TERM;
# slurmctld asked at most once a second.
check_PROGRAMS += tests/unit/test_holdgate
tests_unit_test_holdgate_SOURCES = tests/unit/test_holdgate.c \
	prolog/holdgate.c prolog/holdgate.h
tests_unit_test_holdgate_CPPFLAGS = $(UNIT_CPPFLAGS) -I$(top_srcdir)/prolog
tests_unit_test_holdgate_LDADD = $(CMOCKA_LIBS)
TESTS += tests/unit/test_holdgate
