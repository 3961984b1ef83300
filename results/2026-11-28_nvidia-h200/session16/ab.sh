#!/usr/bin/env bash
# A/B of issue #35's refactor on one machine start: 79f3d54 (before the session) against HEAD,
# bench_integrator at 262,144 (LJ fluid, neighbour lists, float), interleaved 3 times each.
O=$OUT/ab; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/gpu.txt 2>&1
(cmake -S . -B /tmp/new -DCMAKE_BUILD_TYPE=Release -DFORCEKIT_BUILD_TESTS=OFF > /dev/null && cmake --build /tmp/new -j8 > $O/build_new.log 2>&1) &
(cmake -S .gpu/old -B /tmp/old -DCMAKE_BUILD_TYPE=Release -DFORCEKIT_BUILD_TESTS=OFF > /dev/null && cmake --build /tmp/old -j8 > $O/build_old.log 2>&1) &
wait
echo "built $(date +%T)"
for r in 1 2 3; do
  for v in old new; do
    FORCEKIT_CACHE_DIR=/tmp/$v/cache timeout 60 /tmp/$v/bench/bench_integrator --device gpu --n 262144 --steps 200 --rounds 5 --evals 20 --warmup 300 --device-timing off > $O/${v}_$r.json 2>$O/${v}_$r.log
    python3 -c "import json,sys; d=json.load(open('$O/${v}_$r.json')); print('$v', $r, d['ms_per_step'])"
  done
done
echo "done $(date +%T)"
