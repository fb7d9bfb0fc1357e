# The request contract (common/job/request.h): its bounds, checked by the
# prolog on SPANK_VM_* and by spank_vm.so's option parsing (spank_vm/options.c
# compiled in, libslurm's two calls stubbed by the test).
check_PROGRAMS += tests/unit/test_request
TESTS += tests/unit/test_request
tests_unit_test_request_SOURCES = tests/unit/test_request.c spank_vm/options.c
tests_unit_test_request_CPPFLAGS = $(UNIT_CPPFLAGS) $(SLURM_CPPFLAGS) \
	-I$(top_srcdir)/spank_vm
tests_unit_test_request_LDADD = common/job/libslurmvm-job.la $(CMOCKA_LIBS)
