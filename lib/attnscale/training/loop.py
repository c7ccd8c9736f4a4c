"""Training many models at once: every scale times every learning rate times
every seed, with common random numbers (all models of a seed share their
initial weights and see the same batches), Adam or plain SGD, held-out
evaluation and divergence marking; optionally with the scale itself trained."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validate as v
from .model import _diagnostics, _forward, _kind, _loss_and_grads, init_params, sample_batch

__all__ = ["OPTIMIZERS", "LIMIT", "train"]

#: weights beyond this size count as diverged (logits ~ LIMIT^2 |x| |K|)
LIMIT = 1e6
OPTIMIZERS = ("adam", "sgd")


def _optimizer(optimizer: object) -> str:
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    return str(optimizer)


def _held_out_rows(rng: np.random.Generator, seeds: int, size: int, batch: int, n: int, d: int, c: int, noise: float) -> list[dict]:
    """``size`` held-out examples per seed, drawn from ``rng`` in chunks of ``batch`` (as
    :func:`train` draws its evaluation set from ``default_rng([seed, 1])``)."""
    return [sample_batch(rng, seeds, min(batch, size - i), n, d, c, noise) for i in range(0, size, batch)]


def _evaluate(params: dict, evals: list[dict], alpha: NDArray, kind: str) -> tuple[NDArray, NDArray, NDArray]:
    loss, acc, l1 = [], [], []
    for chunk in evals:
        f = _forward(params, chunk, alpha, kind)
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
    learn_scale: bool = False,
    weight_decay: float = 0.0,
    return_params: bool = False,
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

    With ``learn_scale`` every model also trains its scale: ``alphas`` are the
    initial scales, each model's scale is ``alpha exp(log_gain)`` with one
    trained ``log_gain`` per model (starting at 0, updated by the same optimiser
    and learning rate as the weights; a gain beyond ``LIMIT`` either way counts
    as diverged), and ``scale`` (alphas, lrs, seeds, evals) records it at every
    evaluation.

    ``weight_decay`` (Adam only) makes the optimiser AdamW: decoupled decay of
    the weights ``Wq`` and ``Wk`` (not of a learned gain), each step
    ``W <- W (1 - lr weight_decay) - lr m1_hat / (sqrt(m2_hat) + eps)`` as in
    PyTorch's ``AdamW``.

    With ``return_params`` the result also holds ``params``: the final weights
    (and gains), each of shape (seeds, alphas * lrs, ...), model ``a * len(lrs) + l``
    being scale ``a`` at rate ``l``.
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
    for flag, name in ((learn_scale, "learn_scale"), (return_params, "return_params")):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
    weight_decay = float(v.finite(weight_decay, "weight_decay"))
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    if weight_decay and optimizer != "adam":
        raise ValueError(f"weight_decay is decoupled decay for Adam (AdamW); optimizer {optimizer!r} takes weight_decay=0")
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
    lr_model = np.tile(lrs, A)
    lr = lr_model[None, :, None, None]

    rng = np.random.default_rng(seed)
    params = init_params(rng, seeds, models, d)
    if learn_scale:
        params["log_gain"] = np.zeros((seeds, models))
    eval_rng = np.random.default_rng([seed, 1])
    evals = _held_out_rows(eval_rng, seeds, eval_size, batch, n, d, c, noise)
    m1 = {key: np.zeros_like(val) for key, val in params.items()}
    m2 = {key: np.zeros_like(val) for key, val in params.items()}
    marks = list(range(0, steps + 1, eval_every))
    if marks[-1] != steps:
        marks.append(steps)
    curves = {key: np.empty((len(marks), seeds, models)) for key in ("loss", "accuracy", "half_l1") + (("scale",) if learn_scale else ())}

    def record(i: int) -> None:
        curves["loss"][i], curves["accuracy"][i], curves["half_l1"][i] = _evaluate(params, evals, alpha, kind)
        if learn_scale:
            curves["scale"][i] = alpha * np.exp(params["log_gain"])

    frozen = np.zeros((seeds, models), dtype=bool)
    diverged_at = np.zeros((seeds, models))
    record(0)
    i = 1
    for t in range(1, steps + 1):
        try:
            with np.errstate(over="raise", invalid="raise"):
                _, grads = _loss_and_grads(params, sample_batch(rng, seeds, batch, n, d, c, noise), alpha, kind, checked=True)
        except FloatingPointError as err:
            raise FloatingPointError(f"training diverged at step {t} ({err}); lower the learning rates {lrs.tolist()}") from None
        new = {}
        for key in params:
            g = grads[key]
            rate = lr if g.ndim == 4 else lr_model  # weights (seeds, models, d, d); the log gain (seeds, models)
            if optimizer == "sgd":
                new[key] = params[key] - rate * g
                continue
            # in place, in the same order of operations as
            # m1 = 0.9 m1 + 0.1 g, m2 = 0.999 m2 + (0.001 g) g, W - lr m1_hat / (sqrt(m2_hat) + eps)
            m1[key] *= 0.9
            m1[key] += 0.1 * g
            m2[key] *= 0.999
            m2[key] += 0.001 * g * g
            step = np.sqrt(m2[key] / (1 - 0.999**t))
            step += 1e-8
            np.divide(m1[key] / (1 - 0.9**t), step, out=step)
            step *= rate
            # AdamW: the weights (not a learned gain) shrink by lr weight_decay first
            start = params[key] * (1 - rate * weight_decay) if weight_decay and g.ndim == 4 else params[key]
            new[key] = np.subtract(start, step, out=step)
        # A model whose weights leave [-LIMIT, LIMIT] has diverged: it keeps its
        # last weights (so every later evaluation stays finite) and is marked.
        # (A NaN weight fails both comparisons and counts as diverged.)
        bad = np.zeros_like(frozen)
        for key in ("Wq", "Wk"):
            bad |= ~((new[key].max(axis=(-1, -2)) <= LIMIT) & (new[key].min(axis=(-1, -2)) >= -LIMIT))
        if learn_scale:
            bad |= ~(np.abs(new["log_gain"]) <= math.log(LIMIT))
        if bad.any():
            newly = bad & ~frozen
            diverged_at[newly] = t
            frozen |= bad
        if frozen.any():
            for key in params:
                keep = frozen.reshape(frozen.shape + (1,) * (new[key].ndim - 2))
                params[key] = np.where(keep, params[key], new[key])
        else:
            params = new
        if i < len(marks) and t == marks[i]:
            record(i)
            i += 1
    result: dict[str, NDArray] = {key: val.transpose(2, 1, 0).reshape(A, L, seeds, len(marks)) for key, val in curves.items()}
    result["step"] = np.asarray(marks)
    result["diverged_at"] = diverged_at.T.reshape(A, L, seeds)
    if return_params:
        result["params"] = params  # type: ignore[assignment]
    return result
