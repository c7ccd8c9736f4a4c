"""The model of the Part IV experiment and its exact, hand-derived gradients.

Task: ``n`` keys ``K_i ~ N(0, I_d)`` with values ``V_i ~ N(0, I_c)``; the query
is one key seen through noise, ``x = (K_j + sigma eps) / sqrt(1 + sigma^2)`` (unit
variance per coordinate, so dot scores start with variance 1); the target is
its value ``V_j``.
Model: ``q = W_q x``, ``k_i = W_k K_i``; the scores are ``s_i = q.k_i / sqrt(d)``
(``kind="dot"``) or ``s_i = cos(q, k_i)`` (``kind="cosine"``);
``p = softmax(alpha s)``, the output is ``y = sum_i p_i V_i`` and the loss
``|y - V_j|^2 / c``. With a *learned scale*, ``params`` also holds ``log_gain``
(seeds, models), a trained scalar per model, and the scale is
``alpha exp(log_gain)`` (``log_gain = 0`` at initialisation; the logarithm keeps
it positive, as CLIP's learned temperature does).

Arrays are laid out with the seed first and the model (scale x learning rate)
second, ``W`` of shape ``(seeds, models, d, d)`` and data of shape
``(seeds, batch, ...)``, so that every product over the ``n`` keys is one
matrix product per example with the models as columns. The dot model never
forms the keys ``W_k K_i``: it uses ``s_i = (W_k^T q) . K_i / sqrt(d)``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validate as v
from ..softmax import _softmax_checked, _vjp_checked, gradient_l1

__all__ = ["KINDS", "init_params", "sample_batch", "forward", "loss_and_grads", "bilinear_gradient", "identity_alignment"]

KINDS = ("dot", "cosine")


def _kind(kind: object) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind must be 'dot' or 'cosine', got {kind!r}")
    return str(kind)


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
    # the other entries of data are broadcast against K by NumPy, so a wrong shape would give numbers, not an error
    batch, n = K.shape[1], K.shape[2]
    V = np.asarray(data["V"])
    if V.ndim != 4 or V.shape[:3] != K.shape[:3]:
        raise ValueError(f"data V must have shape (seeds={seeds}, batch={batch}, n={n}, c), got {V.shape}")
    wanted = {"x": (("seeds", seeds), ("batch", batch), ("d", d)), "target": (("seeds", seeds), ("batch", batch), ("c", V.shape[-1])),
              "j": (("seeds", seeds), ("batch", batch))}
    for key, dims in wanted.items():
        got = np.shape(data[key])
        if got != tuple(size for _, size in dims):
            shown = ", ".join(f"{name}={size}" for name, size in dims)
            raise ValueError(f"data {key} must have shape ({shown}), got {got}")
    a = v.positive(alpha, "alpha")
    if a.shape not in ((), (models,)):
        raise ValueError(f"alpha must be a scalar or one scale per model ({models}), got shape {a.shape}")
    if "log_gain" in params:
        gain = v.finite(params["log_gain"], "log_gain")
        if gain.shape != (seeds, models):
            raise ValueError(f"params log_gain must have shape (seeds={seeds}, models={models}), got {gain.shape}")
    return seeds, models, K.shape[1], K.shape[2], np.broadcast_to(a, (models,))


def _scale(params: dict, a: NDArray) -> NDArray:
    """The scale of every row, broadcasting against (seeds, batch, models): ``a`` (models,)
    alone, or ``a exp(log_gain)`` of shape (seeds, 1, models) when the scale is learned."""
    if "log_gain" not in params:
        return a
    return (a * np.exp(params["log_gain"]))[:, None, :]


def forward(params: dict, data: dict, alpha: ArrayLike, kind: str = "dot") -> dict[str, NDArray]:
    """Attention weights ``p`` (seeds, batch, models, n), the output ``y`` and
    the per-model loss (seeds, models), plus what the backward pass needs."""
    kind = _kind(kind)
    a = _shapes(params, data, alpha)[-1]
    return _forward(params, data, a, kind)


def _forward(params: dict, data: dict, a: NDArray, kind: str) -> dict[str, NDArray]:
    """:func:`forward` of inputs already validated, ``a`` one scale per model
    (the training loop's path: it validates once, not at every step)."""
    Wq, Wk = params["Wq"], params["Wk"]
    seeds, models = Wq.shape[:2]
    batch, n = data["K"].shape[1:3]
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
    a = _scale(params, a)
    p = _softmax_checked(s, a[..., None])
    y = p @ V  # (seeds, batch, models, c)
    diff = y - target[:, :, None, :]
    loss = np.mean(np.sum(diff * diff, axis=-1), axis=1) / c
    out.update(s=s, p=p, diff=diff, loss=loss, alpha=a)
    return out


def _accuracy(p: NDArray, j: NDArray) -> NDArray:
    """Per model: the share of rows whose largest weight is on the queried key ``j``."""
    return np.mean(np.argmax(p, axis=-1) == j[..., None], axis=1)


def _diagnostics(p: NDArray, j: NDArray, alpha: NDArray) -> tuple[NDArray, NDArray]:
    """Per model: :func:`_accuracy`, and the mean over rows of ``(1/2)||J||_1 = alpha (1 - sum p^2)``."""
    return _accuracy(p, j), np.mean(gradient_l1(p, alpha), axis=1)


def _score_gradient(f: dict, data: dict, total: int | None = None) -> NDArray:
    """``dL/ds = J g_p`` for the forward pass ``f``, with ``g_p = V g_y``:
    shape (seeds, batch, models, n). ``total``: the size of the batch whose mean
    loss is differentiated, when ``data`` is only a piece of it."""
    K, V = data["K"], data["V"]
    batch, c = (K.shape[1] if total is None else total), V.shape[-1]
    g_p = (2.0 * f["diff"] / (batch * c)) @ V.swapaxes(-1, -2)
    return _vjp_checked(f["p"], g_p, f["alpha"][..., None])


def _dot_key_sum(g_s: NDArray, K: NDArray) -> NDArray:
    """``r = sum_i (dL/ds_i) K_i / sqrt(d)`` for dot scores: (seeds, models, batch, d)."""
    return ((g_s / math.sqrt(K.shape[-1])) @ K).transpose(0, 2, 1, 3)


#: cosine scores form every model's keys, (seeds, batch, n, models, d) numbers; the
#: training step and the evaluation work through the batch in pieces of at most this
#: many of them (8 MB), which keeps the pieces in a core's cache (measured on this
#: machine: 1.5 to 2.5 times faster than the whole batch at once). The pieces depend
#: only on the shapes, never on the machine, so every CPU sums in the same order.
PIECE = 2**20


def _piece_size(seeds: int, n: int, models: int, d: int) -> int:
    """Examples per piece of a batch for cosine scores (at least one)."""
    return max(1, PIECE // (seeds * n * models * d))


def _pieces(params: dict, data: dict, kind: str) -> list[dict]:
    """``data`` cut along its batch axis into the consecutive pieces the model works
    through: the whole batch for dot scores, pieces of :func:`_piece_size` examples for
    cosine scores (one piece when the batch is small enough)."""
    seeds, batch, n, d = data["K"].shape
    size = _piece_size(seeds, n, params["Wq"].shape[1], d) if kind == "cosine" else batch
    if size >= batch:
        return [data]
    return [{key: val[:, i : i + size] for key, val in data.items()} for i in range(0, batch, size)]


def _loss_and_grads(params: dict, data: dict, alpha: ArrayLike, kind: str, *, checked: bool = False) -> tuple[dict, dict]:
    """The forward pass and the gradients of ``W_q`` and ``W_k`` (the training
    step's work), and of ``log_gain`` when the scale is learned. ``checked``: the
    inputs are already validated and ``alpha`` is one scale per model (the training loop),
    and for cosine scores the batch is worked through in pieces (see :data:`PIECE`); the
    forward pass returned then holds only the per-model ``loss``."""
    kind = _kind(kind)
    if checked:
        pieces = _pieces(params, data, kind)
        if len(pieces) > 1:
            batch = data["K"].shape[1]
            loss: NDArray | float = 0.0
            total: dict = {}
            for piece in pieces:
                f = _forward(params, piece, np.asarray(alpha), kind)
                grads = _grads(params, piece, f, kind, batch)
                loss = loss + f["loss"] * (piece["K"].shape[1] / batch)
                total = grads if not total else {key: total[key] + g for key, g in grads.items()}
            return {"loss": loss}, total
    f = _forward(params, data, np.asarray(alpha), kind) if checked else forward(params, data, alpha, kind)
    return f, _grads(params, data, f, kind, data["K"].shape[1])


def _grads(params: dict, data: dict, f: dict, kind: str, total: int) -> dict:
    """The gradients for the forward pass ``f`` of ``data`` (all of a batch of ``total``
    examples, or a piece of it)."""
    Wk = params["Wk"]
    K, x = data["K"], data["x"]
    seeds, batch, n, d = K.shape
    g_s = _score_gradient(f, data, total)
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
    grads = {"Wq": g_Wq, "Wk": g_Wk}
    if "log_gain" in params:
        # the logits are z = alpha exp(u) s, so dL/du = sum_i (dL/dz_i) z_i = sum_i (dL/ds_i) s_i,
        # summed over the batch (g_s already carries the 1/batch of the mean loss)
        grads["log_gain"] = np.einsum("sbmn,sbmn->sm", g_s, f["s"])
    return grads


def loss_and_grads(params: dict, data: dict, alpha: ArrayLike, kind: str = "dot") -> tuple[NDArray, dict, dict]:
    """Per-model loss (seeds, models), the gradients of ``W_q`` and ``W_k`` (and of
    ``log_gain`` when ``params`` holds it: a learned scale), and diagnostics per
    model: accuracy (the queried key has the largest weight) and the mean over
    rows of ``(1/2)||J||_1 = alpha (1 - sum p^2)`` at the model's scale."""
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
