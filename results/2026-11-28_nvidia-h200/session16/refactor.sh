#!/usr/bin/env bash
# Session 16: issue #35's refactor on the GPU: the device tests of every loop, law and accumulator,
# and three speed points against session 15's figures (same H200 kind).
O=$OUT/refactor; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/gpu.txt 2>&1
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DFORCEKIT_BUILD_TESTS=ON > $O/configure.log 2>&1 &&
  cmake --build /tmp/b -j16 > $O/build.log 2>&1 || { echo BUILD FAILED; tail -30 $O/build.log; }
export FORCEKIT_DEVICE=gpu FORCEKIT_CACHE_DIR=/tmp/b/cache
echo "built $(date +%T)"
(cd /tmp/b && timeout 420 ctest -j4 -R '^(test_forces|test_loop_table|test_laws|test_cells|test_neighbors|test_symmetric|test_step|test_integrator|test_accum|test_precision|test_auto|test_known_answer|test_positions|test_exclusions|test_share|test_reproducible|test_sources|test_g6|test_layers)$' --output-on-failure) > $O/checks.txt 2>&1
grep -E 'tests passed|Failed|Not Run' $O/checks.txt; echo "checks $(date +%T)"
timeout 60 /tmp/b/bench/bench_integrator --n 262144 --steps 200 --rounds 5 --evals 20 --warmup 300 --device-timing off > $O/integrator_n262144.json 2>$O/integrator.log
timeout 60 /tmp/b/forcekit bench --device gpu --kernel ga --n 262144 --accum float --reps 20 --json > $O/bench_ga_n262144_float.json 2>$O/bench_ga.log
timeout 60 /tmp/b/forcekit bench --device gpu --kernel lj --n 262144 --accum float --algorithm neighbors --cutoff 2.5 --box 68.94191 --step --reps 100 --json > $O/step_lj_n262144_float.json 2>$O/step.log
echo "bench $(date +%T)"
