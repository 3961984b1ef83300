#!/usr/bin/env bash
O=$OUT/simgap; mkdir -p $O
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DFORCEKIT_BUILD_TESTS=ON > $O/configure.log 2>&1 && cmake --build /tmp/b -j16 > $O/build.log 2>&1 || { echo BUILD FAILED; tail -20 $O/build.log; }
export FORCEKIT_CACHE_DIR=/tmp/b/cache
(cd /tmp/b && FORCEKIT_DEVICE=gpu timeout 90 ctest -R '^(test_integrator|test_simulate)$') > $O/checks.txt 2>&1; tail -3 $O/checks.txt
F=/tmp/b/forcekit
for n in 65536 262144 1048576; do for s in 100 1400; do
  c="--kernel lj --n $n --sample $s --algorithm neighbors --skin 0.3 --dt 0.005 --temperature 1 --device gpu --device-timing off --json"
  $F simulate $c --steps 400 --checkpoint /tmp/w.ckpt --checkpoint-every 400 >/dev/null 2>&1
  $F simulate $c --steps 1400 --restart /tmp/w.ckpt > $O/sim_${n}_s$s.json 2>/dev/null
  python3 -c "import json; d=json.load(open('$O/sim_${n}_s$s.json')); print($n, $s, d['seconds_per_step']['total']*1e3)"
done
FORCEKIT_DEVICE=gpu timeout 60 /tmp/b/bench/bench_integrator --n $n --steps 200 --rounds 5 --evals 20 --warmup 300 --device-timing off --potential on > $O/bi_$n.json
python3 -c "import json; d=json.load(open('$O/bi_$n.json')); print($n, 'bench', d['ms_per_step'])"
done
