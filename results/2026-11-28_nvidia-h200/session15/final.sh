#!/usr/bin/env bash
# The lead's final GPU call of session 15: merged main's device tests and figures.
O=$OUT/final; mkdir -p $O
git rev-parse --short HEAD > $O/commit.txt 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/gpu.txt 2>&1
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DFORCEKIT_BUILD_TESTS=ON > $O/configure.log 2>&1 &&
  cmake --build /tmp/b -j16 > $O/build.log 2>&1 || { echo BUILD FAILED; tail -30 $O/build.log; }
export FORCEKIT_DEVICE=gpu FORCEKIT_CACHE_DIR=/tmp/b/cache
echo "built $(date +%T)"
(cd /tmp/b && timeout 120 ctest -R '^(test_neighbors|test_integrator|test_step|test_accum|test_precision)$' --output-on-failure) > $O/checks.txt 2>&1
tail -4 $O/checks.txt; echo "checks $(date +%T)"
for n in 65536 262144 1048576; do
  timeout 60 /tmp/b/bench/bench_integrator --n $n --steps 200 --rounds 5 --evals 20 --warmup 300 --device-timing off > $O/integrator_n$n.json 2>$O/integrator_n$n.log
done
echo "integrator $(date +%T)"
FORCEKIT_BUILD=/tmp/b timeout 200 bash bench/run_gpu_simulate.sh $O/simulate gpu > $O/simulate_summary.jsonl 2>$O/simulate.log
cat $O/simulate_summary.jsonl; echo "simulate $(date +%T)"
S=$O/scalepolicy; mkdir -p $S
for p in each keep auto; do timeout 30 /tmp/b/forcekit bench --device gpu --kernel lj --n 262144 --accum fixed64 --algorithm neighbors --cutoff 2.5 --box 68.94191 --step --scale $p --reps 100 --json > $S/step_lj_n262144_$p.json 2>$S/step_$p.log; done
timeout 30 /tmp/b/forcekit bench --device gpu --kernel lj --n 262144 --accum float --algorithm neighbors --cutoff 2.5 --box 68.94191 --step --reps 100 --json > $S/step_lj_n262144_float.json 2>$S/step_float.log
timeout 30 /tmp/b/bench/bench_scalepolicy --device gpu --system lj --n 262144 --steps 1000 --every 0 > $S/traj_lj_n262144_timing.json 2>$S/traj.log
echo "scalepolicy $(date +%T)"
