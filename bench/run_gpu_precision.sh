#!/usr/bin/env bash
# Narumi et al.'s precision systems on the GPU, run on the GPU machine:
#   bench/run_gpu_precision.sh BUILD_DIR OUT_DIR
# 1. lj65536 (System 2, 65,536 LJ particles of 16 random types), every accumulator, with ljc_constant
#    and with lj (no cutoff in effect): accuracy_{ljc_constant,lj}_lj65536.json
# 2. the protein (System 1 analogue, 3,339 atoms), every accumulator, each in both exclusion modes
#    (Narumi sec. 4.1), with ljc_constant (LJ + Coulomb) and with lj (van der Waals only, as Narumi
#    evaluated): accuracy_{ljc_constant,lj}_protein.json
# 3. rand48 on the GPU against the host, 10^7 values of each kind: rand48_gpu.json
# The host reference of lj65536 is O(N^2) in double on one core (about a minute per run).
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR" >&2
    exit 2
fi
build=$1 out=$2
fk="$build/forcekit"
gpu=${FORCEKIT_GPU:-gpu}
mkdir -p "$out"
for kernel in ljc_constant lj; do
    "$fk" accuracy --device "$gpu" --kernel "$kernel" --system lj65536 --accum all --reps 5 --json \
        > "$out/accuracy_${kernel}_lj65536.json"
    "$fk" accuracy --device "$gpu" --kernel "$kernel" --system protein --accum all --reps 5 --json \
        > "$out/accuracy_${kernel}_protein.json"
done

# rand48: the device's leapfrogged streams must print glibc's sequence, which --host computes.
count=10000000
for kind in int float; do
    flag=""
    [ "$kind" = float ] && flag="--float"
    start=$(python3 -c 'import time; print(time.time())')
    "$fk" rand48 --device "$gpu" --seed 20260521 --count "$count" $flag > "$out/rand48_gpu.txt"
    end=$(python3 -c 'import time; print(time.time())')
    "$fk" rand48 --host --seed 20260521 --count "$count" $flag > "$out/rand48_host.txt"
    if cmp -s "$out/rand48_gpu.txt" "$out/rand48_host.txt"; then same=true; else same=false; fi
    echo "{\"kind\": \"$kind\", \"count\": $count, \"identical\": $same, \"wall_seconds\": $(python3 -c "print($end - $start)")}"
    rm -f "$out/rand48_gpu.txt" "$out/rand48_host.txt"
done | python3 -c 'import json, sys; json.dump([json.loads(l) for l in sys.stdin], sys.stdout, indent=1)' \
    > "$out/rand48_gpu.json"
"$fk" devices --json > "$out/devices.json"
if python3 -c 'import matplotlib' 2>/dev/null; then
    python3 "$(dirname "$0")/../scripts/plot_accuracy.py" "$out/accuracy_ljc_constant_protein.json" \
        "$out/accuracy_lj_protein.json" -o "$out/accuracy_protein.png" || true
fi
