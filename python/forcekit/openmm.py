"""forcekit inside OpenMM: forces that a normal openmm Simulation evaluates through forcekit.

OpenMM 8.3 and later have openmm.PythonForce, a real Force whose energy and forces come from a
Python function at every evaluation (every platform, every integrator, getState(getEnergy=True)
included). These helpers build one that calls a forcekit Evaluator:

    import openmm, openmm.app as app, forcekit.openmm as fkmm
    system = ...                                   # with a NonbondedForce nb (LJ + Coulomb)
    force = fkmm.nonbonded_force(nb, system, device="cpu", accum="fixed64")
    system.removeForce(index_of_nb); system.addForce(force)
    sim = app.Simulation(topology, system, integrator)   # as usual

nonbonded_force() reproduces a NonbondedForce (NoCutoff or CutoffPeriodic) with the ljc_constant
law (lj when every charge is 0 and there is a cutoff): per-particle sigma/epsilon become types with
Lorentz-Berthelot pair parameters, charges and 1/(4 pi eps0) = 138.935... kJ mol^-1 nm e^-2 go to
the Coulomb term, exceptions with zero chargeProd and epsilon become exclusions. Physics
difference to note: forcekit force-shifts the whole pair function at the cutoff (f(r) - f(rc),
docs/force-laws.md), where OpenMM's CutoffPeriodic truncates LJ and uses reaction-field Coulomb;
shifted_force_correction() gives the exact pairwise difference (tests/test_openmm.py uses it), and
lj_shifted_custom_force() builds OpenMM's own force with forcekit's physics.

gravity_force() adds Newtonian gravity with Plummer softening over all particles, with the
System's masses: U = -G sum_{i<j} m_i m_j / sqrt(r^2 + eps^2).

The units are OpenMM's (nm, kJ/mol, amu, e). The function is called with OpenMM's State; the
first call uploads the particles (set_particles), later ones only positions (update_positions).
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

import forcekit

try:
    import openmm
    from openmm import unit
except ImportError as exc:  # pragma: no cover - the module is optional
    raise ImportError("forcekit.openmm needs the openmm package (pip install openmm)") from exc

if not hasattr(openmm, "PythonForce"):  # pragma: no cover
    raise ImportError(
        f"forcekit.openmm needs openmm.PythonForce (OpenMM 8.3 or later); this is OpenMM {openmm.__version__}"
    )

#: Coulomb's constant in OpenMM's units (ONE_4PI_EPS0 of openmm/reference/SimTKOpenMMRealType.h).
ONE_4PI_EPS0 = 138.935456


class Bridge:
    """The callable that a PythonForce runs: State in, (energy, forces) out, through forcekit.

    Attributes for measurement: calls, seconds_total (wall time inside __call__),
    seconds_forcekit (wall time of set_particles/update_positions + compute + reading results),
    device_seconds (forcekit's own device time of the pair loops).
    """

    def __init__(self, context: forcekit.Context, kernel: str, config: Dict[str, Any],
                 charges: Optional[np.ndarray], types: Optional[np.ndarray],
                 pair_table: Optional[np.ndarray], exclusions: Optional[np.ndarray],
                 periodic: bool, force_scale: Optional[np.ndarray] = None, energy_scale: float = 1.0,
                 energy_weights: Optional[np.ndarray] = None):
        self.context = context
        self.kernel = kernel
        self.config = dict(config)
        self.charges = charges
        self.types = types
        self.pair_table = pair_table
        self.exclusions = exclusions
        self.periodic = periodic
        # Gravity: forcekit gives accelerations and potentials per unit mass; force = G m_i a_i,
        # energy = G/2 sum_i m_i phi_i.
        self.force_scale = force_scale
        self.energy_scale = energy_scale
        self.energy_weights = energy_weights
        self.evaluator: Optional[forcekit.Evaluator] = None
        self.box: Optional[Tuple[float, float, float]] = None
        self.forces: Optional[np.ndarray] = None
        self.calls = 0
        self.seconds_total = 0.0
        self.seconds_forcekit = 0.0
        self.device_seconds = 0.0
        self.rewraps = 0  # uploads of wrapped positions after forcekit refused an update

    def _wrapped(self, positions: np.ndarray) -> np.ndarray:
        if self.box is None:
            return positions
        box = np.asarray(self.box)
        return positions - box * np.floor(positions / box)

    def _create(self, box: Optional[Tuple[float, float, float]]) -> None:
        config = dict(self.config)
        if box is not None:
            config["box"] = box
        ev = self.context.evaluator(self.kernel, potential=True, **config)
        if self.pair_table is not None:
            ev.set_pair_table(self.pair_table)
        if self.exclusions is not None and len(self.exclusions):
            ev.set_exclusions(self.exclusions)
        self.evaluator = ev
        self.box = box

    def __call__(self, state: "openmm.State") -> Tuple[float, np.ndarray]:
        start = time.perf_counter()
        positions = state.getPositions(asNumpy=True).value_in_unit(unit.nanometer)
        positions = np.ascontiguousarray(positions, dtype=np.float64)
        box = None
        if self.periodic:
            vectors = state.getPeriodicBoxVectors(asNumpy=True).value_in_unit(unit.nanometer)
            if np.count_nonzero(vectors - np.diag(np.diag(vectors))):
                raise ValueError("forcekit supports rectangular periodic boxes only")
            box = tuple(float(v) for v in np.diag(vectors))
        inner = time.perf_counter()
        if self.evaluator is None or box != self.box:
            self._create(box)  # first call, or the box changed (barostat)
            self.evaluator.set_particles(self._wrapped(positions), self.charges, types=self.types)
        else:
            try:
                self.evaluator.update_positions(positions)
            except forcekit.InvalidInputError:
                # forcekit's cells and neighbour lists refuse particles more than a box length
                # outside the box (OpenMM need not wrap them): upload them wrapped, which needs
                # set_particles (forcekit.h, fk_eval_update_positions). Anything else (NaN) is
                # raised again there.
                if box is None:
                    raise
                self.evaluator.set_particles(self._wrapped(positions), self.charges, types=self.types)
                self.rewraps += 1
        ev = self.evaluator
        if self.forces is None or self.forces.shape[0] != positions.shape[0]:
            self.forces = np.empty((positions.shape[0], ev.force_components))
        forces = ev.compute(out=self.forces)
        potentials = ev.potentials()
        self.device_seconds += ev.last_seconds
        self.seconds_forcekit += time.perf_counter() - inner
        if self.force_scale is not None:
            forces = forces * self.force_scale[:, None]
            energy = self.energy_scale * float(np.dot(self.energy_weights, potentials))
        else:
            forces = forces.copy()  # OpenMM may keep the array; self.forces is reused
            energy = float(potentials.sum())
        self.calls += 1
        self.seconds_total += time.perf_counter() - start
        return energy, forces


def _context(context: Optional[forcekit.Context], device: Optional[str]) -> forcekit.Context:
    return context if context is not None else forcekit.Context(device)


def _make_force(bridge: Bridge, periodic: bool) -> "openmm.PythonForce":
    force = openmm.PythonForce(bridge)
    force.setUsesPeriodicBoundaryConditions(periodic)
    force.forcekit_bridge = bridge  # SWIG proxies take attributes; keeps the bridge reachable
    return force


def nonbonded_parameters(nonbonded: "openmm.NonbondedForce", scaled: Optional[list] = None):
    """charges (e), types, Lorentz-Berthelot pair table (T, T, 2) of (epsilon kJ/mol, sigma nm),
    and exclusions (K, 2) of a NonbondedForce. Exceptions must be pure exclusions, unless a list
    is passed as `scaled`: the scaled ones (nonzero chargeProd or epsilon) are then appended to
    it as (i, j, chargeProd e^2, sigma nm, epsilon kJ/mol) and are exclusions too (the native
    plugin computes them itself)."""
    n = nonbonded.getNumParticles()
    charges = np.empty(n)
    lj = np.empty((n, 2))
    for i in range(n):
        q, sigma, epsilon = nonbonded.getParticleParameters(i)
        charges[i] = q.value_in_unit(unit.elementary_charge)
        lj[i] = (sigma.value_in_unit(unit.nanometer), epsilon.value_in_unit(unit.kilojoule_per_mole))
    unique, types = np.unique(lj, axis=0, return_inverse=True)
    types = types.reshape(-1).astype(np.int32)
    if len(unique) > forcekit_max_types():
        raise ValueError(f"{len(unique)} distinct (sigma, epsilon) pairs; forcekit takes at most {forcekit_max_types()} types")
    sig = 0.5 * (unique[:, None, 0] + unique[None, :, 0])
    eps = np.sqrt(unique[:, None, 1] * unique[None, :, 1])
    table = np.stack([eps, sig], axis=-1)
    exclusions = []
    for k in range(nonbonded.getNumExceptions()):
        i, j, qq, sigma, epsilon = nonbonded.getExceptionParameters(k)
        qq_e2, eps_kj = qq.value_in_unit(unit.elementary_charge**2), epsilon.value_in_unit(unit.kilojoule_per_mole)
        if (qq_e2 != 0 or eps_kj != 0) and scaled is not None:
            scaled.append((i, j, qq_e2, sigma.value_in_unit(unit.nanometer), eps_kj))
        elif qq_e2 != 0 or eps_kj != 0:
            raise NotImplementedError(
                f"scaled 1-4 exceptions: exception {k} ({i}, {j}) has nonzero chargeProd or epsilon; "
                "forcekit has exclusions (chargeProd = epsilon = 0), not scaled pairs"
            )
        exclusions.append((i, j))
    return charges, types, table, np.array(exclusions, dtype=np.int64).reshape(-1, 2)


def forcekit_max_types() -> int:
    return 1024  # FK_MAX_PAIR_TYPES


def nonbonded_python_force(
    nonbonded: "openmm.NonbondedForce",
    system: Optional["openmm.System"] = None,
    *,
    context: Optional[forcekit.Context] = None,
    device: Optional[str] = None,
    accum: str = "fixed64",
    algorithm: Optional[str] = None,
    **evaluator_options: Any,
) -> "openmm.PythonForce":
    """A PythonForce computing the LJ + Coulomb of `nonbonded` through forcekit (the host round
    trip of every step; nonbonded_force() is the native plugin, which has none).

    Supported methods: NoCutoff (all pairs, open boundaries) and CutoffPeriodic (cutoff, periodic,
    forcekit's force-shifted pair function; rectangular boxes). Switching functions, dispersion
    correction, PME and scaled exceptions are not (an error says which). algorithm: None chooses
    "neighbors" with a cutoff and "all-pairs" without; fixed64 keeps its scale between steps
    (scale_policy="keep"). Other keywords go to Context.evaluator
    (reproducible=True, skin=...). The returned force's forcekit_bridge holds the timing counters.
    """
    method = nonbonded.getNonbondedMethod()
    if method == openmm.NonbondedForce.NoCutoff:
        periodic, cutoff = False, 0.0
    elif method == openmm.NonbondedForce.CutoffPeriodic:
        periodic = True
        cutoff = nonbonded.getCutoffDistance().value_in_unit(unit.nanometer)
        if nonbonded.getUseSwitchingFunction():
            raise NotImplementedError("switching function: forcekit force-shifts at the cutoff instead")
        if nonbonded.getUseDispersionCorrection():
            raise NotImplementedError("dispersion correction: call setUseDispersionCorrection(False)")
    else:
        raise NotImplementedError("nonbonded method: forcekit reproduces NoCutoff and CutoffPeriodic only")
    charges, types, table, exclusions = nonbonded_parameters(nonbonded)
    charged = bool(np.any(charges != 0))
    kernel = "ljc_constant" if charged or not periodic else "lj"
    config: Dict[str, Any] = dict(accum=accum, cutoff=cutoff, expected_count=len(charges))
    if kernel == "ljc_constant":
        config["coulomb"] = ONE_4PI_EPS0
    # Neighbour lists: at N = 864 on POCL 2.6 ms per fixed64 evaluation against 49 ms for cells
    # and 48 ms for all-pairs (small boxes have few cells). The scale of fixed64 is kept between
    # steps (an overflow rescales and recomputes inside forcekit), saving the bound pre-pass.
    config["algorithm"] = algorithm or ("neighbors" if periodic else "all-pairs")
    if accum == "fixed64":
        config["scale_policy"] = "keep"
    config.update(evaluator_options)
    bridge = Bridge(_context(context, device), kernel, config, charges if kernel != "lj" else None,
                    types, table, exclusions, periodic)
    return _make_force(bridge, periodic)


# ---- The native plugin (issue #34): libForcekitOpenMM.so, built by `pip install ./python` when
# the build's Python has OpenMM (python/openmm_plugin/). Python builds the force through
# XmlSerializer and the plugin's serialization proxy: no SWIG module (docs/python.md says why).

_plugin_state: Dict[str, Any] = {}


def _plugin_problem() -> Optional[str]:
    """Why the plugin cannot be used here (None: it can)."""
    import os

    try:
        from forcekit import _openmm_plugin as built
    except ImportError:
        return ("forcekit was built without its OpenMM plugin (OpenMM was not importable at build "
                "time: pip install openmm, then reinstall forcekit; see docs/python.md)")
    path = os.path.join(os.path.dirname(forcekit.__file__), built.LIBRARY)
    if not os.path.exists(path):
        return f"the OpenMM plugin {path} is missing"
    running = openmm.version.short_version
    if built.OPENMM_VERSION and built.OPENMM_VERSION != running:
        return (f"forcekit's OpenMM plugin was built against OpenMM {built.OPENMM_VERSION}, this is "
                f"OpenMM {running}: reinstall forcekit (its C++ classes differ between releases)")
    return None


def load_plugin() -> str:
    """Loads libForcekitOpenMM.so into OpenMM (once); returns its path. RuntimeError says why it
    cannot."""
    import os

    if "path" in _plugin_state:
        return _plugin_state["path"]
    problem = _plugin_problem()
    if problem:
        raise RuntimeError(problem)
    from forcekit import _openmm_plugin as built

    path = os.path.join(os.path.dirname(forcekit.__file__), built.LIBRARY)
    openmm.Platform.loadPluginLibrary(path)
    _plugin_state["path"] = path
    return path


def plugin_available() -> bool:
    """Whether nonbonded_force() can build the native force here."""
    return _plugin_problem() is None


def _xml_attrs(values: Dict[str, Any]) -> str:
    from xml.sax.saxutils import quoteattr

    def text(v: Any) -> str:
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, float):
            return repr(v)
        return str(v)

    return " ".join(f"{k}={quoteattr(text(v))}" for k, v in values.items())


def nonbonded_settings(nonbonded: "openmm.NonbondedForce") -> Dict[str, Any]:
    """The NonbondedForce's method in forcekit's terms, or NotImplementedError naming the feature
    that forcekit cannot take: {"periodic", "cutoff"} (nm; 0: no cutoff)."""
    nb = openmm.NonbondedForce
    method = nonbonded.getNonbondedMethod()
    names = {nb.Ewald: "Ewald", nb.PME: "PME", nb.LJPME: "LJPME"}
    if method in names:
        raise NotImplementedError(f"nonbonded method {names[method]}: forcekit has no reciprocal-space "
                                  "sum (NoCutoff, CutoffNonPeriodic and CutoffPeriodic only)")
    if method == nb.NoCutoff:
        return {"periodic": False, "cutoff": 0.0}
    if nonbonded.getUseSwitchingFunction():
        raise NotImplementedError("switching function: forcekit force-shifts the pair function at "
                                  "the cutoff instead (setUseSwitchingFunction(False))")
    if method == nb.CutoffPeriodic and nonbonded.getUseDispersionCorrection():
        raise NotImplementedError("dispersion correction: call setUseDispersionCorrection(False)")
    if nonbonded.getNumParticleParameterOffsets() or nonbonded.getNumExceptionParameterOffsets():
        raise NotImplementedError("parameter offsets (global parameters): forcekit's parameters are fixed")
    cutoff = nonbonded.getCutoffDistance().value_in_unit(unit.nanometer)
    return {"periodic": method == nb.CutoffPeriodic, "cutoff": float(cutoff)}


def nonbonded_force(
    nonbonded: "openmm.NonbondedForce",
    system: Optional["openmm.System"] = None,
    *,
    device: Optional[str] = None,
    accum: str = "fixed64",
    algorithm: Optional[str] = None,
    reproducible: bool = False,
    skin: float = 0.0,
    context: Optional[forcekit.Context] = None,
    **evaluator_options: Any,
) -> "openmm.Force":
    """The LJ + Coulomb of `nonbonded` as a native OpenMM force (the plugin, ForcekitNonbondedForce):
    on OpenMM's OpenCL platform forcekit runs on OpenMM's own context and buffers, with no host
    round trip per step; on the Reference and CPU platforms through forcekit's host path on
    `device` (forcekit's selector; None: $FORCEKIT_DEVICE, else forcekit's default). Add it with
    system.addForce after removing `nonbonded`.

    Methods: NoCutoff, CutoffNonPeriodic, CutoffPeriodic (rectangular boxes), with forcekit's
    force-shifted pair function at the cutoff (docs/python.md: how it differs from OpenMM's
    truncated LJ and reaction-field Coulomb). Exceptions with chargeProd = epsilon = 0 become
    exclusions; scaled 1-4 exceptions are left out of forcekit's loop and computed by the plugin
    as NonbondedForce computes exceptions (plain LJ + Coulomb, no cutoff). PME/Ewald/LJPME,
    switching, the dispersion correction and parameter offsets raise NotImplementedError naming
    the feature. algorithm: None chooses
    "neighbors" with a cutoff and "all-pairs" without. context= or other evaluator keywords need
    the Python bridge: they are passed to nonbonded_python_force (a PythonForce) instead."""
    if context is not None or evaluator_options:
        return nonbonded_python_force(nonbonded, system, context=context, device=device, accum=accum,
                                      algorithm=algorithm, reproducible=reproducible,
                                      **({"skin": skin} if skin else {}), **evaluator_options)
    settings = nonbonded_settings(nonbonded)
    scaled: list = []
    charges, types, table, exclusions = nonbonded_parameters(nonbonded, scaled)
    load_plugin()
    charged = bool(np.any(charges != 0))
    cutoff = settings["cutoff"]
    # lj's cutoff 0 means its default 2.5, not "none": without a cutoff the uncharged system goes
    # through ljc_constant with zero charges (Coulomb off).
    kernel = "ljc_constant" if charged or cutoff == 0 else "lj"
    head = {
        "type": "ForcekitNonbondedForce", "version": 1, "forceGroup": nonbonded.getForceGroup(),
        "name": "ForcekitNonbondedForce", "kernel": kernel, "accum": accum,
        "algorithm": algorithm or "", "device": device or "", "cutoff": float(cutoff),
        "coulomb": ONE_4PI_EPS0, "skin": float(skin), "periodic": settings["periodic"],
        "reproducible": bool(reproducible), "types": len(table),
        "exceptionsPeriodic": bool(settings["periodic"] and nonbonded.getExceptionsUsePeriodicBoundaryConditions()),
    }
    lines = [f"<Force {_xml_attrs(head)}>", "<PairTable>"]
    for a in range(len(table)):
        for b in range(len(table)):
            lines.append(f'<Pair a="{a}" b="{b}" eps="{float(table[a, b, 0])!r}" sig="{float(table[a, b, 1])!r}"/>')
    lines.append("</PairTable><Particles>")
    lines.extend(f'<Particle q="{float(q)!r}" t="{int(t)}"/>' for q, t in zip(charges, types))
    lines.append("</Particles><Exceptions14>")
    lines.extend(f'<Exception p1="{int(i)}" p2="{int(j)}" q="{float(q)!r}" sig="{float(sg)!r}" eps="{float(e)!r}"/>'
                 for i, j, q, sg, e in scaled)
    lines.append("</Exceptions14><Exclusions>")
    lines.extend(f'<Exclusion p1="{int(i)}" p2="{int(j)}"/>' for i, j in exclusions)
    lines.append("</Exclusions></Force>")
    return openmm.XmlSerializer.deserialize("\n".join(lines))


def gravity_force(
    system: "openmm.System",
    *,
    G: float = 1.0,
    eps: float = 0.0,
    context: Optional[forcekit.Context] = None,
    device: Optional[str] = None,
    accum: str = "fixed64",
    **evaluator_options: Any,
) -> "openmm.PythonForce":
    """A PythonForce for Newtonian gravity between all particles of `system` (open boundaries):
    U = -G sum_{i<j} m_i m_j / sqrt(r^2 + eps^2), with the System's masses (amu), G in
    kJ mol^-1 nm amu^-2 and eps in nm; forcekit's ga law computes it."""
    masses = np.array([system.getParticleMass(i).value_in_unit(unit.dalton) for i in range(system.getNumParticles())])
    config = dict(accum=accum, eps=float(eps), expected_count=len(masses))
    config.update(evaluator_options)
    bridge = Bridge(_context(context, device), "ga", config, masses, None, None, None, False,
                    force_scale=G * masses, energy_scale=0.5 * G, energy_weights=masses)
    return _make_force(bridge, False)


def shifted_force_correction(positions: np.ndarray, charges: np.ndarray, types: np.ndarray,
                             table: np.ndarray, cutoff: float, box, reaction_field_dielectric: float,
                             exclusions=()) -> np.ndarray:
    """forcekit's forces minus OpenMM's CutoffPeriodic NonbondedForce forces (no switching) for the
    same particles, computed pairwise in numpy (O(N^2); for tests): per pair within rc,
    -f_LJ(rc) - k q_i q_j / rc^2 + 2 k q_i q_j k_rf r, with k_rf = (eps_rf - 1) / ((2 eps_rf + 1) rc^3)
    (OpenMM's reaction field; forcekit: the whole pair function shifted so that it is 0 at rc)."""
    d = positions[:, None, :] - positions[None, :, :]
    box = np.asarray(box, dtype=np.float64)
    d -= box * np.rint(d / box)
    r = np.sqrt((d**2).sum(-1))
    np.fill_diagonal(r, np.inf)
    eps = table[types[:, None], types[None, :], 0]
    sig = table[types[:, None], types[None, :], 1]
    sr6 = (sig / cutoff) ** 6
    f_lj_rc = 24 * eps * (2 * sr6**2 - sr6) / cutoff
    qq = ONE_4PI_EPS0 * charges[:, None] * charges[None, :]
    k_rf = (reaction_field_dielectric - 1) / ((2 * reaction_field_dielectric + 1) * cutoff**3)
    delta = np.where(r < cutoff, -f_lj_rc - qq / cutoff**2 + 2 * qq * k_rf * r, 0.0)
    for i, j in exclusions:
        delta[i, j] = delta[j, i] = 0.0
    return (delta[..., None] * d / r[..., None]).sum(1)


def lj_shifted_custom_force(nonbonded: "openmm.NonbondedForce") -> "openmm.CustomNonbondedForce":
    """OpenMM's own CustomNonbondedForce with forcekit's physics for an uncharged LJ system:
    Lennard-Jones force-shifted at the cutoff, U_s = U(r) - U(rc) + (r - rc) f(rc) (for drift
    comparisons at identical Hamiltonians)."""
    rc = nonbonded.getCutoffDistance().value_in_unit(unit.nanometer)
    expression = (
        "4*epsilon*((sigma/r)^12 - (sigma/r)^6) - 4*epsilon*((sigma/rc)^12 - (sigma/rc)^6)"
        " + (r - rc)*24*epsilon*(2*(sigma/rc)^12 - (sigma/rc)^6)/rc;"
        "sigma = 0.5*(sigma1 + sigma2); epsilon = sqrt(epsilon1*epsilon2);"
        f"rc = {rc!r}"
    )
    force = openmm.CustomNonbondedForce(expression)
    force.addPerParticleParameter("sigma")
    force.addPerParticleParameter("epsilon")
    for i in range(nonbonded.getNumParticles()):
        q, sigma, epsilon = nonbonded.getParticleParameters(i)
        force.addParticle([sigma.value_in_unit(unit.nanometer), epsilon.value_in_unit(unit.kilojoule_per_mole)])
    for k in range(nonbonded.getNumExceptions()):
        i, j, *_ = nonbonded.getExceptionParameters(k)
        force.addExclusion(i, j)
    force.setNonbondedMethod(openmm.CustomNonbondedForce.CutoffPeriodic)
    force.setCutoffDistance(rc)
    force.setUseLongRangeCorrection(False)
    return force


def lj_fluid(n_cells: int = 6, density: float = 0.8442, temperature: float = 0.72, seed: int = 1,
             sigma: float = 0.34, epsilon: float = 0.997, mass: float = 39.948, cutoff: float = 2.5,
             n: Optional[int] = None):
    """An argon-like LJ fluid (4 n_cells^3 particles on an fcc lattice at reduced density and
    temperature, Maxwell velocities): (system, nonbonded, positions nm, velocities nm/ps, box nm).
    With n, the smallest lattice holding n sites, of which the first n are kept, the box chosen
    for the density. The NonbondedForce is CutoffPeriodic at cutoff sigma's, no switching, no
    dispersion correction."""
    if n is not None:
        n_cells = int(np.ceil((n / 4) ** (1 / 3)))
    else:
        n = 4 * n_cells**3
    box = (n / density) ** (1 / 3) * sigma
    a = box / n_cells
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    cells = np.stack(np.meshgrid(*[np.arange(n_cells)] * 3, indexing="ij"), -1).reshape(-1, 3)
    positions = ((cells[:, None, :] + basis[None] + 0.25) * a).reshape(-1, 3)[:n]
    system = openmm.System()
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(box, 0, 0), openmm.Vec3(0, box, 0), openmm.Vec3(0, 0, box))
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.CutoffPeriodic)
    nb.setCutoffDistance(cutoff * sigma)
    nb.setUseDispersionCorrection(False)
    nb.setUseSwitchingFunction(False)
    for _ in range(n):
        system.addParticle(mass)
        nb.addParticle(0.0, sigma, epsilon)
    system.addForce(nb)
    rng = np.random.default_rng(seed)
    kT = temperature * epsilon  # kJ/mol
    velocities = rng.normal(0.0, np.sqrt(kT / mass), (n, 3))  # nm/ps (kJ/mol/amu = nm^2/ps^2)
    velocities -= velocities.mean(0)
    return system, nb, positions, velocities, box


def lj_time_unit(sigma: float = 0.34, epsilon: float = 0.997, mass: float = 39.948) -> float:
    """The LJ time unit tau = sigma sqrt(m / epsilon) in ps (for the default argon: 2.15 ps)."""
    return sigma * np.sqrt(mass / epsilon)


def remove_force(system: "openmm.System", force_type) -> int:
    """Removes the first force of this type from system; returns its index. OpenMM deletes the
    force: build the forcekit force from it first."""
    for k in range(system.getNumForces()):
        if isinstance(system.getForce(k), force_type):
            system.removeForce(k)
            return k
    raise ValueError(f"no {force_type.__name__} in the system")


__all__: List[str] = [
    "Bridge",
    "nonbonded_force",
    "nonbonded_python_force",
    "load_plugin",
    "plugin_available",
    "gravity_force",
    "nonbonded_parameters",
    "shifted_force_correction",
    "lj_shifted_custom_force",
    "lj_fluid",
    "lj_time_unit",
    "remove_force",
    "ONE_4PI_EPS0",
]
