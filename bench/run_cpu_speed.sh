#!/usr/bin/env bash
# CPU speed of ga (issue #12, item 7): bench_cpu_speed on POCL and, when it can be installed, on
# Intel's CPU OpenCL runtime, each one interleaved run against the C + OpenMP baseline. Writes
# the JSON, the device list and the CPU model under results/<date>_<cpu>/.
#
# usage: bench/run_cpu_speed.sh [BUILD_DIR] [ROUNDS] [REPS]      (default build 7 3)
#
# Intel's runtime: scripts/intel-opencl.sh DIR (PyPI intel-opencl-rt + intel-cmplr-lib-rt into
# DIR, an .icd file of our own in DIR/vendors) when that script exists; else
# $INTEL_OPENCL_VENDORS naming a vendors directory; else that part is skipped with a message.
set -euo pipefail
build=${1:-build}
rounds=${2:-7}
reps=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //; s/[^A-Za-z0-9]\+/-/g; s/-$//' | tr 'A-Z' 'a-z')
flags=$(grep -m1 '^flags' /proc/cpuinfo)
isa=avx
case "$flags" in *avx512f*) isa=avx512 ;; *avx2*) isa=avx2 ;; esac
out=$here/bench/results/$(date -u +%Y-%m-%d)_${cpu}-${isa}-$(nproc)core
mkdir -p "$out"
bench=$build/bench/bench_cpu_speed
[ -x "$bench" ] || { echo "run_cpu_speed.sh: $bench not built (needs OpenMP)" >&2; exit 2; }

# The baseline's OpenMP threads must sleep while OpenCL runs; no tuning database (the defaults
# are what is measured); a private program cache.
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=$(nproc) FORCEKIT_TUNING_DB=off
export FORCEKIT_CACHE_DIR=$build/cpu-speed-cache POCL_CACHE_DIR=$build/cpu-speed-pocl-cache

{
    grep -m1 'model name' /proc/cpuinfo
    grep -m1 'cpu family' /proc/cpuinfo
    grep -m1 '^model' /proc/cpuinfo
    echo "cores: $(nproc)"
    echo "isa: $isa"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
} >"$out/cpu.txt"

echo "POCL ..." >&2
"$build/forcekit" devices --json >"$out/devices_pocl.json" 2>/dev/null || true
"$bench" --device cpu --n 8192,16384 --rounds "$rounds" --reps "$reps" >"$out/cpu_speed_pocl.json"

vendors=${INTEL_OPENCL_VENDORS:-}
if [ -z "$vendors" ] && [ -x "$here/scripts/intel-opencl.sh" ]; then
    if lines=$("$here/scripts/intel-opencl.sh" "$build/intel-opencl"); then
        vendors=$(printf '%s\n' "$lines" | sed -n 's/^OCL_ICD_VENDORS=//p')
    fi
fi
if [ -n "$vendors" ]; then
    echo "Intel ..." >&2
    OCL_ICD_VENDORS=$vendors "$build/forcekit" devices --json >"$out/devices_intel.json" 2>/dev/null || true
    OCL_ICD_VENDORS=$vendors FORCEKIT_CACHE_DIR=$build/cpu-speed-cache-intel \
        "$bench" --device cpu --n 8192,16384 --rounds "$rounds" --reps "$reps" >"$out/cpu_speed_intel.json"
else
    echo "run_cpu_speed.sh: SKIP Intel's runtime: neither scripts/intel-opencl.sh nor" \
        "INTEL_OPENCL_VENDORS (a vendors directory with an .icd file for libintelocl.so)" >&2
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/cpu.txt"
echo "$out"
