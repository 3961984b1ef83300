#!/usr/bin/env python3
"""Plot `forcekit accuracy --json` results: force error (Narumi et al., eq. 10) and force offset
(eq. 11) per accumulator, as Narumi et al.'s Figs. 10 and 11, side by side on log scales.

    forcekit accuracy --kernel ga --system plummer --accum all --json > accuracy.json
    scripts/plot_accuracy.py accuracy.json [more.json ...] -o accuracy.png

Several files (e.g. one per device) become groups of bars. Exact zeros (narumi's and fixed64's
offset with pair-symmetric forces) cannot sit on a log scale: they are drawn at the axis floor and
labelled "0". Needs matplotlib (Debian/Ubuntu: apt-get install python3-matplotlib).
"""
import argparse
import json
import sys

ORDER = ["float", "double", "ti", "nitadori", "nitadori_large", "narumi", "ref", "composite",
         "fixed64"]


def load(path):
    with open(path) as f:
        document = json.load(f)
    results = {r["accum"]: r for r in document.get("results", [])}
    label = document.get("device", path)
    if "system" in document:
        label += f" ({document['system']}, N = {document.get('n')})"
    elif "n" in document:
        label += f" (N = {document['n']})"
    return label, results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="accuracy JSON files")
    parser.add_argument("-o", "--output", default="accuracy.png", help="PNG to write")
    parser.add_argument("--title", default=None, help="figure title")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_accuracy.py needs matplotlib: apt-get install python3-matplotlib")

    sets = [load(path) for path in args.inputs]
    names = [a for a in ORDER if any(a in results for _, results in sets)]
    names += sorted({a for _, results in sets for a in results} - set(names))
    letters = {}
    for _, results in sets:
        for name, r in results.items():
            letters.setdefault(name, r.get("letter", "-"))
    labels = [f"{n}\n({letters[n]})" if letters.get(n, "-") != "-" else n for n in names]

    figure, axes = plt.subplots(1, 2, figsize=(max(10, 1.4 * len(names)), 4.8))
    width = 0.8 / len(sets)
    for panel, (key, title) in enumerate([("error", "average force error (eq. 10)"),
                                          ("offset", "average force offset (eq. 11)")]):
        axis = axes[panel]
        values = [v for _, results in sets for r in results.values()
                  for v in [r.get(key)] if isinstance(v, (int, float)) and v > 0]
        floor = min(values) / 10 if values else 1e-20
        for s, (label, results) in enumerate(sets):
            xs, heights, zeros = [], [], []
            for i, name in enumerate(names):
                value = results.get(name, {}).get(key)
                if value is None:
                    continue
                x = i - 0.4 + width * (s + 0.5)
                xs.append(x)
                heights.append(value if value > 0 else floor)
                if value == 0:
                    zeros.append(x)
            axis.bar(xs, heights, width=width, label=label, bottom=0)
            for x in zeros:
                axis.annotate("0", (x, floor), ha="center", va="bottom", fontsize=9)
        axis.set_yscale("log")
        axis.set_title(title)
        axis.set_xticks(range(len(names)))
        axis.set_xticklabels(labels, fontsize=8, rotation=30, ha="right")
        axis.grid(axis="y", which="major", alpha=0.3)
    axes[0].legend(fontsize=8)
    if args.title:
        figure.suptitle(args.title)
    figure.tight_layout()
    figure.savefig(args.output, dpi=150)
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
