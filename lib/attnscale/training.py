"""A small attention model in NumPy, with exact hand-derived gradients, for
the training experiment (associative recall).

Task: ``n`` keys ``K_i ~ N(0, I_d)`` with values ``V_i ~ N(0, I_c)``; the query
is one key plus noise, ``x = K_j + sigma eps``; the target is its value ``V_j``.
Model: ``q = W_q x``, ``k_i = W_k K_i``, scores ``s_i = q.k_i / sqrt(d)``
("dot") or ``s_i = cos(q, k_i)`` ("cosine"), ``p = softmax(alpha s)``,
output ``y = sum_i p_i V_i``, loss ``|y - V_j|^2 / c``. Many models (seeds times
learning rates) are trained at once, each on its own data, with Adam.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from . import _validate as v
from .softmax import gradient_l1, softmax, softmax_vjp

__all__ = ["init_params", "sample_batch", "loss_and_grads", "train"]


def init_params(rng: np.random.Generator, models: int, d: int) -> dict[str, NDArray]:
    """``W_q``, ``W_k`` with entries ``N(0, 1/d)``, one pair per model."""
    scale = 1.0 / np.sqrt(d)
    return {"Wq": rng.normal(0, scale, (models, d, d)), "Wk": rng.normal(0, scale, (models, d, d))}


def sample_batch(rng: np.random.Generator, models: int, batch: int, n: int, d: int, c: int = 8, noise: float = 0.5) -> dict[str, NDArray]:
    K = rng.standard_normal((models, batch, n, d))
    V = rng.standard_normal((models, batch, n, c))
    j = rng.integers(0, n, size=(models, batch))
    take = np.take_along_axis
    x = take(K, j[..., None, None], axis=2)[:, :, 0] + noise * rng.standard_normal((models, batch, d))
    target = take(V, j[..., None, None], axis=2)[:, :, 0]
    return {"K": K, "V": V, "j": j, "x": x, "target": target}


def loss_and_grads(params: dict, data: dict, alpha: float, kind: str = "dot") -> tuple[NDArray, dict, dict]:
    """Per-model loss, gradients of ``W_q`` and ``W_k``, and diagnostics
    (accuracy: the target key has the largest weight; ``(1/2)||J||_1``)."""
    if kind not in ("dot", "cosine"):
        raise ValueError(f"kind must be 'dot' or 'cosine', got {kind!r}")
    Wq, Wk = params["Wq"], params["Wk"]
    K, V, x, target = data["K"], data["V"], data["x"], data["target"]
    models, batch, n, d = K.shape
    c = V.shape[-1]
    q = np.einsum("mij,mbj->mbi", Wq, x)
    k = np.einsum("mij,mbnj->mbni", Wk, K)
    if kind == "dot":
        s = np.einsum("mbi,mbni->mbn", q, k) / np.sqrt(d)
    else:
        qn = np.linalg.norm(q, axis=-1, keepdims=True)
        kn = np.linalg.norm(k, axis=-1, keepdims=True)
        qh, kh = q / qn, k / kn
        s = np.einsum("mbi,mbni->mbn", qh, kh)
    p = softmax(s, alpha)
    y = np.einsum("mbn,mbnc->mbc", p, V)
    diff = y - target
    loss = np.mean(np.sum(diff * diff, axis=-1), axis=-1) / c
    g_y = 2.0 * diff / (batch * c)
    g_p = np.einsum("mbc,mbnc->mbn", g_y, V)
    g_s = softmax_vjp(p, g_p, alpha)
    if kind == "dot":
        g_q = np.einsum("mbn,mbni->mbi", g_s, k) / np.sqrt(d)
        g_k = g_s[..., None] * q[:, :, None, :] / np.sqrt(d)
    else:
        g_qh = np.einsum("mbn,mbni->mbi", g_s, kh)
        g_q = (g_qh - np.sum(g_qh * qh, axis=-1, keepdims=True) * qh) / qn
        g_kh = g_s[..., None] * qh[:, :, None, :]
        g_k = (g_kh - np.sum(g_kh * kh, axis=-1, keepdims=True) * kh) / kn
    grads = {"Wq": np.einsum("mbi,mbj->mij", g_q, x), "Wk": np.einsum("mbni,mbnj->mij", g_k, K)}
    accuracy = np.mean(np.argmax(p, axis=-1) == data["j"], axis=-1)
    info = {"accuracy": accuracy, "half_l1": np.mean(gradient_l1(p, alpha), axis=-1)}
    return loss, grads, info


def train(seed: int, *, n: int, d: int, alpha: float, kind: str, lrs: list[float], seeds: int, steps: int, batch: int = 32) -> dict[str, NDArray]:
    """Train ``len(lrs) * seeds`` models with Adam; curves have shape (lrs, seeds, steps)."""
    n = v.integer_at_least(n, "n", 2)
    d = v.integer_at_least(d, "d", 2)
    steps = v.integer_at_least(steps, "steps", 1)
    v.positive(alpha, "alpha")
    lr = np.repeat(v.positive(lrs, "lrs"), seeds)
    models = lr.size
    rng = np.random.default_rng(seed)
    params = init_params(rng, models, d)
    m = {key: np.zeros_like(val) for key, val in params.items()}
    s2 = {key: np.zeros_like(val) for key, val in params.items()}
    curves = {"loss": np.empty((steps, models)), "accuracy": np.empty((steps, models)), "half_l1": np.empty((steps, models))}
    for t in range(1, steps + 1):
        loss, grads, info = loss_and_grads(params, sample_batch(rng, models, batch, n, d), alpha, kind)
        curves["loss"][t - 1], curves["accuracy"][t - 1], curves["half_l1"][t - 1] = loss, info["accuracy"], info["half_l1"]
        for key in params:
            m[key] = 0.9 * m[key] + 0.1 * grads[key]
            s2[key] = 0.999 * s2[key] + 0.001 * grads[key] ** 2
            step = lr[:, None, None] * (m[key] / (1 - 0.9**t)) / (np.sqrt(s2[key] / (1 - 0.999**t)) + 1e-8)
            params[key] = params[key] - step
    return {key: val.T.reshape(len(lrs), seeds, steps) for key, val in curves.items()}
