"""Argument checks, quadrature nodes per scale and the per-scale driver shared by
:mod:`attnscale.exact.bulk` and :mod:`attnscale.exact.needle` (private)."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validate as v
from ..scores import D_MAX
from . import _grid

N_MAX = 1e15
ALPHA_MAX = 1e4
_NORMAL_FLOOR = 38.5  # |s| beyond which the normal density underflows

Out = NDArray[np.float64] | float


# ---- argument checks ------------------------------------------------------------------


def _bounded(value: ArrayLike, name: str, low: float, low_text: str, high: float, high_text: str) -> NDArray[np.float64]:
    """``value`` as a finite array with every entry in ``[low, high]``; the errors name ``name``."""
    arr = v.finite(value, name)
    for bad, text in ((arr < low, low_text), (arr > high, high_text)):
        if bad.any():
            raise ValueError(f"{name} must be {text}, got {v._show(arr[bad][0])}")
    return arr


def _lengths(n: ArrayLike) -> NDArray[np.float64]:
    return _bounded(n, "n", 2, ">= 2 (a row needs at least two keys)", N_MAX, f"<= {N_MAX:g}")


def _scales(alpha: ArrayLike) -> NDArray[np.float64]:
    return _bounded(alpha, "alpha", 0, ">= 0", ALPHA_MAX, f"<= {ALPHA_MAX:g} (the supported maximum)")


def _dimension(d: object, minimum: int = 2) -> int:
    d_ = v.integer_at_least(d, "d", minimum)
    if d_ > D_MAX:
        raise ValueError(f"d must be <= {D_MAX} (the supported maximum), got {d_}")
    return d_


def _law(d: object) -> int | None:
    return None if d is None else _dimension(d)


def _gaps(gap: ArrayLike, d: int | None) -> NDArray[np.float64]:
    arr = v.finite(gap, "gap")
    if d is not None:
        bad = np.abs(arr) > 1
        if bad.any():
            raise ValueError(f"gap must lie in [-1, 1] for cosine scores, got {v._show(arr[bad][0])}")
    else:
        bad = arr < -35
        if bad.any():
            raise ValueError(f"gap must be >= -35 for normal scores (the needle weight underflows below), got {v._show(arr[bad][0])}")
    return arr



# ---- the driver -----------------------------------------------------------------------


def _nodes(alpha: float, d: int | None, n_max: float, g_lo: float | None = None, g_hi: float | None = None) -> _grid.Nodes:
    """Quadrature nodes for ``u = alpha s``; needle gaps widen the range kept."""
    if d is None:
        top = bottom = _grid.normal_tail_cut(n_max)
        if g_lo is not None and g_lo < 0:
            bottom = max(bottom, min(_NORMAL_FLOOR, math.sqrt(g_lo * g_lo + 74.0)))
        if g_hi is not None:
            # a key just above a dominant needle still carries its (tiny) entropy: the
            # integrand at s = g + x falls like exp(-(g + alpha) x - x^2 / 2) relative to
            # s = g; keep x up to where that is e^-45 (at least 1)
            reach = math.sqrt((g_hi + alpha) ** 2 + 90.0) - (g_hi + alpha)
            top = max(top, min(_NORMAL_FLOOR, g_hi + max(1.0, reach), alpha + 9.0))
        return _grid.normal_nodes(alpha, bottom, top)
    nodes, _, _ = _grid.cosine_nodes(alpha, d, 50.0 + math.log(n_max))
    if g_lo is not None and g_hi is not None:
        # keep every node between the bulk and the needles, whatever its weight
        full, _, _ = _grid.cosine_nodes(alpha, d, 745.0)
        s = full.u / alpha
        keep = (full.W > 0) & (s >= min(g_lo, 0.0) - 0.1) & (s <= max(g_hi, 0.0) + 0.1)
        keep |= np.isin(full.u, nodes.u)
        nodes = _grid.Nodes(full.u[keep], full.W[keep])
    return nodes


def _by_alpha(alpha: NDArray, compute: Callable[[float, NDArray], NDArray], zero: Callable[[NDArray], NDArray]) -> NDArray:
    """Evaluate ``compute(alpha_value, mask)`` once per distinct ``alpha``."""
    out = np.empty(alpha.shape)
    for a in np.unique(alpha):
        sel = alpha == a
        out[sel] = zero(sel) if a == 0 else compute(float(a), sel)
    return out
