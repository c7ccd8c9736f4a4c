"""How far the mean-field step is from the exact expectation, for normal scores.

Mean field replaces ``E sum_i p_i^2`` by ``exp(alpha^2) / n``
(:func:`attnscale.optimum.collision_normal`); :func:`mean_field_ratio` divides that by the
exact quadrature :func:`attnscale.exact.expected_sum_p2`, and :func:`mean_field_limit`
finds the smallest scale at which the two part by a given factor.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validate as v
from .._roots import bracketed_root
from ..optimum import collision_normal
from ._common import Out
from .bulk import expected_sum_p2

__all__ = ["mean_field_ratio", "mean_field_limit"]


def mean_field_ratio(n: ArrayLike, alpha: ArrayLike) -> Out:
    """``(exp(alpha^2) / n) / E sum_i p_i^2``: the mean-field collision probability over the
    exact one, for ``n`` standard-normal scores at scale ``alpha``. It is 1 at ``alpha = 0``
    and grows without bound once ``alpha`` passes ``sqrt(2 log n)``. Broadcasts like
    :func:`attnscale.exact.expected_sum_p2` (same argument ranges and errors)."""
    exact = np.asarray(expected_sum_p2(n, alpha))  # validates n and alpha (alpha = 0 allowed)
    a, m = (np.atleast_1d(x) for x in np.broadcast_arrays(v.finite(alpha, "alpha"), v.finite(n, "n")))
    mean_field = 1.0 / m  # collision_normal's exp(alpha^2) / n, which needs alpha > 0
    pos = a > 0
    mean_field[pos] = collision_normal(a[pos], m[pos])
    return v.scalar_or_array(mean_field.reshape(exact.shape) / exact)


def _limit_one(n: float, log_factor: float, step: float) -> float:
    lo = 0.0
    while True:  # walk up in blocks of 40 grid points until |log ratio| passes log_factor
        grid = lo + step * np.arange(1, 41)
        err = np.log(np.asarray(mean_field_ratio(n, grid)))
        past = np.flatnonzero(np.abs(err) > log_factor)
        if past.size:
            break
        lo = float(grid[-1])
    k = int(past[0])
    sign = float(np.sign(err[k]))
    left = grid[k - 1] if k else lo
    return bracketed_root(lambda a: sign * np.log(float(mean_field_ratio(n, a))) - log_factor, float(left), float(grid[k]),
                          xtol=1e-12, rtol=4 * np.finfo(float).eps)


def mean_field_limit(n: ArrayLike, factor: float = 1.1, *, step: float = 0.05) -> NDArray[np.float64] | float:
    """The smallest ``alpha`` at which mean field's ``E sum p^2`` is off by ``factor`` (either
    way) for ``n`` standard-normal scores: the first root of ``|log mean_field_ratio(n, alpha)|
    = log(factor)``, located on a grid of spacing ``step`` and refined by regula falsi to
    1e-12. ``factor = 1.1`` is chapter 7's 10% limit ``alpha_mf``. ``n`` is real in
    ``[2, 1e15]`` (element-wise); ``factor >= 1 + 1e-10``; ``step`` in ``(0, 0.1]``. The ratio grows
    without bound (its log is about ``alpha^2 - log n`` past the freezing point), so the
    walk ends; a crossing and re-crossing within one ``step`` would go unseen."""
    n_ = v.finite(n, "n")
    if (n_ < 2).any() or (n_ > 1e15).any():
        bad = n_[(n_ < 2) | (n_ > 1e15)][0]
        raise ValueError(f"n must lie in [2, 1e15], got {v._show(bad)}")
    factor_ = v.real_above(factor, "factor", 1.0)
    if np.log(factor_) < 1e-10:  # the quadrature's relative rounding (~1e-14) would decide the crossing
        raise ValueError(f"factor must be at least 1 + 1e-10 (closer to 1 the quadrature's rounding decides the crossing), got {factor_!r}")
    step_ = v.real_above(step, "step", 0.0)
    if step_ > 0.1:
        raise ValueError(f"step must be at most 0.1, got {step_!r}")
    log_factor = float(np.log(factor_))
    out = np.array([_limit_one(float(m), log_factor, step_) for m in n_.ravel()]).reshape(n_.shape)
    return v.scalar_or_array(out)
