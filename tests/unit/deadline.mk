# Children that run as the job user end by a deadline: open() is wrapped so
# that a FIFO hangs like a file on a hung NFS or FUSE mount.
check_PROGRAMS += tests/unit/test_user_deadline
TESTS += tests/unit/test_user_deadline
tests_unit_test_user_deadline_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_user_deadline_LDADD = $(UNIT_LDADD)
tests_unit_test_user_deadline_LDFLAGS = -Wl,--wrap=open
