#!/usr/bin/env bash
# What the exact accumulators cost against float (issue #36, item 2), run on the GPU machine:
#   bench/run_gpu_accum_cost.sh OUT [DEVICE]
# 1. checks on the device: test_laws ref_typed_double (ref double on typed systems) and
#    test_precision (fixed64's zero offset and bit-identity across j-splits) -> checks.txt;
# 2. device event time per evaluation (forcekit bench, median of REPS) of float, double, fixed64,
#    narumi and ref on ga all-pairs at N = GA_N (default 262,144) -> ga_<accum>.json, and on the
#    MD workload (ljc_constant, density 0.8, rc 2.5, periodic, neighbour lists, the library's
#    list choice) at N = MD_N (default 262,144) -> md_<accum>.json;
# 3. the error/time table of forcekit accuracy with double-single positions on Narumi's typed
#    systems (lj65536 at LJ_N, default 65,536, and the protein), --max-error 1e-12 ->
#    accuracy_{lj65536,protein}_ds.json;
# 4. a summary on standard output and in OUT/summary.json: per workload and accumulator the
#    median seconds and the ratio to float;
# 5. on NVIDIA, the instructions per pair of ga's all-pairs loop for each accumulator, from the PTX
#    the program cache holds (bench/ptx_pair_count.py; SASS too where ptxas and nvdisasm are on
#    the PATH) -> ptx/ and ptx_counts.json.
# Environment: BUILD (an existing build directory with forcekit; else one is made), GA_N, MD_N,
# LJ_N, REPS (default 30), ACCURACY (0: skip step 3), CHECKS (0: skip step 1), ACCUMS (default
# "float double fixed64 narumi ref"), CACHE (the program cache, default BUILD/cache).
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 OUT [DEVICE]" >&2
    exit 2
fi
out=$1
device=${2:-gpu}
ga_n=${GA_N:-262144}
md_n=${MD_N:-262144}
lj_n=${LJ_N:-65536}
reps=${REPS:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$(mktemp -d "${TMPDIR:-/tmp}/forcekit-accum-cost.XXXXXX")}
mkdir -p "$out"
if [ ! -x "$build/forcekit" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFORCEKIT_BUILD_TESTS=ON \
        > "$out/configure.log"
    cmake --build "$build" -j"$(nproc)" > "$out/build.log"
fi
cache=${CACHE:-$build/cache}
export FORCEKIT_DEVICE=$device FORCEKIT_CACHE_DIR=$cache FORCEKIT_TUNING_DB=off
fk=$build/forcekit
if [ "${CHECKS:-1}" != 0 ]; then
{
    if [ -x "$build/tests/test_laws" ]; then
        "$build/tests/test_laws" ref_typed_double || echo "test_laws ref_typed_double FAILED"
        "$build/tests/test_precision" || echo "test_precision FAILED"
    else
        echo "tests not built (configure with -DFORCEKIT_BUILD_TESTS=ON)"
    fi
} > "$out/checks.txt" 2>&1
grep FAILED "$out/checks.txt" >&2 || true
fi
# shellcheck source=bench/lattice.sh
. "$root/bench/lattice.sh" # box N: the lattice's periodic box at density 0.8
accums=${ACCUMS:-float double fixed64 narumi ref}
for accum in $accums; do
    "$fk" bench --json --kernel ga --n "$ga_n" --accum "$accum" --reps "$reps" \
        > "$out/ga_${accum}.json" || echo "ga $accum failed" >&2
    "$fk" bench --json --kernel ljc_constant --n "$md_n" --accum "$accum" --algorithm neighbors \
        --cutoff 2.5 --box "$(box "$md_n")" --reps "$reps" \
        > "$out/md_${accum}.json" || echo "md $accum failed" >&2
done
if [ "${ACCURACY:-1}" != 0 ]; then
"$fk" accuracy --json --system lj65536 --n "$lj_n" --positions ds --accum float,double,fixed64,narumi,ref \
    --reps 5 --max-error 1e-12 > "$out/accuracy_lj65536_ds.json" || echo "accuracy lj65536 failed" >&2
"$fk" accuracy --json --system protein --positions ds --accum float,double,fixed64,narumi,ref \
    --reps 5 --max-error 1e-12 > "$out/accuracy_protein_ds.json" || echo "accuracy protein failed" >&2
fi
python3 "$root/bench/ptx_pair_count.py" "$cache" "$out/ptx" > "$out/ptx_counts.json" ||
    echo "ptx_pair_count failed" >&2
"$fk" devices --json > "$out/devices.json"
python3 - "$out" $accums << 'EOF'
import json, os, sys
out, accums = sys.argv[1], sys.argv[2:]
summary = {}
for workload in ("ga", "md"):
    rows = {}
    for accum in accums:
        path = os.path.join(out, f"{workload}_{accum}.json")
        try:
            with open(path) as f:
                d = json.load(f)
            r = d["results"][0]
            rows[accum] = {"seconds_per_eval": r["seconds_per_eval"], "n": d["n"],
                           "device": d["device"], "algorithm": r.get("algorithm"),
                           "unroll": r.get("unroll"), "timing": r.get("timing")}
        except (OSError, ValueError, KeyError, IndexError) as e:
            rows[accum] = {"error": str(e)}
    base = rows.get("float", {}).get("seconds_per_eval")
    for row in rows.values():
        if base and "seconds_per_eval" in row:
            row["relative_to_float"] = row["seconds_per_eval"] / base
    summary[workload] = rows
for name in ("lj65536", "protein"):
    try:
        with open(os.path.join(out, f"accuracy_{name}_ds.json")) as f:
            d = json.load(f)
        summary[f"accuracy_{name}_ds"] = {
            "cheapest_within_1e-12": d.get("cheapest"),
            "results": [{k: r.get(k) for k in ("accum", "error", "error_host", "offset",
                                                "seconds_per_eval", "relative_time")}
                        for r in d["results"]]}
    except (OSError, ValueError, KeyError) as e:
        summary[f"accuracy_{name}_ds"] = {"error": str(e)}
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=1)
json.dump(summary, sys.stdout, indent=1)
print()
EOF
