# slurm.conf as each Slurm release reads it (common/slurm/slurmconf.h) and
# the release rules check-config applies (common/slurm/compat.h), with
# gres.conf's Cores= on an SNC2 topology (common/slurm/gresconf.h).
check_PROGRAMS += tests/unit/test_slurmconf
TESTS += tests/unit/test_slurmconf
tests_unit_test_slurmconf_CPPFLAGS = $(UNIT_CPPFLAGS) $(SLURM_CPPFLAGS) \
	$(HWLOC_CFLAGS)
tests_unit_test_slurmconf_LDADD = common/slurm/libslurmvm-slurm.la \
	$(UNIT_LDADD) $(HWLOC_LIBS)
