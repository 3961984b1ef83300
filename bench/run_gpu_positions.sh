#!/usr/bin/env bash
# Double-single positions in fk_eval (fk_eval_config.positions, issue #18) on the GPU machine:
#   bench/run_gpu_positions.sh BUILD_DIR OUT_DIR
# 1. accuracy: ga on a Plummer sphere (N = 16,384, eps 0.01) with ref, double, float and fixed64,
#    float and double-single positions: accuracy_ga_{float,ds}.json (Narumi's eq. 10 against the
#    host's double reference, ERR HOST, is the issue's measure: ref with ds must reach 1e-12), and
#    gaj the same: accuracy_gaj_{float,ds}.json;
# 2. cost: forcekit bench of ga (float, fixed64, ref) and gaj and ljc_constant (float) at
#    N = 65,536 and 262,144, float and double-single positions: bench_<kernel>_<accum>_<n>_<pos>.json,
#    and the step path (update, compute, read) of ga float at 1,048,576 with both:
#    step_ga_float_1048576_<pos>.json; summary.txt, one line per run.
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR" >&2
    exit 2
fi
build=$1 out=$2
fk="$build/forcekit"
gpu=${FORCEKIT_GPU:-gpu}
mkdir -p "$out"
for kernel in ga gaj; do
    for positions in float ds; do
        "$fk" accuracy --device "$gpu" --kernel "$kernel" --system plummer --n 16384 \
            --accum ref,double,float,fixed64 --reps 3 --positions "$positions" --json \
            > "$out/accuracy_${kernel}_${positions}.json"
    done
done
bench() { # name, then forcekit bench arguments
    local name=$1
    shift
    "$fk" bench --device "$gpu" --json "$@" > "$out/$name.json"
}
for n in 65536 262144; do
    for positions in float ds; do
        for accum in float fixed64 ref; do
            bench "bench_ga_${accum}_${n}_${positions}" --kernel ga --accum "$accum" --n "$n" \
                --reps 10 --positions "$positions"
        done
        bench "bench_gaj_float_${n}_${positions}" --kernel gaj --accum float --n "$n" --reps 10 \
            --positions "$positions"
        bench "bench_ljc_constant_float_${n}_${positions}" --kernel ljc_constant --accum float \
            --n "$n" --reps 10 --positions "$positions"
    done
done
for positions in float ds; do
    bench "step_ga_float_1048576_${positions}" --kernel ga --accum float --n 1048576 --reps 20 \
        --step --positions "$positions"
done
python3 - "$out" > "$out/summary.txt" <<'EOF'
import glob, json, os, sys
out = sys.argv[1]
for path in sorted(glob.glob(os.path.join(out, "accuracy_*.json"))):
    d = json.load(open(path))
    cells = ", ".join(f"{r['accum']} {r['error_host']:.3g}" for r in d["results"])
    print(f"{os.path.basename(path)}: error against the host's double reference: {cells}")
for path in sorted(glob.glob(os.path.join(out, "bench_*.json"))):
    d = json.load(open(path))
    r = d["results"][0]
    print(f"{os.path.basename(path)}: {r['seconds_per_eval'] * 1e3:.4f} ms, "
          f"{r['interactions_per_second']:.4g} pairs/s, unroll {r['unroll']}")
for path in sorted(glob.glob(os.path.join(out, "step_*.json"))):
    d = json.load(open(path))
    for r in d["results"]:
        print(f"{os.path.basename(path)} {r['mode']}: wall {r['wall_seconds_median'] * 1e3:.3f} ms, "
              f"device {r['device_seconds_median'] * 1e3:.3f} ms, {r['bytes_moved']:.4g} bytes, "
              f"wall / limit {r['wall_over_limit']:.2f}")
EOF
cat "$out/summary.txt"
