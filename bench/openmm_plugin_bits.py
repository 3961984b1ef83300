#!/usr/bin/env python3
"""The OpenMM plugin's fixed64 trajectories, bit for bit, across OpenCL runtimes (issue #34, item
3). An LJ fluid (CutoffPeriodic, rc 2.5 sigma, argon units, reduced density 0.8442) runs --steps
Verlet steps with forcekit.openmm.nonbonded_force(nb, accum="fixed64", reproducible=True):
  - on OpenMM's OpenCL platform (forcekit on OpenMM's context; OpenMM's own integration kernels,
    --precision), and
  - on OpenMM's Reference platform (OpenMM's double-precision host integrator; forcekit's host
    path on its device, $FORCEKIT_DEVICE or forcekit's default).
Prints one JSON line per run with the SHA-256 of the forces before the first step and of the final
positions (float64 nm). Run it under two runtimes (e.g. plain, and under
`env $(bash scripts/intel-opencl.sh build/intel-opencl)`): equal digests mean the same bits.

    python bench/openmm_plugin_bits.py [--cells 4] [--steps 200] [--precision single]
"""
import argparse
import hashlib
import json

import numpy as np
import openmm
from openmm import unit

import forcekit
import forcekit.openmm as fkmm


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest()


def run(platform_name, args):
    system, nb, pos, vel, box = fkmm.lj_fluid(n_cells=args.cells)
    force = fkmm.nonbonded_force(nb, accum="fixed64", reproducible=True)
    fkmm.remove_force(system, openmm.NonbondedForce)
    system.addForce(force)
    integrator = openmm.VerletIntegrator(0.005 * fkmm.lj_time_unit())
    platform = openmm.Platform.getPlatformByName(platform_name)
    props = {"Precision": args.precision} if platform_name == "OpenCL" else {}
    context = openmm.Context(system, integrator, platform, props)
    context.setPositions(pos)
    context.setVelocities(vel)
    f0 = context.getState(getForces=True).getForces(asNumpy=True).value_in_unit(
        unit.kilojoule_per_mole / unit.nanometer)
    integrator.step(args.steps)
    final = context.getState(getPositions=True).getPositions(asNumpy=True).value_in_unit(unit.nanometer)
    device = (platform.getPropertyValue(context, "DeviceName") if platform_name == "OpenCL"
              else forcekit.Context().device["name"])
    return {"platform": platform_name, "device": device, "n": system.getNumParticles(),
            "steps": args.steps, "precision": props.get("Precision", "double"),
            "forces_sha256": digest(f0), "final_positions_sha256": digest(final)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=4)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--precision", default="single")
    parser.add_argument("--platforms", default="OpenCL,Reference")
    args = parser.parse_args()
    for name in args.platforms.split(","):
        print(json.dumps(run(name, args)), flush=True)


if __name__ == "__main__":
    main()
