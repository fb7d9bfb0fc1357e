# Which processes count as a job's steps (common/slurm/stepd.h): a root
# process named and titled as another job's slurmstepd that executes
# something else does not.
check_PROGRAMS += tests/unit/test_stepd
TESTS += tests/unit/test_stepd
tests_unit_test_stepd_CPPFLAGS = $(UNIT_CPPFLAGS) $(SLURM_CPPFLAGS)
tests_unit_test_stepd_LDADD = common/slurm/libslurmvm-slurm.la $(UNIT_LDADD)
