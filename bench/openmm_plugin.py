#!/usr/bin/env python3
"""The native OpenMM plugin (issue #34) on an LJ fluid: ns/day of an OpenMM Simulation whose
NonbondedForce is replaced by forcekit's ForcekitNonbondedForce, beside OpenMM's own
NonbondedForce, on the same OpenMM platform. Prints one JSON object.

    python bench/openmm_plugin.py [--n 16384] [--steps 500] [--platform OpenCL]
        [--precision single] [--runs openmm_nonbonded,openmm_shifted,forcekit_float,forcekit_fixed64]

Argon units (sigma 0.34 nm, epsilon 0.997 kJ/mol, 39.948 amu), reduced density 0.8 (the issue's),
T* = 0.72, cutoff 2.5 sigma, dt = 0.005 tau = 10.8 fs, Verlet (NVE); --n takes the first n sites
of the smallest fcc lattice holding them (forcekit.openmm.lj_fluid).

Runs:
  openmm_nonbonded:  OpenMM's NonbondedForce (CutoffPeriodic, no switch, no dispersion correction).
  openmm_shifted:    OpenMM's CustomNonbondedForce with forcekit's force-shifted LJ (the plugin's
                     Hamiltonian).
  forcekit_float, forcekit_fixed64: forcekit.openmm.nonbonded_force(nb, accum=...), the plugin;
                     on the OpenCL platform forcekit runs on OpenMM's own context and buffers.
  openmm_no_nonbonded: no force at all (free flight): OpenMM's own per-step floor on the platform
                     (integration, force-buffer clearing and reduction), not in the default runs.
Per run: ns/day and ms/step, the median of --repeats timed blocks after --warmup steps.

On a GPU machine without network (the lead's): bench/run_gpu_openmm_plugin.sh carries the wheels
(--fetch here, into .devdeps/wheels), builds the package there and runs this at N = 65,536 and
1,048,576.
"""

from __future__ import annotations

import argparse
import json
import platform as host_platform
import statistics
import sys
import time

import openmm

import forcekit
import forcekit.openmm as fkmm


def run(kind, args):
    system, nb, pos, vel, box = fkmm.lj_fluid(n=args.n, density=args.density, seed=1)
    if kind == "openmm_nonbonded":
        pass
    elif kind == "openmm_no_nonbonded":
        fkmm.remove_force(system, openmm.NonbondedForce)  # free flight: OpenMM's step without forces
    else:
        if kind == "openmm_shifted":
            force = fkmm.lj_shifted_custom_force(nb)
        elif kind.startswith("forcekit_"):
            force = fkmm.nonbonded_force(nb, accum=kind.split("_", 1)[1], skin=args.skin)
        else:
            raise SystemExit(f"unknown run {kind}")
        fkmm.remove_force(system, openmm.NonbondedForce)
        system.addForce(force)
    dt = 0.005 * fkmm.lj_time_unit()
    integrator = openmm.VerletIntegrator(dt)
    platform = openmm.Platform.getPlatformByName(args.platform)
    properties = {"Precision": args.precision} if args.platform in ("CUDA", "OpenCL", "HIP") else {}
    context = openmm.Context(system, integrator, platform, properties)
    context.setPositions(pos)
    context.setVelocities(vel)
    integrator.step(args.warmup)
    context.getState(getPositions=True)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        integrator.step(args.steps)
        context.getState(getPositions=True)  # waits for the device
        times.append((time.perf_counter() - start) / args.steps)
    step = statistics.median(times)
    energy = context.getState(getEnergy=True)
    return {
        "run": kind,
        "n": system.getNumParticles(),
        "ms_per_step": step * 1e3,
        "ns_per_day": dt * 1e-3 / step * 86400,
        "ms_per_step_blocks": [t * 1e3 for t in times],
        "final_total_energy_kj_mol": (energy.getPotentialEnergy() + energy.getKineticEnergy())._value,
        "device": context.getPlatform().getPropertyValue(context, "DeviceName")
        if args.platform in ("OpenCL", "CUDA") else args.platform,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--density", type=float, default=0.8)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--platform", default="OpenCL")
    parser.add_argument("--skin", type=float, default=0.0,
                        help="forcekit's Verlet skin in nm (0: its default, 0.12 cutoff)")
    parser.add_argument("--precision", default="single", help="OpenMM precision on GPU platforms")
    parser.add_argument("--out", help="write the JSON here instead of stdout (OpenMM prints its "
                        "POCL warning to stdout)")
    parser.add_argument("--runs", default="openmm_nonbonded,openmm_shifted,forcekit_float,forcekit_fixed64")
    args = parser.parse_args()
    results = []
    for kind in args.runs.split(","):
        results.append(run(kind, args))
        print(json.dumps(results[-1]), file=sys.stderr)
    base = {r["run"]: r["ns_per_day"] for r in results}
    speedups = {}
    if "openmm_nonbonded" in base:
        for r in results:
            if r["run"].startswith("forcekit_"):
                speedups[r["run"] + "_vs_openmm_nonbonded"] = r["ns_per_day"] / base["openmm_nonbonded"]
    if "forcekit_float" in base and "forcekit_fixed64" in base:
        speedups["fixed64_time_over_float"] = base["forcekit_float"] / base["forcekit_fixed64"]
    text = json.dumps({
        "benchmark": "openmm_plugin",
        "openmm": openmm.__version__,
        "forcekit": forcekit.__version__,
        "host": host_platform.node(),
        "cpu": host_platform.processor() or host_platform.machine(),
        "platform": args.platform,
        "precision": args.precision,
        "density": args.density,
        "skin_nm": args.skin,
        "steps": args.steps,
        "results": results,
        "ratios": speedups,
    }, indent=2)
    if args.out:
        with open(args.out, "w") as out:
            out.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
