# InfiniBand partitions per job: GUIDs, P_Keys, records, partitions.conf.
check_PROGRAMS += tests/unit/test_ibpart
TESTS += tests/unit/test_ibpart
tests_unit_test_ibpart_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_ibpart_LDADD = $(UNIT_LDADD)
