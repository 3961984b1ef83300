#!/usr/bin/env bash
# The benchmark suite: kernels x unroll variants x N, all-pairs against symmetric, the cost of each
# accumulator, and (CPU) the C + OpenMP baseline, one JSON document per run in OUTDIR. Plot with
# scripts/plot_bench.py OUTDIR.
#
#   bench/suite.sh DEVICE OUTDIR [--quick]
#
# DEVICE is a forcekit device selector (cpu, gpu, 0:1, a name substring). GPUs get N = 1,024 ..
# 1,048,576 in powers of 4 (1M for ga only), CPUs 1,024 .. 32,768 in powers of 2. --quick keeps
# the shape of every plot with fewer points: on a CPU about 10 minutes on 2 shared cores, on an
# H200 about 4 minutes. Each run's JSON is written to a temporary name and renamed, so a file in
# OUTDIR is always complete; failures and the wall time of each run go to OUTDIR/suite.log, and
# the suite goes on (a variant the device cannot run is reported inside its JSON under "skipped").
#
# Environment: BUILD (default: ./build of this repository) holds forcekit and
# bench/bench_baseline_omp; REPS overrides the repetitions; FORCEKIT_TUNING_DB is set to off so that
# "auto" means the built-in and shipped choices, not the user's own tuning.
set -euo pipefail

usage() {
    echo "usage: bench/suite.sh DEVICE OUTDIR [--quick]" >&2
    exit 2
}
[ $# -ge 2 ] || usage
DEVICE=$1
OUT=$2
QUICK=0
if [ $# -ge 3 ]; then
    [ "$3" = "--quick" ] || usage
    QUICK=1
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
FORCEKIT=$BUILD/forcekit
BASELINE=$BUILD/bench/bench_baseline_omp
[ -x "$FORCEKIT" ] || { echo "suite: $FORCEKIT not found (set BUILD)" >&2; exit 1; }
mkdir -p "$OUT"
LOG=$OUT/suite.log
export FORCEKIT_TUNING_DB=off

# The device type decides the sizes.
probe=$("$FORCEKIT" bench --kernel ga --n 256 --reps 1 --device "$DEVICE" --json) || {
    echo "suite: cannot run on device '$DEVICE'" >&2
    exit 1
}
TYPE=$(printf '%s' "$probe" | python3 -c 'import json, sys; print(json.load(sys.stdin)["device_type"])')
NAME=$(printf '%s' "$probe" | python3 -c 'import json, sys; print(json.load(sys.stdin)["device"])')
echo "suite: $NAME ($TYPE), quick=$QUICK, $(date -u +%FT%TZ)" | tee -a "$LOG"

ALL_VARIANTS="1x1 1x2 1x4 1x8 2x1 2x2 2x4 2x8 4x1 4x2 4x4 4x8 8x1 8x2 8x4 8x8"
ACCUMS="float double ti nitadori nitadori_large narumi ref composite fixed64"
REPS=${REPS:-$([ $QUICK = 1 ] && echo 2 || echo 3)}
if [ "$TYPE" = gpu ]; then
    KERNELS="ga ljc_constant lj"
    if [ $QUICK = 1 ]; then
        SIZES="4096 65536 262144"
    else
        SIZES="1024 4096 16384 65536 262144"
    fi
    GA_EXTRA=1048576             # 1M: ga only (seconds per evaluation elsewhere)
    VARIANTS=all                 # one run per (kernel, N): every variant
    ALGO_KERNELS="ga lj"
    ALGO_SIZES="$SIZES"
    ACCUM_N=65536
    SYM_N=262144
else
    KERNELS="ga ljc_constant lj"
    GA_EXTRA=""
    if [ $QUICK = 1 ]; then
        SIZES="1024 4096 16384"
        VARIANTS="1x1 1x4 2x4 4x1 4x4 8x1"
        ALGO_SIZES="1024 2048 4096 8192 16384 32768"
    else
        SIZES="1024 2048 4096 8192 16384 32768"
        VARIANTS=all
        ALGO_SIZES="$SIZES"
    fi
    ALGO_KERNELS="ga lj"
    ACCUM_N=4096
    SYM_N=8192
fi

# run NAME ARGS...: one `forcekit bench` into OUT/NAME.json.
run() {
    local name=$1
    shift
    local tmp="$OUT/.$name.json.tmp" start end
    start=$(date +%s.%N)
    if "$FORCEKIT" bench "$@" --device "$DEVICE" --json >"$tmp" 2>>"$LOG"; then
        mv "$tmp" "$OUT/$name.json"
        end=$(date +%s.%N)
        awk -v n="$name" -v a="$start" -v b="$end" 'BEGIN { printf "%-48s %7.1f s\n", n, b - a }' |
            tee -a "$LOG"
    else
        rm -f "$tmp"
        echo "FAILED: $name: forcekit bench $*" | tee -a "$LOG"
    fi
}

# 1. Unroll variants x N (interactions/s vs N per variant, Elsen et al. Fig. 1).
for kernel in $KERNELS; do
    sizes=$SIZES
    [ "$kernel" = ga ] && [ -n "$GA_EXTRA" ] && sizes="$sizes $GA_EXTRA"
    for n in $sizes; do
        reps=$REPS
        [ "$n" -ge 1048576 ] && reps=2
        if [ "$VARIANTS" = all ]; then
            run "variants_${kernel}_n${n}" --kernel "$kernel" --n "$n" --unroll all --reps "$reps"
        else
            for v in $VARIANTS; do
                run "variants_${kernel}_n${n}_${v}" --kernel "$kernel" --n "$n" --unroll "$v" \
                    --reps "$reps"
            done
        fi
    done
done

# 2. All-pairs against symmetric (each with its automatic variant) x N.
for kernel in $ALGO_KERNELS; do
    sizes=$ALGO_SIZES
    [ "$kernel" = ga ] && [ -n "$GA_EXTRA" ] && sizes="$sizes $GA_EXTRA"
    for n in $sizes; do
        [ "$kernel" != ga ] && [ $QUICK = 1 ] && [ "$n" -gt 16384 ] && [ "$TYPE" != gpu ] && continue
        reps=$REPS
        [ "$n" -ge 1048576 ] && reps=2
        for algorithm in all-pairs symmetric; do
            run "algorithm_${kernel}_${algorithm}_n${n}" --kernel "$kernel" --n "$n" \
                --algorithm "$algorithm" --reps "$reps"
        done
    done
done
# The symmetric loop's own variants at one N (float; fixed64 has device-specific limits).
if [ "$TYPE" = gpu ]; then
    run "symmetric_variants_ga_n${SYM_N}" --kernel ga --n "$SYM_N" --algorithm symmetric \
        --unroll all --reps "$REPS"
else
    for v in 1x1 2x1 2x2 4x1 4x2 4x4 8x1 8x2; do
        run "symmetric_variants_ga_n${SYM_N}_${v}" --kernel ga --n "$SYM_N" \
            --algorithm symmetric --unroll "$v" --reps "$REPS"
    done
fi

# 3. Accumulator cost relative to float (all-pairs, automatic variant).
for kernel in ga ljc_constant; do
    for accum in $ACCUMS; do
        run "accum_${kernel}_${accum}_n${ACCUM_N}" --kernel "$kernel" --n "$ACCUM_N" \
            --accum "$accum" --reps "$REPS"
    done
done

# 4. CPU: the C + OpenMP baseline on the same input, and the POCL knobs at N = 8,192.
if [ "$TYPE" != gpu ]; then
    if [ -x "$BASELINE" ]; then
        for n in $ALGO_SIZES; do
            tmp="$OUT/.baseline_ga_n${n}.json.tmp"
            if "$BASELINE" --n "$n" --reps "$REPS" >"$tmp" 2>>"$LOG"; then
                mv "$tmp" "$OUT/baseline_ga_n${n}.json"
                echo "baseline_ga_n${n}" | tee -a "$LOG"
            else
                rm -f "$tmp"
                echo "FAILED: baseline_ga_n${n}" | tee -a "$LOG"
            fi
        done
    else
        echo "suite: $BASELINE not built (OpenMP missing?): no baseline" | tee -a "$LOG"
    fi
    for wg in 16 32 64 128 256; do
        run "pocl_knobs_ga_n8192_4x1_wg${wg}" --kernel ga --n 8192 --unroll 4x1 --wg "$wg" \
            --reps "$REPS"
    done
    run "pocl_knobs_ga_n8192_4x1_tiling_off" --kernel ga --n 8192 --unroll 4x1 --tiling off \
        --reps "$REPS"
fi
echo "suite: done $(date -u +%FT%TZ)" | tee -a "$LOG"
