#!/usr/bin/env bash
# The GRAPE-6 engine's block step with the context's queue profiled and not (issue #16's device
# timing; libsapporo creates its context without profiling): bench_g6_block at nj = 65,536 for
# ref and float, --device-timing on and off interleaved, then the rates at ni = npipes unprofiled.
#   bench/run_gpu_g6_timing.sh BUILD OUT [ROUNDS]
set -euo pipefail
build=$1
out=$2
rounds=${3:-2}
mkdir -p "$out"
export FORCEKIT_CACHE_DIR=$build/cache FORCEKIT_TUNING_DB=off
for round in $(seq 1 "$rounds"); do
    for accum in ref float; do
        for timing in on off; do
            "$build/bench/bench_g6_block" --device gpu --accum "$accum" --device-timing "$timing" \
                --ni 1,16,64,256 --nj '' --seconds 0.5 > "$out/block_${accum}_${timing}_r$round.json"
        done
    done
done
"$build/bench/bench_g6_block" --device gpu --accum ref --device-timing off --ni 256 \
    --nj 65536,262144,1048576 --seconds 0.5 > "$out/rates_ref_off.json"
python3 - "$out" <<'PY'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    d = json.load(open(path))
    steps = " ".join(f'ni{b["ni"]}={b["seconds"]*1e6:.1f}' for b in d["block_steps"])
    rates = " ".join(f'nj{r["nj"]}={r["ratio_to_gaj"]:.2f}' for r in d["rates"])
    print(os.path.basename(path)[:-5].ljust(20), steps, rates)
PY
tar -C "$out" -czf "$out.tar.gz" .
