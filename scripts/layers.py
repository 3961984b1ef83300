#!/usr/bin/env python3
"""The layers of src/, checked from the compiled objects (issue #35).

Every .c file under src/ belongs to a folder, and every folder to a layer (LAYERS below, lowest
first). From `nm` of each file's object this draws who calls whom (a file that leaves a symbol
undefined calls the file that defines it) and checks two rules:

1. No cycle of files that call each other (a strongly connected set of two or more files).
2. No call from a lower layer up into a higher one, except the few listed in ALLOWED_UP, each
   with the reason it is there.

Calls are what matter here, not includes: a header may declare what a higher layer defines (the
internal headers are shared), but an object that calls up is a real dependency.

Usage: scripts/layers.py BUILD_DIR [--graph]
  BUILD_DIR  a configured and built tree (the objects under BUILD_DIR/**/CMakeFiles/*.dir/src/)
  --graph    also print the folder-level call graph (for docs/architecture.md)
Exit status 0 when both rules hold, 1 when one fails (each violation named), 2 on bad usage.
"""
import collections
import os
import subprocess
import sys

# Lowest first. A folder may call folders of its own layer or of lower ones.
LAYERS = [
    ("common", ["src/common"]),
    ("devices", ["src/core/devices"]),
    ("programs", ["src/core/programs"]),
    ("probes", ["src/core/probes"]),
    ("laws and accumulators", ["src/core/laws", "src/core/accum"]),
    ("tuning database", ["src/core/tuning_db"]),
    ("loops", ["src/core/loops"]),
    ("evaluation", ["src/core/eval"]),
    ("integration, tuning, sources", ["src/core/integrate", "src/core/tune", "src/core/sources"]),
    ("context", ["src/core/context"]),
    ("tools", ["src/tools"]),
    ("support", ["src/support"]),
    ("GRAPE-6 and MPI", ["src/sapporo", "src/mpi"]),
    ("command", ["src/cli"]),
]

# (caller file, callee file): why this call goes up. Keep it short; each entry is a debt.
ALLOWED_UP = {
}


def folder_of(path):
    return os.path.dirname(path)


def rank_of(folder):
    for rank, (_, folders) in enumerate(LAYERS):
        if folder in folders:
            return rank
    return None


def objects(build, repo):
    """source path (relative to repo) -> object path, for the sources that exist now."""
    found = {}
    for root, _, files in os.walk(build):
        if "CMakeFiles" not in root:
            continue
        for name in files:
            if not name.endswith(".c.o"):
                continue
            full = os.path.join(root, name)
            rel = full.split(".dir/", 1)[-1][: -len(".o")]
            if rel.startswith("src/") and os.path.isfile(os.path.join(repo, rel)):
                old = found.get(rel)
                if old is None or os.path.getmtime(full) > os.path.getmtime(old):
                    found[rel] = full
    return found


def symbols(obj):
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRC":  # global text, data, bss, read-only, common
            defined.add(name)
    return defined, undefined


def strongly_connected(nodes, edges):
    index, low, stack, on_stack, result, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            result.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return result


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    build = argv[1]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    objs = objects(build, repo)
    if not objs:
        print(f"layers: no objects of src/ under {build}: build it first", file=sys.stderr)
        return 2
    definer, needs = {}, {}
    for src, obj in objs.items():
        defined, undefined = symbols(obj)
        needs[src] = undefined
        for name in defined:
            definer.setdefault(name, src)
    edges = collections.defaultdict(set)
    why = collections.defaultdict(set)
    for src, undefined in needs.items():
        for name in undefined:
            callee = definer.get(name)
            if callee and callee != src:
                edges[src].add(callee)
                why[(src, callee)].add(name)
    failures = []
    unknown = sorted({folder_of(s) for s in objs if rank_of(folder_of(s)) is None})
    for folder in unknown:
        failures.append(f"folder {folder} is in no layer (scripts/layers.py LAYERS)")
    for group in strongly_connected(objs.keys(), edges):
        if len(group) > 1:
            failures.append("cycle of files calling each other: " + ", ".join(group))
    for caller in sorted(edges):
        for callee in sorted(edges[caller]):
            rc, re_ = rank_of(folder_of(caller)), rank_of(folder_of(callee))
            if rc is None or re_ is None or re_ <= rc:
                continue
            if (caller, callee) in ALLOWED_UP:
                continue
            names = ", ".join(sorted(why[(caller, callee)])[:4])
            failures.append(f"{caller} calls up into {callee} ({names})")
    if "--graph" in argv:
        folder_edges = collections.defaultdict(set)
        for caller, callees in edges.items():
            for callee in callees:
                if folder_of(caller) != folder_of(callee):
                    folder_edges[folder_of(caller)].add(folder_of(callee))
        for rank, (layer, folders) in reversed(list(enumerate(LAYERS))):
            for folder in folders:
                targets = sorted(folder_edges.get(folder, ()), key=lambda f: -(rank_of(f) or 0))
                print(f"{layer:30} {folder:22} -> {', '.join(t[4:] for t in targets)}")
    for line in failures:
        print("layers: " + line)
    print(f"layers: {len(objs)} files, {sum(len(v) for v in edges.values())} calls between files, "
          f"{len(failures)} violation(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
