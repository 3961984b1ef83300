#!/usr/bin/env bash
# The energy-drift study (simulation issue): `forcekit simulate` of an LJ fluid (rc = 2.5, density
# 0.8, T = 1.0, velocity Verlet, dt = 0.005) for 100,000 steps with the float, narumi, fixed64 and
# double accumulators on the GPU; one JSON per accumulator and a PNG of E/E0 - 1 against the step.
#   bench/run_gpu_drift.sh OUT_DIR [BUILD_DIR]
# BUILD_DIR defaults to ./build. Environment (all optional):
#   FORCEKIT_DEVICE  device selector (default gpu)
#   N                particles; default: the largest of 8192, 4096, 2048 whose projected total
#                    (from a 1,000-step probe of each accumulator) fits BUDGET seconds
#   BUDGET           seconds for the four full runs (default 240)
#   STEPS DT SEED ALGORITHM   (100000, 0.005, 1, all-pairs: every accumulator on the same pair loop)
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 OUT_DIR [BUILD_DIR]" >&2
    exit 2
fi
out=$1
build=${2:-build}
fk="$build/forcekit"
device=${FORCEKIT_DEVICE:-gpu}
steps=${STEPS:-100000}
dt=${DT:-0.005}
seed=${SEED:-1}
algorithm=${ALGORITHM:-all-pairs}
budget=${BUDGET:-240}
accums="float narumi fixed64 double"
mkdir -p "$out"
if [ ! -x "$fk" ]; then
    echo "$0: $fk not found; build first (cmake -S . -B $build && cmake --build $build -j)" >&2
    exit 2
fi
run() { # run N ACCUM STEPS SAMPLE -> JSON on stdout
    "$fk" simulate --device "$device" --kernel lj --system lj-fluid --n "$1" --density 0.8 \
        --temperature 1.0 --cutoff 2.5 --dt "$dt" --seed "$seed" --algorithm "$algorithm" \
        --accum "$2" --steps "$3" --sample "$4" --json
}
steps_per_second() {
    python3 -c 'import json,sys; print(json.load(sys.stdin)["steps_per_second"])'
}

# Probe: 1,000 steps of each accumulator (sampling as often as the full run: every steps/1000).
sample=$((steps / 1000 > 0 ? steps / 1000 : 1))
if [ -z "${N:-}" ]; then
    for n in 8192 4096 2048; do
        total=0
        for accum in $accums; do
            rate=$(run "$n" "$accum" 1000 "$sample" 2>>"$out/drift_stderr.txt" | steps_per_second)
            total=$(python3 -c "print($total + $steps / $rate)")
        done
        echo "N = $n: projected $(printf '%.0f' "$total") s for the four runs of $steps steps" |
            tee -a "$out/drift_stderr.txt" >&2
        N=$n
        if python3 -c "import sys; sys.exit(0 if $total <= $budget else 1)"; then
            break
        fi
    done
fi

started=$(date +%s)
for accum in $accums; do
    echo "== $accum, N = $N, $steps steps" | tee -a "$out/drift_stderr.txt" >&2
    run "$N" "$accum" "$steps" "$sample" >"$out/drift_lj_n${N}_${accum}.json" \
        2>>"$out/drift_stderr.txt"
done
echo "four runs: $(($(date +%s) - started)) s" | tee -a "$out/drift_stderr.txt" >&2
"$fk" devices --json >"$out/devices.json"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi >"$out/nvidia_smi.txt" 2>&1 || true
fi
# The plot needs matplotlib: the system python3 (apt-get install python3-matplotlib).
plot_python=/usr/bin/python3
[ -x "$plot_python" ] || plot_python=python3
here=$(cd "$(dirname "$0")/.." && pwd)
"$plot_python" "$here/scripts/plot_drift.py" \
    $(for accum in $accums; do echo "$out/drift_lj_n${N}_${accum}.json"; done) \
    -o "$out/drift_lj_n${N}.png" ||
    echo "$0: plotting failed (matplotlib missing?); the JSON files are in $out" >&2
python3 - "$out" "$N" $accums <<'PY'
import json, sys
out, n, accums = sys.argv[1], sys.argv[2], sys.argv[3:]
for accum in accums:
    d = json.load(open(f"{out}/drift_lj_n{n}_{accum}.json"))
    print(f"{accum:8s} drift {d['relative_energy_drift']:.3e}  slope/time (rel) "
          f"{d['relative_energy_slope_per_time']:+.3e}  {d['steps_per_second']:.0f} steps/s  "
          f"{d['seconds_per_step']['total'] * 1e6:.0f} us/step "
          f"(device {d['seconds_per_step']['device'] * 1e6:.0f}, update {d['seconds_per_step']['update'] * 1e6:.0f})")
PY
