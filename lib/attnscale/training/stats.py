"""Summaries of training curves and the statistics of the comparisons made
with them: steps to a target, the best learning rate and whether it sits at
the edge of its grid, how the tuned rate scales with alpha, paired tests of
two arms over common-random-number seeds, correlations within strata, and
multiple-comparison adjustment."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import binomtest, rankdata, spearmanr

from .. import _validate as v

__all__ = [
    "steps_to_target",
    "best_lr_index",
    "best_rates",
    "lr_exponent",
    "mean_interval",
    "at_grid_edge",
    "final_loss_summary",
    "PairedComparison",
    "paired_comparison",
    "StratifiedCorrelation",
    "within_strata_correlation",
    "holm",
]


def steps_to_target(step: ArrayLike, accuracy: ArrayLike, target: float) -> NDArray[np.float64]:
    """The first recorded step at which ``accuracy`` (last axis: evaluations)
    reaches ``target``; ``inf`` where it never does."""
    step = v.finite(step, "step")
    acc = v.finite(accuracy, "accuracy")
    target = v.real_number(target, "target")
    if step.ndim != 1 or acc.shape[-1:] != step.shape:
        raise ValueError(f"accuracy must end in an axis of len(step) = {step.size}, got shape {acc.shape}")
    if not 0 < target <= 1:
        raise ValueError(f"target must be in (0, 1], got {target}")
    hit = acc >= target
    first = np.argmax(hit, axis=-1)
    return np.where(hit.any(axis=-1), step[first], np.inf)


def best_lr_index(loss: ArrayLike) -> NDArray[np.intp]:
    """For held-out losses of shape (alphas, lrs, seeds, ...), e.g. curves
    (alphas, lrs, seeds, evals): per scale, the learning rate with the smallest
    mean over seeds and evaluations, i.e. the smallest area under the loss
    curve, which rewards both speed and final level."""
    loss = v.finite(loss, "loss")
    if loss.ndim < 3:
        raise ValueError(f"loss must have shape (alphas, lrs, seeds, ...), got {loss.shape}")
    return np.argmin(loss.mean(axis=tuple(range(2, loss.ndim))), axis=1)


def best_rates(cell: dict) -> NDArray[np.float64]:
    """Each scale's best learning rate in a stored cell: ``lrs[a, best_lr[a]]`` where each
    scale has its own row of rates (``lrs`` of shape (scales, rates)), ``lrs[best_lr[a]]``
    where they share one grid."""
    cell = v.mapping(cell, "cell", ("lrs", "best_lr"))
    lrs = v.positive(cell["lrs"], "cell['lrs']")
    best = np.asarray(cell["best_lr"])
    rates = lrs.shape[-1] if lrs.ndim else 0
    if (lrs.ndim not in (1, 2) or best.ndim != 1 or not np.issubdtype(best.dtype, np.integer) or (best < 0).any() or (best >= rates).any()
            or (lrs.ndim == 2 and lrs.shape[0] != best.size)):
        raise ValueError(f"cell['best_lr'] must hold one index into each scale's rates (0 to {rates - 1}), got {best.tolist()} for rates of shape {lrs.shape}")
    return lrs[np.arange(best.size), best] if lrs.ndim == 2 else lrs[best]


def lr_exponent(cells: list[dict]) -> tuple[float, list[float]]:
    """How the tuned learning rate scales with alpha: the least-squares slope
    of ``log(best lr)`` against ``log(alpha)`` in each cell (as stored by
    :func:`run_config`), and pooled over the cells with each one centred on its
    own means. Returns ``(pooled, per_cell)``."""
    if not isinstance(cells, list):
        raise TypeError(f"cells must be a list of stored cells, got {type(cells).__name__}")
    if not cells:
        raise ValueError("cells must hold at least one stored cell")
    xs, ys, per_cell = [], [], []
    for c in cells:
        c = v.mapping(c, "cells entry", ("alphas", "lrs", "best_lr"))
        x = np.log(v.positive(c["alphas"], "cells entry's alphas"))
        y = np.log(best_rates(c))
        if x.shape != y.shape:
            raise ValueError(f"cells entry's alphas must be one per best rate ({y.size}), got shape {x.shape}")
        if x.size < 2 or np.ptp(x) == 0:
            raise ValueError("cells: each cell must hold at least two different alphas")
        x, y = x - x.mean(), y - y.mean()
        per_cell.append(float(x @ y / (x @ x)))
        xs.append(x)
        ys.append(y)
    x, y = np.concatenate(xs), np.concatenate(ys)
    return float(x @ y / (x @ x)), per_cell


def mean_interval(values: ArrayLike, level: float = 0.95) -> tuple[float, float, float]:
    """The mean of a few measurements (e.g. one exponent per cell) and its two-sided
    Student-t interval at ``level``: ``(mean, low, high)``. Needs at least two values."""
    from scipy.stats import t as student

    x = v.finite(values, "values").ravel()
    if x.size < 2:
        raise ValueError(f"values must hold at least two measurements, got {x.size}")
    level = v.real_number(level, "level")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    mean = float(x.mean())
    half = float(student.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return mean, mean - half, mean + half


def at_grid_edge(best_lr: ArrayLike, rates: int) -> NDArray[np.bool_]:
    """True where a best learning-rate index (``best_lr``, any shape) is the
    first or the last of a grid of ``rates`` rates: there the optimum may lie
    outside the grid, so the best rate is unknown, only bounded on one side."""
    rates = v.integer_at_least(rates, "rates", 2)
    idx = v.finite(best_lr, "best_lr")
    if np.any(idx != np.round(idx)) or np.any(idx < 0) or np.any(idx >= rates):
        raise ValueError(f"best_lr must hold integer indices in [0, {rates - 1}], got {v._show(idx)}")
    return (idx == 0) | (idx == rates - 1)


def final_loss_summary(final_loss: ArrayLike) -> dict[str, NDArray[np.float64]]:
    """Over the last axis (seeds) of final held-out losses: ``mean``, ``std``
    (with ``ddof = 1``), ``median``, ``min`` and ``max``, each of the shape of
    the remaining axes."""
    loss = v.finite(final_loss, "final_loss")
    if loss.ndim == 0 or loss.shape[-1] < 2:
        raise ValueError(f"final_loss must end in an axis of at least 2 seeds, got shape {loss.shape}")
    if np.any(loss < 0):
        raise ValueError(f"final_loss must be >= 0, got {v._show(loss[loss < 0][0])}")
    return {"mean": loss.mean(axis=-1), "std": loss.std(axis=-1, ddof=1), "median": np.median(loss, axis=-1),
            "min": loss.min(axis=-1), "max": loss.max(axis=-1)}


def _measurements(value: ArrayLike, name: str) -> NDArray[np.float64]:
    """A non-empty float array with no NaN and no -inf (+inf means 'never')."""
    arr = v.as_float_array(value, name)
    if arr.size == 0:
        raise ValueError(f"{name} must hold at least one value, got shape {arr.shape}")
    bad = np.isnan(arr) | (arr == -np.inf)
    if bad.any():
        raise ValueError(f"{name} must hold numbers or +inf (never reached), got {v._show(arr[bad][0])} in {v._show(arr)}")
    return arr


def _strata(strata: ArrayLike, size: int, name: str = "strata") -> NDArray[np.intp]:
    """Integer codes 0..k-1 of one stratum label per unit."""
    if strata is None or isinstance(strata, (str, bytes)):
        raise TypeError(f"{name} must be an array of labels, one per unit, got {strata!r}")
    labels = np.asarray(strata)
    if labels.dtype == object or (labels.dtype.kind == "f" and np.isnan(labels).any()):
        raise TypeError(f"{name} must hold numbers or strings (not NaN or objects), got {v._show(labels) if labels.dtype != object else 'objects'}")
    if labels.size != size:
        raise ValueError(f"{name} must hold one label per unit ({size}), got {labels.size}")
    return np.unique(labels.ravel(), return_inverse=True)[1].astype(np.intp)


def _level(level: object) -> float:
    level = v.real_number(level, "level")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return level


def _median_rows(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """The median of each row, where the values may be +-inf: the mean of the
    two middle order statistics for an even count, and 0 where those are -inf
    and +inf (no finite value in between to prefer)."""
    m = x.shape[-1]
    lo, hi = (m - 1) // 2, m // 2
    part = np.partition(x, (lo, hi), axis=-1)
    a, b = part[..., lo], part[..., hi]
    with np.errstate(invalid="ignore"):
        mid = np.where(a == b, a, 0.5 * a + 0.5 * b)
    return np.where(np.isinf(a) & np.isinf(b) & (a != b), 0.0, mid)


@dataclass(frozen=True)
class PairedComparison:
    """Two arms compared pair by pair (see :func:`paired_comparison`)."""

    pairs: int
    later: int
    earlier: int
    tied: int
    p_value: float
    median_difference: float
    ci: tuple[float, float]
    prob_later: float
    prob_later_ci: tuple[float, float]
    level: float


def paired_comparison(
    a: ArrayLike,
    b: ArrayLike,
    *,
    resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
) -> PairedComparison:
    """Arm ``a`` against arm ``b`` over paired units (the same seed: shared
    initial weights and batches), e.g. steps to a target, ``+inf`` for never.

    With ``D_i = a_i - b_i`` (``D_i = 0`` where ``a_i = b_i``, both never
    included): the counts ``later`` (``D > 0``), ``earlier`` (``D < 0``) and
    ``tied``; the exact two-sided sign test of ``P(D > 0) = P(D < 0)`` on the
    untied pairs, ``p = binomtest(later, later + earlier, 1/2)`` (1 when every
    pair is tied); the median of ``D`` (``+-inf`` allowed: a never reached
    against a finite step); the effect size
    ``prob_later = P(D > 0) + P(D = 0)/2``, the probability that ``a`` is
    later than ``b`` in a random pair with ties counted as half (1/2: no
    effect); and percentile bootstrap intervals at ``level`` for the last two
    from ``resamples`` resamples of the pairs, drawn with
    ``np.random.default_rng(seed)``. The pairs are resampled as one sample,
    not within strata such as cells: with a handful of pairs per stratum a
    stratified bootstrap of a median gives intervals far too narrow."""
    a = _measurements(a, "a")
    b = _measurements(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape (one value per pair), got {a.shape} and {b.shape}")
    resamples = v.integer_at_least(resamples, "resamples", 100)
    seed = v.integer_at_least(seed, "seed", 0)
    level = _level(level)
    a, b = a.ravel(), b.ravel()
    with np.errstate(invalid="ignore"):
        diff = np.where(a == b, 0.0, a - b)
    later, earlier = int(np.sum(diff > 0)), int(np.sum(diff < 0))
    tied = a.size - later - earlier
    p_value = float(binomtest(later, later + earlier, 0.5).pvalue) if later + earlier else 1.0
    score = (diff > 0) + 0.5 * (diff == 0)
    idx = np.random.default_rng(seed).integers(0, a.size, size=(resamples, a.size))
    q = ((1 - level) / 2, (1 + level) / 2)
    boot_median = _median_rows(diff[idx])
    boot_prob = score[idx].mean(axis=1)
    lo, hi = np.quantile(boot_median, q, method="inverted_cdf")
    plo, phi = np.quantile(boot_prob, q, method="inverted_cdf")
    return PairedComparison(pairs=int(a.size), later=later, earlier=earlier, tied=tied, p_value=p_value,
                            median_difference=float(_median_rows(diff)), ci=(float(lo), float(hi)),
                            prob_later=float(score.mean()), prob_later_ci=(float(plo), float(phi)), level=level)


@dataclass(frozen=True)
class StratifiedCorrelation:
    """Rank correlation pooled over strata and within them (see :func:`within_strata_correlation`)."""

    pooled: float
    stratified: float
    p_value: float
    per_stratum: tuple[float, ...]
    median: float
    undefined: int
    units: int


def within_strata_correlation(
    x: ArrayLike,
    y: ArrayLike,
    strata: ArrayLike,
    *,
    permutations: int = 10_000,
    seed: int = 0,
) -> StratifiedCorrelation:
    """The rank correlation of ``x`` with ``y`` (one value each per unit, e.g.
    per seed and scale; ``+inf`` allowed, it ranks last) with the strata held
    fixed, beside the pooled one that ignores them.

    ``pooled`` is Spearman's rho over all units. Within stratum ``k`` the
    units are ranked (average ranks for ties) and the ranks centred,
    ``u = rank_k(x) - mean``, ``w = rank_k(y) - mean``; ``stratified`` is
    ``sum u w / sqrt(sum u^2 sum w^2)`` over all units, Spearman's rho with the
    strata's own ranks, over the strata where both vary (a stratum whose
    ``x`` or ``y`` is constant, e.g. all tied at the resolution of a
    measurement, has no ranks to compare and is left out). ``p_value`` is two-sided, from ``permutations`` permutations of
    ``y`` within each stratum (``np.random.default_rng(seed)``),
    ``(1 + #{|r_perm| >= |r|}) / (1 + permutations)``. ``per_stratum`` holds
    Spearman's rho of every stratum where it is defined, ``median`` their
    median and ``undefined`` how many strata had none (fewer than 2 units or a
    constant ``x`` or ``y``)."""
    x = _measurements(x, "x").ravel()
    y = _measurements(y, "y").ravel()
    if x.size != y.size:
        raise ValueError(f"x and y must hold one value per unit each, got {x.size} and {y.size}")
    if x.size < 3:
        raise ValueError(f"x and y must hold at least 3 units, got {x.size}")
    codes = _strata(strata, x.size)
    permutations = v.integer_at_least(permutations, "permutations", 100)
    seed = v.integer_at_least(seed, "seed", 0)
    if np.ptp(rankdata(x)) == 0 or np.ptp(rankdata(y)) == 0:
        raise ValueError("x and y must each take at least two different values")
    pooled = float(spearmanr(x, y).statistic)
    order = np.argsort(codes, kind="stable")
    x, y, codes = x[order], y[order], codes[order]
    u, w = np.zeros_like(x), np.zeros_like(y)
    per_stratum, undefined = [], 0
    for k in np.unique(codes):
        members = codes == k
        rx, ry = rankdata(x[members]), rankdata(y[members])
        if np.ptp(rx) == 0 or np.ptp(ry) == 0:  # also a stratum of one unit
            undefined += 1
            continue
        u[members], w[members] = rx - rx.mean(), ry - ry.mean()
        per_stratum.append(float(np.corrcoef(rx, ry)[0, 1]))
    scale = np.sqrt((u @ u) * (w @ w))
    if scale == 0 or not per_stratum:
        raise ValueError("x and y: no stratum has both varying, so no within-stratum correlation is defined")
    stratified = float(u @ w / scale)
    # permutations within strata: the units are sorted by stratum, so sorting
    # random keys offset by the stratum code permutes each stratum's block
    rng = np.random.default_rng(seed)
    keys = rng.random((permutations, x.size)) + 2.0 * codes
    perm = np.argsort(keys, axis=1)
    null = (w[perm] @ u) / scale
    p_value = float((1 + np.sum(np.abs(null) >= abs(stratified) - 1e-12)) / (1 + permutations))
    return StratifiedCorrelation(pooled=pooled, stratified=stratified, p_value=p_value, per_stratum=tuple(per_stratum),
                                 median=float(np.median(per_stratum)), undefined=undefined, units=int(x.size))


def holm(p_values: ArrayLike) -> NDArray[np.float64]:
    """Holm's step-down adjustment of ``m`` p-values for multiple comparisons:
    with the p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted value of
    ``p_(i)`` is ``min(1, max_{j <= i} (m - j + 1) p_(j))``; rejecting where it is
    at most ``a`` keeps the family-wise error rate at most ``a``. Returned in the
    input order and shape."""
    p = v.finite(p_values, "p_values")
    if p.size == 0:
        raise ValueError("p_values must hold at least one p-value")
    if np.any((p < 0) | (p > 1)):
        raise ValueError(f"p_values must be in [0, 1], got {v._show(p[(p < 0) | (p > 1)][0])}")
    flat = p.ravel()
    m = flat.size
    order = np.argsort(flat, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * flat[order]))
    out = np.empty(m)
    out[order] = stepped
    return out.reshape(p.shape)
