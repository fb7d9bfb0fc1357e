# The guest channel's programs (doc/protocol.md), in rooms by the side of
# the trust boundary they run on:
#   guest/   slurm-vm-agent: in the guest, as root, linked statically (it
#            runs whatever the guest's C library); the job user's tasks
#            and the client of the Slurm commands of a --vm-batch script.
#   host/    slurm-vm-relay: on the node, as root, one per guest;
#            slurm-vm-exec: on the node, as the job user (each task of a
#            step, run in the guest through it; the batch session's
#            server of the Slurm commands).
#   shared/  what both sides compile in: fd and socket helpers (util.h),
#            the Slurm commands both ends of hostcmd agree on. libc only.
# The guest side cannot include the host's headers, nor the host the
# guest's (doc/design.md, "Rooms"; scripts/check-rooms). The programs are
# built as agent/slurm-vm-agent, agent/slurm-vm-relay, agent/slurm-vm-exec
# whatever directory their sources are in.
include $(srcdir)/agent/shared/local.mk
include $(srcdir)/agent/guest/local.mk
include $(srcdir)/agent/host/local.mk

dist_noinst_SCRIPTS += tests/unit/test_channel_local.sh
# Runs in `make check` (skips with 77 unless root).
TESTS += tests/unit/test_channel_local.sh
EXTRA_DIST += doc/protocol.md
