# Benchmarks print their time and ratios against peers; not run by `make
# check` (timing on a shared CI machine is noise), run by hand:
#   build/bench/plan_bench [ITERATIONS]
noinst_PROGRAMS += bench/plan_bench
bench_plan_bench_SOURCES = bench/plan_bench.c
bench_plan_bench_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS)
bench_plan_bench_LDADD = common/vm/libslurmvm-vm.la $(HWLOC_LIBS)

# Streaming round trips for bench/channel_bench.sh (1 byte echoed by a
# command, e.g. slurm-vm-exec -- cat in the guest).
noinst_PROGRAMS += bench/channel_echo
bench_channel_echo_SOURCES = bench/channel_echo.c

# `make bench`: every benchmark of the suite, one markdown table
# (bench/run.sh; root; boots guests, takes minutes). Not part of `make check`;
# builds the check programs too (bench/jobnet_bench.sh drives svm-jobnet).
dist_noinst_SCRIPTS += bench/run.sh
bench: all $(check_PROGRAMS)
	$(top_srcdir)/bench/run.sh "$(abs_top_builddir)"
.PHONY: bench
dist_noinst_DATA += bench/RESULTS.md

# The file operations bench/share_bench.sh times in a guest and on the host:
# static, since the busybox test guest has no shared libc.
noinst_PROGRAMS += bench/share_ops
bench_share_ops_SOURCES = bench/share_ops.c
bench_share_ops_CFLAGS = -std=gnu11 $(WARN_CFLAGS)
bench_share_ops_LDFLAGS = -all-static

# The network probe of the test guest (tests/guest/files/net_bench.c), for
# the host end of bench/net_bench.sh's peer (node namespace to node
# namespace over the underlay): the same code at both ends.
noinst_PROGRAMS += bench/net_bench
bench_net_bench_SOURCES = tests/guest/files/net_bench.c
