"""Training many models at once: every scale times every learning rate times
every seed, with common random numbers (all models of a seed share their
initial weights and see the same batches), Adam or plain SGD, held-out
evaluation and divergence marking; optionally with the scale itself trained."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validate as v
from .model import _diagnostics, _forward, _kind, _loss_and_grads, _pieces, init_params, sample_batch

__all__ = ["OPTIMIZERS", "LIMIT", "evaluation_steps", "train"]

#: weights beyond this size count as diverged (logits ~ LIMIT^2 |x| |K|)
LIMIT = 1e6
OPTIMIZERS = ("adam", "sgd")


def _optimizer(optimizer: object) -> str:
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    return str(optimizer)


def _held_out_rows(rng: np.random.Generator, seeds: int, size: int, batch: int, n: int, d: int, c: int, noise: float) -> list[dict]:
    """``size`` held-out examples per seed, drawn from ``rng`` in chunks of ``batch`` (as
    :func:`train` draws its evaluation sets from ``default_rng([seed, 1])`` and ``default_rng([seed, 3])``)."""
    return [sample_batch(rng, seeds, min(batch, size - i), n, d, c, noise) for i in range(0, size, batch)]


def _joined(rows: list[dict]) -> list[dict]:
    """Chunks of held-out rows joined along the batch axis into one chunk (fewer, larger
    products for the evaluations; the rows and their order are unchanged)."""
    return [{key: np.concatenate([chunk[key] for chunk in rows], axis=1) for key in rows[0]}]


def evaluation_steps(steps: int, resolution: float = 0.05, dense: int = 20) -> NDArray[np.int64]:
    """The steps at which :func:`train` evaluates on its test set: every step up to
    ``dense``, then each next one at most ``resolution`` times the current step
    further (``t + max(1, floor(resolution t))``), and the last step. A step to a target
    read off this schedule is therefore known to within ``resolution`` of itself
    from step ``dense`` on, and exactly before it."""
    steps = v.integer_at_least(steps, "steps", 1)
    if steps > np.iinfo(np.int64).max:
        raise ValueError(f"steps must be an integer <= {np.iinfo(np.int64).max}, got {steps}")
    dense = v.integer_at_least(dense, "dense", 1)
    resolution = v.real_number(resolution, "resolution")
    if not 0 < resolution <= 1:
        raise ValueError(f"resolution must lie in (0, 1], got {resolution!r}")
    marks = list(range(min(dense, steps) + 1))
    t = marks[-1]
    while t < steps:
        t = min(steps, t + max(1, math.floor(resolution * t)))
        marks.append(t)
    return np.array(marks, dtype=np.int64)


def _uniform_steps(steps: int, every: int) -> list[int]:
    marks = list(range(0, steps + 1, every))
    if marks[-1] != steps:
        marks.append(steps)
    return marks


def _evaluate(params: dict, evals: list[dict], alpha: NDArray, kind: str) -> tuple[NDArray, NDArray, NDArray]:
    """Mean held-out loss, accuracy and (1/2)||J||_1 per (seed, model) over the chunks of
    ``evals``, each chunk weighted by its number of examples (cosine chunks worked through
    in pieces, as the training step does)."""
    loss, acc, l1, sizes = [], [], [], []
    for chunk in evals:
        for piece in _pieces(params, chunk, kind):
            f = _forward(params, piece, alpha, kind)
            accuracy, half_l1 = _diagnostics(f["p"], piece["j"], f["alpha"])
            loss.append(f["loss"])
            acc.append(accuracy)
            l1.append(half_l1)
            sizes.append(piece["K"].shape[1])
    w = np.asarray(sizes, dtype=float) / sum(sizes)
    return np.tensordot(w, loss, axes=1), np.tensordot(w, acc, axes=1), np.tensordot(w, l1, axes=1)


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
    eval_steps: ArrayLike | None = None,
    validation_size: int = 0,
    validation_every: int = 20,
    learn_scale: bool = False,
    weight_decay: float = 0.0,
    return_params: bool = False,
) -> dict[str, NDArray]:
    """Train ``len(alphas) * len(lrs) * seeds`` models.

    ``lrs`` is one grid of learning rates shared by every scale (1-d), or one
    row of rates per scale, shape ``(len(alphas), rates)``.

    Each model is evaluated on a fixed held-out *test* set of ``eval_size``
    examples per seed (from ``default_rng([seed, 1])``) at step 0 and every
    ``eval_every`` steps, or at the steps ``eval_steps`` (increasing, from 0 to
    ``steps``; see :func:`evaluation_steps`). Returns ``step`` (evals,) and
    ``loss``, ``accuracy``, ``half_l1`` (the mean over held-out rows of
    ``(1/2)||J||_1``) of shape ``(alphas, lrs, seeds, evals)``.
    With ``validation_size`` > 0 a second held-out set of that many examples per
    seed (from ``default_rng([seed, 3])``, never the test rows) is evaluated every
    ``validation_every`` steps: ``val_step`` and ``val_loss`` (alphas, lrs, seeds,
    val_evals), for choosing the rate without looking at the test set.
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
    if validation_size != 0:
        validation_size = v.integer_at_least(validation_size, "validation_size", 1)
    validation_every = v.integer_at_least(validation_every, "validation_every", 1)
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
    if alphas.ndim != 1:
        raise ValueError(f"alphas must be a 1-d list, got shape {alphas.shape}")
    if lrs.ndim == 1:
        lrs = np.broadcast_to(lrs, (alphas.size, lrs.size))
    elif lrs.ndim != 2 or lrs.shape[0] != alphas.size:
        raise ValueError(f"lrs must be a 1-d grid or one row of rates per scale, shape ({alphas.size}, rates); got shape {lrs.shape}")
    if eval_steps is None:
        marks = _uniform_steps(steps, eval_every)
    else:
        marks_arr = v.finite(eval_steps, "eval_steps")
        if (marks_arr.ndim != 1 or marks_arr.size < 2 or marks_arr[0] != 0 or marks_arr[-1] != steps or np.any(np.diff(marks_arr) <= 0)
                or np.any(marks_arr != np.round(marks_arr))):
            raise ValueError(f"eval_steps must be increasing whole steps from 0 to steps = {steps}, got {v._show(marks_arr)}")
        marks = [int(t) for t in marks_arr]
    A, L = lrs.shape
    models = A * L
    alpha = np.repeat(alphas, L)
    lr_model = lrs.reshape(models)
    lr = lr_model[None, :, None, None]

    rng = np.random.default_rng(seed)
    params = init_params(rng, seeds, models, d)
    if learn_scale:
        params["log_gain"] = np.zeros((seeds, models))
    # drawn in chunks of the batch size, then evaluated as one set (cosine scores in pieces)
    evals = _joined(_held_out_rows(np.random.default_rng([seed, 1]), seeds, eval_size, batch, n, d, c, noise))
    val_marks = _uniform_steps(steps, validation_every) if validation_size else []
    val_rows = _joined(_held_out_rows(np.random.default_rng([seed, 3]), seeds, validation_size, batch, n, d, c, noise)) if validation_size else []
    m1 = {key: np.zeros_like(val) for key, val in params.items()}
    m2 = {key: np.zeros_like(val) for key, val in params.items()}
    curves = {key: np.empty((len(marks), seeds, models)) for key in ("loss", "accuracy", "half_l1") + (("scale",) if learn_scale else ())}
    val_loss = np.empty((len(val_marks), seeds, models))
    i = k = 0  # the next test and validation evaluations

    def record(t: int) -> None:
        nonlocal i, k
        if i < len(marks) and t == marks[i]:
            curves["loss"][i], curves["accuracy"][i], curves["half_l1"][i] = _evaluate(params, evals, alpha, kind)
            if learn_scale:
                curves["scale"][i] = alpha * np.exp(params["log_gain"])
            i += 1
        if k < len(val_marks) and t == val_marks[k]:
            val_loss[k] = _evaluate(params, val_rows, alpha, kind)[0]
            k += 1

    frozen = np.zeros((seeds, models), dtype=bool)
    diverged_at = np.zeros((seeds, models))
    record(0)
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
        record(t)
    result: dict[str, NDArray] = {key: val.transpose(2, 1, 0).reshape(A, L, seeds, len(marks)) for key, val in curves.items()}
    result["step"] = np.asarray(marks)
    if validation_size:
        result["val_loss"] = val_loss.transpose(2, 1, 0).reshape(A, L, seeds, len(val_marks))
        result["val_step"] = np.asarray(val_marks)
    result["diverged_at"] = diverged_at.T.reshape(A, L, seeds)
    if return_params:
        result["params"] = params  # type: ignore[assignment]
    return result
