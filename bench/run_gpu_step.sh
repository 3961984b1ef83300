#!/usr/bin/env bash
# The step path on a GPU (issue #16): builds, runs the step tests on the device, then
# `forcekit bench --step` for the MD workload (LJ + Coulomb fluid at density 0.8, rc 2.5, a
# periodic box; the neighbour-list and cells loops) and the all-pairs workload at the issue's N,
# float and fixed64, and the device time of ga at N = 262,144 per accumulator family. One JSON per
# run under OUT.
#   bench/run_gpu_step.sh OUT [DEVICE]
set -euo pipefail
out=$1
device=${2:-gpu}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(mktemp -d "${TMPDIR:-/tmp}/forcekit-step.XXXXXX")
mkdir -p "$out"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release > "$out/configure.log"
cmake --build "$build" -j"$(nproc)" > "$out/build.log"
export FORCEKIT_DEVICE=$device FORCEKIT_CACHE_DIR=$build/cache FORCEKIT_TUNING_DB=off
(cd "$build" && ctest -R 'test_step|test_interop|test_example_step|test_precision|test_faults|test_neighbors|test_cells' \
    --output-on-failure > "$out/checks.txt" 2>&1) ||
    echo "step checks FAILED (see checks.txt)" >&2
fk=$build/forcekit
# shellcheck source=bench/lattice.sh
. "$root/bench/lattice.sh" # box N: the lattice's periodic box at density 0.8
reps_for() { if [ "$1" -ge 1000000 ]; then echo 30; elif [ "$1" -ge 200000 ]; then echo 50; else echo 200; fi; }
for n in 4096 65536 262144 1048576; do
    for loop in neighbors cells; do
        for law in ljc_constant lj; do
            for accum in float fixed64 fixed64-keep; do
                [ "$law" = lj ] && [ "$accum" != float ] && continue
                scale=()
                [ "$accum" = fixed64-keep ] && scale=(--scale keep)
                "$fk" bench --step --json --kernel "$law" --accum "${accum%-keep}" "${scale[@]}" \
                    --n "$n" --algorithm "$loop" --cutoff 2.5 --box "$(box "$n")" \
                    --reps "$(reps_for "$n")" > "$out/step_${law}_${loop}_${accum}_n$n.json"
            done
        done
    done
done
for n in 4096 16384 65536; do
    for loop in all-pairs symmetric; do # both evaluate every pair; symmetric uses Newton's third law
        for accum in float fixed64 fixed64-keep; do
            scale=()
            [ "$accum" = fixed64-keep ] && scale=(--scale keep)
            "$fk" bench --step --json --kernel ljc_constant --accum "${accum%-keep}" "${scale[@]}" \
                --algorithm "$loop" --n "$n" --reps "$(reps_for "$n")" \
                > "$out/step_ljc_constant_${loop/-/}_${accum}_n$n.json"
        done
    done
done
for accum in float fixed64 narumi; do
    "$fk" bench --json --kernel ga --accum "$accum" --n 262144 --reps 5 > "$out/ga_${accum}_n262144.json"
done
"$fk" bench --json --kernel ga --algorithm symmetric --n 262144 --reps 5 > "$out/ga_symmetric_float_n262144.json"
python3 - "$out" <<'PY'
import json, glob, os, sys
out = sys.argv[1]
for path in sorted(glob.glob(os.path.join(out, "step_*.json"))):
    d = json.load(open(path))
    for r in d["results"]:
        print(f'{os.path.basename(path)[5:-5]:40s} {r["mode"]:4s} wall {r["wall_seconds_median"]*1e3:8.4f} ms '
              f'device {r["device_seconds_median"]*1e3:8.4f} limit {r["limit_seconds"]*1e3:8.4f} x{r["wall_over_limit"]:.2f} '
              f'upd {r["update_seconds_median"]*1e3:.4f} comp {r["compute_seconds_median"]*1e3:.4f} read {r["read_seconds_median"]*1e3:.4f}')
for path in sorted(glob.glob(os.path.join(out, "ga_*.json"))):
    d = json.load(open(path))
    r = d["results"][0]
    print(f'{os.path.basename(path)[:-5]:40s} {r["seconds_per_eval"]*1e3:9.3f} ms  {r["interactions_per_second"]:.3e} pairs/s')
PY
tar -C "$out" -czf "$out.tar.gz" . # the device tool brings back a few files: one archive
