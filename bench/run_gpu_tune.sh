#!/usr/bin/env bash
# The tuning runs the shipped database still needs from a GPU (README "Autotuning"):
#   bench/run_gpu_tune.sh BUILD_DIR OUT_DIR [BUDGET_SECONDS_PER_RUN]
# Each run tunes every N bucket of one kernel and accumulator and writes OUT_DIR/tuning.json (the
# database to merge: scripts/merge_tuning.py data/tuning/shipped.json OUT_DIR/tuning.json) and
# OUT_DIR/tune_<kernel>_<accum>.json (what was tried; copy it to results/<date>_<device>/). Kernels or accumulators this build does not know are skipped, so the script can run
# before the force-law and precision issues have landed.
set -euo pipefail
build=$1 out=$2 budget=${3:-900}
mkdir -p "$out"
export FORCEKIT_DEVICE=${FORCEKIT_DEVICE:-gpu}
export FORCEKIT_TUNING_DB="$out/tuning.json"
export FORCEKIT_SHIPPED_TUNING_DB=off # untuned = the built-in default, not an older entry
fk="$build/forcekit"
for kernel in ga gaj ljc_constant lj; do
    for accum in float double fixed64; do
        if ! "$fk" bench --kernel "$kernel" --accum "$accum" --n 64 --reps 1 --json >/dev/null 2>&1; then
            echo "skipping $kernel/$accum: not in this build" >&2
            continue
        fi
        "$fk" tune --kernel "$kernel" --accum "$accum" --budget "$budget" --json \
            > "$out/tune_${kernel}_${accum}.json"
    done
done
"$fk" devices --json > "$out/devices.json"
