"""The gradient-maximising scale under the mean-field approximation.

For scores ``s_i`` drawn independently from a distribution with moment
generating function ``M(t) = E[exp(t s)]``, the mean-field (law of large
numbers) step replaces ``sum_i p_i^2`` by ``M(2 alpha) / (n M(alpha)^2)``, and
the L1 size of the softmax Jacobian, ``alpha (1 - sum_i p_i^2)``, by the
objective ``alpha (1 - M(2 alpha) / (n M(alpha)^2))``. For standard normal
scores ``M(t) = exp(t^2 / 2)`` and the objective is ``alpha (1 - exp(alpha^2) / n)``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate as v
from ._elementary import gammaln
from ._roots import regula_falsi
from .scores import _bessel_dims
from .special import _log_hyp0f1, _log_ive, _ratio_and_complement

__all__ = [
    "collision_normal",
    "objective_normal",
    "alpha_star_normal",
    "alpha_star_normal_asymptotic",
    "alpha_star_normal_lambertw",
    "n_for_alpha_normal",
    "alpha_star_frobenius_normal",
    "su_sweep",
    "fit_through_origin",
    "collision_cosine",
    "objective_cosine",
    "alpha_star_cosine",
]



def collision_normal(alpha: ArrayLike, n: ArrayLike) -> NDArray[np.float64] | float:
    """Mean-field ``sum_i p_i^2`` for standard normal scores: ``exp(alpha^2) / n``.

    Computed as ``exp(alpha^2 - log n)``; it exceeds 1 (impossible for the true
    sum) once ``alpha^2 > log n``, which marks where the approximation fails.
    """
    a = v.positive(alpha, "alpha")
    m = v.lengths(n)
    with np.errstate(over="ignore"):
        return v.scalar_or_array(np.exp(a * a - np.log(m)))


def objective_normal(alpha: ArrayLike, n: ArrayLike) -> NDArray[np.float64] | float:
    """Mean-field gradient size for standard normal scores,
    ``G(alpha) = alpha (1 - exp(alpha^2) / n)`` (broadcasting ``alpha`` and ``n``).

    Negative where the approximation has failed (``alpha^2 > log n``); tends to
    ``-inf`` as ``alpha`` grows.
    """
    a = v.positive(alpha, "alpha")
    m = v.lengths(n)
    with np.errstate(over="ignore"):
        return v.scalar_or_array(a * -np.expm1(a * a - np.log(m)))


#: the most Newton steps :func:`alpha_star_normal` takes before it raises
NEWTON_STEPS = 50


def alpha_star_normal(n: ArrayLike) -> NDArray[np.float64] | float:
    """The maximiser of ``alpha (1 - exp(alpha^2)/n)`` over ``alpha > 0``.

    It solves ``exp(alpha^2) (1 + 2 alpha^2) = n``; with ``x = alpha^2``,
    ``(x + 1/2) exp(x + 1/2) = n sqrt(e) / 2``, so
    ``alpha* = sqrt(W0(n sqrt(e) / 2) - 1/2)`` with ``W0`` the principal branch
    of the Lambert W function. A positive optimum exists exactly for ``n > 1``.

    Vectorised over any array shape. The closed form is not how it is
    evaluated: ``x = alpha^2`` is the root of ``g(x) = x + log1p(2x) - log n``,
    which is increasing and concave with slope between 1 and 3, so Newton's
    method started at ``x = log n`` lands below the root after one step and then
    climbs to it quadratically. The iteration stops when every step is below
    4 ulp of ``x`` (at most about six steps for ``n`` up to 1e308; near
    ``n = 1``, where ``x`` is tiny, a few more) and raises ``ArithmeticError`` if
    ``NEWTON_STEPS`` (50) steps do not get there, so it never returns an
    unconverged value. The unit tests hold the result to 4 ulp against a
    50-digit reference. It is about as fast as one vectorised call of
    ``scipy.special.lambertw`` (the performance appendix: the ratio of medians
    stays within a factor of two either way) and, unlike the closed form, free of
    the cancellation in ``W0 - 1/2`` near ``n = 1``.

    Parameters
    ----------
    n : real or array of reals
        The number of keys in the row, each ``> 1``.

    Returns
    -------
    float or ndarray
        ``alpha*`` for each ``n`` (a float for a scalar ``n``).

    Raises
    ------
    ValueError
        ``n`` at most 1, not finite, or NaN; the message starts with ``n``.

    Examples
    --------
    >>> round(alpha_star_normal(512), 4)
    2.0084
    >>> alpha_star_normal([64, 4096]).round(4)
    array([1.5494, 2.4055])
    """
    m = v.lengths(n)
    log_n = np.log(m)
    x = log_n.copy()
    for _ in range(NEWTON_STEPS):
        step = (x + np.log1p(2.0 * x) - log_n) / (1.0 + 2.0 / (1.0 + 2.0 * x))
        x = x - step
        if np.all(np.abs(step) <= 4.0 * np.finfo(float).eps * x):
            return v.scalar_or_array(np.sqrt(x))
    raise ArithmeticError(f"alpha_star_normal: Newton's method did not converge in {NEWTON_STEPS} steps for n = {v._show(m)}")


def alpha_star_normal_lambertw(n: ArrayLike) -> NDArray[np.float64] | float:
    """The closed form ``sqrt(W0(n sqrt(e) / 2) - 1/2)`` evaluated with SciPy's Lambert W: the
    reference route to :func:`alpha_star_normal` (which never calls it). It shares no code
    with the Newton solver, and is as accurate except just above ``n = 1``, where
    ``W0 - 1/2`` cancels (relative error about 4e-9 at ``n = 1 + 1e-8``). ``n > 1``."""
    from scipy.special import lambertw

    m = v.lengths(n)
    return v.scalar_or_array(np.sqrt(lambertw(m * np.sqrt(np.e) / 2).real - 0.5))


def alpha_star_normal_asymptotic(n: ArrayLike, terms: int = 2) -> NDArray[np.float64] | float:
    """Large-``n`` expansion of ``alpha*`` for normal scores, with ``L = log n``:

    - ``terms=1``: ``sqrt(L)``;
    - ``terms=2``: ``sqrt(L - log(2L))``;
    - ``terms=3``: ``sqrt(L - log(2L) + (log(2L) - 1/2) / L)``.

    The relative error of each is ``O(log L / L)``, ``O((log L / L)^2)`` and
    ``O((log L)^2 / L^3)`` for ``alpha*^2``. The two-term argument
    ``L - log(2L)`` is at least ``1 - log 2`` for every ``L > 0``; the
    three-term one turns negative for small ``n`` (below 2), which is
    an error.
    """
    if terms not in (1, 2, 3):
        raise ValueError(f"terms must be 1, 2 or 3, got {terms!r}")
    m = v.lengths(n)
    L = np.log(m)
    if terms == 1:
        return v.scalar_or_array(np.sqrt(L))
    x = L - np.log(2.0 * L)
    if terms == 3:
        x = x + (np.log(2.0 * L) - 0.5) / L
    if (x <= 0).any():
        raise ValueError(f"n is too small for the {terms}-term expansion: got {v._show(m[x <= 0][0])}")
    return v.scalar_or_array(np.sqrt(x))


def n_for_alpha_normal(alpha: ArrayLike) -> NDArray[np.float64] | float:
    """The length ``n`` for which ``alpha`` is the mean-field optimum:
    ``n = exp(alpha^2) (1 + 2 alpha^2)`` (the inverse of :func:`alpha_star_normal`)."""
    a = v.positive(alpha, "alpha")
    with np.errstate(over="ignore"):
        return v.scalar_or_array(np.exp(a * a) * (1.0 + 2.0 * a * a))


def _frobenius_foc(x: float, n: float) -> float:
    # 1 + u/n - 2 u^2/n written as ((n - 1) - (u - 1))/n - 2 (u/n)(u - 1): near n = 1 and x = 0
    # each piece is small and exact to a few ulp (n - 1 is exact there), so the sign is right
    em = np.expm1(x)
    u = 1.0 + em
    w = u / n
    return ((n - 1.0) - em) / n - 2.0 * w * em + x * (1.0 + 2.0 * w - 6.0 * u * w)


def alpha_star_frobenius_normal(n: ArrayLike) -> NDArray[np.float64] | float:
    """The maximiser of the mean-field Frobenius norm of the softmax Jacobian, normal scores.

    ``||J||_F^2 = alpha^2 (sum p^2 - 2 sum p^3 + (sum p^2)^2)``, and mean field puts
    ``sum p^k = n^(1-k) exp(k (k-1) alpha^2 / 2)``: with ``x = alpha^2`` and ``u = e^x`` the
    objective is ``x (u/n - 2 u^3/n^2 + u^2/n^2)``. Its first-order condition, divided by
    ``u / n``, is ``(1 + u/n - 2 u^2/n) + x (1 + 2 u/n - 6 u^2/n) = 0``. The left side is
    ``1 - 1/n > 0`` at ``x = 0`` and ``-x (2 + u/n) < 0`` where the bracket vanishes
    (``u = (1 + sqrt(1 + 8 n)) / 4``, the largest ``x`` at which the mean-field norm is
    real), so Brent's method on that bracket finds the root. Near ``n = 1`` and ``x = 0`` both
    the condition and the bracket are written without cancellation (in ``n - 1``,
    ``expm1(x)`` and ``log1p``), so the root is good to a few ulp (against 80-digit mpmath)
    for every ``n > 1``, from ``1 + eps`` to the largest float. Element-wise.
    """
    from scipy.optimize import brentq  # here, not at the top: importing scipy.optimize is slow

    m = v.lengths(n)
    out = np.empty(m.shape)
    for idx, length in np.ndenumerate(m):
        # log u with u = (1 + sqrt(1 + 8n)) / 4 = 1 + 2 (n - 1) / (sqrt(1 + 8n) + 3): log1p of the excess,
        # so the bound stays above 0 for n = 1 + eps, and sqrt(8n) taken apart so that 8n never overflows
        root = np.sqrt(8.0) * np.sqrt(length) * np.sqrt(1.0 + 0.125 / length)
        upper = np.log1p((length - 1.0) / (0.5 * (root + 3.0)))
        x = brentq(_frobenius_foc, 0.0, upper, args=(length,), xtol=1e-300, rtol=4.0 * np.finfo(float).eps)
        out[idx] = np.sqrt(x)
    return v.scalar_or_array(out)


def su_sweep() -> NDArray[np.float64]:
    """The lengths of Su's sweep, ``n = 40, 80, ..., 20000`` (500 values), over which the
    notes fit ``alpha* ~ c sqrt(log n)`` and ``alpha*_cos ~ c log n``. A fresh array each call."""
    return np.arange(40, 20001, 40, dtype=float)


def fit_through_origin(values: ArrayLike, basis: ArrayLike) -> tuple[NDArray[np.float64] | float, NDArray[np.float64]]:
    """Least-squares ``c`` in ``values ~ c basis`` (a line through the origin), along the
    first axis: ``c = sum(values basis) / sum(basis^2)``, and the relative misfit
    ``c basis / values - 1`` at every point. ``basis`` broadcasts against ``values`` (a
    column ``(n, 1)`` fits every column of an ``(n, k)`` table at once). ``values`` must be
    non-zero, and ``basis`` not all zero."""
    y = v.at_least_1d(v.finite(values, "values"), "values")
    b = v.finite(basis, "basis")
    try:
        y, b = np.broadcast_arrays(y, b)
    except ValueError as err:
        raise ValueError(f"basis of shape {np.shape(basis)} does not broadcast against values of shape {y.shape}") from err
    if np.any(y == 0):
        raise ValueError("values must be non-zero (the misfit is relative to them)")
    norm = np.sum(b * b, axis=0)
    if np.any(norm == 0):
        raise ValueError("basis must not be all zero")
    c = np.sum(y * b, axis=0) / norm
    return v.scalar_or_array(c), c * b / y - 1.0


# ---- cosine scores -------------------------------------------------------------


def _cosine_terms(alpha: NDArray, d: NDArray) -> tuple[NDArray, NDArray]:
    """``log R(alpha)`` with ``R = M(2 alpha) / M(alpha)^2`` and
    ``alpha d/dalpha log R``, for flat arrays, free of cancellation."""
    nu = 0.5 * d - 1.0
    two = 2.0 * alpha
    # log M(x) = gammaln(nu+1) + nu log(2/x) + log ive(nu, x) + x; the x terms cancel in log R exactly
    with np.errstate(invalid="ignore"):
        log_r = -gammaln(nu + 1.0) + nu * (np.log(alpha) - 2.0 * np.log(2.0)) + _log_ive(nu, two) - 2.0 * _log_ive(nu, alpha)
    # where both M(alpha) and M(2 alpha) come from the power series, use it directly (no cancellation)
    series_two, both = _log_hyp0f1(nu, two)
    if both.any():
        series_one, _ = _log_hyp0f1(nu[both], alpha[both])
        log_r[both] = series_two[both] - 2.0 * series_one
    r1, q1 = _ratio_and_complement(nu, alpha)
    r2, q2 = _ratio_and_complement(nu, two)
    # r(2a) - r(a): difference of small ratios where they are small, of small complements where not
    diff = np.where(r1 < 0.5, r2 - r1, q1 - q2)
    return log_r, 2.0 * alpha * diff


def _cosine_log_excess(alpha: ArrayLike, n: ArrayLike, d: ArrayLike) -> tuple[NDArray, NDArray]:
    """Validated, broadcast ``alpha`` and ``log(R(alpha) / n)`` for cosine scores."""
    a, m, d_ = np.broadcast_arrays(v.positive(alpha, "alpha"), v.lengths(n), _bessel_dims(d))
    log_r, _ = _cosine_terms(a.ravel().copy(), d_.ravel().copy())
    return a, (log_r - np.log(m.ravel())).reshape(a.shape)


def collision_cosine(alpha: ArrayLike, n: ArrayLike, d: ArrayLike) -> NDArray[np.float64] | float:
    """Mean-field ``sum_i p_i^2`` for cosine scores in ``R^d``:
    ``M(2 alpha) / (n M(alpha)^2)`` (broadcasting ``alpha``, ``n`` and ``d``)."""
    _, excess = _cosine_log_excess(alpha, n, d)
    with np.errstate(over="ignore"):
        return v.scalar_or_array(np.exp(excess))


def objective_cosine(alpha: ArrayLike, n: ArrayLike, d: ArrayLike) -> NDArray[np.float64] | float:
    """Mean-field gradient size for cosine scores,
    ``alpha (1 - M(2 alpha) / (n M(alpha)^2))``."""
    a, excess = _cosine_log_excess(alpha, n, d)
    with np.errstate(over="ignore"):
        return v.scalar_or_array(a * -np.expm1(excess))


def alpha_star_cosine(n: ArrayLike, d: ArrayLike, *, iterations: int = 60) -> NDArray[np.float64] | float:
    """The maximiser over ``alpha > 0`` of ``alpha (1 - M(2 alpha) / (n M(alpha)^2))``
    for cosine scores in ``R^d``, ``M`` the moment generating function of
    :mod:`attnscale.scores`. Broadcasts ``n`` (> 1) against ``d`` (>= 2).

    With ``R = M(2 alpha)/M(alpha)^2`` the first-order condition is
    ``R (1 + alpha (log R)') = n``, solved in logarithms,
    ``log R + log1p(alpha (log R)') = log n``, by bracketing (doubling from
    ``1.5 sqrt(d) alpha*_N(n)``, the large-``d`` limit) and then the Illinois variant of regula falsi in ``log alpha``
    (at most ``iterations`` steps, 60 by default; it usually stops after about
    ten, when the bracket is below 4e-16 relative). All Bessel quantities are in the log domain
    (:mod:`attnscale.special`), so ``d`` up to 65536 (larger ``d`` is refused) and ``alpha`` up to
    ``1e25`` are fine.

    Parameters
    ----------
    n : real or array of reals
        The number of keys, each ``> 1``.
    d : integer or array of integers
        The dimension of the queries and keys, ``2 <= d <= 65536``.
    iterations : int
        The most regula-falsi steps (at least 1).

    Returns
    -------
    float or ndarray
        ``alpha*_cos`` broadcast over ``n`` and ``d``.

    Raises
    ------
    ValueError
        A bad ``n``, ``d`` or ``iterations``, named at the start of the message.

    Examples
    --------
    >>> round(alpha_star_cosine(4096, 128), 1)
    29.7
    """
    m, d_ = v.lengths(n), _bessel_dims(d)
    iterations = v.integer_at_least(iterations, "iterations", 1)
    m, d_ = np.broadcast_arrays(m, d_)
    log_n, dd = np.log(m.ravel()), d_.ravel().copy()

    def h(a: NDArray, idx: NDArray) -> NDArray:
        return _cosine_first_order(a, dd[idx], log_n[idx])

    lo, hi = _cosine_bracket(h, log_n, dd)
    everything = np.arange(log_n.size)
    # the Illinois method (modified regula falsi) in log(alpha): superlinear, and it keeps the bracket
    x_lo, x_hi, _ = regula_falsi(lambda x, idx: h(np.exp(x), idx), np.log(lo), np.log(hi), h(lo, everything),
                                 h(hi, everything), xtol=4e-16, rtol=4e-16, iterations=iterations)
    return v.scalar_or_array(np.sqrt(np.exp(x_lo) * np.exp(x_hi)).reshape(m.shape))


def _cosine_first_order(alpha: NDArray, d: NDArray, log_n: NDArray) -> NDArray:
    """The first-order condition of :func:`alpha_star_cosine` in logarithms,
    ``log R + log1p(alpha (log R)') - log n``: negative below the optimum, positive above."""
    log_r, slope = _cosine_terms(alpha, d)
    return log_r + np.log1p(slope) - log_n


def _cosine_bracket(h: Callable[[NDArray, NDArray], NDArray], log_n: NDArray, d: NDArray) -> tuple[NDArray, NDArray]:
    """``lo, hi`` with ``h(lo) < 0 < h(hi)`` for every root: from ``1.5 sqrt(d) alpha*_N(n)``
    (the large-``d`` limit), ``hi`` doubles until ``h(hi) > 0`` (the last ``hi`` below becoming
    ``lo``), then ``lo`` halves until ``h(lo) < 0``."""
    everything = np.arange(log_n.size)
    hi = 1.5 * (np.sqrt(d) * alpha_star_normal(np.exp(log_n)))
    lo = hi.copy()
    for _ in range(400):  # grow hi until h(hi) > 0
        idx = everything[h(hi, everything) <= 0]
        if idx.size == 0:
            break
        lo[idx] = hi[idx]
        hi[idx] *= 2.0
    else:  # reached for n far beyond what d can resolve (e.g. n = 1e300 with d = 3)
        raise ValueError("n is too large for d: the optimum could not be bracketed")
    for _ in range(400):  # shrink lo until h(lo) < 0
        idx = everything[h(lo, everything) >= 0]
        if idx.size == 0:
            break
        hi[idx] = lo[idx]
        lo[idx] /= 2.0
    else:  # pragma: no cover
        raise ValueError("could not bracket the optimum: n too close to 1")
    return lo, hi
