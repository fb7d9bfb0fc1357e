# A guest's process into the cgroups of the extern step's own task
# (common/core/cgroup.c, slurm-vm-adopt where Slurm's cgroups do the
# accounting: issue #41): every hierarchy of the job, v1 and v2.
check_PROGRAMS += tests/unit/test_cgroup
tests_unit_test_cgroup_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_cgroup_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_cgroup
