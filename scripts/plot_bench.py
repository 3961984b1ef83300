#!/usr/bin/env python3
"""Plot the JSON documents of bench/suite.sh (one `forcekit bench --json` per run, plus
bench_baseline_omp's) into PNGs next to them:

    scripts/plot_bench.py OUTDIR [--title TEXT]

- variants_<kernel>.png: interactions/s against N, one line per unroll variant (as Elsen et al.,
  Fig. 1), from variants_<kernel>_n<N>[_<IxJ>].json;
- algorithms.png: all-pairs against symmetric against N per kernel (and the C + OpenMP baseline
  for ga on CPUs), from algorithm_*.json and baseline_*.json; effective interactions/s = N^2 /
  seconds for both loops, so the symmetric loop's factor two shows as a higher rate;
- accumulators.png: seconds per evaluation of each accumulator relative to float, per kernel, from
  accum_<kernel>_<accum>_n<N>.json.

Also prints a text summary (the tables bench/README.md quotes). Needs matplotlib (Debian/Ubuntu:
apt-get install python3-matplotlib).
"""
import argparse
import glob
import json
import os
import re
import sys

ACCUMS = ["float", "double", "ti", "nitadori", "nitadori_large", "narumi", "ref", "composite",
          "fixed64"]


def load(path):
    with open(path) as f:
        return json.load(f)


def results(document):
    """(unroll, interactions/s, seconds) of each variant that ran, for forcekit bench documents."""
    out = []
    for r in document.get("results", []):
        rate = r.get("interactions_per_second")
        if rate is not None:
            out.append((r.get("unroll"), rate, r.get("seconds_per_eval")))
    return out


def collect_variants(outdir):
    """{kernel: {unroll: {n: rate}}}"""
    table = {}
    for path in glob.glob(os.path.join(outdir, "variants_*.json")):
        match = re.match(r"variants_(.+)_n(\d+)(_\d+x\d+)?\.json$", os.path.basename(path))
        if not match:
            continue
        kernel, n = match.group(1), int(match.group(2))
        for unroll, rate, _ in results(load(path)):
            table.setdefault(kernel, {}).setdefault(unroll, {})[n] = rate
    return table


def collect_algorithms(outdir):
    """{kernel: {label: {n: rate}}}, the baseline under ('ga', 'C + OpenMP baseline')."""
    table = {}
    for path in glob.glob(os.path.join(outdir, "algorithm_*.json")):
        match = re.match(r"algorithm_(.+)_(all-pairs|symmetric)_n(\d+)\.json$",
                         os.path.basename(path))
        if not match:
            continue
        kernel, algorithm, n = match.group(1), match.group(2), int(match.group(3))
        for unroll, rate, _ in results(load(path)):
            table.setdefault(kernel, {}).setdefault(algorithm, {})[n] = rate
    for path in glob.glob(os.path.join(outdir, "baseline_ga_n*.json")):
        document = load(path)
        if document.get("check", {}).get("passed", False):
            label = "C + OpenMP baseline ({} threads)".format(document.get("threads"))
            table.setdefault("ga", {}).setdefault(label, {})[document["n"]] = \
                document["interactions_per_second"]
    return table


def collect_accumulators(outdir):
    """{kernel: (n, {accum: seconds})}"""
    table = {}
    for path in glob.glob(os.path.join(outdir, "accum_*.json")):
        match = re.match(r"accum_(.+)_([a-z0-9_]+?)_n(\d+)\.json$", os.path.basename(path))
        if not match:
            continue
        document = load(path)
        kernel, accum, n = document["kernel"], document["accum"], int(match.group(3))
        rows = results(document)
        if rows:
            entry = table.setdefault(kernel, (n, {}))
            entry[1][accum] = rows[0][2]
    return table


def device_name(outdir):
    for path in sorted(glob.glob(os.path.join(outdir, "*.json"))):
        document = load(path)
        if "device" in document:
            return document["device"]
    return "?"


def plot_lines(plt, series, title, path, ylabel="interactions/s"):
    figure, axis = plt.subplots(figsize=(8, 5.5))
    for label in sorted(series):
        points = sorted(series[label].items())
        if not points:
            continue
        axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3,
                  label=label)
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("N (particles)")
    axis.set_ylabel(ylabel)
    axis.set_title(title, fontsize=10)
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    print("wrote", path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", help="the suite's output directory")
    parser.add_argument("--title", default=None, help="prefix of the figure titles")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_bench.py: matplotlib is missing (apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 1
    device = args.title or device_name(args.outdir)

    variants = collect_variants(args.outdir)
    for kernel, series in sorted(variants.items()):
        plot_lines(plt, series, f"{device}: {kernel}, float, all-pairs, per unroll variant",
                   os.path.join(args.outdir, f"variants_{kernel}.png"))
        best = {}
        for unroll, points in series.items():
            for n, rate in points.items():
                if n not in best or rate > best[n][1]:
                    best[n] = (unroll, rate)
        print(f"{kernel}: best variant per N: " +
              ", ".join(f"{n}: {u} {r:.3g}" for n, (u, r) in sorted(best.items())))

    algorithms = collect_algorithms(args.outdir)
    if algorithms:
        kernels = sorted(algorithms)
        figure, axes = plt.subplots(1, len(kernels), figsize=(6.5 * len(kernels), 5),
                                    squeeze=False)
        colors = {"all-pairs": "tab:blue", "symmetric": "tab:orange"}
        for axis, kernel in zip(axes[0], kernels):
            for label in sorted(algorithms[kernel]):
                points = sorted(algorithms[kernel][label].items())
                axis.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                          markersize=3, label=label, color=colors.get(label, "tab:green"))
            axis.set_xscale("log", base=2)
            axis.set_yscale("log")
            axis.set_xlabel("N (particles)")
            axis.set_ylabel("effective interactions/s (N^2 / time)")
            axis.set_title(f"{kernel}, float, automatic variant", fontsize=10)
            axis.grid(True, which="both", alpha=0.3)
            axis.legend(fontsize=8)
            ratio = {n: algorithms[kernel]["symmetric"][n] / algorithms[kernel]["all-pairs"][n]
                     for n in algorithms[kernel].get("symmetric", {})
                     if n in algorithms[kernel].get("all-pairs", {})}
            print(f"{kernel}: symmetric / all-pairs speed: " +
                  ", ".join(f"{n}: {r:.2f}" for n, r in sorted(ratio.items())))
            for label, points in algorithms[kernel].items():
                if label.startswith("C + OpenMP") and "all-pairs" in algorithms[kernel]:
                    both = sorted(n for n in points if n in algorithms[kernel]["all-pairs"])
                    print(f"{kernel}: all-pairs / baseline speed: " + ", ".join(
                        f"{n}: {algorithms[kernel]['all-pairs'][n] / points[n]:.2f}"
                        for n in both))
        figure.suptitle(f"{device}: all-pairs against symmetric", fontsize=11)
        figure.tight_layout()
        path = os.path.join(args.outdir, "algorithms.png")
        figure.savefig(path, dpi=110)
        plt.close(figure)
        print("wrote", path)

    accumulators = collect_accumulators(args.outdir)
    if accumulators:
        kernels = sorted(accumulators)
        figure, axis = plt.subplots(figsize=(9, 5))
        width = 0.8 / len(kernels)
        for k, kernel in enumerate(kernels):
            n, seconds = accumulators[kernel]
            base = seconds.get("float")
            if not base:
                continue
            names = [a for a in ACCUMS if a in seconds]
            xs = [ACCUMS.index(a) + (k - (len(kernels) - 1) / 2) * width for a in names]
            values = [seconds[a] / base for a in names]
            bars = axis.bar(xs, values, width, label=f"{kernel} (N = {n})")
            for bar, value in zip(bars, values):
                axis.annotate(f"{value:.1f}", (bar.get_x() + bar.get_width() / 2, value),
                              ha="center", va="bottom", fontsize=7)
            print(f"{kernel} (N = {n}): cost relative to float: " +
                  ", ".join(f"{a} {v:.2f}" for a, v in zip(names, values)))
        axis.set_xticks(range(len(ACCUMS)))
        axis.set_xticklabels(ACCUMS, rotation=30)
        axis.set_yscale("log")
        axis.set_ylabel("seconds per evaluation / float's")
        axis.set_title(f"{device}: accumulator cost relative to float (all-pairs)", fontsize=10)
        axis.grid(True, axis="y", which="both", alpha=0.3)
        axis.legend(fontsize=8)
        figure.tight_layout()
        path = os.path.join(args.outdir, "accumulators.png")
        figure.savefig(path, dpi=110)
        plt.close(figure)
        print("wrote", path)
    if not (variants or algorithms or accumulators):
        print(f"plot_bench.py: no suite results in {args.outdir}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
