#!/usr/bin/env bash
# Issue #33 item 4 on a CPU device (POCL by default): `forcekit simulate` on the device path
# against the host loop, LJ fluid density 0.8, T* = 1, dt 0.005, neighbour lists, skin 0.3, float.
#   bench/run_cpu_simulate.sh BUILD OUT [DEVICE]
# Writes under OUT the runs' JSON and summary.json:
#   - nve: Verlet, N = 4,096, 2,000 steps, energy every 10 steps, device path and host loop
#     (the drift figures of each, and whether the two ended on the same state bits);
#   - langevin: N = 4,096, 10,000 steps at kT = 1, gamma = 1, energy every 10 steps; the mean
#     temperature 2<K>/(3N) over the samples from step 1,000 on (the fcc start's melting and the
#     thermostat's relaxation, 1/gamma = 200 steps, left out), its relative error and a standard
#     error from 10 blocks;
#   - speed: bench_integrator at N = 16,384 (the integrator's step, the host step path and one
#     plain force evaluation, interleaved; issue #33's target: step <= 1.1 evaluations).
set -euo pipefail
build=$1
out=$2
device=${3:-0:0}
mkdir -p "$out"
fk=$build/forcekit
common=(simulate --kernel lj --algorithm neighbors --skin 0.3 --dt 0.005 --device "$device" --json)
"$fk" "${common[@]}" --n 4096 --steps 2000 --sample 10 > "$out/nve_device.json" 2> "$out/nve_device.log"
"$fk" "${common[@]}" --n 4096 --steps 2000 --sample 10 --integrate host > "$out/nve_host.json" 2> "$out/nve_host.log"
"$fk" "${common[@]}" --n 4096 --steps 10000 --sample 10 --integrator langevin --temperature 1 \
    --friction 1 > "$out/langevin.json" 2> "$out/langevin.log"
"$build/bench/bench_integrator" --n 16384 --device "$device" > "$out/speed_n16384.json" 2> "$out/speed_n16384.log"
python3 - "$out" <<'PY' | tee "$out/summary.json"
import json, math, os, sys
out = sys.argv[1]
load = lambda name: json.load(open(os.path.join(out, name)))
summary = {"nve": {}, "langevin": {}, "speed": {}}
for path in ("device", "host"):
    d = load(f"nve_{path}.json")
    summary["nve"][path] = {k: d[k] for k in ("relative_energy_drift", "max_relative_energy_deviation",
                                              "relative_energy_slope_per_time", "state_checksum",
                                              "rebuilds")}
    summary["nve"][path]["ms_per_step"] = 1e3 * d["seconds_per_step"]["total"]
summary["nve"]["same_state_bits"] = (summary["nve"]["device"]["state_checksum"] ==
                                     summary["nve"]["host"]["state_checksum"])
d = load("langevin.json")
n = d["n"]
temps = [2 * k / (3 * n) for s, k in zip(d["samples"]["step"], d["samples"]["kinetic"]) if s >= 1000]
mean = sum(temps) / len(temps)
blocks = [temps[i * len(temps) // 10:(i + 1) * len(temps) // 10] for i in range(10)]
block_means = [sum(b) / len(b) for b in blocks]
se = math.sqrt(sum((m - mean) ** 2 for m in block_means) / (10 * 9))
summary["langevin"] = {"n": n, "steps": d["steps"], "target": d["bath_temperature"],
                       "friction": d["friction"], "samples_used": len(temps),
                       "mean_temperature_from_step_1000": mean,
                       "relative_error": mean / d["bath_temperature"] - 1,
                       "standard_error_10_blocks": se,
                       "mean_temperature_all_samples": d["mean_temperature"],
                       "ms_per_step": 1e3 * d["seconds_per_step"]["total"],
                       "within_2_percent": abs(mean / d["bath_temperature"] - 1) <= 0.02}
s = load("speed_n16384.json")
summary["speed"] = s
print(json.dumps(summary, indent=1))
PY
