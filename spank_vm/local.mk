# room: spank_vm uses: core channel job
# spank_vm.so: the SPANK plugin (options at submit, tasks into the guest),
# installed in Slurm's PluginDir: plugstack.conf names it as spank_vm.so.
slurm_plugin_LTLIBRARIES += spank_vm/spank_vm.la
spank_vm_spank_vm_la_SOURCES = \
	spank_vm/spank_vm.c spank_vm/spank_vm.h \
	spank_vm/args.c spank_vm/options.c spank_vm/submit.c spank_vm/task.c \
	spank_vm/launch.c spank_vm/taskprolog.c spank_vm/extern.c
spank_vm_spank_vm_la_CPPFLAGS = $(SVM_CPPFLAGS) -I$(ROOMS)/spank_vm $(SLURM_CPPFLAGS)
spank_vm_spank_vm_la_LDFLAGS = -module -avoid-version -shared \
	-export-symbols-regex '^(slurm_spank_|plugin_|spank_plugin_)'
spank_vm_spank_vm_la_LIBADD = common/job/libslurmvm-job.la
