# What the prolog asks slurmctld (common/slurm/ctld.h): a job's values on
# one of its nodes from a job built here, node lists; no slurmctld.
check_PROGRAMS += tests/unit/test_ctld
TESTS += tests/unit/test_ctld
tests_unit_test_ctld_CPPFLAGS = $(UNIT_CPPFLAGS) $(SLURM_CPPFLAGS)
tests_unit_test_ctld_LDADD = common/slurm/libslurmvm-slurm.la $(UNIT_LDADD)
