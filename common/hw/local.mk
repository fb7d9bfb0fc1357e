# room: hw uses: core job
# The node's hardware, read-only or nearly: PCI devices and their IOMMU
# groups (libpci), the hwloc topology and the placement plan, Slurm's
# numbering of cores and GRES files, gres.conf generation, InfiniBand
# partitions of VFs, who holds a device file. Links hwloc and libpci, never
# libvirt: the gres/ibvf plugin (slurmd) links this room.
noinst_LTLIBRARIES += common/hw/libslurmvm-hw.la
common_hw_libslurmvm_hw_la_SOURCES = \
	common/hw/devices.c \
	common/hw/devices.h \
	common/hw/gresgen.c \
	common/hw/gresgen.h \
	common/hw/holders.c \
	common/hw/holders.h \
	common/hw/ibpart.c \
	common/hw/ibpart.h \
	common/hw/placement.c \
	common/hw/placement.h \
	common/hw/slurm_map.c \
	common/hw/slurm_map.h \
	common/hw/taskmap.c \
	common/hw/taskmap.h
common_hw_libslurmvm_hw_la_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/hw $(HWLOC_CFLAGS) \
	$(LIBPCI_CFLAGS)
common_hw_libslurmvm_hw_la_LIBADD = common/job/libslurmvm-job.la \
	$(HWLOC_LIBS) $(LIBPCI_LIBS)
