#!/usr/bin/env bash
# What OpenCL's queue profiling costs the step path (issue #16): the enqueue probe and
# `forcekit bench --step` at small N, with the context's queue created with and without
# CL_QUEUE_PROFILING_ENABLE (--device-timing on / off), interleaved. One JSON per run under OUT.
#   bench/run_gpu_queue_profiling.sh BUILD OUT [ROUNDS]
set -euo pipefail
build=$1
out=$2
rounds=${3:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export FORCEKIT_DEVICE=${FORCEKIT_DEVICE:-gpu} FORCEKIT_CACHE_DIR=$build/cache FORCEKIT_TUNING_DB=off
# shellcheck source=bench/lattice.sh
. "$root/bench/lattice.sh"
fk=$build/forcekit
for round in $(seq 1 "$rounds"); do
    for profiling in 1 0; do
        timing=$([ "$profiling" = 1 ] && echo on || echo off)
        "$build/bench/bench_async_probe" 0:0 200000 "$profiling" > "$out/probe_p${profiling}_r$round.json"
        for n in 4096 65536; do
            "$fk" bench --step --json --device-timing "$timing" --kernel ljc_constant \
                --n "$n" --algorithm neighbors --cutoff 2.5 --box "$(box "$n")" --reps 300 \
                > "$out/step_neighbors_n${n}_p${profiling}_r$round.json"
        done
        for n in 4096 16384; do
            "$fk" bench --step --json --device-timing "$timing" --kernel ljc_constant \
                --n "$n" --algorithm all-pairs --reps 300 \
                > "$out/step_allpairs_n${n}_p${profiling}_r$round.json"
        done
    done
done
python3 - "$out" <<'PY'
import json, glob, os, sys
out = sys.argv[1]
for path in sorted(glob.glob(os.path.join(out, "step_*.json"))):
    d = json.load(open(path))
    print(os.path.basename(path)[:-5].ljust(34), " ".join(
        f'{r["mode"]} {r["wall_seconds_median"]*1e6:7.1f}' for r in d["results"]),
        f'dev {(d["results"][-1].get("device_seconds_median") or float("nan"))*1e6:6.1f} us')
for path in sorted(glob.glob(os.path.join(out, "probe_*.json"))):
    d = json.load(open(path))
    print(os.path.basename(path)[:-5].ljust(20), " ".join(f'{k[:12]}={v*1e6:.1f}' for k, v in d["enqueue_seconds"].items()))
PY
tar -C "$out" -czf "$out.tar.gz" .
