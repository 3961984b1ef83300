#!/usr/bin/env bash
# Break-even of cell lists and neighbour lists against all-pairs (van Meel et al., Fig. 4), lj at
# rc = 2.5:
#   bench/breakeven.sh DEVICE OUT_DIR
# DEVICE is a forcekit device selector (cpu, gpu, 0:0, ...). The forcekit binary is $FORCEKIT,
# else build/forcekit of this checkout. Writes to OUT_DIR:
#   breakeven_raw.jsonl  every `forcekit bench --json` document, one a line, as it comes
#                        (a run cut short still leaves what it measured)
#   breakeven_raw.json   the same as one JSON list
#   cells_variants.json  GPUs only: the cell loop's work-group size x tiling x unrolling at
#                        N = 262,144, densities 0.8 and 0.2 (to choose the GPU default)
#   breakeven.json, breakeven.png  from scripts/plot_breakeven.py (the PNG needs matplotlib)
#   devices.json
# The plot runs with $PYTHON (default python3; the system one has python3-matplotlib).
# Grid: N = 64 .. 32,768 on CPUs, 256 .. 1,048,576 on GPUs (powers of 2), densities 0.1 0.2
# 0.4 0.6 0.8 1.0 for cells. All-pairs does the same work at every density (every pair is
# evaluated, those beyond the cutoff included), so it runs at density 0.8 over the whole N range,
# and at every density at one N (4,096 on CPUs, 65,536 on GPUs) to show that; it stops growing N
# once one evaluation takes more than $MAX_ALL_PAIRS_SECONDS (default 2), and the plot
# extrapolates it as c N^2. Override the grid with NS="...", DENSITIES="...", REPS=R, and the
# short-range loops with LOOPS="..." (default "cells neighbors"; neighbors with the device's
# default lists, its build time reported like the cells').
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 DEVICE OUT_DIR" >&2
    exit 2
fi
device=$1 out=$2
here=$(cd "$(dirname "$0")/.." && pwd)
fk=${FORCEKIT:-$here/build/forcekit}
if [ ! -x "$fk" ]; then
    echo "$0: no forcekit binary at $fk (set FORCEKIT)" >&2
    exit 2
fi
mkdir -p "$out"
raw="$out/breakeven_raw.jsonl"
: > "$raw"

bench() { # bench ARGS...: one bench document, appended to $raw as one line; prints seconds/eval
    local doc
    doc=$("$fk" bench --device "$device" --kernel lj --json "$@") || {
        echo "$0: forcekit bench $* failed" >&2
        return 1
    }
    printf '%s\n' "$doc" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' >> "$raw"
    printf '%s\n' "$doc" | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["seconds_per_eval"])'
}

type=$("$fk" bench --device "$device" --kernel lj --n 64 --reps 1 --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["device_type"])')
if [ "$type" = gpu ]; then
    default_ns="256 512 1024 2048 4096 8192 16384 32768 65536 131072 262144 524288 1048576"
    default_reps=10
    density_check_n=65536
else
    default_ns="64 128 256 512 1024 2048 4096 8192 16384 32768"
    default_reps=5
    density_check_n=4096
fi
ns=${NS:-$default_ns}
densities=${DENSITIES:-"0.1 0.2 0.4 0.6 0.8 1.0"}
reps=${REPS:-$default_reps}
max_all_pairs=${MAX_ALL_PAIRS_SECONDS:-2}
echo "device $device ($type), N: $ns, densities: $densities, $reps reps" >&2

for n in $ns; do
    s=$(bench --algorithm all-pairs --n "$n" --density 0.8 --reps "$reps")
    echo "all-pairs N=$n: $s s" >&2
    if python3 -c "import sys; sys.exit(0 if float('$s') > $max_all_pairs else 1)"; then
        echo "all-pairs: $s s per evaluation at N = $n; larger N are extrapolated" >&2
        break
    fi
done
for density in $densities; do
    [ "$density" = 0.8 ] || bench --algorithm all-pairs --n "$density_check_n" --density "$density" --reps "$reps" > /dev/null
done
for loop in ${LOOPS:-cells neighbors}; do
    for density in $densities; do
        for n in $ns; do
            s=$(bench --algorithm "$loop" --n "$n" --density "$density" --reps "$reps")
            echo "$loop density $density N=$n: $s s" >&2
        done
    done
done

python3 - "$raw" "$out/breakeven_raw.json" <<'PY'
import json, sys
docs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
json.dump(docs, open(sys.argv[2], "w"), indent=1)
PY

if [ "$type" = gpu ]; then
    : > "$out/cells_variants.jsonl"
    for density in 0.8 0.2; do
        for wg in 32 64 128; do
            for tiling in on off; do
                for unroll in 1x1 2x1 4x1; do
                    "$fk" bench --device "$device" --kernel lj --json --algorithm cells --n 262144 \
                        --density "$density" --reps "$reps" --wg "$wg" --tiling "$tiling" \
                        --unroll "$unroll" |
                        python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' \
                            >> "$out/cells_variants.jsonl" || true
                done
            done
        done
    done
    python3 -c 'import json,sys; json.dump([json.loads(l) for l in open(sys.argv[1]) if l.strip()], open(sys.argv[2], "w"), indent=1)' \
        "$out/cells_variants.jsonl" "$out/cells_variants.json"
    rm -f "$out/cells_variants.jsonl"
fi
"$fk" devices --json > "$out/devices.json"
"${PYTHON:-python3}" "$here/scripts/plot_breakeven.py" "$out/breakeven_raw.json" -o "$out/breakeven.png" \
    --json "$out/breakeven.json"
rm -f "$raw"
