# libvirt's save image of a template guest, renamed for a job's restore
# through a FIFO (common/vm/saveimage.c, issue #30): the header libvirt
# checks, the cookie's offset, the stream copied whole; what is no raw
# version-2 save image is refused.
check_PROGRAMS += tests/unit/test_saveimage
tests_unit_test_saveimage_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_saveimage_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_saveimage

# WarmDir's bounds (common/vm/warmcache.c): the templates used longest ago
# go first, a held one stays, an unfinished one goes.
check_PROGRAMS += tests/unit/test_warmcache
tests_unit_test_warmcache_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_test_warmcache_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_warmcache
