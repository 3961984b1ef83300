#!/usr/bin/env bash
# Targets against sources on a GPU (issue #18, deliverable 5): builds, runs the engine's and
# libsapporo's tests on the device (correctness first), then bench_g6_block per configuration:
# the time per block step against ni at nj = 65,536 and the rate at ni = npipes against nj
# (65,536 .. 1,048,576) beside gaj all-pairs with the same accumulator. One JSON per
# configuration under OUT; a sweep of targets per work-item (unroll 1, 2, 4); a 16,384-body
# Hermite run to t = 1 through libsapporo per accumulator (bench_g6_hermite); then, when PH4_DIR
# holds ph4's standalone sources (bench/ph4_standalone.sh prepare .devdeps/ph4), AMUSE's ph4
# itself (its standalone program, unchanged) on plummer16k.in to t = 1
# through libsapporo on DEVICE and, unless PH4_POCL=0, on this machine's CPU through POCL.
# Budget: about 8 minutes on an H200 with the ph4 runs.
#   bench/run_gpu_g6.sh OUT [DEVICE]
# NI, NJ, SECONDS_PER_POINT, NPIPES_LARGE (a second npipes for the rate, default 4096) override the grid.
set -euo pipefail
out=$1
device=${2:-gpu}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$(mktemp -d "${TMPDIR:-/tmp}/forcekit-g6.XXXXXX")} # BUILD: reuse a build tree
mkdir -p "$out"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > "$out/configure.log"
cmake --build "$build" -j"$(nproc)" > "$out/build.log"
export FORCEKIT_DEVICE=$device FORCEKIT_G6_DEVICE=$device FORCEKIT_CACHE_DIR=$build/cache \
    FORCEKIT_TUNING_DB=off FORCEKIT_KERNEL_DIR=$root/cl
(cd "$build" && ctest -R 'test_sources|test_g6' --output-on-failure > "$out/checks.txt" 2>&1) ||
    echo "g6 checks FAILED on $device (see checks.txt)" >&2
ni=${NI:-1,2,4,8,16,32,64,128,256} nj=${NJ:-65536,262144,1048576} seconds=${SECONDS_PER_POINT:-0.3}
for config in ref:ds double:ds float:float fixed64:ds; do
    accum=${config%%:*} positions=${config##*:}
    "$build/bench/bench_g6_block" --device "$device" --accum "$accum" --positions "$positions" \
        --npipes 256 --block-nj 65536 --ni "$ni" --nj "$nj" --seconds "$seconds" \
        > "$out/g6_block_${accum}_${positions}.json" 2> "$out/g6_block_${accum}_${positions}.err" ||
        echo "bench_g6_block $accum/$positions failed (see its .err)" >&2
done
# The rate with more pipes per call (Sapporo2 reports 16,384; FORCEKIT_G6_NPIPES sets ours).
large=${NPIPES_LARGE:-4096}
for config in ref:ds float:float; do
    accum=${config%%:*} positions=${config##*:}
    "$build/bench/bench_g6_block" --device "$device" --accum "$accum" --positions "$positions" \
        --npipes "$large" --block-nj 65536 --ni "1,256,1024,$large" --nj "$nj" --seconds "$seconds" \
        > "$out/g6_block_${accum}_${positions}_npipes${large}.json" \
        2> "$out/g6_block_${accum}_${positions}_npipes${large}.err" ||
        echo "bench_g6_block $accum/$positions npipes $large failed (see its .err)" >&2
done
# Targets per work-item (fk_sources_config.unroll; the default is 1).
for config in ref:ds float:float; do
    accum=${config%%:*} positions=${config##*:}
    for unroll in 1 2 4; do
        "$build/bench/bench_g6_block" --device "$device" --accum "$accum" --positions "$positions" \
            --unroll "$unroll" --npipes 256 --block-nj 65536 --ni 1,32,256 --nj 65536,1048576 \
            --seconds "$seconds" > "$out/g6_block_${accum}_${positions}_unroll${unroll}.json" \
            2> "$out/g6_block_${accum}_${positions}_unroll${unroll}.err" ||
            echo "bench_g6_block $accum/$positions unroll $unroll failed (see its .err)" >&2
    done
done
# The 16,384-body Plummer sphere to t = 1 through libsapporo (ph4's calls, by the Hermite driver of
# tests/g6/g6_driver.c; AMUSE itself cannot be installed without network): energy error and wall.
for config in ${HERMITE_CONFIGS:-ref:ds}; do
    accum=${config%%:*} positions=${config##*:}
    FORCEKIT_G6_ACCUM=$accum FORCEKIT_G6_POSITIONS=$positions timeout 900 \
        "$build/bench/bench_g6_hermite" --n 16384 --t 1 --eta 0.03 --eps2 1e-4 \
        > "$out/g6_hermite_16384_${accum}_${positions}.json" \
        2> "$out/g6_hermite_16384_${accum}_${positions}.err" ||
        echo "bench_g6_hermite $accum/$positions failed or timed out (see its .err)" >&2
done
# AMUSE's ph4, its own standalone program unchanged (bench/ph4_standalone.sh), through libsapporo.
if [ -n "${PH4_DIR:-}" ] && [ -d "$PH4_DIR" ]; then
    FORCEKIT_G6_DEVICE=$device "$root/bench/ph4_standalone.sh" run "$PH4_DIR" "$build" \
        "$out/ph4_16384_${device}.json" plummer16k.in 1 > "$out/ph4_${device}.log" 2>&1 ||
        echo "ph4 on $device failed (see ph4_${device}.log)" >&2
    if [ "${PH4_POCL:-1}" != 0 ]; then
        FORCEKIT_G6_DEVICE=cpu timeout "${PH4_POCL_TIMEOUT:-400}" "$root/bench/ph4_standalone.sh" run \
            "$PH4_DIR" "$build" "$out/ph4_16384_pocl.json" plummer16k.in 1 > "$out/ph4_pocl.log" 2>&1 ||
            echo "ph4 on POCL failed or timed out (see ph4_pocl.log)" >&2
    fi
fi
echo "results in $out"
