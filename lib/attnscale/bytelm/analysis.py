"""Summaries of the stored byte-model sweep for the "Real attention" chapter: the tuned comparisons of the
scales (question 1), the rate-scale exponent (2), trained rows against the independent-score
theory (3) and the book's landmarks (4), the cosine arm (5) and longer rows (6)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats as sps

from ..training import stats as st

__all__ = ["dot_table", "confirmation", "paired_against_one", "rate_exponent", "row_table", "pooled_rows", "landmarks", "cosine_table",
           "longer_table", "max_scale_move"]


def _members(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for g in groups for m in g["members"]]


def dot_table(sweep: dict[str, dict[str, Any]], alphas: list[float]) -> dict[float, dict[str, Any]]:
    """Per scale: the rates, the validation bits per byte (rates x seeds), the best rate (mean
    over seeds), whether it sits at an edge of the grid, and the best-rate values per seed."""
    out = {}
    for a in alphas:
        groups = [g for name, g in sweep.items() if name == f"dot_a{a:g}" or name.startswith(f"dot_a{a:g}_slide")]
        if not groups:
            continue
        ms = _members(groups)
        rates = sorted({m["rate"] for m in ms})
        seeds = sorted({m["seed"] for m in ms})
        bpb = np.array([[next(m["val_bpb"] for m in ms if m["rate"] == r and m["seed"] == s) for s in seeds] for r in rates])
        k = int(np.argmin(bpb.mean(1)))
        out[a] = {"rates": rates, "seeds": seeds, "bpb": bpb, "best_index": k, "best_rate": rates[k],
                  "edge": bool(st.at_grid_edge(k, len(rates))), "best": bpb[k],
                  "members": [next(m for m in ms if m["rate"] == rates[k] and m["seed"] == s) for s in seeds]}
    return out


def confirmation(sweep: dict[str, dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """The confirmation groups (``*_confirm``, fresh seeds at rates chosen on the first
    seeds): per dot scale (a float) and per cosine setting (``(mode, label)``), the rate,
    the seeds and the validation bits per byte per seed (``best``, in seed order), in the
    shape :func:`paired_against_one` reads."""
    out: dict[Any, dict[str, Any]] = {}
    for name, g in sweep.items():
        if not name.endswith("_confirm"):
            continue
        for label in dict.fromkeys(m["label"] for m in g["members"]):
            ms = sorted((m for m in g["members"] if m["label"] == label), key=lambda m: m["seed"])
            key = float(label) if g["kind"] == "dot" else (g["mode"], label)
            out[key] = {"rate": ms[0]["rate"], "scale": ms[0]["scale"], "seeds": [m["seed"] for m in ms],
                        "best": np.array([m["val_bpb"] for m in ms])}
    return out


def paired_against_one(table: dict[Any, dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Each entry of ``table`` (a scale or setting, at its best rate) against dot scores at
    alpha = 1 at its best rate, paired by seed: the differences in bits per byte, their mean
    with a Student-t 95% interval and the paired t-test's p-value (Holm-adjusted over the
    entries), and the library's sign test."""
    if 1.0 not in table:
        raise ValueError(f"table must hold the reference alpha = 1, got the entries {sorted(map(str, table))}")
    ref = table[1.0]["best"]
    out: dict[Any, dict[str, Any]] = {}
    for a, row in table.items():
        if a == 1.0:
            continue
        if "seeds" in row and "seeds" in table[1.0] and list(row["seeds"]) != list(table[1.0]["seeds"]):
            raise ValueError(f"table entry {a!r} has seeds {row['seeds']}, not those of alpha = 1 ({table[1.0]['seeds']}): no pairs")
        diff = row["best"] - ref
        mean, lo, hi = st.mean_interval(diff)
        p = float(sps.ttest_rel(row["best"], ref).pvalue) if np.ptp(diff) > 0 else (1.0 if mean == 0 else 0.0)
        out[a] = {"diff": diff, "mean": mean, "low": lo, "high": hi, "p": p, "sign": st.paired_comparison(row["best"], ref)}
    if out:
        adj = st.holm([out[a]["p"] for a in out])
        for a, q in zip(out, adj):
            out[a]["p_holm"] = float(q)
    return out


def _vertex(rates: list[float], means: np.ndarray) -> float:
    """The best rate on a log scale: the vertex of the parabola through the best grid rate and
    its two neighbours (the grid rate itself at an edge)."""
    k = int(np.argmin(means))
    x = np.log(rates)
    if k == 0 or k == len(rates) - 1:
        return float(rates[k])
    c = np.polyfit(x[k - 1:k + 2], means[k - 1:k + 2], 2)
    if c[0] <= 0:
        return float(rates[k])
    return float(np.exp(np.clip(-c[1] / (2 * c[0]), x[k - 1], x[k + 1])))


def rate_exponent(table: dict[float, dict[str, Any]]) -> dict[str, Any]:
    """The slope b of log(best rate) against log(alpha), best rate ~ alpha^b: from the grid's
    best rates and from the interpolated ones (parabola vertex, seeds averaged), with a 95%
    Student-t interval over the seeds' own slopes (each seed's vertex slope; ``seeds - 1``
    degrees of freedom), since a bootstrap over three seeds has only ten distinct resamples.
    Every loss must be finite (a diverged run is refused, not ranked)."""
    alphas = sorted(table)
    if len(alphas) < 2:
        raise ValueError(f"table must hold at least two scales, got {len(alphas)}")
    for a in alphas:
        if not np.all(np.isfinite(table[a]["bpb"])):
            raise ValueError(f"table entry {a!r} holds a non-finite loss: refuse a diverged run rather than rank it")
    x = np.log(alphas)

    def slope(y: np.ndarray) -> float:
        xc = x - x.mean()
        return float(xc @ (y - y.mean()) / (xc @ xc))

    grid = slope(np.log([table[a]["best_rate"] for a in alphas]))
    vert = slope(np.log([_vertex(table[a]["rates"], table[a]["bpb"].mean(1)) for a in alphas]))
    nseeds = len(table[alphas[0]]["seeds"])
    per_seed = np.array([slope(np.log([_vertex(table[a]["rates"], table[a]["bpb"][:, k]) for a in alphas])) for k in range(nseeds)])
    _, lo, hi = st.mean_interval(per_seed)
    return {"grid": grid, "vertex": vert, "per_seed": per_seed.tolist(), "low": float(lo), "high": float(hi)}


def row_table(member: dict[str, Any], which: str, predict: bool = True) -> dict[int, dict[str, np.ndarray]]:
    """One run's row statistics (``which``: "rows_init", "rows_final" or "rows_256"), per n as
    arrays (L, H, B), with (``predict``) the exact independent-score predictions at each
    row's own spread, ``pred_sum_p2`` and ``pred_entropy`` (entropy / ln n)."""
    from .. import exact

    out = {}
    for n_text, s in member[which].items():
        n = int(n_text)
        sd = np.asarray(s["sd"], dtype=float)
        row = {"sd": sd, "sum_p2": np.asarray(s["sum_p2"], float), "entropy": np.asarray(s["entropy"], float),
               "kurtosis": np.asarray(s["kurtosis"], float), "gap": np.asarray(s["gap"], float)}
        if predict:
            row["pred_sum_p2"] = np.asarray(exact.expected_sum_p2(n, np.maximum(sd, 1e-9)), dtype=float)
            row["pred_entropy"] = np.asarray(exact.expected_entropy(n, np.maximum(sd, 1e-9)), dtype=float) / math.log(n)
        out[n] = row
    return out


def pooled_rows(members: list[dict[str, Any]], which: str, ns: list[int], predict: bool = True) -> dict[int, dict[str, np.ndarray]]:
    """:func:`row_table` of several runs pooled: per n in ``ns``, each statistic (and, with
    ``predict``, each prediction) as one flat array over runs, layers, heads and windows."""
    tables = [row_table(m, which, predict) for m in members]
    out = {}
    for n in ns:
        parts = [t[n] for t in tables]
        out[n] = {k: np.concatenate([p[k].ravel() for p in parts]) for k in parts[0]}
    return out


def normal_tail(n: int, rows: int = 20000, seed: int = 14) -> dict[str, float]:
    """Medians over rows of n independent standard normals of the statistics recorded for
    trained rows: the excess kurtosis over the row and the gap between the two largest in
    units of the row's standard deviation (the reference for a row that fits the premise)."""
    z = np.random.default_rng(seed).standard_normal((rows, n))
    sd = z.std(-1)
    c = z - z.mean(-1, keepdims=True)
    kurt = (c ** 4).mean(-1) / sd ** 4 - 3
    top = np.sort(z, -1)
    return {"kurtosis": float(np.median(kurt)), "gap": float(np.median((top[:, -1] - top[:, -2]) / sd))}


def landmarks(n: int) -> dict[str, float]:
    """The book's landmarks for rows of n keys: the mean-field optimum, the freezing point
    sqrt(2 ln n) and the 90% point of the exact gradient's limit."""
    from ..optimum import alpha_star_normal
    from ..recommend import scale_at_share

    return {"mean_field": float(alpha_star_normal(n)), "freezing": math.sqrt(2 * math.log(n)), "ninety": float(scale_at_share(n))}


def cosine_table(sweep: dict[str, dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (mode, start label): the scale, the seeds' bits per byte and, for a learned scale,
    the scales the runs hold at each checkpoint (seeds x layers x heads)."""
    out = {}
    for name in ("cos_fixed", "cos_raw", "cos_exp"):
        g = sweep.get(name)
        if g is None:
            continue
        for label in dict.fromkeys(m["label"] for m in g["members"]):
            ms = sorted((m for m in g["members"] if m["label"] == label), key=lambda m: m["seed"])
            row = {"scale": ms[0]["scale"], "rate": ms[0]["rate"], "bpb": np.array([m["val_bpb"] for m in ms]), "members": ms}
            if "learned_scale" in ms[0]:
                steps = sorted(int(k) for k in ms[0]["learned_scale"])
                row["steps"] = steps
                row["learned"] = np.array([[m["learned_scale"][str(k)] for m in ms] for k in steps])  # (checkpoints, seeds, L, H)
            out[(g["mode"], label)] = row
    return out


def max_scale_move(rate: float, steps: int, warmup: float, final: float) -> float:
    """The most a raw scalar can move under Adam in a run: Adam's step is at most about the
    rate times the schedule, so the sum of the scheduled rates over the steps."""
    if not (math.isfinite(rate) and rate > 0):
        raise ValueError(f"rate must be a positive number, got {rate!r}")
    if not (isinstance(steps, int) and steps >= 1):
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if not 0 <= warmup < 1:
        raise ValueError(f"warmup must be a fraction in [0, 1), got {warmup!r}")
    if not 0 <= final <= 1:
        raise ValueError(f"final must be a fraction in [0, 1], got {final!r}")
    s = np.arange(steps, dtype=float)
    warm = max(1.0, warmup * steps)
    t = np.clip((s - warm) / max(1.0, steps - warm), 0, 1)
    sched = np.where(s < warm, (s + 1) / warm, final + (1 - final) * 0.5 * (1 + np.cos(np.pi * t)))
    return float(rate * sched.sum())


def longer_table(members: list[dict[str, Any]], rules: list[str]) -> dict[str, np.ndarray]:
    """Per rule, bits per byte (seeds x 3) at positions [0, n0), [n0, 2 n0) and [2 n0, 4 n0)."""
    return {r: np.array([m["longer"][r] for m in members]) for r in rules}
