# room: gres_vgpu uses: core job hw
# The suite's GRES plugins, loaded by slurmd as root: gres/ibvf today
# (gres_ibvf.c, ibvf.c; gres/vgpu will join it). Which file is which
# plugin and how each is built: gres_vgpu/README.md.
EXTRA_DIST += gres_vgpu/README.md
# gres/ibvf needs Slurm-internal headers: only with --with-slurm-source.
if HAVE_SLURM_SOURCE
# The Slurm half: Slurm's config.h and headers first (-iquote beats our -I.).
noinst_LTLIBRARIES += gres_vgpu/libibvf_slurm.la
gres_vgpu_libibvf_slurm_la_SOURCES = gres_vgpu/gres_ibvf.c \
	gres_vgpu/slurm_gres_common.c gres_vgpu/ibvf.h
gres_vgpu_libibvf_slurm_la_CPPFLAGS = -iquote $(SLURM_SOURCE_DIR) \
	-I$(SLURM_SOURCE_DIR) -DSLURM_PLUGIN_DEBUG
# Slurm's headers are not written for our warning set.
gres_vgpu_libibvf_slurm_la_CFLAGS = -std=gnu11 $(SAN_CFLAGS) \
	-fstack-protector-strong -Wall $(WERROR_CFLAGS) -Wno-unused-function \
	-Wno-pointer-sign

# The plugin: the Slurm half and the room it needs, hw (with job, channel
# and core under it, PIC, taken whole into the module): not vm, slurmd need
# not load libvirt and libxml2.
slurm_plugin_LTLIBRARIES += gres_vgpu/gres_ibvf.la
gres_vgpu_gres_ibvf_la_SOURCES = gres_vgpu/ibvf.c gres_vgpu/ibvf.h
gres_vgpu_gres_ibvf_la_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/gres_vgpu $(HWLOC_CFLAGS) \
	$(LIBPCI_CFLAGS)
gres_vgpu_gres_ibvf_la_LDFLAGS = -module -avoid-version -shared \
	-export-symbols-regex '^(init|fini|plugin_(name|type|version)|gres_p_.*)$$'
gres_vgpu_gres_ibvf_la_LIBADD = gres_vgpu/libibvf_slurm.la \
	common/hw/libslurmvm-hw.la
endif

if HAVE_SLURM_SOURCE
check_PROGRAMS += gres_vgpu/ibvf-dlopen
gres_vgpu_ibvf_dlopen_SOURCES = gres_vgpu/ibvf-dlopen.c
gres_vgpu_ibvf_dlopen_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/gres_vgpu $(SLURM_CPPFLAGS)
gres_vgpu_ibvf_dlopen_LDADD = -ldl
TESTS += gres_vgpu/test-gres-ibvf.sh
endif
dist_noinst_SCRIPTS += gres_vgpu/test-gres-ibvf.sh gres_vgpu/ibvf-compile-check.sh
