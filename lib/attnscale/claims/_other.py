"""Recomputations of tables, arithmetic, published numbers, the largest-entry optimum, the Part IV sweep and the cost of attention."""

from __future__ import annotations

import numpy as np

from ..montecarlo import typical_optimum_normal
from ..softmax import jacobian_max_entry, softmax
from ._registry import inputs, refuted, register


@register
def log_n_values(rec: dict) -> list[float]:
    """log n by mpmath at each n."""
    import mpmath as mp

    return [float(mp.log(n)) for n in inputs(rec)["n"]]


@register
def relative_error_columns(rec: dict) -> list[float]:
    """The 'error' column recomputed from the source's own two columns, in percent."""
    theo, exp = np.array(inputs(rec)["theoretical"]), np.array(inputs(rec)["experimental"])
    return (100 * (exp - theo) / theo).tolist()


@register
def rate_example(rec: dict) -> float:
    """eta_old * alpha_old / alpha_new for the source's example (1e-4, 1 -> 2.5)."""
    i = inputs(rec)
    return float(i["eta"] * i["alpha_old"] / i["alpha_new"])


@register
def head_product(rec: dict) -> float:
    """h * d_k, for comparison with the stated d_model."""
    return float(inputs(rec)["h"] * inputs(rec)["d_k"])


@register
def published_values(rec: dict) -> list[float]:
    """The numbers the cited paper publishes (the record's ``published`` entry, with its source),
    compared with what the note says it publishes."""
    return [float(x) for x in rec["published"]["values"]]


@register
def max_entry_optimum_largest(rec: dict) -> float:
    """The largest, over n = 16, 64, 256, 1024, typical-row optimum of the largest Jacobian entry
    (the book's one sample, montecarlo.typical_optimum_normal); the claim: at most 5."""
    return max(typical_optimum_normal(n, jacobian_max_entry)[0] for n in (16, 64, 256, 1024))


@register
def lr_rule_in_interval(rec: dict) -> bool:
    """Whether the claimed exponent of eta_best ~ alpha^s lies inside the 95% Student-t
    interval of the six dot cells' fitted exponents (one per cell, from the stored sweep of
    the record's optimiser): the interval is what the coarse lattice of rates allows."""
    from ..training import DATA, load_sweep, lr_exponent, mean_interval

    opt = inputs(rec)["optimizer"]
    cells = [c for c in load_sweep(DATA / f"training_{opt}.json")["cells"] if c["kind"] == "dot"]
    _, low, high = mean_interval(lr_exponent(cells)[1])
    return bool(low <= float(rec["claimed"]) <= high)


@register
def advice_trains_faster(rec: dict) -> bool:
    """Whether the scale ``arm`` (inputs; the note's 2.5) trains faster than ``reference`` (1)
    in the stored sweep of the record's optimiser, dot scores: it reaches the target earlier
    in more seed pairs than later, with the two-sided sign test's p below 0.05 (pairs pooled
    over the six cells, :func:`attnscale.training.compare_arms`)."""
    from ..training import DATA, compare_arms, load_sweep

    opt, arm, ref = inputs(rec)["optimizer"], inputs(rec)["arm"], inputs(rec)["reference"]
    cells = {(c["optimizer"], c["kind"], c["n"], c["d"]): c for c in load_sweep(DATA / f"training_{opt}.json")["cells"]}
    speed = compare_arms(cells, opt, "dot", arm, ref)[0]["speed"]
    assert speed is not None
    return bool(speed.earlier > speed.later and speed.p_value < 0.05)


@register
def attention_cost(rec: dict) -> bool:
    """Cost of standard attention, read off the arrays of an actual run (library softmax) for n, d in
    1, 4, 16, 64, 256: multiply-adds S.size d for S = Q K^T / sqrt(d), four passes over the weights
    for the softmax (max, exponential, sum, division) and O.size n for O = A V; stored entries A, Q, K, V
    and O. resource time: the count over n^2 d lies between 1 and 6 everywhere (so it is of order
    n^2 d). resource memory: the count over n^2 is at most 5 wherever d <= n, and passes 1000
    where d / n = 256 (so O(n^2) needs d = O(n))."""
    rng = np.random.default_rng(84)
    sizes = (1, 4, 16, 64, 256)
    time, memory = {}, {}
    for n in sizes:
        for d in sizes:
            Q, K, V = rng.standard_normal((3, n, d))
            S = Q @ K.T / np.sqrt(d)
            A = softmax(S)
            O = A @ V
            time[n, d] = (S.size * d + 4 * A.size + O.size * n) / (n * n * d)
            memory[n, d] = (A.size + Q.size + K.size + V.size + O.size) / (n * n)
    if inputs(rec)["resource"] == "time":
        return all(1 <= r <= 6 for r in time.values())
    return max(r for (n, d), r in memory.items() if d <= n) <= 5 and max(memory.values()) > 1000


@register
def lm_advice_lower_loss(rec: dict) -> bool:
    """Whether the dot scale ``arm`` (inputs) ends with a lower validation loss than
    ``reference`` (1) in the byte-level language model of chapter 14: the paired t-test over
    the confirmation's fresh seeds, each scale at the rate it chose, with p below 0.05. A
    "wrong" answer also needs the correction the register gives, a significantly higher loss
    (:func:`refuted`)."""
    from ..bytelm import analysis, sweep

    arm, ref = float(inputs(rec)["arm"]), float(inputs(rec)["reference"])
    conf = analysis.confirmation(sweep.load())
    if ref != 1.0:
        raise ValueError(f"record {rec.get('id')!r}: the comparisons are against alpha = 1, got reference {ref}")
    t = analysis.paired_against_one({1.0: conf[1.0], arm: conf[arm]})[arm]
    lower, higher = t["mean"] < 0 and t["p"] < 0.05, t["mean"] > 0 and t["p"] < 0.05
    return lower if lower else refuted(lower, higher, rec)


@register
def lm_rate_rule_in_interval(rec: dict) -> bool:
    """Whether the claimed exponent of eta_best ~ alpha^b lies in the 95% interval of the
    exponent measured in the byte-level language model of chapter 14 (AdamW, the rate grid of
    the seeds that choose the rate; a Student-t interval over those seeds' own slopes)."""
    from ..bytelm import analysis, sweep

    table = analysis.dot_table(sweep.load(), sorted(sweep.SWEEP["alphas"]))
    ex = analysis.rate_exponent(table)
    return bool(ex["low"] <= float(rec["claimed"]) <= ex["high"])
