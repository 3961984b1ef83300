#!/usr/bin/env python3
"""Merges tuning databases into the shipped one (README "Autotuning"):
    scripts/merge_tuning.py data/tuning/shipped.json OUT/tuning.json [MORE.json ...]
Entries of the later files replace those of the first with the same keys (type, vendor,
architecture, device, kernel, accum, algorithm, n; no algorithm is all-pairs), as `forcekit tune`
itself does; the others are kept.
`source` is set to the merged file's path where an entry has none, so each entry says where its
numbers come from."""
import json
import sys

LEVELS = ("type", "vendor", "architecture", "device")


def key(entry):
    # the loop is part of the key: a symmetric entry must not replace an all-pairs one
    return tuple(entry.get(k) or "default" for k in LEVELS) + (
        entry["kernel"], entry["accum"], entry.get("algorithm") or "all-pairs", entry["n"])


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    with open(argv[1]) as f:
        shipped = json.load(f)
    for path in argv[2:]:
        with open(path) as f:
            new = json.load(f)["entries"]
        for entry in new:
            if entry.get("source") in (None, "forcekit tune"):
                entry["source"] = path
        replaced = {key(e) for e in new}
        shipped["entries"] = [e for e in shipped["entries"] if key(e) not in replaced] + new
    shipped["entries"].sort(key=lambda e: tuple(str(x) for x in key(e)[:7]) + (e["n"],))
    with open(argv[1] + ".tmp", "w") as f:
        json.dump(shipped, f, indent=2)
        f.write("\n")
    import os
    os.replace(argv[1] + ".tmp", argv[1])


if __name__ == "__main__":
    main(sys.argv)
