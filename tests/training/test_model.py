"""attnscale.training.model: the attention model's forward pass, loss and gradients (against
finite differences and hand-worked cases), its initialisation and its batches.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnscale import training as tr
from attnscale.training import bilinear_gradient, forward, identity_alignment, init_params, loss_and_grads, sample_batch
from attnscale.training.model import PIECE, _loss_and_grads, _piece_size
from expect import named


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
        (lambda p, d: ({**p, "log_gain": np.array([[math.nan]])}, d, 1.0), 'log_gain'),
        (lambda p, d: ({**p, "log_gain": np.zeros((1, 2))}, d, 1.0), "params"),
        (lambda p, d: (_weights((1, 1, 2, 3), (1, 1, 2, 3)), d, 1.0),
         'Wq'),
        (lambda p, d: (_weights((1, 2, 2), (1, 2, 2)), d, 1.0),
         'Wq'),
        (lambda p, d: (_weights((1, 1, 2, 2), (1, 2, 2, 2)), d, 1.0),
         'Wq'),
        (lambda p, d: (p, _model(seeds=2)[1], 1.0), 'data'),
    ],
    ids=["params-lacks-Wk", "data-lacks-j", "log_gain-nan", "log_gain-shape", "W-not-square", "W-3d", "W-unequal", "K-other-seeds"],
)
def test_forward_refuses_bad_input_with_a_message_that_begins_with_its_name(change, name):
    params, data, alpha = change(*_model())
    with pytest.raises(ValueError, match=named(name)):
        forward(params, data, alpha)


# ---- forward and loss_and_grads on a hand-worked example ------------------------------------------------------------------
def _hand_worked() -> tuple[dict, dict]:
    """W_q = W_k = I, d = 2, keys e_1 and e_2, values (1, 0), query x = (sqrt(2) ln 3, 0), target 1."""
    eye = np.eye(2)[None, None]
    params = {"Wq": eye.copy(), "Wk": eye.copy()}
    data = {"K": np.eye(2)[None, None], "V": np.array([[[[1.0], [0.0]]]]), "x": np.array([[[math.sqrt(2) * math.log(3), 0.0]]]),
            "target": np.array([[[1.0]]]), "j": np.array([[0]])}
    return params, data


def test_loss_and_grads_names_its_diagnostics_accuracy_and_half_l1():
    """s = (ln 3, 0), p = (3/4, 1/4): the queried key j = 0 has the largest weight (accuracy 1)
    and (1/2)||J||_1 = 1 - (9 + 1)/16 = 3/8."""
    loss, grads, diagnostics = loss_and_grads(*_hand_worked(), 1.0)
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
    """Dot scores s = x.K_i / sqrt(2) = (ln 3, 0), so p = softmax(s) = (3/4, 1/4) at alpha = 1,
    the output y = p . V = 3/4, and the loss (3/4 - 1)^2 = 1/16 against the target 1.
    (Cosine scores would be (1, 0), p_1 = e / (e + 1).)"""
    f = forward(*_hand_worked(), 1.0)
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
    settings = tr.TrainSettings(n=4, d=3, kind="dot", alphas=cell["alphas"], lrs=[1.0, 2.0], seeds=S["seeds"], steps=1, batch=S["batch"], c=S["c"],
                                noise=S["noise"], optimizer="sgd", eval_size=S["eval_size"], return_params=True)
    out = tr.train(cell["seed"], settings)
    one = {k: w[:, 0::2] for k, w in out.params.items()}
    two = {k: w[:, 1::2] for k, w in out.params.items()}
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
    np.testing.assert_allclose(loss, out.loss[:, 0, :, 0], rtol=1e-13)  # the loop's loss at step 0


@pytest.mark.parametrize("G", [np.ones(3), np.ones((4, 3, 2)), np.stack([np.eye(2), np.zeros((2, 2))])], ids=["1-d", "not-square", "one-zero"])
def test_identity_alignment_refuses_g_without_square_matrices_or_with_a_zero_one_by_name(G):
    with pytest.raises(ValueError, match=named("G")):
        identity_alignment(G)


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


# ---- the forward pass against a plain loop, and the gradients ---------------------------------------------------------------
def _perturbed_model(kind_seed: int, seeds: int = 2, models: int = 3, d: int = 6):
    rng = np.random.default_rng(kind_seed)
    params = init_params(rng, seeds, models, d)
    # break the copies across models so each model's gradient is its own
    params = {k: w + 0.1 * rng.standard_normal(w.shape) for k, w in params.items()}
    return rng, params


@pytest.mark.parametrize("kind", ["dot", "cosine"])
def test_forward_matches_a_direct_computation(kind):
    """The layout tricks (keys never formed for dot scores) against a plain loop."""
    rng, params = _perturbed_model(2)
    data = sample_batch(rng, 2, 3, 4, 6)
    alpha = np.array([0.5, 2.0, 6.0])
    f = forward(params, data, alpha, kind)
    for s in range(2):
        for m in range(3):
            for b in range(3):
                q = params["Wq"][s, m] @ data["x"][s, b]
                k = data["K"][s, b] @ params["Wk"][s, m].T
                raw = k @ q / np.sqrt(6) if kind == "dot" else (k @ q) / (np.linalg.norm(k, axis=1) * np.linalg.norm(q))
                p = np.exp(alpha[m] * raw - np.max(alpha[m] * raw))
                p /= p.sum()
                np.testing.assert_allclose(f["p"][s, b, m], p, rtol=1e-12)


def _learned_model(seed=3):
    rng = np.random.default_rng(seed)
    params = init_params(rng, 2, 3, 6)
    params["Wq"] = params["Wq"] + 0.3 * rng.standard_normal(params["Wq"].shape)  # the models of a seed part ways
    params["log_gain"] = rng.normal(0.0, 0.5, (2, 3))
    return params, sample_batch(rng, 2, 4, 5, 6), np.array([0.7, 1.7, 3.0])


@pytest.mark.parametrize("kind", ["dot", "cosine"])
def test_every_gradient_with_a_learned_scale_matches_central_differences(kind):
    """d loss / d log_gain (and the weight gradients, now at the learned scale
    alpha exp(log_gain)) against central differences of the loss, entry by entry.
    (Without a learned scale: tests/training/test_analysis.py's gradient check.)"""
    params, batch, alpha = _learned_model()
    _, grads, _ = loss_and_grads(params, batch, alpha, kind)
    h, worst = 1e-6, 0.0
    for key in ("log_gain", "Wq", "Wk"):
        for index in np.ndindex(params[key].shape):
            moved = {k: w.copy() for k, w in params.items()}
            moved[key][index] += h
            up = loss_and_grads(moved, batch, alpha, kind)[0][index[:2]]
            moved[key][index] -= 2 * h
            down = loss_and_grads(moved, batch, alpha, kind)[0][index[:2]]
            worst = max(worst, abs((up - down) / (2 * h) - grads[key][index]))
    # central differences: truncation O(h^2) ~ 1e-12, rounding O(eps / h) ~ 1e-10
    assert worst < 1e-8
    assert np.abs(grads["log_gain"]).max() > 1e-3  # a real gradient, not a zero that passes trivially


def test_a_zero_log_gain_is_the_fixed_scale():
    """With log_gain = 0 the loss and the weight gradients are those of the fixed scale."""
    params, batch, alpha = _learned_model()
    params["log_gain"][:] = 0.0
    loss, grads, _ = loss_and_grads(params, batch, alpha, "dot")
    fixed = {k: params[k] for k in ("Wq", "Wk")}
    loss0, grads0, _ = loss_and_grads(fixed, batch, alpha, "dot")
    np.testing.assert_allclose(loss, loss0, rtol=1e-14)
    for k in fixed:
        np.testing.assert_allclose(grads[k], grads0[k], rtol=1e-12, atol=1e-15)


def test_bilinear_gradient_gives_the_weight_gradients():
    rng, params = _perturbed_model(4)
    data = sample_batch(rng, 2, 4, 5, 6)
    alpha = np.array([0.5, 1.5, 4.0])
    G = bilinear_gradient(params, data, alpha)
    _, grads, _ = loss_and_grads(params, data, alpha, "dot")
    np.testing.assert_allclose(params["Wq"] @ G, grads["Wk"], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(params["Wk"] @ G.swapaxes(-1, -2), grads["Wq"], rtol=1e-10, atol=1e-14)
    G2, p = bilinear_gradient(params, data, alpha, with_weights=True)
    np.testing.assert_array_equal(G2, G)
    np.testing.assert_array_equal(p, forward(params, data, alpha, "dot")["p"])


def test_one_model_is_independent_of_the_others():
    """A model's gradient is the same alone or batched with other scales."""
    rng, params = _perturbed_model(3)
    data = sample_batch(rng, 2, 4, 5, 6)
    _, many, _ = loss_and_grads(params, data, np.array([0.7, 1.7, 3.0]), "dot")
    one = {k: w[:, 1:2] for k, w in params.items()}
    _, single, _ = loss_and_grads(one, data, 1.7, "dot")
    np.testing.assert_allclose(single["Wq"][:, 0], many["Wq"][:, 1], rtol=1e-12)


def test_loss_and_grads_refuses_a_scale_per_model_or_a_key_width_that_does_not_fit_by_name():
    rng = np.random.default_rng(0)
    params = init_params(rng, 1, 1, 4)
    with pytest.raises(ValueError, match=named("alpha")):
        loss_and_grads(params, sample_batch(rng, 1, 2, 3, 4), [1.0, 2.0])
    with pytest.raises(ValueError, match=named("data")):
        loss_and_grads(params, sample_batch(rng, 1, 2, 3, 5), 1.0)


# ---- cosine batches in pieces -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("piece", [3840, 3 * 3840, 10**9])
def test_cosine_pieces_give_the_whole_batch_gradient(monkeypatch, piece):
    """The training step works through a cosine batch in pieces of at most PIECE numbers
    of the batch's keys for every model (here 2 seeds x 40 keys x 3 models x 16 = 3840 per
    example; PIECE lowered to make pieces of 1 and 3 examples, the last one short); the
    gradients and the loss are the whole batch's to rounding."""
    from attnscale.training import model

    monkeypatch.setattr(model, "PIECE", piece)
    rng = np.random.default_rng(3)
    seeds, models, n, d, batch = 2, 3, 40, 16, 16
    assert _piece_size(seeds, n, models, d) == min(piece // 3840, 10**9)
    params = {k: w + 0.1 * rng.standard_normal(w.shape) for k, w in init_params(rng, seeds, models, d).items()}
    params["log_gain"] = 0.3 * rng.standard_normal((seeds, models))
    data = sample_batch(rng, seeds, batch, n, d)
    a = np.array([2.0, 5.0, 9.0])
    loss, whole, _ = loss_and_grads(params, data, a, "cosine")  # the public path: the batch at once
    f, pieces = _loss_and_grads(params, data, a, "cosine", checked=True)
    assert (set(f) == {"loss"}) == (piece < 16 * 3840)
    np.testing.assert_allclose(f["loss"], loss, rtol=1e-12)
    for key in whole:
        np.testing.assert_allclose(pieces[key], whole[key], rtol=1e-10, atol=1e-15, err_msg=key)


def test_piece_size():
    assert _piece_size(5, 256, 12, 32) == PIECE // (5 * 256 * 12 * 32) == 2
    assert _piece_size(5, 10**6, 20, 64) == 1


# ---- the scale under Adam -------------------------------------------------------------------------------------------------------
def test_adam_at_scale_alpha_is_scale_one_with_epsilon_divided_by_sqrt_alpha():
    """Adam at scale alpha, rate eta and epsilon eps, from W0, follows step by
    step the path of scale 1, rate sqrt(alpha) eta and epsilon eps / sqrt(alpha),
    from sqrt(alpha) W0 (the chapter's identity). With epsilon multiplied by
    sqrt(alpha) instead, the paths part: the test can tell the two apart."""
    alpha, eta, eps, steps = 4.0, 0.02, 1e-3, 30
    root = np.sqrt(alpha)

    def run(eps_b):
        rng = np.random.default_rng(11)
        w0 = init_params(rng, 1, 1, 6)
        a = {k: w.copy() for k, w in w0.items()}
        b = {k: root * w for k, w in w0.items()}
        moments = {name: {k: [np.zeros_like(w), np.zeros_like(w)] for k, w in w0.items()} for name in "ab"}
        worst = 0.0
        for t in range(1, steps + 1):
            data = sample_batch(rng, 1, 8, 5, 6)
            for name, params, scale, rate, e in (("a", a, alpha, eta, eps), ("b", b, 1.0, root * eta, eps_b)):
                _, grads, _ = loss_and_grads(params, data, scale, "dot")
                for k in params:
                    m, v2 = moments[name][k]
                    m[:] = 0.9 * m + 0.1 * grads[k]
                    v2[:] = 0.999 * v2 + 0.001 * grads[k] ** 2
                    params[k] = params[k] - rate * (m / (1 - 0.9**t)) / (np.sqrt(v2 / (1 - 0.999**t)) + e)
            worst = max(worst, max(float(np.max(np.abs(root * a[k] - b[k]))) for k in a))
        return worst

    # rounding alone: ~1e-16 per operation over 30 steps
    assert run(eps / root) < 1e-10
    assert run(eps * root) > 1e-6
