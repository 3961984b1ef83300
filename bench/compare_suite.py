#!/usr/bin/env python3
"""Compares two bench/suite.sh output folders (before, after) run by run and variant by variant.

    bench/compare_suite.py BEFORE_DIR AFTER_DIR [--threshold 0.03] [--json OUT]

Each result is matched by its file name (kernel, accumulator, algorithm, N) and its variant (unroll,
work-group size, tiling, lanes); the ratio is after / before of the best (minimum) seconds per
evaluation, which is the least disturbed by other work on the machine. Repeated runs of one item
(NAME.json, NAME.r2.json, ... as bench/ab.sh writes them) count as one, with the best of them. Prints a table of every
variant slower than the threshold and a JSON summary (worst ratio, median ratio, counts); exits 1
when a variant is slower by more than the threshold, so a script can gate on it. Variants present
on one side only are listed, not failed (a refactor may change which variants a device runs).
"""
import argparse
import glob
import json
import os
import statistics
import sys


def load(folder):
    runs = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        try:
            with open(path) as handle:
                document = json.load(handle)
        except (OSError, ValueError):
            continue
        if not isinstance(document, dict) or "results" not in document:
            continue
        for result in document["results"]:
            name = os.path.basename(path)
            stem, _, rest = name.partition(".r")
            if rest and rest[:-len(".json")].isdigit():
                name = stem + ".json"
            key = (name, result.get("unroll"), result.get("work_group_size"),
                   result.get("local_tiling"), result.get("lanes", 0))
            seconds = result.get("min_seconds") or result.get("seconds_per_eval")
            if seconds and (key not in runs or seconds < runs[key][0]):
                runs[key] = (seconds, document.get("device", "?"))
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--threshold", type=float, default=0.03)
    parser.add_argument("--json", help="also write the summary here")
    args = parser.parse_args()
    before, after = load(args.before), load(args.after)
    if not before or not after:
        print("compare_suite: no results in %s" % (args.before if not before else args.after),
              file=sys.stderr)
        return 2
    common = sorted(set(before) & set(after))
    ratios = []
    slower = []
    for key in common:
        ratio = after[key][0] / before[key][0]
        ratios.append(ratio)
        if ratio > 1 + args.threshold:
            slower.append((ratio, key))
    slower.sort(reverse=True)
    for ratio, key in slower:
        print("slower %5.1f%%  %s unroll %s wg %s tiling %s lanes %s" %
              (100 * (ratio - 1), key[0], key[1], key[2], key[3], key[4]))
    only_before = sorted(set(before) - set(after))
    only_after = sorted(set(after) - set(before))
    for key in only_before:
        print("only before: %s %s" % (key[0], key[1:]))
    for key in only_after:
        print("only after: %s %s" % (key[0], key[1:]))
    worst = max(ratios) if ratios else None
    worst_key = max(common, key=lambda k: after[k][0] / before[k][0]) if common else None
    summary = {
        "before": args.before,
        "after": args.after,
        "device_before": sorted({v[1] for v in before.values()}),
        "device_after": sorted({v[1] for v in after.values()}),
        "compared": len(common),
        "threshold": args.threshold,
        "slower_than_threshold": len(slower),
        "worst_ratio": worst,
        "worst": list(worst_key) if worst_key else None,
        "median_ratio": statistics.median(ratios) if ratios else None,
        "best_ratio": min(ratios) if ratios else None,
        "only_before": len(only_before),
        "only_after": len(only_after),
    }
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        with open(args.json + ".tmp", "w") as handle:
            handle.write(text + "\n")
        os.replace(args.json + ".tmp", args.json)
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
