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
- otherwise, for ``nu < 100`` (between the series and Hankel regions): Poisson's integral
  ``I_nu(x) = (x/2)^nu / (sqrt(pi) Gamma(nu + 1/2)) int_0^pi e^(x cos t) sin(t)^(2 nu) dt``.
  For an integer order (``nu = d/2 - 1`` with ``d`` even, as in every example of the book)
  its integrand is an analytic, even, ``2 pi``-periodic function, so the trapezoid rule
  converges geometrically; the number of panels is set so that the aliasing error, bounded
  through the Fourier coefficients ``e^-x I_m(x)`` of ``e^(x cos t)``, is below ``e^-40`` of
  the integral. All terms are positive. Other orders (odd ``d``, where ``|sin t|^(2 nu)``
  has a kink at ``t = 0``) use ``scipy.special.ive``, imported only then (importing
  ``scipy.special`` takes about 0.3 s).

Accuracy, relative, measured against ``mpmath`` at 50 digits (``tests/test_special.py``):
``log ive`` to a few ``1e-14`` of ``max(1, |log ive|)``.
The ratio ``I_{nu+1}/I_nu`` and its complement ``1 - I_{nu+1}/I_nu`` come from the series
(its mean index), from Hankel's terms and, for integer orders below 100, from Poisson's
integral (each a weighted mean of positive terms) without cancellation, to about ``1e-14``
(Poisson's: about ``1e-15``). In the Debye region, and for the other orders between the
series and Hankel regions, they are the ``exp`` and ``-expm1`` of the difference
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

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate as v
from ._elementary import STIRLING, gammaln

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
        out[direct] = _poisson(nu[direct], x[direct])[0]
    return out


def _poisson_panels(nu: float, x: float) -> int:
    """Trapezoid panels on ``[0, pi]`` for Poisson's integral at orders ``nu`` and ``nu + 1``.

    With ``2M`` points on the circle the error is ``2 pi sum_k c_(2Mk)``, ``c_m`` the Fourier
    coefficients of ``e^(x (cos t - 1)) sin(t)^(2 nu + 2)``: a trigonometric polynomial of
    degree ``2 nu + 2`` whose coefficients sum in absolute value to 1, times ``e^(x cos t)``,
    whose coefficients are ``I_m(x)``. So ``|c_m| <= e^-x I_(m - 2 nu - 2)(x)``, below
    ``exp(sqrt(m^2 + x^2) - x - m asinh(m/x))`` (Debye's leading exponent, an upper bound).
    Relative to the integral that must fall below ``e^-40``; the integral is at least
    ``sqrt(pi) Gamma(nu + 1/2) (2/x)^nu e^-x I_nu(x)``, and ``e^-x I_nu(x)`` at least
    ``e^(-nu^2 / (2x)) / sqrt(2 pi x)`` halved (``x >= 10 sqrt(nu + 1)`` here)."""
    log_integral = (0.5 * math.log(math.pi) + math.lgamma(nu + 0.5) + nu * math.log(2.0 / x)
                    - nu * nu / (2.0 * x) - 0.5 * math.log(2.0 * math.pi * x) - math.log(2.0))
    target = log_integral - 40.0 - math.log(2.0 * math.pi)
    m = max(1.0, math.sqrt(2.0 * x * max(1.0, -target)))
    while math.sqrt(m * m + x * x) - x - m * math.asinh(m / x) > target:
        m *= 1.25
    return int(math.ceil(0.5 * (m + 2.0 * nu + 2.0))) + 8


def _poisson(nu: NDArray, x: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """``log ive``, the ratio ``I_(nu+1)/I_nu`` and its complement by Poisson's integral
    (trapezoid rule, one element at a time); orders that are not integers go to
    ``scipy.special.ive``, and their ratio and complement are NaN (the caller's route)."""
    log_ive = np.empty_like(x)
    ratio = np.full_like(x, np.nan)
    complement = np.full_like(x, np.nan)
    whole = nu == np.round(nu)
    for i in np.flatnonzero(whole):
        n_, x_ = float(nu[i]), float(x[i])
        panels = _poisson_panels(n_, x_)
        j = np.arange(1, panels)  # the end points add nothing for nu > 0; for nu = 0, below
        t = j * (math.pi / panels)
        sin_t = np.sin(np.minimum(t, (panels - j) * (math.pi / panels)))  # sin(pi - t): exact near pi
        half = np.sin(0.5 * t)
        # log of the integrand less nu log nu - nu: at its peak both parts are O(1) apart
        if n_ > 0:
            log_f = n_ * (np.log(x_ * sin_t * sin_t / (2.0 * n_)) + 1.0) - 2.0 * x_ * half * half
            ends = np.empty(0)
        else:
            log_f = -2.0 * x_ * half * half
            ends = np.array([0.0, -2.0 * x_]) + math.log(0.5)  # t = 0 and t = pi, half weight
        top = float(max(log_f.max(), ends.max() if ends.size else -np.inf))
        terms = np.exp(log_f - top)
        total = terms.sum() + np.exp(ends - top).sum()
        log_ive[i] = (math.log(math.pi / panels) + top + math.log(total) - 0.5 * math.log(math.pi)
                      - _log_gamma_half_stirling(n_))
        # I_(nu+1)/I_nu: the weighted mean of x sin^2 t / (2 nu + 1) (the end points add 0)
        weight = x_ * sin_t * sin_t / (2.0 * n_ + 1.0)
        ratio[i] = (terms * weight).sum() / total
        # 1 - I_(nu+1)/I_nu = -J'(x)/J(x) for J(x) = int e^(-2x sin^2(t/2)) sin^(2 nu) t dt (from
        # I_nu' = I_(nu+1) + (nu/x) I_nu): the weighted mean of 2 sin^2(t/2), all terms positive
        far_end = 2.0 * float(np.exp(ends[1] - top)) if ends.size else 0.0  # t = pi, nu = 0 only
        complement[i] = ((terms * (2.0 * half * half)).sum() + far_end) / total
    if not whole.all():
        from scipy.special import ive  # here, not at the top: importing scipy.special is slow

        log_ive[~whole] = np.log(ive(nu[~whole], x[~whole]))
    return log_ive, ratio, complement


def _log_gamma_half_stirling(nu: float) -> float:
    """``log Gamma(nu + 1/2) - (nu log nu - nu)`` (``log Gamma(1/2)`` at ``nu = 0``), an O(1)
    number computed without the cancellation of its two large parts for ``nu >= 10``."""
    if nu == 0.0:
        return 0.5 * math.log(math.pi)
    if nu < 10.0:
        return math.lgamma(nu + 0.5) - (nu * math.log(nu) - nu)
    z = nu + 0.5
    # Stirling's series at z, with z - 1/2 = nu: nu log(1 + 1/(2 nu)) - 1/2 + log(2 pi)/2 + series
    series = sum(c * z ** (1 - 2 * k) for k, c in enumerate(STIRLING, start=1))
    return nu * math.log1p(0.5 / nu) - 0.5 + 0.5 * math.log(2.0 * math.pi) + series


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
    other = debye.copy()
    if direct.any():
        # Poisson's integral gives the ratio as a weighted mean and the complement without
        # the difference of two logs (NaN for orders it does not take, which go on below)
        _, r_d, q_d = _poisson(nu[direct], x[direct])
        r[direct], q[direct] = r_d, q_d
        other[direct] = np.isnan(r_d)
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
