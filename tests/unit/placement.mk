# placement unit tests: devices (sysfs fixtures), planner (real machines'
# hwloc topologies from hwloc's test suite), domain XML, Slurm's numbering.
PLACEMENT_TESTS = \
	tests/unit/test_devices \
	tests/unit/test_placement \
	tests/unit/test_domain \
	tests/unit/test_slurm_map
check_PROGRAMS += $(PLACEMENT_TESTS)
TESTS += $(PLACEMENT_TESTS)

tests_unit_test_devices_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_devices_LDADD = $(UNIT_LDADD)
tests_unit_test_placement_CPPFLAGS = $(UNIT_CPPFLAGS) $(HWLOC_CFLAGS)
tests_unit_test_placement_LDADD = $(UNIT_LDADD) $(HWLOC_LIBS)
tests_unit_test_domain_CPPFLAGS = $(UNIT_CPPFLAGS) $(LIBXML_CFLAGS)
tests_unit_test_domain_LDADD = $(UNIT_LDADD) $(LIBXML_LIBS)
tests_unit_test_slurm_map_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_slurm_map_LDADD = $(UNIT_LDADD)

# sysfs trees (made by tests/fixtures/mksysfs.py) and hwloc topologies
EXTRA_DIST += tests/fixtures/mksysfs.py tests/fixtures/sysfs \
	tests/fixtures/topology tests/cluster/test_domain_xml.sh

# The job's cores on a node from Slurm's job_resources layout, the path of
# Slurm 24.11 and later (common/slurm/compat.h), mapped to OS CPUs.
check_PROGRAMS += tests/unit/test_slurm_compat
TESTS += tests/unit/test_slurm_compat
tests_unit_test_slurm_compat_CPPFLAGS = $(UNIT_CPPFLAGS) $(SLURM_CPPFLAGS)
tests_unit_test_slurm_compat_LDADD = common/slurm/libslurmvm-slurm.la \
	$(UNIT_LDADD)
