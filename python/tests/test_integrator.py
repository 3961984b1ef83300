"""The device integrator from Python (Evaluator.integrator, fk_integrator): the binding passes the
state through unchanged, agrees with a host velocity-Verlet loop over the plain force path, its
energies with the host's sums, and Langevin runs are the same bits twice and across a restart.
The schemes themselves are tested in C (tests/test_integrator.c); here, the door into them."""
import numpy as np
import pytest

import forcekit
from conftest import lattice

CUTOFF = 2.5


def fluid(ctx, rng, n, accum="float", potential=False, algorithm="cells", **extra):
    pos, box = lattice(rng, n)
    ev = ctx.evaluator("lj", accum=accum, cutoff=CUTOFF, box=box, algorithm=algorithm,
                       potential=potential, **extra)
    ev.set_particles(pos)
    vel = rng.normal(0.0, 1.0, (n, 3))
    vel -= vel.mean(axis=0)
    return ev, pos, vel, box


def needs_fp64(ctx):
    if not ctx.device["fp64"]:
        pytest.skip("the integrator keeps its state in double: the device has no fp64")


def periodic_difference(a, b, box):
    d = a - b
    return d - box * np.round(d / box)


def test_verlet_matches_host_loop(ctx, rng):
    """Velocity Verlet (kick-drift-kick, masses 1) against the same scheme in numpy, with the
    forces of a second evaluation through compute(): the same forces at the same positions, so
    the two trajectories agree to rounding (fused multiply-adds on the device may differ)."""
    needs_fp64(ctx)
    n, dt, steps = 256, 0.002, 25
    ev, pos, vel, box = fluid(ctx, rng, n)
    host = ctx.evaluator("lj", cutoff=CUTOFF, box=box, algorithm="cells")
    host.set_particles(pos)
    integ = ev.integrator("verlet", dt=dt)
    integ.set_state(pos, vel)
    integ.step(steps)
    x, v = pos.copy(), vel.copy()
    a = host.compute()
    for _ in range(steps):
        v += 0.5 * dt * a
        x = np.mod(x + dt * v, box)
        host.update_positions(x)
        a = host.compute()
        v += 0.5 * dt * a
    xd, vd, step = integ.state()
    assert step == steps
    assert np.all((xd >= 0) & (xd < box))
    assert np.max(np.abs(periodic_difference(xd, x, box))) < 1e-9
    assert np.max(np.abs(vd - v)) < 1e-8
    # the particles did move: the comparison is not of two unchanged states
    assert np.max(np.abs(periodic_difference(xd, pos, box))) > 1e-3


def test_energies_match_host_sums(ctx, rng):
    needs_fp64(ctx)
    n = 300
    ev, pos, vel, box = fluid(ctx, rng, n, potential=True)
    masses = rng.uniform(0.5, 2.0, n)
    integ = ev.integrator("verlet", dt=0.002, masses=masses)
    integ.set_state(pos, vel)
    integ.step(10)
    x, v, _ = integ.state()
    kinetic, potential = integ.energies()
    assert kinetic == pytest.approx(0.5 * np.sum(masses[:, None] * v * v), rel=1e-12)
    check = ctx.evaluator("lj", cutoff=CUTOFF, box=box, algorithm="all-pairs", potential=True)
    check.set_particles(x)
    check.compute()
    assert potential == pytest.approx(check.potentials().sum(), rel=1e-5)
    # without potential=True the potential is not available, and says so by None
    plain, pos2, vel2, _ = fluid(ctx, rng, 125)
    integ2 = plain.integrator(dt=0.002)
    integ2.set_state(pos2, vel2)
    assert integ2.energies()[1] is None


def test_langevin_same_bits_twice_and_across_restart(ctx, rng):
    """The noise is a function of (seed, step, particle): two runs, and a run restarted from its
    saved state with its step number, end in the same bits. The all-pairs loop sums every
    particle's pairs in one order whatever the history (lists rebuilt at a restart would reorder
    a float sum; a fixed64 restart chooses its scale from the restart's positions,
    docs/simulate.md), so the forces at the restart are those the uninterrupted run had."""
    needs_fp64(ctx)
    n, dt, steps = 200, 0.004, 30
    ev, pos, vel, box = fluid(ctx, rng, n, algorithm="all-pairs")

    def run(split):
        integ = ev.integrator("langevin", dt=dt, temperature=1.2, friction=2.0, seed=12345)
        integ.set_state(pos, vel)
        integ.step(split)
        x, v, step = integ.state()
        del integ
        again = ev.integrator("langevin", dt=dt, temperature=1.2, friction=2.0, seed=12345)
        again.set_state(x, v, step)
        again.step(steps - split)
        return again.state()

    x1, v1, s1 = run(steps)  # uninterrupted (the second integrator steps 0 times)
    x2, v2, s2 = run(steps)
    x3, v3, s3 = run(11)
    assert s1 == s2 == s3 == steps
    assert np.array_equal(x1, x2) and np.array_equal(v1, v2)
    assert np.array_equal(x1, x3) and np.array_equal(v1, v3)
    # another seed draws other numbers
    other = ev.integrator("langevin", dt=dt, temperature=1.2, friction=2.0, seed=12346)
    other.set_state(pos, vel)
    other.step(steps)
    assert not np.array_equal(other.state()[1], v1)


def test_counters_and_wrong_use(ctx, rng):
    needs_fp64(ctx)
    ev, pos, vel, box = fluid(ctx, rng, 128, algorithm="neighbors", skin=0.3)
    with pytest.raises(ValueError, match="scheme"):
        ev.integrator("leapfrog", dt=0.01)
    with pytest.raises(forcekit.InvalidArgumentError):
        ev.integrator("verlet", dt=-1.0)
    with pytest.raises(forcekit.InvalidArgumentError):
        ev.integrator("langevin", dt=0.01, temperature=0.0, friction=1.0)
    with pytest.raises(ValueError, match="masses"):
        ev.integrator("verlet", dt=0.01, masses=np.ones(5))
    with pytest.raises(TypeError, match="dt"):
        ev.integrator("verlet", dt="0.01")
    integ = ev.integrator("verlet", dt=0.005)
    with pytest.raises(forcekit.StateError):
        integ.step(1)  # before set_state
    with pytest.raises(ValueError, match="positions"):
        integ.set_state(pos[:10])
    bad = pos.copy()
    bad[3, 1] = np.nan
    with pytest.raises(forcekit.InvalidInputError, match="positions"):
        integ.set_state(bad)
    integ.set_state(pos, vel)
    integ.step(50)
    c = integ.counters
    assert c["rebuilds"] >= 1 and c["syncs"] >= 1
    unset = ctx.evaluator("lj", cutoff=CUTOFF, box=box)
    with pytest.raises(forcekit.StateError):
        unset.integrator(dt=0.01)


def test_integrator_keeps_its_evaluator_alive(ctx, rng):
    """The C API needs the evaluation to outlive the integrator: dropping the Python evaluator
    first must not free it under the integrator."""
    needs_fp64(ctx)
    ev, pos, vel, box = fluid(ctx, rng, 125)
    integ = ev.integrator(dt=0.002)
    del ev
    import gc

    gc.collect()
    integ.set_state(pos, vel)
    integ.step(5)
    assert integ.state()[2] == 5
