"""Monte Carlo kernels for the exact (not mean-field) expected gradient.

Rows of ``n`` independent scores are pushed through the softmax at many
scales at once. Everything is computed from the shifted scores
``z = s - max(s) <= 0`` so no exponential overflows, and ``1 - sum p^2`` is
formed from the non-maximal terms only, so saturated rows keep their relative
accuracy.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import quad
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr

from . import _validate as v
from .softmax import gradient_l1

__all__ = ["collision_and_gradient", "row_optimum", "typical_row_optimum", "typical_optimum_normal", "TYPICAL_SEED", "TYPICAL_VALUES", "gap_density_at_zero", "rem_collision"]


def _shifted_rows(scores: ArrayLike) -> NDArray[np.float64]:
    s = v.finite(scores, "scores")
    if s.ndim != 2 or s.shape[1] < 2:
        raise ValueError(f"scores must be a 2-d array (rows, n) with n >= 2, got shape {s.shape}")
    return s - s.max(axis=1, keepdims=True)


def _terms(z: NDArray, alpha: NDArray, top: NDArray) -> tuple[NDArray, NDArray]:
    """``sum p^2`` and ``1 - sum p^2`` for rows ``z`` (max 0, at index ``top``) at per-row ``alpha``."""
    e = np.exp(alpha[:, None] * z)  # the row maximum gives exactly 1 ...
    np.put_along_axis(e, top, 0.0, axis=-1)  # ... and is left out: e now holds the other terms
    o1 = e.sum(axis=-1)
    o2 = np.einsum("ij,ij->i", e, e)
    total = 1.0 + o1
    # 1 - sum p^2 = ((1 + o1)^2 - (1 + o2)) / (1 + o1)^2 = (2 o1 + o1^2 - o2) / (1 + o1)^2
    rest = (2.0 * o1 + o1 * o1 - o2) / (total * total)
    return (1.0 + o2) / (total * total), rest


def collision_and_gradient(scores: ArrayLike, alphas: ArrayLike, chunk: int = 256) -> tuple[NDArray, NDArray]:
    """For every scale in ``alphas`` (1-d) and every row of ``scores`` (rows, n):
    ``sum_i p_i^2`` and ``alpha (1 - sum_i p_i^2)``, each of shape (len(alphas), rows).
    Rows are processed ``chunk`` at a time to bound memory."""
    z = _shifted_rows(scores)
    a = v.positive(alphas, "alphas")
    if a.ndim != 1:
        raise ValueError(f"alphas must be 1-d, got shape {a.shape}")
    chunk = v.integer_at_least(chunk, "chunk", 1)
    coll = np.empty((a.size, z.shape[0]))
    grad = np.empty_like(coll)
    for start in range(0, z.shape[0], chunk):
        block = z[start : start + chunk]
        top = np.argmax(block, axis=-1)[:, None]
        for k, alpha in enumerate(a):
            c, rest = _terms(block, np.full(block.shape[0], alpha), top)
            coll[k, start : start + block.shape[0]] = c
            grad[k, start : start + block.shape[0]] = alpha * rest
    return coll, grad


def row_optimum(scores: ArrayLike, lo: float = 0.05, hi: float = 1e4, iterations: int = 80) -> NDArray[np.float64]:
    """Per row, the scale maximising ``alpha (1 - sum p^2)``, by golden-section
    search over ``log alpha`` in ``[lo, hi]`` (vectorised over rows).

    The per-row objective rises like ``alpha (1 - 1/n)``, peaks, and decays like
    ``2 alpha exp(-alpha Delta)`` with ``Delta`` the gap between the two largest
    scores, so it is unimodal in practice. The bracket closes to
    ``(hi/lo)^(0.618^iterations)`` in ratio (adjacent floats at the defaults), but the
    objective is flat at its maximum, so rounding places the maximiser only to about
    ``3e-8`` relative (measured at most ``2.65e-8`` against the two-key closed form
    ``2 u tanh u = 1``, ``tests/test_montecarlo.py``).
    """
    z = _shifted_rows(scores)
    lo, hi = float(v.positive(v.real_number(lo, "lo"), "lo")), float(v.positive(v.real_number(hi, "hi"), "hi"))
    if not (0 < lo < hi):
        raise ValueError(f"need 0 < lo < hi, got lo={lo!r}, hi={hi!r}")
    iterations = v.integer_at_least(iterations, "iterations", 1)
    g = (np.sqrt(5.0) - 1.0) / 2.0
    top = np.argmax(z, axis=-1)[:, None]
    a = np.full(z.shape[0], np.log(lo))
    b = np.full(z.shape[0], np.log(hi))

    def f(x: NDArray) -> NDArray:
        return np.exp(x) * _terms(z, np.exp(x), top)[1]

    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iterations):
        left = fc >= fd  # the maximum lies in [a, d]
        a, b = np.where(left, a, c), np.where(left, d, b)
        c_new = np.where(left, b - g * (b - a), d)
        d_new = np.where(left, c, a + g * (b - a))
        f_fresh = f(np.where(left, c_new, d_new))  # one new evaluation per row
        fc, fd = np.where(left, f_fresh, fd), np.where(left, fc, f_fresh)
        c, d = c_new, d_new
    return np.exp(0.5 * (a + b))


def _typical_rows(scores: ArrayLike) -> NDArray[np.float64]:
    """Validated rows (rows, n >= 2), shifted so that each row's maximum is 0."""
    rows = np.asarray(v.finite(scores, "scores"), dtype=float)
    if rows.ndim != 2 or rows.shape[1] < 2:
        raise ValueError(f"scores must be a 2-d array of rows with at least two keys, got shape {rows.shape}")
    return rows - np.max(rows, axis=1, keepdims=True)


# values (rows times keys) per block in _row_logs: 2 MB arrays, which stay in cache
_CHUNK_VALUES = 2**18


def _row_logs(shifted: NDArray, measure: Callable[[NDArray, float], NDArray]) -> Callable[[float], NDArray]:
    """``log measure(softmax(alpha s), alpha)`` per row as a function of ``log alpha``, for rows already
    shifted to a maximum of 0, remembering every scale it has been asked for.

    The probabilities are the floats :func:`attnscale.softmax.softmax` returns (the same
    ``exp(alpha (s - max s)) / sum``, with the shift and the checks of the scores done once per
    sample instead of once per scale). They are formed ``_CHUNK_VALUES`` values at a time:
    every step is row by row, so the result is the same float for float, and blocks that stay in
    the CPU's cache make a large sample two to three times faster than one pass over it."""
    seen: dict[float, NDArray] = {}
    step = max(1, _CHUNK_VALUES // shifted.shape[1])

    def logs(log_alpha: float) -> NDArray:
        if log_alpha not in seen:
            a = float(np.exp(log_alpha))
            out = np.empty(shifted.shape[0])
            for start in range(0, shifted.shape[0], step):
                e = np.exp(a * shifted[start : start + step])
                p = e / np.sum(e, axis=-1, keepdims=True)
                values = np.asarray(measure(p, a), dtype=float)
                if values.shape != (p.shape[0],) or not np.all(values > 0):
                    raise ValueError(f"measure must return one positive value per row; got shape {values.shape} at alpha = {a:.4g}")
                out[start : start + step] = np.log(values)
            seen[log_alpha] = out
        return seen[log_alpha]

    return logs


def _search(logs: Callable[[float], NDArray], lo: float, hi: float) -> float:
    """The ``log alpha`` in ``[log lo, log hi]`` that maximises the mean over rows of ``logs``."""
    found = minimize_scalar(lambda x: -float(np.mean(logs(x))), bounds=(np.log(lo), np.log(hi)), method="bounded", options={"xatol": 1e-4})
    return float(found.x)


def _bounds(lo: float, hi: float) -> tuple[float, float]:
    lo, hi = float(v.positive(v.real_number(lo, "lo"), "lo")), float(v.positive(v.real_number(hi, "hi"), "hi"))
    if not lo < hi:
        raise ValueError(f"need lo < hi, got lo={lo!r}, hi={hi!r}")
    return lo, hi


def typical_row_optimum(
    scores: ArrayLike,
    measure: Callable[[NDArray, float], NDArray] = gradient_l1,
    lo: float = 0.3,
    hi: float = 60.0,
) -> float:
    """The book's *typical row* optimum: the scale that maximises the geometric mean
    over rows of a positive row statistic, ``exp(mean_rows log measure(p, alpha))``
    with ``p = softmax(alpha s)`` (default: ``alpha (1 - sum p^2)``).

    The geometric mean is the book's one summary of a positive, multiplicative row
    quantity (``notation.md``): the arithmetic mean is carried by rare near-tied rows,
    the median ignores how badly the other rows saturate. The search is a bounded
    scalar minimisation over ``log alpha`` in ``[lo, hi]`` to ``1e-4`` in ``log alpha``.
    ``measure(p, alpha)`` takes the rows' probabilities and the scale and returns one
    positive value per row (for instance :func:`attnscale.softmax.jacobian_frobenius`).
    """
    shifted = _typical_rows(scores)
    if not callable(measure):
        raise TypeError(f"measure must be a function of (p, alpha), got {type(measure).__name__}")
    lo, hi = _bounds(lo, hi)
    return float(np.exp(_search(_row_logs(shifted, measure), lo, hi)))


#: the seed of the book's one sample of normal rows behind :func:`typical_optimum_normal`
TYPICAL_SEED = 20261127
#: how many score values (rows times keys) :func:`typical_optimum_normal` draws per batch
TYPICAL_VALUES = 500_000
# the step in log alpha of the central differences behind the standard error of
# typical_optimum_normal (steps of 3e-3 and 3e-2 give the same standard error within 3e-4 relative)
_SANDWICH_STEP = 1e-2

_sample_cache: dict[tuple[int, int, int, int], NDArray[np.float64]] = {}


def _normal_sample(count: int, parts: int, seed: int) -> NDArray[np.float64]:
    """The shifted rows of :func:`typical_optimum_normal`'s sample, drawn once per process for the
    last ``(n, batches, seed, TYPICAL_VALUES)`` asked for (a chapter asks for one ``n`` with
    several measures in a row). Read-only, so that no caller can change the cached sample."""
    key = (count, parts, seed, TYPICAL_VALUES)
    if key not in _sample_cache:
        _sample_cache.clear()  # one sample at a time: up to 32 MB at the default size
        rng = np.random.default_rng(seed)
        rows = max(50, TYPICAL_VALUES // count)
        shifted = _typical_rows(np.concatenate([rng.standard_normal((rows, count)) for _ in range(parts)]))
        shifted.flags.writeable = False
        _sample_cache[key] = shifted
    return _sample_cache[key]


def _sandwich_se(logs: Callable[[float], NDArray], log_alpha: float, step: float = _SANDWICH_STEP) -> float:
    """The standard error of ``log alpha*``, the maximiser of the mean over ``N`` rows of the
    per-row functions ``logs(log alpha)`` (one value per row), by the sandwich (delta-method)
    formula of an M-estimator: ``log alpha*`` solves ``mean_i f_i'(x) = 0``, so

    ``SE = sd_i(f_i'(x*)) / (sqrt(N) |mean_i f_i''(x*)|)``,

    with both derivatives taken by central differences of step ``step`` in ``log alpha``
    (per row for the slope, whose spread over rows is the middle of the sandwich; over the
    mean for the curvature). Rows must be independent and identically distributed."""
    low, mid, high = logs(log_alpha - step), logs(log_alpha), logs(log_alpha + step)
    slope = (high - low) / (2.0 * step)
    curvature = float(np.mean((high - mid) + (low - mid))) / (step * step)
    if not curvature < 0:
        raise ValueError(f"the mean over rows is not curved downward at log alpha = {log_alpha:.4g} (curvature {curvature:.3g}): not a maximum")
    return float(np.std(slope, ddof=1) / np.sqrt(slope.size) / -curvature)


def typical_optimum_normal(
    n: int,
    measure: Callable[[NDArray, float], NDArray] = gradient_l1,
    batches: int = 8,
    seed: int = TYPICAL_SEED,
) -> tuple[float, float]:
    """The book's one value of the typical-row optimum (:func:`typical_row_optimum`) for rows
    of ``n`` independent standard normal scores, and its standard error.

    Every chapter that quotes the typical-row optimum of normal scores calls this function,
    so they quote one number. It draws ``batches`` batches of ``max(50, TYPICAL_VALUES // n)``
    rows from ``np.random.default_rng(seed)`` and returns the optimum of all the rows together
    (exactly :func:`typical_row_optimum` of them) with its standard error by the sandwich
    (delta-method) formula of an M-estimator (``_sandwich_se``): the spread over rows of
    each row's slope of ``log measure`` in ``log alpha`` at the optimum, over ``sqrt(rows)``
    times the mean curvature there, times ``alpha*``. It agrees with the spread of the
    optimum over independent seeds (99 seeds at ``n = 1024``: 0.046 against 0.045) and with
    the spread of the batches' own optima, the standard error returned before, which has only
    ``batches - 1`` degrees of freedom (``tests/test_montecarlo.py``); it costs two
    evaluations on the sample instead of a search per batch. ``batches`` now sets only the
    size of the sample. ``n`` is an integer from 2 to 10^5; ``batches`` at least 2.

    :data:`TYPICAL_VALUES` sets cost against precision. At 500,000 values per batch (four
    million in all, searched once) a call takes one to two seconds of one core for the
    closed-form measures (``make bench``), and for ``gradient_l1`` the standard error is about
    0.3% of the value at ``n = 64`` (0.009), 0.8% at ``n = 512`` (0.03) and 2.3% at
    ``n = 4096`` (0.1).
    It grows with ``n`` (the sample holds ``batches * TYPICAL_VALUES // n`` rows) and falls
    like ``1 / sqrt(TYPICAL_VALUES)``. A chapter quotes the value with its standard error and
    compares it only with differences several standard errors wide. The sample of the last
    ``n`` asked for is kept, so a chapter that asks for several measures at one ``n`` draws it
    once.
    """
    count = v.integer_at_least(n, "n", 2)
    if count > 100_000:
        raise ValueError(f"n must be at most 100000 (the sample holds whole rows), got {count}")
    parts = v.integer_at_least(batches, "batches", 2)
    chosen = v.integer_at_least(seed, "seed", 0)
    if not callable(measure):
        raise TypeError(f"measure must be a function of (p, alpha), got {type(measure).__name__}")
    logs = _row_logs(_normal_sample(count, parts, chosen), measure)
    best = _search(logs, 0.3, 60.0)
    value = float(np.exp(best))
    return value, value * _sandwich_se(logs, best)


def gap_density_at_zero(n: int) -> float:
    """Density at 0 of the gap between the two largest of ``n`` independent
    standard normals: ``n (n-1) int phi(x)^2 Phi(x)^(n-2) dx``. It is the limit of
    ``E[alpha (1 - sum p^2)]`` as ``alpha -> infinity`` (near-ties).

    QUADPACK is asked for ``1e-11`` relative, which the result meets against ``mpmath``
    for ``n`` from 2 to the largest float (``tests/test_montecarlo.py``,
    ``tests/test_montecarlo.py``)."""
    count = v.integer_at_least(n, "n", 2)
    if count > v.LARGEST_FLOAT:  # a float from here: n may exceed the int64 range, not the float range
        raise ValueError(f"n must be at most the largest float, about 1.8e308, got an integer of {len(str(count))} digits")
    m = float(count)
    log_front = np.log(m) + np.log(m - 1.0) - np.log(2 * np.pi)
    log_rest = np.log(m - 2.0) if m > 2 else -np.inf

    def integrand(x: float) -> float:
        if x <= 5.0:
            with np.errstate(over="ignore"):  # (m - 2) log Phi(x) may pass -1e308 far left: Phi^(m-2) is 0 there
                log_power = (m - 2) * log_ndtr(x)
        else:
            # log Phi(x) = log1p(-q), q = Phi(-x), is -0.0 in floats from x = 37.5, where n near 1e308
            # still needs it: -(m - 2) log1p(-q) = exp(log(m - 2) + log q + log1p(q/2 + q^2/3)),
            # the series to the q^3 term, below 1e-20 relative for q < 3e-7 (x > 5)
            log_q = log_ndtr(-x)
            q = np.exp(log_q)
            log_power = -np.exp(log_rest + log_q + np.log1p(q / 2 + q * q / 3))
        return np.exp(log_front - x * x + log_power)

    top = np.sqrt(2 * np.log(m))
    # the mass sits near the largest score, about sqrt(2 log n): the range reaches 10 beyond it
    value, _ = quad(integrand, -10, max(12.0, top + 10.0), points=[top - 1, top, top + 1], epsabs=0, epsrel=1e-11, limit=500)
    return float(value)


def rem_collision(alpha: ArrayLike, n: ArrayLike) -> NDArray[np.float64] | float:
    """Random-energy-model prediction for ``E[sum p^2]`` as ``n -> infinity``:
    0 above the freezing temperature (``alpha < alpha_c = sqrt(2 log n)``) and
    ``1 - alpha_c / alpha`` below it (Poisson-Dirichlet weights with
    ``m = alpha_c / alpha``)."""
    a = v.positive(alpha, "alpha")
    m = v.lengths(n)
    return v.scalar_or_array(np.clip(1.0 - np.sqrt(2.0 * np.log(m)) / a, 0.0, None))
