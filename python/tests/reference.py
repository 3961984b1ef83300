"""Brute-force numpy references of the force laws, written from docs/force-laws.md (not from the
library's code): gravity with r_ij = r_j - r_i, the molecular laws with d_ij = r_i - r_j, F_i =
sum_j f(r) d_ij / r, force-shifted at the cutoff (f_s = f(r) - f(rc) below rc, 0 beyond), minimum
image in a periodic box."""
import numpy as np


def gravity(pos, mass, eps):
    d = pos[None, :, :] - pos[:, None, :]  # r_j - r_i
    s2 = (d**2).sum(-1) + eps**2
    np.fill_diagonal(s2, np.inf)
    return (mass[None, :, None] * d / s2[..., None] ** 1.5).sum(1)


def molecular(pos, charge=None, types=None, table=None, cutoff=None, box=None, coulomb=1.0,
              exclusions=()):
    """LJ (+ Coulomb when charge is given) forces. table[a, b] = (epsilon, sigma)."""
    n = len(pos)
    d = pos[:, None, :] - pos[None, :, :]  # r_i - r_j
    if box is not None:
        d -= box * np.rint(d / box)
    r = np.sqrt((d**2).sum(-1))
    np.fill_diagonal(r, np.inf)
    if types is None:
        types = np.zeros(n, int)
    if table is None:
        table = np.ones((1, 1, 2))
    eps = table[types[:, None], types[None, :], 0]
    sig = table[types[:, None], types[None, :], 1]

    def f(x):
        sr6 = (sig / x) ** 6
        out = 24 * eps * (2 * sr6**2 - sr6) / x
        if charge is not None:
            out = out + coulomb * charge[:, None] * charge[None, :] / x**2
        return out

    fr = f(r)
    if cutoff is not None:
        fr = np.where(r < cutoff, fr - f(np.full_like(r, cutoff)), 0.0)
    for i, j in exclusions:
        fr[i, j] = fr[j, i] = 0.0
    return (fr[..., None] * d / r[..., None]).sum(1)


def relative_error(f, ref):
    return np.abs(f - ref).max() / np.abs(ref).max()


def as_float(x):
    """x as the device holds it with float positions (and float charges and masses): a
    reference on these compares the force arithmetic, not the rounding of the inputs, whose
    effect on a close pair depends on the draw (about 13 ulp / r for lj's r^-13)."""
    return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)


def as_double_single(x):
    """x as positions="ds" holds it: the nearest float plus the nearest float to the rest."""
    x = np.asarray(x, dtype=np.float64)
    hi = x.astype(np.float32).astype(np.float64)
    return hi + (x - hi).astype(np.float32).astype(np.float64)
