#!/usr/bin/env bash
# The MD step with the state on each rank's device (issue #33 item 5): builds with MPI, then runs
# `mpirun -np P forcekit simulate --json` (the device path: fk_mpi_integrator) on an LJ fluid
# (density 0.8, rc 2.5, neighbour lists with skin 0.3, Verlet, dt 0.005), float and
# --reproducible (fixed64), for P = 1, 2, 4, each rank on its own GPU (chosen by local rank).
# The step's cost is simulate's seconds_per_step.median_interval: the median over the intervals
# between energy samples (10 per run) of the stepping alone. One JSON per run under OUT, and
# OUT/summary.json (printed too): per case and P the median step, speedup and parallel
# efficiency against P = 1, whether --reproducible's state_checksum equals P = 1's, the
# redistributions and each rank's particles and compute / communication / wait seconds.
#   bench/run_gpu_mpi_md.sh OUT SET [SECONDS]
# SET: gpu    N = 4,194,304 (200 steps) and 16,777,216 (100 steps);
#      tiny   N = 32,000 and 64,000 (a check of this script on any machine: every rank on the
#             one device when there is no GPU).
# STEPS: override the steps of every run. BUILD: the build folder, kept (default: a fresh one,
# removed at the end). SECONDS: no run starts after this many seconds from the start (default
# 540), and each run is given what is left.
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: bench/run_gpu_mpi_md.sh OUT SET [SECONDS]" >&2
    exit 2
fi
out=$1
set_name=$2
budget=${3:-540}
case $set_name in
gpu) sizes="4194304:200 16777216:100" ;;
tiny) sizes="32000:60 64000:40" ;;
*)
    echo "unknown set $set_name (gpu or tiny)" >&2
    exit 2
    ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$(mktemp -d "${TMPDIR:-/tmp}/forcekit-mpi-md.XXXXXX")}
mkdir -p "$out" "$build"
start=$SECONDS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 FORCEKIT_CACHE_DIR=$build/cache
{
    date -u +%FT%TZ
    nvidia-smi -L 2>&1
    nvidia-smi topo -m 2>&1
    mpirun --version 2>&1 | head -1
    nproc
    git -C "$root" log --oneline -1 2>&1
} > "$out/machine.txt"
if [ ! -x "$build/forcekit" ] || [ -z "${BUILD:-}" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFORCEKIT_MPI=ON \
        > "$out/configure.log" 2>&1 || { echo "configure failed (configure.log)" >&2; exit 1; }
    cmake --build "$build" -j"$(nproc)" > "$out/build.log" 2>&1 ||
        { echo "build failed (build.log)" >&2; exit 1; }
fi
fk=$build/forcekit
[ -e "$build/libforcekit_mpi.so" ] || { echo "MPI was not found: no libforcekit_mpi" >&2; exit 1; }
"$fk" devices >> "$out/machine.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -ge 1 ] || gpus=4 # a CPU check: every P shares the one device

# run NAME P STEPS ARGS...: one mpirun of simulate, given the time that is left.
run() {
    local name=$1 ranks=$2 steps=$3
    shift 3
    local left=$((budget - (SECONDS - start)))
    if [ "$left" -lt 20 ]; then
        echo "skipped $name (out of time)" >> "$out/skipped.txt"
        return
    fi
    local sample=$((steps / 10 > 0 ? steps / 10 : 1))
    timeout -k 5 "$left" mpirun -np "$ranks" --bind-to none --oversubscribe \
        "$fk" simulate --json --kernel lj --system lj-fluid --density 0.8 --cutoff 2.5 \
        --algorithm neighbors --skin 0.3 --integrator verlet --dt 0.005 --steps "$steps" \
        --sample "$sample" "$@" > "$out/$name.json" 2> "$out/$name.err" ||
        echo "FAILED $name (rc $?)" >> "$out/skipped.txt"
}

for size in $sizes; do
    n=${size%:*}
    steps=${STEPS:-${size#*:}}
    for accum in float reproducible; do
        args=(--accum float)
        [ "$accum" = reproducible ] && args=(--reproducible)
        for p in 1 2 4; do
            [ "$p" -le "$gpus" ] || [ "$p" = 1 ] || continue
            run "lj_neighbors_${accum}_n${n}_ranks$p" "$p" "$steps" --n "$n" "${args[@]}"
        done
    done
done

python3 - "$out" <<'EOF_REPORT' | tee "$out/summary.json"
import glob, json, os, re, sys
directory = sys.argv[1]
runs = {}
for path in sorted(glob.glob(os.path.join(directory, "lj_*_ranks*.json"))):
    match = re.match(r"(.+)_ranks(\d+)\.json$", os.path.basename(path))
    try:
        with open(path) as f:
            runs[(match.group(1), int(match.group(2)))] = json.load(f)
    except (OSError, ValueError):
        pass  # a failed run: its .err says why
rows = []
for (case, p), doc in sorted(runs.items()):
    step = doc["seconds_per_step"]["median_interval"]
    one = runs.get((case, 1))
    base = one["seconds_per_step"]["median_interval"] if one else None
    mpi = doc.get("mpi", {})
    speedup = base / step if base and step else None
    rows.append({
        "case": case, "ranks": p, "n": doc["n"], "steps": doc["steps"],
        "integrate": doc["integrate"], "median_step_seconds": step,
        "intervals": doc["seconds_per_step"]["intervals"],
        "total_step_seconds": doc["seconds_per_step"]["total"],
        "speedup": speedup, "efficiency": speedup / p if speedup else None,
        "state_checksum": doc["state_checksum"],
        "same_bits_as_one_rank": (doc["state_checksum"] == one["state_checksum"]) if one else None,
        "redistributions": mpi.get("redistributions"), "rebuilds": mpi.get("rebuilds"),
        "relative_energy_drift": doc["relative_energy_drift"],
        "per_rank": [{k: r[k] for k in ("rank", "device", "particles", "compute_seconds",
                                        "communication_seconds", "wait_seconds")}
                     for r in mpi.get("per_rank", [])],
    })
print(json.dumps({"runs": rows}, indent=1))
EOF_REPORT
[ -n "${BUILD:-}" ] || rm -rf "$build"
