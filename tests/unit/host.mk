# Host parts (common/host/): the journal's replay with a guest that cannot be
# stopped (root, a network namespace, libvirt's test driver).
check_PROGRAMS += tests/unit/test_teardown
TESTS += tests/unit/test_teardown
tests_unit_test_teardown_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_teardown_LDADD = $(UNIT_LDADD)

