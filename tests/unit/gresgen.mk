# gres.conf lines of a node and SLURM_JOB_IBVFS (common/hw/gresgen.h)
check_PROGRAMS += tests/unit/test_gresgen
TESTS += tests/unit/test_gresgen
tests_unit_test_gresgen_CPPFLAGS = $(UNIT_CPPFLAGS) $(HWLOC_CFLAGS)
tests_unit_test_gresgen_LDADD = $(UNIT_LDADD) $(HWLOC_LIBS)
