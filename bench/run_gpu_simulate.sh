#!/usr/bin/env bash
# `forcekit simulate` per step on the device path (issue #33 item 4): float and --reproducible,
# neighbour lists, skin 0.3, LJ fluid density 0.8, T* = 1, dt 0.005, at the issue's N; one JSON
# per run under OUT and a summary (JSON lines) on stdout with the reproducible / float ratio and
# the host loop (--integrate host) beside it for comparison; first the reproducibility test's
# 1,000 steps on this device.
#   bench/run_gpu_simulate.sh OUT [DEVICE] [N...]
# FORCEKIT_BUILD=DIR uses an existing build instead of configuring a Release one in
# $TMPDIR/forcekit-simulate-build (kept, so that calls for other N reuse it).
# Each run's "seconds_per_step.total" is the wall time of its step loop (after set-up, the
# initial forces and the lists' first build), energies read every 100 steps.
set -euo pipefail
out=$1
device=${2:-gpu}
shift $(($# < 2 ? $# : 2))
sizes=${*:-4096 65536 262144 1048576}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
if [ -n "${FORCEKIT_BUILD:-}" ]; then
    build=$(cd "$FORCEKIT_BUILD" && pwd)
else
    # a fixed place: a second call (other N) finds the build done
    build=${TMPDIR:-/tmp}/forcekit-simulate-build
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFORCEKIT_FUZZ=OFF > "$out/configure.log"
    cmake --build "$build" -j"$(nproc)" --target forcekit_cli > "$out/build.log"
fi
export FORCEKIT_CACHE_DIR=${FORCEKIT_CACHE_DIR:-$build/cache}
fk=$build/forcekit
# issue #33 item 3 on this device: the --reproducible checksums of 1,000 steps (N = 4,096, both
# loops, Verlet and Langevin) against those recorded on POCL and Intel's CPU runtime
# (REPRODUCIBLE=0 leaves it out, for a second call with other N)
if [ "${REPRODUCIBLE:-1}" = 0 ]; then
    :
elif FORCEKIT_DEVICE=$device bash "$root/tests/simulate_reproducible.sh" "$fk" 1000 \
    > "$out/reproducible_1000.txt" 2>&1; then
    echo '{"reproducible_1000_steps": "same checksums as POCL and Intel"}'
else
    echo '{"reproducible_1000_steps": "FAILED: see reproducible_1000.txt"}'
fi
for n in $sizes; do
    steps=${STEPS:-2000}
    [ "$n" -ge 262144 ] && steps=1000
    [ "$n" -ge 1000000 ] && steps=500
    common=(simulate --kernel lj --n "$n" --steps "$steps" --sample 100 --algorithm neighbors
        --skin 0.3 --dt 0.005 --temperature 1 --device "$device" --device-timing off --json)
    # each kind once for 10 steps first: its programs built and cached (and a driver's first
    # launches) before the timed run
    for kind in float reproducible host langevin; do
        case $kind in
        float) extra=() ;;
        reproducible) extra=(--reproducible) ;;
        host) extra=(--integrate host) ;;
        langevin) extra=(--integrator langevin) ;;
        esac
        "$fk" "${common[@]}" "${extra[@]}" --steps 10 > /dev/null 2> "$out/warm_${kind}_n$n.log"
        "$fk" "${common[@]}" "${extra[@]}" > "$out/${kind}_n$n.json" 2> "$out/${kind}_n$n.log"
    done
done
python3 - "$out" $sizes <<'PY'
import json, os, sys
out = sys.argv[1]
for n in sys.argv[2:]:
    ms, waits = {}, {}
    for kind in ("float", "reproducible", "host", "langevin"):
        d = json.load(open(os.path.join(out, f"{kind}_n{n}.json")))
        ms[kind] = 1e3 * d["seconds_per_step"]["total"]
        device = d["device"]
        if "device_integrator" in d:
            waits[kind] = d["device_integrator"]
    print(json.dumps({"n": int(n), "device": device, "ms_per_step": ms,
                      "device_integrator": waits,
                      "reproducible_over_float": ms["reproducible"] / ms["float"],
                      "langevin_over_verlet": ms["langevin"] / ms["float"],
                      "host_over_device": ms["host"] / ms["float"]}))
PY
