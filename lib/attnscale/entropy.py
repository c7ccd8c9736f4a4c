"""Entropies of attention rows: Shannon, Renyi-2 and the effective number of keys.

All functions take probability vectors along the last axis (any batch shape).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate as v

__all__ = ["collision", "renyi2", "effective_number", "shannon"]


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
