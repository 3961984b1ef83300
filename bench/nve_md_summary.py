#!/usr/bin/env python3
"""Summarize bench/run_nve_md.sh: OUT_DIR/nve_md.json and OUT_DIR/summary.md.

   nve_md_summary.py OUT_DIR N

The drift is the least-squares slope of the total energy against time over the samples after the
first 10% (the fcc start melts there and the energy settles), relative to |E0|, with its standard
error from the residuals; `simulate`'s endpoint figure |E_end - E0| / |E0| and the largest
deviation are reported beside it but are one sample against the fluctuation, so the ratio
neighbors / cells is taken of the slopes. When both slopes are within two standard errors of 0,
the drifts are below what the run resolves: the target (<= 1.2) is then reported as "unresolved"
with the bound the run does give.
"""
import json
import math
import sys


def slope_fit(doc):
    samples = doc["samples"]
    t, e = samples["time"], samples["energy"]
    k = len(t) // 10
    t, e = t[k:], e[k:]
    m = len(t)
    mt, me = sum(t) / m, sum(e) / m
    sxx = sum((x - mt) ** 2 for x in t)
    b = sum((x - mt) * (y - me) for x, y in zip(t, e)) / sxx
    a = me - b * mt
    sd = math.sqrt(sum((y - (a + b * x)) ** 2 for x, y in zip(t, e)) / (m - 2))
    e0 = abs(doc["initial_energy"])
    return b / e0, sd / math.sqrt(sxx) / e0, sd / e0


def main(out, n):
    runs = {}
    for loop in ("neighbors", "cells"):
        with open("%s/nve_%s_n%s.json" % (out, loop, n)) as f:
            d = json.load(f)
        slope, slope_error, fluctuation = slope_fit(d)
        runs[loop] = {
            "algorithm": d["algorithm"], "n": d["n"], "steps": d["steps"], "dt": d["dt"],
            "accum": d["accum"], "device": d["device"],
            "relative_slope_per_time": slope, "relative_slope_standard_error": slope_error,
            "relative_fluctuation_sd": fluctuation,
            "relative_energy_drift_endpoint": d["relative_energy_drift"],
            "max_relative_energy_deviation": d["max_relative_energy_deviation"],
            "initial_energy": d["initial_energy"], "final_energy": d["final_energy"],
            "rebuilds": d.get("rebuilds"), "skin": d.get("skin"),
            "steps_per_rebuild": d["steps"] / d["rebuilds"] if d.get("rebuilds") else None,
            "seconds_per_step": d["seconds_per_step"]["total"],
            "device_seconds_per_step": d["seconds_per_step"]["device"],
            "pairs_examined": d.get("pairs_examined"),
        }
    nb, ce = runs["neighbors"], runs["cells"]
    resolved = any(abs(r["relative_slope_per_time"]) > 2 * r["relative_slope_standard_error"]
                   for r in (nb, ce))
    ratio = abs(nb["relative_slope_per_time"]) / abs(ce["relative_slope_per_time"])
    # what the run does bound: |slope| < |slope| + 2 standard errors
    bound = {loop: abs(r["relative_slope_per_time"]) + 2 * r["relative_slope_standard_error"]
             for loop, r in runs.items()}
    verdict = ("met" if ratio <= 1.2 else "not met") if resolved else "unresolved"
    doc = {"program": "bench/run_nve_md.sh", "workload": "lj fluid, density 0.8, T 1, rc 2.5, "
           "periodic, velocity Verlet, dt 0.005, skin 0.3, seed 1", "loops": runs,
           "neighbors_over_cells_slope": ratio,
           "neighbors_over_cells_endpoint_drift":
               nb["relative_energy_drift_endpoint"] / ce["relative_energy_drift_endpoint"],
           "slopes_resolved": resolved, "slope_bound_two_sigma": bound,
           "target_max_ratio": 1.2, "verdict": verdict,
           "neighbors_over_cells_seconds_per_step": nb["seconds_per_step"] / ce["seconds_per_step"]}
    with open("%s/nve_md.json" % out, "w") as f:
        json.dump(doc, f, indent=1)
    lines = ["# NVE drift, neighbour lists against cells (N = %s, %d steps, dt %g)" % (
                 n, ce["steps"], ce["dt"]), "",
             "| loop | slope per unit time / abs(E0) (+- s.e.) | fluctuation sd | endpoint drift | max deviation | rebuilds | steps per rebuild | s per step (wall) | device s per step |",
             "|---|---|---|---|---|---|---|---|---|"]
    for loop, r in runs.items():
        lines.append("| %s | %.3g (+- %.2g) | %.3g | %.3g | %.3g | %s | %s | %.4g | %.4g |" % (
            loop, r["relative_slope_per_time"], r["relative_slope_standard_error"],
            r["relative_fluctuation_sd"], r["relative_energy_drift_endpoint"],
            r["max_relative_energy_deviation"], r["rebuilds"],
            "%.1f" % r["steps_per_rebuild"] if r["steps_per_rebuild"] else "-",
            r["seconds_per_step"], r["device_seconds_per_step"]))
    lines += ["", "neighbors / cells: slope %.3g, endpoint drift %.3g; target <= 1.2: %s%s" % (
        ratio, doc["neighbors_over_cells_endpoint_drift"], verdict,
        "" if resolved else " (both slopes within 2 standard errors of 0: the run bounds the "
        "drift to < %.2g (neighbors) and < %.2g (cells) of abs(E0) per unit time, not their ratio)"
        % (bound["neighbors"], bound["cells"])),
        "seconds per step, neighbors / cells: %.3g" % doc["neighbors_over_cells_seconds_per_step"]]
    with open("%s/summary.md" % out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
