#!/usr/bin/env bash
# A/B on a GPU of the update's round trips (update_positions on the device: the cell grid's check
# and the conversion's verdict in one round trip): builds the tree as it is and with PATCH
# reversed, then bench --step (pinned mode) for the MD workload's neighbour lists and cells at
# N = 65,536, 262,144 and 1,048,576, the two builds interleaved, ROUNDS rounds.
#   bench/run_gpu_fold_ab.sh PATCH OUT [ROUNDS]
set -euo pipefail
patch_file=$(realpath "$1")
out=$2
rounds=${3:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
before=$(mktemp -d)
cp -r "$root/." "$before/src-tree"
(cd "$before/src-tree" && patch -s -R -p1 < "$patch_file")
for which in after before; do
    tree=$root
    [ "$which" = before ] && tree=$before/src-tree
    cmake -S "$tree" -B "$before/build-$which" -DCMAKE_BUILD_TYPE=Release > /dev/null
    cmake --build "$before/build-$which" -j"$(nproc)" > /dev/null
done
export FORCEKIT_DEVICE=${FORCEKIT_DEVICE:-gpu} FORCEKIT_TUNING_DB=off
# shellcheck source=bench/lattice.sh
. "$root/bench/lattice.sh"
for round in $(seq 1 "$rounds"); do
    for n in 65536 262144 1048576; do
        reps=200
        [ "$n" -ge 262144 ] && reps=50
        for loop in neighbors cells; do
            for which in after before; do
                tree=$root
                [ "$which" = before ] && tree=$before/src-tree
                FORCEKIT_KERNEL_DIR=$tree/cl FORCEKIT_CACHE_DIR=$before/cache-$which \
                    "$before/build-$which/forcekit" bench --step --json --kernel ljc_constant \
                    --n "$n" --algorithm "$loop" --cutoff 2.5 --box "$(box "$n")" --reps "$reps" \
                    > "$out/step_${loop}_n${n}_${which}_r$round.json"
            done
        done
    done
done
python3 - "$out" <<'PY'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "step_*.json"))):
    d = json.load(open(path))
    r = {x["mode"]: x for x in d["results"]}["pinned"]
    print(os.path.basename(path)[5:-5].ljust(34), f'pinned {r["wall_seconds_median"]*1e6:8.1f} us',
          f'update {r["update_seconds_median"]*1e6:7.1f} us', f'device {r["device_seconds_median"]*1e6:7.1f} us')
PY
tar -C "$out" -czf "$out.tar.gz" .
