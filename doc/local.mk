# doc: man pages. Each page adds itself in its own fragment.
include $(srcdir)/doc/slurm-vm.mk
include $(srcdir)/doc/core.mk
