"""Entropies of attention rows: Shannon, Renyi-2 and the effective number of keys.

All functions take probability vectors along the last axis (any batch shape).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate as v

__all__ = [
    "collision",
    "renyi2",
    "effective_number",
    "shannon",
    "softmax_entropy",
    "mean_field_entropy_normal",
    "mean_field_entropy_cosine",
    "alpha_for_mean_field_entropy",
]


def collision(p: ArrayLike) -> NDArray[np.float64]:
    """Collision probability ``sum_i p_i^2``: the chance that two independent
    draws from ``p`` pick the same key. Between ``1/n`` and 1."""
    arr = v.probabilities(p, "p")
    return np.sum(arr * arr, axis=-1)


def renyi2(p: ArrayLike) -> NDArray[np.float64]:
    """Renyi entropy of order 2, ``H_2 = -log sum_i p_i^2`` (nats)."""
    return -np.log(collision(p))


def effective_number(p: ArrayLike) -> NDArray[np.float64]:
    """Effective number of attended keys, ``1 / sum_i p_i^2 = exp(H_2)``."""
    return 1.0 / collision(p)


def shannon(p: ArrayLike) -> NDArray[np.float64]:
    """Shannon entropy ``H = -sum_i p_i log p_i`` (nats), with ``0 log 0 = 0``."""
    arr = v.probabilities(p, "p")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(arr > 0, arr * np.log(arr), 0.0)
    return -np.sum(terms, axis=-1)


def softmax_entropy(s: ArrayLike, alpha: ArrayLike = 1.0, axis: int = -1) -> NDArray[np.float64]:
    """Shannon entropy of ``p = softmax(alpha s)`` along ``axis`` straight from the
    scores: ``H = log Z - alpha E_p[s]``, with ``log Z`` a shifted log-sum-exp,
    so it is accurate for saturated rows too (no ``0 log 0`` terms)."""
    from .softmax import _logits, _shifted

    arr, a, ax = _logits(s, alpha, axis)
    z, _ = _shifted(arr, a, ax)  # alpha (s - max s) <= 0
    w = np.exp(z)
    total = np.sum(w, axis=ax, keepdims=True)
    with np.errstate(invalid="ignore"):
        mean_z = np.sum(np.where(w > 0, w * z, 0.0), axis=ax, keepdims=True) / total
    return np.squeeze(np.log(total) - mean_z, axis=ax)


def mean_field_entropy_normal(alpha: ArrayLike, n: ArrayLike) -> NDArray[np.float64] | float:
    """Mean-field entropy for ``n`` standard normal scores:
    ``log Z ~ log n + alpha^2/2`` and ``E_p[s] ~ alpha``, so ``H ~ log n - alpha^2/2``.
    Valid in the high-temperature phase; it reaches 0 at ``alpha = sqrt(2 log n)``."""
    a = v.positive(alpha, "alpha")
    m = v.lengths(n)
    return v.scalar_or_array(np.log(m) - 0.5 * a * a)


def mean_field_entropy_cosine(alpha: ArrayLike, n: ArrayLike, d: ArrayLike) -> NDArray[np.float64] | float:
    """Mean-field entropy for ``n`` cosine scores in ``R^d``:
    ``H ~ log n + log M(alpha) - alpha (log M)'(alpha)`` with ``M`` the cosine
    moment generating function (:mod:`attnscale.scores`).

    Both ``log M`` and ``alpha (log M)'`` grow like ``alpha``; outside the power-series
    region of :mod:`attnscale.special` the two are not subtracted but written as
    ``(log M - alpha) + alpha (1 - (log M)')``, the second factor being the Bessel
    ratio's complement, so that the result keeps its accuracy for huge ``alpha``
    (where ``H`` falls like ``log n - ((d - 1)/2) log alpha``).

    Accuracy: the error of the ratio (:mod:`attnscale.special`) times ``alpha``, in
    absolute terms. Measured against ``mpmath``: ``1e-12`` for ``d = 3`` at every ``alpha``;
    for large ``d`` more where the Debye route applies (``5e-9`` at ``d = 512``, ``2e-7``
    at ``d = 4096`` with ``alpha`` near ``2e8``, ``9e-12`` of ``H``), with a step of up to
    ``2e-10`` where the series region ends."""
    from .scores import _alpha_d, _log_hyp0f1, _log_mgf_minus_alpha
    from .special import _ratio_and_complement

    m = v.lengths(n)
    a_, d_, shape = _alpha_d(alpha, d)  # validates alpha (> 0) and d (>= 2)
    nu = 0.5 * d_ - 1.0
    ratio, complement = _ratio_and_complement(nu, a_)
    series_value, series = _log_hyp0f1(nu, a_)
    # series region (alpha^2/4 <= 25 d/2, so alpha (log M)' is at most a few hundred): directly
    tail = np.where(series, series_value, 0.0) - a_ * ratio
    rest = ~series
    tail[rest] = _log_mgf_minus_alpha(a_[rest], d_[rest]) + a_[rest] * complement[rest]
    return v.scalar_or_array(np.log(m) + tail.reshape(shape))


def alpha_for_mean_field_entropy(n: ArrayLike, n_train: float = 512, alpha_train: float = 1.0, d: int | None = None,
                                 floor: float | None = None) -> NDArray[np.float64] | float:
    """The scale at length ``n`` whose mean-field entropy equals its value at the
    training length ``n_train`` and scale ``alpha_train``: the book's entropy-invariant
    rule. Normal scores (``d=None``): ``sqrt(alpha_train^2 + 2 log(n / n_train))``, from
    ``H ~ log n - alpha^2/2``; cosine scores in ``R^d``: the root of
    :func:`mean_field_entropy_cosine` by Brent's method (to ``1e-10`` in ``alpha`` plus
    ``1e-15`` of it). The root is no better than the entropies allow: an error ``dH`` moves
    it by ``dH / |dH/dalpha|``, large where the entropy is flat in ``alpha``, at small
    ``alpha`` and large ``d`` (``|dH/dalpha| ~ alpha / d``) and at huge ``alpha``
    (``~ (d - 1) / (2 alpha)``). Measured against ``mpmath``: within ``1e-10`` or ``1e-12``
    of the root, whichever is larger, for ``d = 3`` and for ``alpha_train = 1`` at any
    ``n``; ``2e-8`` off for ``d = 4096`` with roots near ``1e-4``, and ``2e-10`` of the root
    near ``2e8``. At ``n = n_train`` the answer is ``alpha_train`` itself. A root beyond the
    largest float raises ``ValueError`` naming ``n``.

    The mean-field entropy falls from ``log n`` as ``alpha`` grows, so the training
    entropy is out of reach where ``log n`` is at or below it (for normal scores,
    ``n <= n_train e^(-alpha_train^2/2)``): no positive scale has it. Such lengths
    raise ``ValueError`` naming ``n``, unless ``floor`` (> 0) is given, which they then
    get instead (a nearly uniform row, the closest any scale comes)."""
    from scipy.optimize import brentq

    m = v.lengths(n)
    nt = v.real_above(n_train, "n_train", 1.0)
    a0 = v.real_above(alpha_train, "alpha_train")
    if floor is not None:
        floor = v.real_above(floor, "floor")
    if d is None:
        target = math.log(nt) - 0.5 * a0 * a0
    else:
        d = v.integer_at_least(d, "d", 3)
        target = float(mean_field_entropy_cosine(a0, nt, d))
    flat = np.atleast_1d(m).astype(float).ravel()
    # at the training length the training scale is the answer, also where a tiny alpha_train
    # leaves the target equal to log n_train in floating point
    same = flat == nt
    reach = (np.log(flat) > target) & ~same
    if not (reach | same).all() and floor is None:
        raise ValueError(f"n must exceed e^H = {math.exp(target):.6g} to reach the training entropy H = {target:.6g} nats "
                         f"(pass floor to get a fixed small scale there), got {v._show(flat[~(reach | same)][0])}")
    out = np.full(flat.shape, floor if floor is not None else 0.0)
    out[same] = a0
    if d is None:
        out[reach] = np.sqrt(2.0 * (np.log(flat[reach]) - target))
    else:
        for i in np.flatnonzero(reach):
            def gap(a: float, length: float = float(flat[i])) -> float:
                return float(mean_field_entropy_cosine(a, length, d)) - target

            hi = max(min(2.0 * a0, v.LARGEST_FLOAT), 1.0)
            while gap(hi) > 0:
                if hi == v.LARGEST_FLOAT:
                    raise ValueError(f"n = {v._show(flat[i])}: the scale that reaches the training entropy "
                                     f"H = {target:.6g} nats is beyond the largest float")
                hi = min(2.0 * hi, v.LARGEST_FLOAT)
            out[i] = brentq(gap, 1e-9, hi, xtol=1e-10, rtol=1e-15)
    return v.scalar_or_array(out, np.shape(m))
