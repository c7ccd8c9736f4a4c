"""Exact expectations over a row of ``n`` i.i.d. scores (see :mod:`attnscale.exact`)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validate as v
from .._elementary import gammaln
from . import _grid, _sums
from ._common import ALPHA_MAX, Out, _by_alpha, _dimension, _law, _lengths, _nodes, _scales

__all__ = ["expected_sum_p2", "expected_half_l1", "expected_entropy", "near_tie_limit", "near_tie_correction", "expected_sum_p2_shared_query"]


def _bulk(kind: str, n: ArrayLike, alpha: ArrayLike, d: object) -> Out:
    n_, a_ = np.broadcast_arrays(_lengths(n), _scales(alpha))
    law = _law(d)
    shape = n_.shape
    n_, a_ = n_.ravel().astype(float), a_.ravel().astype(float)
    need = {"p2": {"A2"}, "half_l1": {"A1"}, "entropy": {"B"}}[kind]

    def compute(a: float, sel: NDArray) -> NDArray:
        m = n_[sel]
        nodes = _nodes(a, law, float(m.max()))
        j0, j1 = _sums.bulk_grid(nodes, float(m.max()))
        tab = _sums.tables(nodes, np.arange(j0, j1 + 1), need)
        uniq, inv = np.unique(m, return_inverse=True)
        if kind == "p2":
            val = _sums.sum_p2(tab, uniq)
        elif kind == "half_l1":
            val = a * _sums.one_minus_sum_p2(tab, uniq)
        else:
            val = _sums.entropy(tab, uniq)
        return val[inv]

    def zero(sel: NDArray) -> NDArray:
        m = n_[sel]
        return {"p2": 1.0 / m, "half_l1": np.zeros_like(m), "entropy": np.log(m)}[kind]

    return v.scalar_or_array(_by_alpha(a_, compute, zero), shape)


def expected_sum_p2(n: ArrayLike, alpha: ArrayLike, d: int | None = None) -> Out:
    """Exact ``E sum_i p_i^2`` for ``p = softmax(alpha s)`` over ``n`` independent scores.

    ``E sum p^2 = n int_0^inf t psi_2(t) phi(t)^(n-1) dt`` (module docstring), evaluated
    as ``n int A_2(y) phi(y)^(n-1) dy``. ``d=None``: standard normal scores; ``d``
    (integer >= 2): cosine scores in ``R^d``. Broadcasts ``n`` (real, ``2 <= n <= 1e15``)
    against ``alpha`` (``0 <= alpha <= 1e4``); ``alpha = 0`` gives exactly ``1/n``.

    Accuracy: relative error below 1e-12 against 30-digit ``mpmath`` over
    ``2 <= n <= 1e9``, ``alpha <= 50`` (normal) and ``2 <= d <= 4096``, ``alpha <= 1000``
    (cosine). Cost: the inner sums are computed once per distinct ``alpha``; a grid of
    200 ``alpha`` values times 10 ``n`` takes well under a second (``bench/bench_exact.py``).

    Examples
    --------
    >>> round(float(expected_sum_p2(64, 0.0)), 12) == round(1 / 64, 12)
    True
    >>> round(float(expected_sum_p2(64, 1.0)), 6)
    0.038804
    """
    return _bulk("p2", n, alpha, d)


def expected_half_l1(n: ArrayLike, alpha: ArrayLike, d: int | None = None) -> Out:
    """``alpha (1 - E sum_i p_i^2)``, the expected ``(1/2) ||J||_1`` of the softmax Jacobian.

    ``1 - E sum p^2`` is never formed as a difference: it is ``n (n-1) E[p_1 p_2] =
    n (n-1) int_0^inf t psi_1(t)^2 phi(t)^(n-2) dt`` (``= n (n-1) int A_1^2 phi^(n-2) dy``),
    a positive integrand, so the result keeps full relative accuracy when
    ``E sum p^2`` is within 1e-12 of 1. Same arguments and accuracy as
    :func:`expected_sum_p2`; ``alpha = 0`` gives 0.

    As ``alpha -> inf`` it tends to :func:`near_tie_limit`, for normal scores and cosine
    scores with ``d >= 5`` as ``near_tie_limit + C_2 / alpha^2 + O(alpha^-3)``
    (:func:`near_tie_correction` gives ``C_2``; there is no ``1/alpha`` term).
    """
    return _bulk("half_l1", n, alpha, d)


def expected_entropy(n: ArrayLike, alpha: ArrayLike, d: int | None = None) -> Out:
    """Exact expected Shannon entropy (nats) ``E H``, ``H = -sum_i p_i log p_i``.

    ``E H = -n int_0^inf E[w (log(t w) + gamma) e^(-t w)] phi(t)^(n-1) dt`` (module
    docstring), which equals ``E log Z - alpha E sum p_i s_i`` without its cancellation.
    ``alpha = 0`` gives ``log n``. For large ``alpha`` (normal scores; cosine ``d >= 5``)
    ``alpha E H -> (pi^2/6) near_tie_limit(n, d)`` (two near-tied keys with gap ``delta``
    contribute the binary entropy of ``sigmoid(alpha delta)``, whose integral over
    ``delta >= 0`` is ``pi^2 / (6 alpha)``). Same arguments and accuracy as
    :func:`expected_sum_p2` (relative error below 1e-11).

    Examples
    --------
    >>> import math
    >>> math.isclose(expected_entropy(64, 0.0), math.log(64), rel_tol=1e-12)
    True
    """
    return _bulk("entropy", n, alpha, d)


def near_tie_limit(n: ArrayLike, d: int | None = None) -> Out:
    """``lim_(alpha -> inf) alpha (1 - E sum p^2) = f_Delta(0) = n (n-1) int f^2 F^(n-2) ds``,
    the density at 0 of the gap ``Delta`` between the two largest scores.

    Why: ``alpha (1 - E sum p^2) = n (n-1) alpha int A_1^2 phi^(n-2) dy``, and with
    ``c = y / alpha`` and ``V = log Exp(1)``, ``alpha A_1 = E f(c + V/alpha)`` and
    ``phi = E F(c + V/alpha)``, which tend to ``f(c)`` and ``F(c)``. Expanding in
    ``1/alpha``, the mean of ``V`` (``-gamma``) only shifts ``c`` and drops out, so
    the first correction is ``C_2 / alpha^2`` from ``Var V = pi^2/6``
    (:func:`near_tie_correction`); for ``n >= 3`` an ``alpha^-3`` term from the third
    cumulant ``-2 zeta(3)`` follows. Normal scores, ``n = 2``: ``1/sqrt(pi)``;
    cosine scores with ``d = 3`` (uniform on [-1, 1]): ``n/2``; ``d = 2``: ``+inf``
    (the density ``(1-s^2)^(-1/2)`` makes ``int f^2`` diverge at ``s = 1``;
    ``alpha (1 - E sum p^2)`` then grows like ``log alpha``). For ``d = 3`` the
    approach is at rate ``1/alpha`` (the density jumps at ``+-1``), for ``d = 4`` at
    ``log(alpha) / alpha^2``.

    Computed as ``n (n-1) int f(F^-1(sigmoid w)) sigmoid(w)^(n-1) sigmoid(-w) dw``
    (trapezoid in the logit of the quantile, step 1/8), relative error below 1e-12.
    """
    m = _lengths(n)
    law = _law(d)
    flat = m.ravel().astype(float)
    if law == 2:
        return v.scalar_or_array(np.full(flat.shape, np.inf), m.shape)
    uniq, inv = np.unique(flat, return_inverse=True)
    return v.scalar_or_array(_grid.near_tie(law, uniq)[inv], m.shape)


def near_tie_correction(n: ArrayLike, d: int | None = None) -> Out:
    """``C_2`` in ``alpha (1 - E sum p^2) = near_tie_limit + C_2 / alpha^2 + O(alpha^-3)``:

        C_2 = -(pi^2/6) n (n-1) int [f'^2 F^(n-2) + ((n-2)/2) f^2 f' F^(n-3)] ds

    (from ``n (n-1) (pi^2/6) int [f f'' F^(n-2) + ((n-2)/2) f^2 f' F^(n-3)] ds`` after an
    integration by parts). Normal scores, ``n = 2``: ``-pi^(3/2) / 12``. Defined for
    normal scores and cosine scores with ``d >= 5`` (for smaller ``d`` the expansion
    has other powers, see :func:`near_tie_limit`), which raise ``ValueError``. Same
    quadrature as :func:`near_tie_limit`, relative error below 1e-12 (``d = 5``, where
    ``f'`` does not vanish at ``s = +-1``, within 1e-14 of its closed forms).
    """
    m = _lengths(n)
    law = _law(d)
    if law is not None and law < 5:
        raise ValueError(f"d must be >= 5 for the 1/alpha^2 expansion (d = 3: 1/alpha, d = 4: log(alpha)/alpha^2), got {law}")
    flat = m.ravel().astype(float)
    uniq, inv = np.unique(flat, return_inverse=True)
    return v.scalar_or_array(_grid.near_tie_second(law, uniq)[inv], m.shape)


def expected_sum_p2_shared_query(n: ArrayLike, alpha: ArrayLike, d: int) -> Out:
    """Exact ``E sum p^2`` for dot-product scores ``s_i = q . k_i / sqrt(d)`` with
    ``q, k_i ~ N(0, I_d)`` (one query shared by the row, ``d`` an integer >= 1).

    Given ``q`` the scores are independent ``N(0, R^2)`` with ``R^2 = |q|^2 / d``, so
    they are exchangeable but not independent, and

        E sum p^2 = E_R[ expected_sum_p2(n, alpha R) ],   R^2 ~ chi^2_d / d.

    The outer average is a trapezoid rule in ``t = log R^2`` (density
    ``k^k e^(k t - k e^t) / Gamma(k)``, ``k = d/2``), applied to ``expected_sum_p2 - 1/n``
    (which vanishes like ``R^2`` as ``R -> 0``). Its step is ``min(0.2, 0.5/sqrt(k),
    0.5/log n)``: the density sets the first two, and the last follows the inner term,
    which grows like ``e^(alpha^2 R^2) / n`` in ``t`` until it freezes near
    ``alpha^2 R^2 ~ 2 log n`` (without it, 4e-6 relative error at ``d = 8``, ``n = 1e15``).
    Relative error below 1e-10 (measured: at most 2e-12 against a Gauss-Legendre
    quadrature in ``t`` for ``d`` from 1 to 32, ``n`` 1e9 and 1e15, ``alpha`` from 1 to 5,
    where the step without the last term was worst).
    ``alpha`` times the largest ``R`` on the grid must stay within the supported
    maximum of :func:`expected_sum_p2`; larger ``alpha`` is refused by name.

    (For cosine scores no such correction is needed: given ``q``, the cosines with
    independent uniformly random keys have the same law for every ``q`` by rotational
    invariance, so they are exactly i.i.d.)
    """
    d_ = _dimension(d, 1)
    n_, a_ = np.broadcast_arrays(_lengths(n), _scales(alpha))
    shape = n_.shape
    n_, a_ = n_.ravel().astype(float), a_.ravel().astype(float)
    k = 0.5 * d_
    out = 1.0 / n_
    for a in np.unique(a_[a_ > 0]):
        sel = a_ == a
        ht = min(0.2, 0.5 / math.sqrt(k), 0.5 / math.log(max(float(n_[sel].max()), 2.0)))
        c = 60.0 / k
        t_right = math.sqrt(2.0 * c) + math.log1p(c)  # e^t - 1 - t >= t^2/2 >= c here: k (e^t - 1 - t) >= 60 beyond
        t_left = -60.0 / k - 2.0 * abs(math.log(a)) - 60.0
        t = t_left + ht * np.arange(math.ceil((t_right - t_left) / ht) + 1)  # exact spacing ht
        log_rho = k * math.log(k) - gammaln(k) + k * t - k * np.exp(t)
        bound = log_rho + np.minimum(0.0, 2.0 * math.log(a) + t)
        t = t[bound > bound.max() - 50.0]
        log_rho = k * math.log(k) - gammaln(k) + k * t - k * np.exp(t)
        if a * math.exp(0.5 * t[-1]) > ALPHA_MAX:
            raise ValueError(f"alpha = {v._show(a)} is too large for d = {d_}: the average over R reaches alpha R = "
                             f"{a * math.exp(0.5 * t[-1]):.4g}, beyond the supported maximum {ALPHA_MAX:g}")
        m = n_[sel]
        vals = np.asarray(expected_sum_p2(m[None, :], (a * np.exp(0.5 * t))[:, None]))
        out[sel] = 1.0 / m + ht * (np.exp(log_rho) @ (vals - 1.0 / m[None, :]))
    return v.scalar_or_array(out, shape)
