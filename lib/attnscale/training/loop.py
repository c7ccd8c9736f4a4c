"""Training many models at once: every scale times every learning rate times
every seed, with common random numbers (all models of a seed share their
initial weights and see the same batches), Adam or plain SGD, held-out
evaluation and divergence marking; optionally with the scale itself trained.

:class:`TrainSettings` holds what a run is (checked once, when it is made),
:func:`train` runs it and returns a :class:`TrainResult`."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import _validate as v
from .model import _diagnostics, _forward, _kind, _loss_and_grads, _pieces, init_params, sample_batch

__all__ = ["OPTIMIZERS", "LIMIT", "TrainSettings", "TrainResult", "evaluation_steps", "train"]

#: weights beyond this size count as diverged (logits ~ LIMIT^2 |x| |K|)
LIMIT = 1e6
OPTIMIZERS = ("adam", "sgd")


def _optimizer(optimizer: object) -> str:
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    return str(optimizer)


@dataclass(frozen=True, kw_only=True)
class TrainSettings:
    """What :func:`train` trains: ``len(alphas) * rates * seeds`` models, and how.

    Checked when made: a bad setting is refused by a ``ValueError`` or ``TypeError``
    whose message begins with its name. The settings are kept normalised: ``alphas``
    a tuple of floats, ``lrs`` one tuple of rates per scale, ``eval_steps`` a tuple of
    ints (or None), the sizes ints and the flags bools.

    Parameters
    ----------
    n, d : int
        Keys per example and their width (each at least 2).
    kind : {'dot', 'cosine'}
        The scores.
    alphas : array_like, 1-d
        The scales (> 0); with ``learn_scale``, the initial scales.
    lrs : array_like
        One grid of learning rates shared by every scale (1-d), or one row of rates
        per scale, shape ``(len(alphas), rates)``.
    seeds : int
        Independent runs (initial weights and batches) of every (scale, rate).
    steps : int
        Optimiser steps.
    batch : int, default 32
        Examples per step and seed (and the chunks in which held-out rows are drawn).
    noise : float, default 1.0
        The queries' noise (>= 0), as in :func:`~attnscale.training.sample_batch`.
    c : int, default 8
        The width of the values.
    optimizer : {'adam', 'sgd'}, default 'adam'
        Adam with ``beta = (0.9, 0.999)``, ``eps = 1e-8``; SGD is plain.
    eval_every : int, default 10
        Evaluate on the test set at step 0, every ``eval_every`` steps and the last.
    eval_size : int, default 256
        Held-out *test* examples per seed, drawn from ``default_rng([seed, 1])``.
    eval_steps : array_like or None, default None
        Evaluate on the test set at these steps instead: increasing whole steps from
        0 to ``steps`` (see :func:`evaluation_steps`).
    validation_size : int, default 0
        With > 0, a second held-out set of that many examples per seed (from
        ``default_rng([seed, 3])``, never the test rows), evaluated at step 0, every
        ``validation_every`` steps and the last: for choosing the rate without
        looking at the test set.
    validation_every : int, default 20
        Evaluate on the validation set every ``validation_every`` steps.
    learn_scale : bool, default False
        Train the scale too: each model's scale is ``alpha exp(log_gain)``, one
        ``log_gain`` per model, starting at 0 and updated by the same optimiser and
        rate as the weights (a gain beyond ``LIMIT`` either way counts as diverged).
    weight_decay : float, default 0.0
        Adam only: AdamW, decoupled decay of ``Wq`` and ``Wk`` (not of a learned
        gain), each step ``W <- W (1 - lr weight_decay) - lr m1_hat / (sqrt(m2_hat) + eps)``
        as in PyTorch's ``AdamW``.
    return_params : bool, default False
        Return the final weights too.
    """

    n: int
    d: int
    kind: str
    alphas: ArrayLike
    lrs: ArrayLike
    seeds: int
    steps: int
    batch: int = 32
    noise: float = 1.0
    c: int = 8
    optimizer: str = "adam"
    eval_every: int = 10
    eval_size: int = 256
    eval_steps: ArrayLike | None = None
    validation_size: int = 0
    validation_every: int = 20
    learn_scale: bool = False
    weight_decay: float = 0.0
    return_params: bool = False

    def __post_init__(self) -> None:
        for name, value in _checked(self).items():
            object.__setattr__(self, name, value)


def _checked(s: TrainSettings) -> dict[str, Any]:
    """The settings of ``s`` checked and normalised, by name; a refusal begins with the name."""
    out: dict[str, Any] = {"kind": _kind(s.kind), "optimizer": _optimizer(s.optimizer)}
    for name, least in (("n", 2), ("d", 2), ("c", 1), ("seeds", 1), ("steps", 1), ("batch", 1), ("eval_every", 1), ("eval_size", 1)):
        out[name] = v.integer_at_least(getattr(s, name), name, least)
    if isinstance(s.validation_size, (bool, np.bool_)):
        raise TypeError(f"validation_size must be an integer >= 1 (or 0 for none), got {s.validation_size!r}")
    out["validation_size"] = v.integer_at_least(s.validation_size, "validation_size", 1) if s.validation_size != 0 else 0
    out["validation_every"] = v.integer_at_least(s.validation_every, "validation_every", 1)
    for name in ("learn_scale", "return_params"):
        flag = getattr(s, name)
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
        out[name] = bool(flag)
    weight_decay = out["weight_decay"] = _real(s.weight_decay, "weight_decay")
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    if weight_decay and out["optimizer"] != "adam":
        raise ValueError(f"weight_decay is decoupled decay for Adam (AdamW); optimizer {out['optimizer']!r} takes weight_decay=0")
    noise = out["noise"] = _real(s.noise, "noise")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    out["alphas"], out["lrs"] = _checked_grid(s.alphas, s.lrs)
    out["eval_steps"] = None if s.eval_steps is None else _checked_marks(s.eval_steps, out["steps"])
    return out


def _real(value: ArrayLike, name: str) -> float:
    """One finite real number (a bool or an array with entries is refused by name)."""
    try:
        entries = 0 if isinstance(value, (str, bytes)) or value is None else np.ndim(value)
    except ValueError:  # ragged
        entries = 1
    if isinstance(value, (bool, np.bool_)) or entries != 0:
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(v.finite(value, name))


def _numbers(value: ArrayLike, name: str) -> ArrayLike:
    """``value`` unchanged if it holds no bools and is not ragged (refused by name otherwise)."""
    def bools(x: object) -> bool:
        if isinstance(x, (bool, np.bool_)):
            return True
        if isinstance(x, np.ndarray):
            return x.dtype == np.bool_ or (x.dtype == object and any(bools(e) for e in x.ravel()))
        return isinstance(x, (list, tuple)) and any(bools(e) for e in x)

    if bools(value):
        raise TypeError(f"{name} must hold real numbers, not True or False, got {value!r}")
    if isinstance(value, (list, tuple)):
        try:
            np.asarray(value)
        except ValueError as exc:
            raise ValueError(f"{name} is ragged (rows of different lengths), got {value!r}") from exc
    return value


def _checked_grid(alphas: ArrayLike, lrs: ArrayLike) -> tuple[tuple[float, ...], tuple[tuple[float, ...], ...]]:
    """The scales, and the rates as one row per scale (a 1-d grid repeated for every scale)."""
    scales = v.at_least_1d(v.positive(_numbers(alphas, "alphas"), "alphas"), "alphas")
    rates = v.at_least_1d(v.positive(_numbers(lrs, "lrs"), "lrs"), "lrs")
    if scales.ndim != 1:
        raise ValueError(f"alphas must be a 1-d list, got shape {scales.shape}")
    if rates.ndim == 1:
        rates = np.broadcast_to(rates, (scales.size, rates.size))
    elif rates.ndim != 2 or rates.shape[0] != scales.size:
        raise ValueError(f"lrs must be a 1-d grid or one row of rates per scale, shape ({scales.size}, rates); got shape {rates.shape}")
    return tuple(scales.tolist()), tuple(tuple(row) for row in rates.tolist())


def _checked_marks(eval_steps: ArrayLike, steps: int) -> tuple[int, ...]:
    marks = v.finite(_numbers(eval_steps, "eval_steps"), "eval_steps")
    if (marks.ndim != 1 or marks.size < 2 or marks[0] != 0 or marks[-1] != steps or np.any(np.diff(marks) <= 0)
            or np.any(marks != np.round(marks))):
        raise ValueError(f"eval_steps must be increasing whole steps from 0 to steps = {steps}, got {v._show(marks)}")
    return tuple(int(t) for t in marks)


@dataclass(frozen=True, eq=False)
class TrainResult:
    """What :func:`train` returns. Below, ``alphas`` and ``lrs`` stand for the numbers of
    scales and of rates per scale, ``evals`` for the test evaluations and ``val_evals``
    for the validation evaluations; the entries that hang on a setting are None without it.

    Attributes
    ----------
    step : ndarray of int, (evals,)
        The steps at which the test set was evaluated.
    loss, accuracy, half_l1 : ndarray, (alphas, lrs, seeds, evals)
        Means over the test rows: the loss, the share of rows whose largest weight is on
        the queried key, and ``(1/2)||J||_1``.
    diverged_at : ndarray, (alphas, lrs, seeds)
        The step at which a model's weights left ``[-LIMIT, LIMIT]`` (or its log gain
        ``[-ln LIMIT, ln LIMIT]``), 0 if never; such a model keeps its last weights from then on.
    scale : ndarray, (alphas, lrs, seeds, evals), or None
        With ``learn_scale``: each model's scale at every test evaluation.
    val_step : ndarray of int, (val_evals,), or None
        With ``validation_size``: the steps at which the validation set was evaluated.
    val_loss : ndarray, (alphas, lrs, seeds, val_evals), or None
        With ``validation_size``: the mean loss over the validation rows.
    params : dict of ndarray, or None
        With ``return_params``: the final ``Wq`` and ``Wk`` (seeds, alphas * lrs, d, d) and, with
        ``learn_scale``, ``log_gain`` (seeds, alphas * lrs); model ``a * lrs + l`` is scale ``a`` at rate ``l``.
    """

    step: NDArray[np.int64]
    loss: NDArray[np.float64]
    accuracy: NDArray[np.float64]
    half_l1: NDArray[np.float64]
    diverged_at: NDArray[np.float64]
    scale: NDArray[np.float64] | None = None
    val_step: NDArray[np.int64] | None = None
    val_loss: NDArray[np.float64] | None = None
    params: dict[str, NDArray[np.float64]] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The entries that are there (not None), by name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


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


class _Evaluations:
    """A run's held-out sets and its curves, (evaluations, seeds, models), filled in as it
    goes: the test set at the steps ``marks``, the validation set (if any) at ``val_marks``."""

    def __init__(self, seed: int, s: TrainSettings, alpha: NDArray) -> None:
        self.alpha, self.kind = alpha, s.kind
        self.marks = _uniform_steps(s.steps, s.eval_every) if s.eval_steps is None else np.asarray(s.eval_steps).tolist()
        self.val_marks = _uniform_steps(s.steps, s.validation_every) if s.validation_size else []

        def rows(stream: int, size: int) -> list[dict]:
            # drawn in chunks of the batch size, then evaluated as one set (cosine scores in pieces)
            return _joined(_held_out_rows(np.random.default_rng([seed, stream]), s.seeds, size, s.batch, s.n, s.d, s.c, s.noise))

        self.tests = rows(1, s.eval_size)
        self.validation = rows(3, s.validation_size) if s.validation_size else []
        names = ("loss", "accuracy", "half_l1") + (("scale",) if s.learn_scale else ())
        self.curves = {key: np.empty((len(self.marks), s.seeds, alpha.size)) for key in names}
        self.val_loss = np.empty((len(self.val_marks), s.seeds, alpha.size))
        self.i = self.k = 0  # the next test and validation evaluations

    def record(self, t: int, params: dict) -> None:
        """Evaluate ``params`` on the sets due at step ``t``."""
        if self.i < len(self.marks) and t == self.marks[self.i]:
            curves = self.curves
            curves["loss"][self.i], curves["accuracy"][self.i], curves["half_l1"][self.i] = _evaluate(params, self.tests, self.alpha, self.kind)
            if "scale" in curves:
                curves["scale"][self.i] = self.alpha * np.exp(params["log_gain"])
            self.i += 1
        if self.k < len(self.val_marks) and t == self.val_marks[self.k]:
            self.val_loss[self.k] = _evaluate(params, self.validation, self.alpha, self.kind)[0]
            self.k += 1

    def result(self, rates: int, diverged_at: NDArray, params: dict | None) -> TrainResult:
        """The curves laid out (alphas, lrs, seeds, evaluations), model ``a * rates + l`` being (a, l)."""
        def laid_out(curve: NDArray) -> NDArray:
            return curve.transpose(2, 1, 0).reshape(-1, rates, curve.shape[1], curve.shape[0])

        curves = {key: laid_out(val) for key, val in self.curves.items()}
        validated = {"val_step": np.asarray(self.val_marks), "val_loss": laid_out(self.val_loss)} if self.val_marks else {}
        return TrainResult(step=np.asarray(self.marks), diverged_at=diverged_at.T.reshape(-1, rates, diverged_at.shape[0]), params=params,
                           **curves, **validated)


def _gradients(params: dict, rng: np.random.Generator, alpha: NDArray, s: TrainSettings, t: int) -> dict[str, NDArray]:
    """The gradients on step ``t``'s batch, drawn from ``rng``. An overflow or an undefined
    number on the way is a FloatingPointError naming the step and the rates."""
    try:
        with np.errstate(over="raise", invalid="raise"):
            return _loss_and_grads(params, sample_batch(rng, s.seeds, s.batch, s.n, s.d, s.c, s.noise), alpha, s.kind, checked=True)[1]
    except FloatingPointError as err:
        raise FloatingPointError(f"training diverged at step {t} ({err}); lower the learning rates {np.array(s.lrs).tolist()}") from None


def _optimizer_step(params: dict, grads: dict, moments: tuple[dict, dict], lr: NDArray, t: int, optimizer: str, weight_decay: float) -> dict[str, NDArray]:
    """The weights after step ``t`` of ``optimizer`` at the rates ``lr`` (one per model): plain
    SGD, or Adam (AdamW with ``weight_decay``) updating the ``moments`` (m1, m2) in place."""
    new = {}
    for key in params:
        g = grads[key]
        rate = lr[None, :, None, None] if g.ndim == 4 else lr  # weights (seeds, models, d, d); the log gain (seeds, models)
        if optimizer == "sgd":
            new[key] = params[key] - rate * g
        else:  # AdamW decays the weights, never a learned gain
            new[key] = _adam(params[key], g, moments[0][key], moments[1][key], rate, t, weight_decay if g.ndim == 4 else 0.0)
    return new


def _adam(w: NDArray, g: NDArray, m1: NDArray, m2: NDArray, rate: NDArray, t: int, weight_decay: float) -> NDArray:
    """Adam's step ``t`` from ``w`` (AdamW's with ``weight_decay``), its moments updated in place."""
    # in place, in the same order of operations as
    # m1 = 0.9 m1 + 0.1 g, m2 = 0.999 m2 + (0.001 g) g, W - lr m1_hat / (sqrt(m2_hat) + eps)
    m1 *= 0.9
    m1 += 0.1 * g
    m2 *= 0.999
    m2 += 0.001 * g * g
    step = np.sqrt(m2 / (1 - 0.999**t))
    step += 1e-8
    np.divide(m1 / (1 - 0.9**t), step, out=step)
    step *= rate
    # AdamW: the weights shrink by lr weight_decay first
    start = w * (1 - rate * weight_decay) if weight_decay else w
    return np.subtract(start, step, out=step)


def _freeze_diverged(params: dict, new: dict, frozen: NDArray[np.bool_], diverged_at: NDArray, t: int) -> dict[str, NDArray]:
    """The weights after step ``t``: ``new``, except for the models ``frozen`` (seeds, models),
    which keep ``params``. A model whose new weights leave [-LIMIT, LIMIT] (or whose log gain
    leaves [-ln LIMIT, ln LIMIT]) has diverged: it is marked in ``frozen`` and its step in
    ``diverged_at`` (both in place), and keeps its last weights, so that every later
    evaluation stays finite. (A NaN fails both comparisons and counts as diverged.)"""
    bad = np.zeros_like(frozen)
    for key in ("Wq", "Wk"):
        bad |= ~((new[key].max(axis=(-1, -2)) <= LIMIT) & (new[key].min(axis=(-1, -2)) >= -LIMIT))
    if "log_gain" in new:
        bad |= ~(np.abs(new["log_gain"]) <= math.log(LIMIT))
    if bad.any():
        newly = bad & ~frozen
        diverged_at[newly] = t
        frozen |= bad
    if not frozen.any():
        return new
    return {key: np.where(frozen.reshape(frozen.shape + (1,) * (new[key].ndim - 2)), params[key], new[key]) for key in params}


def train(seed: int, settings: TrainSettings) -> TrainResult:
    """Train the models of ``settings`` from ``seed``: every scale at each of its rates,
    ``settings.seeds`` times, the models of a seed from the same weights on the same batches.

    Parameters
    ----------
    seed : int
        The run's seed (>= 0): weights and batches from ``default_rng(seed)``, the test and
        validation sets from ``default_rng([seed, 1])`` and ``default_rng([seed, 3])``.
    settings : TrainSettings
        What to train and how (sizes, scales, rates, optimiser, evaluations).

    Returns
    -------
    TrainResult
        ``step`` (evals,); ``loss``, ``accuracy``, ``half_l1`` (alphas, lrs, seeds, evals);
        ``diverged_at`` (alphas, lrs, seeds); and, None unless their setting asks for them,
        ``scale``, ``val_step``, ``val_loss`` and ``params``.

    Raises
    ------
    TypeError, ValueError
        A bad ``seed`` or ``settings``, named first (:class:`TrainSettings` refuses a bad setting).
    FloatingPointError
        A step overflowed or met an undefined number (a zero query under cosine scores):
        the message names the step and the rates to lower.

    Examples
    --------
    >>> settings = TrainSettings(n=4, d=4, kind="dot", alphas=[1.0, 2.0], lrs=[0.01], seeds=2, steps=20, eval_size=16)
    >>> settings.lrs  # one row of rates per scale
    ((0.01,), (0.01,))
    >>> result = train(0, settings)
    >>> result.step
    array([ 0, 10, 20])
    >>> result.loss.shape, result.diverged_at.shape
    ((2, 1, 2, 3), (2, 1, 2))
    >>> result.val_loss is None  # no validation set was asked for
    True
    """
    seed = v.integer_at_least(seed, "seed", 0)
    if not isinstance(settings, TrainSettings):
        raise TypeError(f"settings must be a TrainSettings, got {settings!r:.80}")
    s = settings
    lrs = np.array(s.lrs)  # (alphas, rates)
    alpha, lr = np.repeat(np.array(s.alphas), lrs.shape[1]), lrs.reshape(-1)  # per model, model a * rates + l
    rng = np.random.default_rng(seed)
    params = init_params(rng, s.seeds, alpha.size, s.d)
    if s.learn_scale:
        params["log_gain"] = np.zeros((s.seeds, alpha.size))
    evaluations = _Evaluations(seed, s, alpha)
    moments = ({key: np.zeros_like(w) for key, w in params.items()}, {key: np.zeros_like(w) for key, w in params.items()})
    frozen = np.zeros((s.seeds, alpha.size), dtype=bool)
    diverged_at = np.zeros((s.seeds, alpha.size))
    evaluations.record(0, params)
    for t in range(1, s.steps + 1):
        grads = _gradients(params, rng, alpha, s, t)
        params = _freeze_diverged(params, _optimizer_step(params, grads, moments, lr, t, s.optimizer, s.weight_decay), frozen, diverged_at, t)
        evaluations.record(t, params)
    return evaluations.result(lrs.shape[1], diverged_at, params if s.return_params else None)
