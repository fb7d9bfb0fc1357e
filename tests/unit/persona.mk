# The job's identity for a restored guest (agent/guest/persona.c, issue #30): the
# account and hosts files edited under a directory of the test's own,
# twice over (the agent applies PERSONA again on every reconnect); a
# persona beyond one frame from the writer to the agent; new ssh host keys
# and sshd restarted before the answer; the user's authorized_keys.
check_PROGRAMS += tests/unit/test_persona
tests_unit_test_persona_SOURCES = tests/unit/test_persona.c \
	agent/guest/persona.c agent/guest/persona.h
tests_unit_test_persona_CPPFLAGS = $(UNIT_CPPFLAGS) \
	-I$(top_srcdir)/agent/guest
tests_unit_test_persona_LDADD = common/channel/libslurmvm-channel.la \
	$(CMOCKA_LIBS)
TESTS += tests/unit/test_persona
# The persona's one format (common/channel/persona_format.c, issue #44): names,
# each key's form, bounds, frames.
check_PROGRAMS += tests/unit/test_persona_format
tests_unit_test_persona_format_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_persona_format_LDADD = \
	common/channel/libslurmvm-channel.la $(CMOCKA_LIBS)
TESTS += tests/unit/test_persona_format
