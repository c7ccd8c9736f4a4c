"""Length-scaling rules for attention and what each one keeps constant.

A rule is a multiplier ``alpha(n)`` of the unit-variance scores ``s = q . k / sqrt(d)``
of a row of ``n`` keys: the logits are ``alpha s``. The usual ``1/sqrt(d)`` scale is
``alpha = 1``; every rule below multiplies that scale, so ``d`` drops out of all of them.

The book compares the rules in one convention, **relative to training**: a model trained
on rows of ``n_train`` keys (default 512) at scale ``alpha_train`` (the book takes 1) is run on
rows of ``n`` keys, and each rule's factor multiplies ``alpha_train``. :func:`rule_alpha` returns
that factor for every rule, so it is 1 at ``n = n_train``. Rules that apply their factor
during training as well (Scalable-Softmax, Chiang and Cholak's ``ln n``) count relative to
the factor at ``n_train``: their functions below give the factor as applied, ``rule_alpha``
the ratio ``ln n / ln n_train``. Context-extension rules take ``s = n / n_train``, the rule
applied dynamically, per row (dynamic YaRN); YaRN and LongRoPE as deployed fix ``s`` from
the configured maximum length instead.

:func:`evaluate` computes, for a rule and lengths ``n``, under two score models
(exact quadrature from :mod:`attnscale.exact`, relative error below 1e-11):

(a) bulk: ``n`` i.i.d. standard normal scores;
(b) needle: ``n - 1`` standard normal scores plus one key at fixed score ``gap``;

the expected Shannon entropy ``H``, ``H / log n``, the expected Jacobian size
``alpha (1 - E sum p^2)`` (the note's objective), and under (b) the needle's expected
weight. :func:`alpha_constant_needle` and :func:`alpha_constant_entropy` solve for the
rules that hold the needle's exact expected weight, or the exact expected entropy of
model (a), at their values at ``n_train`` with ``alpha = 1``.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate as v
from . import exact
from ._roots import bracketed_root

__all__ = [
    "RULES",
    "fixed",
    "log512",
    "qwen_logn",
    "yarn",
    "ssmax",
    "longrope",
    "chiang_cholak",
    "alpha_constant_needle",
    "alpha_constant_entropy",
    "rule_alpha",
    "evaluate",
]

#: the rule names :func:`rule_alpha` and :func:`evaluate` accept
RULES = ("fixed", "log512", "qwen_logn", "yarn", "ssmax", "longrope", "chiang_cholak", "constant_needle", "constant_entropy")
SSMAX_S = 0.43  # the value of s in Nakanishi (2025), Figure 1; s is learned per layer in the paper
RTOL = 1e-10  # the solved rules hold their quantity to this relative tolerance (asserted)

Out = NDArray[np.float64] | float



def _greater_than_one(value: object, name: str) -> float:
    return v.real_above(value, name, 1.0)


def _extension(n: ArrayLike, n_train: object) -> tuple[NDArray[np.float64], float]:
    """``(max(s, 1), n_train)`` with ``s = n / n_train``: these rules leave ``n <= n_train`` alone."""
    nt = _greater_than_one(n_train, "n_train")
    return np.maximum(v.lengths(n, "n") / nt, 1.0), nt


def fixed(n: ArrayLike) -> Out:
    """``alpha = 1``: the usual ``1/sqrt(d)`` scale, whatever the length ``n``."""
    return v.scalar_or_array(np.ones_like(v.lengths(n, "n")))


def log512(n: ArrayLike, base: float = 512) -> Out:
    """``alpha = log_base n = ln n / ln base`` (base 512 by default): the "entropy-invariant"
    scale ``softmax((log_512 n / sqrt(d)) Q K^T)`` of Su's note (Jianlin Su, 2021,
    "Looking at the scale operation of attention from entropy invariance", kexue.fm
    archive 8823; no arXiv id; restated in kexue.fm archive 9588, 2023). The base is the
    length the hyperparameters were tuned at. Below ``base`` the rule *lowers* the scale.
    """
    b = _greater_than_one(base, "base")
    return v.scalar_or_array(np.log(v.lengths(n, "n")) / math.log(b))


def qwen_logn(n: ArrayLike, n_train: float = 512) -> Out:
    """Qwen's LogN attention: ``alpha = max(1, log_{n_train} n)``.

    Source: the Qwen technical report (Bai et al., 2023, arXiv:2309.16609) and its
    released modelling code, which multiplies the query at position ``i`` (the
    ``i``-th row of causal attention sees ``i`` keys) by ``log_{seq_length} i`` when
    ``i > seq_length`` and by 1 otherwise; only the query is scaled, so the logits
    are multiplied by that factor once. ``seq_length`` is ``n_train`` here.
    """
    nt = _greater_than_one(n_train, "n_train")
    # log max(n, n_train), not log(max(n / n_train, 1) * n_train): the round trip
    # overflows to inf at the largest float
    return v.scalar_or_array(np.log(np.maximum(v.lengths(n, "n"), nt)) / math.log(nt))


def yarn(n: ArrayLike, n_train: float = 512) -> Out:
    """YaRN's attention temperature: ``alpha = 1/t = (0.1 ln s + 1)^2``, ``s = n / n_train``.

    Source: Peng, Quesnelle, Fan and Shippole (2023), "YaRN: Efficient Context Window
    Extension of Large Language Models", arXiv:2309.00071. The paper divides the logits
    by a temperature ``t`` and recommends ``sqrt(1/t) = 0.1 ln s + 1`` (its Eq. 27 as
    corrected in the authors' errata: ``sqrt(1/t)``, not ``sqrt(t)``). It applies
    ``sqrt(1/t)`` to *both* ``q`` and ``k`` (the authors' code multiplies the RoPE cos and
    sin tables by ``0.1 ln s + 1``), so the logits are multiplied by the square,
    ``1/t = (0.1 ln s + 1)^2``. For ``s <= 1`` the factor is 1, as in that code.
    Here ``s = n / n_train``, the factor of each row's own length (dynamic YaRN); YaRN as
    deployed fixes ``s`` at the configured maximum length over the training length.
    """
    ext, _ = _extension(n, n_train)
    return v.scalar_or_array((0.1 * np.log(ext) + 1.0) ** 2)


def ssmax(n: ArrayLike, s: float = SSMAX_S) -> Out:
    """Scalable-Softmax: ``alpha = s ln n``.

    Source: Nakanishi (2025), "Scalable-Softmax Is Superior for Attention",
    arXiv:2501.19399: ``z_i -> n^(s z_i) / sum_j n^(s z_j)``, i.e. the attention logits
    ``z`` are multiplied by ``s log n`` with a learnable scalar ``s`` (one per layer and
    head). Default ``s = 0.43``, the value the paper uses in its Figure 1; it is an
    illustration, not a learned value for any particular model.

    This is the factor as applied, in training and after it. The model learns ``s`` with the
    factor in place, so relative to training at ``n_train`` keys the factor is
    ``ln n / ln n_train`` whatever ``s`` is: that ratio is what :func:`rule_alpha` returns.
    """
    s_ = v.real_above(s, "s")
    return v.scalar_or_array(s_ * np.log(v.lengths(n, "n")))


def longrope(n: ArrayLike, n_train: float = 512) -> Out:
    """LongRoPE / Phi-3 attention scaling: ``alpha = 1 + ln s / ln n_train``, ``s = n / n_train``.

    Source: LongRoPE (Ding et al., 2024, arXiv:2402.13753) as shipped with Phi-3
    (Abdin et al., 2024, arXiv:2404.14219): the released code (Phi-3's
    ``Phi3SuScaledRotaryEmbedding``, and ``_compute_longrope_parameters`` in Hugging Face
    transformers) multiplies the RoPE cos and sin tables by
    ``sqrt(1 + ln s / ln n_train)`` for ``s > 1`` (1 otherwise), which scales both ``q``
    and ``k``, so the logits are multiplied by ``1 + ln s / ln n_train``. The formula is
    taken from that code; the LongRoPE paper itself does not state it. With ``s = n /
    n_train`` this equals ``log_{n_train} n`` for ``n >= n_train``: the same numbers as
    :func:`qwen_logn`.
    """
    ext, nt = _extension(n, n_train)
    return v.scalar_or_array(1.0 + np.log(ext) / math.log(nt))


def chiang_cholak(n: ArrayLike) -> Out:
    """``alpha = ln n``: attention logits scaled by the natural log of the length (Chiang
    and Cholak, 2022, "Overcoming a Theoretical Limitation of Self-Attention", ACL 2022,
    arXiv:2202.12172).

    Source: the authors' released code (github.com/ndnlp/parity, public domain).
    ``ScaledTransformerEncoderLayer`` in ``encoder.py`` passes ``src * math.log(len(src))``
    as the query input of self-attention, the natural log of the number of positions; up to
    the query projection's bias this multiplies every logit by ``ln n``. ``first.py`` trains
    and tests the same model, at ``--train_length`` and ``--test_length``, so the factor is
    applied during training too. This function is the factor as applied; relative to
    training at ``n_train`` keys it is ``ln n / ln n_train`` (what :func:`rule_alpha`
    returns), which no constant factor or change of the log's base alters.
    """
    return v.scalar_or_array(np.log(v.lengths(n, "n")))


#: the grid in ``log alpha`` (``e^-12`` to ``e^4``) on which the solved rules look for their root
#: first: step 1 up to ``e^-2`` (``alpha < 0.14``, where the weights stay near uniform and
#: change slowly with ``log alpha``), then step 1/4
LOG_ALPHA_GRID = np.concatenate([np.arange(-12.0, -2.0, 1.0), np.arange(-2.0, 4.0 + 1e-9, 0.25)])


def _solve(f: Callable[[float], float], on_grid: NDArray[np.float64] | None, name: str) -> float:
    """The smallest ``alpha`` in ``[e^-12, 1e4]`` with ``f(log alpha) = 0``, where ``f < 0``
    at the low end. ``on_grid`` holds ``f`` on :data:`LOG_ALPHA_GRID`, extended by factors
    of 2 up to ``1e4`` while ``f`` still rises; the first sign change brackets the root.
    Without one, the largest value found is refined by bounded minimisation (``f`` may
    rise to a peak and fall again) and must reach 0. ``on_grid=None`` declares that ``f``
    rises strictly: the same first sign change is then found by bisection over the grid's
    indices (6 values of ``f`` instead of 35). Then regula falsi (:mod:`attnscale._roots`)
    to a bracket of width ``1e-14``."""
    f = functools.cache(f)  # the bracket's ends, found by evaluating f, are evaluated again by the root finder
    lo, hi = _bracket_rising(f, name) if on_grid is None else _bracket(f, on_grid, name)
    return math.exp(bracketed_root(f, float(lo), float(hi), xtol=1e-14, rtol=4 * np.finfo(float).eps))


_TOP = math.log(exact.ALPHA_MAX) - 1e-9


def _reached_already(name: str) -> ValueError:
    return ValueError(f"{name}: the target is reached already at alpha = e^-12 (it lies at or beyond the alpha -> 0 limit)")


def _out_of_reach(name: str) -> ValueError:
    return ValueError(f"{name}: the target is out of reach for alpha <= {exact.ALPHA_MAX:g}")


def _bracket(f: Callable[[float], float], on_grid: NDArray[np.float64], name: str) -> tuple[float, float]:
    if not on_grid[0] < 0:
        raise _reached_already(name)
    x, y = list(LOG_ALPHA_GRID), list(on_grid)
    while max(y) < 0 and y[-1] >= y[-2] and x[-1] < _TOP:
        x.append(min(x[-1] + math.log(2.0), _TOP))
        y.append(f(x[-1]))
    xs, ys = np.array(x), np.array(y)
    up = np.flatnonzero(ys >= 0)
    if up.size:
        # on_grid may differ from f in the last bits (a table evaluates its sums in another
        # order): move to the neighbouring cell where f itself changes sign, if it is not this one
        k = int(up[0])
        while f(float(xs[k - 1])) >= 0:
            if k == 1:
                raise _reached_already(name)
            k -= 1
        while f(float(xs[k])) < 0:
            k += 1
            if k == xs.size:
                raise _out_of_reach(name)
        return xs[k - 1], xs[k]
    i = int(np.argmax(ys))
    if i == xs.size - 1:
        raise _out_of_reach(name)
    from scipy.optimize import minimize_scalar  # here, not at the top: importing scipy.optimize is slow

    left, right = xs[max(i - 1, 0)], xs[i + 1]
    peak = minimize_scalar(lambda t: -f(t), bounds=(left, right), method="bounded", options={"xatol": 1e-12})
    if -peak.fun < 0:
        raise ValueError(f"{name}: the target exceeds the largest value, reached near alpha = {math.exp(peak.x):.4g}")
    return left, float(peak.x)


def _bracket_rising(f: Callable[[float], float], name: str) -> tuple[float, float]:
    """:func:`_bracket` for a strictly rising ``f``: bisection over the grid's indices keeps
    ``f < 0`` at ``lo`` and ``f >= 0`` at ``hi``, which for such an ``f`` ends at the first
    sign change on the grid; beyond the grid, the same doubling of ``alpha``."""
    x = LOG_ALPHA_GRID
    if not f(float(x[0])) < 0:
        raise _reached_already(name)
    lo, hi = 0, x.size - 1
    if f(float(x[hi])) >= 0:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if f(float(x[mid])) >= 0:
                hi = mid
            else:
                lo = mid
        return float(x[lo]), float(x[hi])
    last = float(x[-1])
    while last < _TOP:
        nxt = min(last + math.log(2.0), _TOP)
        if f(nxt) >= 0:
            return last, nxt
        last = nxt
    raise _out_of_reach(name)


def _per_length(n: ArrayLike, solve: Callable[[float, NDArray | None], float], table: Callable[[NDArray], NDArray],
                rising: Callable[[NDArray], None] | None = None) -> Out:
    """``solve`` per length, with ``f`` on the grid from one call of ``table`` for all lengths.
    ``rising``, for an ``f`` that rises strictly, checks the lengths as ``table`` would; then,
    for so few lengths that bisection takes fewer values of ``f`` than the grid (at most 5:
    ``5 x 6 < 35``), each length bisects on its own instead."""
    m = v.lengths(n, "n")
    if rising is not None and m.size * math.ceil(math.log2(LOG_ALPHA_GRID.size)) < LOG_ALPHA_GRID.size:
        rising(m.ravel())
        return v.scalar_or_array(np.array([solve(float(x), None) for x in m.ravel()]).reshape(m.shape))
    grid = table(m.ravel()) if m.size else np.empty((LOG_ALPHA_GRID.size, 0))
    return v.scalar_or_array(np.array([solve(float(x), grid[:, j]) for j, x in enumerate(m.ravel())]).reshape(m.shape))


def _target(target: object, default: float, low: float, high: float, what: str) -> float:
    if target is None:
        return default
    t = v.real_number(target, "target")
    if not low < t < high:
        raise ValueError(f"target must lie in ({low:g}, {high:g}) for {what}, got {t!r}")
    return t


def alpha_constant_needle(n: ArrayLike, gap: float = 5.0, target: float | None = None, n_train: float = 512) -> Out:
    """The ``alpha`` at which the needle's exact expected weight
    (:func:`attnscale.exact.needle_weight`: ``n - 1`` normal scores and one at ``gap``)
    equals ``target``; default target: its value at ``n_train`` with ``alpha = 1``.

    The weight is ``1/n`` at ``alpha = 0`` and tends to ``Phi(gap)^(n-1)`` (the chance that
    the needle is the largest score) as ``alpha -> inf``; in between it may peak and
    fall (small ``gap``, large ``n``): the rule is then the root on the rising side.
    Solved per ``n`` for ``log alpha`` (bracketed on a grid, then regula falsi) and
    checked against the target to relative 1e-10 (``RuntimeError`` otherwise);
    ``ValueError`` when the target is out of reach for ``e^-12 <= alpha <= 1e4``.
    """
    g = v.real_number(gap, "gap")
    nt = _greater_than_one(n_train, "n_train")
    w0 = _target(target, float(exact.needle_weight(max(nt, 2.0), 1.0, g)), 0.0, 1.0, "a weight")

    def table(m: NDArray[np.float64]) -> NDArray[np.float64]:
        bad = m < 2
        if bad.any():
            raise ValueError(f"n must be >= 2 for the needle model, got {v._show(m[bad][0])}")
        w = np.asarray(exact.needle_weight(m[None, :], np.exp(LOG_ALPHA_GRID)[:, None], g))
        return np.log(np.maximum(w, 1e-300)) - math.log(w0)

    def solve(m: float, on_grid: NDArray[np.float64] | None) -> float:
        def f(la: float) -> float:
            return math.log(max(float(exact.needle_weight(m, math.exp(la), g)), 1e-300)) - math.log(w0)

        a = _solve(f, on_grid, f"alpha_constant_needle(n={m:g}, target={w0:.6g})")
        if abs(float(exact.needle_weight(m, a, g)) / w0 - 1.0) > RTOL:
            raise RuntimeError(f"alpha_constant_needle did not reach relative tolerance {RTOL:g} at n={m:g}")
        return a

    return _per_length(n, solve, table)


def alpha_constant_entropy(n: ArrayLike, target: float | None = None, n_train: float = 512) -> Out:
    """The ``alpha`` at which the exact expected entropy of ``n`` i.i.d. normal scores
    (:func:`attnscale.exact.expected_entropy`) equals ``target`` (nats); default target:
    its value at ``n_train`` with ``alpha = 1`` (5.7419 nats for ``n_train = 512``).

    ``E H`` falls strictly from ``ln n`` at ``alpha = 0`` towards 0 (for every row,
    ``dH/d alpha = -alpha Var_p(s) < 0``), so a root exists iff ``0 < target < ln n``
    (``ValueError`` otherwise). Solved as :func:`alpha_constant_needle`, checked to relative
    1e-10; for up to 5 lengths the grid is bisected rather than evaluated whole.
    """
    nt = _greater_than_one(n_train, "n_train")
    h0 = _target(target, float(exact.expected_entropy(max(nt, 2.0), 1.0)), 0.0, math.inf, "an entropy in nats")

    def check(m: NDArray[np.float64]) -> None:
        bad = ~((m >= 2) & (np.log(m) > h0))
        if bad.any():
            raise ValueError(f"n must exceed e^target = {math.exp(h0):.6g} (E H < ln n), got {v._show(m[bad][0])}")

    def table(m: NDArray[np.float64]) -> NDArray[np.float64]:
        check(m)
        h = np.asarray(exact.expected_entropy(m[None, :], np.exp(LOG_ALPHA_GRID)[:, None]))
        return math.log(h0) - np.log(np.maximum(h, 1e-300))

    def solve(m: float, on_grid: NDArray[np.float64] | None) -> float:
        def f(la: float) -> float:
            return math.log(h0) - math.log(max(float(exact.expected_entropy(m, math.exp(la))), 1e-300))

        a = _solve(f, on_grid, f"alpha_constant_entropy(n={m:g}, target={h0:.6g})")
        if abs(float(exact.expected_entropy(m, a)) / h0 - 1.0) > RTOL:
            raise RuntimeError(f"alpha_constant_entropy did not reach relative tolerance {RTOL:g} at n={m:g}")
        return a

    return _per_length(n, solve, table, rising=check)


def rule_alpha(rule: str, n: ArrayLike, n_train: float = 512, gap: float = 5.0) -> Out:
    """The factor a rule named in :data:`RULES` applies at length ``n``, relative to training
    at ``n_train`` keys: the multiplier of the training scale ``alpha_train``, 1 at ``n = n_train``
    (with ``alpha_train = 1``, the ``alpha`` of the row). ``log512`` uses ``n_train`` as its base;
    ``ssmax`` and ``chiang_cholak``, which apply their factor in training too, give their
    factor at ``n`` over that at ``n_train``, ``ln n / ln n_train`` (so ``s`` drops out);
    ``constant_needle`` uses ``gap``.

    Examples
    --------
    >>> round(float(rule_alpha("qwen_logn", 2048, n_train=512)), 6)  # ln 2048 / ln 512
    1.222222
    >>> float(rule_alpha("fixed", 2048))
    1.0
    """
    name = v.text(rule, "rule")
    _greater_than_one(n_train, "n_train")
    v.real_number(gap, "gap")
    if name not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {name!r}")
    if name == "fixed":
        return fixed(n)
    if name in ("ssmax", "chiang_cholak"):  # applied in training too: relative to its value at n_train
        applied = {"ssmax": ssmax, "chiang_cholak": chiang_cholak}[name]
        return v.scalar_or_array(np.asarray(applied(n)) / float(applied(n_train)))
    if name == "constant_needle":
        return alpha_constant_needle(n, gap, None, n_train)
    if name == "constant_entropy":
        return alpha_constant_entropy(n, None, n_train)
    return {"log512": log512, "qwen_logn": qwen_logn, "yarn": yarn, "longrope": longrope}[name](n, n_train)


def evaluate(rule: str | ArrayLike, n: ArrayLike, gap: float = 5.0, n_train: float = 512) -> dict[str, NDArray[np.float64]]:
    """Exact statistics of ``softmax(alpha(n) s)`` under both score models.

    ``rule``: a name in :data:`RULES`, or the values of ``alpha`` themselves (``>= 0``,
    broadcast against ``n``). ``n``: lengths, ``2 <= n <= 1e15``. Returns arrays of the
    broadcast shape:

    - ``n``, ``alpha``;
    - model (a), ``n`` i.i.d. N(0, 1) scores: ``entropy`` (``E H``, nats),
      ``entropy_ratio`` (``E H / ln n``), ``half_l1`` (``alpha (1 - E sum p^2)``);
    - model (b), ``n - 1`` N(0, 1) scores and one at ``gap``: ``needle_weight``
      (``E p_needle``), ``needle_entropy``, ``needle_entropy_ratio``, ``needle_half_l1``
      (``alpha (1 - E sum p^2)``, formed as a difference: absolute, not relative,
      accuracy when the needle takes almost all the weight).
    """
    g = v.real_number(gap, "gap")
    _greater_than_one(n_train, "n_train")
    if isinstance(rule, str):
        alpha = v.finite(rule_alpha(rule, n, n_train, g), "alpha")
    else:
        alpha = v.finite(rule, "rule")
        if (alpha < 0).any():
            raise ValueError(f"rule (the values of alpha) must be >= 0, got {v._show(alpha[alpha < 0][0])}")
    m, a = np.broadcast_arrays(v.lengths(n, "n"), alpha)
    m, a = m.astype(float), a.astype(float)
    h = np.asarray(exact.expected_entropy(m, a), dtype=float)
    nh = np.asarray(exact.needle_entropy(m, a, g), dtype=float)
    return {
        "n": m,
        "alpha": a,
        "entropy": h,
        "entropy_ratio": np.asarray(h / np.log(m)),
        "half_l1": np.asarray(exact.expected_half_l1(m, a), dtype=float),
        "needle_weight": np.asarray(exact.needle_weight(m, a, g), dtype=float),
        "needle_entropy": nh,
        "needle_entropy_ratio": np.asarray(nh / np.log(m)),
        "needle_half_l1": np.asarray(a * (1.0 - np.asarray(exact.needle_sum_p2(m, a, g), dtype=float))),
    }
