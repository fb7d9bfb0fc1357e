# Unit tests (cmocka). Each test_*.c is one program; `make check` runs them.
if HAVE_CMOCKA
UNIT_CPPFLAGS = $(AM_CPPFLAGS) $(CMOCKA_CFLAGS) -DSRCDIR='"$(abs_top_srcdir)"'
UNIT_LDADD = common/vm/libslurmvm-vm.la $(CMOCKA_LIBS)

check_PROGRAMS += tests/unit/test_vmconf
tests_unit_test_vmconf_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_vmconf_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_vmconf

check_PROGRAMS += tests/unit/test_image
tests_unit_test_image_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_image_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_image

check_PROGRAMS += tests/unit/test_journal
tests_unit_test_journal_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_journal_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_journal

check_PROGRAMS += tests/unit/test_seed
tests_unit_test_seed_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_seed_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_seed

# Further unit tests add themselves in their own fragments.
include $(srcdir)/tests/unit/proto.mk
include $(srcdir)/tests/unit/placement.mk
include $(srcdir)/tests/unit/gresgen.mk
include $(srcdir)/tests/unit/reclaim.mk
include $(srcdir)/tests/unit/task.mk
include $(srcdir)/tests/unit/deadline.mk
include $(srcdir)/tests/unit/jobnet.mk
include $(srcdir)/tests/unit/netenv.mk
include $(srcdir)/tests/unit/pmixenv.mk
include $(srcdir)/tests/unit/ibpart.mk
include $(srcdir)/tests/unit/cgroup.mk
include $(srcdir)/tests/unit/host.mk
include $(srcdir)/tests/unit/hostcmd.mk
include $(srcdir)/tests/unit/request.mk
include $(srcdir)/tests/unit/workdir.mk
include $(srcdir)/tests/unit/run.mk
include $(srcdir)/tests/unit/slurmconf.mk
include $(srcdir)/tests/unit/ctld.mk
include $(srcdir)/tests/unit/share_transport.mk
include $(srcdir)/tests/unit/virtiofsd.mk
include $(srcdir)/tests/unit/persona.mk
include $(srcdir)/tests/unit/stepd.mk
include $(srcdir)/tests/unit/hold.mk
endif

# Test helper for the cluster tests: a libslurm job submission that
# bypasses spank_vm (hostile SPANK_* values).
check_PROGRAMS += tests/cluster/svm-submit-raw
tests_cluster_svm_submit_raw_SOURCES = tests/cluster/submit-raw.c
tests_cluster_svm_submit_raw_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
tests_cluster_svm_submit_raw_LDADD = common/slurm/libslurmvm-slurm.la \
	common/vm/libslurmvm-vm.la

# slurm-vm ib-partitions read by OpenSM's own parser (compiled by the test
# from the OpenSM source, scripts/install-deps.sh --opensm-source).
TESTS += tests/unit/test_opensm_parse.sh
dist_noinst_SCRIPTS += tests/unit/test_opensm_parse.sh
EXTRA_DIST += tests/unit/opensm-parse.c

# etc/cli_filter.lua run by Lua 5.1 (cli_filter/lua's): --gres-flags of VM
# jobs, no Slurm needed.
TESTS += tests/unit/test_cli_filter.sh
dist_noinst_SCRIPTS += tests/unit/test_cli_filter.sh

# Rooms: scripts/check-rooms over the tree, and a planted wrong include
# caught by it and by the compiler (build/rooms/, scripts/room-includes).
TESTS += tests/unit/test_rooms.sh
dist_noinst_SCRIPTS += tests/unit/test_rooms.sh

# The journal's verbs are defined once (journal_verbs[], job/journal.h):
# scripts/check-journal-verbs fails on a quoted verb name elsewhere.
TESTS += tests/unit/test_journal_verbs.sh
dist_noinst_SCRIPTS += tests/unit/test_journal_verbs.sh \
	scripts/check-journal-verbs

# The files of prolog/ call each other in layers, no circle
# (scripts/check-prolog-calls; doc/design.md, "The prolog's files").
TESTS += tests/unit/test_prolog_calls.sh
dist_noinst_SCRIPTS += tests/unit/test_prolog_calls.sh \
	scripts/check-prolog-calls

# The admin guide's configuration snippets are the etc/ files the test
# cluster uses (doc/check-snippets.sh; no cmocka, no cluster).
TESTS += tests/unit/test_doc_snippets.sh
dist_noinst_SCRIPTS += tests/unit/test_doc_snippets.sh doc/check-snippets.sh
dist_noinst_DATA += doc/admin-guide.md
include $(srcdir)/tests/unit/warm.mk
