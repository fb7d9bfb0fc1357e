#!/bin/bash
# What loading spank_vm.so costs every sbatch, srun and slurmstepd, VM job or
# not: the median time of dlopen() in a fresh process, against an empty
# shared object loaded the same way in the same run (the floor of any plugin).
#
#   bench/spank_load_bench.sh [RUNS]     (BUILD_DIR: the build, default build/)
#
# Prints BENCH| lines (see bench/run.sh). Needs python3 and cc; not root.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-$here/../build}
runs=${1:-25}
[ "${SVM_BENCH_SHORT:-0}" = 1 ] && runs=${1:-3} # bench/run.sh --short
plugin=$build/spank_vm/.libs/spank_vm.so
[ -f "$plugin" ] || { echo "spank_load_bench: no $plugin: build first" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo 'int svm_empty(void) { return 0; }' >"$work/empty.c"
cc -shared -fPIC -o "$work/empty.so" "$work/empty.c"

# Lazy binding, as slurmstepd's plugin loader: the plugin's calls into
# libslurm resolve in the host process, not here.
python3 - "$runs" "$plugin" "$work/empty.so" <<'PY'
import statistics, subprocess, sys
runs, plugin, empty = int(sys.argv[1]), sys.argv[2], sys.argv[3]
code = ("import ctypes,os,time;t=time.perf_counter();"
        "ctypes.CDLL(%r,mode=os.RTLD_LAZY);print(time.perf_counter()-t)")
def median_ms(path):
    return 1000 * statistics.median(
        float(subprocess.check_output([sys.executable, "-c", code % path]))
        for _ in range(runs))
p, e = median_ms(plugin), median_ms(empty)
print("BENCH|spank_vm.so load (dlopen), every sbatch/srun/slurmstepd|%.3f|ms|"
      "an empty shared object: %.3f ms|%.2f|host CPU; median of %d fresh processes"
      % (p, e, p / e if e else 0, runs))
PY
