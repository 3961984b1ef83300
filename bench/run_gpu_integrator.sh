#!/usr/bin/env bash
# The device integrator (issue #33) on a GPU: builds, runs test_integrator there, then
# bench_integrator (the integrator's step against one plain force evaluation and the host step
# path) on the LJ fluid with neighbour lists at the issue's N, float. One JSON per N under OUT.
#   bench/run_gpu_integrator.sh OUT [DEVICE] [N...]
set -euo pipefail
out=$1
device=${2:-gpu}
shift $(($# < 2 ? $# : 2))
sizes=${*:-4096 65536 262144 1048576}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(mktemp -d "${TMPDIR:-/tmp}/forcekit-integrator.XXXXXX")
mkdir -p "$out"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFORCEKIT_FUZZ=OFF > "$out/configure.log"
cmake --build "$build" -j"$(nproc)" --target test_integrator bench_integrator > "$out/build.log"
export FORCEKIT_DEVICE=$device FORCEKIT_CACHE_DIR=$build/cache FORCEKIT_TUNING_DB=off
(cd "$build" && ctest -R 'test_integrator' --output-on-failure > "$out/checks.txt" 2>&1) ||
    echo "integrator checks FAILED (see checks.txt)" >&2
for n in $sizes; do
    steps=200
    [ "$n" -ge 1000000 ] && steps=100
    "$build/bench/bench_integrator" --n "$n" --steps "$steps" --rounds 7 --evals 20 \
        --warmup 400 > "$out/integrator_n$n.json"
done
python3 - "$out" <<'PY'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "integrator_n*.json")),
                   key=lambda p: int(p.split("_n")[-1][:-5])):
    d = json.load(open(path))
    m = d["ms_per_step"]
    print(f'N {d["n"]:>8}  integrator {m["integrator"]:.4f} ms  host loop {m["host_loop"]:.4f} ms  '
          f'force eval {m["force_eval"]:.4f} ms  ratio {d["integrator_over_force_eval"]:.2f}  '
          f'rebuilds {d["integrator_rebuilds"]} syncs {d["integrator_syncs"]}')
PY
