"""The book's answers for one attention row: ``python -m attnscale recommend --n N --d D``.

:func:`advice` is the book's recommendation for ``n`` keys and head dimension ``d`` (the
same lines as the introduction's box), which ``recommend`` prints first; the rest of this
module gives the scales behind it.

For ``n`` keys and head dimension ``d``, :func:`recommend` gathers the scales the book
derives, each with the chapter that derives it, under the book's model of independent
scores (standard normal for dot-product scores ``q . k / sqrt(d)``; the cosine of two
independent uniform directions in ``R^d`` for cosine scores). Every value is a
multiplier ``alpha`` of the unit-variance (or cosine) scores; ``factor`` is what the raw
logit ``q . k`` (dot) or the cosine (cosine) is multiplied by.

- ``usual``: ``alpha = 1``, the ``1/sqrt(d)`` of dot-product attention (dot scores only);
- ``mean_field``: Su's gradient-maximising scale under the mean-field step
  (:func:`attnscale.optimum.alpha_star_normal` / :func:`~attnscale.optimum.alpha_star_cosine`);
- ``ninety``: the scale at which the *exact* expected gradient
  ``alpha (1 - E sum p^2)`` reaches 90% of its large-``alpha`` limit (the exact expected
  gradient has no maximiser);
- ``freezing``: ``sqrt(2 log n)``, the random-energy-model freezing point (dot scores).

Each entry also carries the exact expected gradient and its share of the limit.
:func:`mean_field_check` says whether the mean field is accurate at its own optimum, and
:func:`length_rules` gives the length-scaling rules of chapter 8 for a model trained on
``n_train`` keys and run on ``n``.
:func:`decoder_share` and :func:`decoder_best_scale` answer the decoder's version of
the question (one scale for every position of a causal decoder) in the mean field.
"""

from __future__ import annotations

import argparse
import math
import textwrap
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import _validate as v
from . import exact
from . import lengthrules
from ._roots import bracketed_root
from .optimum import alpha_star_cosine, alpha_star_normal, collision_cosine, objective_normal

__all__ = ["VALID", "NEEDLE_SCORE", "Advice", "advice", "Scale", "scale_at_share", "decoder_share", "decoder_best_scale", "recommend", "mean_field_check", "length_rules", "report", "main"]

NINETY = 0.9  # the share of the limit that defines the "ninety" scale
#: the mean field counts as valid while its ``E sum p^2`` is within this factor of the exact one, either way
VALID = 1.1
#: the planted key's score in chapter 8's needle model, for :func:`length_rules`
NEEDLE_SCORE = 5.0


@dataclass(frozen=True)
class Scale:
    """One recommended scale: its name, ``alpha``, the factor on the raw logit, the exact
    expected gradient ``alpha (1 - E sum p^2)``, its share of the large-``alpha`` limit, and
    the chapter that derives it."""

    name: str
    alpha: float
    factor: float
    gradient: float
    share: float
    chapter: str


def scale_at_share(n: float, share: float = NINETY, d: int | None = None) -> float:
    """The ``alpha`` at which the exact expected gradient ``alpha (1 - E sum p^2)`` reaches
    ``share`` (in ``(0, 1)``) of its large-``alpha`` limit :func:`attnscale.exact.near_tie_limit`,
    for ``n`` keys with normal (``d=None``) or cosine scores (``d >= 3``). The gradient rises
    monotonically to its limit, so the root is unique; it is bracketed by doubling and
    found by regula falsi (the library's private ``attnscale._roots``) to within ``1e-10``."""
    length = float(v.lengths(n, "n"))
    fraction = v.real_number(share, "share")
    if not 0 < fraction < 1:
        raise ValueError(f"share must lie strictly between 0 and 1, got {fraction!r}")
    law = None if d is None else v.integer_at_least(d, "d", 3)
    limit = float(exact.near_tie_limit(length, law))

    def gap(a: float) -> float:
        return float(exact.expected_half_l1(length, a, law)) / limit - fraction

    hi = 4.0 if law is None else 4.0 * math.sqrt(law)
    while gap(hi) < 0:
        hi *= 2.0
    return bracketed_root(gap, 1e-6, hi, xtol=1e-10, rtol=1e-12)


DECODER_MAX = 10**6  # longest decoder the decoder functions accept (one array entry per position)


def _decoder_length(length: object) -> int:
    T = v.integer_at_least(length, "length", 2)
    if T > DECODER_MAX:
        raise ValueError(f"length must be <= {DECODER_MAX}, got {T}")
    return T


def decoder_share(alpha: float, length: int) -> NDArray[np.float64]:
    """For a causal decoder of maximum length ``T = length`` (position ``n`` attends over
    ``n`` keys, ``n = 2..T``) and one scale ``alpha > 0`` for every position: the share
    of the best mean-field gradient kept at each position,
    ``G(alpha; n) / G(alpha*(n); n)`` with ``G`` :func:`attnscale.optimum.objective_normal`
    (standard normal scores), negative values (the mean field beyond its range)
    counted as 0. Shape ``(T - 1,)``."""
    a = v.real_above(alpha, "alpha")
    return _share(a, *_decoder_positions(_decoder_length(length)))


def _decoder_positions(T: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Positions ``n = 2..T`` and the best mean-field gradient at each, ``G(alpha*(n); n)``."""
    t = np.arange(2, T + 1, dtype=float)
    return t, np.asarray(objective_normal(alpha_star_normal(t), t))


def _share(a: float, t: NDArray[np.float64], best: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.clip(objective_normal(a, t), 0.0, None) / best


def decoder_best_scale(length: int) -> tuple[float, float]:
    """The single scale that keeps the largest mean :func:`decoder_share` over the
    positions of a decoder of maximum length ``length``, and that mean share. For
    ``sqrt(log j) <= alpha <= sqrt(log(j + 1))`` the positions ``n > j`` keep a positive
    mean-field gradient and the others none, so there the mean share is
    ``alpha (A_j - exp(alpha^2) B_j) / (T - 1)``, with ``A_j`` the sum of ``1 / G(alpha*(n); n)``
    and ``B_j`` that of ``1 / (n G(alpha*(n); n))`` over ``n > j``: concave, and largest at
    ``alpha*(A_j / B_j)`` (:func:`~attnscale.optimum.alpha_star_normal`) clipped to the piece.
    The answer is the best of these ``T - 1`` candidates: no search, so no local maximum
    (the mean share has one on many pieces) can be taken for the largest."""
    T = _decoder_length(length)
    t, best_t = _decoder_positions(T)
    inverse = 1.0 / best_t
    A = np.cumsum(inverse[::-1])[::-1]  # over the positions n' >= n, i.e. n' > j = n - 1
    B = np.cumsum((inverse / t)[::-1])[::-1]
    a = np.clip(alpha_star_normal(A / B), np.sqrt(np.log(t - 1.0)), np.sqrt(np.log(t)))
    x = float(a[int(np.argmax(a * (A - np.exp(a * a) * B)))])
    return x, float(_share(x, t, best_t).mean())


@dataclass(frozen=True)
class Advice:
    """One line of the book's recommendation: the situation, what to use there (``alpha``,
    a multiplier of ``q . k / sqrt(d)`` for dot scores and of the cosine for cosine scores,
    NaN where the advice is a rule rather than one number), what the advice rests on, and
    the label of the section that shows the evidence."""

    situation: str
    alpha: float
    use: str
    scope: str
    evidence: str


def advice(n: float, d: int, scores: str = "dot") -> list[Advice]:
    """The book's recommendation for rows of ``n`` keys and head dimension ``d`` (arguments
    as :func:`recommend`): the lines for dot-product and (for ``d >= 3``) cosine scores, the
    one for ``scores`` first, then the lines for a model run on longer rows than it was
    trained on and for queries aligned with keys. The numbers come
    from the library (``alpha_star_cosine`` for cosine scores); the verdicts are the book's:
    the exact theory of chapter 7 and the training experiment of chapter 10.

    Examples
    --------
    >>> first = advice(4096, 128)[0]
    >>> first.situation, first.alpha
    ('dot-product attention', 1.0)
    >>> [a.situation for a in advice(4096, 128, "cosine")][0]
    'cosine (QK-norm) attention'
    """
    length, kind, dim = _arguments(n, d, scores)
    if length > 1e15:
        raise ValueError(f"n must be at most 1e15, the range of the book's exact theory (as recommend), got {length:g}")
    dot = Advice(
        "dot-product attention", 1.0,
        f"alpha = 1, that is q.k / sqrt(d) = q.k x {1 / math.sqrt(dim):.4g}",
        "the exact expected gradient has no maximiser and larger scales saturate rows; with the learning "
        "rate tuned per scale, 2.5/sqrt(d) learned more slowly than 1/sqrt(d) with Adam in a one-layer model, and "
        "every scale above 1 ended with a higher loss in a small byte-level language model; below 1 is safe",
        "obs-training")
    lines = [dot]
    if dim >= 3:  # the cosine of two directions needs d >= 3 for the book's density
        start = float(alpha_star_cosine(length, dim))
        cosine = Advice(
            "cosine (QK-norm) attention", start,
            f"alpha*_cos(n, d) = {start:.3g}, fixed or as the start of a learned alpha0 exp(u), rather than "
            f"sqrt(d) = {math.sqrt(dim):.3g}",
            "with cosine scores the scale bounds every logit; in the one-layer experiment a fixed sqrt(d) left a "
            "loss floor, a learned scale ended above alpha*_cos from every start tried, alpha*_cos was the best "
            "fixed value tried, and learning it from there made no difference found; in a small language model "
            "sqrt(d) was no better than alpha*_cos (the difference was not significant); a raw learned scalar "
            "barely moves under Adam, so a learned scale is stored as alpha0 exp(u)",
            "sec-training-learned")
        lines = [cosine, dot] if kind == "cosine" else [dot, cosine]
    lines.append(Advice(
        "rows longer than in training", math.nan,
        "keep the training scale",
        "it keeps the gradient and entropy / log n; in the one-layer experiment, raising the scale at test time "
        "raised the weight on the right key but also the loss of a model trained at a fixed scale, and no "
        "length rule lowered the loss of a small language model with rotary positions beyond its context",
        "sec-rules-exact"))
    lines.append(Advice(
        "comparing widths (muP), queries aligned with keys", math.nan,
        "q.k / d, that is alpha = 1/sqrt(d)",
        "an aligned key's lead grows like d, and only 1/d keeps it bounded; derived for one aligned key, "
        "not tested in training",
        "sec-aligned-key"))
    return lines


def _arguments(n: float, d: object, scores: object) -> tuple[float, str, int]:
    length = float(v.lengths(n, "n"))
    kind = v.text(scores, "scores")
    if kind not in ("dot", "cosine"):
        raise ValueError(f"scores must be 'dot' or 'cosine', got {kind!r}")
    return length, kind, v.integer_at_least(d, "d", 1 if kind == "dot" else 3)


def recommend(n: float, d: int, scores: str = "dot") -> list[Scale]:
    """The book's scales for a row of ``n`` keys (``2 <= n <= 1e15``) with head dimension
    ``d`` (an integer >= 1 for dot scores, >= 3 for cosine scores), ``scores`` "dot" or
    "cosine". Returns a list of :class:`Scale` (see the module docstring)."""
    length, kind, dim = _arguments(n, d, scores)
    law = None if kind == "dot" else dim
    limit = float(exact.near_tie_limit(length, law))
    to_logit = 1.0 / math.sqrt(dim) if kind == "dot" else 1.0
    picks: list[tuple[str, float, str]] = []
    if kind == "dot":
        picks.append(("usual", 1.0, "ch-dot-products"))
        picks.append(("mean_field", float(alpha_star_normal(length)), "ch-gaussian"))
        picks.append(("freezing", math.sqrt(2.0 * math.log(length)), "ch-beyond-mean-field"))
    else:
        picks.append(("mean_field", float(alpha_star_cosine(length, dim)), "ch-cosine"))
    picks.append(("ninety", scale_at_share(length, NINETY, law), "ch-beyond-mean-field" if kind == "dot" else "ch-cosine"))
    out = []
    for name, a, chapter in picks:
        g = float(exact.expected_half_l1(length, a, law))
        out.append(Scale(name, a, a * to_logit, g, g / limit, chapter))
    return out


def mean_field_check(n: float, d: int, scores: str = "dot") -> dict[str, float]:
    """Whether the mean-field step holds at the mean-field optimum ``alpha*`` for ``n`` keys:
    ``alpha``; ``mean_field``, the mean field's ``E sum p^2`` there (``exp(alpha^2)/n`` for dot
    scores, :func:`~attnscale.optimum.collision_cosine` for cosine scores); ``exact``, the
    quadrature :func:`~attnscale.exact.expected_sum_p2`; ``ratio``, the first over the second;
    ``valid``, 1.0 when the ratio lies within a factor :data:`VALID` either way, else 0.0;
    and, for dot scores only, ``limit``: the smallest ``alpha`` at which the two part by
    that factor (:func:`~attnscale.exact.mean_field_limit`; NaN for cosine scores, where the
    book does not compute it). Arguments as :func:`recommend`."""
    length, kind, dim = _arguments(n, d, scores)
    if kind == "dot":
        a = float(alpha_star_normal(length))
        mean_field = math.exp(a * a) / length
        exact_value = float(exact.expected_sum_p2(length, a))
        limit = float(exact.mean_field_limit(length, VALID))
    else:
        a = float(alpha_star_cosine(length, dim))
        mean_field = float(collision_cosine(a, length, dim))
        exact_value = float(exact.expected_sum_p2(length, a, dim))
        limit = math.nan
    ratio = mean_field / exact_value
    valid = 1.0 if 1.0 / VALID <= ratio <= VALID else 0.0
    return {"alpha": a, "mean_field": mean_field, "exact": exact_value, "ratio": ratio, "valid": valid, "limit": limit}


def _training(n_train: object, alpha_train: object) -> tuple[float, float]:
    """The training length (a real >= 2) and scale (in ``(0, 50]``, the exact theory's range)."""
    trained = v.real_number(n_train, "n_train")
    if not trained >= 2:
        raise ValueError(f"n_train must be at least 2, got {trained!r}")
    a0 = v.real_above(alpha_train, "alpha_train", 0.0)
    if a0 > 50:
        raise ValueError(f"alpha_train must be at most 50 (the exact theory's range), got {a0!r}")
    return trained, a0


def length_rules(n: float, n_train: float = 512, alpha_train: float = 1.0) -> dict[str, float]:
    """Chapter 8's length rules for dot-product (normal) scores: the scale ``alpha`` to use
    on ``n`` keys for a model trained on ``n_train < n`` keys at scale ``alpha_train`` (1 is
    the usual ``1/sqrt(d)``), one per goal. ``fixed``: ``alpha_train`` itself; ``entropy``:
    the scale whose exact expected entropy at ``n`` equals that at training
    (:func:`~attnscale.lengthrules.alpha_constant_entropy`); ``needle``: the scale that keeps
    the exact expected weight of one key at score :data:`NEEDLE_SCORE`
    (:func:`~attnscale.lengthrules.alpha_constant_needle`; NaN when no scale reaches the
    training weight at this ``n``); ``log_ratio``: ``alpha_train ln n / ln n_train``, which is
    Su's rule and, relative to training, Qwen's, LongRoPE's, Scalable-Softmax's and Chiang
    and Cholak's (the last two apply their factor in training too); ``yarn``: dynamic YaRN,
    ``alpha_train (0.1 ln(n / n_train) + 1)^2``. What each keeps and loses is in :func:`report`."""
    length = float(v.lengths(n, "n"))
    trained, a0 = _training(n_train, alpha_train)
    if not length > trained:
        raise ValueError(f"n must exceed n_train for a length rule, got n = {length:g} and n_train = {trained:g}")
    h0 = float(exact.expected_entropy(trained, a0))
    try:
        w0 = float(exact.needle_weight(trained, a0, NEEDLE_SCORE))
        needle = float(lengthrules.alpha_constant_needle(length, NEEDLE_SCORE, w0, trained))
    except ValueError:  # the needle's weight peaks below its training value: no scale holds it
        needle = math.nan
    return {
        "fixed": a0,
        "entropy": float(lengthrules.alpha_constant_entropy(length, h0, trained)),
        "needle": needle,
        "log_ratio": a0 * float(lengthrules.log512(length, trained)),
        "yarn": a0 * float(lengthrules.yarn(length, trained)),
    }


_LABELS = {
    "usual": "usual scale (1/sqrt(d))",
    "mean_field": "mean-field gradient optimum",
    "freezing": "freezing point sqrt(2 log n)",
    "ninety": "90% of the exact gradient limit",
}


def report(n: float, d: int, scores: str = "dot", n_train: float = 512, alpha_train: float = 1.0) -> str:
    """The text that ``python -m attnscale recommend`` prints: the scales of :func:`recommend`,
    the mean field's validity at its optimum (:func:`mean_field_check`) and, for dot scores
    and ``n > n_train``, the length rules of :func:`length_rules` with what each keeps: the
    exact expected entropy, its ratio to ``log n``, the gradient ``alpha (1 - E sum p^2)`` and
    a planted key's weight, at training and at ``n``."""
    rows = recommend(n, d, scores)
    trained, a0 = _training(n_train, alpha_train)
    lines = _advice_lines(n, d, scores) + [""] + _scale_lines(rows, n, d, scores) + _mean_field_lines(n, d, scores)
    lines += _length_scaling_lines(n, scores, trained, a0)
    return "\n".join(lines)


def _advice_lines(n: float, d: int, scores: str) -> list[str]:
    """The recommendation of :func:`advice`, one wrapped bullet per situation."""
    lines = [f"Recommendation for n = {float(n):g} keys, d = {d} (the book's introduction):"]
    for item in advice(n, d, scores):
        lines.extend(textwrap.wrap(f"{item.situation}: {item.use}. Why: {item.scope} ({item.evidence}).",
                                   width=88, initial_indent="* ", subsequent_indent="  ", break_on_hyphens=False))
    return lines


def _scale_lines(rows: list[Scale], n: float, d: int, scores: str) -> list[str]:
    """The table of the scales of :func:`recommend` and the note under it."""
    kind = "dot-product scores q.k/sqrt(d)" if scores == "dot" else "cosine scores cos(q, k)"
    raw = "q.k" if scores == "dot" else "cos(q, k)"
    lines = [
        "The scales behind it:",
        f"n = {float(n):g} keys, d = {d}, {kind}; model: independent scores "
        + ("(standard normal)" if scores == "dot" else f"(uniform directions in R^{d})"),
        f"{'':34s}{'alpha':>9s} {'x ' + raw:>12s} {'E[alpha(1 - sum p^2)]':>22s} {'of limit':>9s}  derived in",
    ]
    for s in rows:
        lines.append(f"{_LABELS[s.name]:34s}{s.alpha:9.3f} {s.factor:12.4g} {s.gradient:22.3f} {s.share:9.1%}  {s.chapter}")
    note = (
        "The exact expected gradient rises with alpha to a limit and has no maximiser; larger "
        "scales saturate more rows. In the book's training experiment (ch-training), with the "
        "learning rate tuned per scale, scales above the usual one did not reach the target sooner."
    )
    return lines + textwrap.wrap(note, width=88)


def _mean_field_lines(n: float, d: int, scores: str) -> list[str]:
    """Whether the mean field holds at its optimum (:func:`mean_field_check`), in words."""
    check = mean_field_check(n, d, scores)
    formula = "e^(alpha^2)/n" if scores == "dot" else "the mean field's sum p^2"
    verdict = "so the mean field is valid there" if check["valid"] else "so the mean field is not valid there"
    text = (
        f"Mean field (ch-beyond-mean-field): at its optimum alpha = {check['alpha']:.3f}, {formula} = "
        f"{check['mean_field']:.4g} against the exact E sum p^2 = {check['exact']:.4g}, a ratio of "
        f"{check['ratio']:.3g}, {verdict} (a ratio between 1/{VALID:g} and {VALID:g} counts as valid)."
    )
    if scores == "dot":
        text += f" At this n it stays within a factor {VALID:g} up to alpha = {check['limit']:.3f}."
    return textwrap.wrap(text, width=88)


def _length_scaling_lines(n: float, scores: str, trained: float, a0: float) -> list[str]:
    """The table of :func:`length_rules` with what each rule keeps, or why there is none."""
    if scores != "dot":
        text = "Length scaling: chapter 8's rules are derived for normal scores; the book does not compute them for cosine scores."
        return textwrap.wrap(text, width=88)
    if not float(n) > trained:
        text = f"Length scaling: n does not exceed the training length n0 = {trained:g}, so no rule applies (set n_train, --n-train)."
        return textwrap.wrap(text, width=88)
    rules = length_rules(n, trained, a0)
    lines = [f"Length scaling (ch-entropy): trained on n0 = {trained:g} keys at alpha_train = {a0:g}, run on n = {float(n):g} keys;",
             f"exact expectations over independent normal scores, a planted key at score {NEEDLE_SCORE:g}:",
             f"{'':34s}{'alpha':>9s} {'E H':>8s} {'E H/log n':>10s} {'gradient':>9s} {'key weight':>11s}"]
    names = [("at training (n0, alpha_train)", None), ("fixed scale", "fixed"), ("constant entropy", "entropy"),
             ("constant key weight", "needle"), ("log ratio alpha_train ln n / ln n0", "log_ratio"),
             ("dynamic YaRN", "yarn")]
    alphas = np.array([a0 if key is None else rules[key] for _, key in names])
    lengths = np.array([trained if key is None else float(n) for _, key in names])
    ok = ~np.isnan(alphas)
    e = lengthrules.evaluate(alphas[ok], lengths[ok], gap=NEEDLE_SCORE)  # one call for every row with a scale
    j = 0
    for (label, _), a, found in zip(names, alphas, ok):
        if not found:
            lines.append(f"{label:34s}{'none':>9s}  (no scale keeps the key's weight at this n)")
            continue
        lines.append(f"{label:34s}{a:9.3f} {float(e['entropy'][j]):8.3f} {float(e['entropy_ratio'][j]):10.3f} "
                     f"{float(e['half_l1'][j]):9.3f} {float(e['needle_weight'][j]):11.4g}")
        j += 1
    text = ("The log ratio is Su's rule and, relative to training, also Qwen's, LongRoPE's, Scalable-Softmax's "
            "and Chiang and Cholak's; YaRN's s is read as n / n0.")
    return lines + textwrap.wrap(text, width=88, break_on_hyphens=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnscale", description="The Scale of Attention: the book's answers.")
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("recommend", help="the scales the book derives for n keys and head dimension d")
    rec.add_argument("--n", type=float, required=True, help="number of keys in a row")
    rec.add_argument("--d", type=int, required=True, help="head dimension")
    rec.add_argument("--scores", choices=("dot", "cosine"), default="dot", help="dot-product (default) or cosine scores")
    rec.add_argument("--n-train", type=float, default=512.0, help="training length for the length rules (default 512)")
    rec.add_argument("--alpha-train", type=float, default=1.0, help="scale used in training, as a multiple of 1/sqrt(d) (default 1)")
    args = parser.parse_args(argv)
    try:
        print(report(args.n, args.d, args.scores, args.n_train, args.alpha_train))
    except (ValueError, TypeError) as err:
        parser.error(str(err))
    return 0
