# doc: man pages. Each page adds itself in its own fragment.
include $(srcdir)/doc/slurm-vm.mk
include $(srcdir)/doc/core.mk
# The developer's map (HACKING.md points here) and the rooms check it describes.
EXTRA_DIST += doc/design.md scripts/check-rooms
