# room: vm uses: core job net hw
# The guest on its node: domain XML (libxml2), the hypervisor (libvirt),
# the seed, the guests of the StateDir and their incarnations, teardown and
# reclaim. The prolog, epilog and admin tool.
noinst_LTLIBRARIES += common/vm/libslurmvm-vm.la
common_vm_libslurmvm_vm_la_SOURCES = \
	common/vm/domain.c \
	common/vm/domain.h \
	common/vm/hypervisor.c \
	common/vm/hypervisor.h \
	common/vm/incarnation.c \
	common/vm/incarnation.h \
	common/vm/pidfile.h \
	common/vm/reclaim.c \
	common/vm/reclaim.h \
	common/vm/saveimage.c \
	common/vm/warmcache.c common/vm/warmcache.h \
	common/vm/saveimage.h \
	common/vm/seed.c \
	common/vm/seed.h \
	common/vm/teardown.c \
	common/vm/teardown.h
common_vm_libslurmvm_vm_la_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/vm $(LIBXML_CFLAGS) \
	$(HWLOC_CFLAGS) $(LIBVIRT_CFLAGS)
common_vm_libslurmvm_vm_la_LIBADD = common/hw/libslurmvm-hw.la \
	common/net/libslurmvm-net.la $(LIBXML_LIBS) $(LIBVIRT_LIBS)
