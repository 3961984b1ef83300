#!/usr/bin/env bash
# The foundation issue's GPU measurements, as run on the GPU machine (see README "Measured"):
#   bench/run_gpu_foundation.sh BUILD_DIR OUT_DIR
# Driver-side kernel caches are switched off for bench so that "cold" is a real compile.
set -euo pipefail
build=$1 out=$2
export FORCEKIT_DEVICE=${FORCEKIT_DEVICE:-gpu}
fk="$build/forcekit"
CUDA_CACHE_DISABLE=1 POCL_KERNEL_CACHE=0 "$fk" bench --kernel ga --n 262144 --unroll all --reps 10 --json > "$out/bench_ga_n262144_float.json"
CUDA_CACHE_DISABLE=1 POCL_KERNEL_CACHE=0 "$fk" bench --kernel ga --n 262144 --unroll all --accum double --reps 10 --json > "$out/bench_ga_n262144_double.json"
# The default (auto) variant across N, with the automatic j-split for small N.
for n in 1024 4096 16384 65536 262144 1048576; do
    "$fk" bench --kernel ga --n "$n" --reps 10 --json
done | python3 -c 'import json,sys; dec=json.JSONDecoder(); s=sys.stdin.read(); docs=[]; i=0
while i < len(s):
    while i < len(s) and s[i].isspace(): i += 1
    if i >= len(s): break
    d, i = dec.raw_decode(s, i); docs.append(d)
json.dump(docs, sys.stdout, indent=1)' > "$out/bench_ga_default_by_n.json"
CUDA_CACHE_DISABLE=1 "$build/bench/bench_startup" 4096 > "$out/startup.json"
"$fk" accuracy --kernel ga --system plummer --n 16384 --accum all --json > "$out/accuracy_ga_plummer16384.json"
"$fk" devices --json > "$out/devices.json"
