#!/usr/bin/env bash
# Targets against sources on a GPU (issue #18, deliverable 5): builds, runs the engine's and
# libsapporo's tests on the device (correctness first), then bench_g6_block per configuration:
# the time per block step against ni at nj = 65,536 and the rate at ni = npipes against nj
# (65,536 .. 1,048,576) beside gaj all-pairs with the same accumulator. One JSON per
# configuration under OUT; then a 16,384-body Hermite run to t = 1 through libsapporo per
# accumulator (bench_g6_hermite). Not yet run on a GPU: budget 15 minutes.
#   bench/run_gpu_g6.sh OUT [DEVICE]
set -euo pipefail
out=$1
device=${2:-gpu}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(mktemp -d "${TMPDIR:-/tmp}/forcekit-g6.XXXXXX")
mkdir -p "$out"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > "$out/configure.log"
cmake --build "$build" -j"$(nproc)" > "$out/build.log"
export FORCEKIT_DEVICE=$device FORCEKIT_G6_DEVICE=$device FORCEKIT_CACHE_DIR=$build/cache \
    FORCEKIT_TUNING_DB=off FORCEKIT_KERNEL_DIR=$root/cl
(cd "$build" && ctest -R 'test_sources|test_g6' --output-on-failure > "$out/checks.txt" 2>&1) ||
    echo "g6 checks FAILED on $device (see checks.txt)" >&2
for config in ref:ds double:ds float:float fixed64:ds; do
    accum=${config%%:*} positions=${config##*:}
    "$build/bench/bench_g6_block" --device "$device" --accum "$accum" --positions "$positions" \
        --npipes 256 --block-nj 65536 --ni 1,2,4,8,16,32,64,128,256 \
        --nj 65536,131072,262144,524288,1048576 --seconds 0.5 \
        > "$out/g6_block_${accum}_${positions}.json" 2> "$out/g6_block_${accum}_${positions}.err" ||
        echo "bench_g6_block $accum/$positions failed (see its .err)" >&2
done
# The 16,384-body Plummer sphere to t = 1 through libsapporo (ph4's calls, by the Hermite driver of
# tests/g6/g6_driver.c; AMUSE itself cannot be installed without network): energy error and wall.
for config in ref:ds double:ds; do
    accum=${config%%:*} positions=${config##*:}
    FORCEKIT_G6_ACCUM=$accum FORCEKIT_G6_POSITIONS=$positions timeout 900 \
        "$build/bench/bench_g6_hermite" --n 16384 --t 1 --eta 0.03 --eps2 1e-4 \
        > "$out/g6_hermite_16384_${accum}_${positions}.json" \
        2> "$out/g6_hermite_16384_${accum}_${positions}.err" ||
        echo "bench_g6_hermite $accum/$positions failed or timed out (see its .err)" >&2
done
echo "results in $out"
