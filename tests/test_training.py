"""The training model's hand-derived gradients against finite differences."""

import numpy as np
import pytest

from attnscale.softmax import softmax, softmax_jacobian, softmax_vjp
from attnscale.training import init_params, loss_and_grads, sample_batch, train


def test_softmax_vjp_is_the_jacobian_product():
    rng = np.random.default_rng(0)
    p = softmax(rng.normal(size=(3, 7)), 2.0)
    g = rng.normal(size=(3, 7))
    np.testing.assert_allclose(softmax_vjp(p, g, 2.0), np.einsum("bij,bj->bi", softmax_jacobian(p, 2.0), g), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="g must have the shape of p"):
        softmax_vjp(p, g[:, :3], 2.0)


@pytest.mark.parametrize("kind", ["dot", "cosine"])
def test_backward_pass_matches_central_differences(kind):
    rng = np.random.default_rng(1)
    params = init_params(rng, 2, 6)
    data = sample_batch(rng, 2, 4, 5, 6)
    _, grads, _ = loss_and_grads(params, data, 1.7, kind)
    h = 1e-6
    for key in params:
        for idx in [(0, 1, 2), (1, 3, 4), (0, 5, 0), (1, 0, 5)]:
            plus = {k: v.copy() for k, v in params.items()}
            minus = {k: v.copy() for k, v in params.items()}
            plus[key][idx] += h
            minus[key][idx] -= h
            fd = (loss_and_grads(plus, data, 1.7, kind)[0][idx[0]] - loss_and_grads(minus, data, 1.7, kind)[0][idx[0]]) / (2 * h)
            # central differences: truncation O(h^2) and rounding O(eps / h) are both below 1e-8 here
            assert abs(fd - grads[key][idx]) <= 1e-7 * max(1.0, abs(fd)), (kind, key, idx, fd, grads[key][idx])


def test_training_lowers_the_loss():
    out = train(0, n=8, d=8, alpha=1.0, kind="dot", lrs=[1e-2], seeds=2, steps=60, batch=16)
    assert out["loss"].shape == (1, 2, 60)
    assert out["loss"][..., -10:].mean() < 0.5 * out["loss"][..., :10].mean()


def test_bad_input():
    with pytest.raises(ValueError, match="kind must be 'dot' or 'cosine'"):
        rng = np.random.default_rng(0)
        loss_and_grads(init_params(rng, 1, 4), sample_batch(rng, 1, 2, 3, 4), 1.0, "bilinear")
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        train(0, n=1, d=4, alpha=1.0, kind="dot", lrs=[1e-3], seeds=1, steps=1)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        train(0, n=4, d=4, alpha=0.0, kind="dot", lrs=[1e-3], seeds=1, steps=1)
