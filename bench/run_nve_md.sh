#!/bin/sh
# Issue #17, deliverable 4: NVE energy drift of the MD workload with neighbour lists against cells.
#
#   bench/run_nve_md.sh BUILD_DIR OUT_DIR [N] [STEPS] [DEVICE] [ACCUM]
#
# Runs `forcekit simulate` on the LJ fluid (fcc start, density 0.8, T = 1, rc 2.5, periodic,
# velocity Verlet, dt 0.005, skin 0.3) for STEPS steps (default 10,000) at N particles (default
# 2,048) once with --algorithm neighbors and once with cells, the same seed, and writes
# OUT_DIR/nve_<loop>_n<N>.json (simulate's JSON) and OUT_DIR/nve_md.json + summary.md: per loop
# the relative energy drift |E_end - E0| / |E0|, the largest relative deviation from E0, the
# least-squares energy slope per unit time relative to |E0|, the builds (rebuild count, the first
# included), seconds per step (wall and device); and neighbors / cells for each drift figure
# (target: <= 1.2). DEVICE (default: forcekit's default device) is simulate's --device, e.g. gpu
# for the H200 run at N = 1,048,576 and 1,000 steps; ACCUM defaults to float.
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
        ${device:+--device "$device"} --json > "$out/nve_${loop}_n$n.json"
done
echo "load_at_end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)" >> "$out/nve_machine.txt"
python3 - "$out" "$n" <<'PY'
import json, sys
out, n = sys.argv[1], sys.argv[2]
runs = {}
for loop in ("neighbors", "cells"):
    with open("%s/nve_%s_n%s.json" % (out, loop, n)) as f:
        d = json.load(f)
    e0 = abs(d["initial_energy"])
    runs[loop] = {
        "algorithm": d["algorithm"], "n": d["n"], "steps": d["steps"], "dt": d["dt"],
        "accum": d["accum"], "device": d["device"],
        "relative_energy_drift": d["relative_energy_drift"],
        "max_relative_energy_deviation": d["max_relative_energy_deviation"],
        "relative_energy_slope_per_time": d["relative_energy_slope_per_time"],
        "initial_energy": d["initial_energy"], "final_energy": d["final_energy"],
        "rebuilds": d.get("rebuilds"), "skin": d.get("skin"),
        "steps_per_rebuild": d["steps"] / d["rebuilds"] if d.get("rebuilds") else None,
        "seconds_per_step": d["seconds_per_step"]["total"],
        "device_seconds_per_step": d["seconds_per_step"]["device"],
        "pairs_examined": d.get("pairs_examined"),
    }
keys = ("relative_energy_drift", "max_relative_energy_deviation")
ratio = {k: runs["neighbors"][k] / runs["cells"][k] if runs["cells"][k] else None for k in keys}
slope_n = abs(runs["neighbors"]["relative_energy_slope_per_time"])
slope_c = abs(runs["cells"]["relative_energy_slope_per_time"])
ratio["abs_relative_energy_slope_per_time"] = slope_n / slope_c if slope_c else None
doc = {"program": "bench/run_nve_md.sh", "workload": "lj fluid, density 0.8, T 1, rc 2.5, "
       "periodic, velocity Verlet, dt 0.005, skin 0.3, seed 1", "loops": runs,
       "neighbors_over_cells": ratio, "target_max_ratio": 1.2,
       "met": all(v is not None and v <= 1.2 for v in ratio.values())}
with open("%s/nve_md.json" % out, "w") as f:
    json.dump(doc, f, indent=1)
lines = ["# NVE drift, neighbour lists against cells (N = %s, %d steps)" % (n, runs["cells"]["steps"]), "",
         "| loop | rel. drift | max rel. deviation | rel. slope per time | rebuilds | steps per rebuild | s per step (wall) | device s per step |",
         "|---|---|---|---|---|---|---|---|"]
for loop, r in runs.items():
    lines.append("| %s | %.3g | %.3g | %.3g | %s | %s | %.4g | %.4g |" % (
        loop, r["relative_energy_drift"], r["max_relative_energy_deviation"],
        r["relative_energy_slope_per_time"], r["rebuilds"],
        "%.1f" % r["steps_per_rebuild"] if r["steps_per_rebuild"] else "-",
        r["seconds_per_step"], r["device_seconds_per_step"]))
lines += ["", "neighbors / cells: " + ", ".join(
    "%s %s" % (k, "%.3g" % v if v is not None else "-") for k, v in ratio.items()) +
    " (target <= 1.2: %s)" % ("met" if doc["met"] else "not met")]
with open("%s/summary.md" % out, "w") as f:
    f.write("\n".join(lines) + "\n")
print(json.dumps(doc, indent=1))
PY
