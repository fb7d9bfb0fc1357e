# Which transport serves the shares (common/job/share_transport.c): 9p, or
# virtiofs by the Rust virtiofsd only.
check_PROGRAMS += tests/unit/test_share_transport
tests_unit_test_share_transport_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_share_transport_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_share_transport
