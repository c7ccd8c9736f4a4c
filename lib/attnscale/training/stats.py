"""Summaries of training curves: steps to a target, the best learning rate,
and how the tuned rate scales with alpha."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validate as v

__all__ = ["steps_to_target", "best_lr_index", "lr_exponent"]


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
        x = np.log(np.asarray(c["alphas"], dtype=float))
        y = np.log(np.asarray(c["lrs"], dtype=float)[np.asarray(c["best_lr"], dtype=int)])
        if x.size < 2 or np.ptp(x) == 0:
            raise ValueError("cells: each cell must hold at least two different alphas")
        x, y = x - x.mean(), y - y.mean()
        per_cell.append(float(x @ y / (x @ x)))
        xs.append(x)
        ys.append(y)
    x, y = np.concatenate(xs), np.concatenate(ys)
    return float(x @ y / (x @ x)), per_cell
