"""Kernel sums behind :mod:`attnscale.exact` (private; no argument checks here).

Notation. Scores ``s`` have density ``f``; the log-weights are ``u = alpha s``.
For a threshold ``y`` (``y = -log t`` in the Laplace-transform identities of
:mod:`attnscale.exact`) and ``x = u - y``::

    phi(y)     = E exp(-e^x)                 (= P(u < y + V), V = log Exp(1))
    1 - phi(y) = E[-expm1(-e^x)]             (computed directly, never as 1 - phi)
    A_k(y)     = E[e^(k x) exp(-e^x)]        k = 1, 2
    B(y)       = E[e^x (x + gamma) exp(-e^x)]  (gamma: Euler's constant)

Every expectation over ``s`` is a weighted sum over nodes ``u_i`` with weights
``W_i`` (a trapezoid rule, after a change of variables for cosine scores) that
is spectrally accurate: the kernels are analytic in the strip ``|Im x| < pi/2``,
so a step of 1/4 in ``u`` gives errors near ``exp(-pi^2 / 0.25) ~ 1e-17``
relative to the integrand's size. Each kernel is summed over the window
``x in [-X_LEFT, X_RIGHT]`` only: to the right of it ``-expm1(-e^x)`` is exactly 1
in double precision (a reverse cumulative sum of the weights), to the left the
kernels equal their first-order expansions ``e^x``, ``e^(2x)`` and
``e^x (x + gamma)`` to a relative ``e^-40`` (prefix sums of tilted weights).
No term is dropped, so small tails keep their relative accuracy. On a uniform
lattice (normal scores with ``alpha >= 1``) the window sums are discrete
convolutions (``numpy.convolve``, exact summation, no FFT rounding in the tails).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._grid import H, Nodes

EULER = float(np.euler_gamma)
X_LEFT = 40.0
X_RIGHT = 6.0
_M_LEFT = int(math.ceil(X_LEFT / H))
_M_RIGHT = int(math.ceil(X_RIGHT / H))
_CHUNK = 1 << 21  # window-matrix entries per block (bounds memory at ~16 MB per array)


@dataclass
class Tables:
    """``log phi``, ``A_1``, ``A_2``, ``B`` on the grid ``y = j H`` (``j`` in ``jy``)."""

    y: NDArray
    logphi: NDArray
    A1: NDArray | None
    A2: NDArray | None
    B: NDArray | None

    def get(self, name: str) -> NDArray:
        """The table ``name`` ("A1", "A2" or "B"); it must have been computed."""
        val = getattr(self, name)
        if val is None:
            raise RuntimeError(f"table {name} was not computed (pass it in need)")
        return val


# ---- per-threshold tables -------------------------------------------------------------


def _kernel_values(x: NDArray, need: set[str]) -> dict[str, NDArray]:
    e = np.exp(x)
    q = np.exp(-e)
    out = {"phi": q, "om": -np.expm1(-e)}
    k1 = e * q
    if "A1" in need or "B" in need:
        out["A1"] = k1
    if "A2" in need:
        out["A2"] = k1 * e
    if "B" in need:
        out["B"] = k1 * (x + EULER)
    return out


_LATTICE_KERNELS: dict[frozenset, dict[str, NDArray]] = {}


def _lattice_kernels(need: set[str]) -> dict[str, NDArray]:
    key = frozenset(need)
    if key not in _LATTICE_KERNELS:
        x = np.arange(-_M_LEFT, _M_RIGHT + 1) * H
        _LATTICE_KERNELS[key] = {k: v[::-1].copy() for k, v in _kernel_values(x, need).items()}
    return _LATTICE_KERNELS[key]


def _prefix(nodes: Nodes) -> dict[str, NDArray]:
    """Cumulative sums used for the parts of each sum outside the kernel window."""
    u, W = nodes.u, nodes.W
    c = u[-1]
    e1 = W * np.exp(u - c)
    zero = np.zeros(1)
    with np.errstate(divide="ignore"):
        return {
            "c": c,
            "head": np.concatenate([zero, np.cumsum(W)]),  # sum over i' < i
            "tail": np.concatenate([np.cumsum(W[::-1])[::-1], zero]),  # sum over i' >= i
            "logP1": np.log(np.concatenate([zero, np.cumsum(e1)])),
            "logP2": np.log(np.concatenate([zero, np.cumsum(W * np.exp(2.0 * (u - c)))])),
            "logPU": np.log(np.concatenate([zero, -np.cumsum(e1 * (u - c))])),  # u - c <= 0
        }


def tables(nodes: Nodes, jy: NDArray[np.int64], need: set[str]) -> Tables:
    """The per-threshold quantities on ``y = jy * H`` (``jy`` ascending integers)."""
    y = jy * H
    u, W, N = nodes.u, nodes.W, nodes.u.size
    pre = _prefix(nodes)
    win = {k: np.zeros(y.size) for k in ["phi", "om"] + sorted(need - {"phi"})}
    if nodes.i0 is not None:
        rel = jy - nodes.i0  # y in units of H relative to the first node
        lo = np.clip(rel - _M_LEFT, 0, N)
        hi = np.clip(rel + _M_RIGHT + 1, 0, N)
        inside = (rel >= -_M_RIGHT) & (rel <= N - 1 + _M_LEFT)
        idx = rel[inside] + _M_RIGHT
        for k, kern in _lattice_kernels(need).items():
            if k in win:
                win[k][inside] = np.convolve(W, kern)[idx]
    else:
        lo = np.searchsorted(u, y - X_LEFT, "left")
        hi = np.searchsorted(u, y + X_RIGHT, "right")
        width = hi - lo
        fits = y.size * int(width.max(initial=0)) <= _CHUNK  # one block for every threshold
        start = 0
        while start < y.size:
            # grow the block while the padded window matrix stays small
            stop = start + 1
            wmax = int(width[start])
            if fits:
                stop, wmax = y.size, int(width.max())
            while stop < y.size and (stop - start + 1) * max(wmax, int(width[stop])) <= _CHUNK:
                wmax = max(wmax, int(width[stop]))
                stop += 1
            if wmax > 0:
                sl = slice(start, stop)
                ix = lo[sl, None] + np.arange(wmax)
                mask = ix < hi[sl, None]
                ix = np.minimum(ix, N - 1)
                x = np.where(mask, u[ix] - y[sl, None], -1000.0)
                w = np.where(mask, W[ix], 0.0)
                for k, val in _kernel_values(x, need).items():
                    if k in win:
                        win[k][sl] = np.einsum("ij,ij->i", w, val)
            start = stop
    # parts outside the window
    shift = pre["c"] - y
    with np.errstate(over="ignore", invalid="ignore"):
        s1 = np.exp(pre["logP1"][lo] + shift)  # sum over head of W e^(u - y)
        s1 = np.where(np.isfinite(s1), s1, 0.0)
    om = win["om"] + pre["tail"][hi] + s1
    phi = win["phi"] + np.maximum(pre["head"][lo] - s1, 0.0)
    with np.errstate(divide="ignore"):
        logphi = np.where(om < 0.5, np.log1p(-np.minimum(om, 0.5)), np.log(phi))
    A1 = A2 = B = None
    if "A1" in need:
        A1 = win["A1"] + s1
    if "A2" in need:
        with np.errstate(over="ignore", invalid="ignore"):
            s2 = np.exp(pre["logP2"][lo] + 2.0 * shift)
        A2 = win["A2"] + np.where(np.isfinite(s2), s2, 0.0)
    if "B" in need:
        with np.errstate(over="ignore", invalid="ignore"):
            su = np.exp(pre["logPU"][lo] + shift)
            head_b = -su + (shift + EULER) * s1
        B = win["B"] + np.where(np.isfinite(head_b), head_b, 0.0)
    return Tables(y, np.maximum(logphi, -1e300), A1, A2, B)


def bulk_grid(nodes: Nodes, n_max: float) -> tuple[int, int]:
    """Index range ``[j0, j1]`` of thresholds ``y = j H`` outside which every outer
    integrand is negligible: below ``min(u) - 6`` ``phi <= exp(-e^6)``; above
    ``max(u) + 52 + log n_max`` the tails are below ``e^-52 / n_max``."""
    j0 = math.floor((nodes.u[0] - X_RIGHT) / H) - 1
    j1 = math.ceil((nodes.u[-1] + X_LEFT + 12.0 + math.log(n_max)) / H) + 1
    return j0, j1


# ---- outer integrals ------------------------------------------------------------------


def _powers(logphi: NDArray, m: NDArray) -> NDArray:
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(np.multiply.outer(m, logphi))


def sum_p2(tab: Tables, n: NDArray) -> NDArray:
    """``n int A_2 phi^(n-1) dy``."""
    return n * H * (_powers(tab.logphi, n - 1.0) @ tab.get("A2"))


def one_minus_sum_p2(tab: Tables, n: NDArray) -> NDArray:
    """``n (n-1) int A_1^2 phi^(n-2) dy`` (``= 1 - E sum p^2``, no cancellation)."""
    return n * (n - 1.0) * H * (_powers(tab.logphi, n - 2.0) @ (tab.get("A1") ** 2))


def entropy(tab: Tables, n: NDArray) -> NDArray:
    """``-n int B phi^(n-1) dy``."""
    return -n * H * (_powers(tab.logphi, n - 1.0) @ tab.get("B"))


def needle(tab: Tables, n: NDArray, u0: NDArray, what: str) -> NDArray:
    """Needle-model integrals for pairs ``(n, u0)`` (``u0 = alpha * gap``)."""
    x0 = np.minimum(u0[:, None] - tab.y[None, :], 50.0)
    e0 = np.exp(x0)
    with np.errstate(over="ignore", invalid="ignore"):
        lp1 = np.multiply.outer(n - 1.0, tab.logphi)
        if what == "weight":
            return H * np.einsum("ij,ij->i", np.exp(x0 - e0), np.exp(lp1))
        if what == "sum_p2":
            q0 = np.exp(-e0)
            p2 = np.exp(np.multiply.outer(n - 2.0, tab.logphi))
            a = np.einsum("ij,ij->i", np.exp(2.0 * x0 - e0), np.exp(lp1))
            b = np.einsum("ij,ij->i", q0 * p2, np.broadcast_to(tab.get("A2"), q0.shape))
            return H * (a + (n - 1.0) * b)
        # entropy: int k0 dy = 0 and int B dy = 0 hold exactly, but their lattice sums are
        # rounding-sized (~6e-16), which a tiny entropy cannot absorb. Each term is summed
        # either as it stands or with its kernel's zero integral taken out (expm1 for exp),
        # whichever has the smaller integrand: taking it out keeps a dominant needle's tiny
        # entropy accurate, leaving it in keeps a row dominated by the other key accurate.
        k0 = np.exp(x0 - e0) * (x0 + EULER)
        lq2 = np.multiply.outer(n - 2.0, tab.logphi) - e0  # log(e^(-e0) phi^(n-2))
        a = _smaller_form(k0, lp1)
        b = _smaller_form(np.broadcast_to(tab.get("B"), x0.shape), lq2)
        return -H * (a + (n - 1.0) * b)


def _smaller_form(kernel: NDArray, log_factor: NDArray) -> NDArray:
    """Row sums of ``kernel * exp(log_factor)`` where the kernel's own row sum is zero in
    exact arithmetic, so ``kernel * expm1(log_factor)`` has the same sum: whichever of the
    two has the smaller sum of absolute values (the smaller rounding error)."""
    with np.errstate(over="ignore", invalid="ignore"):
        forms = (np.exp(log_factor), np.expm1(log_factor))
    sums = [np.einsum("ij,ij->i", kernel, f) for f in forms]
    sizes = [np.einsum("ij,ij->i", np.abs(kernel), np.abs(f)) for f in forms]
    return np.where(sizes[0] <= sizes[1], sums[0], sums[1])


def needle_grid(j0: int, j1: int, u0: NDArray) -> NDArray[np.int64]:
    """Bulk range ``[j0, j1]`` plus ``[u0 - 8, u0 + 48]`` around each needle, where the
    needle's own kernel is not negligible (with no cut inside a kernel's support)."""
    pieces = [np.arange(j0, j1 + 1)]
    for v in np.unique(u0):
        a, b = math.floor((v - 8.0) / H), math.ceil((v + 48.0) / H)
        if b < j0:  # wholly below: there phi = 0 and the kernel's remaining integral vanishes
            continue
        pieces.append(np.arange(min(a, j1 + 1), b + 1))
    return np.unique(np.concatenate(pieces))
