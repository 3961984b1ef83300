#!/usr/bin/env python3
"""OpenMM's whole MD step on the LJ-fluid workload of issue #33, the peer of bench_integrator.

An fcc LJ fluid at density 0.8 in a periodic cube, epsilon = sigma = m = 1 (read in OpenMM's units as
reduced units), NonbondedForce with CutoffPeriodic at rc 2.5 (OpenMM truncates LJ plainly at rc;
forcekit's `lj` is force-shifted: the same pairs, not the same forces), velocities at T* = 1,
VerletIntegrator with dt 0.005, single precision, everything on the device. Times
`integrator.step(steps)` after a warm-up (one getState at the end forces the queue to finish), in
rounds; prints one JSON document with the median and the spread.

    python3 bench/openmm_step.py --n 65536 [--platform OpenCL] [--steps 200] [--rounds 7]
"""
import argparse
import json
import math
import statistics
import sys
import time

import openmm
from openmm import unit


def fcc_lattice(n, density):
    cells = math.ceil((n / 4) ** (1 / 3))
    side = (4 * cells**3 / density) ** (1 / 3)
    a = side / cells
    basis = ((0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5))
    points = []
    for i in range(cells):
        for j in range(cells):
            for k in range(cells):
                for b in basis:
                    points.append(((i + b[0]) * a, (j + b[1]) * a, (k + b[2]) * a))
    return points[:n], side


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--platform", default="OpenCL")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=400)
    args = parser.parse_args()
    if args.n < 32 or args.steps < 1 or args.rounds < 1:
        parser.error("--n at least 32, --steps and --rounds at least 1")

    positions, side = fcc_lattice(args.n, 0.8)
    system = openmm.System()
    system.setDefaultPeriodicBoxVectors(
        openmm.Vec3(side, 0, 0), openmm.Vec3(0, side, 0), openmm.Vec3(0, 0, side))
    nonbonded = openmm.NonbondedForce()
    nonbonded.setNonbondedMethod(openmm.NonbondedForce.CutoffPeriodic)
    nonbonded.setCutoffDistance(2.5)
    nonbonded.setUseDispersionCorrection(False)
    for _ in positions:
        system.addParticle(1.0)
        nonbonded.addParticle(0.0, 1.0, 1.0)
    system.addForce(nonbonded)
    integrator = openmm.VerletIntegrator(0.005)
    platform = openmm.Platform.getPlatformByName(args.platform)
    properties = {"Precision": "single"} if args.platform in ("OpenCL", "CUDA") else {}
    context = openmm.Context(system, integrator, platform, properties)
    context.setPositions(positions)
    # T* = 1 in reduced units is kT = 1 kJ/mol: temperature 1 / (R in kJ/mol/K).
    kelvin = 1.0 / unit.MOLAR_GAS_CONSTANT_R.value_in_unit(unit.kilojoule_per_mole / unit.kelvin)
    context.setVelocitiesToTemperature(kelvin, 1)

    integrator.step(args.warmup)
    context.getState(getEnergy=True)
    per_step = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        integrator.step(args.steps)
        context.getState(getEnergy=True)  # waits for the queue
        per_step.append((time.perf_counter() - start) / args.steps * 1e3)
    device = platform.getPropertyValue(context, "DeviceName") if args.platform in (
        "OpenCL", "CUDA") else "cpu"
    json.dump({
        "peer": "OpenMM integrator.step", "openmm_version": openmm.__version__,
        "platform": args.platform, "device": device, "n": args.n, "box": side,
        "cutoff": 2.5, "dt": 0.005, "steps": args.steps, "rounds": args.rounds,
        "ms_per_step": {"median": statistics.median(per_step), "min": min(per_step),
                        "max": max(per_step)},
    }, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
