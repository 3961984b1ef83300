#!/usr/bin/env python3
"""Strong scaling of the MPI layer from bench/run_gpu_mpi.sh result folders (issue #21).

    scripts/plot_mpi_scaling.py DIR[=LABEL] ... [-o scaling.png] [--json scaling.json]

Each DIR holds the JSON documents of one run (`mpirun -np P forcekit bench --json`, named
CASE_gpusP.json or CASE_sharedP.json); LABEL (default: the folder's name) tells runs apart in the
legend (one line style per run, one colour per case). Panels: speedup against GPUs per case (ranks
on their own GPUs) with the ideal line, parallel efficiency, and the median step in seconds (a
faster one-GPU step lowers the efficiency of the same multi-GPU time). --json writes the rows bench/mpi_report.py computes, per run.
Needs matplotlib for the plot (Debian/Ubuntu: apt-get install python3-matplotlib).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import mpi_report  # noqa: E402  (bench/mpi_report.py: load and summarize)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="DIR or DIR=LABEL")
    parser.add_argument("-o", "--output", help="the plot (PNG)")
    parser.add_argument("--json", help="the rows as JSON")
    args = parser.parse_args()
    runs = []
    for spec in args.runs:
        path, _, label = spec.partition("=")
        if not os.path.isdir(path):
            sys.exit(f"plot_mpi_scaling.py: {path}: not a folder")
        rows = mpi_report.summarize(mpi_report.load(path))
        if not rows:
            sys.exit(f"plot_mpi_scaling.py: {path}: no run_gpu_mpi.sh results")
        runs.append((label or os.path.basename(os.path.normpath(path)), rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"run": label, "rows": rows} for label, rows in runs], f, indent=1)
            f.write("\n")
    if not args.output:
        return
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_mpi_scaling.py needs matplotlib: apt-get install python3-matplotlib")
    fig, (left, right, third) = plt.subplots(1, 3, figsize=(17, 5.5))
    widest = 1
    cases = sorted({r["case"] for _, rows in runs for r in rows if r["mode"] == "gpus"})
    palette = plt.get_cmap("tab10")
    colour = {case: palette(k % 10) for k, case in enumerate(cases)}
    styles = ["-", "--", ":", "-."]
    for number, (label, rows) in enumerate(runs):
        for case in cases:
            points = sorted((r["ranks"], r["speedup"], r["efficiency"], r["median_step_seconds"])
                            for r in rows
                            if r["case"] == case and r["mode"] == "gpus" and r["speedup"])
            if len(points) < 2:
                continue
            widest = max(widest, points[-1][0])
            gpus = [p[0] for p in points]
            name = f"{case} ({label})" if len(runs) > 1 else case
            style = dict(color=colour[case], linestyle=styles[number % len(styles)], marker="o")
            left.plot(gpus, [p[1] for p in points], label=name, **style)
            right.plot(gpus, [p[2] for p in points], **style)
            third.plot(gpus, [p[3] for p in points], **style)
    left.plot([1, widest], [1, widest], color="grey", linestyle=":", label="ideal")
    right.axhline(0.9, color="grey", linestyle=":", label="90% (the goal)")
    left.set_xlabel("GPUs (one MPI rank each)")
    left.set_ylabel("speedup over one GPU (median step)")
    right.set_xlabel("GPUs (one MPI rank each)")
    right.set_ylabel("parallel efficiency")
    right.set_ylim(0, 1.1)
    third.set_xlabel("GPUs (one MPI rank each)")
    third.set_ylabel("median step (s)")
    third.set_yscale("log")
    for axis in (left, right, third):
        axis.set_xticks(list(range(1, widest + 1)))
        axis.grid(alpha=0.3)
    left.legend(fontsize=6.5)
    right.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)


if __name__ == "__main__":
    main()
