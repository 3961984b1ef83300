#!/usr/bin/env python3
"""The OpenMM bridge on an LJ fluid: ns/day of forcekit through openmm.PythonForce beside OpenMM's
own NonbondedForce, and the bridge's per-step overhead. Prints one JSON object.

    python bench/openmm_bridge.py [--cells 16] [--steps 2000] [--platform OpenCL]
        [--device gpu] [--accum fixed64] [--precision mixed]

--cells 16 is N = 4 * 16^3 = 16,384; --n 65536 takes the first 65,536 sites of a lattice of
4 * 26^3 spaced for the density (slightly compressed, with an empty slab that fills
at once). Argon units
(sigma 0.34 nm, epsilon 0.997 kJ/mol, 39.948 amu), reduced density 0.8442, T* = 0.72, cutoff
2.5 sigma, dt = 0.005 tau = 10.8 fs, Verlet (NVE).

Runs:
  openmm_nonbonded:  OpenMM's NonbondedForce (CutoffPeriodic, no switch, no dispersion
                     correction) on --platform at --precision.
  openmm_shifted:    OpenMM's CustomNonbondedForce with forcekit's force-shifted LJ (the same
                     Hamiltonian as the bridge).
  forcekit_bridge:   forcekit.openmm.nonbonded_force (neighbour lists, --accum) on --device,
                     integrated by OpenMM on --platform.
  python_force_empty: a PythonForce that returns zeros: OpenMM's own cost of calling Python at
                     each step (state download, the call, the force upload), for the overhead.
Per run: ns/day, ms/step; for the bridge also the ms per step inside forcekit (update, compute,
read) and on its device, and overhead = step time - forcekit time. Warm-up steps first; the
timed repetitions are the median of --repeats.

On the H200 (the lead's machine):
    python3 -m venv build-py/venv && build-py/venv/bin/pip install nanobind scikit-build-core numpy openmm
    build-py/venv/bin/pip install --no-build-isolation ./python
    build-py/venv/bin/python bench/openmm_bridge.py --n 65536 --platform CUDA --device gpu \\
        > results/openmm_bridge_h200.json
(--platform OpenCL compares with OpenMM's own OpenCL NonbondedForce, as the issue asks; run both.)
"""

from __future__ import annotations

import argparse
import json
import platform as host_platform
import statistics
import sys
import time

import numpy as np
import openmm
from openmm import unit

import forcekit
import forcekit.openmm as fkmm


def fluid(args):
    return fkmm.lj_fluid(n_cells=args.cells, n=args.n or None, seed=1)


def run(kind, args):
    system, nb, pos, vel, box = fluid(args)
    bridge = None
    if kind == "openmm_shifted":
        force = fkmm.lj_shifted_custom_force(nb)
        fkmm.remove_force(system, openmm.NonbondedForce)
        system.addForce(force)
    elif kind == "forcekit_bridge":
        force = fkmm.nonbonded_force(nb, device=args.device, accum=args.accum)
        bridge = force.forcekit_bridge
        fkmm.remove_force(system, openmm.NonbondedForce)
        system.addForce(force)
    elif kind == "python_force_empty":
        n = system.getNumParticles()
        zeros = np.zeros((n, 3))
        force = openmm.PythonForce(lambda state: (0.0, zeros))
        force.setUsesPeriodicBoundaryConditions(True)
        fkmm.remove_force(system, openmm.NonbondedForce)
        system.addForce(force)
    dt = 0.005 * fkmm.lj_time_unit()
    integrator = openmm.VerletIntegrator(dt)
    platform = openmm.Platform.getPlatformByName(args.platform)
    properties = {}
    if args.platform in ("CUDA", "OpenCL"):
        properties["Precision"] = args.precision
    context = openmm.Context(system, integrator, platform, properties)
    context.setPositions(pos)
    context.setVelocities(vel)
    integrator.step(args.warmup)
    context.getState(getPositions=True)
    times = []
    for _ in range(args.repeats):
        if bridge:
            bridge.calls = 0
            bridge.seconds_total = bridge.seconds_forcekit = bridge.device_seconds = 0.0
        start = time.perf_counter()
        integrator.step(args.steps)
        context.getState(getPositions=True)  # waits for the device (energy would add a force call)
        times.append((time.perf_counter() - start) / args.steps)
    step = statistics.median(times)
    out = {
        "run": kind,
        "n": system.getNumParticles(),
        "ms_per_step": step * 1e3,
        "ns_per_day": dt * 1e-3 / step * 86400,
    }
    if bridge:
        calls = max(bridge.calls, 1)
        out["ms_in_callback"] = bridge.seconds_total / calls * 1e3
        out["ms_in_forcekit"] = bridge.seconds_forcekit / calls * 1e3
        out["ms_forcekit_device"] = bridge.device_seconds / calls * 1e3
        out["ms_overhead"] = out["ms_per_step"] - out["ms_in_forcekit"]
        out["forcekit_device"] = bridge.evaluator.context.device["name"]
        out["variant"] = {k: v for k, v in bridge.evaluator.variant.items() if not isinstance(v, tuple)}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=16)
    parser.add_argument("--n", type=int, default=0, help="particle count (overrides --cells)")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--platform", default="OpenCL", help="OpenMM platform (OpenCL, CUDA, CPU)")
    parser.add_argument("--precision", default="mixed", help="OpenMM precision on GPU platforms")
    parser.add_argument("--device", default="gpu", help="forcekit device selector")
    parser.add_argument("--accum", default="fixed64")
    parser.add_argument("--runs", default="openmm_nonbonded,openmm_shifted,forcekit_bridge,python_force_empty")
    args = parser.parse_args()
    results = []
    for kind in args.runs.split(","):
        results.append(run(kind, args))
        print(json.dumps(results[-1]), file=sys.stderr)
    print(json.dumps({
        "benchmark": "openmm_bridge",
        "openmm": openmm.__version__,
        "forcekit": forcekit.__version__,
        "host": host_platform.node(),
        "platform": args.platform,
        "precision": args.precision,
        "accum": args.accum,
        "steps": args.steps,
        "results": results,
    }, indent=2))


if __name__ == "__main__":
    main()
