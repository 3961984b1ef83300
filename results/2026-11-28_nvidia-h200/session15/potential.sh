#!/usr/bin/env bash
O=$OUT/potential; mkdir -p $O
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release > $O/configure.log 2>&1 &&
  cmake --build /tmp/b -j16 --target bench_integrator > $O/build.log 2>&1 || { echo BUILD FAILED; tail -30 $O/build.log; }
export FORCEKIT_CACHE_DIR=/tmp/b/cache FORCEKIT_DEVICE=gpu
for n in 65536 262144 1048576; do for p in off on; do
  timeout 60 /tmp/b/bench/bench_integrator --n $n --steps 200 --rounds 5 --evals 20 --warmup 300 --device-timing off --potential $p > $O/integrator_n${n}_potential_$p.json 2>$O/integrator_n${n}_$p.log
  python3 -c "
import json; d=json.load(open('$O/integrator_n${n}_potential_$p.json')); print($n, '$p', d['ms_per_step'])"
done; done
