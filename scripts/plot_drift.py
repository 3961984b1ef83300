#!/usr/bin/env python3
"""Plot `forcekit simulate --json` energy series: total energy relative to its initial value,
(E - E0) / |E0|, against the step, one line per run (accumulator), like Taufer et al.'s Fig. 1.

    forcekit simulate --kernel lj --n 4096 --steps 100000 --accum float --json > float.json
    scripts/plot_drift.py float.json narumi.json fixed64.json double.json -o drift.png

Each line's label has the accumulator, the relative drift |E_end - E0| / |E0| and the slope of a
linear fit of E(t) (per unit time, relative to |E0|). Needs matplotlib (Debian/Ubuntu: apt-get
install python3-matplotlib; run it with the system python3).
"""
import argparse
import json
import sys

ORDER = ["float", "composite", "ti", "nitadori", "nitadori_large", "narumi", "fixed64", "double",
         "ref"]


def load(path):
    with open(path) as f:
        document = json.load(f)
    samples = document.get("samples")
    if not samples or not samples.get("step") or not samples.get("energy"):
        raise ValueError(f"{path}: no energy samples (is it forcekit simulate --json output?)")
    return document


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="simulate JSON files")
    parser.add_argument("-o", "--output", default="drift.png", help="PNG to write")
    parser.add_argument("--title", default=None, help="figure title")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_drift.py: needs matplotlib (apt-get install python3-matplotlib, then run "
                 "it with /usr/bin/python3)")
    try:
        runs = [load(path) for path in args.inputs]
    except (OSError, ValueError) as error:
        sys.exit(f"plot_drift.py: {error}")
    runs.sort(key=lambda d: ORDER.index(d["accum"]) if d.get("accum") in ORDER else len(ORDER))

    figure, axes = plt.subplots(figsize=(8, 4.8))
    for run in runs:
        steps = run["samples"]["step"]
        energies = run["samples"]["energy"]
        e0 = energies[0]
        relative = [(e - e0) / abs(e0) if e is not None else float("nan") for e in energies]
        slope = run.get("relative_energy_slope_per_time")
        drift = run.get("relative_energy_drift")
        label = f"{run.get('accum', '?')}: drift {drift:.2e}" if drift is not None else run.get(
            "accum", "?")
        if slope is not None:
            label += f", slope {slope:+.2e}/time"
        axes.plot(steps, relative, linewidth=1.0, label=label)
    first = runs[0]
    axes.set_xlabel("step")
    axes.set_ylabel("(E - E0) / |E0|")
    axes.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    axes.axhline(0.0, color="grey", linewidth=0.5)
    title = args.title or (f"{first.get('kernel')} NVE, N = {first.get('n')}, "
                           f"dt = {first.get('dt')}, {first.get('integrator')}, "
                           f"{first.get('device')}")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(args.output, dpi=150)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
