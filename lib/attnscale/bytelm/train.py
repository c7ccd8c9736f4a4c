"""Training several byte models at once: one compiled AdamW step, ``jax.vmap``-ed over
*members* (each with its own seed, learning rate and scale), so both cores work on one
large batched computation instead of many small ones.

The optimiser is optax's Adam moments (``scale_by_adam``) after global-norm clipping,
with decoupled weight decay on the weight matrices and a linear-warmup, cosine-decay
schedule; the rate is a per-member number, so members with different rates share a step.
Every run is deterministic: a member's initialisation and batches come from
``PRNGKey(seed)`` only, so the same seed sees the same start and the same bytes at every
scale and rate (the comparisons are paired).
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from dataclasses import dataclass, asdict
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

from .model import Config, _require, decay_mask, init_params, loss_fn  # noqa: E402

__all__ = ["Optim", "Members", "train_members", "evaluate", "member_keys"]


@dataclass(frozen=True)
class Optim:
    """The run's optimiser and length (static settings)."""

    steps: int = 400
    batch: int = 32
    weight_decay: float = 0.1
    clip: float = 1.0
    warmup: float = 0.1
    final: float = 0.1
    b1: float = 0.9
    b2: float = 0.95
    chunk: int = 50

    def __post_init__(self) -> None:
        for name in ("steps", "batch", "chunk"):
            value = getattr(self, name)
            _require(isinstance(value, int) and not isinstance(value, bool) and value >= 1, name, f"must be a positive integer, got {value!r}")
        _require(self.weight_decay >= 0, "weight_decay", f"must be at least 0, got {self.weight_decay!r}")
        _require(self.clip > 0, "clip", f"must be positive (use math.inf for no clipping), got {self.clip!r}")
        _require(0 <= self.warmup < 1, "warmup", f"must be a fraction in [0, 1), got {self.warmup!r}")
        _require(0 <= self.final <= 1, "final", f"must be a fraction in [0, 1], got {self.final!r}")
        _require(math.isfinite(self.weight_decay), "weight_decay", f"must be finite, got {self.weight_decay!r}")
        for name in ("b1", "b2"):
            value = getattr(self, name)
            _require(0 <= value < 1, name, f"must be a decay rate in [0, 1), got {value!r}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Members:
    """The runs trained together: one entry per member."""

    seeds: tuple[int, ...]
    rates: tuple[float, ...]
    scales: tuple[float, ...]

    def __post_init__(self) -> None:
        m = len(self.seeds)
        _require(m >= 1, "seeds", "must name at least one member")
        _require(len(self.rates) == m and len(self.scales) == m, "rates", f"and scales must have one entry per seed ({m})")
        _require(all(r > 0 and math.isfinite(r) for r in self.rates), "rates", f"must be positive, got {self.rates}")
        _require(all(s > 0 and math.isfinite(s) for s in self.scales), "scales", f"must be positive, got {self.scales}")
        _require(all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in self.seeds), "seeds", f"must be integers at least 0, got {self.seeds}")


def member_keys(seed: int) -> tuple[jax.Array, jax.Array]:
    """(initialisation key, data key) of a seed."""
    k = jax.random.PRNGKey(seed)
    return jax.random.fold_in(k, 0), jax.random.fold_in(k, 1)


def _schedule(step: jax.Array, opt: Optim) -> jax.Array:
    s = step.astype(jnp.float32)
    warm = max(1.0, opt.warmup * opt.steps)
    t = jnp.clip((s - warm) / max(1.0, opt.steps - warm), 0.0, 1.0)
    decay = opt.final + (1 - opt.final) * 0.5 * (1 + jnp.cos(jnp.pi * t))
    return jnp.where(s < warm, (s + 1) / warm, decay)


def _windows(train: jax.Array, key: jax.Array, step: jax.Array, batch: int, length: int) -> jax.Array:
    offsets = jax.random.randint(jax.random.fold_in(key, step), (batch,), 0, train.shape[0] - length)
    return train[offsets[:, None] + jnp.arange(length)[None, :]].astype(jnp.int32)


@lru_cache(maxsize=8)
def _make_chunk(cfg: Config, opt: Optim):
    adam = optax.scale_by_adam(b1=opt.b1, b2=opt.b2, eps=1e-8)
    clip = optax.clip_by_global_norm(opt.clip) if math.isfinite(opt.clip) else optax.identity()

    def one_step(carry, step, train, data_key, lr, scale):
        params, state = carry
        window = _windows(train, data_key, step, opt.batch, cfg.context + 1)
        loss, grads = jax.value_and_grad(loss_fn)(params, window, cfg, scale)
        grads, _ = clip.update(grads, optax.EmptyState())
        updates, state = adam.update(grads, state, params)
        rate = lr * _schedule(step, opt)
        mask = decay_mask(params)
        params = jax.tree_util.tree_map(lambda p, u, m: p - rate * (u + (opt.weight_decay * p if m else 0.0)), params, updates, mask)
        return (params, state), loss

    def member_chunk(params, state, start, train, data_key, lr, scale):
        steps = start + jnp.arange(opt.chunk)
        (params, state), losses = jax.lax.scan(lambda c, s: one_step(c, s, train, data_key, lr, scale), (params, state), steps)
        return params, state, losses

    return jax.jit(jax.vmap(member_chunk, in_axes=(0, 0, None, None, 0, 0, 0)))


def _init(cfg: Config, opt: Optim, members: Members) -> tuple[Any, Any, jax.Array]:
    adam = optax.scale_by_adam(b1=opt.b1, b2=opt.b2, eps=1e-8)
    init_keys = jnp.stack([member_keys(s)[0] for s in members.seeds])
    data_keys = jnp.stack([member_keys(s)[1] for s in members.seeds])
    scales = jnp.asarray(members.scales, dtype=jnp.float32)
    params = jax.vmap(lambda k, s: init_params(k, cfg, s))(init_keys, scales)
    state = jax.vmap(adam.init)(params)
    return params, state, data_keys


def train_members(cfg: Config, opt: Optim, members: Members, train: np.ndarray, *, checkpoints: tuple[int, ...] = (),
                  on_checkpoint: Any = None, stop: int | None = None) -> tuple[Any, np.ndarray]:
    """Train every member for ``opt.steps`` steps, or only the first ``stop`` of them (the
    same steps as in the full run: the schedule is the full run's); returns (params stacked
    over members, training losses (members, steps)). ``on_checkpoint(step, params)`` is
    called after each step count in ``checkpoints`` (multiples of ``opt.chunk``) and at step 0."""
    _require(opt.steps % opt.chunk == 0, "steps", f"must be a multiple of chunk {opt.chunk}, got {opt.steps}")
    end = opt.steps if stop is None else stop
    _require(isinstance(end, int) and 0 < end <= opt.steps and end % opt.chunk == 0, "stop", f"must be a multiple of chunk {opt.chunk} in (0, {opt.steps}], got {stop!r}")
    _require(train.shape[0] > cfg.context + 1, "train", f"must hold more than context + 1 = {cfg.context + 1} bytes")
    chunk = _make_chunk(cfg, opt)
    params, state, data_keys = _init(cfg, opt, members)
    train_j = jnp.asarray(train, dtype=jnp.uint8)
    lrs = jnp.asarray(members.rates, dtype=jnp.float32)
    scales = jnp.asarray(members.scales, dtype=jnp.float32)
    if on_checkpoint is not None:
        on_checkpoint(0, params)
    losses = []
    for start in range(0, end, opt.chunk):
        params, state, chunk_losses = chunk(params, state, jnp.int32(start), train_j, data_keys, lrs, scales)
        losses.append(np.asarray(chunk_losses))
        if on_checkpoint is not None and start + opt.chunk in checkpoints:
            on_checkpoint(start + opt.chunk, params)
    return params, np.concatenate(losses, axis=1)


def evaluation_windows(valid: np.ndarray, count: int, length: int) -> np.ndarray:
    """``count`` windows of ``length`` bytes evenly spaced over the validation bytes."""
    _require(valid.shape[0] >= length, "valid", f"must hold at least {length} bytes")
    starts = np.linspace(0, valid.shape[0] - length, count).astype(np.int64)
    return valid[starts[:, None] + np.arange(length)[None, :]]


def _per_position_loss(params, windows, cfg, scale, factor):
    from .model import forward
    logits = forward(params, windows[:, :-1], cfg, scale, factor)
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -(logp * jax.nn.one_hot(windows[:, 1:], 256, dtype=logp.dtype)).sum(-1).mean(0)


@lru_cache(maxsize=8)
def _evaluator(cfg: Config):
    return jax.jit(jax.vmap(lambda p, s, w, f: _per_position_loss(p, w, cfg, s, f), in_axes=(0, 0, None, None)))


def evaluate(cfg: Config, params: Any, scales: Any, windows: np.ndarray, *, factor: np.ndarray | None = None, block: int = 32) -> np.ndarray:
    """Validation loss in nats per byte position, (members, T), averaged over the
    windows (B, T+1) in blocks of ``block`` windows; ``factor`` (T,) is a length rule."""
    T = windows.shape[1] - 1
    fn = _evaluator(Config(**{**cfg.as_dict(), "context": T}))
    f = jnp.ones(T, dtype=jnp.float32) if factor is None else jnp.asarray(factor, dtype=jnp.float32)
    total: Any = 0
    for i in range(0, windows.shape[0], block):
        w = jnp.asarray(windows[i:i + block], dtype=jnp.int32)
        total = total + np.asarray(fn(params, jnp.asarray(scales, dtype=jnp.float32), w, f)) * w.shape[0]
    return total / windows.shape[0]
