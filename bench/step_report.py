#!/usr/bin/env python3
"""The step-path report (issue #16) from bench/run_gpu_step.sh's JSON: a markdown table of the
per-step wall time next to OpenMM's (../shared/PEERS.md, the same GPU and driver), the targets, and
an SVG plot of wall time per step against N.

    bench/step_report.py RESULTS_DIR [--svg FILE]

Only the standard library: the plot is written as SVG by hand.
"""
import glob
import json
import math
import os
import sys

# OpenMM 7.7, OpenCL platform, single precision, getState(Forces) per evaluation, H200, driver
# 580.159.04 (../shared/PEERS.md, measured 2026-11-23). Milliseconds.
OPENMM_H200 = {
    "cells": {4096: 0.095, 65536: 0.624, 262144: 2.75, 1048576: 13.4},
    "allpairs": {4096: 0.069, 16384: 0.440, 65536: 5.96},
}


def load(directory):
    runs = {}
    for path in glob.glob(os.path.join(directory, "step_*.json")):
        with open(path) as f:
            document = json.load(f)
        name = os.path.basename(path)[len("step_"):-len(".json")]
        runs[name] = {r["mode"]: r for r in document["results"]}
    return runs


def wall_ms(runs, name, mode):
    run = runs.get(name)
    if not run or mode not in run:
        return None
    return run[mode]["wall_seconds_median"] * 1e3


MD_LOOPS = ("neighbors", "cells")  # the MD workload's pair loops, first the one to compare


def table(runs):
    lines = []
    for md_loop in MD_LOOPS:
        if any(name.startswith(f"ljc_constant_{md_loop}_float") for name in runs):
            md_table(runs, md_loop, lines)
    all_pairs_table(runs, lines)
    return "\n".join(lines)


def md_table(runs, md_loop, lines):
    lines.append(f"MD workload: ljc_constant (LJ + Coulomb), density 0.8, rc 2.5, periodic, {md_loop} "
                 "loop, float; milliseconds per step (update + compute + read), medians")
    lines.append("")
    lines.append("| N | copy | view | pinned | device | limit | pinned / limit | OpenMM single | "
                 "pinned / OpenMM | fixed64 (keep) pinned / float pinned |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for n in sorted(OPENMM_H200["cells"]):
        name = f"ljc_constant_{md_loop}_float_n{n}"
        run = runs.get(name)
        if not run:
            continue
        pinned = run["pinned"]
        keep = wall_ms(runs, f"ljc_constant_{md_loop}_fixed64-keep_n{n}", "pinned")
        openmm = OPENMM_H200["cells"][n]
        lines.append(
            f"| {n:,} | {wall_ms(runs, name, 'copy'):.3f} | {wall_ms(runs, name, 'view'):.3f} | "
            f"{pinned['wall_seconds_median'] * 1e3:.3f} | {pinned['device_seconds_median'] * 1e3:.3f} | "
            f"{pinned['limit_seconds'] * 1e3:.3f} | {pinned['wall_over_limit']:.2f} | {openmm} | "
            f"{pinned['wall_seconds_median'] * 1e3 / openmm:.2f} | "
            f"{(keep / (pinned['wall_seconds_median'] * 1e3)) if keep else float('nan'):.2f} |")
    lines.append("")


def all_pairs_table(runs, lines):
    lines.append("All pairs, no cutoff: ljc_constant, float; the better of the all-pairs and symmetric "
                 "loops per N (both evaluate every pair), pinned mode")
    lines.append("")
    lines.append("| N | all-pairs | symmetric | best / limit | OpenMM single | best / OpenMM | "
                 "fixed64 (keep) / float |")
    lines.append("|---|---|---|---|---|---|---|")
    for n in sorted(OPENMM_H200["allpairs"]):
        a = wall_ms(runs, f"ljc_constant_allpairs_float_n{n}", "pinned")
        s = wall_ms(runs, f"ljc_constant_symmetric_float_n{n}", "pinned")
        if a is None or s is None:
            continue
        loop = "allpairs" if a <= s else "symmetric"
        best = runs[f"ljc_constant_{loop}_float_n{n}"]["pinned"]
        keep = wall_ms(runs, f"ljc_constant_{loop}_fixed64-keep_n{n}", "pinned")
        openmm = OPENMM_H200["allpairs"][n]
        lines.append(f"| {n:,} | {a:.3f} | {s:.3f} | {best['wall_over_limit']:.2f} | {openmm} | "
                     f"{min(a, s) / openmm:.2f} | "
                     f"{(keep / min(a, s)) if keep else float('nan'):.2f} |")


def svg(runs, path):
    """Wall time per step against N, log-log: forcekit's three modes and OpenMM (MD workload)."""
    width, height, left, right, top, bottom = 640, 420, 70, 170, 30, 50
    ns = sorted(OPENMM_H200["cells"])
    colours = {"neighbors": ("#1b7837", "#5aae61", "#a6dba0"), "cells": ("#2166ac", "#67a9cf", "#d1e5f0")}
    series = []
    for md_loop in MD_LOOPS:
        names = [f"ljc_constant_{md_loop}_float_n{n}" for n in ns]
        if not any(name in runs for name in names):
            continue
        for mode, colour in zip(("pinned", "view", "copy"), colours[md_loop]):
            if md_loop == "cells" and mode != "pinned":
                continue  # one line for the other loop keeps the plot readable
            series.append((f"{md_loop} {mode}", colour, [wall_ms(runs, name, mode) for name in names]))
    series.append(("OpenMM single", "#762a83", [OPENMM_H200["cells"][n] for n in ns]))
    x0, x1 = math.log10(ns[0]) - 0.1, math.log10(ns[-1]) + 0.1
    values = [v for _, _, vs in series for v in vs if v]
    y0, y1 = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))

    def x(n):
        return left + (math.log10(n) - x0) / (x1 - x0) * (width - left - right)

    def y(v):
        return height - bottom - (math.log10(v) - y0) / (y1 - y0) * (height - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18">Wall time per MD step (update, compute, read), H200, '
           f'ljc_constant float, forcekit against OpenMM</text>']
    for e in range(y0, y1 + 1):
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(10 ** e):.1f}" y2="{y(10 ** e):.1f}" '
                   f'stroke="#ddd"/><text x="{left - 8}" y="{y(10 ** e) + 4:.1f}" text-anchor="end">'
                   f'{10 ** e:g} ms</text>')
    for n in ns:
        out.append(f'<line x1="{x(n):.1f}" x2="{x(n):.1f}" y1="{top}" y2="{height - bottom}" stroke="#eee"/>'
                   f'<text x="{x(n):.1f}" y="{height - bottom + 18}" text-anchor="middle">{n:,}</text>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 10}" text-anchor="middle">N</text>')
    for i, (label, colour, vs) in enumerate(series):
        points = " ".join(f"{x(n):.1f},{y(v):.1f}" for n, v in zip(ns, vs) if v)
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for n, v in zip(ns, vs):
            if v:
                out.append(f'<circle cx="{x(n):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}"/>')
        ly = top + 20 + 20 * i
        out.append(f'<line x1="{width - right + 15}" x2="{width - right + 40}" y1="{ly}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"/><text x="{width - right + 45}" y="{ly + 4}">'
                   f'{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runs = load(sys.argv[1])
    if not runs:
        sys.exit(f"no step_*.json under {sys.argv[1]}")
    print(table(runs))
    if len(sys.argv) == 4 and sys.argv[2] == "--svg":
        svg(runs, sys.argv[3])


if __name__ == "__main__":
    main()
