"""Evaluator.update_positions with velocities (gaj: the jerk needs them): the binding must pass the
new velocities through to fk_eval_update_positions, and the result must be the reference's for the
new positions and velocities, on fresh random inputs (issue #38: a binding that dropped them went
unnoticed)."""
import numpy as np
import pytest

import forcekit
from reference import relative_error

# Single-precision pair terms summed over a few hundred partners, as in test_forces.py; the
# accumulator is double (fixed64 too: the same bound holds for it).
TOL = 2e-5


@pytest.mark.parametrize("accum", ["double", "fixed64"])
def test_gaj_update_positions_with_velocities(ctx, rng, accum):
    if accum == "double" and not ctx.device["fp64"]:
        pytest.skip("double needs fp64")
    n, eps = 130, 0.1
    pos, vel = rng.uniform(-1, 1, (n, 3)), rng.normal(size=(n, 3))
    mass = rng.uniform(0.1, 1.0, n)
    ev = ctx.evaluator("gaj", accum=accum, eps=eps)
    ev.set_particles(pos, mass, velocities=vel)
    ev.compute()
    # new positions and velocities unrelated to the first (a jerk from the old velocities is off
    # by its whole size)
    pos2 = pos + rng.uniform(-0.05, 0.05, (n, 3))
    vel2 = rng.normal(size=(n, 3))
    ev.update_positions(pos2, velocities=vel2)
    out = ev.compute()
    assert out.shape == (n, 6)
    ref, _ = forcekit.reference_forces("gaj", pos2, mass, vel2, eps=eps, potential=True)
    stale, _ = forcekit.reference_forces("gaj", pos2, mass, vel, eps=eps, potential=True)
    assert relative_error(out[:, :3], ref[:, :3]) < TOL
    assert relative_error(out[:, 3:], ref[:, 3:]) < TOL
    assert relative_error(stale[:, 3:], ref[:, 3:]) > 100 * TOL  # the check can tell them apart


def test_gaj_update_positions_same_as_set_particles(ctx, rng):
    """The update's results are set_particles' on the same inputs, bit for bit (fixed64: integer
    sums, and with scale_policy="each_upload" the scale follows the data in both; the default
    keeps set_particles' scale, test_default_scale_policy_keeps_accuracy)."""
    n, eps = 97, 0.1
    pos, vel = rng.uniform(-1, 1, (n, 3)), rng.normal(size=(n, 3))
    mass = rng.uniform(0.1, 1.0, n)
    pos2, vel2 = pos + rng.uniform(-0.05, 0.05, (n, 3)), rng.normal(size=(n, 3))
    updated = ctx.evaluator("gaj", accum="fixed64", eps=eps, scale_policy="each_upload")
    updated.set_particles(pos, mass, velocities=vel)
    updated.compute()
    updated.update_positions(pos2, velocities=vel2)
    fresh = ctx.evaluator("gaj", accum="fixed64", eps=eps)
    fresh.set_particles(pos2, mass, velocities=vel2)
    assert np.array_equal(updated.compute(), fresh.compute())


def test_default_scale_policy_keeps_accuracy(ctx, rng):
    """The default scale_policy ("auto": fixed64 keeps set_particles' scale across updates,
    redoing a compute that overflows it) stays within fixed64's quantum per term of a fresh
    evaluation of the same positions, and within TOL of the reference, over a few steps on fresh
    random inputs; an unknown policy is refused by name."""
    n, eps = 120, 0.05
    pos, mass = rng.uniform(-1, 1, (n, 3)), rng.uniform(0.1, 1.0, n)
    kept = ctx.evaluator("ga", accum="fixed64", eps=eps)
    kept.set_particles(pos, mass)
    kept.compute()
    # a ga term is below m / eps^2; fixed64's quantum is 2^(ceil(log2 n) - 60) of the largest
    # term or less (2^-53 here), so a kept scale 2^7 coarser still rounds within 2^-46 of it
    quantum = mass.max() / eps**2 * 2.0**-46
    for _ in range(3):
        pos = pos + rng.uniform(-0.02, 0.02, (n, 3))
        kept.update_positions(pos)
        got = kept.compute()
        fresh = ctx.evaluator("ga", accum="fixed64", eps=eps)
        fresh.set_particles(pos, mass)
        want = fresh.compute()
        assert np.max(np.abs(got - want)) <= n * quantum
        ref = forcekit.reference_forces("ga", pos, mass, eps=eps)
        assert relative_error(got, ref) < TOL
    with pytest.raises(ValueError, match="scale_policy"):
        ctx.evaluator("ga", accum="fixed64", eps=eps, scale_policy="each")
