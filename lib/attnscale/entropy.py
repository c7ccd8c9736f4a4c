"""Entropies of attention rows: Shannon, Renyi-2 and the effective number of keys.

All functions take probability vectors along the last axis (any batch shape).
"""

from __future__ import annotations

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
    moment generating function (:mod:`attnscale.scores`)."""
    from .scores import dlog_mgf_cosine, log_mgf_cosine

    m = v.lengths(n)
    a = v.positive(alpha, "alpha")
    return v.scalar_or_array(np.log(m) + log_mgf_cosine(a, d) - a * dlog_mgf_cosine(a, d))
