# room: host uses: core job net
# Root's side of a VM job on its node: libvirt, hwloc, libpci, libxml2.
noinst_LTLIBRARIES += common/host/libslurmvm-host.la
common_host_libslurmvm_host_la_SOURCES = \
	common/host/devices.c \
	common/host/devices.h \
	common/host/domain.c \
	common/host/domain.h \
	common/host/gresgen.c \
	common/host/gresgen.h \
	common/host/hypervisor.c \
	common/host/hypervisor.h \
	common/host/ibpart.c \
	common/host/ibpart.h \
	common/host/placement.c \
	common/host/placement.h \
	common/host/reclaim.c \
	common/host/reclaim.h \
	common/host/seed.c \
	common/host/seed.h \
	common/host/slurm_map.c \
	common/host/slurm_map.h \
	common/host/teardown.c \
	common/host/teardown.h
common_host_libslurmvm_host_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBXML_CFLAGS) \
	$(HWLOC_CFLAGS) $(LIBVIRT_CFLAGS) $(LIBPCI_CFLAGS)
common_host_libslurmvm_host_la_LIBADD = common/net/libslurmvm-net.la \
	common/job/libslurmvm-job.la \
	$(LIBXML_LIBS) $(HWLOC_LIBS) $(LIBVIRT_LIBS) $(LIBPCI_LIBS)
