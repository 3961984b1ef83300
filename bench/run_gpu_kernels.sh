#!/usr/bin/env bash
# GPU measurements for the force-law and precision issues, run on the GPU machine:
#   bench/run_gpu_kernels.sh BUILD_DIR OUT_DIR
# 1. every kernel at N = 65,536 with float and double (bench_kernels_n65536.json)
# 2. every accumulator for ga and ljc_constant at N = 65,536 (bench_accums_n65536.json)
# 3. accuracy of ga on a Plummer sphere with every accumulator (accuracy_ga_plummer65536.json)
# 4. --reproducible checksums of ga and ljc_constant on the GPU and on POCL in the same run
#    (reproducible_checksums.json)
set -euo pipefail
build=$1 out=$2
fk="$build/forcekit"
gpu=${FORCEKIT_GPU:-gpu}
# JSON documents printed one after another -> one JSON list.
collect() {
    python3 -c 'import json,sys
dec=json.JSONDecoder(); s=sys.stdin.read(); docs=[]; i=0
while True:
    while i < len(s) and s[i].isspace(): i += 1
    if i >= len(s): break
    d, i = dec.raw_decode(s, i); docs.append(d)
json.dump(docs, sys.stdout, indent=1)'
}
for kernel in ga gaj ljc_constant ljc_linear ljc_sigmoidal lj buck; do
    for accum in float double; do
        "$fk" bench --device "$gpu" --kernel "$kernel" --accum "$accum" --n 65536 --reps 10 --json
    done
done | collect > "$out/bench_kernels_n65536.json"
for kernel in ga ljc_constant; do
    for accum in float double ti nitadori nitadori_large narumi ref composite fixed64; do
        "$fk" bench --device "$gpu" --kernel "$kernel" --accum "$accum" --n 65536 --reps 10 --json
    done
done | collect > "$out/bench_accums_n65536.json"
"$fk" accuracy --device "$gpu" --kernel ga --system plummer --n 65536 --accum all --json \
    > "$out/accuracy_ga_plummer65536.json"

# Reproducible mode: the same input on both devices must give the same checksum.
python3 - "$out" <<'PY'
import random, sys
out = sys.argv[1]
random.seed(48)
with open(out + "/repro_ga.txt", "w") as f:
    for _ in range(20000):
        f.write("%r %r %r %r\n" % (random.uniform(-1, 1), random.uniform(-1, 1), random.uniform(-1, 1), 1.0 / 20000))
with open(out + "/repro_ljc.txt", "w") as f:
    side, spacing = 22, (1 / 0.8) ** (1 / 3)
    for i in range(side ** 3):
        x, y, z = i % side, (i // side) % side, i // side ** 2
        f.write("%r %r %r %r 0\n" % ((x + random.uniform(-0.1, 0.1)) * spacing,
                                    (y + random.uniform(-0.1, 0.1)) * spacing,
                                    (z + random.uniform(-0.1, 0.1)) * spacing, 0.5 if i % 2 else -0.5))
PY
for device in "$gpu" cpu; do
    "$fk" forces --device "$device" --kernel ga --eps 0.01 --in "$out/repro_ga.txt" --reproducible \
        --out "$out/repro_ga_$device.out" --json
    "$fk" forces --device "$device" --kernel ljc_constant --in "$out/repro_ljc.txt" --reproducible \
        --out "$out/repro_ljc_$device.out" --json
done | collect > "$out/reproducible_checksums.json"
rm -f "$out"/repro_*.txt "$out"/repro_*.out
"$fk" devices --json > "$out/devices.json"
