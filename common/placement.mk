# devices, topology, placement, domain XML, Slurm's numbering
common_libslurmvm_la_SOURCES += \
	common/devices.c common/devices.h \
	common/placement.c common/placement.h \
	common/domain.c common/domain.h \
	common/slurm_map.c common/slurm_map.h
