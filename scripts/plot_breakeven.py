#!/usr/bin/env python3
"""Break-even of cell lists and neighbour lists against all-pairs (van Meel et al., Fig. 4) from
bench/breakeven.sh.

    scripts/plot_breakeven.py breakeven_raw.json [-o breakeven.png] [--json breakeven.json]

Input: a JSON list of `forcekit bench --json` documents (kernel lj, algorithm all-pairs, cells or
neighbors, with n and density). Output:
  --json  per density: the break-even N where cells become faster than all-pairs, from
          seconds_per_eval alone ("force") and with one cell-list build per evaluation added
          ("force_and_rebuild": the cost of an MD step that rebuilds every step, skin 0), each
          interpolated on log-log axes between the measured N that bracket the crossing;
          "below" (cells already faster at the smallest N: the break-even is below it), "above"
          (all-pairs faster at every N measured for cells) or, when all-pairs was not measured that
          far, "extrapolated" from all-pairs' c N^2 fitted to its largest two measured N.
          Where neighbour lists were measured, per density also their break-even against
          all-pairs ("neighbors_force", "neighbors_force_and_rebuild": the list build, from the
          grid, added to every evaluation) and against cells ("neighbors_vs_cells_force": the N
          above which an evaluation with lists kept is faster than one with cells).
  -o      two panels: seconds per evaluation against N (all-pairs, and cells per density, dashed
          with a rebuild per step; neighbour lists dash-dotted), and the break-even N against the
          density.
All-pairs is density-independent (every pair is evaluated); where it was measured at the
density in question, that measurement is used, else the density-0.8 series.
"""
import argparse
import json
import math
import sys


def load(path):
    with open(path) as f:
        docs = json.load(f)
    pairs = {}  # density -> {n: seconds}
    cells = {}  # density -> {n: (seconds, build seconds, pairs examined)}
    lists = {}  # the same for neighbour lists (build: the grid and the lists)
    device = None
    for d in docs:
        if not d.get("results"):
            continue
        r = d["results"][0]
        device = device or d.get("device")
        density = round(float(d.get("density", 0.8)), 6)
        n = int(d["n"])
        algorithm = r.get("algorithm") or d.get("algorithm")
        if algorithm in ("cells", "neighbors"):
            target = cells if algorithm == "cells" else lists
            target.setdefault(density, {})[n] = (r["seconds_per_eval"], r.get("cell_build_seconds", 0.0),
                                                 r.get("pairs_examined"))
        else:
            pairs.setdefault(density, {})[n] = r["seconds_per_eval"]
    return pairs, cells, lists, device


def all_pairs_model(pairs, density):
    """seconds(n) for all-pairs: measured (this density's point, else the 0.8 series) inside the
    measured range, log-log interpolation between points, c n^2 beyond the largest."""
    series = dict(pairs.get(0.8) or next(iter(pairs.values())))
    for n, s in pairs.get(density, {}).items():
        series[n] = s
    ns = sorted(series)
    top = ns[-2:] if len(ns) >= 2 else ns
    c = sum(series[n] / n ** 2 for n in top) / len(top)

    def seconds(n):
        if n in series:
            return series[n], False
        if ns[0] < n < ns[-1]:
            lo = max(m for m in ns if m < n)
            hi = min(m for m in ns if m > n)
            t = math.log(n / lo) / math.log(hi / lo)
            return math.exp((1 - t) * math.log(series[lo]) + t * math.log(series[hi])), False
        if n > ns[-1]:
            return c * n * n, True
        return series[ns[0]] * (n / ns[0]) ** 2, True

    return seconds, ns[-1]


def break_even(ns, cell_seconds, pair_seconds):
    """The N where cell_seconds = pair_seconds, interpolated in log-log; with a verdict."""
    ratio = []
    extrapolated = []
    for n in ns:
        p, extra = pair_seconds(n)
        ratio.append(math.log(cell_seconds[n] / p))
        extrapolated.append(extra)
    if ratio[0] <= 0:
        return {"n": ns[0], "verdict": "below", "extrapolated": extrapolated[0]}
    for k in range(1, len(ns)):
        if ratio[k] <= 0:
            t = ratio[k - 1] / (ratio[k - 1] - ratio[k])
            n = math.exp((1 - t) * math.log(ns[k - 1]) + t * math.log(ns[k]))
            return {"n": round(n), "verdict": "crossing",
                    "extrapolated": extrapolated[k] or extrapolated[k - 1]}
    return {"n": ns[-1], "verdict": "above", "extrapolated": extrapolated[-1]}


def measured(series):
    """seconds(n) of a measured series, for break_even's second argument (never extrapolated)."""
    return lambda n: (series[n], False)


def analyse(pairs, cells, lists):
    out = []
    for density in sorted(cells):
        series = cells[density]
        ns = sorted(series)
        pair_seconds, largest_pairs = all_pairs_model(pairs, density)
        force = {n: series[n][0] for n in ns}
        with_build = {n: series[n][0] + series[n][1] for n in ns}
        row = {"density": density,
               "force": break_even(ns, force, pair_seconds),
               "force_and_rebuild": break_even(ns, with_build, pair_seconds),
               "speedup_at_largest_n": {"n": ns[-1],
                                        "all_pairs_over_cells": pair_seconds(ns[-1])[0] / force[ns[-1]],
                                        "all_pairs_extrapolated": pair_seconds(ns[-1])[1]},
               "cells": [{"n": n, "seconds_per_eval": series[n][0], "cell_build_seconds": series[n][1],
                          "pairs_examined_per_particle": (series[n][2] / n if series[n][2] else None),
                          "all_pairs_seconds": pair_seconds(n)[0],
                          "all_pairs_extrapolated": pair_seconds(n)[1]} for n in ns],
               "all_pairs_measured_up_to": largest_pairs}
        nb = lists.get(density)
        if nb:
            nb_ns = sorted(nb)
            nb_force = {n: nb[n][0] for n in nb_ns}
            nb_build = {n: nb[n][0] + nb[n][1] for n in nb_ns}
            row["neighbors_force"] = break_even(nb_ns, nb_force, pair_seconds)
            row["neighbors_force_and_rebuild"] = break_even(nb_ns, nb_build, pair_seconds)
            common = [n for n in nb_ns if n in force]
            if common:
                row["neighbors_vs_cells_force"] = break_even(common, nb_force, measured(force))
            row["neighbors"] = [{"n": n, "seconds_per_eval": nb[n][0], "list_build_seconds": nb[n][1],
                                 "pairs_examined_per_particle": (nb[n][2] / n if nb[n][2] else None)}
                                for n in nb_ns]
        out.append(row)
    return out


def plot(pairs, cells, lists, rows, device, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.2))
    base = pairs.get(0.8) or next(iter(pairs.values()))
    ns = sorted(base)
    left.loglog(ns, [base[n] for n in ns], "k-o", lw=2, label="all-pairs (any density)")
    all_n = sorted({n for s in cells.values() for n in s})
    if all_n and all_n[-1] > ns[-1]:
        c = base[ns[-1]] / ns[-1] ** 2
        extra = [n for n in all_n if n >= ns[-1]]
        left.loglog(extra, [c * n * n for n in extra], "k:", lw=1.5, label="all-pairs, c N² beyond")
    colors = plt.cm.viridis([i / max(1, len(cells) - 1) for i in range(len(cells))])
    for color, density in zip(colors, sorted(cells)):
        s = cells[density]
        n_list = sorted(s)
        left.loglog(n_list, [s[n][0] for n in n_list], "-s", color=color, ms=4,
                    label=f"cells, ρ = {density:g}")
        left.loglog(n_list, [s[n][0] + s[n][1] for n in n_list], "--", color=color, lw=1)
        if density in lists:
            t = lists[density]
            t_list = sorted(t)
            left.loglog(t_list, [t[n][0] for n in t_list], "-.^", color=color, ms=4, lw=1,
                        label=f"neighbour lists, ρ = {density:g}")
    left.set_xlabel("N")
    left.set_ylabel("seconds per evaluation")
    left.set_title("lj, rc = 2.5; dashed: cells + one rebuild per step; dash-dot: lists kept")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)

    for key, style, label in (("force", "o-", "cells vs all-pairs"),
                              ("force_and_rebuild", "s--", "cells + a rebuild every step vs all-pairs"),
                              ("neighbors_force", "^-.", "lists kept vs all-pairs"),
                              ("neighbors_force_and_rebuild", "d-.", "lists + a build every step vs all-pairs"),
                              ("neighbors_vs_cells_force", "v:", "lists kept vs cells")):
        xs, ys, marks = [], [], []
        for row in rows:
            if key not in row:
                continue
            xs.append(row["density"])
            ys.append(row[key]["n"])
            marks.append(row[key]["verdict"])
        right.semilogy(xs, ys, style, label=label)
        for x, y, m in zip(xs, ys, marks):
            if m != "crossing":
                right.annotate("≤" if m == "below" else "≥", (x, y), textcoords="offset points",
                               xytext=(4, 4), fontsize=9)
    right.set_xlabel("density ρ (σ⁻³)")
    right.set_ylabel("break-even N (the first loop faster above)")
    right.set_title("break-even N against density (≤: below the smallest N measured)")
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8)
    fig.suptitle(f"cell lists{' and neighbour lists' if lists else ''} vs all-pairs on {device}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw")
    parser.add_argument("-o", "--output")
    parser.add_argument("--json")
    args = parser.parse_args()
    pairs, cells, lists, device = load(args.raw)
    if not pairs or not cells:
        sys.exit("plot_breakeven.py: need both all-pairs and cells results")
    rows = analyse(pairs, cells, lists)
    document = {"device": device, "kernel": "lj", "cutoff": 2.5,
                "note": "break-even N: cells (neighbors_*: neighbour lists) faster above it; verdict "
                        "below/above: outside the N measured; extrapolated: all-pairs taken as c N^2 "
                        "there",
                "densities": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(document, f, indent=1)
    for row in rows:
        f, r = row["force"], row["force_and_rebuild"]
        print(f"density {row['density']:g}: break-even N {f['verdict']} {f['n']}"
              f"{' (extrapolated)' if f['extrapolated'] else ''}; with a rebuild per step "
              f"{r['verdict']} {r['n']}; all-pairs/cells at N = {row['speedup_at_largest_n']['n']}: "
              f"{row['speedup_at_largest_n']['all_pairs_over_cells']:.1f}")
        if "neighbors_force" in row:
            nf, nc = row["neighbors_force"], row.get("neighbors_vs_cells_force", {})
            print(f"  neighbour lists: break-even against all-pairs {nf['verdict']} {nf['n']}; "
                  f"against cells {nc.get('verdict')} {nc.get('n')}")
    if args.output:
        try:
            plot(pairs, cells, lists, rows, device, args.output)
        except ImportError:
            print("plot_breakeven.py: matplotlib is missing (apt-get install python3-matplotlib); "
                  "no PNG written", file=sys.stderr)


if __name__ == "__main__":
    main()
