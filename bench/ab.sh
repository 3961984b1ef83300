#!/usr/bin/env bash
# An interleaved before/after benchmark of two builds on one device: each item runs
# before, after, after, before (so drift and other load fall on both sides alike), and
# bench/compare_suite.py compares the best of each side variant by variant.
#
#   bench/ab.sh BEFORE_FORCEKIT AFTER_FORCEKIT DEVICE OUTDIR [--gpu]
#
# The items are a reduced form of bench/suite.sh --quick (its sizes on a CPU take about 10 minutes
# per build): the unroll variants of ga, lj and ljc_constant, the symmetric and cell-list loops,
# and the accumulators that run a bound pre-pass, at one N (4,096 on a CPU, 262,144 on a GPU).
# OUTDIR/before and OUTDIR/after hold the JSON (named as the suite names its runs);
# OUTDIR/compare.json the summary. Exit status: compare_suite's (1: a variant is > 3% slower).
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: bench/ab.sh BEFORE_FORCEKIT AFTER_FORCEKIT DEVICE OUTDIR [--gpu]" >&2; exit 2; }
BEFORE=$1 AFTER=$2 DEVICE=$3 OUT=$4
GPU=0
[ "${5:-}" = --gpu ] && GPU=1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export FORCEKIT_TUNING_DB=off
mkdir -p "$OUT/before" "$OUT/after"
if [ $GPU = 1 ]; then N=262144 NC=262144 REPS=5 UNROLLS=all; else N=4096 NC=8192 REPS=5 UNROLLS="1x1 1x4 2x4 4x4 auto"; fi

items=()
for kernel in ga lj ljc_constant; do
    for v in $UNROLLS; do
        items+=("variants_${kernel}_n${N}_${v}|--kernel $kernel --n $N --unroll $v")
    done
done
items+=("algorithm_ga_symmetric_n${N}|--kernel ga --n $N --algorithm symmetric")
items+=("algorithm_lj_symmetric_n${N}|--kernel lj --n $N --algorithm symmetric")
items+=("algorithm_lj_cells_n${NC}|--kernel lj --n $NC --algorithm cells")
items+=("algorithm_ljc_constant_cells_n${NC}|--kernel ljc_constant --n $NC --algorithm cells --cutoff 2.5")
for accum in fixed64 narumi double; do
    items+=("accum_ga_${accum}_n${N}|--kernel ga --n $N --accum $accum")
done

one() { # side binary name args
    local side=$1 binary=$2 name=$3 suffix=$4
    shift 4
    # shellcheck disable=SC2086
    if "$binary" bench $* --reps "$REPS" --device "$DEVICE" --json >"$OUT/$side/.$name.tmp" 2>>"$OUT/ab.log"; then
        mv "$OUT/$side/.$name.tmp" "$OUT/$side/$name$suffix.json"
    else
        rm -f "$OUT/$side/.$name.tmp"
        echo "FAILED: $side $name" | tee -a "$OUT/ab.log"
    fi
}
for item in "${items[@]}"; do
    name=${item%%|*}
    args=${item#*|}
    one before "$BEFORE" "$name" "" $args
    one after "$AFTER" "$name" "" $args
    one after "$AFTER" "$name" ".r2" $args
    one before "$BEFORE" "$name" ".r2" $args
    echo "ab: $name done" >>"$OUT/ab.log"
done
python3 "$ROOT/bench/compare_suite.py" "$OUT/before" "$OUT/after" --json "$OUT/compare.json"
