"""Modified Bessel functions in the log domain, for the cosine-score chapter.

``I_nu(x)`` is needed for orders up to ``nu = 2047`` (``d = 4096``) and
arguments from ``1e-300`` to ``1e25``: ``I_nu`` itself overflows, and the
scaled ``scipy.special.ive`` underflows to zero once ``nu`` is large and ``x`` is
not (``ive(2047, 2000)`` is below ``1e-300``) and returns NaN for huge ``x``.
Everything here works with ``log ive = log I_nu(x) - x`` in four regions
(their accuracy follows the list):

- small argument, ``x^2/4 <= 25 (nu + 1)``: the power series
  ``I_nu(x) = (x/2)^nu / Gamma(nu+1) * 0F1(; nu+1; x^2/4)``, summed in the log
  domain (120 terms, all positive);
- large order, ``nu >= 100``, below the Hankel region: Debye's uniform asymptotic expansion in
  ``z = x/nu`` with the terms ``u_1`` to ``u_4`` (Abramowitz and Stegun 9.7.7);
- very large argument, ``x > max(2000, 50 (nu+1)^2)``: Hankel's expansion
  (A&S 9.7.1), 10 terms;
- otherwise, for ``nu < 100``: ``scipy.special.ive``.

Accuracy, relative, measured against ``mpmath`` at 50 digits (``tests/test_special.py``):
``log ive`` to a few ``1e-14`` of ``max(1, |log ive|)``.
The ratio ``I_{nu+1}/I_nu`` and its complement ``1 - I_{nu+1}/I_nu`` come from the series
(its mean index) and from Hankel's terms without cancellation, to about ``1e-14``. In the
Debye and ``ive`` regions between them they are the ``exp`` and ``-expm1`` of the difference
of two ``log ive`` values, so they inherit those values' absolute error: the ratio is good
to about ``1e-12`` (measured up to ``3.2e-12``), and the complement, which is about
``(2 nu + 1) / (2x)`` for large ``x``, loses relative accuracy as it shrinks: its relative
error is about ``1e-12`` or ``1e-15 x / (nu + 1)``, whichever is larger (within a factor of
three where measured), so up to ``7e-12`` at ``nu = 100`` and ``1.1e-10`` at
``nu = 2047`` just below the Hankel region. Orders above 2047 are not needed by the
book: there the Debye route's complement loses accuracy roughly in proportion to ``nu``
(``4e-12`` relative measured at ``nu = 32767``, ``x = 4e4``) and at astronomical orders
(``1e150``) it is meaningless, so the public functions built on this module refuse
``d > 65536`` (``nu > 32767``, ``attnscale.scores.D_MAX``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammaln, ive

from . import _validate as v

__all__ = ["log_besseli", "log_besseli_scaled", "bessel_ratio", "bessel_ratio_complement"]

_SERIES_TERMS = 120
_DEBYE_MIN_ORDER = 100.0
_HANKEL_TERMS = 10

# Debye polynomials u_k(t) (Abramowitz and Stegun 9.3.9, 9.3.10), coefficients by power of t.
_U = [
    {1: 3 / 24, 3: -5 / 24},
    {2: 81 / 1152, 4: -462 / 1152, 6: 385 / 1152},
    {3: 30375 / 414720, 5: -369603 / 414720, 7: 765765 / 414720, 9: -425425 / 414720},
    {4: 4465125 / 39813120, 6: -94121676 / 39813120, 8: 349922430 / 39813120,
     10: -446185740 / 39813120, 12: 185910725 / 39813120},
]


def _series(b: NDArray, y: NDArray) -> tuple[NDArray, NDArray]:
    """``log 0F1(; b; y)`` and the mean index ``E[k]`` of its terms
    ``y^k / ((b)_k k!)``, valid for ``y <= 25 b``."""
    k = np.arange(_SERIES_TERMS, dtype=float)
    j = k[1:]
    with np.errstate(divide="ignore"):
        log_y = np.log(y)[..., None]
        # log of t_j / t_{j-1} = y / ((b + j - 1) j), summed: no large gamma values to cancel
        steps = log_y - np.log(b[..., None] + j - 1.0) - np.log(j)
    log_terms = np.concatenate([np.zeros(steps.shape[:-1] + (1,)), np.cumsum(steps, axis=-1)], axis=-1)
    top = np.max(log_terms, axis=-1, keepdims=True)
    w = np.exp(log_terms - top)
    total = np.sum(w, axis=-1)
    rest = np.sum(w[..., 1:], axis=-1)
    head = np.squeeze(top, -1)
    # where the k = 0 term dominates, log(1 + rest) via log1p keeps tiny values accurate
    log_f = np.where(head == 0.0, np.log1p(rest), head + np.log(total))
    return log_f, np.sum(w * k, axis=-1) / total


def _debye_scaled(nu: NDArray, x: NDArray) -> NDArray:
    """``log I_nu(x) - x`` from Debye's expansion; ``nu (eta - z)`` is formed
    without subtracting large numbers."""
    z = x / nu
    root = np.sqrt(1.0 + z * z)
    t = 1.0 / root
    gap = 1.0 / (root + z)  # root - z
    eta_minus_z = gap - np.log1p((1.0 + gap) / z)  # eta - z = (root - z) + log(z / (1 + root))
    series = np.ones_like(z)
    for k, poly in enumerate(_U, start=1):
        series = series + sum(c * t**p for p, c in poly.items()) / nu**k
    return nu * eta_minus_z - 0.5 * np.log(2.0 * np.pi * nu) - 0.5 * np.log(root) + np.log(series)


def _hankel_terms(nu: NDArray, x: NDArray) -> list[NDArray]:
    mu = 4.0 * nu * nu
    terms = [np.ones_like(x)]
    with np.errstate(over="ignore"):  # 8 k x overflows for x near the largest float: the term is then 0
        for k in range(1, _HANKEL_TERMS + 1):
            terms.append(-terms[-1] * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x))
    return terms


def _regions(nu: NDArray, x: NDArray) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    with np.errstate(over="ignore"):  # x^2 overflows to inf above 1.3e154, outside the series region either way
        series = 0.25 * x * x <= 25.0 * (nu + 1.0)
    hankel = ~series & (x > np.maximum(2000.0, 50.0 * (nu + 1.0) ** 2))
    debye = ~series & ~hankel & (nu >= _DEBYE_MIN_ORDER)
    return series, debye, hankel, ~series & ~hankel & ~debye


def _log_hyp0f1(nu: NDArray, x: NDArray) -> tuple[NDArray, NDArray]:
    """``log 0F1(; nu+1; x^2/4)`` where the series applies (mask returned, NaN elsewhere)."""
    series = _regions(nu, x)[0]
    out = np.full_like(x, np.nan)
    if series.any():
        out[series] = _series(nu[series] + 1.0, 0.25 * x[series] ** 2)[0]
    return out, series


def _log_ive(nu: NDArray, x: NDArray) -> NDArray:
    """``log I_nu(x) - x`` for flat arrays of equal shape (no validation)."""
    out = np.empty_like(x)
    series, debye, hankel, direct = _regions(nu, x)
    if series.any():
        n_, x_ = nu[series], x[series]
        # log x - log 2, not log(x / 2), which is log 0 for the smallest subnormal x (and 0 * -inf at nu = 0)
        out[series] = n_ * (np.log(x_) - np.log(2.0)) - gammaln(n_ + 1.0) + _series(n_ + 1.0, 0.25 * x_ * x_)[0] - x_
    if debye.any():
        out[debye] = _debye_scaled(nu[debye], x[debye])
    if hankel.any():
        x_ = x[hankel]
        out[hankel] = -0.5 * (np.log(2.0 * np.pi) + np.log(x_)) + np.log(sum(_hankel_terms(nu[hankel], x_)))
    if direct.any():
        out[direct] = np.log(ive(nu[direct], x[direct]))
    return out


def _ratio_and_complement(nu: NDArray, x: NDArray) -> tuple[NDArray, NDArray]:
    """``r = I_{nu+1}(x)/I_nu(x)`` and ``1 - r`` (accuracy per region: the module docstring)."""
    r = np.empty_like(x)
    q = np.empty_like(x)
    series, debye, hankel, direct = _regions(nu, x)
    if series.any():
        _, mean_k = _series(nu[series] + 1.0, 0.25 * x[series] ** 2)
        r[series] = 2.0 * mean_k / x[series]  # d/dx log 0F1(; nu+1; x^2/4)
        # for x < 1e-9 the series is its leading term, r = x / (2 (nu + 1)), to relative
        # x^2 / (4 (nu + 1) (nu + 2)) < 1e-18; this also keeps r exact where x^2/4 underflows
        tiny = series & (x < 1e-9)
        r[tiny] = x[tiny] / (2.0 * (nu[tiny] + 1.0))
        q[series] = 1.0 - r[series]  # r <= 10 / sqrt(nu + 1) < 1 here, no cancellation to speak of
    if hankel.any():
        n_, x_ = nu[hankel], x[hankel]
        lower, upper = _hankel_terms(n_, x_), _hankel_terms(n_ + 1.0, x_)
        total = sum(lower)
        # 1 - r = (sum_k t_k(nu) - t_k(nu+1)) / sum_k t_k(nu); the k = 1 difference, the largest,
        # is (2 nu + 1) / (2x) exactly, written so (its two terms are about nu^2 / (2x) each)
        q[hankel] = ((n_ + 0.5) / x_ + sum(a - b for a, b in zip(lower[2:], upper[2:]))) / total
        r[hankel] = sum(upper) / total
    other = debye | direct
    if other.any():
        n_, x_ = nu[other], x[other]
        r[other] = np.exp(_log_ive(n_ + 1.0, x_) - _log_ive(n_, x_))
        q[other] = -np.expm1(_log_ive(n_ + 1.0, x_) - _log_ive(n_, x_))
    return r, q


def _orders_and_args(nu: ArrayLike, x: ArrayLike) -> tuple[NDArray, NDArray, tuple[int, ...]]:
    n_ = v.finite(nu, "nu")
    if (n_ < 0).any():
        raise ValueError(f"nu must be >= 0, got {v._show(n_[n_ < 0][0])}")
    x_ = v.positive(x, "x")
    n_, x_ = np.broadcast_arrays(n_.astype(float), x_.astype(float))
    return n_.ravel().copy(), x_.ravel().copy(), n_.shape



def log_besseli_scaled(nu: ArrayLike, x: ArrayLike) -> NDArray[np.float64] | float:
    """``log I_nu(x) - x`` (the log of ``scipy.special.ive``), for ``nu >= 0``, ``x > 0``."""
    n_, x_, shape = _orders_and_args(nu, x)
    return v.scalar_or_array(_log_ive(n_, x_), shape)


def log_besseli(nu: ArrayLike, x: ArrayLike) -> NDArray[np.float64] | float:
    """``log I_nu(x)`` for orders ``nu >= 0`` and arguments ``x > 0`` (broadcasting)."""
    n_, x_, shape = _orders_and_args(nu, x)
    return v.scalar_or_array(_log_ive(n_, x_) + x_, shape)


def bessel_ratio(nu: ArrayLike, x: ArrayLike) -> NDArray[np.float64] | float:
    """``I_{nu+1}(x) / I_nu(x)``, which is ``d/dx log(x^-nu I_nu(x))``; in ``(0, 1)``."""
    n_, x_, shape = _orders_and_args(nu, x)
    return v.scalar_or_array(_ratio_and_complement(n_, x_)[0], shape)


def bessel_ratio_complement(nu: ArrayLike, x: ArrayLike) -> NDArray[np.float64] | float:
    """``1 - I_{nu+1}(x) / I_nu(x)``, not computed as ``1 -`` the ratio; its accuracy where the
    ratio is close to 1 depends on the region (the module docstring)."""
    n_, x_, shape = _orders_and_args(nu, x)
    return v.scalar_or_array(_ratio_and_complement(n_, x_)[1], shape)
