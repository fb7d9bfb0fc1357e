# A share's virtiofsd stopped by the journal's replay (common/vm/teardown.c,
# VIRTIOFSD): only the process the pid file names, by command and start
# time; an unrelated one survives.
check_PROGRAMS += tests/unit/test_teardown_virtiofsd
tests_unit_test_teardown_virtiofsd_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_teardown_virtiofsd_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_teardown_virtiofsd

# The pid files of a guest's processes (common/core/pidfile.c) that the
# epilog stops and slurm-vm-adopt adopts.
check_PROGRAMS += tests/unit/test_pidfile
tests_unit_test_pidfile_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_pidfile_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_pidfile

# virtiofsd's log (prolog/virtiofs.c): the user may trace virtiofsd and
# make it write without end; root copies at most VIRTIOFSD_LOG_MAX bytes of
# its output to the log and drains the rest, so the writer never blocks.
check_PROGRAMS += tests/unit/test_virtiofsd_log
tests_unit_test_virtiofsd_log_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_virtiofsd_log_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_virtiofsd_log
