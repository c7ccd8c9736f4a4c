"""Exact expectations for one planted key (the "needle") among ``n - 1`` i.i.d. scores
(see :mod:`attnscale.exact`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._elementary import expit
from ..scores import log_mgf_cosine
from .. import _validate as v
from . import _sums
from ._common import Out, _by_alpha, _gaps, _law, _lengths, _nodes, _scales

__all__ = ["needle_weight", "needle_sum_p2", "needle_entropy", "needle_weight_mean_field"]


def _needle(kind: str, n: ArrayLike, alpha: ArrayLike, gap: ArrayLike, d: object) -> Out:
    law = _law(d)
    n_, a_, g_ = np.broadcast_arrays(_lengths(n), _scales(alpha), _gaps(gap, law))
    shape = n_.shape
    n_, a_, g_ = (x.ravel().astype(float) for x in (n_, a_, g_))
    need = {"weight": set(), "sum_p2": {"A2"}, "entropy": {"B"}}[kind]

    def compute(a: float, sel: NDArray) -> NDArray:
        m, g = n_[sel], g_[sel]
        nodes = _nodes(a, law, float(m.max()), float(g.min()), float(g.max()))
        j0, j1 = _sums.bulk_grid(nodes, float(m.max()))
        jy = _sums.needle_grid(j0, j1, a * g)
        tab = _sums.tables(nodes, jy, need)
        pairs, inv = np.unique(np.stack([m, g]), axis=1, return_inverse=True)
        return _sums.needle(tab, pairs[0], a * pairs[1], kind)[inv.ravel()]

    def zero(sel: NDArray) -> NDArray:
        m = n_[sel]
        return np.log(m) if kind == "entropy" else 1.0 / m

    return v.scalar_or_array(_by_alpha(a_, compute, zero), shape)


def needle_weight(n: ArrayLike, alpha: ArrayLike, gap: ArrayLike, d: int | None = None) -> Out:
    """Exact expected softmax weight of a planted key ("needle") with fixed score ``gap``
    among ``n - 1`` independent scores from the law (``n`` keys in all):

        E p_needle = int_0^inf e^(alpha g) exp(-t e^(alpha g)) phi(t)^(n-1) dt.

    ``gap`` is in the units of ``s``: standard deviations for normal scores
    (``gap >= -35``), a cosine in ``[-1, 1]`` for cosine scores. Broadcasts ``n``,
    ``alpha`` and ``gap``; ``alpha = 0`` gives ``1/n``. Relative error below 1e-11.
    Compare :func:`needle_weight_mean_field`.
    """
    return _needle("weight", n, alpha, gap, d)


def needle_sum_p2(n: ArrayLike, alpha: ArrayLike, gap: ArrayLike, d: int | None = None) -> Out:
    """``E sum p^2`` over the whole row of the needle model (needle plus ``n - 1`` scores):

        int_0^inf t [w0^2 e^(-t w0) phi^(n-1) + (n-1) e^(-t w0) psi_2 phi^(n-2)] dt,  w0 = e^(alpha g).
    """
    return _needle("sum_p2", n, alpha, gap, d)


def needle_entropy(n: ArrayLike, alpha: ArrayLike, gap: ArrayLike, d: int | None = None) -> Out:
    """``E H`` (nats) over the whole row of the needle model:

        -int_0^inf [k0(t) (phi^(n-1) - 1) + (n-1) e^(-t w0) E[w (log(tw) + gamma) e^(-tw)] phi^(n-2)] dt,

    with ``k0(t) = w0 (log(t w0) + gamma) e^(-t w0)``; the ``-1`` removes
    ``int k0 dt = 0`` exactly, so the tiny entropy of a dominant needle keeps its
    relative accuracy.
    """
    return _needle("entropy", n, alpha, gap, d)


def needle_weight_mean_field(n: ArrayLike, alpha: ArrayLike, gap: ArrayLike, d: int | None = None) -> Out:
    """Law-of-large-numbers needle weight ``e^(alpha g) / (e^(alpha g) + (n-1) M(alpha))``,
    ``M`` the moment generating function (normal: ``e^(alpha^2/2)``; cosine:
    :func:`attnscale.scores.log_mgf_cosine`), evaluated as
    ``sigmoid(alpha g - log(n-1) - log M(alpha))``. It replaces the sum of the other
    ``n - 1`` weights by its mean; :func:`needle_weight` is exact.
    """
    law = _law(d)
    n_, a_, g_ = np.broadcast_arrays(_lengths(n), _scales(alpha), _gaps(gap, law))
    shape = n_.shape
    n_, a_, g_ = (x.ravel().astype(float) for x in (n_, a_, g_))
    log_m = np.zeros_like(a_)
    pos = a_ > 0
    if law is None:
        log_m = 0.5 * a_ * a_
    elif pos.any():
        log_m[pos] = log_mgf_cosine(a_[pos], law)
    excess = log_m - a_ * g_  # log(M / e^(alpha g))
    z = np.log(n_ - 1.0) + excess
    # 1 / (1 + (n-1) e^excess) is exactly 1/n at alpha = 0; where z > 30 it is sigmoid(-z).
    # It is used only where z <= 30, where excess <= z (log(n-1) >= 0): the cap at 30 keeps
    # (n-1) e^excess finite elsewhere without changing a used value.
    near = 1.0 / (1.0 + (n_ - 1.0) * np.exp(np.minimum(excess, 30.0)))
    return v.scalar_or_array(np.where(z > 30.0, expit(-z), near), shape)
