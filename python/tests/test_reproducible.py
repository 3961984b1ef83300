"""fixed64 in reproducible mode: the same bits every time, whatever the loop or variant."""
import numpy as np

import forcekit
from conftest import lattice


def _forces(ctx, kernel, particles, **config):
    ev = ctx.evaluator(kernel, accum="fixed64", reproducible=True, **config)
    ev.set_particles(**particles)
    return ev.compute()


def test_same_bits_twice(ctx, rng):
    pos = rng.uniform(-1, 1, (300, 3))
    mass = rng.uniform(0.1, 1, 300)
    a = _forces(ctx, "ga", dict(positions=pos, masses_or_charges=mass), eps=0.01)
    b = _forces(ctx, "ga", dict(positions=pos, masses_or_charges=mass), eps=0.01)
    assert a.tobytes() == b.tobytes()
    # A second context (new programs, new queue) gives the same bits too.
    other = forcekit.Context(ctx.device["selector"], cache_dir="off")
    c = _forces(other, "ga", dict(positions=pos, masses_or_charges=mass), eps=0.01)
    assert a.tobytes() == c.tobytes()


def test_same_bits_across_loops(ctx, rng):
    pos, box = lattice(rng, 512)
    q = rng.uniform(-1, 1, len(pos))
    p = dict(positions=pos, masses_or_charges=q)
    base = _forces(ctx, "ljc_constant", p, cutoff=2.5, box=box)
    for algorithm in ("symmetric", "cells", "neighbors"):
        f = _forces(ctx, "ljc_constant", p, cutoff=2.5, box=box, algorithm=algorithm)
        assert f.tobytes() == base.tobytes(), algorithm
    ev = ctx.evaluator("ljc_constant", accum="fixed64", reproducible=True, cutoff=2.5, box=box)
    assert ev.reproducible in (True, False)


def test_float_is_not_promised_bit_identity(ctx, rng):
    # Guard for the test above: a different summation order with the float accumulator is
    # allowed to (and on POCL does) change bits, so a bit comparison can fail.
    pos, box = lattice(rng, 512)
    p = dict(positions=pos)
    e1 = ctx.evaluator("lj", accum="float", cutoff=2.5, box=box)
    e1.set_particles(**p)
    e2 = ctx.evaluator("lj", accum="float", cutoff=2.5, box=box, algorithm="symmetric")
    e2.set_particles(**p)
    f1, f2 = e1.compute(), e2.compute()
    assert np.allclose(f1, f2, rtol=0, atol=1e-4 * np.abs(f1).max())
