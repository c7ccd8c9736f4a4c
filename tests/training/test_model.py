"""attnscale.training.model: the attention model's forward pass, loss and gradients (against
finite differences and hand-worked cases), its initialisation and its batches.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnscale import training as tr
from attnscale.training import forward, identity_alignment, init_params, loss_and_grads, sample_batch
from expect import named


@pytest.mark.parametrize(
    ("call", 'name'),
    [
        (lambda: init_params(np.random.default_rng(0), 1, 1, 0), 'd'),
        (lambda: sample_batch(np.random.default_rng(0), 1, 2, 1, 4), 'n'),
        (lambda: sample_batch(np.random.default_rng(0), 1, 2, 3, 0), 'd'),
        (lambda: sample_batch(np.random.default_rng(0), 1, 2, 3, 4, c=0), 'c'),
    ],
    ids=["init_params-d", "sample_batch-n", "sample_batch-d", "sample_batch-c"],
)
def test_the_model_refuses_a_bad_size_with_a_message_that_begins_with_its_name(call, name):
    with pytest.raises(ValueError, match=named(name)):
        call()


def _model(seeds: int = 1, batch: int = 3, n: int = 2, d: int = 2) -> tuple[dict, dict]:
    rng = np.random.default_rng(0)
    return init_params(rng, seeds, 1, d), sample_batch(rng, seeds, batch, n, d)


def _weights(wq: tuple, wk: tuple) -> dict:
    return {"Wq": np.ones(wq), "Wk": np.ones(wk)}


# ---- forward: refusals pinned from their first character ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", 'name'),
    [
        (lambda p, d: ({"Wq": p["Wq"]}, d, 1.0), 'params'),
        (lambda p, d: (p, {k: v for k, v in d.items() if k != "j"}, 1.0), 'data'),
        (lambda p, d: (p, d, 0.0), 'alpha'),
        (lambda p, d: ({**p, "log_gain": np.array([[math.nan]])}, d, 1.0),
         'log_gain'),
        (lambda p, d: (_weights((1, 1, 2, 3), (1, 1, 2, 3)), d, 1.0),
         'Wq'),
        (lambda p, d: (_weights((1, 2, 2), (1, 2, 2)), d, 1.0),
         'Wq'),
        (lambda p, d: (_weights((1, 1, 2, 2), (1, 2, 2, 2)), d, 1.0),
         'Wq'),
        (lambda p, d: (p, _model(seeds=2)[1], 1.0), 'data'),
    ],
    ids=["params-lacks-Wk", "data-lacks-j", "alpha-0", "log_gain-nan", "W-not-square", "W-3d", "W-unequal", "K-other-seeds"],
)
def test_forward_refuses_bad_input_with_a_message_that_begins_with_its_name(change, name):
    params, data, alpha = change(*_model())
    with pytest.raises(ValueError, match=named(name)):
        forward(params, data, alpha)


def test_cosine_scores_of_a_zero_query_are_refused_as_undefined():
    params, data = _model()
    data = {**data, "x": np.zeros_like(data["x"])}
    with pytest.raises(FloatingPointError, match=named('a')):
        forward(params, data, 1.0, "cosine")


# ---- loss_and_grads: the diagnostics' names, on a hand-worked example --------------------------------------------------
def test_loss_and_grads_names_its_diagnostics_accuracy_and_half_l1():
    """W_q = W_k = I, d = 2, keys e_1, e_2, query x = (sqrt(2) ln 3, 0): s = (ln 3, 0), p = (3/4, 1/4);
    the queried key j = 0 has the largest weight (accuracy 1) and (1/2)||J||_1 = 1 - (9 + 1)/16 = 3/8."""
    eye = np.eye(2)[None, None]
    params = {"Wq": eye.copy(), "Wk": eye.copy()}
    data = {"K": np.eye(2)[None, None], "V": np.array([[[[1.0], [0.0]]]]), "x": np.array([[[math.sqrt(2) * math.log(3), 0.0]]]),
            "target": np.array([[[1.0]]]), "j": np.array([[0]])}
    loss, grads, diagnostics = loss_and_grads(params, data, 1.0)
    assert sorted(diagnostics) == ["accuracy", "half_l1"]
    np.testing.assert_allclose(diagnostics["accuracy"], [[1.0]], rtol=0)
    np.testing.assert_allclose(diagnostics["half_l1"], [[3 / 8]], rtol=1e-13)
    np.testing.assert_allclose(loss, [[1 / 16]], rtol=1e-13)
    assert sorted(grads) == ["Wk", "Wq"]


# ---- sample_batch: its sizes, its noise, its task -------------------------------------------------------------------------
def test_sample_batch_draws_a_batch_of_one_example():
    data = sample_batch(np.random.default_rng(0), 2, 1, 3, 4, c=5)
    shapes = {key: val.shape for key, val in data.items()}
    assert shapes == {"K": (2, 1, 3, 4), "V": (2, 1, 3, 5), "j": (2, 1), "x": (2, 1, 4), "target": (2, 1, 5)}


def test_sample_batch_refuses_a_noise_that_is_not_a_number_by_name():
    with pytest.raises(TypeError, match=named('noise')):
        sample_batch(np.random.default_rng(0), 1, 2, 3, 4, noise="x")
    with pytest.raises(ValueError, match=named('noise')):
        sample_batch(np.random.default_rng(0), 1, 2, 3, 4, noise=-0.5)


@pytest.mark.parametrize("noise", [0.5, 3.0])
def test_sample_batch_queries_have_unit_variance_whatever_the_noise(noise):
    """x = (K_j + sigma eps) / sqrt(1 + sigma^2) with K_j, eps independent N(0, 1): variance 1 per
    coordinate (16000 coordinates: standard error 0.011; a divisor sqrt(1 + sigma^3) would give
    0.89 at sigma = 0.5 and 0.36 at sigma = 3)."""
    data = sample_batch(np.random.default_rng(7), 2, 2000, 3, 4, c=1, noise=noise)
    assert abs(np.var(data["x"]) - 1.0) < 0.05, np.var(data["x"])
    key = np.take_along_axis(data["K"], data["j"][..., None, None], axis=2)[:, :, 0]
    eps = (data["x"] * math.sqrt(1 + noise**2) - key) / noise
    assert abs(np.std(eps) - 1.0) < 0.05, np.std(eps)
    np.testing.assert_array_equal(data["target"], np.take_along_axis(data["V"], data["j"][..., None, None], axis=2)[:, :, 0])


# ---- a mended fault: the shapes of the values and the target are checked --------------------------------------------------
@pytest.mark.parametrize(
    ("entry", "cut", 'name'),
    [
        ("V", lambda a: a[0], 'data'),
        ("target", lambda a: a[..., :1], 'data'),
    ],
    ids=["V-3d", "target-one-coordinate"],
)
@pytest.mark.parametrize("kind", ["dot", "cosine"])
def test_loss_and_grads_refuses_values_or_target_of_another_shape(entry, cut, name, kind):
    params, data = _model()
    with pytest.raises(ValueError, match=named(name)):
        loss_and_grads(params, {**data, entry: cut(data[entry])}, 1.0, kind)


def test_forward_uses_dot_scores_by_default():
    """W_q = W_k = I, d = 2, keys e_1 and e_2, query x = (sqrt(2) ln 3, 0): dot scores
    s = x.K_i / sqrt(2) = (ln 3, 0), so p = softmax(s) = (3/4, 1/4) at alpha = 1, the output
    y = p . V = 3/4 with values (1, 0), and the loss (3/4 - 1)^2 = 1/16 against the target 1.
    (Cosine scores would be (1, 0), p_1 = e / (e + 1).)"""
    eye = np.eye(2)[None, None]
    params = {"Wq": eye.copy(), "Wk": eye.copy()}
    data = {"K": np.eye(2)[None, None], "V": np.array([[[[1.0], [0.0]]]]), "x": np.array([[[math.sqrt(2) * math.log(3), 0.0]]]),
            "target": np.array([[[1.0]]]), "j": np.array([[0]])}
    f = forward(params, data, 1.0)
    np.testing.assert_allclose(f["p"].ravel(), [0.75, 0.25], rtol=1e-14)
    np.testing.assert_allclose(f["loss"].ravel(), [1 / 16], rtol=1e-13)


def _alignment(G):
    """-tr(G) / (sqrt(d) ||G||_F) over the last two axes, written out."""
    d = G.shape[-1]
    return -np.trace(G, axis1=-2, axis2=-1) / (math.sqrt(d) * np.sqrt(np.sum(G * G, axis=(-2, -1))))


def test_initial_alignment_against_the_training_loop_and_the_weight_gradients():
    S = tr.SWEEP
    cell = {"seed": 11, "alphas": [0.5, 2.0], "n": 4, "d": 3, "kind": "dot"}
    align, loss, first = tr.initial_alignment(cell)
    # one SGD step at rates 1 and 2 from the same start and batch: W1 = W0 - g and W2 = W0 - 2g
    out = tr.train(
        cell["seed"],
        n=4,
        d=3,
        kind="dot",
        alphas=cell["alphas"],
        lrs=[1.0, 2.0],
        seeds=S["seeds"],
        steps=1,
        batch=S["batch"],
        c=S["c"],
        noise=S["noise"],
        optimizer="sgd",
        eval_size=S["eval_size"],
        return_params=True,
    )
    one = {k: w[:, 0::2] for k, w in out["params"].items()}
    two = {k: w[:, 1::2] for k, w in out["params"].items()}
    Wq0, Wk0 = 2 * one["Wq"] - two["Wq"], 2 * one["Wk"] - two["Wk"]
    # dL/dW_k = W_q G, so G = W_q^-1 dL/dW_k
    np.testing.assert_allclose(first, _alignment(np.linalg.solve(Wq0, one["Wk"] - two["Wk"])).T, rtol=0, atol=1e-12)
    # the held-out set: eval_size rows per seed from default_rng([seed, 1]), drawn in chunks of the batch
    rng = np.random.default_rng([cell["seed"], 1])
    rows = [tr.sample_batch(rng, S["seeds"], S["batch"], 4, 3, S["c"], S["noise"]) for _ in range(S["eval_size"] // S["batch"])]
    joined = {k: np.concatenate([r[k] for r in rows], axis=1) for k in rows[0]}
    held_loss, grads, _ = tr.loss_and_grads({"Wq": Wq0, "Wk": Wk0}, joined, cell["alphas"], "dot")
    np.testing.assert_allclose(align, _alignment(np.linalg.solve(Wq0, grads["Wk"])).T, rtol=0, atol=1e-12)
    np.testing.assert_allclose(loss, held_loss.T, rtol=1e-13)
    np.testing.assert_allclose(loss, out["loss"][:, 0, :, 0], rtol=1e-13)  # the loop's loss at step 0


def test_identity_alignment_refuses_a_non_finite_or_shapeless_g_by_name():
    with pytest.raises(ValueError, match=named('G')):
        identity_alignment(np.array([[1.0, np.nan], [0.0, 1.0]]))
    for bad in (np.ones(3), np.ones((2, 3)), np.ones((4, 3, 2))):
        with pytest.raises(ValueError, match=named('G')):
            identity_alignment(bad)
    with pytest.raises(ValueError, match=named('G')):
        identity_alignment(np.stack([np.eye(2), np.zeros((2, 2))]))


def test_identity_alignment_is_a_cosine_per_matrix():
    # hand-worked: -(-I) is I itself (cosine 1); -I is opposite (-1); a nilpotent step has no trace (0);
    # diag(2, 0): -tr = -2, sqrt(d) ||G|| = sqrt(2) * 2, so -1/sqrt(2)
    G = np.stack([-np.eye(3), np.eye(3), np.diag([2.0, 0.0, 0.0]), np.triu(np.ones((3, 3)), 1)])
    np.testing.assert_allclose(identity_alignment(G), [1.0, -1.0, -1 / np.sqrt(3), 0.0], rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(identity_alignment(G.reshape(2, 2, 3, 3)), [[1.0, -1.0], [-1 / np.sqrt(3), 0.0]], rtol=1e-15, atol=1e-15)
    assert identity_alignment(-2 * np.eye(2)) == pytest.approx(1.0, rel=1e-15)  # a single matrix: a 0-d result


def _unit_batch():
    """Weights the identity and keys, query and values with exact entries: every key and the
    query of norm exactly 1 (a legal input: only a zero vector has no cosine)."""
    params = {"Wq": np.eye(2)[None, None], "Wk": np.eye(2)[None, None]}
    K = np.array([[[[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]]])  # (seeds 1, batch 1, n 3, d 2)
    data = {"K": K, "V": np.eye(3)[None, None], "x": np.array([[[0.6, 0.8]]]), "j": np.array([[2]]), "target": np.eye(3)[None, None, 2]}
    return params, data


def test_cosine_scores_of_unit_vectors_are_their_dot_products():
    params, data = _unit_batch()
    out = forward(params, data, 1.0, "cosine")
    np.testing.assert_allclose(out["s"][0, 0, 0], [0.6, 0.8, 1.0], rtol=1e-15)  # hand-worked cosines


@pytest.mark.parametrize("zero", ["key", "query"])
def test_a_zero_key_or_query_has_no_cosine_and_is_refused(zero):
    params, data = _unit_batch()
    if zero == "key":
        data["K"] = data["K"].copy()
        data["K"][0, 0, 1] = 0.0
    else:
        data["x"] = np.zeros_like(data["x"])
    with pytest.raises(FloatingPointError, match=named('a')):
        forward(params, data, 1.0, "cosine")
