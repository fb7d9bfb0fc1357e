# The job network (common/net/jobnet.h): its plan and vm.conf keys.
check_PROGRAMS += tests/unit/test_jobnet_plan
TESTS += tests/unit/test_jobnet_plan
tests_unit_test_jobnet_plan_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_jobnet_plan_LDADD = common/net/libslurmvm-net.la $(CMOCKA_LIBS)
