"""A one-layer attention model in NumPy with exact hand-derived gradients, for
the training experiment of Part IV (associative recall).

Task: ``n`` keys ``K_i ~ N(0, I_d)`` with values ``V_i ~ N(0, I_c)``; the query
is one key seen through noise, ``x = (K_j + sigma eps) / sqrt(1 + sigma^2)`` (unit
variance per coordinate, so dot scores start with variance 1); the target is
its value ``V_j``.
Model: ``q = W_q x``, ``k_i = W_k K_i``; the scores are ``s_i = q.k_i / sqrt(d)``
(``kind="dot"``) or ``s_i = cos(q, k_i)`` (``kind="cosine"``);
``p = softmax(alpha s)``, the output is ``y = sum_i p_i V_i`` and the loss
``|y - V_j|^2 / c``.

Many models are trained at once: every scale ``alpha`` times every learning
rate times every seed. All models with the same seed share their initial
weights and see the same batches (common random numbers), so differences
between scales and learning rates are not differences of luck.

Arrays are laid out with the seed first and the model (scale x learning rate)
second, ``W`` of shape ``(seeds, models, d, d)`` and data of shape
``(seeds, batch, ...)``, so that every product over the ``n`` keys is one
matrix product per example with the models as columns. The dot model never
forms the keys ``W_k K_i``: it uses ``s_i = (W_k^T q) . K_i / sqrt(d)``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _validate as v
from .softmax import gradient_l1, softmax, softmax_vjp

__all__ = [
    "KINDS",
    "OPTIMIZERS",
    "init_params",
    "sample_batch",
    "forward",
    "loss_and_grads",
    "bilinear_gradient",
    "identity_alignment",
    "train",
    "steps_to_target",
    "sweep_scales",
    "run_config",
    "best_lr_index",
    "lr_exponent",
    "load_sweep",
]

KINDS = ("dot", "cosine")
#: weights beyond this size count as diverged (logits ~ LIMIT^2 |x| |K|)
LIMIT = 1e6
OPTIMIZERS = ("adam", "sgd")


def _kind(kind: object) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind must be 'dot' or 'cosine', got {kind!r}")
    return str(kind)


def _optimizer(optimizer: object) -> str:
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    return str(optimizer)


def init_params(rng: np.random.Generator, seeds: int, models: int, d: int) -> dict[str, NDArray]:
    """``W_q``, ``W_k`` with entries ``N(0, 1/d)``; one draw per seed, copied to
    every model of that seed. Shape ``(seeds, models, d, d)``."""
    rng = v.generator(rng)
    seeds = v.integer_at_least(seeds, "seeds", 1)
    models = v.integer_at_least(models, "models", 1)
    d = v.integer_at_least(d, "d", 1)
    scale = 1.0 / math.sqrt(d)
    draw = rng.normal(0.0, scale, (2, seeds, 1, d, d))
    return {"Wq": np.repeat(draw[0], models, axis=1), "Wk": np.repeat(draw[1], models, axis=1)}


def sample_batch(rng: np.random.Generator, seeds: int, batch: int, n: int, d: int, c: int = 8, noise: float = 1.0) -> dict[str, NDArray]:
    """One batch per seed: keys ``K`` (seeds, batch, n, d), values ``V``
    (seeds, batch, n, c), the queried index ``j``, query ``x`` and target."""
    rng = v.generator(rng)
    seeds, batch = v.integer_at_least(seeds, "seeds", 1), v.integer_at_least(batch, "batch", 1)
    n, d, c = v.integer_at_least(n, "n", 2), v.integer_at_least(d, "d", 1), v.integer_at_least(c, "c", 1)
    noise = v.real_number(noise, "noise")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    K = rng.standard_normal((seeds, batch, n, d))
    V = rng.standard_normal((seeds, batch, n, c))
    j = rng.integers(0, n, size=(seeds, batch))
    pick = j[..., None, None]
    # scaled to unit variance per coordinate, so that the dot scores start with variance 1
    x = (np.take_along_axis(K, pick, axis=2)[:, :, 0] + noise * rng.standard_normal((seeds, batch, d))) / math.sqrt(1.0 + noise**2)
    target = np.take_along_axis(V, pick, axis=2)[:, :, 0]
    return {"K": K, "V": V, "j": j, "x": x, "target": target}


def _shapes(params: dict, data: dict, alpha: ArrayLike) -> tuple[int, int, int, int, NDArray]:
    params = v.mapping(params, "params", ("Wq", "Wk"))
    data = v.mapping(data, "data", ("K", "V", "x", "target", "j"))
    Wq, Wk, K = np.asarray(params["Wq"]), np.asarray(params["Wk"]), np.asarray(data["K"])
    if Wq.shape != Wk.shape or Wq.ndim != 4 or Wq.shape[-1] != Wq.shape[-2]:
        raise ValueError(f"Wq and Wk must both have shape (seeds, models, d, d), got {Wq.shape} and {Wk.shape}")
    seeds, models, d, _ = Wq.shape
    if K.ndim != 4 or K.shape[0] != seeds or K.shape[-1] != d:
        raise ValueError(f"data K must have shape (seeds={seeds}, batch, n, d={d}), got {K.shape}")
    a = v.positive(alpha, "alpha")
    if a.shape not in ((), (models,)):
        raise ValueError(f"alpha must be a scalar or one scale per model ({models}), got shape {a.shape}")
    return seeds, models, K.shape[1], K.shape[2], np.broadcast_to(a, (models,))


def forward(params: dict, data: dict, alpha: ArrayLike, kind: str = "dot") -> dict[str, NDArray]:
    """Attention weights ``p`` (seeds, batch, models, n), the output ``y`` and
    the per-model loss (seeds, models), plus what the backward pass needs."""
    kind = _kind(kind)
    seeds, models, batch, n, a = _shapes(params, data, alpha)
    Wq, Wk = params["Wq"], params["Wk"]
    K, V, x, target = data["K"], data["V"], data["x"], data["target"]
    d, c = K.shape[-1], V.shape[-1]
    q = x[:, None] @ Wq.swapaxes(-1, -2)  # (seeds, models, batch, d)
    out: dict[str, NDArray] = {"q": q}
    if kind == "dot":
        u = q @ Wk  # u = W_k^T q
        s = (K @ u.transpose(0, 2, 3, 1)).swapaxes(-1, -2) / math.sqrt(d)  # (seeds, batch, models, n)
    else:
        # |k_i| needs the keys of every model: (seeds, batch*n, d) @ (seeds, d, models*d)
        k = (K.reshape(seeds, batch * n, d) @ Wk.transpose(0, 3, 1, 2).reshape(seeds, d, models * d)).reshape(seeds, batch, n, models, d)
        kn = np.sqrt(np.einsum("sbnme,sbnme->sbnm", k, k))
        qn = np.linalg.norm(q, axis=-1, keepdims=True)
        if np.any(kn == 0) or np.any(qn == 0):
            raise FloatingPointError("a query or key is exactly zero; its cosine is undefined")
        qh = q / qn
        # qh . k_i = (W_k^T qh) . K_i, as for dot scores
        s = ((K @ (qh @ Wk).transpose(0, 2, 3, 1)) / kn).swapaxes(-1, -2)
        out.update(k=k, kn=kn, qh=qh, qn=qn)
    p = softmax(s, a[:, None])
    y = p @ V  # (seeds, batch, models, c)
    diff = y - target[:, :, None, :]
    loss = np.mean(np.sum(diff * diff, axis=-1), axis=1) / c
    out.update(s=s, p=p, diff=diff, loss=loss, alpha=a)
    return out


def _diagnostics(p: NDArray, j: NDArray, alpha: NDArray) -> tuple[NDArray, NDArray]:
    """Per model: the share of rows whose largest weight is on the queried key,
    and the mean over rows of ``(1/2)||J||_1 = alpha (1 - sum p^2)``."""
    return np.mean(np.argmax(p, axis=-1) == j[..., None], axis=1), np.mean(gradient_l1(p, alpha), axis=1)


def _score_gradient(f: dict, data: dict) -> NDArray:
    """``dL/ds = J g_p`` for the forward pass ``f``, with ``g_p = V g_y``:
    shape (seeds, batch, models, n)."""
    K, V = data["K"], data["V"]
    batch, c = K.shape[1], V.shape[-1]
    g_p = (2.0 * f["diff"] / (batch * c)) @ V.swapaxes(-1, -2)
    return softmax_vjp(f["p"], g_p, f["alpha"])


def _dot_key_sum(g_s: NDArray, K: NDArray) -> NDArray:
    """``r = sum_i (dL/ds_i) K_i / sqrt(d)`` for dot scores: (seeds, models, batch, d)."""
    return ((g_s / math.sqrt(K.shape[-1])) @ K).transpose(0, 2, 1, 3)


def _loss_and_grads(params: dict, data: dict, alpha: ArrayLike, kind: str) -> tuple[dict, dict]:
    """The forward pass and the gradients of ``W_q`` and ``W_k`` (the training step's work)."""
    kind = _kind(kind)
    f = forward(params, data, alpha, kind)
    Wk = params["Wk"]
    K, x = data["K"], data["x"]
    seeds, batch, n, d = K.shape
    g_s = _score_gradient(f, data)
    if kind == "dot":
        r = _dot_key_sum(g_s, K)
        g_Wk = f["q"].swapaxes(-1, -2) @ r
        g_Wq = Wk @ (r.swapaxes(-1, -2) @ x[:, None])
    else:
        qh, qn, k, kn = f["qh"], f["qn"], f["k"], f["kn"]
        models = k.shape[3]
        # s_i = qh . k_i / |k_i|; with w_i = g_i / |k_i| and r = sum_i w_i K_i:
        # dL/dqh = sum_i g_i k_i / |k_i| = W_k r, dL/dk_i = w_i (qh - s_i k_i / |k_i|)
        w = g_s.transpose(0, 1, 3, 2) / kn  # (seeds, batch, n, models)
        r = (w.swapaxes(-1, -2) @ K).transpose(0, 2, 1, 3)  # (seeds, models, batch, d)
        g_qh = r @ Wk.swapaxes(-1, -2)
        g_q = (g_qh - np.sum(g_qh * qh, axis=-1, keepdims=True) * qh) / qn
        g_Wq = g_q.swapaxes(-1, -2) @ x[:, None]
        shrink = (k * (w * f["s"].transpose(0, 1, 3, 2) / kn)[..., None]).reshape(seeds, batch * n, models * d)
        g_Wk = qh.swapaxes(-1, -2) @ r - (shrink.swapaxes(-1, -2) @ K.reshape(seeds, batch * n, d)).reshape(seeds, models, d, d)
    return f, {"Wq": g_Wq, "Wk": g_Wk}


def loss_and_grads(params: dict, data: dict, alpha: ArrayLike, kind: str = "dot") -> tuple[NDArray, dict, dict]:
    """Per-model loss (seeds, models), the gradients of ``W_q`` and ``W_k``, and
    diagnostics per model: accuracy (the queried key has the largest weight)
    and the mean over rows of ``(1/2)||J||_1 = alpha (1 - sum p^2)``."""
    f, grads = _loss_and_grads(params, data, alpha, kind)
    accuracy, half_l1 = _diagnostics(f["p"], data["j"], f["alpha"])
    return f["loss"], grads, {"accuracy": accuracy, "half_l1": half_l1}


def bilinear_gradient(params: dict, data: dict, alpha: ArrayLike, *, with_weights: bool = False):
    """For dot scores, the gradient of the loss with respect to the bilinear
    form ``B = W_q^T W_k`` (``s_i = x^T B K_i / sqrt(d)``), shape
    (seeds, models, d, d). The weight gradients follow from it:
    ``dL/dW_k = W_q G`` and ``dL/dW_q = W_k G^T``. With ``with_weights``,
    returns ``(G, p)`` with the attention weights of the forward pass."""
    f = forward(params, data, alpha, "dot")
    r = _dot_key_sum(_score_gradient(f, data), data["K"])
    G = data["x"][:, None].swapaxes(-1, -2) @ r
    return (G, f["p"]) if with_weights else G


def identity_alignment(G: ArrayLike) -> NDArray[np.float64]:
    """The cosine between ``-G`` and the identity, ``-tr(G) / (sqrt(d) ||G||_F)``
    over the last two axes: how much of a gradient step on ``B`` moves it
    towards ``B = lambda I`` (attend to the key most like the query)."""
    G = v.finite(G, "G")
    if G.ndim < 2 or G.shape[-1] != G.shape[-2]:
        raise ValueError(f"G must end in a square matrix, got shape {G.shape}")
    size = np.linalg.norm(G, axis=(-2, -1))
    if np.any(size == 0):
        raise ValueError("G has a zero matrix: its direction is undefined")
    return -np.trace(G, axis1=-2, axis2=-1) / (math.sqrt(G.shape[-1]) * size)


def _evaluate(params: dict, evals: list[dict], alpha: NDArray, kind: str) -> tuple[NDArray, NDArray, NDArray]:
    loss, acc, l1 = [], [], []
    for chunk in evals:
        f = forward(params, chunk, alpha, kind)
        loss.append(f["loss"])
        accuracy, half_l1 = _diagnostics(f["p"], chunk["j"], f["alpha"])
        acc.append(accuracy)
        l1.append(half_l1)
    return np.mean(loss, axis=0), np.mean(acc, axis=0), np.mean(l1, axis=0)


def train(
    seed: int,
    *,
    n: int,
    d: int,
    kind: str,
    alphas: ArrayLike,
    lrs: ArrayLike,
    seeds: int,
    steps: int,
    batch: int = 32,
    noise: float = 1.0,
    c: int = 8,
    optimizer: str = "adam",
    eval_every: int = 10,
    eval_size: int = 256,
) -> dict[str, NDArray]:
    """Train ``len(alphas) * len(lrs) * seeds`` models.

    Every ``eval_every`` steps (and at step 0) each model is evaluated on a
    fixed held-out set of ``eval_size`` examples per seed. Returns ``step``
    (evals,) and ``loss``, ``accuracy``, ``half_l1`` (the mean over held-out
    rows of ``(1/2)||J||_1``) of shape ``(alphas, lrs, seeds, evals)``.
    Adam uses ``beta = (0.9, 0.999)``, ``eps = 1e-8``; SGD is plain.
    ``diverged_at`` (alphas, lrs, seeds) is the step at which a model's
    weights left ``[-LIMIT, LIMIT]`` (0 if never); such a model keeps its
    last weights from then on.
    """
    seed = v.integer_at_least(seed, "seed", 0)
    kind = _kind(kind)
    optimizer = _optimizer(optimizer)
    n = v.integer_at_least(n, "n", 2)
    d = v.integer_at_least(d, "d", 2)
    c = v.integer_at_least(c, "c", 1)
    seeds = v.integer_at_least(seeds, "seeds", 1)
    steps = v.integer_at_least(steps, "steps", 1)
    batch = v.integer_at_least(batch, "batch", 1)
    eval_every = v.integer_at_least(eval_every, "eval_every", 1)
    eval_size = v.integer_at_least(eval_size, "eval_size", 1)
    noise = float(v.finite(noise, "noise"))
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    alphas = v.at_least_1d(v.positive(alphas, "alphas"), "alphas")
    lrs = v.at_least_1d(v.positive(lrs, "lrs"), "lrs")
    if alphas.ndim != 1 or lrs.ndim != 1:
        raise ValueError("alphas and lrs must be 1-d lists")
    A, L = alphas.size, lrs.size
    models = A * L
    alpha = np.repeat(alphas, L)
    lr = np.tile(lrs, A)[None, :, None, None]

    rng = np.random.default_rng(seed)
    params = init_params(rng, seeds, models, d)
    eval_rng = np.random.default_rng([seed, 1])
    evals = [sample_batch(eval_rng, seeds, min(batch, eval_size - i), n, d, c, noise) for i in range(0, eval_size, batch)]
    m1 = {key: np.zeros_like(val) for key, val in params.items()}
    m2 = {key: np.zeros_like(val) for key, val in params.items()}
    marks = list(range(0, steps + 1, eval_every))
    if marks[-1] != steps:
        marks.append(steps)
    curves = {key: np.empty((len(marks), seeds, models)) for key in ("loss", "accuracy", "half_l1")}

    def record(i: int) -> None:
        curves["loss"][i], curves["accuracy"][i], curves["half_l1"][i] = _evaluate(params, evals, alpha, kind)

    frozen = np.zeros((seeds, models), dtype=bool)
    diverged_at = np.zeros((seeds, models))
    record(0)
    i = 1
    for t in range(1, steps + 1):
        try:
            with np.errstate(over="raise", invalid="raise"):
                _, grads = _loss_and_grads(params, sample_batch(rng, seeds, batch, n, d, c, noise), alpha, kind)
        except FloatingPointError as err:
            raise FloatingPointError(f"training diverged at step {t} ({err}); lower the learning rates {lrs.tolist()}") from None
        new = {}
        for key in params:
            g = grads[key]
            if optimizer == "sgd":
                new[key] = params[key] - lr * g
                continue
            m1[key] = 0.9 * m1[key] + 0.1 * g
            m2[key] = 0.999 * m2[key] + 0.001 * g * g
            new[key] = params[key] - lr * (m1[key] / (1 - 0.9**t)) / (np.sqrt(m2[key] / (1 - 0.999**t)) + 1e-8)
        # A model whose weights leave [-LIMIT, LIMIT] has diverged: it keeps its
        # last weights (so every later evaluation stays finite) and is marked.
        bad = np.zeros_like(frozen)
        for key in new:
            with np.errstate(invalid="ignore"):
                bad |= ~(np.max(np.abs(new[key]), axis=(-1, -2)) <= LIMIT)
        newly = bad & ~frozen
        diverged_at[newly] = t
        frozen |= bad
        for key in params:
            params[key] = np.where(frozen[..., None, None], params[key], new[key])
        if i < len(marks) and t == marks[i]:
            record(i)
            i += 1
    result = {key: val.transpose(2, 1, 0).reshape(A, L, seeds, len(marks)) for key, val in curves.items()}
    result["step"] = np.asarray(marks)
    result["diverged_at"] = diverged_at.T.reshape(A, L, seeds)
    return result


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


DATA = Path(__file__).resolve().parents[2] / "chapters" / "data"


# ----------------------------------------------------------------------------
# The sweep: the experiment's configurations and a command that stores them.

DOT_ALPHAS = (0.25, 1.0, 2.5, 8.0)


def sweep_scales(n: int, d: int, kind: str) -> tuple[list[str], list[float]]:
    """The scales compared, as (labels, alpha) with ``p = softmax(alpha s)``.

    Dot scores ``s = q.k/sqrt(d)``: alpha in {0.25, 1, 2.5, alpha*(n), 8}.
    Cosine scores: ``sqrt(d)`` (unit-variance logits at initialisation, the
    analogue of alpha = 1), the mean-field optimum ``alpha*_cos(n, d)`` and
    ArcFace's 64."""
    from .optimum import alpha_star_cosine, alpha_star_normal

    n, d = v.integer_at_least(n, "n", 2), v.integer_at_least(d, "d", 2)
    kind = _kind(kind)
    if kind == "dot":
        star = float(alpha_star_normal(n))
        pairs = sorted([(f"{a:g}", a) for a in DOT_ALPHAS] + [("α*(n)", star)], key=lambda t: t[1])
    else:
        pairs = [("√d", math.sqrt(d)), ("α*cos(n,d)", float(alpha_star_cosine(n, d))), ("64", 64.0)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


SWEEP = {
    "ns": [16, 64, 256],
    "ds": [32, 64],
    # learning rates: one grid per optimiser, shared by every scale
    "lrs": {"adam": [0.003, 0.01, 0.03, 0.1], "sgd": [0.1, 0.3, 1.0, 3.0, 10.0]},
    "seeds": 5,
    "steps": 1000,
    "batch": 32,
    "noise": 1.0,
    "c": 8,
    "eval_every": 20,
    "eval_size": 256,
    "target": 0.8,
}


def run_config(n: int, d: int, kind: str, optimizer: str = "adam", *, seed: int | None = None, **overrides: Any) -> dict[str, Any]:
    """Train one (n, d, kind) cell of the sweep with the stored settings
    (any of them overridable) and summarise it: per scale and learning rate,
    the curves; per scale, the best learning rate, steps to the target
    accuracy and the final held-out loss, per seed."""
    optimizer = _optimizer(optimizer)
    cfg = {**SWEEP, **overrides}
    labels, alphas = sweep_scales(n, d, kind)
    lrs = cfg["lrs"][optimizer] if isinstance(cfg["lrs"], dict) else cfg["lrs"]
    if seed is None:
        seed = 1000 * n + d + (0 if kind == "dot" else 1)
    seed = v.integer_at_least(seed, "seed", 0)
    out = train(seed, n=n, d=d, kind=kind, alphas=alphas, lrs=lrs, seeds=cfg["seeds"], steps=cfg["steps"], batch=cfg["batch"],
                noise=cfg["noise"], c=cfg["c"], optimizer=optimizer, eval_every=cfg["eval_every"], eval_size=cfg["eval_size"])
    best = best_lr_index(out["loss"])
    pick = np.arange(len(alphas))
    reach = steps_to_target(out["step"], out["accuracy"], cfg["target"])
    return {
        "n": n, "d": d, "kind": kind, "optimizer": optimizer, "seed": seed, "labels": labels, "alphas": alphas, "lrs": list(lrs),
        "step": out["step"],
        # every learning rate: (alphas, lrs, seeds)
        "loss_area": out["loss"].mean(axis=-1), "final_loss_all": out["loss"][..., -1],
        "steps_to_target_all": reach, "diverged_at": out["diverged_at"],
        # each scale at its best learning rate: (alphas, seeds) and curves (alphas, seeds, evals)
        "best_lr": best, "steps_to_target": reach[pick, best], "final_loss": out["loss"][pick, best, :, -1],
        "loss": out["loss"][pick, best], "accuracy": out["accuracy"][pick, best], "half_l1": out["half_l1"][pick, best],
    }


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _jsonable(val) for k, val in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(val) for val in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (float, np.floating)):
        return None if math.isinf(x) else float(f"{float(x):.6g}")
    if isinstance(x, np.integer):
        return int(x)
    return x


def _arrays(cell: dict) -> dict:
    out = {}
    for key, val in cell.items():
        if key in ("labels", "lrs", "kind", "optimizer") or not isinstance(val, list):
            out[key] = val
        else:
            out[key] = np.array(val, dtype=float if key.startswith(("steps_to_target", "loss", "final", "accuracy", "half", "alphas", "diverged")) else None)
    for key in ("steps_to_target", "steps_to_target_all"):
        out[key] = np.array(np.where(np.equal(cell[key], None), np.inf, cell[key]), dtype=float)
    out["best_lr"] = out["best_lr"].astype(int)
    return out


def load_sweep(path: str | Path) -> dict[str, Any]:
    """Read stored sweep results; arrays come back as NumPy arrays and a
    target never reached as ``inf``."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no stored sweep at {path}; run `make sweep` to produce it")
    data = json.loads(path.read_text())
    data["cells"] = [_arrays(c) for c in data["cells"]]
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnscale.training", description="Run the Part IV training sweep for one optimiser and store its results as JSON.")
    parser.add_argument("--optimizer", required=True, choices=list(SWEEP["lrs"]))
    parser.add_argument("--out", required=True, help="where to write the JSON results")
    parser.add_argument("--ns", type=int, nargs="+", default=SWEEP["ns"])
    parser.add_argument("--ds", type=int, nargs="+", default=SWEEP["ds"])
    args = parser.parse_args(argv)
    command = f"python -m attnscale.training --optimizer {args.optimizer} --out {args.out}"
    if (args.ns, args.ds) != (SWEEP["ns"], SWEEP["ds"]):
        command += f" --ns {' '.join(map(str, args.ns))} --ds {' '.join(map(str, args.ds))}"
    result: dict[str, Any] = {
        "command": command,
        "optimizer": args.optimizer,
        "settings": SWEEP,
        "machine": {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count()},
        "seconds": 0,
        "cells": [],
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for kind in KINDS:
        for n in args.ns:
            for d in args.ds:
                t0 = time.perf_counter()
                result["cells"].append(run_config(n, d, kind, args.optimizer))
                result["seconds"] = round(time.perf_counter() - started)
                # written after every cell, so an interrupted sweep keeps what it has
                out.write_text(json.dumps(_jsonable(result), separators=(",", ":")) + "\n")
                print(f"{args.optimizer:4s} {kind:6s} n={n:4d} d={d:3d} {time.perf_counter() - t0:7.1f} s", flush=True)
    print(f"wrote {out} ({result['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
