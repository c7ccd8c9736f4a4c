"""A small decoder-only byte transformer in JAX: pre-LayerNorm blocks, rotary
positions, causal multi-head attention whose logits are ``alpha q.k/sqrt(d_head)``
(dot scores) or ``g cos(q, k)`` (QK-norm), and a GELU MLP.

Gradients come from JAX's autodiff (no hand-derived gradient here, unlike
:mod:`attnscale.training`). The initialisation makes the book's premise hold at
step 0: LayerNorm'd inputs and fan-in weights give query and key components of unit
variance, so a dot-score row's logits have standard deviation about ``alpha``; the
output head starts at zero, so the untrained model is uniform over the 256 bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, asdict
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["Config", "init_params", "forward", "loss_fn", "attention_logits", "SCORE_KINDS", "SCALE_MODES"]

SCORE_KINDS = ("dot", "cosine")
#: how the cosine scale g is held: a setting, a raw trained scalar, or g0 * exp(u) with u trained
SCALE_MODES = ("fixed", "raw", "exp")


def _require(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise ValueError(f"{name} {message}")


@dataclass(frozen=True)
class Config:
    """The model's shape and its attention scores (static settings of a compiled step)."""

    layers: int = 2
    width: int = 64
    heads: int = 2
    context: int = 128
    kind: str = "dot"
    scale_mode: str = "fixed"
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        for name in ("layers", "width", "heads", "context"):
            value = getattr(self, name)
            _require(isinstance(value, int) and not isinstance(value, bool) and value >= 1, name, f"must be a positive integer, got {value!r}")
        _require(self.width % self.heads == 0, "heads", f"must divide width {self.width}, got {self.heads}")
        _require((self.width // self.heads) % 2 == 0, "heads", f"must leave an even head dimension for rotary positions, got width {self.width} / {self.heads}")
        _require(self.kind in SCORE_KINDS, "kind", f"must be one of {SCORE_KINDS}, got {self.kind!r}")
        _require(self.scale_mode in SCALE_MODES, "scale_mode", f"must be one of {SCALE_MODES}, got {self.scale_mode!r}")
        _require(self.kind == "cosine" or self.scale_mode == "fixed", "scale_mode", "must be 'fixed' for dot scores (alpha is a setting)")
        _require(isinstance(self.rope_base, (int, float)) and self.rope_base > 1, "rope_base", f"must be a number above 1, got {self.rope_base!r}")

    @property
    def d_head(self) -> int:
        return self.width // self.heads

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def init_params(key: jax.Array, cfg: Config, scale0: float | jax.Array = 1.0) -> dict[str, Any]:
    """Parameters from ``key``. ``scale0`` is the cosine scale's start (g0) for a
    learned scale; the raw mode stores g itself, the exp mode stores u = 0."""
    D, L = cfg.width, cfg.layers
    keys = jax.random.split(key, 1 + 6 * L)
    normal = jax.random.normal
    out_std = 1.0 / math.sqrt(2 * L)
    blocks = []
    for i in range(L):
        k = keys[1 + 6 * i: 7 + 6 * i]
        block = {
            "ln1_g": jnp.ones(D), "ln1_b": jnp.zeros(D),
            "wq": normal(k[0], (D, D)) / math.sqrt(D),
            "wk": normal(k[1], (D, D)) / math.sqrt(D),
            "wv": normal(k[2], (D, D)) / math.sqrt(D),
            "wo": normal(k[3], (D, D)) / math.sqrt(D) * out_std,
            "ln2_g": jnp.ones(D), "ln2_b": jnp.zeros(D),
            "w1": normal(k[4], (D, 4 * D)) / math.sqrt(D), "b1": jnp.zeros(4 * D),
            "w2": normal(k[5], (4 * D, D)) / math.sqrt(4 * D) * out_std, "b2": jnp.zeros(D),
        }
        if cfg.scale_mode == "raw":
            block["g"] = jnp.full((cfg.heads,), 1.0) * scale0
        elif cfg.scale_mode == "exp":
            block["u"] = jnp.zeros((cfg.heads,))
        blocks.append(block)
    return {
        "embed": normal(keys[0], (256, D)),
        "blocks": blocks,
        "lnf_g": jnp.ones(D), "lnf_b": jnp.zeros(D),
        "head": jnp.zeros((D, 256)),
    }


def decay_mask(params: dict[str, Any]) -> dict[str, Any]:
    """True for the weight matrices AdamW decays (not gains, biases, scales)."""
    return jax.tree_util.tree_map(lambda p: p.ndim == 2, params)


def _layer_norm(x: jax.Array, g: jax.Array, b: jax.Array) -> jax.Array:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5) * g + b


def _rope(x: jax.Array, base: float) -> jax.Array:
    """Rotary positions on the last axis of ``x`` (..., T, d), position = index on T."""
    T, d = x.shape[-2], x.shape[-1]
    freq = base ** (-jnp.arange(0, d // 2) * 2.0 / d)
    ang = jnp.arange(T)[:, None] * freq[None, :]
    cos, sin = jnp.cos(ang), jnp.sin(ang)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def _scores(block: dict[str, Any], h: jax.Array, cfg: Config, scale: jax.Array, factor: jax.Array | None) -> tuple[jax.Array, jax.Array]:
    """Attention logits (B, H, T, T) before the mask, and the values (B, H, T, dh)."""
    B, T, D = h.shape
    H, dh = cfg.heads, cfg.d_head

    def split(w: jax.Array) -> jax.Array:
        return (h @ w).reshape(B, T, H, dh).transpose(0, 2, 1, 3)

    q, k, val = split(block["wq"]), split(block["wk"]), split(block["wv"])
    if cfg.kind == "cosine":
        q = q * jax.lax.rsqrt((q * q).sum(-1, keepdims=True) + 1e-12)
        k = k * jax.lax.rsqrt((k * k).sum(-1, keepdims=True) + 1e-12)
        if cfg.scale_mode == "raw":
            scale = block["g"]
        elif cfg.scale_mode == "exp":
            scale = scale * jnp.exp(block["u"])
        else:
            scale = jnp.broadcast_to(scale, (H,))
        mult = scale[None, :, None, None]
    else:
        mult = jnp.broadcast_to(scale, (H,))[None, :, None, None] / math.sqrt(dh)
    q, k = _rope(q, cfg.rope_base), _rope(k, cfg.rope_base)
    logits = jnp.einsum("bhqd,bhkd->bhqk", q, k) * mult
    if factor is not None:  # a length rule's factor per query row (T,)
        logits = logits * factor[None, None, :, None]
    return logits, val


def _attend(logits: jax.Array, val: jax.Array) -> jax.Array:
    T = logits.shape[-1]
    mask = jnp.tril(jnp.ones((T, T), dtype=bool))
    logits = jnp.where(mask, logits, -jnp.inf)
    p = jax.nn.softmax(logits, axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", p, val)


def forward(params: dict[str, Any], tokens: jax.Array, cfg: Config, scale: float | jax.Array = 1.0,
            factor: jax.Array | None = None, return_logits: bool = False) -> Any:
    """Next-byte logits (B, T, 256) for byte tokens (B, T). ``scale`` is alpha (dot) or
    g (fixed cosine) or g0 (exp mode); ``factor`` (T,) multiplies each query row's
    attention logits (a length rule at evaluation). With ``return_logits`` also the
    masked-out-free attention logits of every layer, (L, B, H, T, T)."""
    scale = jnp.asarray(scale, dtype=jnp.float32)
    # a one-hot product, not a gather: XLA's CPU scatter (the gather's gradient) is slow
    x = jax.nn.one_hot(tokens, 256, dtype=params["embed"].dtype) @ params["embed"]
    B, T, D = x.shape
    all_logits = []
    for block in params["blocks"]:
        h = _layer_norm(x, block["ln1_g"], block["ln1_b"])
        logits, val = _scores(block, h, cfg, scale, factor)
        if return_logits:
            all_logits.append(logits)
        out = _attend(logits, val).transpose(0, 2, 1, 3).reshape(B, T, D)
        x = x + out @ block["wo"]
        h = _layer_norm(x, block["ln2_g"], block["ln2_b"])
        x = x + jax.nn.gelu(h @ block["w1"] + block["b1"]) @ block["w2"] + block["b2"]
    x = _layer_norm(x, params["lnf_g"], params["lnf_b"])
    out = x @ params["head"]
    if return_logits:
        return out, jnp.stack(all_logits)
    return out


def attention_logits(params: dict[str, Any], tokens: jax.Array, cfg: Config, scale: float | jax.Array = 1.0) -> jax.Array:
    """Every layer's attention logits before the causal mask, (L, B, H, T, T)."""
    return forward(params, tokens, cfg, scale, return_logits=True)[1]


def loss_fn(params: dict[str, Any], window: jax.Array, cfg: Config, scale: float | jax.Array = 1.0, factor: jax.Array | None = None) -> jax.Array:
    """Mean next-byte cross-entropy in nats over a window batch (B, T+1)."""
    inputs, targets = window[:, :-1], window[:, 1:]
    logits = forward(params, inputs, cfg, scale, factor)
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -(logp * jax.nn.one_hot(targets, 256, dtype=logp.dtype)).sum(-1).mean()
