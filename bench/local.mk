# Benchmarks print their time and ratios against peers; not run by `make
# check` (timing on a shared CI machine is noise), run by hand:
#   build/bench/plan_bench [ITERATIONS]
noinst_PROGRAMS += bench/plan_bench
bench_plan_bench_SOURCES = bench/plan_bench.c
bench_plan_bench_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS)
bench_plan_bench_LDADD = common/libslurmvm.la $(HWLOC_LIBS)
