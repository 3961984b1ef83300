"""The native OpenMM plugin (forcekit.openmm.nonbonded_force, ForcekitNonbondedForce; issue #34)
against OpenMM's own forces on the Reference platform, on OpenMM's OpenCL platform (forcekit on
OpenMM's context and buffers) and on the Reference platform (forcekit's host path): forces and
energies, the features refused, serialization, an NVE run and fixed64's bit-identical
trajectories."""
import numpy as np
import pytest

openmm = pytest.importorskip("openmm")
from openmm import unit  # noqa: E402

import forcekit.openmm as fkmm  # noqa: E402
from reference import as_float  # noqa: E402
from test_openmm import TOL, charged_system, energy_scale, evaluate, relative_error, with_force  # noqa: E402

if not fkmm.plugin_available():
    pytest.skip("forcekit built without its OpenMM plugin", allow_module_level=True)

_names = [openmm.Platform.getPlatform(i).getName() for i in range(openmm.Platform.getNumPlatforms())]
# OpenCL: the device path (OpenMM's first OpenCL device, POCL in CI); Reference and CPU: the
# host path (forcekit on its own device).
PLATFORMS = [p for p in ("OpenCL", "Reference", "CPU") if p in _names]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_charged_nocutoff_vs_reference(rng, platform):
    # NoCutoff: forcekit's ljc_constant is NonbondedForce's LJ + Coulomb exactly (no cutoff, no
    # shift); exceptions with zero chargeProd and epsilon are exclusions.
    system, nb, pos, _ = charged_system(rng, 200, openmm.NonbondedForce.NoCutoff)
    f_ref, e_ref = evaluate(system, as_float(pos))
    f, e = evaluate(with_force(system, fkmm.nonbonded_force(nb)), pos, platform)
    assert relative_error(f, f_ref) < TOL
    assert abs(e - e_ref) < TOL * energy_scale(system, nb, as_float(pos))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_charged_cutoff_periodic_vs_reference(rng, platform):
    # OpenMM's CutoffPeriodic truncates LJ and uses reaction-field Coulomb, forcekit force-shifts
    # the whole pair function: shifted_force_correction() is the pairwise difference. With it the
    # two agree to rounding; without it they must not.
    cutoff = 0.9
    system, nb, pos, box = charged_system(rng, 300, openmm.NonbondedForce.CutoffPeriodic, cutoff)
    f_ref, _ = evaluate(system, as_float(pos))
    charges, types, table, excl = fkmm.nonbonded_parameters(nb)
    correction = fkmm.shifted_force_correction(as_float(pos), charges, types, table, cutoff,
                                               [box] * 3, 78.3, excl)
    f, _ = evaluate(with_force(system, fkmm.nonbonded_force(nb)), pos, platform)
    assert relative_error(f, f_ref + correction) < TOL
    assert relative_error(f, f_ref) > 100 * TOL


def _add_scaled_exceptions(nb, n):
    """Scaled 1-4 pairs as a force field has them (half the charge product, scaled epsilon), on
    particles that have no other exception."""
    pairs = []
    for i in range(30, min(n - 1, 120), 3):
        qi, si, ei = nb.getParticleParameters(i)
        qj, sj, ej = nb.getParticleParameters(i + 1)
        nb.addException(i, i + 1, 0.5 * qi * qj, 0.5 * (si + sj), 0.4 * (ei * ej).sqrt())
        pairs.append((i, i + 1))
    return pairs


@pytest.mark.parametrize("platform", PLATFORMS)
def test_scaled_exceptions_nocutoff_vs_reference(rng, platform):
    system, nb, pos, _ = charged_system(rng, 200, openmm.NonbondedForce.NoCutoff)
    _add_scaled_exceptions(nb, 200)
    f_ref, e_ref = evaluate(system, as_float(pos))
    f, e = evaluate(with_force(system, fkmm.nonbonded_force(nb)), pos, platform)
    assert relative_error(f, f_ref) < TOL
    assert abs(e - e_ref) < TOL * energy_scale(system, nb, as_float(pos))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("exceptions_pbc", [False, True])
def test_scaled_exceptions_cutoff_periodic_vs_reference(rng, platform, exceptions_pbc):
    # NonbondedForce computes exceptions without cutoff or reaction field (the minimum image only
    # with setExceptionsUsePeriodicBoundaryConditions), so the pairwise correction leaves them out
    # like the exclusions. A pair straddles the box: the image matters.
    cutoff = 0.9
    system, nb, pos, box = charged_system(rng, 300, openmm.NonbondedForce.CutoffPeriodic, cutoff)
    pairs = _add_scaled_exceptions(nb, 300)
    # Translate the whole configuration along x and wrap it, so that the box's x faces cut the
    # first exception pair whose x separation exceeds 0.1 nm: that pair's distance then depends
    # on the image (nothing else changes: the rest is minimum image). No new overlaps.
    for i, j in pairs:
        dx = pos[j, 0] - pos[i, 0]
        dx -= box * np.rint(dx / box)
        if abs(dx) > 0.1:
            break
    pos[:, 0] += box - (pos[i, 0] + 0.5 * dx)
    pos -= box * np.floor(pos / box)
    assert abs(pos[i, 0] - pos[j, 0]) > 0.5 * box  # the pair straddles the faces
    nb.setExceptionsUsePeriodicBoundaryConditions(exceptions_pbc)
    f_ref, _ = evaluate(system, as_float(pos))
    charges, types, table, excl = fkmm.nonbonded_parameters(nb, [])
    correction = fkmm.shifted_force_correction(as_float(pos), charges, types, table, cutoff,
                                               [box] * 3, 78.3, excl)
    f, _ = evaluate(with_force(system, fkmm.nonbonded_force(nb)), pos, platform)
    assert relative_error(f, f_ref + correction) < TOL


def _shifted_reference(nb, method):
    force = fkmm.lj_shifted_custom_force(nb)
    force.setNonbondedMethod(method)
    return force


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("method", ["CutoffPeriodic", "CutoffNonPeriodic"])
def test_lj_cutoff_vs_openmm_with_forcekit_physics(rng, platform, method):
    # The same physics in OpenMM (a CustomNonbondedForce with forcekit's force-shifted LJ):
    # forces and energies agree directly. Some particles are moved whole boxes away (OpenMM does
    # not wrap positions): the periodic force must not change.
    system, nb, pos, vel, box = fkmm.lj_fluid(n_cells=4)
    nb.setNonbondedMethod(getattr(openmm.NonbondedForce, method))
    custom = getattr(openmm.CustomNonbondedForce, method)
    pos = pos + rng.uniform(-0.03, 0.03, pos.shape)
    f_ref, e_ref = evaluate(with_force(system, _shifted_reference(nb, custom)), as_float(pos))
    force = fkmm.nonbonded_force(nb)
    f, e = evaluate(with_force(system, force), pos, platform)
    assert relative_error(f, f_ref) < TOL
    assert abs(e - e_ref) < TOL * abs(e_ref)
    if method == "CutoffPeriodic":
        shifted = pos.copy()
        shifted[::7] += np.array([3.0, -2.0, 1.0]) * box
        # The reference sees the coordinates forcekit gets: on OpenCL (single precision) OpenMM's
        # float posq wrapped by the plugin in float (correctly rounded, no contraction: numpy's
        # float32 does the same), on the host path the doubles wrapped then rounded to float.
        # (Compared with the unshifted reference instead, a float coordinate three boxes out
        # carries 4x the rounding, which r^-13 makes ~2e-5 of the largest force.)
        if platform == "OpenCL":
            p32, b32 = shifted.astype(np.float32), np.float32(box)
            seen = (p32 - b32 * np.floor(p32 / b32)).astype(np.float64)
        else:
            seen = as_float(shifted - box * np.floor(shifted / box))
        f_ref2, e_ref2 = evaluate(with_force(system, _shifted_reference(nb, custom)), seen)
        f2, e2 = evaluate(with_force(system, fkmm.nonbonded_force(nb)), shifted, platform)
        assert relative_error(f2, f_ref2) < TOL
        assert abs(e2 - e_ref2) < TOL * abs(e_ref2)


@pytest.mark.skipif("OpenCL" not in _names, reason="no OpenCL platform in OpenMM")
@pytest.mark.parametrize("precision", ["single", "mixed", "double"])
def test_opencl_precisions_and_force_groups(rng, precision):
    # posq is float4 in single and mixed precision and double4 in double, the energy buffer float
    # or double: the plugin's kernels take each. The force sits in group 3: asking for group 0
    # alone must leave it out.
    system, nb, pos, vel, box = fkmm.lj_fluid(n_cells=4)
    pos = pos + rng.uniform(-0.03, 0.03, pos.shape)
    f_ref, e_ref = evaluate(with_force(system, fkmm.lj_shifted_custom_force(nb)), as_float(pos))
    force = fkmm.nonbonded_force(nb)
    force.setForceGroup(3)
    sys2 = with_force(system, force)
    context = openmm.Context(sys2, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName("OpenCL"),
                             {"Precision": precision})
    context.setPositions(pos)
    state = context.getState(getForces=True, getEnergy=True, groups={3})
    f = state.getForces(asNumpy=True).value_in_unit(unit.kilojoule_per_mole / unit.nanometer)
    e = state.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
    assert relative_error(f, f_ref) < TOL
    assert abs(e - e_ref) < TOL * abs(e_ref)
    other = context.getState(getForces=True, getEnergy=True, groups={0})
    assert other.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole) == 0.0
    assert not np.any(other.getForces(asNumpy=True).value_in_unit(unit.kilojoule_per_mole / unit.nanometer))


def test_unsupported_features_are_refused_by_name():
    def fresh():
        nb = openmm.NonbondedForce()
        nb.addParticle(0.1, 0.3, 1.0)
        nb.addParticle(-0.1, 0.3, 1.0)
        nb.setNonbondedMethod(openmm.NonbondedForce.CutoffPeriodic)
        nb.setUseDispersionCorrection(False)
        return nb

    for method, name in [("PME", "PME"), ("Ewald", "Ewald"), ("LJPME", "LJPME")]:
        nb = fresh()
        nb.setNonbondedMethod(getattr(openmm.NonbondedForce, method))
        with pytest.raises(NotImplementedError, match=name):
            fkmm.nonbonded_force(nb)
    nb = fresh()
    nb.setUseSwitchingFunction(True)
    with pytest.raises(NotImplementedError, match="switching function"):
        fkmm.nonbonded_force(nb)
    nb = fresh()
    nb.setUseDispersionCorrection(True)
    with pytest.raises(NotImplementedError, match="dispersion correction"):
        fkmm.nonbonded_force(nb)
    nb = fresh()
    nb.addGlobalParameter("lambda", 1.0)
    nb.addParticleParameterOffset("lambda", 0, 0.1, 0.0, 0.0)
    with pytest.raises(NotImplementedError, match="parameter offsets"):
        fkmm.nonbonded_force(nb)


def test_triclinic_box_is_refused():
    system, nb, pos, vel, box = fkmm.lj_fluid(n_cells=3)
    force = fkmm.nonbonded_force(nb)  # before remove_force, which deletes nb
    fkmm.remove_force(system, openmm.NonbondedForce)
    system.addForce(force)
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(box, 0, 0), openmm.Vec3(0.2 * box, box, 0),
                                        openmm.Vec3(0, 0, box))
    with pytest.raises(openmm.OpenMMException, match="triclinic"):
        evaluate(system, pos, PLATFORMS[-1])


def test_serialization_round_trip():
    system, nb, *_ = charged_system(np.random.default_rng(1), 20, openmm.NonbondedForce.NoCutoff)
    xml = openmm.XmlSerializer.serialize(fkmm.nonbonded_force(nb, accum="float"))
    assert 'type="ForcekitNonbondedForce"' in xml and 'accum="float"' in xml
    assert openmm.XmlSerializer.serialize(openmm.XmlSerializer.deserialize(xml)) == xml
    bad = xml.replace('types="', 'types="-')
    with pytest.raises(Exception, match="types"):
        openmm.XmlSerializer.deserialize(bad)


def _run(platform, force_kind, steps, n_cells=3, report=None, **options):
    """An NVE run of the LJ fluid (argon units, reduced density 0.8442, T* = 0.72, dt = 0.005 tau,
    cutoff 2.5 sigma) with the plugin or OpenMM's own force with the same force-shifted LJ:
    (total energies every `report` steps, final positions, the final context)."""
    system, nb, pos, vel, box = fkmm.lj_fluid(n_cells=n_cells)
    force = fkmm.nonbonded_force(nb, **options) if force_kind == "forcekit" else fkmm.lj_shifted_custom_force(nb)
    fkmm.remove_force(system, openmm.NonbondedForce)
    system.addForce(force)
    integrator = openmm.VerletIntegrator(0.005 * fkmm.lj_time_unit())
    context = openmm.Context(system, integrator, openmm.Platform.getPlatformByName(platform))
    context.setPositions(pos)
    context.setVelocities(vel)
    energies = []
    report = report or steps
    for k in range(steps // report + 1):
        state = context.getState(getEnergy=True)
        energies.append((state.getPotentialEnergy() + state.getKineticEnergy()).value_in_unit(unit.kilojoule_per_mole))
        if k < steps // report:
            integrator.step(report)
    positions = context.getState(getPositions=True).getPositions(asNumpy=True).value_in_unit(unit.nanometer)
    return np.array(energies), positions, context


def test_nve_1000_steps_conserves_energy_as_openmm_does():
    # N = 256 on OpenMM's first platform of PLATFORMS (OpenCL in CI: OpenMM reorders its atoms
    # during the run, which the plugin follows through atomIndex). The plugin's largest
    # excursion of the total energy is within 2x of OpenMM's own force's (same Hamiltonian, same
    # platform and integrator), and the final forces in the context match the Reference platform
    # on the final positions.
    platform = PLATFORMS[0]
    e_fk, pos_fk, context = _run(platform, "forcekit", 1000, n_cells=4, report=50)
    e_mm, _, _ = _run(platform, "openmm", 1000, n_cells=4, report=50)
    excursion_fk = np.abs(e_fk - e_fk[0]).max()
    excursion_mm = np.abs(e_mm - e_mm[0]).max()
    print(f"max |E - E0| kJ/mol: forcekit {excursion_fk:.3e}, OpenMM {excursion_mm:.3e}")
    assert np.isfinite(e_fk).all()
    assert excursion_fk <= 2 * excursion_mm
    system, nb, *_ = fkmm.lj_fluid(n_cells=4)
    f_ref, _ = evaluate(with_force(system, fkmm.lj_shifted_custom_force(nb)), as_float(pos_fk))
    state = context.getState(getForces=True)
    f = state.getForces(asNumpy=True).value_in_unit(unit.kilojoule_per_mole / unit.nanometer)
    assert relative_error(f, f_ref) < TOL


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fixed64_trajectory_is_the_same_bits_twice(platform):
    a = _run(platform, "forcekit", 200, accum="fixed64", reproducible=True)[1]
    b = _run(platform, "forcekit", 200, accum="fixed64", reproducible=True)[1]
    assert np.isfinite(a).all()
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("platform", PLATFORMS[:2])
def test_barostat_box_changes(platform):
    # A MonteCarloBarostat changes the box every 5 steps: the plugin builds a forcekit evaluation
    # for each new box. After the run, the context's forces match the Reference platform's on the
    # final positions and box.
    system, nb, pos, vel, box = fkmm.lj_fluid(n_cells=4)
    force = fkmm.nonbonded_force(nb)
    fkmm.remove_force(system, openmm.NonbondedForce)
    system.addForce(force)
    system.addForce(openmm.MonteCarloBarostat(1.0, 87.0, 5))  # 1 bar: the dense fluid expands
    integrator = openmm.LangevinMiddleIntegrator(87.0, 5.0, 0.002)
    context = openmm.Context(system, integrator, openmm.Platform.getPlatformByName(platform))
    context.setPositions(pos)
    context.setVelocitiesToTemperature(87.0, 1)
    integrator.step(100)
    state = context.getState(getPositions=True, getForces=True, getEnergy=True)
    final_box = state.getPeriodicBoxVectors(asNumpy=True).value_in_unit(unit.nanometer)
    assert final_box[0, 0] != box  # the barostat moved it
    positions = state.getPositions(asNumpy=True).value_in_unit(unit.nanometer)
    reference_system, ref_nb, *_ = fkmm.lj_fluid(n_cells=4)
    ref = with_force(reference_system, fkmm.lj_shifted_custom_force(ref_nb))
    ref.setDefaultPeriodicBoxVectors(*[openmm.Vec3(*row) for row in final_box])
    f_ref, e_ref = evaluate(ref, as_float(positions))
    f = state.getForces(asNumpy=True).value_in_unit(unit.kilojoule_per_mole / unit.nanometer)
    # The barostat's own force is none (it scales positions), so the context's forces are ours.
    assert relative_error(f, f_ref) < TOL


def test_simulation_and_system_serialization(tmp_path):
    # An app.Simulation with a reporter, and the whole System through XmlSerializer (the proxy
    # serializes the force with it): the copy gives the same forces bit for bit.
    from openmm import app

    system, nb, pos, vel, box = fkmm.lj_fluid(n_cells=3)
    force = fkmm.nonbonded_force(nb)
    fkmm.remove_force(system, openmm.NonbondedForce)
    system.addForce(force)
    copy = openmm.XmlSerializer.deserialize(openmm.XmlSerializer.serialize(system))
    topology = app.Topology()
    chain = topology.addChain()
    for _ in range(system.getNumParticles()):
        topology.addAtom("Ar", app.element.argon, topology.addResidue("AR", chain))
    topology.setPeriodicBoxVectors(system.getDefaultPeriodicBoxVectors())
    forces = []
    for s in (system, copy):
        sim = app.Simulation(topology, s, openmm.VerletIntegrator(0.005 * fkmm.lj_time_unit()),
                             openmm.Platform.getPlatformByName(PLATFORMS[0]))
        sim.context.setPositions(pos)
        sim.context.setVelocities(vel)
        log = tmp_path / f"log{len(forces)}.csv"
        sim.reporters.append(app.StateDataReporter(str(log), 10, step=True, totalEnergy=True))
        sim.step(20)
        assert len(log.read_text().splitlines()) == 3  # header and two reports
        forces.append(sim.context.getState(getForces=True).getForces(asNumpy=True)._value)
    assert np.isfinite(forces[0]).all()
    assert forces[0].tobytes() == forces[1].tobytes()
