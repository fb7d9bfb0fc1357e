# The job network (common/net/): its plan (cmocka) and, as root, its set up
# and teardown between network namespaces (test_jobnet.sh, skipped
# otherwise; svm-jobnet is its driver).
check_PROGRAMS += tests/unit/test_jobnet_plan
TESTS += tests/unit/test_jobnet_plan
tests_unit_test_jobnet_plan_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_jobnet_plan_LDADD = common/net/libslurmvm-net.la $(CMOCKA_LIBS)

check_PROGRAMS += tests/unit/svm-jobnet
tests_unit_svm_jobnet_SOURCES = tests/unit/svm-jobnet.c
tests_unit_svm_jobnet_LDADD = common/vm/libslurmvm-vm.la
TESTS += tests/unit/test_jobnet.sh
dist_noinst_SCRIPTS += tests/unit/test_jobnet.sh
