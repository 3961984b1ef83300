"""AMUSE's GRAPE-6 clients on libsapporo (issue #18), driven by tests/amuse/run_clients.sh.

Which libsapporo.so the GPU workers load is decided by LD_LIBRARY_PATH, set by the script; this
program only runs one measurement and prints one JSON line:

  clients.py t1 SEED            ph4 mode="gpu" get_potential_at_point on a 200-body Plummer
                                sphere, and the same through ph4's CPU mode: worst relative
                                difference of the potential
  clients.py energy CODE SEED   CODE ph4 (mode "gpu") or phigrape (the g6 worker): Plummer
                                N = 256, eps 0.01, eta 0.03, t = 0 to 1: |dE/E|
  clients.py bench N [T]        ph4 mode="gpu", Plummer N (seed 1), eps 0.01, eta 0.03, t = 0 to
                                T (default 1): |dE/E| and wall seconds of evolve_model
"""
import time
import json
import sys

import numpy
from amuse.ic.plummer import new_plummer_model
from amuse.units import nbody_system


def plummer(n, seed):
    numpy.random.seed(seed)
    return new_plummer_model(n)


def t1(seed):
    from amuse.community.ph4.interface import ph4

    particles = plummer(200, seed)
    rng = numpy.random.RandomState(seed + 1000)
    points = rng.uniform(-1.5, 1.5, size=(50, 3))
    x, y, z = (points[:, k] | nbody_system.length for k in range(3))
    eps = numpy.zeros(len(points)) | nbody_system.length
    potentials = {}
    for mode in ("cpu", "gpu"):
        code = ph4(mode=mode, channel_type="sockets")
        code.parameters.epsilon_squared = 0.0001 | nbody_system.length ** 2
        code.particles.add_particles(particles)
        code.commit_particles()
        potentials[mode] = code.get_potential_at_point(eps, x, y, z).value_in(
            nbody_system.potential)
        code.stop()
    cpu, gpu = numpy.asarray(potentials["cpu"]), numpy.asarray(potentials["gpu"])
    worst = float(numpy.max(numpy.abs(gpu - cpu) / numpy.abs(cpu)))
    return {"test": "t1", "seed": seed, "worst_relative": worst,
            "finite": bool(numpy.all(numpy.isfinite(gpu)))}


def energy(name, seed):
    particles = plummer(256, seed)
    if name == "ph4":
        from amuse.community.ph4.interface import ph4
        code = ph4(mode="gpu", channel_type="sockets")
        code.parameters.epsilon_squared = 0.0001 | nbody_system.length ** 2
        code.parameters.timestep_parameter = 0.03
    else:
        from amuse.community.phigrape.interface import PhiGRAPE
        code = PhiGRAPE(channel_type="sockets")  # the g6 worker, relinked to libsapporo
        code.parameters.epsilon_squared = 0.0001 | nbody_system.length ** 2
        code.parameters.timestep_parameter = 0.03
    code.particles.add_particles(particles)
    code.commit_particles()
    e0 = (code.kinetic_energy + code.potential_energy).value_in(nbody_system.energy)
    code.evolve_model(1.0 | nbody_system.time)
    e1 = (code.kinetic_energy + code.potential_energy).value_in(nbody_system.energy)
    code.stop()
    error = abs((e1 - e0) / e0)
    return {"test": "energy", "code": name, "seed": seed, "dE/E": error,
            "finite": bool(numpy.isfinite(error))}


def bench(n, t_end):
    from amuse.community.ph4.interface import ph4
    particles = plummer(n, 1)
    code = ph4(mode="gpu", channel_type="sockets")
    code.parameters.epsilon_squared = 0.0001 | nbody_system.length ** 2
    code.parameters.timestep_parameter = 0.03
    code.particles.add_particles(particles)
    code.commit_particles()
    e0 = (code.kinetic_energy + code.potential_energy).value_in(nbody_system.energy)
    start = time.time()
    code.evolve_model(t_end | nbody_system.time)
    wall = time.time() - start
    e1 = (code.kinetic_energy + code.potential_energy).value_in(nbody_system.energy)
    code.stop()
    return {"test": "bench", "code": "ph4", "n": n, "t_end": t_end, "dE/E": abs((e1 - e0) / e0),
            "wall_seconds": wall}


def main(argv):
    if len(argv) >= 3 and argv[1] == "t1":
        result = t1(int(argv[2]))
    elif len(argv) >= 4 and argv[1] == "energy":
        result = energy(argv[2], int(argv[3]))
    elif len(argv) >= 3 and argv[1] == "bench":
        result = bench(int(argv[2]), float(argv[3]) if len(argv) >= 4 else 1.0)
    else:
        sys.stderr.write(__doc__)
        return 2
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
