"""Misuse of the Python API (issue #32): threads sharing an evaluator, an evaluator collected while
a tune holds its context, Ctrl-C in long calls, non-finite and out-of-range arguments. Each must
end in a result or an exception naming the problem: never a crash, a hang or a silent NaN.

The thread and signal scenarios run in a child interpreter with a time limit, so that a heap
corruption or a deadlock fails the test instead of killing or hanging pytest."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import forcekit


def run_child(ctx, script, timeout):
    """Runs script (which finds its device selector in sys.argv[1]) in a fresh interpreter and
    returns its output; a time-out (a deadlock) or a crash (heap corruption) fails the test."""
    code = textwrap.dedent(script)
    try:
        done = subprocess.run([sys.executable, "-c", code, ctx.device["selector"]],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the scenario hung (no end within {timeout} s); output so far:\n"
                    f"{exc.stdout}\n{exc.stderr}")
    assert done.returncode == 0, (
        f"the scenario died with exit status {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def test_set_particles_racing_compute(ctx):
    # One thread alternates 2000 and 10 particles, another computes. compute() used to size its
    # result from a count read before the binding took the lock, so a larger N arriving in
    # between wrote past the array (heap corruption: a crash in 10 of 10 runs within 1.1 s,
    # median 0.3 s, before the fix). Every result must be one of the two systems' forces, bit
    # for bit (fixed64 sums in any order to the same bits), and no call may see the count of a
    # set_particles in progress (before the fix: a StateError "compute before set_particles").
    out = run_child(ctx, """
        import sys, threading, time
        import numpy as np
        import forcekit
        ctx = forcekit.Context(sys.argv[1])
        ev = ctx.evaluator("ga", accum="fixed64", eps=0.05)  # test_forces built it: cached
        rng = np.random.default_rng()
        systems = {n: rng.uniform(-1, 1, (n, 3)) for n in (2000, 10)}
        want = {}
        for n, pos in systems.items():
            ev.set_particles(pos)
            want[n] = ev.compute().copy()
        stop = time.monotonic() + 3.0
        swaps, errors = [0], []
        def swap():
            try:
                while time.monotonic() < stop:
                    ev.set_particles(systems[2000]); time.sleep(0.001)
                    ev.set_particles(systems[10]); time.sleep(0.001)
                    swaps[0] += 1
            except BaseException as exc:
                errors.append(exc)
        thread = threading.Thread(target=swap)
        thread.start()
        computes, spurious = 0, 0
        while time.monotonic() < stop:
            try:
                forces = ev.compute()
            except forcekit.StateError:  # "compute before set_particles": it always had some
                spurious += 1
                continue
            n = len(forces)
            assert n in want, n
            assert np.array_equal(forces, want[n]), n
            computes += 1
        thread.join()
        assert not errors, errors
        assert not spurious, f"{spurious} spurious StateErrors"
        print("swaps", swaps[0], "computes", computes)
    """, timeout=120)
    swaps, computes = int(out.split()[1]), int(out.split()[3])
    assert swaps > 10 and computes > 10, out  # the race was exercised


def test_compute_into_out_after_another_thread_changed_n(ctx, rng):
    # out is checked against N under the lock: a shape that was right when the caller sized it
    # but is no longer is a ValueError, never a write past it.
    ev = ctx.evaluator("ga", eps=0.1)
    ev.set_particles(rng.uniform(size=(8, 3)))
    out = np.empty((8, 3))
    ev.set_particles(rng.uniform(size=(20, 3)))  # as another thread would
    with pytest.raises(ValueError, match=r"out: expected shape \(20, 3\), got \(8, 3\)"):
        ev._impl.compute(out)  # past the Python layer's own check
    with pytest.raises(ValueError, match=r"positions: expected shape \(20, 3\), got \(8, 3\)"):
        ev._impl.update_positions(np.zeros((8, 3)), None)


def collect_while_tune_holds_the_context(ctx, tmp_path, make_doomed):
    """In a child interpreter: make_doomed (code at the script's indentation, using ctx, np and
    rng) fills the list `doomed`; a tune with a progress callback then runs in a thread, holding
    the context's lock, while the main thread drops and collects the doomed objects one by one.
    The tune's thread must destroy them when it lets go, and the context must still work."""
    setup = textwrap.indent(textwrap.dedent(make_doomed).strip("\n"), " " * 8)
    run_child(ctx, f"""
        import gc, sys, threading
        import numpy as np
        import forcekit
        ctx = forcekit.Context(sys.argv[1])
        rng = np.random.default_rng()
{setup}
        tuning, collected, errors = threading.Event(), threading.Event(), []
        def progress(p):
            tuning.set()
            return collected.is_set()
        def run():
            try:
                forcekit.tune("ga", "float", context=ctx, n=1024, budget_seconds=60,
                              database={str(tmp_path / "tuning.json")!r}, progress=progress)
            except BaseException as exc:
                errors.append(exc)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        assert tuning.wait(60), "the tune never called back"
        while doomed:
            del doomed[0]
            gc.collect()
        collected.set()
        thread.join()
        assert not errors, errors
        assert ctx._impl._live == 0  # the tune's thread destroyed them when it let go
        ev = ctx.evaluator("ga", eps=0.1)
        ev.set_particles(np.eye(3))
        assert ev.compute().shape == (3, 3)
        ctx.close()
        print("ok")
    """, timeout=180)


def test_evaluator_collected_while_tune_holds_the_context(ctx, tmp_path):
    # tune() with a progress callback in a thread holds the context's lock and calls back into
    # Python; the main thread drops evaluators of that context and collects them. ~Evaluator
    # used to wait for the lock with the GIL held while the callback waited for the GIL: a
    # deadlock (3 of 3 runs hung before the fix). The callback stops the tune once the evaluators
    # are gone; the context must still work afterwards.
    collect_while_tune_holds_the_context(ctx, tmp_path, """
        doomed = [ctx.evaluator("ga", eps=0.1) for _ in range(3)]
        for ev in doomed:
            ev.set_particles(rng.uniform(size=(16, 3)))
        del ev
    """)


def test_integrator_collected_while_tune_holds_the_context(ctx, tmp_path):
    # The same for integrators (Evaluator.integrator): each holds its evaluator, so collecting it
    # retires the integrator and then its evaluation, which the tune's thread must destroy in that
    # order (fk_integrator before its fk_eval) when it lets go of the lock.
    if not ctx.device["fp64"]:
        pytest.skip("the integrator needs fp64")
    collect_while_tune_holds_the_context(ctx, tmp_path, """
        doomed = []
        for _ in range(3):
            ev = ctx.evaluator("ga", eps=0.1)
            ev.set_particles(rng.uniform(size=(16, 3)))
            integ = ev.integrator("verlet", dt=0.001)
            integ.set_state(rng.uniform(size=(16, 3)))
            integ.step(3)
            doomed.append(integ)
        del ev, integ
    """)


def test_progress_callback_using_the_tuned_context(ctx, tmp_path):
    # A callback that computes on the context being tuned would lock a mutex its own thread holds
    # (undefined; a hang): it raises RuntimeError out of tune() instead. One that drops an
    # evaluator of that context must not hang either: the tune's thread destroys it when done.
    run_child(ctx, f"""
        import gc, sys
        import numpy as np
        import forcekit
        ctx = forcekit.Context(sys.argv[1])
        ev = ctx.evaluator("ga", eps=0.1)
        ev.set_particles(np.eye(3))
        database = {str(tmp_path / "tuning.json")!r}
        try:
            forcekit.tune("ga", "float", context=ctx, n=1024, budget_seconds=60,
                          database=database, progress=lambda p: ev.compute())
        except RuntimeError as exc:
            assert "already inside a call on this context" in str(exc), exc
        else:
            raise AssertionError("no RuntimeError")
        held = [ev]
        del ev
        def drop(p):
            held.clear()
            gc.collect()
            return True
        forcekit.tune("ga", "float", context=ctx, n=1024, budget_seconds=60, database=database,
                      progress=drop)
        assert not held and ctx._impl._live == 0
        print("ok")
    """, timeout=180)


INTERRUPT = """
    import os, signal, sys, threading
    import numpy as np
    import forcekit
    ctx = forcekit.Context(sys.argv[1])
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        {call}
    except KeyboardInterrupt:
        print("interrupted")
    else:
        print("ran to completion")
"""


def test_ctrl_c_stops_reference_forces(ctx):
    # 10^10 pair terms: minutes on one core. Before the fix the call ignored SIGINT until done
    # (the child then timed out here); it now stops between two slices of rows.
    out = run_child(ctx, INTERRUPT.format(
        call="forcekit.reference_forces('ga', np.random.default_rng().uniform(size=(100000, 3)))"),
        timeout=100)
    assert out.strip() == "interrupted"


def test_ctrl_c_stops_tune_without_a_progress_callback(ctx, tmp_path):
    # Every candidate at N = 4096 in a 600 s budget: far longer than the signal's 1 s. Before the
    # fix, without a callback nothing checked for signals until the whole run had ended.
    out = run_child(ctx, INTERRUPT.format(
        call=f"forcekit.tune('ga', 'float', context=ctx, n=4096, budget_seconds=600, "
             f"database={str(tmp_path / 'tuning.json')!r})"),
        timeout=100)
    assert out.strip() == "interrupted"


def test_reference_forces_refuses_non_finite_input(rng):
    pos = rng.uniform(size=(6, 3))
    for bad in (np.nan, np.inf):
        p = pos.copy()
        p[4, 1] = bad
        with pytest.raises(forcekit.InvalidInputError, match="positions: non-finite value .* particle 4"):
            forcekit.reference_forces("ga", p)
        m = np.ones(6)
        m[2] = bad
        with pytest.raises(ValueError, match="masses_or_charges: non-finite value .* particle 2"):
            forcekit.reference_forces("ljc_constant", pos * 3, m)
        v = np.zeros((6, 3))
        v[5, 0] = bad
        with pytest.raises(ValueError, match="velocities: non-finite value .* particle 5"):
            forcekit.reference_forces("gaj", pos, velocities=v, eps=0.1)
        # The C library refuses it too (fk_reference_forces used to return NaN forces).
        with pytest.raises(forcekit.InvalidInputError):
            forcekit._core.reference_forces("ga", p, None, None, None, 0.1, 0.0, 0.0, [0.0] * 4,
                                            [0.0] * 3, None, 0, None, False)


def test_reference_forces_exclusions_checked(rng):
    pos = rng.uniform(size=(5, 3)) * 4
    with pytest.raises(ValueError, match="exclusions: indices must lie in 0 .. 4"):
        forcekit.reference_forces("lj", pos, exclusions=[[0, 5]])
    with pytest.raises(ValueError, match="exclusions: indices must lie"):
        forcekit.reference_forces("lj", pos, exclusions=[[-1, 2]])


@pytest.mark.parametrize("kwargs, error, name", [
    ({"expected_count": -1}, ValueError, "expected_count"),
    ({"expected_count": 2**64}, ValueError, "expected_count"),
    ({"expected_count": "10"}, TypeError, "expected_count"),
    ({"unroll": (2**31, 1)}, ValueError, r"unroll\[0\]"),
    ({"unroll": (1, -1)}, ValueError, r"unroll\[1\]"),
    ({"unroll": (1, 2, 3)}, ValueError, "unroll"),
    ({"unroll": 4}, TypeError, "unroll"),
    ({"work_group_size": 2**40}, ValueError, "work_group_size"),
    ({"j_splits": 2**31}, ValueError, "j_splits"),
    ({"lanes": 1.5}, TypeError, "lanes"),
    ({"max_exclusions": -3}, ValueError, "max_exclusions"),
    ({"eps": "soft"}, TypeError, "eps"),
    ({"skin": None}, TypeError, "skin"),
    ({"box": "big"}, TypeError, "box"),
    ({"accum": ["fixed64"]}, ValueError, "accum"),
    ({"algorithm": {"cells"}}, ValueError, "algorithm"),
    ({"result_type": ["double"]}, ValueError, "result_type"),
])
def test_evaluator_arguments_name_themselves(ctx, kwargs, error, name):
    with pytest.raises(error, match=name):
        ctx.evaluator("ga", **kwargs)


@pytest.mark.parametrize("kwargs, error, name", [
    ({"n": -1}, ValueError, "n: must lie"),
    ({"seed": -5}, ValueError, "seed"),
    ({"seed": 2**64}, ValueError, "seed"),
    ({"unroll": (1, 2**32)}, ValueError, r"unroll\[1\]"),
    ({"budget_seconds": "long"}, TypeError, "budget_seconds"),
    ({"lanes": 2**31}, ValueError, "lanes"),
    ({"progress": 3}, TypeError, "progress"),
])
def test_tune_arguments_name_themselves(ctx, kwargs, error, name):
    with pytest.raises(error, match=name):
        forcekit.tune("ga", "float", context=ctx, **kwargs)


def test_context_arguments_name_themselves(tmp_path):
    with pytest.raises(TypeError, match="kernel_dir: expected a path"):
        forcekit.Context("cpu", kernel_dir=3)
    with pytest.raises(TypeError, match="cache_dir: expected a path"):
        forcekit.Context("cpu", cache_dir=["x"])
    with pytest.raises(TypeError, match="database: expected a path"):
        forcekit.tune("ga", "float", device="cpu", database=1.5)
    c = forcekit.Context("cpu", cache_dir=tmp_path)  # a pathlib.Path is a path
    assert c.cache_dir == str(tmp_path)
