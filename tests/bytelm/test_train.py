"""Training many byte models as one compiled step (attnscale.bytelm.train): runs are
functions of their seeds, training lowers the loss from ln 256, and bad settings are
refused by name."""

import functools
import math

import numpy as np
import pytest

pytest.importorskip("jax")

from attnscale.bytelm import corpus  # noqa: E402
from attnscale.bytelm.model import Config  # noqa: E402
from attnscale.bytelm.train import Members, Optim, train_members  # noqa: E402

SMALL = Config(layers=2, width=16, heads=2, context=12)


@pytest.mark.parametrize("make, name", [
    (lambda: Optim(steps=0), "steps"), (lambda: Optim(weight_decay=-1.0), "weight_decay"), (lambda: Optim(clip=0.0), "clip"),
    (lambda: Optim(warmup=1.0), "warmup"), (lambda: Members(seeds=(0, 1), rates=(0.01,), scales=(1.0, 1.0)), "rates"),
    (lambda: Members(seeds=(0,), rates=(-0.01,), scales=(1.0,)), "rates"), (lambda: Members(seeds=(0,), rates=(0.01,), scales=(0.0,)), "scales"),
    (lambda: Members(seeds=(-1,), rates=(0.01,), scales=(1.0,)), "seeds"), (lambda: Members(seeds=(True,), rates=(0.01,), scales=(1.0,)), "seeds"),
    (lambda: Optim(b1=1.5), "b1"), (lambda: Optim(b2=-0.1), "b2"), (lambda: Optim(b1=float("nan")), "b1"), (lambda: Optim(weight_decay=float("inf")), "weight_decay"),
    (lambda: train_members(SMALL, Optim(steps=10, chunk=4), Members((0,), (0.01,), (1.0,)), np.zeros(100, np.uint8)), "steps"),
    (lambda: train_members(SMALL, Optim(steps=4, chunk=4), Members((0,), (0.01,), (1.0,)), np.zeros(10, np.uint8)), "train"),
])
def test_bad_settings_are_refused_by_name(make, name):
    with pytest.raises(ValueError) as err:
        make()
    assert str(err.value).startswith(name + " ")


def test_training_is_deterministic_and_lowers_the_loss():
    train, _ = corpus.split()
    members = Members(seeds=(0, 0, 1), rates=(0.01, 0.01, 0.01), scales=(1.0, 1.0, 1.0))
    _, losses = train_members(SMALL, Optim(steps=8, batch=4, chunk=4), members, train)
    assert np.array_equal(losses[0], losses[1]) and not np.array_equal(losses[0], losses[2])
    assert losses[:, 0] == pytest.approx(math.log(256), rel=1e-6) and (losses[:, -1] < losses[:, 0]).all()



def _two_steps(clip: float, rate: float = 0.05) -> list[dict]:
    """The parameters of member 0 at steps 0, 1 and 2 of train_members (no decay; a two-step
    run's schedule gives the full rate at both steps) on bytes that are all 'a', so that every
    window is the same, in float64."""
    import jax

    members = Members(seeds=(0,), rates=(rate,), scales=(1.0,))
    seen: list[dict] = []
    params, _ = train_members(SMALL, Optim(steps=2, batch=4, chunk=1, weight_decay=0.0, clip=clip), members, np.full(200, ord("a"), np.uint8),
                              checkpoints=(1,), on_checkpoint=lambda step, p: seen.append(p))
    return [jax.tree_util.tree_map(lambda x: np.asarray(x[0], np.float64), p) for p in (*seen, params)]


@functools.cache
def _compiled_gradient():
    """The loss's gradient, compiled once (traced op by op, it takes seconds per call)."""
    import jax

    from attnscale.bytelm.model import loss_fn

    return jax.jit(jax.grad(loss_fn), static_argnums=2)


def _gradient(params: dict) -> tuple[dict, float]:
    """The gradient of the loss on the all-'a' window at ``params`` (float64), and its global norm."""
    import jax
    import jax.numpy as jnp

    window = jnp.full((4, SMALL.context + 1), ord("a"), jnp.int32)
    at = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32), params)
    grads = jax.tree_util.tree_map(lambda g: np.asarray(g, np.float64), _compiled_gradient()(at, window, SMALL, jnp.float32(1.0)))
    return grads, math.sqrt(sum(float((g**2).sum()) for g in jax.tree_util.tree_leaves(grads)))


def _adam_steps_by_hand(path: list[dict], clip: float, out_masks: list, rate: float = 0.05, b1: float = 0.9, b2: float = 0.95, eps: float = 1e-8) -> list[dict]:
    """Steps 1 and 2 by hand from the run's parameters at steps 0 and 1: each gradient rescaled to
    global norm ``clip`` when its global norm is larger (optax.clip_by_global_norm's rule), then
    AdamW's update without decay, with bias-corrected moments. Appends to ``out_masks`` where
    each gradient is at least 1e-5: elsewhere an unclipped step, about rate * sign(g), hangs on
    float32 rounding of g (the training step and this gradient sum in different orders)."""
    import jax

    tree = jax.tree_util.tree_map
    m = v = tree(np.zeros_like, path[0])
    out = []
    for t, params in enumerate(path[:2], start=1):
        grads, norm = _gradient(params)
        out_masks.append(tree(lambda x: np.abs(x) >= 1e-5, grads))
        g = tree(lambda x: x * min(1.0, clip / norm), grads)
        m, v = tree(lambda a, x: b1 * a + (1 - b1) * x, m, g), tree(lambda a, x: b2 * a + (1 - b2) * x**2, v, g)
        out.append(tree(lambda p, a, b: p - rate * (a / (1 - b1**t)) / (np.sqrt(b / (1 - b2**t)) + eps), params, m, v))
    return out


def _max_gap(a: dict, b: dict, mask: dict) -> float:
    import jax

    leaves = zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), jax.tree_util.tree_leaves(mask))
    return max(float(np.abs(x - y)[m].max(initial=0.0)) for x, y, m in leaves)


def test_gradients_are_clipped_to_the_threshold_by_their_global_norm():
    """With a threshold far below the gradient's global norm, each step is AdamW's step on the
    whole gradient rescaled to that norm (its small entries then fall below Adam's eps, so the
    steps differ from unclipped ones, which move by about rate * sign(g)); with a threshold far
    above the norm, the steps are the unclipped ones. Two steps: at the start only the output
    layer has a gradient, so the second step is the one where a global and a per-matrix norm differ."""
    tolerance = 1e-6  # float32 parameters of order 1 moved by at most rate = 0.05: a few ulps
    for clip in (1e-9, 1e9):  # two runs, each compiled once; both start from the same parameters
        path = _two_steps(clip)
        _, norm = _gradient(path[0])
        assert (clip < 1e-6 * norm) if clip < 1 else (clip > 1e6 * norm), (clip, norm)
        masks: list[dict] = []
        clipped, free = _adam_steps_by_hand(path, clip, masks), _adam_steps_by_hand(path, math.inf, [])
        expected = clipped if clip < norm else free
        for step in (1, 2):
            gap = _max_gap(path[step], expected[step - 1], masks[step - 1])
            assert gap <= tolerance, (clip, step, gap)
        if clip < norm:  # the check tells clipped from unclipped steps, at both steps
            assert min(_max_gap(clipped[k], free[k], masks[k]) for k in (0, 1)) > 1000 * tolerance
