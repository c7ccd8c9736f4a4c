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


def _regions(nu: NDArray, x: NDArray) -> tuple[NDArray, NDArray, NDArray, NDArray, NDArray]:
    """Masks of the series, Debye and Hankel regions, and of the rest (``nu < 100`` between
    them) split into integer orders (Poisson's integral) and the others (``scipy.special.ive``)."""
    with np.errstate(over="ignore"):  # x^2 overflows to inf above 1.3e154, outside the series region either way
        series = 0.25 * x * x <= 25.0 * (nu + 1.0)
    hankel = ~series & (x > np.maximum(2000.0, 50.0 * (nu + 1.0) ** 2))
    debye = ~series & ~hankel & (nu >= _DEBYE_MIN_ORDER)
    between = ~series & ~hankel & ~debye
    integer = nu == np.round(nu)
    return series, debye, hankel, between & integer, between & ~integer


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
    series, debye, hankel, poisson, direct = _regions(nu, x)
    if series.any():
        n_, x_ = nu[series], x[series]
        # log x - log 2, not log(x / 2), which is log 0 for the smallest subnormal x (and 0 * -inf at nu = 0)
        out[series] = n_ * (np.log(x_) - np.log(2.0)) - gammaln(n_ + 1.0) + _series(n_ + 1.0, 0.25 * x_ * x_)[0] - x_
    if debye.any():
        out[debye] = _debye_scaled(nu[debye], x[debye])
    if hankel.any():
        x_ = x[hankel]
        out[hankel] = -0.5 * (np.log(2.0 * np.pi) + np.log(x_)) + np.log(sum(_hankel_terms(nu[hankel], x_)))
    if poisson.any():
        out[poisson] = _poisson(nu[poisson], x[poisson])[0]
    if direct.any():
        from scipy.special import ive  # here, not at the top: importing scipy.special is slow

        out[direct] = np.log(ive(nu[direct], x[direct]))
    return out


def _poisson_panels(nu: NDArray, x: NDArray) -> NDArray:
    """Trapezoid panels on ``[0, pi]`` for Poisson's integral at orders ``nu`` and ``nu + 1``.

    With ``2M`` points on the circle the error is ``2 pi sum_k c_(2Mk)``, ``c_m`` the Fourier
    coefficients of ``e^(x (cos t - 1)) sin(t)^(2 nu + 2)``: a trigonometric polynomial of
    degree ``2 nu + 2`` whose coefficients sum in absolute value to 1, times ``e^(x cos t)``,
    whose coefficients are ``I_m(x)``. So ``|c_m| <= e^-x I_(m - 2 nu - 2)(x)``, below
    ``exp(sqrt(m^2 + x^2) - x - m asinh(m/x))`` (Debye's leading exponent, an upper bound).
    Relative to the integral that must fall below ``e^-40``; the integral is at least
    ``sqrt(pi) Gamma(nu + 1/2) (2/x)^nu e^-x I_nu(x)``, and ``e^-x I_nu(x)`` at least
    ``e^(-nu^2 / (2x)) / sqrt(2 pi x)`` halved (``x >= 10 sqrt(nu + 1)`` here). The bound
    holds for ``log ive`` and the ratio; the complement, a mean of size ``q``, keeps it
    relative to ``q`` only to ``e^-40 / q`` (``q`` is at least ``1 / (2x)``)."""
    log_integral = (0.5 * np.log(np.pi) + gammaln(nu + 0.5) + nu * np.log(2.0 / x)
                    - nu * nu / (2.0 * x) - 0.5 * np.log(2.0 * np.pi * x) - np.log(2.0))
    target = log_integral - 40.0 - np.log(2.0 * np.pi)
    m = np.maximum(1.0, np.sqrt(2.0 * x * np.maximum(1.0, -target)))
    while True:
        grow = np.sqrt(m * m + x * x) - x - m * np.arcsinh(m / x) > target
        if not grow.any():
            return np.ceil(0.5 * (m + 2.0 * nu + 2.0)).astype(np.int64) + 8
        m = np.where(grow, 1.25 * m, m)


def _log_integrand(nu: NDArray, x: NDArray, sin_t: NDArray, half: NDArray) -> NDArray:
    """Log of Poisson's integrand ``e^(x (cos t - 1)) (x sin^2 t / 2)^nu``, less ``nu log nu - nu``
    (so that its peak is O(1) for large ``x``); ``half`` is ``sin(t/2)``."""
    with np.errstate(divide="ignore", invalid="ignore"):  # log 0 and 0 * inf in the branch nu = 0 drops
        power = np.where(nu > 0, nu * (np.log(x * sin_t * sin_t / (2.0 * np.maximum(nu, 1.0))) + 1.0), 0.0)
    return power - 2.0 * x * half * half


def _poisson_reach(nu: NDArray, x: NDArray) -> NDArray:
    """The angle beyond which every term of Poisson's integrand is below ``e^-50`` of its largest.

    ``x (1 - cos t) >= x sin^2 t / 2`` bounds the log integrand (:func:`_log_integrand`) by
    ``nu (1 + log y - y)``, ``y = x sin^2 t / (2 nu)``, which falls as ``t`` passes the angle with
    ``y = 1`` (up to ``pi/2``); the value there bounds the largest term from below. On
    ``(pi/2, pi]`` the integrand is at most ``nu (log(x / (2 nu)) + 1) - x``; where that is not
    negligible the reach is ``pi``, otherwise at most ``pi/2``. For ``nu = 0`` the largest term is 1 (at ``t = 0``) and the
    reach is where ``x (1 - cos t) = 50``. With at most ``e^10`` terms dropped, the error is
    below ``e^-40`` of the sum."""
    reach = np.full_like(x, np.pi)
    zero = nu == 0
    if zero.any():
        r = 50.0 / x[zero]
        reach[zero] = np.where(r < 2.0, np.arccos(1.0 - np.minimum(r, 2.0)), np.pi)
    pos = ~zero
    if pos.any():
        n_, x_ = nu[pos], x[pos]
        s1 = np.sqrt(np.minimum(1.0, 2.0 * n_ / x_))
        t1 = np.arcsin(s1)
        low = _log_integrand(n_, x_, s1, np.sin(0.5 * t1))  # a lower bound on the largest term
        c = (50.0 - low) / n_  # 1 + log y - y = -c, y > 1: y = 1 + c + log y, a contraction
        y = 1.0 + c
        for _ in range(60):
            y = 1.0 + c + np.log(y)
        far = n_ * (np.log(x_ / (2.0 * n_)) + 1.0) - x_ >= low - 50.0
        ratio = 2.0 * n_ * y / x_
        first_half = np.where(ratio >= 1.0, 0.5 * np.pi, np.arcsin(np.sqrt(np.minimum(ratio, 1.0))))
        reach[pos] = np.where(far, np.pi, first_half)
    return reach


_POISSON_BLOCK = 1 << 20  # nodes per block of elements (bounds memory at ~8 MB per array)


def _poisson(nu: NDArray, x: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """``log ive``, the ratio ``I_(nu+1)/I_nu`` and its complement by Poisson's integral, for
    integer orders (trapezoid rule on the nodes within :func:`_poisson_reach`, elements in
    blocks)."""
    log_ive = np.empty_like(x)
    ratio = np.empty_like(x)
    complement = np.empty_like(x)
    panels = _poisson_panels(nu, x)
    # interior nodes j = 1 .. last (the end points add nothing for nu > 0; for nu = 0, below)
    last = np.minimum(panels - 1, np.floor(_poisson_reach(nu, x) * panels / np.pi).astype(np.int64) + 1)
    order = np.argsort(last, kind="stable")
    start = 0
    while start < order.size:
        stop = start + 1
        while stop < order.size and (stop - start + 1) * int(last[order[stop]]) <= _POISSON_BLOCK:
            stop += 1
        block = order[start:stop]
        start = stop
        n_, x_, m_ = nu[block, None], x[block, None], panels[block, None]
        j = np.arange(1, int(last[block].max()) + 1)[None, :]
        inside = j <= last[block, None]
        step = np.pi / m_
        sin_t = np.sin(np.minimum(j, m_ - j) * step)  # sin(pi - t) near pi: exact there
        half = np.sin(0.5 * j * step)
        log_f = np.where(inside, _log_integrand(n_, x_, sin_t, half), -np.inf)
        # nu = 0: the end points t = 0 (value 1) and t = pi (e^(-2x)), each with half weight
        ends = np.where(n_ == 0, np.log(0.5), -np.inf), np.where(n_ == 0, np.log(0.5) - 2.0 * x_, -np.inf)
        top = np.maximum(log_f.max(axis=1, keepdims=True), ends[0])
        terms = np.exp(log_f - top)
        near_end, far_end = np.exp(ends[0] - top)[:, 0], np.exp(ends[1] - top)[:, 0]
        total = terms.sum(axis=1) + near_end + far_end
        log_ive[block] = (np.log(step[:, 0]) + top[:, 0] + np.log(total) - 0.5 * np.log(np.pi)
                          - _log_gamma_half_stirling(n_[:, 0]))
        # I_(nu+1)/I_nu: the weighted mean of x sin^2 t / (2 nu + 1) (the end points add 0)
        ratio[block] = (terms * (x_ * sin_t * sin_t / (2.0 * n_ + 1.0))).sum(axis=1) / total
        # 1 - I_(nu+1)/I_nu = -J'(x)/J(x) for J(x) = int e^(-2x sin^2(t/2)) sin^(2 nu) t dt (from
        # I_nu' = I_(nu+1) + (nu/x) I_nu): the weighted mean of 2 sin^2(t/2), all terms positive
        complement[block] = ((terms * (2.0 * half * half)).sum(axis=1) + 2.0 * far_end) / total
    return log_ive, ratio, complement


def _log_gamma_half_stirling(nu: NDArray) -> NDArray:
    """``log Gamma(nu + 1/2) - (nu log nu - nu)`` (``log Gamma(1/2)`` at ``nu = 0``), an O(1)
    number computed without the cancellation of its two large parts for ``nu >= 10``."""
    out = np.full_like(nu, 0.5 * np.log(np.pi))
    small = (nu > 0) & (nu < 10.0)
    n_ = nu[small]
    out[small] = gammaln(n_ + 0.5) - (n_ * np.log(n_) - n_)
    large = nu >= 10.0
    n_ = nu[large]
    z = n_ + 0.5
    # Stirling's series at z, with z - 1/2 = nu: nu log(1 + 1/(2 nu)) - 1/2 + log(2 pi)/2 + series
    series = sum(c * z ** (1 - 2 * k) for k, c in enumerate(STIRLING, start=1))
    out[large] = n_ * np.log1p(0.5 / n_) - 0.5 + 0.5 * np.log(2.0 * np.pi) + series
    return out


def _ratio_and_complement(nu: NDArray, x: NDArray) -> tuple[NDArray, NDArray]:
    """``r = I_{nu+1}(x)/I_nu(x)`` and ``1 - r`` (accuracy per region: the module docstring)."""
    r = np.empty_like(x)
    q = np.empty_like(x)
    series, debye, hankel, poisson, direct = _regions(nu, x)
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
    if poisson.any():
        # Poisson's integral gives the ratio as a weighted mean and the complement without
        # the difference of two logs
        _, r[poisson], q[poisson] = _poisson(nu[poisson], x[poisson])
    other = debye | direct
    if other.any():
        n_, x_ = nu[other], x[other]
        gap = _log_ive(n_ + 1.0, x_) - _log_ive(n_, x_)
        r[other] = np.exp(gap)
        q[other] = -np.expm1(gap)
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
