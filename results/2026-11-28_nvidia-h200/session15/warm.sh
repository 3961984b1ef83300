#!/usr/bin/env bash
# simulate's steady state: 400 steps from the fcc start (the melting), a checkpoint, then a
# restart timed over the next steps (OpenMM's figure is after 400 warm-up steps too).
O=$OUT/warm; mkdir -p $O
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release > $O/configure.log 2>&1 &&
  cmake --build /tmp/b -j16 --target forcekit_cli > $O/build.log 2>&1 || { echo BUILD FAILED; tail -30 $O/build.log; }
export FORCEKIT_CACHE_DIR=/tmp/b/cache
fk=/tmp/b/forcekit
for n in 4096 65536 262144 1048576; do
  more=2000; [ $n -ge 262144 ] && more=1000
  for kind in float reproducible langevin; do
    case $kind in float) extra=();; reproducible) extra=(--reproducible);; langevin) extra=(--integrator langevin);; esac
    common=(simulate --kernel lj --n $n --sample 100 --algorithm neighbors --skin 0.3 --dt 0.005 --temperature 1 --device gpu --device-timing off --json "${extra[@]}")
    rm -f /tmp/w.ckpt
    timeout 60 $fk "${common[@]}" --steps 400 --checkpoint /tmp/w.ckpt --checkpoint-every 400 > /dev/null 2> $O/warm_${kind}_n$n.log
    timeout 60 $fk "${common[@]}" --steps $((400 + more)) --restart /tmp/w.ckpt > $O/${kind}_n$n.json 2> $O/${kind}_n$n.log
    python3 -c "
import json,sys; d=json.load(open('$O/${kind}_n$n.json')); print(json.dumps({'n':$n,'kind':'$kind','ms_per_step':d['seconds_per_step']['total']*1e3,'counters':d.get('device_integrator')}))" || tail -3 $O/${kind}_n$n.log
  done
done
