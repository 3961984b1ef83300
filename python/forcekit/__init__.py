"""forcekit: pairwise force kernels for N-body and molecular dynamics on OpenCL devices.

A thin layer over the C library (include/forcekit/forcekit.h); nothing is computed in Python.

    import numpy as np, forcekit
    ctx = forcekit.Context(device="cpu")
    ev = ctx.evaluator("ga", accum="fixed64", eps=0.01)
    ev.set_particles(positions, masses)            # (N, 3) and (N,) float64
    acc = ev.compute()                             # (N, 3) float64

Arrays: float64 C-contiguous (N, 3) positions (and (N,) masses/charges) are passed to the library
without a copy; other real dtypes and non-contiguous arrays are converted once; anything else is a
TypeError or ValueError naming the argument. A failing C call raises a ForcekitError subclass
whose ``detail`` is the context's last error (the OpenCL call that failed, the build log).
The GIL is released while the library works (set_particles, compute, tune); threads may share
a context (the binding serializes them and sizes every result under the context's lock).
"""

from __future__ import annotations

import numbers
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _errors
from ._errors import (
    AccumulatorOverflowError,
    BuildError,
    DeviceMemoryError,
    DeviceNotFoundError,
    ForcekitError,
    InvalidArgumentError,
    InvalidInputError,
    KernelSourceError,
    NoDeviceError,
    OpenCLError,
    StateError,
    UnsupportedError,
)
from . import _core

_core._set_error_factory(_errors.from_status)

__version__ = _core.version()

__all__ = [
    "Context",
    "Evaluator",
    "Integrator",
    "devices",
    "kernels",
    "accumulators",
    "reference_forces",
    "tune",
    "ForcekitError",
    "InvalidArgumentError",
    "InvalidInputError",
    "NoDeviceError",
    "DeviceNotFoundError",
    "UnsupportedError",
    "KernelSourceError",
    "BuildError",
    "DeviceMemoryError",
    "OpenCLError",
    "StateError",
    "AccumulatorOverflowError",
]

_KERNELS = {k["name"]: k for k in _core.kernels()}
_ACCUMS = {a["name"]: a for a in _core.accumulators()}
_ALGORITHMS = ("all-pairs", "symmetric", "cells", "neighbors")
_SCHEMES = {"verlet": 0, "langevin": 1, "hermite": 2}  # fk_integrator_kind


# ---- argument checking -------------------------------------------------------------------------


def _as_float_array(value: Any, name: str, shape: Tuple[Optional[int], ...]) -> np.ndarray:
    """value as a C-contiguous float64 array of the given shape (None: any length), without a
    copy when it already is one."""
    if isinstance(value, np.ndarray):
        array = value
    else:
        try:
            array = np.asarray(value)
        except Exception as exc:  # ragged lists and the like
            raise TypeError(f"{name}: expected an array of numbers, got {type(value).__name__}") from exc
    if array.dtype.kind not in "fiu" or array.dtype.kind == "f" and array.dtype.itemsize > 8:
        raise TypeError(
            f"{name}: expected a real numeric array (float64 preferred), got dtype {array.dtype}"
        )
    if array.ndim != len(shape) or any(
        want is not None and got != want for got, want in zip(array.shape, shape)
    ):
        want = "(" + ", ".join("N" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        raise ValueError(f"{name}: expected shape {want}, got {array.shape}")
    if array.dtype != np.float64 or not array.flags.c_contiguous:
        array = np.ascontiguousarray(array, dtype=np.float64)
    return array


def _as_int32(value: Any, name: str, count: int) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected an integer array, got dtype {array.dtype}")
    if array.shape != (count,):
        raise ValueError(f"{name}: expected shape ({count},), got {array.shape}")
    if count and (array.min() < 0 or array.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{name}: types must lie in 0 .. 2**31 - 1")
    return np.ascontiguousarray(array, dtype=np.int32)


_INT_MAX = 2**31 - 1
_SIZE_MAX = 2**64 - 1


def _integer(value: Any, name: str, low: int, high: int) -> int:
    """value as a Python int in low .. high, or a TypeError / ValueError naming the argument (the
    C fields behind these are int or size_t: an out-of-range value must not reach nanobind's
    conversion, whose TypeError names no argument)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name}: expected an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if not low <= value <= high:
        raise ValueError(f"{name}: must lie in {low} .. {high}, got {value}")
    return value


def _real(value: Any, name: str) -> float:
    """value as a float, or a TypeError naming the argument (float("x") names none)."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name}: expected a number, got {type(value).__name__} {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: expected a number, got {type(value).__name__}") from exc


def _finite(array: Optional[np.ndarray], name: str) -> None:
    """A ValueError (InvalidInputError) naming the argument and the first bad row when array
    holds a NaN or Inf: the host reference would return NaN forces for it."""
    if array is None or np.isfinite(array).all():
        return
    bad = np.argwhere(~np.isfinite(array))[0]
    raise InvalidInputError(2, "invalid input",
                            f"{name}: non-finite value {array[tuple(bad)]} at particle {bad[0]}")


def _path(value: Any, name: str) -> Optional[str]:
    """A directory argument as str (a pathlib.Path too), or a TypeError naming it."""
    if value is None:
        return None
    try:
        value = os.fspath(value)
    except TypeError:
        raise TypeError(f"{name}: expected a path (str or os.PathLike), got {type(value).__name__}") from None
    return value if isinstance(value, str) else os.fsdecode(value)


def _unroll(unroll: Any) -> Tuple[int, int]:
    if unroll is None:
        return 0, 0
    try:
        pair = tuple(unroll)
    except TypeError:
        raise TypeError(f"unroll: expected a pair (unroll_i, unroll_j), got {type(unroll).__name__}") from None
    if len(pair) != 2:
        raise ValueError(f"unroll: expected a pair (unroll_i, unroll_j), got {len(pair)} values")
    return (_integer(pair[0], "unroll[0]", 0, _INT_MAX), _integer(pair[1], "unroll[1]", 0, _INT_MAX))


def _box(box: Any) -> List[float]:
    if box is None:
        return [0.0, 0.0, 0.0]
    if isinstance(box, numbers.Real):
        return [float(box)] * 3
    try:
        values = [float(v) for v in np.asarray(box, dtype=np.float64).ravel()]
    except (TypeError, ValueError) as exc:
        raise TypeError(f"box: expected one length or three (Lx, Ly, Lz), got {box!r}") from exc
    if len(values) != 3:
        raise ValueError(f"box: expected one length or three (Lx, Ly, Lz), got {len(values)}")
    return values


def _kernel_info(kernel: str) -> Dict[str, Any]:
    if not isinstance(kernel, str):
        raise TypeError(f"kernel: expected a force law's name (str), got {type(kernel).__name__}")
    if kernel not in _KERNELS:
        raise ValueError(f"kernel: unknown force law {kernel!r}; known: {', '.join(_KERNELS)}")
    return _KERNELS[kernel]


def _law_parameters(info: Dict[str, Any], parameters: Optional[Sequence[float]], named: Dict[str, Any]) -> List[float]:
    """fk_eval_config.parameters from parameters= (raw) and the law's named parameters
    (kappa=..., dielectric=...)."""
    values = [0.0] * 4
    if parameters is not None:
        try:
            raw = [float(v) for v in np.asarray(parameters, dtype=np.float64).ravel()]
        except (TypeError, ValueError) as exc:
            raise TypeError(f"parameters: expected up to 4 numbers, got {parameters!r}") from exc
        if len(raw) > 4:
            raise ValueError(f"parameters: at most 4 values, got {len(raw)}")
        values[: len(raw)] = raw
    known = {p["name"]: p for p in info["parameters"]}
    for name, value in named.items():
        if name not in known:
            raise TypeError(
                f"unexpected keyword argument {name!r} for kernel {info['name']!r}"
                + (f" (its parameters: {', '.join(known)})" if known else "")
            )
        p = known[name]
        try:
            given = [float(v) for v in np.atleast_1d(np.asarray(value, dtype=np.float64))]
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name}: expected {p['count']} number(s), got {value!r}") from exc
        if len(given) != p["count"]:
            raise ValueError(f"{name}: expected {p['count']} value(s), got {len(given)}")
        values[p["first"] : p["first"] + p["count"]] = given
    return values


# ---- module functions --------------------------------------------------------------------------


def devices() -> List[Dict[str, Any]]:
    """Every OpenCL device of every platform, as dicts (selector "P:D", name, vendor, type
    "cpu"/"gpu", fp64, memory sizes, versions). An empty list when there is no OpenCL platform."""
    try:
        return _core.devices()
    except NoDeviceError:
        return []


def kernels() -> List[Dict[str, Any]]:
    """The force laws (name, description, force_components, pair_parameters, parameters)."""
    return [dict(k) for k in _KERNELS.values()]


def accumulators() -> List[Dict[str, Any]]:
    """The accumulators (name, description, needs_fp64, order_independent)."""
    return [dict(a) for a in _ACCUMS.values()]


class Context:
    """One OpenCL device, its queue, the kernel sources and the compiled-program cache.

    Args:
        device: a selector: "cpu", "gpu", "P:D" (platform:device) or a case-insensitive substring
            of the device name; None: $FORCEKIT_DEVICE, else the first GPU, else the first CPU.
        kernel_dir: the .cl sources; None: $FORCEKIT_KERNEL_DIR, else those installed with the
            package.
        cache_dir: compiled-program cache; None: $FORCEKIT_CACHE_DIR or the XDG cache; "off".
        device_timing: False creates the device's queue without OpenCL event profiling
            (fk_context_config.device_timing), which on some drivers costs every command host
            time (NVIDIA's: tens of microseconds a step at small N); evaluators' last_seconds is
            then -1 and tune() refuses the context. The results are the same bits either way.

    Raises DeviceNotFoundError (a LookupError) when nothing matches the selector, NoDeviceError
    when there is no OpenCL device at all. One context and its evaluators must be used by one
    thread at a time; the binding serializes calls from several Python threads on one context.
    """

    def __init__(self, device: Optional[str] = None, *, kernel_dir: Optional[str] = None,
                 cache_dir: Optional[str] = None, device_timing: bool = True):
        if device is not None and not isinstance(device, str):
            raise TypeError(f"device: expected a selector string, got {type(device).__name__}")
        kernel_dir, cache_dir = _path(kernel_dir, "kernel_dir"), _path(cache_dir, "cache_dir")
        self._impl = _core.Context(device, kernel_dir, cache_dir, bool(device_timing))

    @property
    def device(self) -> Dict[str, Any]:
        """The device in use (the same dict as devices() lists)."""
        return self._impl.device

    @property
    def last_error(self) -> str:
        """fk_context_last_error: the detail of the last failure, empty after a success."""
        return self._impl.last_error

    @property
    def warnings(self) -> str:
        """Problems that were not errors (an ignored corrupt tuning database), one per line."""
        return self._impl.warnings

    @property
    def kernel_dir(self) -> str:
        return self._impl.kernel_dir

    @property
    def cache_dir(self) -> Optional[str]:
        return self._impl.cache_dir

    def close(self) -> None:
        """Releases the device now (else when the last reference and evaluator go)."""
        self._impl.close()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._impl.closed:
            return "<forcekit.Context closed>"
        d = self.device
        return f"<forcekit.Context {d['selector']} {d['name']!r} ({d['type']})>"

    def evaluator(
        self,
        kernel: str,
        *,
        accum: Optional[str] = None,
        algorithm: str = "all-pairs",
        eps: float = 0.0,
        cutoff: float = 0.0,
        coulomb: float = 0.0,
        box: Union[None, float, Sequence[float]] = None,
        parameters: Optional[Sequence[float]] = None,
        potential: bool = False,
        reproducible: bool = False,
        skin: float = 0.0,
        expected_count: int = 0,
        unroll: Optional[Tuple[int, int]] = None,
        work_group_size: int = 0,
        local_tiling: Optional[bool] = None,
        j_splits: int = 0,
        lanes: int = 0,
        exclusion_mode: str = "on_the_fly",
        max_exclusions: int = 0,
        neighbor_lists: str = "auto",
        scale_policy: str = "auto",
        result_type: str = "double",
        positions: str = "float",
        refresh_cache: bool = False,
        **law_parameters: Any,
    ) -> "Evaluator":
        """Creates an evaluation of one force law (fk_eval_create); the program is compiled here.

        Args:
            kernel: "ga", "gaj", "lj", "ljc_constant", "ljc_linear", "ljc_sigmoidal", "buck",
                "yukawa" (docs/force-laws.md).
            accum: "float" (default), "double", "fixed64", "narumi", ... (docs/precision.md);
                with reproducible=True None means "fixed64".
            algorithm: "all-pairs", "symmetric", "cells" or "neighbors" (the last two need a
                cutoff).
            eps: gravitational softening (gravity only).
            cutoff: molecular laws: the cutoff distance (force-shifted); 0: the law's default
                (lj 2.5, others none).
            coulomb: Coulomb constant k (0 means 1).
            box: periodic box, one length or (Lx, Ly, Lz); None: open boundaries.
            parameters: the law's raw parameter array (up to 4); or name them: kappa=... (yukawa),
                dielectric=... (ljc_*).
            potential: also compute per-particle potentials (Evaluator.potentials()).
            reproducible: bit-identical results across devices and loops (fixed64 / narumi).
            positions: "float" (default) or "ds": coordinates (and masses, charges, velocities)
                on the device as float pairs, 48 bits, so accum="ref" agrees with double to
                about 1e-14 (all-pairs and symmetric, open boundaries; docs/precision.md).
            The rest map one to one onto fk_eval_config (include/forcekit/forcekit.h).
        """
        info = _kernel_info(kernel)
        if accum is not None and (not isinstance(accum, str) or accum not in _ACCUMS):
            raise ValueError(f"accum: unknown accumulator {accum!r}; known: {', '.join(_ACCUMS)}")
        if not isinstance(algorithm, str) or algorithm not in _ALGORITHMS:
            raise ValueError(f"algorithm: unknown pair loop {algorithm!r}; known: {', '.join(_ALGORITHMS)}")
        o = _core.EvalOptions()
        o.kernel = kernel
        o.accum = accum
        o.algorithm = _core.algorithm_find(algorithm)
        o.eps = _real(eps, "eps")
        o.cutoff = _real(cutoff, "cutoff")
        o.coulomb = _real(coulomb, "coulomb")
        o.box = _box(box)
        o.parameters = _law_parameters(info, parameters, law_parameters)
        o.potential = bool(potential)
        o.reproducible = bool(reproducible)
        o.skin = _real(skin, "skin")
        o.expected_count = _integer(expected_count, "expected_count", 0, _SIZE_MAX)
        o.unroll_i, o.unroll_j = _unroll(unroll)
        o.work_group_size = _integer(work_group_size, "work_group_size", 0, _INT_MAX)
        o.local_tiling = 0 if local_tiling is None else (1 if local_tiling else -1)
        o.j_splits = _integer(j_splits, "j_splits", -_INT_MAX - 1, _INT_MAX)
        o.lanes = _integer(lanes, "lanes", -_INT_MAX - 1, _INT_MAX)
        modes = {"on_the_fly": 0, "afterwards": 1}
        lists = {"auto": 0, "half": 1, "full": 2}
        scales = {"auto": 0, "keep": 1, "each_upload": 2}
        results = {"double": 0, "float": 1}
        position_kinds = {"float": 1, "ds": 2}
        for name, value, table in (("exclusion_mode", exclusion_mode, modes),
                                   ("positions", positions, position_kinds),
                                   ("neighbor_lists", neighbor_lists, lists),
                                   ("scale_policy", scale_policy, scales),
                                   ("result_type", result_type, results)):
            if not isinstance(value, str) or value not in table:
                raise ValueError(f"{name}: expected one of {', '.join(table)}, got {value!r}")
        o.exclusion_mode = modes[exclusion_mode]
        o.max_exclusions = _integer(max_exclusions, "max_exclusions", 0, _INT_MAX)
        o.neighbor_lists = lists[neighbor_lists]
        o.scale_policy = scales[scale_policy]
        o.result_type = results[result_type]
        o.positions = position_kinds[positions]
        o.refresh_cache = bool(refresh_cache)
        return Evaluator(self, info, _core.Evaluator(self._impl, o))


class Evaluator:
    """One force law on one device, with its particles (from Context.evaluator)."""

    def __init__(self, context: Context, info: Dict[str, Any], impl: Any):
        self.context = context
        self.kernel = info["name"]
        self._info = info
        self._impl = impl
        self.last_seconds = 0.0
        self._potentials: Optional[np.ndarray] = None

    def __repr__(self) -> str:
        if self.context._impl.closed:  # the evaluator still works; the device name is gone
            return f"<forcekit.Evaluator {self.kernel} N={self._impl.count} on a closed context>"
        return f"<forcekit.Evaluator {self.kernel} N={self._impl.count} on {self.context.device['name']!r}>"

    @property
    def count(self) -> int:
        """Particles of the last successful set_particles (0 before)."""
        return self._impl.count

    @property
    def force_components(self) -> int:
        """Values per particle in compute()'s result (ga 3, gaj 6: acceleration and jerk)."""
        return self._impl.components

    def set_particles(
        self,
        positions: Any,
        masses_or_charges: Any = None,
        velocities: Any = None,
        types: Any = None,
    ) -> None:
        """Uploads particles (fk_eval_set_particles).

        Args:
            positions: (N, 3) float64 (no copy when C-contiguous float64).
            masses_or_charges: (N,) masses (gravity) or charges (ljc_*, buck, yukawa); None: all 1.
            velocities: (N, 3), for gaj.
            types: (N,) integer particle types for the typed laws (int32: no copy); None: type 0.
        Raises InvalidInputError (a ValueError) for NaN/Inf or coincident particles.
        """
        positions = _as_float_array(positions, "positions", (None, 3))
        n = positions.shape[0]
        if n == 0:
            raise ValueError("positions: at least one particle is needed, got shape (0, 3)")
        masses = None if masses_or_charges is None else _as_float_array(masses_or_charges, "masses_or_charges", (n,))
        vel = None if velocities is None else _as_float_array(velocities, "velocities", (n, 3))
        typ = None if types is None else _as_int32(types, "types", n)
        self._impl.set_particles(positions, masses, vel, typ)
        self._potentials = None

    def update_positions(self, positions: Any, velocities: Any = None) -> None:
        """New positions (and for gaj velocities) of the same particles: the fast path of a
        time-stepping loop (fk_eval_update_positions); masses, types, table and exclusions stay."""
        n = self._impl.count
        if n == 0:
            raise StateError(13, "calls in the wrong order", "update_positions before set_particles")
        positions = _as_float_array(positions, "positions", (n, 3))
        vel = None if velocities is None else _as_float_array(velocities, "velocities", (n, 3))
        # The binding checks the count again under the context's lock: another thread's
        # set_particles may have changed it since.
        self._impl.update_positions(positions, vel)

    def set_pair_table(self, table: Any, present: Any = None) -> None:
        """Per type-pair parameters of the typed laws (fk_eval_set_pair_table): an array of shape
        (T, T, P), P = the law's pair parameters (lj, ljc_*, yukawa: epsilon, sigma; buck: A, rho,
        C), symmetric; present: optional (T, T) bools marking the pairs that have values. Takes
        effect with the next set_particles."""
        p = self._info["pair_parameters"]
        if p == 0:
            raise ValueError(f"set_pair_table: kernel {self.kernel!r} has no pair table")
        arr = np.asarray(table)
        if arr.dtype.kind not in "fiu":
            raise TypeError(f"table: expected a real numeric array, got dtype {arr.dtype}")
        if arr.ndim != 3 or arr.shape[0] != arr.shape[1] or arr.shape[2] != p:
            raise ValueError(f"table: expected shape (T, T, {p}) ({self._info['pair_format']}), got {arr.shape}")
        t = arr.shape[0]
        values = np.ascontiguousarray(arr, dtype=np.float64).reshape(-1)
        flags = None
        if present is not None:
            pr = np.asarray(present)
            if pr.shape != (t, t):
                raise ValueError(f"present: expected shape ({t}, {t}), got {pr.shape}")
            flags = np.ascontiguousarray(pr, dtype=np.uint8).reshape(-1)
        self._impl.set_pair_table(t, values, flags)

    def set_exclusions(self, pairs: Any) -> None:
        """Particle pairs left out of the sum (fk_eval_set_exclusions): (K, 2) 0-based indices;
        an empty array clears them. Takes effect with the next set_particles."""
        arr = np.asarray(pairs)
        if arr.size == 0:
            arr = np.zeros((0, 2), dtype=np.uint64)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"pairs: expected an integer array, got dtype {arr.dtype}")
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise ValueError(f"pairs: expected shape (K, 2), got {arr.shape}")
        if arr.size and arr.min() < 0:
            raise ValueError("pairs: indices must be >= 0")
        self._impl.set_exclusions(np.ascontiguousarray(arr, dtype=np.uint64))

    def compute(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Evaluates the forces (fk_eval_compute, then fk_eval_read_forces); the GIL is released
        meanwhile. Returns an (N, force_components) float64 array: a new one, or out, which must be
        a C-contiguous float64 array of that shape. The device time is kept in last_seconds, the
        potentials (with potential=True) in potentials()."""
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError(f"out: expected a numpy array, got {type(out).__name__}")
            if out.dtype != np.float64:
                raise TypeError(f"out: expected dtype float64, got {out.dtype}")
            if out.ndim != 2:
                raise ValueError(f"out: expected shape (N, {self._impl.components}), got {out.shape}")
            if not out.flags.c_contiguous or not out.flags.writeable:
                raise ValueError("out: must be C-contiguous and writeable")
        # N is read, out's shape checked and the result arrays sized where they are filled, under
        # the context's lock in the binding: another thread's set_particles may change N at any
        # time between two calls (issue #32: a Python-side size overran the heap).
        forces, potentials, self.last_seconds = self._impl.compute(out)
        self._potentials = potentials
        return out if out is not None else forces

    def potentials(self) -> np.ndarray:
        """The per-particle potentials of the last compute (evaluator(..., potential=True)):
        phi_i for gravity, 1/2 sum_j U_ij for the molecular laws."""
        if not self._impl.potential:
            raise StateError(13, "calls in the wrong order", "the evaluator was created without potential=True")
        if self._potentials is None:
            raise StateError(13, "calls in the wrong order", "potentials before compute")
        return self._potentials

    @property
    def variant(self) -> Dict[str, Any]:
        """What runs after the automatic choices (fk_eval_get_variant): unroll_i/j,
        work_group_size, local_tiling, j_splits, source ("default", "shipped_db", ...), lanes,..."""
        return self._impl.variant

    @property
    def reproducible(self) -> Optional[bool]:
        """With reproducible=True: whether the device has what cross-device bit identity needs
        (True/False; reproducible_reason says why not); None when it was not asked for."""
        r, _ = self._impl.reproducible
        return None if r < 0 else bool(r)

    @property
    def reproducible_reason(self) -> str:
        return self._impl.reproducible[1]

    def integrator(
        self,
        scheme: str = "verlet",
        *,
        dt: float,
        temperature: float = 0.0,
        friction: float = 0.0,
        seed: int = 0,
        masses: Any = None,
    ) -> "Integrator":
        """A time integrator that keeps this evaluator's particles on the device across steps
        (fk_integrator_create; docs/simulate.md, "The library integrator").

        Args:
            scheme: "verlet" (velocity Verlet, NVE), "langevin" (BAOAB at temperature with
                friction; molecular laws) or "hermite" (4th order, gaj only).
            dt: the time step (> 0).
            temperature: k_B T in the law's energy units (langevin only, > 0).
            friction: gamma in 1/time (langevin only, > 0).
            seed: the random numbers' key (langevin): the noise is a function of (seed, step,
                particle), the same on every device.
            masses: (N,) dynamical masses for the molecular laws (their set_particles values are
                charges); None: all 1. Must be None for ga and gaj (the gravity masses are used).
        The particles must be set (set_particles) first; then call set_state before step.
        Needs a device with fp64 (UnsupportedError otherwise).
        """
        if scheme not in _SCHEMES:
            raise ValueError(f"scheme: expected one of {', '.join(_SCHEMES)}, got {scheme!r}")
        dt = _real(dt, "dt")
        temperature = _real(temperature, "temperature")
        friction = _real(friction, "friction")
        seed = _integer(seed, "seed", 0, 2**64 - 1)
        n = self._impl.count
        if n == 0:
            raise StateError(13, "calls in the wrong order", "integrator before set_particles")
        mass = None if masses is None else _as_float_array(masses, "masses", (n,))
        return Integrator(self, scheme, _core.Integrator(self._impl, _SCHEMES[scheme], dt, temperature,
                                                         friction, seed, mass))


class Integrator:
    """Positions and velocities kept on the device across steps (from Evaluator.integrator).

        integ = ev.integrator("langevin", dt=0.005, temperature=1.0, friction=1.0, seed=7)
        integ.set_state(positions, velocities)     # (N, 3) float64; forces computed once here
        integ.step(1000)                           # no transfer to the host
        x, v, step = integ.state()                 # the only transfer of the state
        kinetic, potential = integ.energies()

    The evaluator must outlive the integrator (this object keeps it alive). The GIL is released
    while the device works."""

    def __init__(self, evaluator: Evaluator, scheme: str, impl: Any):
        self.evaluator = evaluator
        self.scheme = scheme
        self._impl = impl

    def __repr__(self) -> str:
        return f"<forcekit.Integrator {self.scheme} on {self.evaluator!r}>"

    def set_state(self, positions: Any, velocities: Any = None, step: int = 0) -> None:
        """Sets positions (N, 3) and velocities (N, 3; None: zero) and the step counter, and
        computes the forces there (fk_integrator_set_state). Positions in a periodic box are
        wrapped into [0, L)."""
        n = self.evaluator.count
        pos = _as_float_array(positions, "positions", (n, 3))
        _finite(pos, "positions")
        vel = None if velocities is None else _as_float_array(velocities, "velocities", (n, 3))
        _finite(vel, "velocities")
        self._impl.set_state(pos, vel, _integer(step, "step", 0, 2**64 - 1))

    def step(self, steps: int = 1) -> None:
        """Advances steps steps on the device (fk_integrator_step). InvalidInputError when a
        force became non-finite (the state must then be set again)."""
        self._impl.step(_integer(steps, "steps", 0, 2**64 - 1))

    def state(self) -> Tuple[np.ndarray, np.ndarray, int]:
        """(positions, velocities, step) copied from the device: new (N, 3) float64 arrays."""
        return self._impl.state()

    def energies(self) -> Tuple[float, Optional[float]]:
        """(kinetic, potential) of the current state, summed on the device in 64-bit fixed point
        (the same bits on every device); potential is None unless the evaluator was created with
        potential=True."""
        return self._impl.energies()

    @property
    def counters(self) -> Dict[str, int]:
        """List rebuilds, fixed64 rescales and host waits since creation."""
        return self._impl.counters()


def reference_forces(
    kernel: str,
    positions: Any,
    masses_or_charges: Any = None,
    velocities: Any = None,
    types: Any = None,
    *,
    eps: float = 0.0,
    cutoff: float = 0.0,
    coulomb: float = 0.0,
    box: Union[None, float, Sequence[float]] = None,
    parameters: Optional[Sequence[float]] = None,
    pair_table: Any = None,
    exclusions: Any = None,
    potential: bool = False,
    **law_parameters: Any,
) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
    """The library's double-precision O(N^2) host reference (fk_reference_forces): forces, or
    (forces, potentials) with potential=True. Same arguments as Context.evaluator + set_particles.
    NaN or Inf input raises InvalidInputError (a ValueError) naming the argument; Ctrl-C stops it
    (KeyboardInterrupt: it runs in slices of rows and checks between them)."""
    info = _kernel_info(kernel)
    positions = _as_float_array(positions, "positions", (None, 3))
    n = positions.shape[0]
    if n == 0:
        raise ValueError("positions: at least one particle is needed, got shape (0, 3)")
    masses = None if masses_or_charges is None else _as_float_array(masses_or_charges, "masses_or_charges", (n,))
    vel = None if velocities is None else _as_float_array(velocities, "velocities", (n, 3))
    typ = None if types is None else _as_int32(types, "types", n)
    for array, name in ((positions, "positions"), (masses, "masses_or_charges"), (vel, "velocities")):
        _finite(array, name)
    values, ntypes = None, 0
    if pair_table is not None:
        try:
            arr = np.asarray(pair_table, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError("pair_table: expected a real numeric array") from exc
        if arr.ndim != 3 or arr.shape[0] != arr.shape[1] or arr.shape[2] != info["pair_parameters"]:
            raise ValueError(f"pair_table: expected shape (T, T, {info['pair_parameters']}), got {arr.shape}")
        ntypes, values = arr.shape[0], np.ascontiguousarray(arr).reshape(-1)
    excl = None
    if exclusions is not None:
        arr = np.asarray(exclusions)
        if arr.size and arr.dtype.kind not in "iu":
            raise TypeError(f"exclusions: expected an integer array, got dtype {arr.dtype}")
        if arr.size and (arr.ndim != 2 or arr.shape[1] != 2):
            raise ValueError(f"exclusions: expected shape (K, 2), got {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() >= n):
            raise ValueError(f"exclusions: indices must lie in 0 .. {n - 1}")
        excl = np.ascontiguousarray(arr.reshape(-1, 2), dtype=np.uint64)
    # Computed in slices of rows, so Ctrl-C (KeyboardInterrupt) stops it between two.
    forces, pots = _core.reference_forces(
        kernel, positions, masses, vel, typ, _real(eps, "eps"), _real(cutoff, "cutoff"),
        _real(coulomb, "coulomb"), _law_parameters(info, parameters, law_parameters), _box(box),
        values, ntypes, excl, bool(potential))
    return (forces, pots) if potential else forces


def tune(
    kernel: str,
    accum: Optional[str] = None,
    *,
    context: Optional[Context] = None,
    device: Optional[str] = None,
    n: int = 0,
    budget_seconds: float = 0.0,
    database: Optional[str] = None,
    seed: int = 0,
    unroll: Optional[Tuple[int, int]] = None,
    work_group_size: int = 0,
    local_tiling: Optional[bool] = None,
    j_splits: int = 0,
    lanes: int = 0,
    progress: Optional[Callable[[Dict[str, Any]], Any]] = None,
) -> Dict[str, Any]:
    """Autotunes one force law and accumulator on a device (fk_tune_run) and writes the best
    variant of each N bucket to the tuning database (database=, else $FORCEKIT_TUNING_DB or the
    XDG data dir), where later evaluators find it.

    Args:
        context or device: where to tune (a new Context(device) when no context is given).
        n: 0 every N bucket; else only the bucket holding n, measured at n.
        budget_seconds: whole run (0: 600 s).
        progress: called with a dict after each candidate; return True to stop. Using the
            context being tuned from it raises RuntimeError (its thread holds the context).
    Ctrl-C stops the run after the current candidate (KeyboardInterrupt), with or without
    progress.
    Returns a dict: kernel, accum, device keys, database written, seconds, buckets (each with
    its best point or None).
    """
    _kernel_info(kernel)
    if accum is not None and (not isinstance(accum, str) or accum not in _ACCUMS):
        raise ValueError(f"accum: unknown accumulator {accum!r}; known: {', '.join(_ACCUMS)}")
    if context is not None and not isinstance(context, Context):
        raise TypeError(f"context: expected a forcekit.Context, got {type(context).__name__}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress: expected a callable, got {type(progress).__name__}")
    database = _path(database, "database")
    n = _integer(n, "n", 0, _SIZE_MAX)
    budget_seconds = _real(budget_seconds, "budget_seconds")
    seed = _integer(seed, "seed", 0, _SIZE_MAX)
    ui, uj = _unroll(unroll)
    work_group_size = _integer(work_group_size, "work_group_size", 0, _INT_MAX)
    j_splits = _integer(j_splits, "j_splits", -_INT_MAX - 1, _INT_MAX)
    lanes = _integer(lanes, "lanes", -_INT_MAX - 1, _INT_MAX)
    tiling = 0 if local_tiling is None else (1 if local_tiling else -1)
    if context is None:
        context = Context(device)
    # Ctrl-C stops the run after the current candidate (KeyboardInterrupt), with or without a
    # progress callback.
    return _core.tune(context._impl, kernel, accum, n, budget_seconds, database, seed, ui, uj,
                      work_group_size, tiling, j_splits, lanes, progress)
