"""Exact expectations of softmax statistics for independent scores, by quadrature.

Scores ``s_1, ..., s_n`` are independent with density ``f``: standard normal
(``d=None``) or *cosine scores* (``d`` an integer >= 2: the cosine of two independent
uniformly random directions in ``R^d``, density ``(1 - s^2)^((d-3)/2) / B(1/2, (d-1)/2)``
on ``[-1, 1]``). With ``p = softmax(alpha s)``, ``w_i = e^(alpha s_i)``,
``Z = sum_i w_i`` and the Laplace transforms

    phi(t) = E exp(-t w),   psi_k(t) = E[w^k exp(-t w)],   chi(t) = E[s w exp(-t w)],

the identities ``1/Z = int_0^inf e^(-tZ) dt``, ``1/Z^2 = int_0^inf t e^(-tZ) dt`` and
``E e^(-tZ) = phi(t)^n`` (independence) give one-dimensional integrals:

    E sum p_i^2     = n int_0^inf t psi_2(t) phi(t)^(n-1) dt,
    1 - E sum p_i^2 = n (n-1) E[p_1 p_2] = n (n-1) int_0^inf t psi_1(t)^2 phi(t)^(n-2) dt,
    E log Z         = int_0^inf (e^(-t) - phi(t)^n) / t dt          (Frullani),
    E sum p_i s_i   = n int_0^inf chi(t) phi(t)^(n-1) dt,

and ``E H = E log Z - alpha E sum p_i s_i``. That difference cancels badly (both
terms grow like ``alpha``, ``H`` falls like ``1/alpha``), so the entropy is computed
from ``H = -d/dq sum_i p_i^q`` at ``q = 1`` with ``p_i^q = w_i^q / Gamma(q) int t^(q-1)
e^(-tZ) dt``, which gives

    E H = -n int_0^inf E[w (log(t w) + gamma) e^(-t w)] phi(t)^(n-1) dt    (gamma: Euler's constant),

an integrand whose inner kernel ``(log u + gamma) e^(-u)`` integrates to zero, so the
``alpha``-sized parts cancel inside each inner expectation (relative loss ~ the score
spread in units of 1/alpha, at most ~1e3 here, instead of ~alpha^2).

Numerics (see the private module ``attnscale._quadrature``). Substituting ``t = e^(-y)`` turns every
integral into ``int dy`` over a "threshold" ``y`` (in units of ``alpha s``) of products of
``phi(y)``, ``A_k(y) = E[e^(k x) exp(-e^x)]`` and ``B(y) = E[e^x (x + gamma) exp(-e^x)]``,
``x = alpha s - y``. The inner expectations use a trapezoid rule in ``u = alpha s``
(step 1/4 where the kernel sets the resolution; for cosine scores after a smooth
change of variables that removes the endpoint singularities at ``s = +-1``), the outer
integral a trapezoid rule in ``y`` with step 1/4; both are spectrally accurate
(aliasing error ~ ``exp(-pi^2 / 0.25)``). ``phi^(n-1)`` is ``exp((n-1) log phi)`` with
``log phi = log1p(-(1 - phi))`` and ``1 - phi = E[-expm1(-e^x)]`` summed directly.
The inner sums depend on ``alpha`` but not on ``n``: they are computed once per distinct
``alpha`` and reused for every ``n`` (and needle gap) at that ``alpha``.

Accuracy (measured against 30-digit ``mpmath`` quadrature; ``tests/test_exact.py``):
relative error below 1e-11 for every function over normal scores with
``2 <= n <= 1e9``, ``0 <= alpha <= 50`` and cosine scores with ``2 <= d <= 4096``,
``alpha <= 1000``; the documented target is 1e-8.

Supported ranges: ``2 <= n <= 1e15`` (real ``n`` allowed), ``0 <= alpha <= 1e4``, and
``2 <= d <= 65536`` for cosine scores.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, gammaln

from . import _quadrature as q
from . import _validate as v
from .scores import log_mgf_cosine

__all__ = [
    "expected_sum_p2",
    "expected_half_l1",
    "near_tie_limit",
    "near_tie_correction",
    "expected_entropy",
    "needle_weight",
    "needle_sum_p2",
    "needle_entropy",
    "needle_weight_mean_field",
    "expected_sum_p2_shared_query",
]

N_MAX = 1e15
ALPHA_MAX = 1e4
D_MAX = 65536
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


def _shaped(out: NDArray[np.float64], shape: tuple[int, ...]) -> Out:
    out = out.reshape(shape)
    return out if out.ndim else float(out)


# ---- the driver -----------------------------------------------------------------------


def _nodes(alpha: float, d: int | None, n_max: float, g_lo: float | None = None, g_hi: float | None = None) -> q.Nodes:
    """Quadrature nodes for ``u = alpha s``; needle gaps widen the range kept."""
    if d is None:
        top = bottom = q.normal_tail_cut(n_max)
        if g_lo is not None and g_lo < 0:
            bottom = max(bottom, min(_NORMAL_FLOOR, math.sqrt(g_lo * g_lo + 74.0)))
        if g_hi is not None:
            top = max(top, min(_NORMAL_FLOOR, g_hi + 1.0, alpha + 9.0))
        return q.normal_nodes(alpha, bottom, top)
    nodes, _, _ = q.cosine_nodes(alpha, d, 50.0 + math.log(n_max))
    if g_lo is not None and g_hi is not None:
        # keep every node between the bulk and the needles, whatever its weight
        full, _, _ = q.cosine_nodes(alpha, d, 745.0)
        s = full.u / alpha
        keep = (full.W > 0) & (s >= min(g_lo, 0.0) - 0.1) & (s <= max(g_hi, 0.0) + 0.1)
        keep |= np.isin(full.u, nodes.u)
        nodes = q.Nodes(full.u[keep], full.W[keep])
    return nodes


def _by_alpha(alpha: NDArray, compute: Callable[[float, NDArray], NDArray], zero: Callable[[NDArray], NDArray]) -> NDArray:
    """Evaluate ``compute(alpha_value, mask)`` once per distinct ``alpha``."""
    out = np.empty(alpha.shape)
    for a in np.unique(alpha):
        sel = alpha == a
        out[sel] = zero(sel) if a == 0 else compute(float(a), sel)
    return out


def _bulk(kind: str, n: ArrayLike, alpha: ArrayLike, d: object) -> Out:
    n_, a_ = np.broadcast_arrays(_lengths(n), _scales(alpha))
    law = _law(d)
    shape = n_.shape
    n_, a_ = n_.ravel().astype(float), a_.ravel().astype(float)
    need = {"p2": {"A2"}, "half_l1": {"A1"}, "entropy": {"B"}}[kind]

    def compute(a: float, sel: NDArray) -> NDArray:
        m = n_[sel]
        nodes = _nodes(a, law, float(m.max()))
        j0, j1 = q.bulk_grid(nodes, float(m.max()))
        tab = q.tables(nodes, np.arange(j0, j1 + 1), need)
        uniq, inv = np.unique(m, return_inverse=True)
        if kind == "p2":
            val = q.sum_p2(tab, uniq)
        elif kind == "half_l1":
            val = a * q.one_minus_sum_p2(tab, uniq)
        else:
            val = q.entropy(tab, uniq)
        return val[inv]

    def zero(sel: NDArray) -> NDArray:
        m = n_[sel]
        return {"p2": 1.0 / m, "half_l1": np.zeros_like(m), "entropy": np.log(m)}[kind]

    return _shaped(_by_alpha(a_, compute, zero), shape)


def _needle(kind: str, n: ArrayLike, alpha: ArrayLike, gap: ArrayLike, d: object) -> Out:
    law = _law(d)
    n_, a_, g_ = np.broadcast_arrays(_lengths(n), _scales(alpha), _gaps(gap, law))
    shape = n_.shape
    n_, a_, g_ = (x.ravel().astype(float) for x in (n_, a_, g_))
    need = {"weight": set(), "sum_p2": {"A2"}, "entropy": {"B"}}[kind]

    def compute(a: float, sel: NDArray) -> NDArray:
        m, g = n_[sel], g_[sel]
        nodes = _nodes(a, law, float(m.max()), float(g.min()), float(g.max()))
        j0, j1 = q.bulk_grid(nodes, float(m.max()))
        jy = q.needle_grid(j0, j1, a * g)
        tab = q.tables(nodes, jy, need)
        pairs, inv = np.unique(np.stack([m, g]), axis=1, return_inverse=True)
        return q.needle(tab, pairs[0], a * pairs[1], kind)[inv.ravel()]

    def zero(sel: NDArray) -> NDArray:
        m = n_[sel]
        return np.log(m) if kind == "entropy" else 1.0 / m

    return _shaped(_by_alpha(a_, compute, zero), shape)


# ---- the public functions ---------------------------------------------------------------


def expected_sum_p2(n: ArrayLike, alpha: ArrayLike, d: int | None = None) -> Out:
    """Exact ``E sum_i p_i^2`` for ``p = softmax(alpha s)`` over ``n`` independent scores.

    ``E sum p^2 = n int_0^inf t psi_2(t) phi(t)^(n-1) dt`` (module docstring), evaluated
    as ``n int A_2(y) phi(y)^(n-1) dy``. ``d=None``: standard normal scores; ``d``
    (integer >= 2): cosine scores in ``R^d``. Broadcasts ``n`` (real, ``2 <= n <= 1e15``)
    against ``alpha`` (``0 <= alpha <= 1e4``); ``alpha = 0`` gives exactly ``1/n``.

    Accuracy: relative error below 1e-12 against 30-digit ``mpmath`` over
    ``2 <= n <= 1e9``, ``alpha <= 50`` (normal) and ``2 <= d <= 4096``, ``alpha <= 1000``
    (cosine). Cost: the inner sums are computed once per distinct ``alpha``; a grid of
    200 ``alpha`` values times 10 ``n`` takes well under a second (``bench/bench_exact.py``).
    """
    return _bulk("p2", n, alpha, d)


def expected_half_l1(n: ArrayLike, alpha: ArrayLike, d: int | None = None) -> Out:
    """``alpha (1 - E sum_i p_i^2)``, the expected ``(1/2) ||J||_1`` of the softmax Jacobian.

    ``1 - E sum p^2`` is never formed as a difference: it is ``n (n-1) E[p_1 p_2] =
    n (n-1) int_0^inf t psi_1(t)^2 phi(t)^(n-2) dt`` (``= n (n-1) int A_1^2 phi^(n-2) dy``),
    a positive integrand, so the result keeps full relative accuracy when
    ``E sum p^2`` is within 1e-12 of 1. Same arguments and accuracy as
    :func:`expected_sum_p2`; ``alpha = 0`` gives 0.

    As ``alpha -> inf`` it tends to :func:`near_tie_limit`, for normal scores and cosine
    scores with ``d >= 5`` as ``near_tie_limit + C_2 / alpha^2 + O(alpha^-3)``
    (:func:`near_tie_correction` gives ``C_2``; there is no ``1/alpha`` term).
    """
    return _bulk("half_l1", n, alpha, d)


def expected_entropy(n: ArrayLike, alpha: ArrayLike, d: int | None = None) -> Out:
    """Exact expected Shannon entropy (nats) ``E H``, ``H = -sum_i p_i log p_i``.

    ``E H = -n int_0^inf E[w (log(t w) + gamma) e^(-t w)] phi(t)^(n-1) dt`` (module
    docstring), which equals ``E log Z - alpha E sum p_i s_i`` without its cancellation.
    ``alpha = 0`` gives ``log n``. For large ``alpha`` (normal scores; cosine ``d >= 5``)
    ``alpha E H -> (pi^2/6) near_tie_limit(n, d)`` (two near-tied keys with gap ``delta``
    contribute the binary entropy of ``sigmoid(alpha delta)``, whose integral over
    ``delta >= 0`` is ``pi^2 / (6 alpha)``). Same arguments and accuracy as
    :func:`expected_sum_p2` (relative error below 1e-11).
    """
    return _bulk("entropy", n, alpha, d)


def near_tie_limit(n: ArrayLike, d: int | None = None) -> Out:
    """``lim_(alpha -> inf) alpha (1 - E sum p^2) = f_Delta(0) = n (n-1) int f^2 F^(n-2) ds``,
    the density at 0 of the gap ``Delta`` between the two largest scores.

    Why: ``alpha (1 - E sum p^2) = n (n-1) alpha int A_1^2 phi^(n-2) dy``, and with
    ``c = y / alpha`` and ``V = log Exp(1)``, ``alpha A_1 = E f(c + V/alpha)`` and
    ``phi = E F(c + V/alpha)``, which tend to ``f(c)`` and ``F(c)``. Expanding in
    ``1/alpha``, the mean of ``V`` (``-gamma``) only shifts ``c`` and drops out, so
    the first correction is ``C_2 / alpha^2`` from ``Var V = pi^2/6``
    (:func:`near_tie_correction`); for ``n >= 3`` an ``alpha^-3`` term from the third
    cumulant ``-2 zeta(3)`` follows. Normal scores, ``n = 2``: ``1/sqrt(pi)``;
    cosine scores with ``d = 3`` (uniform on [-1, 1]): ``n/2``; ``d = 2``: ``+inf``
    (the density ``(1-s^2)^(-1/2)`` makes ``int f^2`` diverge at ``s = 1``;
    ``alpha (1 - E sum p^2)`` then grows like ``log alpha``). For ``d = 3`` the
    approach is at rate ``1/alpha`` (the density jumps at ``+-1``), for ``d = 4`` at
    ``log(alpha) / alpha^2``.

    Computed as ``n (n-1) int f(F^-1(sigmoid w)) sigmoid(w)^(n-1) sigmoid(-w) dw``
    (trapezoid in the logit of the quantile, step 1/8), relative error below 1e-12.
    """
    m = _lengths(n)
    law = _law(d)
    flat = m.ravel().astype(float)
    if law == 2:
        return _shaped(np.full(flat.shape, np.inf), m.shape)
    uniq, inv = np.unique(flat, return_inverse=True)
    return _shaped(q.near_tie(law, uniq)[inv], m.shape)


def near_tie_correction(n: ArrayLike, d: int | None = None) -> Out:
    """``C_2`` in ``alpha (1 - E sum p^2) = near_tie_limit + C_2 / alpha^2 + O(alpha^-3)``:

        C_2 = -(pi^2/6) n (n-1) int [f'^2 F^(n-2) + ((n-2)/2) f^2 f' F^(n-3)] ds

    (from ``n (n-1) (pi^2/6) int [f f'' F^(n-2) + ((n-2)/2) f^2 f' F^(n-3)] ds`` after an
    integration by parts). Normal scores, ``n = 2``: ``-pi^(3/2) / 12``. Defined for
    normal scores and cosine scores with ``d >= 5`` (for smaller ``d`` the expansion
    has other powers, see :func:`near_tie_limit`), which raise ``ValueError``.
    """
    m = _lengths(n)
    law = _law(d)
    if law is not None and law < 5:
        raise ValueError(f"d must be >= 5 for the 1/alpha^2 expansion (d = 3: 1/alpha, d = 4: log(alpha)/alpha^2), got {law}")
    flat = m.ravel().astype(float)
    uniq, inv = np.unique(flat, return_inverse=True)
    return _shaped(q.near_tie_second(law, uniq)[inv], m.shape)


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
    # 1 / (1 + (n-1) e^excess) is exactly 1/n at alpha = 0; where z > 30 it is sigmoid(-z)
    near = 1.0 / (1.0 + (n_ - 1.0) * np.exp(np.minimum(excess, 700.0)))
    return _shaped(np.where(z > 30.0, expit(-z), near), shape)


def expected_sum_p2_shared_query(n: ArrayLike, alpha: ArrayLike, d: int) -> Out:
    """Exact ``E sum p^2`` for dot-product scores ``s_i = q . k_i / sqrt(d)`` with
    ``q, k_i ~ N(0, I_d)`` (one query shared by the row, ``d`` an integer >= 1).

    Given ``q`` the scores are independent ``N(0, R^2)`` with ``R^2 = |q|^2 / d``, so
    they are exchangeable but not independent, and

        E sum p^2 = E_R[ expected_sum_p2(n, alpha R) ],   R^2 ~ chi^2_d / d.

    The outer average is a trapezoid rule in ``t = log R^2`` (density
    ``k^k e^(k t - k e^t) / Gamma(k)``, ``k = d/2``; step ``min(0.2, 0.5/sqrt(k))``),
    applied to ``expected_sum_p2 - 1/n`` (which vanishes like ``R^2`` as ``R -> 0``);
    relative error below 1e-10. (For cosine scores no such correction is needed:
    given ``q``, the cosines with independent uniformly random keys have the same law
    for every ``q`` by rotational invariance, so they are exactly i.i.d.)
    """
    d_ = _dimension(d, 1)
    n_, a_ = np.broadcast_arrays(_lengths(n), _scales(alpha))
    shape = n_.shape
    n_, a_ = n_.ravel().astype(float), a_.ravel().astype(float)
    k = 0.5 * d_
    ht = min(0.2, 0.5 / math.sqrt(k))
    out = 1.0 / n_
    for a in np.unique(a_[a_ > 0]):
        sel = a_ == a
        c = 60.0 / k
        t_right = math.sqrt(2.0 * c) + math.log1p(c)  # e^t - 1 - t >= t^2/2 >= c here: k (e^t - 1 - t) >= 60 beyond
        t_left = -60.0 / k - 2.0 * abs(math.log(a)) - 60.0
        t = t_left + ht * np.arange(math.ceil((t_right - t_left) / ht) + 1)  # exact spacing ht
        log_rho = k * math.log(k) - gammaln(k) + k * t - k * np.exp(t)
        bound = log_rho + np.minimum(0.0, 2.0 * math.log(a) + t)
        t = t[bound > bound.max() - 50.0]
        log_rho = k * math.log(k) - gammaln(k) + k * t - k * np.exp(t)
        m = n_[sel]
        vals = np.asarray(expected_sum_p2(m[None, :], (a * np.exp(0.5 * t))[:, None]))
        out[sel] = 1.0 / m + ht * (np.exp(log_rho) @ (vals - 1.0 / m[None, :]))
    return _shaped(out, shape)
