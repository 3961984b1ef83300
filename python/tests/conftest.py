"""Shared fixtures: one context on the test device ($FORCEKIT_DEVICE, else the first CPU, which is
POCL in CI) for the whole session, and fresh random inputs for every test."""
import os

import numpy as np
import pytest

import forcekit


@pytest.fixture(scope="session")
def ctx():
    return forcekit.Context(os.environ.get("FORCEKIT_DEVICE") or "cpu")


@pytest.fixture
def rng():
    # A fresh seed per run (printed on failure through the test's id), so every run tests new
    # inputs; FORCEKIT_TEST_SEED repeats one.
    seed = int(os.environ.get("FORCEKIT_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed} (FORCEKIT_TEST_SEED={seed} repeats it)")
    return np.random.default_rng(seed)


def lattice(rng, n, density=0.8, jitter=0.1):
    """n particles on a jittered cubic lattice (no close contacts) and its box length."""
    side = int(np.ceil(n ** (1 / 3)))
    box = side / density ** (1 / 3)
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    grid = grid[rng.permutation(len(grid))[:n]]
    pos = (grid + 0.5 + rng.uniform(-jitter, jitter, (n, 3))) * (box / side)
    return pos, box
