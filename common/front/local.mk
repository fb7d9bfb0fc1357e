# room: front uses: core job
# The Prolog's and Epilog's fronts (front.h): libc and the logger only.
noinst_LTLIBRARIES += common/front/libslurmvm-front.la
common_front_libslurmvm_front_la_SOURCES = \
	common/front/front.c \
	common/front/front.h
common_front_libslurmvm_front_la_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/front
common_front_libslurmvm_front_la_LIBADD = common/core/libslurmvm-core.la
