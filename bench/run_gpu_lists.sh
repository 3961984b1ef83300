#!/usr/bin/env bash
# Neighbour lists on a GPU (issues #16 and #17): builds, runs test_neighbors on the device (the
# lane form and the split lists included), then sweeps the work-items per particle
# (fk_eval_config.j_splits, --splits: cl/neighbors.cl FK_NB_SPLIT) for the MD workload
# (ljc_constant float, density 0.8, rc 2.5, periodic, full lists), device time per evaluation at
# each N, and the step (update, compute, read) at the small N where the split matters; last, the
# SM clock while ga float runs at N = 262,144 (nvidia-smi, when the machine has it), for the
# issue-rate limit of the ga target. One JSON per run under OUT.
#   bench/run_gpu_lists.sh OUT [DEVICE] [SIZES]
set -euo pipefail
out=$1
device=${2:-gpu}
sizes=${3:-4096 16384 65536 262144 1048576}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$(mktemp -d "${TMPDIR:-/tmp}/forcekit-lists.XXXXXX")}
mkdir -p "$out"
if [ ! -x "$build/forcekit" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > "$out/configure.log"
    cmake --build "$build" -j"$(nproc)" > "$out/build.log"
fi
export FORCEKIT_DEVICE=$device FORCEKIT_CACHE_DIR=$build/cache FORCEKIT_TUNING_DB=off
(cd "$build" && ctest -R 'test_neighbors' --output-on-failure > "$out/checks.txt" 2>&1) ||
    echo "neighbour-list checks FAILED (see checks.txt)" >&2
fk=$build/forcekit
# shellcheck source=bench/lattice.sh
. "$root/bench/lattice.sh" # box N: the lattice's periodic box at density 0.8
reps_for() { if [ "$1" -ge 1000000 ]; then echo 30; elif [ "$1" -ge 200000 ]; then echo 60; else echo 200; fi; }
for n in $sizes; do
    for wg in 32 64; do
        for split in 1 2 4 8; do
            "$fk" bench --json --kernel ljc_constant --n "$n" --algorithm neighbors --cutoff 2.5 \
                --box "$(box "$n")" --lists full --lanes off --unroll 1x4 --wg "$wg" \
                --splits "$split" --reps "$(reps_for "$n")" \
                > "$out/lists_n${n}_wg${wg}_split${split}.json" ||
                echo "n $n wg $wg split $split failed" >&2
        done
    done
done
for n in 4096 16384; do
    for split in 1 4; do
        "$fk" bench --step --json --kernel ljc_constant --n "$n" --algorithm neighbors \
            --cutoff 2.5 --box "$(box "$n")" --lists full --lanes off --unroll 1x4 --wg 32 \
            --splits "$split" --reps 300 > "$out/step_n${n}_split${split}.json" ||
            echo "step n $n split $split failed" >&2
    done
done
if command -v nvidia-smi > /dev/null 2>&1; then
    nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,power.limit,power.draw,temperature.gpu,clocks_throttle_reasons.active \
        --format=csv -lms 50 > "$out/clocks_ga_n262144.csv" 2>&1 &
    smi=$!
    sleep 0.5
    "$fk" bench --json --kernel ga --n 262144 --reps 60 > "$out/ga_n262144_float.json" || true
    kill "$smi" 2> /dev/null || true
    wait "$smi" 2> /dev/null || true
fi
