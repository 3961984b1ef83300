"""The OpenMM bridge (forcekit.openmm.nonbonded_python_force, a PythonForce) against OpenMM's own
forces on the Reference platform, a normal app.Simulation, and an NVE energy-drift run of an LJ
fluid. test_openmm_plugin.py tests the native plugin (nonbonded_force)."""
import numpy as np
import pytest

openmm = pytest.importorskip("openmm")
if not hasattr(openmm, "PythonForce"):
    pytest.skip("OpenMM without PythonForce (needs 8.3 or later)", allow_module_level=True)
from openmm import app, unit  # noqa: E402

import forcekit  # noqa: E402
import forcekit.openmm as fkmm  # noqa: E402
from conftest import lattice  # noqa: E402
from reference import as_float  # noqa: E402

KJ_NM = unit.kilojoule_per_mole / unit.nanometer
# forcekit computes pair terms in single precision (a few ulp each) and sums them exactly
# (fixed64): against OpenMM's double-precision Reference platform the forces agree to ~1e-6 of
# the largest force; 2e-5 leaves room for a few hundred partners' rounding, and the force laws
# differ by far more than that if any parameter or convention were wrong (test_*_detects_*).
# OpenMM's reference takes the positions as forcekit's device holds them (as_float): rounding a
# close pair's coordinates moves its r^-13 by a draw-dependent ~1e-5 of the largest force, which
# is not what is compared.
TOL = 2e-5


def evaluate(system, positions, platform="Reference"):
    integrator = openmm.VerletIntegrator(0.001)
    context = openmm.Context(system, integrator, openmm.Platform.getPlatformByName(platform))
    context.setPositions(positions)
    state = context.getState(getForces=True, getEnergy=True)
    return (state.getForces(asNumpy=True).value_in_unit(KJ_NM),
            state.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole))


def with_force(system, force):
    """A copy of system's particles and box with only `force`."""
    other = openmm.System()
    for i in range(system.getNumParticles()):
        other.addParticle(system.getParticleMass(i))
    other.setDefaultPeriodicBoxVectors(*system.getDefaultPeriodicBoxVectors())
    other.addForce(force)
    return other


def relative_error(f, ref):
    return np.abs(f - ref).max() / np.abs(ref).max()


def charged_system(rng, n, method, cutoff=None):
    """LJ + Coulomb with two atom types, charges of both signs and a few exclusions (nm, kJ/mol)."""
    pos, box = lattice(rng, n, density=0.8)
    pos, box = pos * 0.3, box * 0.3  # sigma ~ 0.3 nm
    system = openmm.System()
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(box, 0, 0), openmm.Vec3(0, box, 0), openmm.Vec3(0, 0, box))
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(method)
    if cutoff is not None:
        nb.setCutoffDistance(cutoff)
        nb.setUseDispersionCorrection(False)
        nb.setReactionFieldDielectric(78.3)
    for i in range(n):
        system.addParticle(20.0)
        kind = i % 2
        nb.addParticle(rng.uniform(-0.5, 0.5), (0.30, 0.34)[kind], (0.8, 1.2)[kind])
    for i in range(0, 20, 2):
        nb.addException(i, i + 1, 0.0, 1.0, 0.0)
    system.addForce(nb)
    return system, nb, pos, box


def energy_scale(system, nb, pos):
    """|E_LJ| + |E_Coulomb| on OpenMM's Reference platform: the energy's size without the
    cancellation of random charges of both signs (their total can come near zero, |E| of 0.36
    kJ/mol against a median of 808 in 1,000 draws, where no relative bound on E itself holds)."""
    parts = []
    for keep in ("lj", "coulomb"):
        part = openmm.XmlSerializer.deserialize(openmm.XmlSerializer.serialize(nb))
        for i in range(part.getNumParticles()):
            q, sigma, epsilon = part.getParticleParameters(i)
            part.setParticleParameters(i, q if keep == "coulomb" else 0.0, sigma,
                                       epsilon if keep == "lj" else 0.0)
        parts.append(abs(evaluate(with_force(system, part), pos)[1]))
    return sum(parts)


def test_nonbonded_nocutoff_vs_reference(ctx, rng):
    system, nb, pos, _ = charged_system(rng, 200, openmm.NonbondedForce.NoCutoff)
    f_ref, e_ref = evaluate(system, as_float(pos))
    force = fkmm.nonbonded_python_force(nb, context=ctx, accum="fixed64")
    f, e = evaluate(with_force(system, force), pos)
    assert relative_error(f, f_ref) < TOL
    assert abs(e - e_ref) < TOL * energy_scale(system, nb, as_float(pos))


def test_nonbonded_cutoff_periodic_vs_reference(ctx, rng):
    # OpenMM's CutoffPeriodic truncates LJ and uses reaction-field Coulomb; forcekit force-shifts
    # the whole pair function. shifted_force_correction() is that difference, pair by pair, in
    # numpy: with it the two agree to rounding, and without it they must not (the convention
    # difference is real and the correction is what carries it).
    cutoff = 0.9
    system, nb, pos, box = charged_system(rng, 300, openmm.NonbondedForce.CutoffPeriodic, cutoff)
    f_ref, _ = evaluate(system, as_float(pos))
    charges, types, table, excl = fkmm.nonbonded_parameters(nb)
    correction = fkmm.shifted_force_correction(as_float(pos), charges, types, table, cutoff,
                                               [box] * 3, 78.3, excl)
    force = fkmm.nonbonded_python_force(nb, context=ctx, accum="fixed64")
    f, _ = evaluate(with_force(system, force), pos)
    assert relative_error(f, f_ref + correction) < TOL
    assert relative_error(f, f_ref) > 100 * TOL


def test_lj_cutoff_periodic_vs_openmm_with_forcekit_physics(ctx, rng):
    # The same physics in OpenMM (a CustomNonbondedForce with forcekit's force-shifted LJ):
    # forces and energies agree directly.
    system, nb, pos, vel, box = fkmm.lj_fluid(n_cells=4)
    pos = pos + rng.uniform(-0.03, 0.03, pos.shape)
    f_ref, e_ref = evaluate(with_force(system, fkmm.lj_shifted_custom_force(nb)), as_float(pos))
    force = fkmm.nonbonded_python_force(nb, context=ctx, accum="fixed64")
    f, e = evaluate(with_force(system, force), pos)
    assert relative_error(f, f_ref) < TOL
    assert abs(e - e_ref) < TOL * abs(e_ref)


def test_gravity_vs_custom_nonbonded(ctx, rng):
    n, G, eps = 150, 0.5, 0.05
    system = openmm.System()
    masses = rng.uniform(1.0, 30.0, n)
    custom = openmm.CustomNonbondedForce("-G*mass1*mass2/sqrt(r^2 + eps^2)")
    custom.addGlobalParameter("G", G)
    custom.addGlobalParameter("eps", eps)
    custom.addPerParticleParameter("mass")
    for m in masses:
        system.addParticle(m)
        custom.addParticle([m])
    custom.setNonbondedMethod(openmm.CustomNonbondedForce.NoCutoff)
    pos = rng.uniform(-1, 1, (n, 3))
    f_ref, e_ref = evaluate(with_force(system, custom), pos)
    force = fkmm.gravity_force(system, G=G, eps=eps, context=ctx, accum="fixed64")
    f, e = evaluate(with_force(system, force), pos)
    assert relative_error(f, f_ref) < TOL
    assert abs(e - e_ref) < TOL * abs(e_ref)


def test_unsupported_nonbonded_settings_are_refused():
    nb = openmm.NonbondedForce()
    nb.addParticle(0.0, 0.3, 1.0)
    nb.setNonbondedMethod(openmm.NonbondedForce.PME)
    with pytest.raises(NotImplementedError, match="NoCutoff and CutoffPeriodic"):
        fkmm.nonbonded_python_force(nb, device="cpu")
    nb.setNonbondedMethod(openmm.NonbondedForce.NoCutoff)
    nb.addParticle(0.0, 0.3, 1.0)
    nb.addException(0, 1, 0.5, 0.3, 0.5)  # a scaled 1-4 pair
    with pytest.raises(NotImplementedError, match="nonzero chargeProd"):
        fkmm.nonbonded_python_force(nb, device="cpu")


def _simulation(ctx, steps):
    system, nb, pos, vel, box = fkmm.lj_fluid(n_cells=3)
    force = fkmm.nonbonded_python_force(nb, context=ctx, accum="fixed64", reproducible=True)
    fkmm.remove_force(system, openmm.NonbondedForce)
    system.addForce(force)
    topology = app.Topology()
    chain = topology.addChain()
    for _ in range(system.getNumParticles()):
        residue = topology.addResidue("AR", chain)
        topology.addAtom("Ar", app.element.argon, residue)
    topology.setPeriodicBoxVectors(system.getDefaultPeriodicBoxVectors())
    integrator = openmm.VerletIntegrator(0.005 * fkmm.lj_time_unit())
    sim = app.Simulation(topology, system, integrator, openmm.Platform.getPlatformByName("Reference"))
    sim.context.setPositions(pos)
    sim.context.setVelocities(vel)
    sim.step(steps)
    state = sim.context.getState(getPositions=True, getEnergy=True)
    return state.getPositions(asNumpy=True).value_in_unit(unit.nanometer), force.forcekit_bridge


def test_simulation_runs_and_is_bit_reproducible(ctx):
    a, bridge = _simulation(ctx, 40)
    b, _ = _simulation(ctx, 40)
    assert bridge.calls >= 40
    assert np.isfinite(a).all()
    assert a.tobytes() == b.tobytes()  # fixed64: the same trajectory bit for bit


def _nve(kind, steps=5000, report=50):
    """Total energy every `report` steps of an N = 864 LJ fluid (argon units, reduced density
    0.8442, T* = 0.72, dt = 0.005 tau, cutoff 2.5 sigma), through the bridge (forcekit fixed64,
    OpenMM's Reference integrator) or OpenMM's own force with the same force-shifted LJ on the
    CPU platform, whose nonbonded forces are single precision like forcekit's pair terms."""
    system, nb, pos, vel, box = fkmm.lj_fluid(n_cells=6)
    if kind == "forcekit":
        force, platform = fkmm.nonbonded_python_force(nb, device="cpu", accum="fixed64"), "Reference"
    else:
        force, platform = fkmm.lj_shifted_custom_force(nb), "CPU"
    fkmm.remove_force(system, openmm.NonbondedForce)
    system.addForce(force)
    dt = 0.005 * fkmm.lj_time_unit()
    integrator = openmm.VerletIntegrator(dt)
    context = openmm.Context(system, integrator, openmm.Platform.getPlatformByName(platform))
    context.setPositions(pos)
    context.setVelocities(vel)
    energies = []
    for k in range(steps // report + 1):
        state = context.getState(getEnergy=True)
        energies.append((state.getPotentialEnergy() + state.getKineticEnergy()).value_in_unit(unit.kilojoule_per_mole))
        if k < steps // report:
            integrator.step(report)
    t = np.arange(len(energies)) * report * dt
    energies = np.array(energies)
    (slope, _), cov = np.polyfit(t, energies, 1, cov=True)
    return abs(slope), np.sqrt(cov[0, 0]), np.abs(energies - energies[0]).max()


def test_nve_drift_lj_fluid_864():
    slope_fk, _, excursion_fk = _nve("forcekit")
    slope_mm, stderr_mm, excursion_mm = _nve("openmm")
    print(f"drift kJ/mol/ps: forcekit {slope_fk:.3e}, OpenMM {slope_mm:.3e} +- {stderr_mm:.1e}; "
          f"max |E - E0| kJ/mol: forcekit {excursion_fk:.3e}, OpenMM {excursion_mm:.3e}")
    # Within 2x of OpenMM's own force. Over 5,000 steps the fitted slope of a well-conserving run
    # is mostly fluctuation: OpenMM's slope is floored at three of its standard errors, since a
    # slope below that is not a measured drift.
    assert slope_fk <= 2 * max(slope_mm, 3 * stderr_mm)
    assert excursion_fk <= 2 * excursion_mm


class _FakeState:
    """What the bridge reads of an openmm.State: positions and box vectors (nm)."""

    def __init__(self, positions, box):
        self.positions, self.box = positions, box

    def getPositions(self, asNumpy=False):
        return unit.Quantity(self.positions, unit.nanometer)

    def getPeriodicBoxVectors(self, asNumpy=False):
        return unit.Quantity(np.diag([self.box] * 3), unit.nanometer)


def test_bridge_accepts_unwrapped_positions(ctx, rng):
    # OpenMM need not wrap positions into the box; forcekit's neighbour lists refuse a particle
    # more than a box length outside, and the bridge then uploads the wrapped positions.
    system, nb, pos, vel, box = fkmm.lj_fluid(n_cells=3)
    pos = pos + rng.uniform(-0.02, 0.02, pos.shape)
    bridge = fkmm.nonbonded_python_force(nb, context=ctx, accum="fixed64").forcekit_bridge
    e0, f0 = bridge(_FakeState(pos, box))
    shifted = pos.copy()
    shifted[::7] += 3.0 * box  # three boxes away: the same physical system
    e1, f1 = bridge(_FakeState(shifted, box))
    assert bridge.rewraps == 1
    assert abs(e1 - e0) <= 1e-6 * abs(e0)
    assert relative_error(f1, f0) < 1e-6
