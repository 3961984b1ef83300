#!/bin/sh
# Issue #33 item 4: simulate's restarted device path against bench_integrator --potential on,
# POCL, LJ fluid N = 16,384, neighbors, skin 0.3. Interleaved rounds: the binary before the fix
# (BEFORE, a copy of build/forcekit at a4e8df3), after (build/forcekit), and the library step.
# Usage: measure.sh BEFORE_BINARY OUT_DIR ROUNDS
set -eu
before=$1 out=$2 rounds=${3:-3}
after=build/forcekit
common="--kernel lj --n 16384 --sample 100 --algorithm neighbors --skin 0.3 --dt 0.005
  --temperature 1 --device-timing off --json"
mkdir -p "$out"
r=1
while [ "$r" -le "$rounds" ]; do
    for which in before after; do
        bin=$before
        [ "$which" = after ] && bin=$after
        $bin simulate $common --steps 300 --checkpoint "$out/$which.ckpt" --checkpoint-every 300 \
            >/dev/null 2>&1
        $bin simulate $common --steps 700 --restart "$out/$which.ckpt" \
            >"$out/simulate_${which}_$r.json" 2>/dev/null
    done
    build/bench/bench_integrator --n 16384 --steps 200 --rounds 3 --evals 10 --warmup 300 \
        --algorithm neighbors --skin 0.3 --device-timing off --potential on \
        >"$out/bench_integrator_$r.json"
    r=$((r + 1))
done
rm -f "$out"/*.ckpt
