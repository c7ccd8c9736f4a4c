"""Scaled softmax, its Jacobian and the L1 size of that Jacobian.

Notation (see the book's notation page): scores ``s`` along the last axis (or
``axis``), scale ``alpha > 0``, probabilities ``p = softmax(alpha s)``,
Jacobian ``J[i, j] = d p_i / d s_j``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate as v

__all__ = [
    "logsumexp",
    "log_softmax",
    "softmax",
    "power_weights",
    "softmax_jacobian",
    "jacobian_half_l1",
    "gradient_l1",
    "jacobian_frobenius",
    "jacobian_max_entry",
    "jacobian_spectral_norm",
    "softmax_vjp",
]


def _logits(s: ArrayLike, alpha: ArrayLike, axis: int) -> tuple[NDArray, NDArray, int]:
    """Validate scores (``-inf`` allowed as a mask) and the scale."""
    arr = v.at_least_1d(v.as_float_array(s, "s"), "s")
    if np.isnan(arr).any():
        raise ValueError(f"s must not contain NaN, got {v._show(arr)}")
    if np.isposinf(arr).any():
        raise ValueError("s must not contain +inf (only -inf, as a mask, is allowed)")
    ax = v.axis_index(axis, arr.ndim)
    if arr.shape[ax] == 0:
        raise ValueError(f"s must have at least one entry along axis {axis}, got shape {arr.shape}")
    if np.isneginf(arr).all(axis=ax).any():
        raise ValueError("s has a slice whose every entry is -inf (fully masked): its softmax is undefined")
    a = v.positive(alpha, "alpha")
    reduced = arr.shape[:ax] + (1,) + arr.shape[ax + 1:]
    try:
        a = np.broadcast_to(a, reduced)
    except ValueError:
        raise ValueError(
            f"alpha of shape {a.shape} must broadcast to {reduced}: one scale per slice of s "
            f"(shape {arr.shape}) along axis {axis}"
        ) from None
    return arr, a, ax


def _shifted(arr: NDArray, a: NDArray, ax: int) -> tuple[NDArray, NDArray]:
    """``alpha (s - max s)``, every entry <= 0 (or -inf), and the max itself."""
    top = np.max(arr, axis=ax, keepdims=True)
    with np.errstate(over="ignore"):
        # s - max(s) is <= 0 or -inf (a mask, or a gap beyond float64): exp(z) cannot overflow
        z = a * (arr - top)
    return z, top


def logsumexp(s: ArrayLike, alpha: ArrayLike = 1.0, axis: int = -1) -> NDArray[np.float64]:
    """``log sum_i exp(alpha s_i)`` along ``axis``, computed as
    ``alpha max(s) + log sum_i exp(alpha (s_i - max s))`` so that nothing overflows.

    ``s`` may contain ``-inf`` (masked entries) but not NaN or ``+inf``;
    ``alpha`` must be finite and > 0: a scalar, or one scale per slice (it
    broadcasts to ``s.shape`` with ``axis`` of length 1). The result is
    ``+-inf`` only where the true value lies beyond float64.
    """
    arr, a, ax = _logits(s, alpha, axis)
    z, top = _shifted(arr, a, ax)
    out = np.log(np.sum(np.exp(z), axis=ax, keepdims=True))
    with np.errstate(over="ignore"):
        lead = a * top  # may be +-inf only if the true value exceeds float64
    return np.squeeze(lead + out, axis=ax)


def log_softmax(s: ArrayLike, alpha: ArrayLike = 1.0, axis: int = -1) -> NDArray[np.float64]:
    """``log p_i = alpha s_i - log sum_j exp(alpha s_j)``, shifted by the max so
    that it never overflows; masked entries (``-inf``) give ``-inf``."""
    arr, a, ax = _logits(s, alpha, axis)
    z, _ = _shifted(arr, a, ax)
    return z - np.log(np.sum(np.exp(z), axis=ax, keepdims=True))


def softmax(s: ArrayLike, alpha: ArrayLike = 1.0, axis: int = -1) -> NDArray[np.float64]:
    """``p_i = exp(alpha s_i) / sum_j exp(alpha s_j)`` along ``axis``.

    Stable for any finite scores (``|s|`` up to ``1e308``) and any finite
    ``alpha > 0``: the exponent is ``alpha (s_i - max s) <= 0``. Entries equal
    to ``-inf`` are masked out (probability 0). Works on batches: every slice
    along ``axis`` is one distribution.

    Parameters
    ----------
    s : array of reals
        The scores; ``-inf`` masks a key.
    alpha : positive real or array
        The scale, broadcast over the slices along ``axis``.
    axis : int
        The axis that holds one row.

    Returns
    -------
    ndarray
        The probabilities, the shape of ``s``.

    Raises
    ------
    ValueError
        NaN or ``+inf`` scores, a row with every key masked, or a bad ``alpha``.

    Examples
    --------
    >>> softmax([1.0, 2.0, 3.0]).round(4)
    array([0.09  , 0.2447, 0.6652])
    """
    arr, a, ax = _logits(s, alpha, axis)
    return _softmax_checked(arr, a, ax)


def _softmax_checked(arr: NDArray, a: NDArray, ax: int = -1) -> NDArray[np.float64]:
    """:func:`softmax` of scores and scales already validated (the training loop's path)."""
    z, _ = _shifted(arr, a, ax)
    e = np.exp(z)
    return e / np.sum(e, axis=ax, keepdims=True)


def power_weights(s: ArrayLike, m: float = 2.0, scale: ArrayLike = 1.0, axis: int = -1) -> NDArray[np.float64]:
    """Normalised ``relu^m`` attention weights ``relu(scale s_i)^m / sum_j relu(scale s_j)^m``
    along ``axis`` (``m = 2`` with a learned normaliser is the third remedy for GAU in the
    book's chapter on softmax). Where a row has a positive score this equals
    ``softmax(m log relu(s))`` with the logits of non-positive scores at ``-inf``; a row
    with no positive score has no weights (``0/0``) and raises ``ValueError``. ``scale``
    (``> 0``) cancels: the weights are positively homogeneous of degree 0 in it.
    Computed as that softmax (which masks the ``-inf`` logits), so no power overflows.
    """
    arr = v.at_least_1d(v.finite(s, "s"), "s")
    degree = v.real_above(m, "m")
    a = v.positive(scale, "scale")
    ax = v.axis_index(axis, arr.ndim)
    try:  # the shape of s: a scale with more axes would move the axis the weights are normalised along
        a = np.broadcast_to(a, arr.shape)
    except ValueError:
        raise ValueError(f"scale of shape {a.shape} does not broadcast to the shape {arr.shape} of s") from None
    positive = arr > 0  # scale > 0, so scale s_i > 0 exactly where s_i > 0
    if not np.all(np.any(positive, axis=ax)):
        raise ValueError("s must have a positive score in every row (relu^m weights of a row with none are 0/0)")
    # log(scale s) as log scale + log s: the product can overflow (1e308 x 10) or underflow (1e-200 x 1e-200)
    logs = np.where(positive, np.log(a) + np.log(np.where(positive, arr, 1.0)), -np.inf)
    return softmax(logs, degree, ax)


def _alpha_for_batch(alpha: ArrayLike, batch_shape: tuple[int, ...]) -> NDArray[np.float64]:
    a = v.positive(alpha, "alpha")
    try:
        a = np.broadcast_to(a, batch_shape)
    except ValueError:
        raise ValueError(
            f"alpha of shape {a.shape} does not broadcast against the batch shape {batch_shape} of p"
        ) from None
    return a


def _rest(arr: NDArray[np.float64]) -> NDArray[np.float64]:
    """``sum_{j != i} p_j`` for every ``i`` along the last axis, accurately.

    ``1 - p_i`` loses everything when ``p_i`` rounds to 1 (a saturated row);
    for the largest entry the other probabilities are summed directly instead,
    and for the others ``sum p - p_i`` has no cancellation (``p_i <= 1/2``
    there unless the row has two entries near 1/2, where both forms are fine).
    """
    rest = np.sum(arr, axis=-1, keepdims=True) - arr
    top = np.argmax(arr, axis=-1)[..., None]
    masked = np.where(np.arange(arr.shape[-1]) == top, 0.0, arr)
    np.put_along_axis(rest, top, np.sum(masked, axis=-1, keepdims=True), axis=-1)
    return rest


def softmax_jacobian(p: ArrayLike, alpha: ArrayLike = 1.0) -> NDArray[np.float64]:
    """The Jacobian of ``p = softmax(alpha s)`` with respect to ``s``:
    ``J[..., i, j] = alpha (p_i delta_ij - p_i p_j)``, i.e. ``alpha (diag p - p p^T)``.

    ``p`` holds probability vectors along its last axis (any batch shape in
    front); ``alpha`` is a scalar or broadcasts against ``p.shape[:-1]``.
    Returns an array of shape ``p.shape + (n,)``.
    """
    arr = v.probabilities(p, "p")
    a = _alpha_for_batch(alpha, arr.shape[:-1])[..., None, None]
    n = arr.shape[-1]
    J = -(arr[..., :, None] * arr[..., None, :])
    # the diagonal as p_i sum_{j != i} p_j: accurate even when p_i rounds to 1
    idx = np.arange(n)
    J[..., idx, idx] = arr * _rest(arr)
    return a * J


def jacobian_half_l1(J: ArrayLike) -> NDArray[np.float64]:
    """Half the entrywise L1 norm of square matrices: ``(1/2) sum_ij |J_ij|``
    over the last two axes."""
    arr = v.finite(J, "J")
    if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
        raise ValueError(f"J must be square in its last two axes, got shape {arr.shape}")
    return 0.5 * np.abs(arr).sum(axis=(-2, -1))


def gradient_l1(p: ArrayLike, alpha: ArrayLike = 1.0) -> NDArray[np.float64]:
    """The closed form of the softmax Jacobian's size,
    ``(1/2) ||J||_1 = alpha (1 - sum_i p_i^2)``, along the last axis of ``p``.

    Examples
    --------
    >>> p = softmax([1.0, 2.0, 3.0], alpha=2.0)
    >>> bool(np.isclose(gradient_l1(p, 2.0), 0.5 * np.abs(softmax_jacobian(p, 2.0)).sum()))
    True
    """
    arr = v.probabilities(p, "p")
    a = _alpha_for_batch(alpha, arr.shape[:-1])
    # 1 - sum p^2 = sum_i p_i sum_{j != i} p_j, which keeps its relative accuracy in saturated rows
    return a * np.sum(arr * _rest(arr), axis=-1)


def jacobian_frobenius(p: ArrayLike, alpha: ArrayLike = 1.0) -> NDArray[np.float64]:
    """Frobenius norm of the softmax Jacobian without forming it:
    row ``i`` of ``J`` is ``alpha p_i (e_i - p)``, so
    ``||J||_F^2 = alpha^2 sum_i p_i^2 ((1 - p_i)^2 + sum_{j != i} p_j^2)``,
    evaluated so that near-one-hot rows keep their relative accuracy.
    """
    arr = v.probabilities(p, "p")
    a = _alpha_for_batch(alpha, arr.shape[:-1])
    sq = arr * arr
    inner = np.sum(sq * (_rest(arr) ** 2 + _rest(sq)), axis=-1)
    return a * np.sqrt(inner)


def jacobian_max_entry(p: ArrayLike, alpha: ArrayLike = 1.0) -> NDArray[np.float64]:
    """Largest entry of ``|J|``. Off the diagonal ``p_i p_j <= p_i (1 - p_i)``,
    so it is the largest diagonal entry, ``alpha max_i p_i (1 - p_i)``."""
    arr = v.probabilities(p, "p")
    a = _alpha_for_batch(alpha, arr.shape[:-1])
    return a * np.max(arr * _rest(arr), axis=-1)


#: the spectral norm's root finder stops after a step this small relative to the root
_ROOT_TOL = 4 * np.finfo(float).eps
#: rows of at most this many entries are summed one term after another, longer ones pairwise:
#: entries far below p_(2) summed after it lose up to about an ulp of the root per 45 entries
_SEQUENTIAL_SUM_MAX = 64


def jacobian_spectral_norm(p: ArrayLike, alpha: ArrayLike = 1.0, iterations: int = 64) -> NDArray[np.float64]:
    """Spectral norm of the softmax Jacobian, which is its largest eigenvalue
    (``J`` is positive semidefinite): ``alpha mu`` with ``mu`` the root of the secular
    equation ``sum_i p_i^2 / (p_i - mu) = 1`` in ``[p_(2), p_(1)]``, the two largest
    probabilities. Since ``sum p_i = 1`` that equation is ``mu g(mu) = 0`` with
    ``g(mu) = sum_i p_i / (p_i - mu)``; the root of ``g`` is found instead, which avoids
    the cancellation in ``1 - p_(1)`` that ruins saturated rows.

    ``g`` rises from ``-inf`` to ``+inf`` between its poles ``p_(2)`` and ``p_(1)``, whose
    weights (numerators) are the poles themselves. Each pass over a row (``O(n)``, no
    ``n x n`` matrix) evaluates ``g`` at ``mu`` and moves to the root of a model with two
    poles: the term of ``p_(1)`` exactly, the other terms as ``c + s / (p_(2) - x)`` with
    their value and slope at ``mu``. Each of those terms is convex in ``1 / (x - p_(2))``
    and the model is their tangent in that variable, so it lies below ``g`` and its root
    above the true one: from a closed-form upper bound the iterates fall monotonically and
    quadratically, in three to five passes on the rows of the book. A bracket on the root is
    kept, and a step that would leave it halves the bracket instead (a row of very many
    entries just below ``p_(1)``, where the model's root rounds onto ``p_(1)``, then takes
    up to about ``log2 n`` passes: 13 for a flat row of 10^5). A row stops when its step is
    four ulps of the root, when ``g`` is within its own rounding error of zero, or when no
    float is left inside the bracket. The result is within two ulps of the root on every row
    of the tests, also where the root is tiny next to ``p_(1)`` (down to subnormal numbers).
    A row's sums are pairwise beyond 64 entries (one term after another up to 64, the faster
    there, and within about an ulp and a half); entries each below half an ulp of ``p_(2)``
    that a sum meets right after it can still be rounded away (four ulps in a row built for it).
    Rows with no third positive entry take no pass: ``0`` when one-hot (``J = 0``),
    ``p_(1)`` at a tie ``p_(1) = p_(2)``, and ``2 p_(1) p_(2) / (p_(1) + p_(2))`` for two
    keys. For a row that sums to 1 only within the tolerance of ``p``, the result is the root
    of ``g``, which is the row's sum times the spectral norm of the normalised row's Jacobian.

    Parameters
    ----------
    p : array of probability vectors
        Along the last axis; any batch shape in front.
    alpha : positive real or array
        The scale, a scalar or one per row (broadcast against ``p.shape[:-1]``).
    iterations : int
        The most passes over a row, 64 by default (above).

    Returns
    -------
    float64 or ndarray
        ``alpha mu``, of shape ``p.shape[:-1]`` (a scalar for one row).

    Raises
    ------
    TypeError
        An argument of the wrong type; the message begins with its name.
    ValueError
        ``p`` not probability vectors, a bad ``alpha``, ``iterations`` below 1, or a row
        whose root has not converged within ``iterations`` passes.

    Examples
    --------
    >>> p = softmax([1.0, 2.0, 3.0])
    >>> bool(np.isclose(jacobian_spectral_norm(p, 2.0), np.linalg.eigvalsh(softmax_jacobian(p, 2.0))[-1]))
    True
    >>> float(jacobian_spectral_norm([0.25, 0.75]))  # two keys: 2 p1 p2
    0.375
    """
    arr = v.probabilities(p, "p")
    a = _alpha_for_batch(alpha, arr.shape[:-1])
    cap = v.integer_at_least(iterations, "iterations", 1)
    return a * _secular_root(arr.reshape(-1, arr.shape[-1]), cap).reshape(arr.shape[:-1])


def _secular_root(rows: NDArray, cap: int) -> NDArray[np.float64]:
    """The root of ``g(x) = sum_j p_j / (p_j - x)`` in ``[p_(2), p_(1)]`` for every row of
    a 2-d array, ``g = p_(1) / (p_(1) - x)`` plus the other terms.

    The other terms lie between ``-p_(2) / (x - p_(2))`` (every term but one dropped) and
    ``-mass / (x - p_(2))`` (all their mass moved onto the pole ``p_(2)``), which give
    the root in closed form, ``2 p_(1) p_(2) / (p_(1) + p_(2))`` below and
    ``p_(1) (p_(2) + mass) / (p_(1) + mass)`` above. They meet where a row has no third
    positive entry (a tie, a one-hot row, two keys), and the lower one is then the root; it
    is also taken where no float lies strictly between ``p_(2)`` and ``p_(1)``, within an ulp
    of the root there. The other rows start from the upper bound."""
    top = np.argmax(rows, axis=-1)[:, None]
    first = np.take_along_axis(rows, top, axis=-1)[:, 0]
    others = rows.copy()  # the rows without their largest entry: the terms of g but p_(1)'s
    np.put_along_axis(others, top, 0.0, axis=-1)
    second = np.max(others, axis=-1)
    mass = np.sum(others, axis=-1)
    # no product of two small numbers (full bits below 1e-308); kept in [p_(2), p_(1)], which
    # its three roundings can leave by an ulp when the two are adjacent floats
    lower = np.clip(2.0 * second * (first / (first + second)), second, first)
    upper = first * ((second + mass) / (first + mass))
    root = lower
    # a third positive entry, counted (a sum can round the smallest entries away next to p_(2))
    third = np.count_nonzero(others > 0, axis=-1) > 1
    todo = np.flatnonzero(third & (np.nextafter(second, np.inf) < first))
    if todo.size:
        rest = others if todo.size == first.size else others[todo]
        start = _inside(second[todo], first[todo], upper[todo])  # upper rounds to p_(1) at the closest near-ties
        root[todo] = _secular_iterate(rest, first[todo], second[todo], start, cap)
    return root


def _inside(lo: NDArray, hi: NDArray, x: NDArray) -> NDArray:
    """``x`` where it lies strictly inside ``(lo, hi)``, elsewhere the bracket's geometric
    midpoint ``sqrt(lo) sqrt(hi)`` (relative precision even where ``lo`` is tiny next to
    ``hi``; ``sqrt(lo hi)`` would underflow once ``lo hi < 1e-308``), or its arithmetic
    midpoint where the geometric one rounds onto an end. Strictly inside whenever a float
    lies between the ends, so the secular function is never evaluated at a pole."""
    mid = np.sqrt(lo) * np.sqrt(hi)
    mid = np.where((lo < mid) & (mid < hi), mid, lo + 0.5 * (hi - lo))
    return np.where((lo < x) & (x < hi), x, mid)


def _secular_iterate(others: NDArray, first: NDArray, second: NDArray, mu: NDArray, cap: int) -> NDArray[np.float64]:
    """:func:`_secular_root` on rows with a proper bracket ``(second, first)``, from ``mu``
    inside it; see :func:`jacobian_spectral_norm` for the method."""
    out = np.empty(first.size)
    index = np.arange(first.size)  # where each remaining row's root goes
    live = np.ones(first.size, dtype=bool)
    lo, hi = second, first
    rounding = others.shape[-1] * np.finfo(float).eps  # of g: two roundings a term and a sum of n
    work = np.empty((2,) + others.shape)
    for _ in range(cap):
        # a finished row stays in the arrays until half are finished, and its next point may sit
        # on a pole once its bracket has no float inside: its values there are never used
        with np.errstate(divide="ignore", invalid="ignore"):
            psi, sigma = _secular_sums(others, second, mu, work)
            top = first / (first - mu)
            g = top + psi
            new = _two_pole_root(first, second, mu, psi, sigma)
        lo, hi = np.where(g < 0, mu, lo), np.where(g > 0, mu, hi)
        done = live & ((np.abs(new - mu) <= _ROOT_TOL * mu) | (np.abs(g) <= rounding * (top - psi)) | (np.nextafter(lo, hi) >= hi))
        out[index[done]] = np.clip(new, lo, hi)[done]
        live &= ~done
        if not live.any():
            return out
        mu = _inside(lo, hi, new)  # a step that leaves the bracket halves it instead
        if 2 * np.count_nonzero(live) <= live.size:  # drop the finished rows once they are half
            others, first, second, lo, hi, mu, index = (x[live] for x in (others, first, second, lo, hi, mu, index))
            live = live[live]
    raise ValueError(
        f"iterations = {cap} passes left {np.count_nonzero(live)} rows without a converged spectral norm; "
        "allow more passes (the default, 64, is about five times the most a flat row of 10^5 entries needs)"
    )


def _secular_sums(others: NDArray, second: NDArray, mu: NDArray, work: NDArray) -> tuple[NDArray, NDArray]:
    """One pass over the rows at ``mu``: ``psi = sum_j t_j`` with ``t_j = p_j / (p_j - mu)``
    (the terms of ``g`` but ``p_(1)``'s) and ``sigma = sum_j t_j q_j`` with
    ``q_j = (p_(2) - mu) / (p_j - mu)`` in ``(0, 1]``, i.e. ``(p_(2) - mu) psi'(mu)``:
    ratios only, so nothing overflows or underflows when the probabilities are subnormal.
    ``work`` holds two arrays of the rows' shape (or more rows)."""
    rows = others.shape[0]
    d = np.subtract(others, mu[:, None], out=work[0, :rows])
    t = np.divide(others, d, out=work[1, :rows])  # masked and removed entries give -0
    q = np.divide((second - mu)[:, None], d, out=d)
    if others.shape[-1] <= _SEQUENTIAL_SUM_MAX:  # einsum's sums (one by one) are the faster for short rows
        return np.einsum("ij->i", t), np.einsum("ij,ij->i", t, q)
    # np.sum along the row sums pairwise: p_(2)'s term (near -1 at the root) does not swamp many
    # small ones added after it one by one (a sequential sum of 4,096 terms was 90 ulps off the root)
    return np.sum(t, axis=-1), np.sum(np.multiply(t, q, out=q), axis=-1)


def _two_pole_root(first: NDArray, second: NDArray, mu: NDArray, psi: NDArray, sigma: NDArray) -> NDArray:
    """The root in ``(second, first)`` of ``first / (first - x) + c + s / (second - x)``, the
    model whose second part has the value ``psi`` and the slope ``sigma / (second - mu)`` of
    the other terms at ``mu``: ``s = sigma (second - mu) >= 0``, ``c = psi - sigma <= 0``.
    In ``y = x - second``, with ``D = first - second``, it is the root in ``(0, D)`` of
    ``c y^2 - (first + c D + s) y + s D``, taken in the form without cancellation."""
    s = sigma * (second - mu)
    c = psi - sigma  # <= 0 term by term (a rounding above 0 is harmless: the root taken is the small one)
    gap = first - second
    b = first + c * gap + s
    root = np.sqrt(b * b - 4.0 * c * s * gap)
    positive = b > 0  # then c may be 0; otherwise c < 0, since first > 0 and s >= 0
    y = np.where(positive, 2.0 * s * gap, b - root) / np.where(positive, b + root, 2.0 * c)
    return second + y


def softmax_vjp(p: ArrayLike, g: ArrayLike, alpha: ArrayLike = 1.0) -> NDArray[np.float64]:
    """The product of the softmax Jacobian with a vector, without forming it:
    ``J g = alpha p * (g - <p, g>)`` along the last axis (``J`` is symmetric, so
    this is also ``g^T J``, the backward pass of ``p = softmax(alpha s)``)."""
    arr = v.probabilities(p, "p")
    grad = v.finite(g, "g")
    if grad.shape != arr.shape:
        raise ValueError(f"g must have the shape of p {arr.shape}, got {grad.shape}")
    return _vjp_checked(arr, grad, _alpha_for_batch(alpha, arr.shape[:-1])[..., None])


def _vjp_checked(arr: NDArray, grad: NDArray, a: NDArray) -> NDArray[np.float64]:
    """:func:`softmax_vjp` of arrays already validated, ``a`` broadcasting against ``arr``."""
    return a * arr * (grad - np.sum(arr * grad, axis=-1, keepdims=True))
