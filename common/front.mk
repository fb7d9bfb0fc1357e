# The Prolog's and Epilog's fronts (common/front.h): libc and the logger only.
noinst_LTLIBRARIES += common/libslurmvm-front.la
common_libslurmvm_front_la_SOURCES = common/front.c common/front.h
common_libslurmvm_front_la_LIBADD = common/libslurmvm-core.la
