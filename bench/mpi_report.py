#!/usr/bin/env python3
"""Summarizes the JSON documents of bench/run_gpu_mpi.sh: per case and rank count, the median
step, the pair rate, the speedup and parallel efficiency against one rank, whether the forces'
checksum equals one rank's, and each rank's compute, communication and wait share of the steps.

    bench/mpi_report.py DIR [--json]     (--json: the table as one JSON document)
"""
import glob
import json
import os
import re
import sys


def load(directory):
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        match = re.match(r"(.+)_(gpus|shared)(\d+)\.json$", os.path.basename(path))
        if not match:
            continue
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue  # a failed run: its .err says why
        runs.append({"case": match.group(1), "mode": match.group(2), "ranks": int(match.group(3)), "doc": doc})
    return runs


def summarize(runs):
    rows = []
    base = {r["case"]: r["doc"] for r in runs if r["ranks"] == 1}
    for r in sorted(runs, key=lambda r: (r["case"], r["mode"] != "gpus", r["ranks"])):
        doc, p = r["doc"], r["ranks"]
        step = doc["median_step_seconds"]
        one = base.get(r["case"])
        mpi = doc.get("mpi", {})
        steps = max(mpi.get("steps", 1), 1)
        per_rank = []
        for entry in mpi.get("per_rank", []):
            total = steps * step
            per_rank.append({
                "rank": entry["rank"],
                "device": entry.get("device", ""),
                "compute_share": entry["compute_seconds"] / total,
                "communication_share": entry["communication_seconds"] / total,
                "wait_share": entry["wait_seconds"] / total,
                "pairs_per_step": entry["pairs"] / steps,
            })
        rows.append({
            "case": r["case"],
            "mode": r["mode"],
            "ranks": p,
            "n": doc["n"],
            "device": doc["device"],
            "median_step_seconds": step,
            "min_step_seconds": doc["min_step_seconds"],
            "max_step_seconds": doc["max_step_seconds"],
            "interactions_per_second": doc["interactions_per_second"],
            "speedup": one["median_step_seconds"] / step if one else None,
            "efficiency": one["median_step_seconds"] / (p * step) if one else None,
            "checksum": doc["checksum"],
            "checksum_equals_one_rank": (doc["checksum"] == one["checksum"]) if one else None,
            "per_rank": per_rank,
        })
    return rows


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = summarize(load(sys.argv[1]))
    if "--json" in sys.argv[2:]:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return
    print(f"{'case':28s} {'mode':6s} {'P':>2s} {'step s':>10s} {'pairs/s':>10s} {'speedup':>7s} "
          f"{'eff':>5s} {'same bits':9s} {'compute':>7s} {'comm':>6s} {'wait':>6s}")
    for row in rows:
        ranks = row["per_rank"] or [{"compute_share": 0, "communication_share": 0, "wait_share": 0}]
        worst = max(ranks, key=lambda e: e["communication_share"] + e["wait_share"])
        speedup = f"{row['speedup']:.2f}" if row["speedup"] else "-"
        eff = f"{row['efficiency']:.2f}" if row["efficiency"] else "-"
        same = {True: "yes", False: "NO", None: "-"}[row["checksum_equals_one_rank"]]
        print(f"{row['case']:28s} {row['mode']:6s} {row['ranks']:2d} {row['median_step_seconds']:10.5f} "
              f"{row['interactions_per_second']:10.3e} {speedup:>7s} {eff:>5s} {same:9s} "
              f"{worst['compute_share']:7.2f} {worst['communication_share']:6.3f} {worst['wait_share']:6.3f}")


if __name__ == "__main__":
    main()
