#!/usr/bin/env python3
"""Summarize bench/run_cpu_md.sh's raw JSON: OUT_DIR/cpu_md.json and OUT_DIR/summary.md.

Per (N, law, program): the per-run median seconds per evaluation (compute + forces read back) of
every repetition, their median, and the smallest min and largest max of the runs. Ratios are
forcekit's faster loop (by median of medians) over each OpenMM platform, taken per repetition
(the programs of one repetition ran back to back, under the same load) and summarized by their
median; the ratio of the two medians of medians, which may pair different repetitions, is kept as
ratio_of_medians, for OpenMM computing
forcekit's law exactly (CustomNonbondedForce) and with its native NonbondedForce (its fastest form,
not the same forces), against issue #17's targets: <= 0.5 x OpenMM OpenCL, <= 1.0 x OpenMM CPU.
"""
import glob
import json
import os
import re
import statistics
import sys

TARGETS = {"OpenCL": 0.5, "CPU": 1.0}


def main(out):
    runs = {}  # (n, law, program) -> list of (median, min, max)
    meta = {}
    for path in sorted(glob.glob(os.path.join(out, "raw", "*.json"))):
        name = os.path.basename(path)
        m = re.match(r"(forcekit|openmm_(CPU|OpenCL)_(exact|native))_n(\d+)_(\w+?)_rep(\d+)\.json", name)
        if not m:
            continue
        n, law = int(m.group(4)), m.group(5)
        with open(path) as f:
            text = f.read()
        # OpenMM's OpenCL platform prints a warning about POCL on stdout before the document
        doc = json.loads(text[text.index("{"):])
        if m.group(1) == "forcekit":
            meta.setdefault("forcekit_device", doc.get("device"))
            meta.setdefault("forcekit_platform", doc.get("platform"))
            meta.setdefault("forcekit_driver", doc.get("driver_version"))
            for loop in doc["loops"]:
                key = (n, law, "forcekit " + loop["algorithm"])
                runs.setdefault(key, []).append(
                    (loop["eval_readback_seconds_median"], loop["eval_readback_seconds_min"],
                     loop["eval_readback_seconds_max"]))
                step_key = (n, law, "forcekit " + loop["algorithm"] + " (MD step)")
                runs.setdefault(step_key, []).append(
                    (loop["seconds_per_step"], loop["seconds_per_step"], loop["seconds_per_step"]))
        else:
            meta.setdefault("openmm_version", doc.get("openmm_version"))
            if doc.get("DeviceName"):
                meta.setdefault("openmm_opencl_device", doc.get("DeviceName"))
            if doc.get("Threads"):
                meta.setdefault("openmm_cpu_threads", doc.get("Threads"))
            key = (n, law, "OpenMM %s %s" % (m.group(2), m.group(3)))
            runs.setdefault(key, []).append(
                (doc["seconds_per_eval_median"], doc["seconds_per_eval_min"],
                 doc["seconds_per_eval_max"]))
    table = []
    for (n, law, program), values in sorted(runs.items()):
        medians = [v[0] for v in values]
        table.append({"n": n, "law": law, "program": program, "repetitions": len(values),
                      "median_of_run_medians": statistics.median(medians),
                      "run_medians": medians,
                      "min": min(v[1] for v in values), "max": max(v[2] for v in values)})
    by = {(r["n"], r["law"], r["program"]): r for r in table}
    ratios = []
    for n, law in sorted({(r["n"], r["law"]) for r in table}):
        loops = [p for p in ("forcekit neighbors", "forcekit cells") if (n, law, p) in by]
        if not loops:
            continue
        best = min(loops, key=lambda p: by[(n, law, p)]["median_of_run_medians"])
        fk = by[(n, law, best)]["median_of_run_medians"]
        for platform in ("CPU", "OpenCL"):
            for form in ("exact", "native"):
                key = (n, law, "OpenMM %s %s" % (platform, form))
                if key not in by:
                    continue
                om = by[key]["median_of_run_medians"]
                # per repetition (interleaved: the same load), and their median
                per_rep = [a / b for a, b in zip(by[(n, law, best)]["run_medians"],
                                                  by[key]["run_medians"])]
                ratio = statistics.median(per_rep)
                ratios.append({"n": n, "law": law, "forcekit_loop": best.split()[1],
                               "openmm": "%s %s" % (platform, form),
                               "forcekit_seconds": fk, "openmm_seconds": om,
                               "ratio_forcekit_over_openmm": ratio,
                               "ratio_of_medians": fk / om,
                               "ratio_by_repetition": per_rep,
                               "target": TARGETS[platform], "met": ratio <= TARGETS[platform]})
    machine = {}
    path = os.path.join(out, "machine.txt")
    if os.path.exists(path):
        for line in open(path):
            if ":" in line:
                k, v = line.split(":", 1)
                machine[k.strip()] = v.strip()
    doc = {"program": "bench/run_cpu_md.sh", "machine": machine, "meta": meta,
           "workload": "LJ fluid (forcekit generate --model lj-fluid), density 0.8, rc 2.5, "
                       "periodic cube, float; a short NVE warm-up, then evaluations at fixed "
                       "positions, each compute + forces read back (forcekit: fk_eval_compute + "
                       "fk_eval_read_forces; OpenMM: context.getState(Forces))",
           "results": table, "ratios": ratios}
    with open(os.path.join(out, "cpu_md.json"), "w") as f:
        json.dump(doc, f, indent=1)
    lines = ["# forcekit against OpenMM on the MD workload (CPU)", "",
             "Seconds per evaluation with the forces read back; median of the per-run medians "
             "over the repetitions, with the smallest and largest single evaluation.", "",
             "| N | law | program | median s | min s | max s | run medians |",
             "|---|---|---|---|---|---|---|"]
    for r in table:
        lines.append("| %d | %s | %s | %.4g | %.4g | %.4g | %s |" % (
            r["n"], r["law"], r["program"], r["median_of_run_medians"], r["min"], r["max"],
            ", ".join("%.4g" % v for v in r["run_medians"])))
    lines += ["", "Ratios: forcekit's faster loop over OpenMM, per repetition and their median "
              "(targets: <= 0.5 x OpenCL, <= 1.0 x CPU; 'exact' = OpenMM computing forcekit's "
              "force-shifted law, 'native' = OpenMM's NonbondedForce cutoff form).", "",
              "| N | law | forcekit loop | OpenMM | forcekit / OpenMM | per repetition | target | met |",
              "|---|---|---|---|---|---|---|---|"]
    for r in ratios:
        q = r["ratio_forcekit_over_openmm"]
        faster = "OpenMM %.2fx faster" % q if q >= 1 else "forcekit %.2fx faster" % (1 / q)
        lines.append("| %d | %s | %s | %s | %.2f (%s) | %s | %.1f | %s |" % (
            r["n"], r["law"], r["forcekit_loop"], r["openmm"], q, faster, ", ".join("%.2f" % v for v in r["ratio_by_repetition"]),
            r["target"], "yes" if r["met"] else "no"))
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
