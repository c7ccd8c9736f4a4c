"""The byte-level transformer (attnscale.bytelm.model): autodiff against finite
differences, the causal mask, the uniform start, the book's premise at initialisation, the
scale as an initialisation for dot scores, length factors, and shapes refused by name."""

import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from attnscale.bytelm.model import Config, attention_logits, forward, init_params, loss_fn  # noqa: E402

SMALL = Config(layers=2, width=16, heads=2, context=12)


def _window(seed, batch=3, length=13):
    return jax.random.randint(jax.random.PRNGKey(seed), (batch, length), 0, 256)


def _randomised(params, seed):
    """Parameters with a non-zero head and noisy gains, so no gradient vanishes by symmetry."""
    leaves, tree = jax.tree_util.tree_flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(seed), len(leaves))
    return jax.tree_util.tree_unflatten(tree, [p + 0.3 * jax.random.normal(k, p.shape) for p, k in zip(leaves, keys)])


@pytest.mark.parametrize("cfg, scale", [(SMALL, 1.7), (Config(layers=1, width=16, heads=2, context=12, kind="cosine"), 6.0),
                                        (Config(layers=1, width=16, heads=2, context=12, kind="cosine", scale_mode="raw"), 6.0),
                                        (Config(layers=1, width=16, heads=2, context=12, kind="cosine", scale_mode="exp"), 6.0)])
def test_the_gradient_matches_finite_differences(cfg, scale):
    """Directional derivatives along random directions: central differences in float32 at
    steps eps and eps/2, combined by Richardson extrapolation (error O(eps^4))."""
    params = _randomised(init_params(jax.random.PRNGKey(0), cfg, scale), 1)
    w = _window(2)
    f = jax.jit(lambda p: loss_fn(p, w, cfg, scale))
    grad = jax.grad(lambda p: loss_fn(p, w, cfg, scale))(params)
    for seed in range(3):
        direction = _randomised(jax.tree_util.tree_map(jnp.zeros_like, params), 10 + seed)
        analytic = sum(float((g * d).sum()) for g, d in zip(jax.tree_util.tree_leaves(grad), jax.tree_util.tree_leaves(direction)))
        def central(eps):
            plus = jax.tree_util.tree_map(lambda p, d: p + eps * d, params, direction)
            minus = jax.tree_util.tree_map(lambda p, d: p - eps * d, params, direction)
            return (float(f(plus)) - float(f(minus))) / (2 * eps)

        numeric = (4 * central(1e-2) - central(2e-2)) / 3
        assert numeric == pytest.approx(analytic, rel=1e-2, abs=5e-4)


def test_the_mask_is_causal():
    """Changing later bytes changes no earlier prediction, and does change a later one."""
    params = _randomised(init_params(jax.random.PRNGKey(0), SMALL), 3)
    x = _window(4, 2, 12)
    y = x.at[:, 7:].set((x[:, 7:] + 1) % 256)
    a, b = forward(params, x, SMALL, 1.0), forward(params, y, SMALL, 1.0)
    assert np.array_equal(np.asarray(a[:, :7]), np.asarray(b[:, :7]))
    assert not np.allclose(np.asarray(a[:, 7:]), np.asarray(b[:, 7:]))


def test_the_untrained_model_is_uniform():
    """The head starts at zero: every byte has probability 1/256, the loss is ln 256 nats (8 bits)."""
    for cfg in (SMALL, Config(layers=1, width=16, heads=2, context=12, kind="cosine", scale_mode="exp")):
        loss = float(loss_fn(init_params(jax.random.PRNGKey(5), cfg, 4.0), _window(6), cfg, 4.0))
        assert loss == pytest.approx(math.log(256), rel=1e-6)


def test_at_initialisation_a_dot_row_has_logit_spread_near_alpha():
    """The book's premise at step 0: unit-variance queries and keys, so the logits of a
    row spread with standard deviation about alpha."""
    cfg = Config(layers=1, width=64, heads=2, context=128)
    params = init_params(jax.random.PRNGKey(0), cfg)
    w = jax.random.randint(jax.random.PRNGKey(1), (8, 128), 0, 256)
    for alpha in (0.5, 2.0):
        lg = np.asarray(attention_logits(params, w, cfg, alpha))[0, :, :, -1, :]
        assert np.median(lg.std(-1)) == pytest.approx(alpha, rel=0.25)


def test_for_dot_scores_the_scale_is_an_initialisation():
    """alpha with weights W equals alpha = 1 with W_q, W_k multiplied by sqrt(alpha)."""
    params = _randomised(init_params(jax.random.PRNGKey(0), SMALL), 7)
    alpha = 2.5
    moved = {**params, "blocks": [{**b, "wq": b["wq"] * math.sqrt(alpha), "wk": b["wk"] * math.sqrt(alpha)} for b in params["blocks"]]}
    w = _window(8, 2, 12)
    np.testing.assert_allclose(np.asarray(forward(params, w, SMALL, alpha)), np.asarray(forward(moved, w, SMALL, 1.0)), rtol=2e-4, atol=2e-5)


def test_a_length_factor_multiplies_a_row_s_logits():
    params = _randomised(init_params(jax.random.PRNGKey(0), SMALL), 9)
    w = _window(9, 2, 12)
    f = jnp.ones(12).at[5].set(1.5)
    _, a = forward(params, w, SMALL, 1.0, return_logits=True)
    _, b = forward(params, w, SMALL, 1.0, factor=f, return_logits=True)
    # the first layer's row 5 is scaled; the earlier rows' causal logits are untouched in every layer (later
    # layers' later rows change with the first layer's output, as they should)
    np.testing.assert_allclose(np.asarray(b[0, ..., 5, :]), 1.5 * np.asarray(a[0, ..., 5, :]), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(b[..., :5, :5]), np.asarray(a[..., :5, :5]))


@pytest.mark.parametrize("make, name", [
    (lambda: Config(width=0), "width"), (lambda: Config(width=64, heads=3), "heads"), (lambda: Config(width=6, heads=2), "heads"),
    (lambda: Config(kind="bilinear"), "kind"), (lambda: Config(scale_mode="raw"), "scale_mode"), (lambda: Config(kind="cosine", scale_mode="log"), "scale_mode"),
    (lambda: Config(layers=1.5), "layers"), (lambda: Config(rope_base=1.0), "rope_base"),
])
def test_bad_shapes_are_refused_by_name(make, name):
    with pytest.raises(ValueError) as err:
        make()
    assert str(err.value).startswith(name + " ")
