#!/usr/bin/env python3
"""The OpenMM bridge's fixed64 forces, bit for bit, on every device this machine has (issue #19:
"fixed64: bit-identical forces on POCL, Intel's CPU runtime and NVIDIA"). Builds a charged LJ
fluid (NonbondedForce, CutoffPeriodic, two atom types, exclusions), evaluates it once through
forcekit.openmm.nonbonded_force(..., accum="fixed64", reproducible=True) on each forcekit device
(OpenMM's Reference platform calls the bridge), and prints one JSON line per device with the
SHA-256 of the forces (float64, kJ/mol/nm) and of the energy. Equal digests on two devices or
runtimes (run it again under another OCL_ICD_VENDORS) mean the same bits.

    python bench/openmm_bridge_bits.py [--n 4096] [--seed 7]
"""
import argparse
import hashlib
import json

import numpy as np
import openmm
from openmm import unit

import forcekit
import forcekit.openmm as fkmm


def charged_fluid(n, seed):
    rng = np.random.default_rng(seed)
    side = int(np.ceil(n ** (1 / 3)))
    spacing = 0.3 * (1 / 0.8) ** (1 / 3)  # sigma ~ 0.3 nm, reduced density 0.8
    box = side * spacing
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
    pos = (grid + 0.5 + rng.uniform(-0.1, 0.1, (n, 3))) * spacing
    system = openmm.System()
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(box, 0, 0), openmm.Vec3(0, box, 0), openmm.Vec3(0, 0, box))
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.CutoffPeriodic)
    nb.setCutoffDistance(0.9)
    nb.setUseDispersionCorrection(False)
    for i in range(n):
        system.addParticle(20.0)
        kind = i % 2
        nb.addParticle(rng.uniform(-0.5, 0.5), (0.30, 0.34)[kind], (0.8, 1.2)[kind])
    for i in range(0, 40, 2):
        nb.addException(i, i + 1, 0.0, 1.0, 0.0)
    return system, nb, pos


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    system, nb, pos = charged_fluid(args.n, args.seed)
    for device in forcekit.devices():
        force = fkmm.nonbonded_force(nb, device=device["selector"], accum="fixed64", reproducible=True)
        only = openmm.System()
        for i in range(system.getNumParticles()):
            only.addParticle(system.getParticleMass(i))
        only.setDefaultPeriodicBoxVectors(*system.getDefaultPeriodicBoxVectors())
        only.addForce(force)
        context = openmm.Context(only, openmm.VerletIntegrator(0.001),
                                 openmm.Platform.getPlatformByName("Reference"))
        context.setPositions(pos)
        state = context.getState(getForces=True, getEnergy=True)
        forces = np.ascontiguousarray(state.getForces(asNumpy=True).value_in_unit(
            unit.kilojoule_per_mole / unit.nanometer), dtype=np.float64)
        energy = np.float64(state.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole))
        print(json.dumps({"device": device["name"], "platform": device["platform_name"],
                          "n": args.n, "seed": args.seed,
                          "forces_sha256": hashlib.sha256(forces.tobytes()).hexdigest(),
                          "energy_sha256": hashlib.sha256(energy.tobytes()).hexdigest(),
                          "largest_force": float(np.abs(forces).max())}), flush=True)
        del context


if __name__ == "__main__":
    main()
