"""Survivors of the mutation run over attnscale.training.model that no earlier round examined
(see tests/MUTANTS.md): the model's refusals pinned to their whole messages, the names of
its diagnostics, and the task its sampler draws.

What is pinned, and against what:

* forward refuses params or data that lack an entry, a scale that is not positive, a
  non-finite learned gain, weights that are not a pair of equal (seeds, models, d, d)
  stacks of square matrices (each way of failing alone: not square, not 4-d, not equal),
  and keys with another number of seeds than the weights, each with a message that begins
  with the name of what is wrong (tests/test_bad_input.py only checks that the name occurs
  somewhere, so "XXparamsXX lacks ..." or an empty message passes there). Reference: the
  messages written out by hand.
* cosine scores of an exactly zero query or key are refused by a FloatingPointError that
  says so. Reference: the message written out by hand.
* loss_and_grads returns its diagnostics under the names its docstring and the training
  loop use, ``accuracy`` and ``half_l1``. Reference: a hand-worked example (the one of
  tests/test_mutants_training_sample_loop.py): p = (3/4, 1/4) with the queried key first,
  so accuracy 1 and (1/2)||J||_1 = alpha (1 - sum p^2) = 1 - 10/16 = 3/8.
* sample_batch draws a batch of a single example (its minimum is 1, as train's batch is),
  accepts any noise >= 0 (also below 1) and refuses a noise that is not a number by name;
  and its query has unit variance per coordinate whatever the noise, as the module's
  docstring promises: x = (K_j + sigma eps) / sqrt(1 + sigma^2). Reference: the variance of
  that formula, 1, checked on 16000 coordinates (standard error 0.011) at sigma = 0.5 and 3.
* a fault found by this work and mended (tests/MUTANTS.md): forward and loss_and_grads checked
  the shape of the keys K but not of the values V or the target, so values of another rank
  were silently broadcast and a target with one coordinate silently compared with every
  coordinate of the output; now each is refused by name. Reference: the documented shapes, V (seeds, batch, n, c) and
  target (seeds, batch, c).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from expect import whole

from attnscale.training import forward, init_params, loss_and_grads, sample_batch


def _model(seeds: int = 1, batch: int = 3, n: int = 2, d: int = 2) -> tuple[dict, dict]:
    rng = np.random.default_rng(0)
    return init_params(rng, seeds, 1, d), sample_batch(rng, seeds, batch, n, d)


def _weights(wq: tuple, wk: tuple) -> dict:
    return {"Wq": np.ones(wq), "Wk": np.ones(wk)}


# ---- forward: refusals pinned from their first character ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p, d: ({"Wq": p["Wq"]}, d, 1.0), "params lacks the entries ['Wk']"),
        (lambda p, d: (p, {k: v for k, v in d.items() if k != "j"}, 1.0), "data lacks the entries ['j']"),
        (lambda p, d: (p, d, 0.0), "alpha must be > 0, got 0.0"),
        (lambda p, d: ({**p, "log_gain": np.array([[math.nan]])}, d, 1.0),
         "log_gain must be finite, got nan in array of shape (1, 1) [nan]"),
        (lambda p, d: (_weights((1, 1, 2, 3), (1, 1, 2, 3)), d, 1.0),
         "Wq and Wk must both have shape (seeds, models, d, d), got (1, 1, 2, 3) and (1, 1, 2, 3)"),
        (lambda p, d: (_weights((1, 2, 2), (1, 2, 2)), d, 1.0),
         "Wq and Wk must both have shape (seeds, models, d, d), got (1, 2, 2) and (1, 2, 2)"),
        (lambda p, d: (_weights((1, 1, 2, 2), (1, 2, 2, 2)), d, 1.0),
         "Wq and Wk must both have shape (seeds, models, d, d), got (1, 1, 2, 2) and (1, 2, 2, 2)"),
        (lambda p, d: (p, _model(seeds=2)[1], 1.0), "data K must have shape (seeds=1, batch, n, d=2), got (2, 3, 2, 2)"),
    ],
    ids=["params-lacks-Wk", "data-lacks-j", "alpha-0", "log_gain-nan", "W-not-square", "W-3d", "W-unequal", "K-other-seeds"],
)
def test_forward_refuses_bad_input_with_a_message_that_begins_with_its_name(change, message):
    params, data, alpha = change(*_model())
    with pytest.raises(ValueError, match=whole(message)):
        forward(params, data, alpha)


def test_cosine_scores_of_a_zero_query_are_refused_as_undefined():
    params, data = _model()
    data = {**data, "x": np.zeros_like(data["x"])}
    with pytest.raises(FloatingPointError, match=whole("a query or key is exactly zero; its cosine is undefined")):
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
    with pytest.raises(TypeError, match=whole("noise must be a real number, got 'x'")):
        sample_batch(np.random.default_rng(0), 1, 2, 3, 4, noise="x")
    with pytest.raises(ValueError, match=whole("noise must be >= 0, got -0.5")):
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
    ("entry", "cut", "message"),
    [
        ("V", lambda a: a[0], "data V must have shape (seeds=1, batch=3, n=2, c), got (3, 2, 8)"),
        ("target", lambda a: a[..., :1], "data target must have shape (seeds=1, batch=3, c=8), got (1, 3, 1)"),
    ],
    ids=["V-3d", "target-one-coordinate"],
)
@pytest.mark.parametrize("kind", ["dot", "cosine"])
def test_loss_and_grads_refuses_values_or_target_of_another_shape(entry, cut, message, kind):
    params, data = _model()
    with pytest.raises(ValueError, match=whole(message)):
        loss_and_grads(params, {**data, entry: cut(data[entry])}, 1.0, kind)
