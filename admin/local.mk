# room: admin uses: core job net hw vm slurm
# slurm-vm: the admin tool. One file per subcommand (admin/cmd_*.c), declared
# in admin/commands.h and listed in the table in admin/slurm-vm.c.
# check-config's areas are in admin/check/, one file each, in this room
# (scripts/check-rooms reads a room's subdirectories as its own).
sbin_PROGRAMS += admin/slurm-vm
admin_slurm_vm_SOURCES = \
	admin/slurm-vm.c admin/commands.h \
	admin/common_opts.c admin/common_opts.h \
	admin/cmd_gres.c \
	admin/cmd_plan.c \
	admin/cmd_check_config.c \
	admin/check/check.h admin/check/report.c \
	admin/check/slurm_conf.c admin/check/timeouts.c \
	admin/check/cgroups.c admin/check/plugstack.c \
	admin/check/gres.c admin/check/pmix.c \
	admin/check/images.c admin/check/network.c \
	admin/check/shares.c admin/check/libvirt.c \
	admin/cmd_list.c \
	admin/cmd_cleanup.c \
	admin/cmd_ib_partitions.c \
	admin/cmd_warm.c
admin_slurm_vm_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/admin $(HWLOC_CFLAGS) \
	-DSLURM_PLUGINDIR='"$(slurm_plugindir)"' \
	-DEXAMPLES_DIR='"$(docdir)/examples"'
admin_slurm_vm_LDADD = common/slurm/libslurmvm-slurm.la common/vm/libslurmvm-vm.la \
	$(SLURM_LIBS)

# The tool on the fixtures, and check-config on a Debian-like node, in
# `make check`: its own checks, then each area's planted faults beside the
# area's source, all on admin/check/test-setup.sh's node.
CHECK_CONFIG_TESTS = admin/test-check-config.sh \
	admin/check/test-slurm_conf.sh admin/check/test-timeouts.sh \
	admin/check/test-cgroups.sh admin/check/test-plugstack.sh \
	admin/check/test-gres.sh admin/check/test-pmix.sh \
	admin/check/test-images.sh admin/check/test-shares.sh \
	admin/check/test-libvirt.sh
TESTS += admin/test-slurm-vm.sh $(CHECK_CONFIG_TESTS)
dist_noinst_SCRIPTS += admin/test-slurm-vm.sh $(CHECK_CONFIG_TESTS)
dist_noinst_DATA += admin/check/test-setup.sh
