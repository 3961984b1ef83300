"""Error paths: each must raise the documented exception with a message naming the problem."""
import numpy as np
import pytest

import forcekit


@pytest.fixture
def ev(ctx):
    return ctx.evaluator("ga", eps=0.1)


def test_positions_wrong_shape(ev):
    with pytest.raises(ValueError, match="positions: expected shape"):
        ev.set_particles(np.zeros((10, 2)))
    with pytest.raises(ValueError, match="positions"):
        ev.set_particles(np.zeros(30))
    with pytest.raises(ValueError, match="positions: at least one"):
        ev.set_particles(np.zeros((0, 3)))


def test_wrong_dtype(ev):
    with pytest.raises(TypeError, match="positions: expected a real numeric array"):
        ev.set_particles(np.zeros((10, 3), dtype=np.complex128))
    with pytest.raises(TypeError, match="positions"):
        ev.set_particles([["a", "b", "c"]])
    with pytest.raises(TypeError, match="types: expected an integer array"):
        ev.set_particles(np.zeros((4, 3)), types=np.zeros(4))


def test_masses_wrong_length(ev, rng):
    with pytest.raises(ValueError, match=r"masses_or_charges: expected shape \(10,\)"):
        ev.set_particles(rng.uniform(size=(10, 3)), np.ones(9))


def test_nan_is_rejected_by_the_library(ev, rng):
    pos = rng.uniform(size=(10, 3))
    pos[3, 1] = np.nan
    with pytest.raises(forcekit.InvalidInputError) as info:
        ev.set_particles(pos)
    assert isinstance(info.value, ValueError)
    assert info.value.status == 2 and info.value.detail  # the library says which particle


def test_unknown_kernel_and_accum(ctx):
    with pytest.raises(ValueError, match="kernel: unknown force law 'nope'"):
        ctx.evaluator("nope")
    with pytest.raises(ValueError, match="accum: unknown accumulator"):
        ctx.evaluator("ga", accum="quad")
    with pytest.raises(ValueError, match="algorithm"):
        ctx.evaluator("lj", algorithm="octree")
    with pytest.raises(TypeError, match="kappa"):
        ctx.evaluator("ga", kappa=1.0)


def test_bad_device():
    with pytest.raises(forcekit.DeviceNotFoundError) as info:
        forcekit.Context(device="no-such-device-xyz")
    assert isinstance(info.value, LookupError)
    with pytest.raises(TypeError, match="device"):
        forcekit.Context(device=3)


def test_library_rejects_physics_with_detail(ctx):
    # Gravity takes no cutoff: the C library refuses, and its last error comes with the exception.
    with pytest.raises(forcekit.InvalidArgumentError) as info:
        ctx.evaluator("ga", cutoff=1.0)
    assert info.value.detail
    # A cutoff longer than half the box.
    with pytest.raises(forcekit.ForcekitError):
        ctx.evaluator("lj", cutoff=3.0, box=5.0)


def test_wrong_order(ctx, ev):
    with pytest.raises(forcekit.StateError):
        ev.compute()
    with pytest.raises(forcekit.StateError):
        ev.update_positions(np.zeros((3, 3)))
    ev2 = ctx.evaluator("ga", eps=0.1)
    ev2.set_particles(np.eye(3))
    ev2.compute()
    with pytest.raises(forcekit.StateError):
        ev2.potentials()  # not asked for


def test_out_checked(ev, rng):
    ev.set_particles(rng.uniform(size=(8, 3)))
    with pytest.raises(ValueError, match=r"out: expected shape \(8, 3\)"):
        ev.compute(out=np.empty((8, 4)))
    with pytest.raises(TypeError, match="out: expected dtype float64"):
        ev.compute(out=np.empty((8, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="out: must be C-contiguous"):
        ev.compute(out=np.empty((3, 8)).T)


def test_update_positions_count_must_match(ev, rng):
    ev.set_particles(rng.uniform(size=(8, 3)))
    with pytest.raises(ValueError, match=r"positions: expected shape \(8, 3\)"):
        ev.update_positions(rng.uniform(size=(9, 3)))


def test_pair_table_checked(ctx):
    lj = ctx.evaluator("lj")
    with pytest.raises(ValueError, match=r"table: expected shape \(T, T, 2\)"):
        lj.set_pair_table(np.ones((2, 2, 3)))
    with pytest.raises(forcekit.InvalidInputError):
        lj.set_pair_table(np.array([[[1.0, 1.0], [1.0, 1.0]], [[2.0, 1.0], [1.0, 1.0]]]))  # asymmetric
    with pytest.raises(ValueError, match="no pair table"):
        ctx.evaluator("ga").set_pair_table(np.ones((1, 1, 2)))


def test_exceptions_carry_status_names():
    e = forcekit._errors.from_status(8, "kernel build failed", "log: line 3: error")
    assert isinstance(e, forcekit.BuildError) and "line 3" in str(e)
