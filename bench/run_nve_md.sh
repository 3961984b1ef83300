#!/bin/sh
# Issue #17, deliverable 4: NVE energy drift of the MD workload with neighbour lists against cells.
#
#   bench/run_nve_md.sh BUILD_DIR OUT_DIR [N] [STEPS] [DEVICE] [ACCUM]
#
# Runs `forcekit simulate` on the LJ fluid (fcc start, density 0.8, T = 1, rc 2.5, periodic,
# velocity Verlet, dt 0.005, skin 0.3) for STEPS steps (default 10,000) at N particles (default
# 2,048) once with --algorithm neighbors and once with cells, the same seed, and writes
# OUT_DIR/nve_<loop>_n<N>.json (simulate's JSON) and OUT_DIR/nve_md.json + summary.md
# (bench/nve_md_summary.py: the drift as a least-squares slope with its standard error, the
# endpoint drift, rebuilds, seconds per step, and neighbors / cells; target <= 1.2). DEVICE (default: forcekit's default device) is simulate's --device, e.g. gpu
# for the H200 run at N = 1,048,576 and 1,000 steps; ACCUM defaults to float. SAMPLE (environment)
# is simulate's --sample: the energy, a host pass in double over every particle, every SAMPLE
# steps (default steps / 1000, every step for 1,000 steps).
set -eu
build=${1:?usage: run_nve_md.sh BUILD_DIR OUT_DIR [N] [STEPS] [DEVICE] [ACCUM]}
out=${2:?usage: run_nve_md.sh BUILD_DIR OUT_DIR [N] [STEPS] [DEVICE] [ACCUM]}
n=${3:-2048}
steps=${4:-10000}
device=${5:-}
accum=${6:-float}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
{
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "forcekit_commit: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "load_at_start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
} > "$out/nve_machine.txt"
for loop in neighbors cells; do
    echo "simulate: $loop, N = $n, $steps steps" >&2
    # shellcheck disable=SC2086
    "$build/forcekit" simulate --kernel lj --system lj-fluid --n "$n" --steps "$steps" \
        --dt 0.005 --accum "$accum" --algorithm "$loop" --skin 0.3 --seed 1 \
        ${SAMPLE:+--sample "$SAMPLE"} ${device:+--device "$device"} --json > "$out/nve_${loop}_n$n.json"
done
echo "load_at_end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" >> "$out/nve_machine.txt"
python3 "$here/nve_md_summary.py" "$out" "$n"
