# Guests of a StateDir and their reclaim (common/vm/reclaim.h), without libvirt.
check_PROGRAMS += tests/unit/test_reclaim
TESTS += tests/unit/test_reclaim
tests_unit_test_reclaim_SOURCES = tests/unit/test_reclaim.c tests/unit/holder.c \
	tests/unit/holder.h
tests_unit_test_reclaim_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_reclaim_LDADD = $(UNIT_LDADD)

# The Prolog and Epilog fronts (common/front/front.h), on the built programs.
TESTS += tests/unit/test_front.sh
dist_noinst_SCRIPTS += tests/unit/test_front.sh

# The prolog's fault when an older job's state of the name cannot be
# removed: the job's, the node's only when that guest may hold devices.
TESTS += tests/unit/test_prolog_take_name.sh
dist_noinst_SCRIPTS += tests/unit/test_prolog_take_name.sh
