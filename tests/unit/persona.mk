# The job's identity for a restored guest (agent/persona.c, issue #30): the
# account and hosts files edited under a directory of the test's own,
# twice over (the agent applies PERSONA again on every reconnect).
check_PROGRAMS += tests/unit/test_persona
tests_unit_test_persona_SOURCES = tests/unit/test_persona.c \
	agent/persona.c agent/persona.h
tests_unit_test_persona_CPPFLAGS = $(UNIT_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_persona_LDADD = common/core/libslurmvm-core.la $(CMOCKA_LIBS)
TESTS += tests/unit/test_persona
