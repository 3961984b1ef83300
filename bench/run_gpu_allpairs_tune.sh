#!/usr/bin/env bash
# All pairs at small N on a GPU (issue #16's "all pairs at most 0.6x OpenMM"): tunes ljc_constant
# (float) for the all-pairs and symmetric loops at N = 4,096 and 16,384, and the symmetric loop at
# 65,536 and 262,144 (so that the nearest-bucket lookup keeps large N on their own shapes), into
# OUT/tuning.json; merges it into a copy of the shipped database (OUT/shipped.json,
# scripts/merge_tuning.py) and times the step (bench --step, unprofiled queue) with the shipped
# database as it is and with the merged one.
#   bench/run_gpu_allpairs_tune.sh BUILD OUT [BUDGET_SECONDS] [ACCUM] [LOOPS]
# ACCUM (default float) tunes and times another accumulator (fixed64 with --scale keep, the MD
# setting); LOOPS (default "all-pairs symmetric") limits the loops tuned and timed.
set -euo pipefail
build=$1
out=$2
budget=${3:-70}
accum=${4:-float}
loops=${5:-all-pairs symmetric}
step_scale=()
[ "$accum" = fixed64 ] && step_scale=(--scale keep)
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export FORCEKIT_DEVICE=${FORCEKIT_DEVICE:-gpu} FORCEKIT_CACHE_DIR=$build/cache
fk=$build/forcekit
db=$out/tuning.json
tune() { # loop n
    case " $loops " in *" $1 "*) ;; *) return 0 ;; esac
    FORCEKIT_TUNING_DB=$db "$fk" tune --kernel ljc_constant --accum "$accum" --algorithm "$1" \
        --n "$2" --budget "$budget" --json > "$out/tune_${1/-/}_n$2.json"
}
for n in 4096 16384; do
    tune all-pairs "$n"
    tune symmetric "$n"
done
tune symmetric 65536
tune symmetric 262144
cp "$root/data/tuning/shipped.json" "$out/shipped.json"
python3 "$root/scripts/merge_tuning.py" "$out/shipped.json" "$db"
for n in 4096 16384 65536 262144; do
    for loop in $loops; do
        [ "$n" = 262144 ] && [ "$loop" = all-pairs ] && continue
        for which in shipped merged; do
            shipped=$root/data/tuning/shipped.json
            [ "$which" = merged ] && shipped=$out/shipped.json
            reps=300
            [ "$n" -ge 65536 ] && reps=50
            FORCEKIT_TUNING_DB=off FORCEKIT_SHIPPED_TUNING_DB=$shipped "$fk" bench --step --json \
                --kernel ljc_constant --accum "$accum" "${step_scale[@]}" --algorithm "$loop" \
                --n "$n" --reps "$reps" \
                > "$out/step_${loop/-/}_${which}_n$n.json"
        done
    done
done
python3 - "$out" <<'PY'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "step_*.json"))):
    d = json.load(open(path))
    r = {x["mode"]: x for x in d["results"]}["pinned"]
    print(os.path.basename(path)[:-5].ljust(32), f'pinned {r["wall_seconds_median"]*1e6:8.1f} us',
          f'device {r["device_seconds_median"]*1e6:8.1f} us')
for e in json.load(open(os.path.join(sys.argv[1], "tuning.json")))["entries"]:
    print(e.get("algorithm", "all-pairs"), e["n"], e["unroll"], e["work_group_size"], e.get("j_splits"),
          e["seconds_per_eval"], e.get("untuned_seconds_per_eval"))
PY
tar -C "$out" -czf "$out.tar.gz" .
