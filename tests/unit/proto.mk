# Wire format unit tests: round trips and every malformed case.
check_PROGRAMS += tests/unit/test_proto
tests_unit_test_proto_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_proto_LDADD = common/channel/libslurmvm-channel.la $(CMOCKA_LIBS)
TESTS += tests/unit/test_proto
