# libslurmvm-core: no dependencies beyond libc, so the static guest agent can
# link it. libslurmvm-job: what a job's own processes need (configuration,
# images checked as the user, the state directory, tasks), also libc only:
# spank_vm.so is loaded by every sbatch, srun and slurmstepd, VM job or not.
# libslurmvm: everything else (libvirt, hwloc, libpci, libxml2), with both.
# All are PIC so spank_vm.so can take them in. Headers are the contract.
noinst_LTLIBRARIES += common/libslurmvm-core.la common/libslurmvm-job.la \
	common/libslurmvm.la
common_libslurmvm_core_la_SOURCES = \
	common/clock.h \
	common/macro.h \
	common/log.c common/log.h \
	common/strutil.c common/strutil.h
common_libslurmvm_job_la_SOURCES = \
	common/kvconf.c common/kvconf.h \
	common/qcow2.c common/qcow2.h \
	common/image.c common/image.h \
	common/request.c common/request.h \
	common/journal.c common/journal.h \
	common/user.c common/user.h \
	common/vmconf.c common/vmconf.h
# placement.h's types only (no hwloc calls).
common_libslurmvm_job_la_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS)
common_libslurmvm_job_la_LIBADD = common/libslurmvm-core.la
common_libslurmvm_la_SOURCES = \
	common/hypervisor.c common/hypervisor.h \
	common/run.c common/run.h \
	common/seed.c common/seed.h \
	common/teardown.c common/teardown.h
common_libslurmvm_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBXML_CFLAGS) $(HWLOC_CFLAGS) \
	$(LIBVIRT_CFLAGS) $(LIBPCI_CFLAGS)
common_libslurmvm_la_LIBADD = common/libslurmvm-job.la $(LIBXML_LIBS) \
	$(HWLOC_LIBS) $(LIBVIRT_LIBS) $(LIBPCI_LIBS)

# Each part of the library adds its sources in its own fragment.
include $(srcdir)/common/proto.mk
include $(srcdir)/common/placement.mk
include $(srcdir)/common/gresgen.mk
include $(srcdir)/common/reclaim.mk
include $(srcdir)/common/front.mk
include $(srcdir)/common/task.mk
