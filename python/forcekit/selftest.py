"""python -m forcekit.selftest: is forcekit working here? (like openmm.testInstallation)

On every OpenCL device: one gravity law (ga, softened) and one molecular law (ljc_constant: LJ +
Coulomb, cutoff, periodic box), each with the float accumulator and with reproducible fixed64,
compared with the library's double-precision host reference; then the devices with each other
(the largest difference of any two devices, and whether reproducible fixed64 gave the same bits).

Usage: python -m forcekit.selftest [--n N] [--device SELECTOR]. Exit status 0 when every
evaluation ran and stayed within its tolerance, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np

import forcekit

# Relative error (max |F - F_ref| / max |F_ref|) allowed: single-precision pair terms (about 1e-7
# each, a few ulp from rsqrt) summed over a few hundred partners; fixed64 adds 2^-60 per term.
TOLERANCE = {"float": 1e-4, "fixed64": 1e-4}


def _systems(n: int) -> List[Tuple[str, Dict, Dict]]:
    rng = np.random.default_rng(20260101)
    # Gravity: a softened uniform cluster.
    gpos = rng.uniform(-1.0, 1.0, (n, 3))
    gmass = rng.uniform(0.5, 1.5, n) / n
    # Molecular: a jittered lattice (no close contacts) at density ~0.8, charges of both signs.
    side = int(np.ceil(n ** (1 / 3)))
    box = side / 0.8 ** (1 / 3)
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
    mpos = (grid + 0.5 + rng.uniform(-0.1, 0.1, (n, 3))) * (box / side)
    charge = np.where(np.arange(n) % 2 == 0, 0.5, -0.5)
    cutoff = min(2.5, box / 2)
    return [
        ("ga", dict(eps=0.05), dict(positions=gpos, masses_or_charges=gmass)),
        ("ljc_constant", dict(cutoff=cutoff, box=box),
         dict(positions=mpos, masses_or_charges=charge, types=np.zeros(n, np.int32))),
    ]


def _relative_error(f: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(f - ref).max() / max(np.abs(ref).max(), 1e-300))


def run(n: int = 600, device: Optional[str] = None, out=sys.stdout) -> bool:
    devices = forcekit.devices()
    if device is not None:
        chosen = forcekit.Context(device).device
        devices = [d for d in devices if d["selector"] == chosen["selector"]]
    print(f"forcekit {forcekit.__version__}: {len(devices)} OpenCL device(s)", file=out)
    if not devices:
        print("FAIL: no OpenCL device (install an OpenCL runtime, e.g. pocl-opencl-icd)", file=out)
        return False
    ok = True
    results: Dict[Tuple[str, str], Dict[str, np.ndarray]] = {}
    for d in devices:
        print(f"\n{d['selector']}  {d['name']}  ({d['type']}, {d['platform_name']})", file=out)
        try:
            ctx = forcekit.Context(d["selector"])
        except forcekit.ForcekitError as exc:
            print(f"  FAIL: context: {exc}", file=out)
            ok = False
            continue
        for kernel, physics, particles in _systems(n):
            ref = forcekit.reference_forces(kernel, **particles, **physics)
            for accum in ("float", "fixed64"):
                try:
                    ev = ctx.evaluator(kernel, accum=accum, reproducible=accum == "fixed64",
                                       **physics)
                    ev.set_particles(**particles)
                    f = ev.compute()
                except forcekit.ForcekitError as exc:
                    print(f"  {kernel:13s} {accum:8s} FAIL: {exc}", file=out)
                    ok = False
                    continue
                err = _relative_error(f, ref)
                good = err <= TOLERANCE[accum]
                ok &= good
                results.setdefault((kernel, accum), {})[d["selector"]] = f
                print(f"  {kernel:13s} {accum:8s} error vs double reference {err:.2e}  "
                      f"{'ok' if good else 'FAIL (tolerance %.0e)' % TOLERANCE[accum]}", file=out)
    if len(devices) > 1:
        print("\nbetween devices:", file=out)
        for (kernel, accum), by_device in results.items():
            arrays = list(by_device.values())
            worst = max(_relative_error(a, arrays[0]) for a in arrays[1:]) if len(arrays) > 1 else 0.0
            same = all(np.array_equal(a, arrays[0]) for a in arrays[1:])
            line = f"  {kernel:13s} {accum:8s} largest difference {worst:.2e}"
            if accum == "fixed64":
                line += "  bit-identical" if same else "  NOT bit-identical"
            print(line, file=out)
            if worst > 2 * TOLERANCE[accum]:
                ok = False
    print("\nforcekit selftest: " + ("PASS" if ok else "FAIL"), file=out)
    return ok


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m forcekit.selftest", description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=600, help="particles per system (default 600)")
    parser.add_argument("--device", help="test only this device (selector)")
    args = parser.parse_args(argv)
    return 0 if run(args.n, args.device) else 1


if __name__ == "__main__":
    sys.exit(main())
