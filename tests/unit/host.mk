# Guest parts (common/vm/): the journal's replay with a guest that cannot be
# stopped (root, a network namespace, libvirt's test driver); how a guest
# stopped, logged.
check_PROGRAMS += tests/unit/test_teardown
TESTS += tests/unit/test_teardown
tests_unit_test_teardown_SOURCES = tests/unit/test_teardown.c tests/unit/holder.c \
	tests/unit/holder.h
tests_unit_test_teardown_CPPFLAGS = $(UNIT_CPPFLAGS) $(LIBVIRT_CFLAGS)
tests_unit_test_teardown_LDADD = $(UNIT_LDADD) $(LIBVIRT_LIBS)

# The guest's start on libvirt's test driver (common/vm/hypervisor.h).
check_PROGRAMS += tests/unit/test_hypervisor
TESTS += tests/unit/test_hypervisor
tests_unit_test_hypervisor_CPPFLAGS = $(UNIT_CPPFLAGS) $(LIBVIRT_CFLAGS)
tests_unit_test_hypervisor_LDADD = $(UNIT_LDADD) $(LIBVIRT_LIBS)
