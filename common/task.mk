# Tasks in the guest: the multi-prog grammar and the environment translation.
common_libslurmvm_job_la_SOURCES += \
	common/multiprog.c common/multiprog.h \
	common/taskenv.c common/taskenv.h
