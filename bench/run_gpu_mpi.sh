#!/usr/bin/env bash
# The MPI layer on GPUs (issues #20 and #21): builds with MPI, then times the distributed
# evaluation with `mpirun -np P forcekit bench --json` (docs/mpi.md): each rank its own GPU
# (chosen by local rank), or every rank on the first GPU (the shared-GPU overhead runs).
# One JSON per run under OUT, a summary table on standard output and OUT.tar.gz.
#   bench/run_gpu_mpi.sh OUT SET [SECONDS]
# SET: small  ga at N = 1,048,576 and the MD workload (lj, cells, density 0.8, rc 2.5,
#             periodic) at N = 4,194,304, float and fixed64, on 1, 2 and 4 GPUs, and P = 2, 4
#             ranks sharing one GPU;
#      large  ga at N = 4,194,304 and the MD workload at N = 16,777,216 on 1, 2 and 4 GPUs;
#      all    the GPU runs of both, without the shared ones, the most wanted first (ga fixed64 at
#             4M last, widest first, one step each);
#      final  ga at 1M (float, fixed64) on 1, 2, 4 GPUs, then the md set;
#      md     the MD workload alone at both N, float and fixed64, and sharing at 4M float;
#      tiny   the same cases at small N (a check of this script on any machine).
# BUILD: the build folder, kept (default: a fresh one, removed at the end).
# SHARED_DEVICE: the device of the shared runs (default gpu: the first GPU).
# SECONDS: no run starts after this many seconds from the start (default 540), and each run is
# given what is left, so the device tool's command limit is never the one that stops it.
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: bench/run_gpu_mpi.sh OUT SET [SECONDS]" >&2
    exit 2
fi
out=$1
set_name=$2
budget=${3:-540}
case $set_name in
small | large | all | final | md | tiny) ;;
*)
    echo "unknown set $set_name (small, large, all, final, md or tiny)" >&2
    exit 2
    ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$(mktemp -d "${TMPDIR:-/tmp}/forcekit-mpi.XXXXXX")}
mkdir -p "$out"
start=$SECONDS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 FORCEKIT_CACHE_DIR=$build/cache

{
    date -u +%FT%TZ
    nvidia-smi -L 2>&1
    nvidia-smi topo -m 2>&1
    mpirun --version 2>&1 | head -1
    nproc
} > "$out/machine.txt"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFORCEKIT_MPI=ON > "$out/configure.log" 2>&1 ||
    { echo "configure failed (configure.log)" >&2; exit 1; }
cmake --build "$build" -j"$(nproc)" > "$out/build.log" 2>&1 || { echo "build failed (build.log)" >&2; exit 1; }
fk=$build/forcekit
if [ ! -e "$build/libforcekit_mpi.so" ]; then
    { echo "MPI was not found: no libforcekit_mpi"; command -v mpicc mpirun; ls /usr/lib/x86_64-linux-gnu/openmpi/include 2>&1 | head -3; } >&2
    exit 1
fi
"$fk" devices >> "$out/machine.txt" 2>&1
# GPUs to spread over (without nvidia-smi: a CPU check, where every P shares the one device)
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -ge 1 ] || gpus=4
shared_device=${SHARED_DEVICE:-gpu} # what the shared runs select (FORCEKIT_DEVICE)

# shellcheck source=bench/lattice.sh
. "$root/bench/lattice.sh" # box N: the lattice's periodic box at density 0.8

# run NAME P SHARED REPS ARGS...: one mpirun; SHARED=1 puts every rank on the first GPU.
run() {
    local name=$1 ranks=$2 shared=$3 reps=$4
    shift 4
    local left=$((budget - (SECONDS - start)))
    if [ "$left" -lt 20 ]; then
        echo "skipped $name (out of time)" >> "$out/skipped.txt"
        return
    fi
    local env=()
    [ "$shared" = 1 ] && env=(env FORCEKIT_DEVICE="$shared_device")
    "${env[@]}" timeout -k 5 "$left" mpirun -np "$ranks" --bind-to none --oversubscribe \
        "$fk" bench --json --reps "$reps" "$@" > "$out/$name.json" 2> "$out/$name.err" ||
        echo "FAILED $name (rc $?)" >> "$out/skipped.txt"
}

# case KERNEL-ARGS...: 1, 2, 4 GPUs (as many as there are; ORDER="4 2 1" runs the widest
# first), then sharing when asked
scaling() {
    local tag=$1 reps=$2 share=$3
    shift 3
    for p in ${ORDER:-1 2 4}; do
        [ "$p" -le "$gpus" ] || [ "$p" = 1 ] || continue
        run "${tag}_gpus${p}" "$p" 0 "$reps" "$@"
    done
    if [ "$share" = 1 ]; then
        for p in 2 4; do run "${tag}_shared${p}" "$p" 1 "$reps" "$@"; done
    fi
}

md() { # the MD workload at N
    echo --kernel lj --algorithm cells --cutoff 2.5 --box "$(box "$1")" --n "$1"
}

case $set_name in
small)
    scaling ga_float_n1048576 5 1 --kernel ga --accum float --n 1048576
    scaling ga_fixed64_n1048576 3 1 --kernel ga --accum fixed64 --n 1048576
    # shellcheck disable=SC2046
    scaling lj_cells_float_n4194304 5 1 $(md 4194304) --accum float
    # shellcheck disable=SC2046
    scaling lj_cells_fixed64_n4194304 5 0 $(md 4194304) --accum fixed64
    ;;
large)
    # shellcheck disable=SC2046
    scaling lj_cells_float_n16777216 3 0 $(md 16777216) --accum float
    scaling ga_float_n4194304 2 0 --kernel ga --accum float --n 4194304
    # shellcheck disable=SC2046
    scaling lj_cells_fixed64_n16777216 3 0 $(md 16777216) --accum fixed64
    scaling ga_fixed64_n4194304 2 0 --kernel ga --accum fixed64 --n 4194304
    ;;
all)
    # both sets' GPU runs in one call, the most wanted first, without the shared runs
    scaling ga_float_n1048576 5 0 --kernel ga --accum float --n 1048576
    # shellcheck disable=SC2046
    scaling lj_cells_float_n16777216 3 0 $(md 16777216) --accum float
    scaling ga_fixed64_n1048576 3 0 --kernel ga --accum fixed64 --n 1048576
    # shellcheck disable=SC2046
    scaling lj_cells_fixed64_n16777216 3 0 $(md 16777216) --accum fixed64
    # shellcheck disable=SC2046
    scaling lj_cells_float_n4194304 5 0 $(md 4194304) --accum float
    # shellcheck disable=SC2046
    scaling lj_cells_fixed64_n4194304 5 0 $(md 4194304) --accum fixed64
    scaling ga_float_n4194304 2 0 --kernel ga --accum float --n 4194304
    ORDER="4 2 1" scaling ga_fixed64_n4194304 1 0 --kernel ga --accum fixed64 --n 4194304
    ;;
final)
    # ga at 1M on 1, 2, 4 GPUs, then the md set
    scaling ga_float_n1048576 5 0 --kernel ga --accum float --n 1048576
    scaling ga_fixed64_n1048576 3 0 --kernel ga --accum fixed64 --n 1048576
    ;&
md)
    # the MD workload alone: 1, 2, 4 GPUs at both N, and 2, 4 ranks sharing one GPU at 4M
    for n in 4194304 16777216; do
        reps=5
        [ "$n" -gt 5000000 ] && reps=3
        for accum in float fixed64; do
            share=0
            [ "$n" = 4194304 ] && [ "$accum" = float ] && share=1
            # shellcheck disable=SC2046
            scaling "lj_cells_${accum}_n$n" "$reps" "$share" $(md "$n") --accum "$accum"
        done
    done
    ;;
tiny)
    scaling ga_float_n8192 3 1 --kernel ga --accum float --n 8192
    scaling ga_fixed64_n8192 3 1 --kernel ga --accum fixed64 --n 8192
    # shellcheck disable=SC2046
    scaling lj_cells_fixed64_n32768 3 1 $(md 32768) --accum fixed64
    ;;
esac

python3 "$root/bench/mpi_report.py" "$out" | tee "$out/summary.txt"
[ -n "${BUILD:-}" ] || rm -rf "$build"
tar -C "$out" -czf "$out.tar.gz" . # the device tool brings back a few files: one archive
