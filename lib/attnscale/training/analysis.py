"""The analyses chapter 10 runs on the model and on the stored sweep: the gradient
check, the identity-map ceiling, which scales are among the fastest, the paired
comparison of two scales pooled over the sweep's cells, and the gradient's alignment
at initialisation. Each works on cells as :func:`attnscale.training.run_config` and
:func:`attnscale.training.load_sweep` return them."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validate as v
from .loop import _held_out_rows, _optimizer
from .model import _kind, bilinear_gradient, forward, identity_alignment, init_params, loss_and_grads, sample_batch
from .stats import PairedComparison, at_grid_edge, paired_comparison
from .sweep import SWEEP

__all__ = ["finite_difference_error", "identity_map", "among_fastest", "compare_arms", "initial_alignment"]

_CELL = ("labels", "alphas", "lrs", "best_lr", "steps_to_target", "final_loss")


def finite_difference_error(kind: str, *, h: float = 1e-6, seed: int = 1) -> tuple[float, int]:
    """The largest difference between the backward pass and a central difference of step
    ``h``, relative to ``max(1, |difference quotient|)``, over every weight of a small
    model (2 seeds, 3 scales 0.7, 1.7 and 3, ``d = 6``, 4 examples of ``n = 5`` keys,
    weights perturbed off the identity). Returns ``(worst, number of partial derivatives)``."""
    kind = _kind(kind)
    h = v.real_above(h, "h")
    rng = np.random.default_rng(v.integer_at_least(seed, "seed", 0))
    params = {k: w + 0.1 * rng.standard_normal(w.shape) for k, w in init_params(rng, 2, 3, 6).items()}
    batch = sample_batch(rng, 2, 4, 5, 6)
    scales = np.array([0.7, 1.7, 3.0])
    _, grads, _ = loss_and_grads(params, batch, scales, kind)
    worst, count = 0.0, 0
    for key in params:
        for idx in np.ndindex(params[key].shape):
            shifted = []
            for sign in (1, -1):
                moved = {k: w.copy() for k, w in params.items()}
                moved[key][idx] += sign * h
                shifted.append(loss_and_grads(moved, batch, scales, kind)[0][idx[:2]])
            fd = (shifted[0] - shifted[1]) / (2 * h)
            worst = max(worst, abs(fd - grads[key][idx]) / max(1.0, abs(fd)))
            count += 1
    return float(worst), count


def identity_map(n: int, d: int, kind: str, alphas: ArrayLike, *, examples: int = 1000, seed: int = 7) -> tuple[float, NDArray[np.float64]]:
    """Retrieval accuracy and held-out loss (one per scale in ``alphas``) of the model with
    ``W_q = W_k = I``, on ``examples`` fresh examples (a multiple of 500) of the task
    with ``n`` keys in ``R^d``. The accuracy (the key of largest score is the right one)
    does not depend on the scale; the loss does."""
    n, d = v.integer_at_least(n, "n", 2), v.integer_at_least(d, "d", 2)
    kind = _kind(kind)
    a = v.at_least_1d(v.positive(alphas, "alphas"), "alphas").ravel()
    examples = v.integer_at_least(examples, "examples", 500)
    if examples % 500:
        raise ValueError(f"examples must be a multiple of 500, got {examples}")
    rng = np.random.default_rng(v.integer_at_least(seed, "seed", 0))
    eye = {key: np.repeat(np.eye(d)[None, None], a.size, axis=1) for key in ("Wq", "Wk")}
    hits, losses = 0, []
    for _ in range(examples // 500):
        batch = sample_batch(rng, 1, 500, n, d)
        f = forward(eye, batch, a, kind)
        hits += int(np.sum(np.argmax(f["p"][:, :, 0], axis=-1) == batch["j"]))
        losses.append(f["loss"][0])
    return hits / examples, np.mean(losses, axis=0)


def among_fastest(cell: dict[str, Any], within: float = 0.1) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """Which scales of a cell are among the fastest: those whose median (over seeds) steps
    to the target, each at its best rate, is at most ``1 + within`` times the fastest
    scale's (by default within 10%, two evaluations of the 5% schedule). Returns
    ``(among, medians)``; a scale that never got there has an infinite median and is not
    among the fastest unless none did."""
    cell = v.mapping(cell, "cell", ("steps_to_target",))
    within = float(v.real_number(within, "within"))
    if within < 0:
        raise ValueError(f"within must be >= 0, got {within!r}")
    steps = _steps(cell["steps_to_target"], "cell['steps_to_target']")
    med = np.median(steps, axis=-1)
    fastest = med.min()
    return (med <= fastest * (1 + within)) if np.isfinite(fastest) else np.isinf(med), med


def _steps(value: ArrayLike, name: str = "steps_to_target") -> NDArray[np.float64]:
    """Steps to the target per (scale, seed): numbers >= 0, +inf where never reached."""
    steps = v.as_float_array(value, name)
    if steps.ndim != 2 or steps.size == 0:
        raise ValueError(f"{name} must be a non-empty (scales, seeds) array, got shape {steps.shape}")
    if np.isnan(steps).any() or (steps < 0).any():
        raise ValueError(f"{name} must hold steps >= 0 or +inf (never reached), got {v._show(steps)}")
    return steps


def _arm(cs: list[dict], label: str, key: str, name: str) -> tuple[NDArray, NDArray]:
    values, edges = [], []
    for c in cs:
        labels = list(c["labels"])
        if label not in labels:
            raise ValueError(f"{name} {label!r} is not a scale of the cells; their scales are {labels}")
        k = labels.index(label)
        vals = np.asarray(c[key][k], dtype=float)
        values.append(vals)
        edges.append(np.repeat(at_grid_edge(c["best_lr"], np.shape(c["lrs"])[-1])[k], vals.size))
    return np.concatenate(values), np.concatenate(edges)


def compare_arms(cells: dict, optimizer: str, kind: str, arm: str, reference: str) -> tuple[dict[str, PairedComparison | None], dict[str, tuple]]:
    """Scale ``arm`` against scale ``reference`` (labels), paired by seed and pooled over the
    sweep's ``len(ns) x len(ds)`` cells of one optimiser and score kind (``cells`` keyed by
    ``(optimizer, kind, n, d)``). Returns ``(tests, pairs)``: under ``"speed"`` the steps to the
    target, under ``"loss"`` the final held-out loss, and under ``"inside"`` the steps over the
    pairs whose two best rates both lie inside the rate grid (None when no pair does), each
    a :func:`attnscale.training.paired_comparison`; ``pairs`` holds the two arrays compared."""
    if not isinstance(cells, dict):
        raise TypeError(f"cells must be a dict keyed by (optimizer, kind, n, d), got {type(cells).__name__}")
    optimizer = _optimizer(optimizer)
    kind = _kind(kind)
    v.text(arm, "arm")
    v.text(reference, "reference")
    keys = [(optimizer, kind, n, d) for n in SWEEP["ns"] for d in SWEEP["ds"]]
    missing = [k for k in keys if k not in cells]
    if missing:
        raise ValueError(f"cells lacks {missing[0]} (optimizer {optimizer!r}, kind {kind!r})")
    cs = [v.mapping(cells[k], "cells entry", _CELL) for k in keys]
    (sa, ea), (sb, eb) = _arm(cs, arm, "steps_to_target", "arm"), _arm(cs, reference, "steps_to_target", "reference")
    fa, fb = _arm(cs, arm, "final_loss", "arm")[0], _arm(cs, reference, "final_loss", "reference")[0]
    inside = ~(ea | eb)
    tests = {"speed": paired_comparison(sa, sb), "loss": paired_comparison(fa, fb),
             "inside": paired_comparison(sa[inside], sb[inside]) if inside.any() else None}
    return tests, {"speed": (sa, sb), "loss": (fa, fb), "inside": (sa[inside], sb[inside])}


def initial_alignment(cell: dict[str, Any]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """For a stored dot-score cell, redraw its initial weights (from the cell's seed, as the
    training loop draws them) and return, each of shape (scales, seeds): the alignment
    :func:`attnscale.training.identity_alignment` of the gradient over the run's held-out
    examples, the held-out loss there (which must equal the stored loss at step 0), and the
    alignment of the gradient of the first training batch."""
    cell = v.mapping(cell, "cell", ("seed", "alphas", "n", "d", "kind"))
    if cell["kind"] != "dot":
        raise ValueError(f"cell must be a dot-score cell (the alignment is defined for B = W_q^T W_k), got kind {cell['kind']!r}")
    S = SWEEP
    alphas = np.asarray(cell["alphas"], dtype=float)
    rng = np.random.default_rng(cell["seed"])
    params = init_params(rng, S["seeds"], alphas.size, cell["d"])
    first = identity_alignment(bilinear_gradient(params, sample_batch(rng, S["seeds"], S["batch"], cell["n"], cell["d"], S["c"], S["noise"]), alphas)).T
    rows = _held_out_rows(np.random.default_rng([cell["seed"], 1]), S["seeds"], S["eval_size"], S["batch"], cell["n"], cell["d"], S["c"], S["noise"])
    chunks = len(rows)
    G: NDArray | float = 0.0
    loss: NDArray | float = 0.0
    for batch in rows:
        g, p = bilinear_gradient(params, batch, alphas, with_weights=True)
        G = G + g / chunks
        y = p @ batch["V"]  # (seeds, batch, scales, c)
        loss = loss + np.mean(np.sum((y - batch["target"][:, :, None]) ** 2, axis=-1), axis=1) / (S["c"] * chunks)
    return identity_alignment(G).T, np.asarray(loss).T, first
