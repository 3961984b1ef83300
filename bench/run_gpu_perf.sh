#!/usr/bin/env bash
# The performance issue's GPU measurements in one command, for the GPU session:
#
#   bench/run_gpu_perf.sh OUTDIR [BUILD]        (BUILD: default ./build; built here if missing)
#
# 1. OUTDIR/suite/: bench/suite.sh gpu --quick (unroll variants x N for ga, ljc_constant, lj up
#    to 262,144 and ga at 1,048,576; all-pairs against symmetric; the symmetric loop's variants;
#    every accumulator at N = 65,536), one JSON per run, plus the PNGs of scripts/plot_bench.py
#    when matplotlib is there (otherwise plot later anywhere: scripts/plot_bench.py OUTDIR/suite);
# 2. OUTDIR/kernel_info.json: CL_KERNEL_PRIVATE_MEM_SIZE, CL_KERNEL_LOCAL_MEM_SIZE,
#    CL_KERNEL_WORK_GROUP_SIZE and the preferred multiple of every kernel of ga, ljc_constant and
#    lj, float and fixed64, all-pairs and symmetric, variants auto, 1x1, 4x4, 4x8, 8x8;
# 3. OUTDIR/startup.json: bench_startup (cold and warm start to the first evaluation);
# 4. OUTDIR/devices.json, OUTDIR/nvidia_smi.txt, OUTDIR/timing.txt (wall time of each step).
#
# Budget: about 4 to 5 minutes on an H200 (the suite about 4, limited to 5; the kernel figures
# well under their 90 s limit, which 60 builds on POCL nearly use up; each step has a limit, and a
# step cut short keeps the complete JSON files it wrote). FORCEKIT_GPU picks the device (default
# gpu).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: bench/run_gpu_perf.sh OUTDIR [BUILD]" >&2; exit 2; }
OUT=$1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${2:-$ROOT/build}
GPU=${FORCEKIT_GPU:-gpu}
mkdir -p "$OUT/suite"
OUT=$(cd "$OUT" && pwd)
export FORCEKIT_TUNING_DB=off
export FORCEKIT_CACHE_DIR=${FORCEKIT_CACHE_DIR:-$(mktemp -d)} # not inside OUTDIR: results only

step() { # step NAME LIMIT_SECONDS COMMAND...
    local name=$1 limit=$2 start end code
    shift 2
    start=$(date +%s)
    timeout "$limit" "$@"
    code=$?
    end=$(date +%s)
    echo "$name: $((end - start)) s, exit $code" | tee -a "$OUT/timing.txt"
}

if [ ! -x "$BUILD/forcekit" ] || [ ! -x "$BUILD/bench/bench_kernel_info" ]; then
    step build 240 bash -c "cmake -S '$ROOT' -B '$BUILD' -DCMAKE_BUILD_TYPE=Release >/dev/null &&
        cmake --build '$BUILD' -j \$(nproc) >/dev/null"
fi
nvidia-smi >"$OUT/nvidia_smi.txt" 2>&1 || true
"$BUILD/forcekit" devices --json >"$OUT/devices.json"

step suite 300 env BUILD="$BUILD" "$ROOT/bench/suite.sh" "$GPU" "$OUT/suite" --quick
step kernel_info 90 bash -c "'$BUILD/bench/bench_kernel_info' --device '$GPU' \
    --kernels ga,ljc_constant,lj --accums float,fixed64 --algorithms all-pairs,symmetric \
    --unroll auto,1x1,4x4,4x8,8x8 >'$OUT/.kernel_info.json' && \
    mv '$OUT/.kernel_info.json' '$OUT/kernel_info.json'"
step startup 60 bash -c "FORCEKIT_DEVICE='$GPU' '$BUILD/bench/bench_startup' 4096 \
    >'$OUT/.startup.json' && mv '$OUT/.startup.json' '$OUT/startup.json'"
if python3 -c 'import matplotlib' 2>/dev/null; then
    python3 "$ROOT/scripts/plot_bench.py" "$OUT/suite" >"$OUT/suite/summary.txt" 2>&1
fi
echo "results in $OUT" | tee -a "$OUT/timing.txt"
