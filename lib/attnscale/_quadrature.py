"""Quadrature engine behind :mod:`attnscale.exact` (private; no argument checks here).

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
from scipy.special import betaincinv, betaln, expit, log_expit, ndtri

EULER = float(np.euler_gamma)
H = 0.25  # step in u = alpha s (and in y) wherever the kernel sets the resolution
X_LEFT = 40.0
X_RIGHT = 6.0
_M_LEFT = int(math.ceil(X_LEFT / H))
_M_RIGHT = int(math.ceil(X_RIGHT / H))
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_CHUNK = 1 << 21  # window-matrix entries per block (bounds memory at ~16 MB per array)


@dataclass
class Nodes:
    """Quadrature nodes ``u`` (ascending) and weights ``W`` (summing to 1 to ~1e-16)
    for ``u = alpha s``. ``i0`` is set when ``u = (i0 + i) H`` exactly (a lattice)."""

    u: NDArray
    W: NDArray
    i0: int | None = None


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


# ---- nodes ----------------------------------------------------------------------------


def normal_tail_cut(n_max: float) -> float:
    """Truncation ``|s| <= L`` for normal scores: the mass left out, ``2 Phi(-L)``, is
    below ``e^-42 / n_max``, far under what any of the integrals can resolve."""
    return math.sqrt(2.0 * (42.0 + math.log(n_max)))


def normal_nodes(alpha: float, lower: float, upper: float) -> Nodes:
    """Nodes for standard normal scores on ``-lower <= s <= upper``: the lattice
    ``u = i H`` when ``alpha >= 1``, otherwise a trapezoid rule in ``s`` with step
    ``min(0.4, 0.25 / alpha)`` (the density sets the resolution, then the kernel)."""
    if alpha >= 1.0:
        i = np.arange(math.floor(-lower * alpha / H), math.ceil(upper * alpha / H) + 1)
        u = i * H
        z = u / alpha
        W = np.exp(-0.5 * z * z - _LOG_SQRT_2PI) * (H / alpha)
        return Nodes(u, W, int(i[0]))
    hs = min(0.4, 0.25 / alpha)
    s = np.arange(math.floor(-lower / hs), math.ceil(upper / hs) + 1) * hs
    return Nodes(alpha * s, np.exp(-0.5 * s * s - _LOG_SQRT_2PI) * hs)


# Bernoulli numbers B_2k / (2k (2k-1)), k = 1..8, for Stirling's series of log Gamma
_STIRLING = [1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400]


def log_beta_half(a: float) -> float:
    """``log B(1/2, a)``, accurate to ~1e-16 absolute for every ``a > 0``.

    ``scipy.special.betaln`` (and ``beta``) lose ~``1e-16 a``, from the difference of
    two large ``gammaln`` values (4e-11 at ``a = 32767.5``). For ``a >= 10`` this uses
    ``log(Gamma(a + 1/2) / Gamma(a)) = (1/2) log a + a log1p(1/(2a)) - 1/2 +
    sum_k c_k ((a + 1/2)^(1-2k) - a^(1-2k))`` (Stirling's series, 8 terms).
    """
    if a < 10.0:
        return float(betaln(0.5, a))
    ratio = 0.5 * math.log(a) + a * math.log1p(0.5 / a) - 0.5
    for k, c in enumerate(_STIRLING, start=1):
        ratio += c * ((a + 0.5) ** (1 - 2 * k) - a ** (1 - 2 * k))
    return 0.5 * math.log(math.pi) - ratio


def _log_log1p_exp(lx: NDArray) -> NDArray:
    """``log(log1p(exp(lx)))`` without underflow for very negative ``lx``."""
    out = np.empty_like(lx)
    small = lx < -30.0
    out[small] = lx[small] - 0.5 * np.exp(lx[small])
    out[~small] = np.log(np.logaddexp(0.0, lx[~small]))
    return out


def cosine_nodes(alpha: float, d: int, cut: float, h: float | None = None) -> tuple[Nodes, NDArray, NDArray]:
    """Nodes for cosine scores in ``R^d`` (density ``(1-s^2)^p / B(1/2, (d-1)/2)``,
    ``p = (d-3)/2``) from the trapezoid rule in ``tau`` after the smooth map

        s(tau) = -1 + [softplus(beta (tau + 1)) - softplus(beta (tau - 1))] / beta,

    which is the identity in the middle (to ``e^(-beta (1 - |tau|))``) and approaches
    ``s = +-1`` exponentially, ``1 - s ~ e^(-beta (tau - 1)) / beta``, so the endpoint
    factor ``(1 - s)^p`` becomes an exponential decay in ``tau`` for every ``d >= 2``
    (no endpoint singularity left, even for ``d = 2`` or odd ``d``). The map is analytic
    for ``|Im tau| < pi / beta``; ``beta h = 0.4`` keeps its aliasing error near ``e^-49``.
    Step: ``h = min(0.25 / alpha, 0.7 / sqrt(d - 1), 0.25)`` in ``s``. Nodes whose
    weight is below ``e^-cut`` times the largest are dropped.

    Returns the nodes and, for each node, ``log(1 - s)`` and ``log(1 + s)``.
    """
    p = 0.5 * (d - 3.0)
    if h is None:
        h = min(0.25 / alpha if alpha > 0 else np.inf, 0.7 / math.sqrt(d - 1.0), 0.25)
    beta = 0.4 / h
    tmax = 1.0 + (cut + 20.0) / ((p + 1.0) * beta)
    tau = np.arange(-math.ceil(tmax / h), math.ceil(tmax / h) + 1) * h
    log_em = 2.0 * beta + math.log1p(-math.exp(-2.0 * beta))  # log expm1(2 beta)
    sp_plus = np.logaddexp(0.0, beta * (1.0 + tau))
    sp_minus = np.logaddexp(0.0, beta * (1.0 - tau))
    log_1ms = _log_log1p_exp(log_em - sp_plus) - math.log(beta)  # log(1 - s)
    log_1ps = _log_log1p_exp(log_em - sp_minus) - math.log(beta)  # log(1 + s)
    log_ds = log_em - sp_plus - sp_minus  # log s'(tau) = log(sigma(a) - sigma(b)), no cancellation
    # s itself, to full relative accuracy in the middle: s = tau + (sp(-beta(1+tau)) - sp(-beta(1-tau))) / beta
    s_mid = tau + (np.logaddexp(0.0, -beta * (1.0 + tau)) - np.logaddexp(0.0, -beta * (1.0 - tau))) / beta
    mid = np.abs(tau) < 0.5
    # p log(1 - s^2) multiplies rounding errors by p (up to 32766): use log1p(-s^2) where s is small
    log_1ms2 = log_1ms + log_1ps
    log_1ms2[mid] = np.log1p(-s_mid[mid] * s_mid[mid])
    logW = math.log(h) + log_ds - log_beta_half(0.5 * (d - 1.0)) + p * log_1ms2
    keep = logW > logW.max() - cut
    top = tau >= 0
    u = np.where(top, alpha - alpha * np.exp(log_1ms), -alpha + alpha * np.exp(log_1ps))
    u = np.where(mid, alpha * s_mid, u)
    return Nodes(u[keep], np.exp(logW[keep])), log_1ms[keep], log_1ps[keep]


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
        start = 0
        while start < y.size:
            # grow the block while the padded window matrix stays small
            stop = start + 1
            wmax = int(width[start])
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
        q0 = np.exp(-e0)
        p2 = np.exp(np.multiply.outer(n - 2.0, tab.logphi))
        if what == "sum_p2":
            a = np.einsum("ij,ij->i", np.exp(2.0 * x0 - e0), np.exp(lp1))
            b = np.einsum("ij,ij->i", q0 * p2, np.broadcast_to(tab.get("A2"), q0.shape))
            return H * (a + (n - 1.0) * b)
        # entropy: the int k(u0 - y) dy = 0 part is taken out, so a dominant needle's tiny
        # entropy keeps its relative accuracy
        k0 = np.exp(x0 - e0) * (x0 + EULER)
        a = np.einsum("ij,ij->i", k0, np.expm1(lp1))
        b = np.einsum("ij,ij->i", q0 * p2, np.broadcast_to(tab.get("B"), q0.shape))
        return -H * (a + (n - 1.0) * b)


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


# ---- the near-tie limit -----------------------------------------------------------------

_W_STEP = 0.125  # exactly representable: the grid spacing equals the weight


def quantile_nodes(d: int | None, n_max: float) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    """Nodes ``w`` (step 1/8) of the logit-quantile map ``F(s) = sigmoid(w)``, with
    ``s(w)``, ``log f(s(w))`` and ``f'/f`` at ``s(w)``."""
    w = -50.0 + _W_STEP * np.arange(math.ceil((105.0 + math.log(n_max)) / _W_STEP))
    lower = w <= 0
    if d is None:
        q = np.where(lower, expit(w), expit(-w))
        z = ndtri(q)
        s = np.where(lower, z, -z)
        logf = -0.5 * s * s - _LOG_SQRT_2PI
        return w, s, logf, -s
    a = 0.5 * (d - 1.0)
    p = 0.5 * (d - 3.0)
    xq = betaincinv(a, a, expit(-np.abs(w)))  # the smaller of (1 - s)/2 and (1 + s)/2
    near = np.log(2.0 * xq)
    far = np.log1p(-xq) + math.log(2.0)
    log_1ms = np.where(lower, far, near)
    log_1ps = np.where(lower, near, far)
    s = np.where(lower, 2.0 * xq - 1.0, 1.0 - 2.0 * xq)
    log_1ms2 = log_1ms + log_1ps
    mid = np.abs(s) < 0.5
    log_1ms2[mid] = np.log1p(-s[mid] * s[mid])
    logf = -log_beta_half(a) + p * log_1ms2
    return w, s, logf, -2.0 * p * s * np.exp(-log_1ms - log_1ps)


def near_tie(d: int | None, n: NDArray) -> NDArray:
    """``n (n-1) int f^2 F^(n-2) ds = n (n-1) int f(s(w)) sigmoid(w)^(n-1) sigmoid(-w) dw``."""
    w, _, logf, _ = quantile_nodes(d, float(n.max()))
    lw = log_expit(w)
    lr = log_expit(-w)
    return n * (n - 1.0) * _W_STEP * np.exp(np.multiply.outer(n - 1.0, lw) + lr + logf).sum(axis=-1)


def near_tie_second(d: int | None, n: NDArray) -> NDArray:
    """``C_2 = -(pi^2/6) n (n-1) int [f'^2 F^(n-2) + ((n-2)/2) f^2 f' F^(n-3)] ds``."""
    w, _, logf, ell = quantile_nodes(d, float(n.max()))
    lw = log_expit(w)
    lr = log_expit(-w)
    base = np.multiply.outer(n - 1.0, lw) + lr
    t1 = (np.exp(base + logf) * ell * ell).sum(axis=-1)
    t2 = (np.exp(base - lw + 2.0 * logf) * ell).sum(axis=-1)
    return -(np.pi**2 / 6.0) * n * (n - 1.0) * _W_STEP * (t1 + 0.5 * (n - 2.0) * t2)
