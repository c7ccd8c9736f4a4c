"""Quadrature nodes behind :mod:`attnscale.exact` (private; no argument checks here):
the nodes ``u = alpha s`` and weights of the score law (a lattice or a trapezoid rule
for normal scores, a smooth change of variables for cosine scores), and the
logit-quantile nodes of the near-tie limit. :mod:`attnscale.exact._sums` sums the
kernels over them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from .._elementary import STIRLING, expit, log_expit, ndtri

H = 0.25  # step in u = alpha s (and in y) wherever the kernel sets the resolution
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@dataclass
class Nodes:
    """Quadrature nodes ``u`` (ascending) and weights ``W`` (summing to 1 to ~1e-16)
    for ``u = alpha s``. ``i0`` is set when ``u = (i0 + i) H`` exactly (a lattice)."""

    u: NDArray
    W: NDArray
    i0: int | None = None



# ---- nodes ----------------------------------------------------------------------------


def normal_tail_cut(n_max: float) -> float:
    """Truncation ``|s| <= L`` for normal scores: the mass left out, ``2 Phi(-L)``, is
    below ``e^-42 / n_max``. A key beyond ``L`` is rare but dominates its row when it occurs,
    so the relative error this leaves grows with ``n_max``: below 1e-12 up to
    ``n = 1e9`` (where the accuracy of :mod:`attnscale.exact` is measured), about 3e-11 in
    ``E sum p^2`` at ``n = 1e15``, ``alpha = 3`` (measured)."""
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


def log_beta_half(a: float) -> float:
    """``log B(1/2, a)``, accurate to ~1e-16 absolute for every ``a > 0``.

    ``scipy.special.betaln`` (and ``beta``) lose ~``1e-16 a``, from the difference of
    two large ``gammaln`` values (4e-11 at ``a = 32767.5``). For ``a >= 10`` this uses
    ``log(Gamma(a + 1/2) / Gamma(a)) = (1/2) log a + a log1p(1/(2a)) - 1/2 +
    sum_k c_k ((a + 1/2)^(1-2k) - a^(1-2k))`` (Stirling's series, 8 terms).
    """
    if a < 10.0:
        from scipy.special import betaln  # here, not at the top: importing scipy.special is slow

        return float(betaln(0.5, a))
    ratio = 0.5 * math.log(a) + a * math.log1p(0.5 / a) - 0.5
    for k, c in enumerate(STIRLING, start=1):
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


# ---- the near-tie limit -----------------------------------------------------------------

_W_STEP = 0.125  # exactly representable: the grid spacing equals the weight


def quantile_nodes(d: int | None, n_max: float) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    """Nodes ``w`` (step 1/8) of the logit-quantile map ``F(s) = sigmoid(w)``, with
    ``s(w)``, ``log f(s(w))`` and ``f'/f`` at ``s(w)``."""
    # The integrands decay like sigmoid(w)^(n-1) at the lower end and sigmoid(-w) at the
    # upper one, times f; for d = 5, f' is not 0 at s = +-1 and near_tie_second's
    # integrand decays only like e^(-|w|/2) (at the lower end undamped when n = 2): the
    # range reaches e^-40 of it at both ends.
    w = -80.0 + _W_STEP * np.arange(math.ceil((160.0 + math.log(n_max)) / _W_STEP))
    lower = w <= 0
    if d is None:
        q = np.where(lower, expit(w), expit(-w))
        z = ndtri(q)
        s = np.where(lower, z, -z)
        logf = -0.5 * s * s - _LOG_SQRT_2PI
        return w, s, logf, -s
    a = 0.5 * (d - 1.0)
    p = 0.5 * (d - 3.0)
    from scipy.special import betaincinv  # here, not at the top: importing scipy.special is slow

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
