# Tasks in the guest: --multi-prog, the task map, the environment.
check_PROGRAMS += tests/unit/test_task
TESTS += tests/unit/test_task
tests_unit_test_task_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_task_LDADD = $(UNIT_LDADD)
