"""forcekit.tune through the binding, and the GIL release / per-context serialization."""
import json
import threading

import numpy as np
import pytest

import forcekit
from reference import gravity, relative_error


def test_tune_writes_database(ctx, tmp_path):
    database = tmp_path / "tuning.json"
    seen = []
    result = forcekit.tune("ga", "float", context=ctx, n=1024, budget_seconds=20,
                           database=str(database), unroll=(1, 1), local_tiling=False, lanes=-1,
                           progress=lambda p: seen.append(p["done"]) and False)
    assert result["kernel"] == "ga" and result["accum"] == "float"
    assert len(result["buckets"]) == 1 and result["buckets"][0]["bucket"] == 1024
    best = result["buckets"][0]["best"]
    assert best is not None and best["outcome"] == "measured" and best["unroll_i"] == 1
    assert seen, "the progress callback was called"
    assert result["database"] == str(database)
    json.loads(database.read_text())  # a valid JSON database was written


def test_tune_progress_exception_propagates(ctx, tmp_path):
    def stop(_):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        forcekit.tune("ga", "float", context=ctx, n=1024, budget_seconds=20,
                      database=str(tmp_path / "t.json"), unroll=(1, 1), lanes=-1, progress=stop)


def test_threads_share_one_context_and_use_their_own(ctx, rng):
    # Several Python threads computing at once: on one context the binding serializes them (the
    # C library's rule), on separate contexts they run side by side; every result must be right.
    pos = rng.uniform(-1, 1, (200, 3))
    want = gravity(pos, np.ones(200), 0.1)
    other = forcekit.Context(ctx.device["selector"])
    errors, results = [], []

    def work(context):
        try:
            ev = context.evaluator("ga", accum="double", eps=0.1)
            ev.set_particles(pos)
            for _ in range(5):
                results.append(relative_error(ev.compute(), want))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(c,)) for c in (ctx, ctx, other, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors and len(results) == 20
    assert max(results) < 1e-5


def test_closed_context(rng):
    c = forcekit.Context("cpu")
    ev = c.evaluator("ga", eps=0.1)
    c.close()  # the evaluator keeps the device until it goes
    ev.set_particles(rng.uniform(size=(5, 3)))
    assert ev.compute().shape == (5, 3)
    with pytest.raises(RuntimeError, match="closed"):
        c.evaluator("ga")
