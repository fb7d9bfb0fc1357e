# room: net uses: core job
# The job's private network on its node (JobNetwork=vxlan: ip, bridge,
# nft). libc only, but root's: never linked into spank_vm.so.
noinst_LTLIBRARIES += common/net/libslurmvm-net.la
common_net_libslurmvm_net_la_SOURCES = \
	common/net/jobnet.c \
	common/net/jobnet.h \
	common/net/jobnet_plan.c
common_net_libslurmvm_net_la_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/net
common_net_libslurmvm_net_la_LIBADD = common/job/libslurmvm-job.la
