"""Survivors of the full mutation run over attnscale.training.loop (see tests/MUTANTS.md):
train's refusals and defaults, its divergence marking at the edge of [-LIMIT, LIMIT], its
floating-point errors, and the schedule of evaluation_steps.

What is pinned, and against what:

* train and evaluation_steps refuse a bad setting with a message that begins with the
  argument's name, and accept the smallest settings their minimums allow (c = 1,
  validation_size = 1, validation_every = 1, noise = 0). Reference: the messages and
  minimums written out by hand.
* train's defaults, as its signature documents them: a test set of 256 rows per seed
  (default_rng([seed, 1]), in chunks of the batch of 32), evaluated every 10 steps; no
  validation set unless asked for; a validation set evaluated every 20 steps.
  References: the step-0 held-out loss recomputed with forward from the same generator,
  the steps written out by hand.
* evaluation_steps' default ``dense`` is 20: every step up to 20, then (with resolution
  1) the step doubles. Reference: the schedule worked out by hand.
* one SGD step: a model is marked diverged exactly when an entry of ``Wq`` or ``Wk`` leaves
  the closed interval [-LIMIT, LIMIT] (on either side, in either matrix), or its learned
  gain leaves [-ln LIMIT, ln LIMIT]; a weight or gain exactly on the edge is inside; a
  marked model keeps its initial weights. Reference: the update W - lr g written out with
  the gradients of loss_and_grads from the same seed (initial weights, then the first
  batch, from default_rng(seed)), with the rates chosen so that the largest entries cross
  one by one, or land exactly on the edge.
* AdamW whose decay throws the weights out marks the model even when its learned gain
  stays in range. Reference: W (1 - lr wd) worked by hand, the initial weights.
* a step that fails in floating point raises FloatingPointError("training diverged at step
  t (<the error>); lower the learning rates [...]") and lets no RuntimeWarning escape.
  Reference: hand-made runs whose weights become exactly zero (AdamW with lr wd = 1 and an
  exactly zero gradient, as the attention is one-hot at a huge scale): the cosine of a zero
  query is undefined; at the largest float as scale the uniform attention's score
  gradient overflows.
* the held-out evaluation of cosine scores works through the test set in pieces of at most
  model.PIECE key numbers, as the training step does: its memory does not grow with the test
  set beyond the rows themselves. Reference: the size of the keys of every model that the
  added rows would need whole.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from expect import peak_bytes, whole

from attnscale.training import evaluation_steps, forward, init_params, loss_and_grads, model, sample_batch, train
from attnscale.training.loop import LIMIT

#: the smallest valid run (tests/test_bad_input.py's valid call of train)
TINY = {"n": 4, "d": 4, "kind": "dot", "alphas": [1.0], "lrs": [1e-2], "seeds": 1, "steps": 1, "eval_size": 4}


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"d": 1}, ValueError, "d must be an integer >= 2, got 1"),
        ({"c": 0}, ValueError, "c must be an integer >= 1, got 0"),
        ({"seeds": 0}, ValueError, "seeds must be an integer >= 1, got 0"),
        ({"steps": 0}, ValueError, "steps must be an integer >= 1, got 0"),
        ({"eval_every": 0}, ValueError, "eval_every must be an integer >= 1, got 0"),
        ({"validation_size": -1}, ValueError, "validation_size must be an integer >= 1, got -1"),
        ({"validation_every": 0}, ValueError, "validation_every must be an integer >= 1, got 0"),
        ({"return_params": "yes"}, TypeError, "return_params must be True or False, got 'yes'"),
        ({"lrs": 1.0}, ValueError, "lrs must have at least one axis, got a scalar 1.0"),
        ({"eval_steps": [0, math.nan]}, ValueError, "eval_steps must be finite, got nan in array of shape (2,) [0.0, nan]"),
        ({"eval_steps": [[0], [1]]}, ValueError,
         "eval_steps must be increasing whole steps from 0 to steps = 1, got array of shape (2, 1) [0.0, 1.0]"),
        ({"eval_steps": [0, 0.5, 1]}, ValueError,
         "eval_steps must be increasing whole steps from 0 to steps = 1, got array of shape (3,) [0.0, 0.5, 1.0]"),
    ],
    ids=["d", "c", "seeds", "steps", "eval_every", "validation_size", "validation_every", "return_params", "lrs-scalar",
         "eval_steps-nan", "eval_steps-2d", "eval_steps-fraction"],
)
def test_train_refuses_a_bad_setting_with_a_message_that_begins_with_its_name(change, error, message):
    with pytest.raises(error, match=whole(message)):
        train(0, **{**TINY, **change})


def test_evaluation_steps_refuses_a_bad_resolution_by_name():
    with pytest.raises(TypeError, match=whole("resolution must be a real number, got 'x'")):
        evaluation_steps(10, resolution="x")


def test_evaluation_steps_is_dense_up_to_step_20_by_default():
    """With resolution 1 each step after the dense ones is t + floor(t): 20 -> 40 -> 80,
    then the last step 100."""
    assert evaluation_steps(100, resolution=1.0).tolist() == list(range(21)) + [40, 80, 100]
    assert evaluation_steps(100, resolution=1.0, dense=21).tolist() == list(range(22)) + [42, 84, 100]


def test_train_takes_the_smallest_settings_its_minimums_allow():
    out = train(0, **{**TINY, "steps": 2, "c": 1, "noise": 0.0, "validation_size": 1, "validation_every": 1})
    assert out["val_step"].tolist() == [0, 1, 2] and out["val_loss"].shape == (1, 1, 1, 3)
    # the validation loss at step 0 is that of the initial weights on one row from default_rng([0, 3])
    params = init_params(np.random.default_rng(0), 1, 1, 4)
    row = sample_batch(np.random.default_rng([0, 3]), 1, 1, 4, 4, 1, 0.0)
    np.testing.assert_allclose(out["val_loss"][0, 0, 0, 0], forward(params, row, 1.0)["loss"][0, 0], rtol=1e-9)


def test_train_defaults_a_test_set_of_256_rows_every_10_steps_and_no_validation():
    out = train(3, n=4, d=2, kind="dot", alphas=[1.5], lrs=[1e-2], seeds=2, steps=20)
    assert set(out) == {"loss", "accuracy", "half_l1", "step", "diverged_at"}
    assert out["step"].tolist() == [0, 10, 20]
    # the step-0 loss: the initial weights on 256 rows per seed from default_rng([3, 1]), drawn 32 at a time
    params = init_params(np.random.default_rng(3), 2, 1, 2)
    rows = np.random.default_rng([3, 1])
    chunks = [forward(params, sample_batch(rows, 2, 32, 4, 2), 1.5)["loss"][:, 0] for _ in range(8)]
    np.testing.assert_allclose(out["loss"][0, 0, :, 0], np.mean(chunks, axis=0), rtol=1e-9)


def test_train_evaluates_a_validation_set_every_20_steps_by_default():
    out = train(0, **{**TINY, "steps": 40, "validation_size": 4})
    assert out["val_step"].tolist() == [0, 20, 40]


# ---------------------------------------------------------------------------------------
# one SGD step against the update written out by hand

#: n = 4 keys of width 2, one value, 4 rows, no noise on the queries; for seed 0 the largest
#: gradient entry is in Wq and negative (W - lr g crosses +LIMIT first), for seed 2 in Wk and
#: positive (it crosses -LIMIT first)
STEP = {"n": 4, "d": 2, "c": 1, "batch": 4, "noise": 0.0}


def _first_step(seed: int, learn_scale: bool = False) -> tuple[dict, dict]:
    """The initial weights and the gradients of the first batch, recomputed from
    default_rng(seed) as train draws them (its held-out sets have their own generators)."""
    rng = np.random.default_rng(seed)
    params = init_params(rng, 1, 1, STEP["d"])
    if learn_scale:
        params["log_gain"] = np.zeros((1, 1))
    data = sample_batch(rng, 1, STEP["batch"], STEP["n"], STEP["d"], STEP["c"], STEP["noise"])
    return params, loss_and_grads(params, data, 1.0, "dot")[1]


def _sgd(seed: int, lrs, steps: int = 1, **kw) -> dict:
    return train(seed, kind="dot", alphas=[1.0], lrs=lrs, seeds=1, steps=steps, eval_size=4, optimizer="sgd", return_params=True,
                 **STEP, **kw)


def test_one_sgd_step_marks_a_model_exactly_when_a_weight_leaves_the_range():
    """At rate LIMIT / sqrt(|g_k| |g_k+1|) (the k-th and next largest gradient entries) the k
    largest entries of W - lr g cross the edge, the others do not: the first rate moves one
    entry of Wq past +LIMIT, and nothing past -LIMIT or in Wk."""
    params, grads = _first_step(0)
    g = np.concatenate([grads["Wq"].ravel(), grads["Wk"].ravel()])
    size = np.sort(np.abs(g))[::-1]
    top = int(np.argmax(np.abs(g)))
    assert top < 4 and g[top] < 0  # the largest entry is in Wq and grows: the case at issue
    lrs = [1e-2] + [LIMIT / math.sqrt(a * b) for a, b in zip(size[:-1], size[1:])]
    out = _sgd(0, lrs)
    for m, lr in enumerate(lrs):
        new = {key: params[key][0, 0] - lr * grads[key][0, 0] for key in ("Wq", "Wk")}
        every = np.concatenate([w.ravel() for w in new.values()])
        assert np.min(np.abs(np.abs(every) - LIMIT)) > 1e-6 * LIMIT  # no entry near the edge
        out_of_range = bool(np.any(np.abs(every) > LIMIT))
        assert out_of_range == (m > 0)
        if m == 1:  # one entry of Wq beyond +LIMIT, none beyond -LIMIT, Wk inside
            assert new["Wq"].max() > LIMIT and new["Wq"].min() > -LIMIT and np.abs(new["Wk"]).max() < LIMIT
        assert out["diverged_at"][0, m, 0] == (1 if out_of_range else 0), (m, lr)
        for key in ("Wq", "Wk"):
            want = params[key][0, 0] if out_of_range else new[key]
            np.testing.assert_allclose(out["params"][key][0, m], want, rtol=1e-9, err_msg=f"rate {lr}, {key}")


def _rate_landing_on(w0: float, g: float, edge: float) -> float:
    """A rate lr with w0 - lr g == edge exactly in float64 (the update of an SGD step)."""
    lr = (w0 - edge) / g
    for _ in range(200):
        miss = np.float64(w0) - np.float64(lr) * np.float64(g) - edge
        if miss == 0:
            return lr
        lr = float(np.nextafter(lr, math.inf if miss * g > 0 else 0.0))
    raise AssertionError(f"no rate lands w0 = {w0} on {edge}")


@pytest.mark.parametrize(("seed", "edge"), [(0, LIMIT), (2, -LIMIT)], ids=["upper", "lower"])
def test_a_weight_on_the_edge_of_the_range_is_inside(seed, edge):
    """[-LIMIT, LIMIT] is closed: the rate that puts the largest entry of W - lr g exactly
    on the edge (the others stay inside) leaves the model unmarked, with that entry on the edge."""
    params, grads = _first_step(seed)
    key = max(("Wq", "Wk"), key=lambda k: np.abs(grads[k]).max())
    i = np.unravel_index(np.argmax(np.abs(grads[key][0, 0])), (2, 2))
    w0, g = params[key][0, 0][i], grads[key][0, 0][i]
    assert np.sign(-g) == np.sign(edge)
    lr = _rate_landing_on(w0, g, edge)
    out = _sgd(seed, [lr])
    assert out["diverged_at"].tolist() == [[[0.0]]]
    assert out["params"][key][0, 0][i] == edge
    for k in ("Wq", "Wk"):
        assert np.abs(out["params"][k]).max() <= LIMIT


def test_a_learned_gain_on_the_edge_of_its_range_is_inside():
    """The gain's range is [-ln LIMIT, ln LIMIT], closed: the rate that puts the log gain
    exactly on ln LIMIT (or -ln LIMIT) after one step leaves the model unmarked, its scale
    alpha LIMIT^(+-1) at the last evaluation; the weights stay far inside their range."""
    params, grads = _first_step(0, learn_scale=True)
    g = grads["log_gain"][0, 0]
    edge = -math.copysign(math.log(LIMIT), g)
    lr = _rate_landing_on(0.0, g, edge)
    for key in ("Wq", "Wk"):
        assert np.abs(params[key] - lr * grads[key]).max() < 1e-3 * LIMIT
    out = _sgd(0, [lr], learn_scale=True)
    assert out["diverged_at"].tolist() == [[[0.0]]]
    assert out["params"]["log_gain"][0, 0] == edge
    np.testing.assert_allclose(out["scale"][0, 0, 0, -1], LIMIT ** math.copysign(1, edge), rtol=1e-12)


def test_adamw_decay_that_throws_the_weights_out_marks_a_model_whose_gain_stays_in_range():
    """Adam at rate 1 with weight_decay 1e7: the weights become W (1 - 1e7) - (about 1) per
    entry, far beyond LIMIT, while the log gain moves by about 1 (Adam's first step is lr
    m_hat / sqrt(v_hat) = lr sign(g)). The model is marked at step 1 and keeps its initial
    weights and gain (its scale stays alpha)."""
    params, _ = _first_step(0, learn_scale=True)
    assert 1e7 * np.abs(params["Wq"]).max() > 2 * LIMIT
    out = train(0, kind="dot", alphas=[1.5], lrs=[1.0], seeds=1, steps=2, eval_size=4, eval_every=1, weight_decay=1e7,
                learn_scale=True, return_params=True, **STEP)
    assert out["diverged_at"].tolist() == [[[1.0]]]
    for key in ("Wq", "Wk", "log_gain"):
        np.testing.assert_array_equal(out["params"][key], params[key], err_msg=key)
    np.testing.assert_array_equal(out["scale"][0, 0, 0], [1.5, 1.5, 1.5])


# ---------------------------------------------------------------------------------------
# floating-point failures of a step

def test_a_zero_query_stops_cosine_training_with_the_step_and_the_rates():
    """Cosine scores at scale 1e12: every row's attention is exactly one-hot, so the first
    gradient is exactly zero, and AdamW at lr 0.5, weight_decay 2 multiplies the weights by
    1 - 0.5 * 2 = 0. At step 2 every query is zero: its cosine is undefined."""
    message = ("training diverged at step 2 (a query or key is exactly zero; its cosine is undefined); "
               "lower the learning rates [[0.5]]")
    with pytest.raises(FloatingPointError, match=whole(message)):
        train(0, n=2, d=2, c=1, kind="cosine", alphas=[1e12], lrs=[0.5], seeds=2, batch=4, steps=3, eval_size=4, weight_decay=2.0)


def test_an_overflowing_step_raises_and_names_the_overflow():
    """Dot scores at the largest float as scale: as above, the weights are exactly zero after
    step 1; at step 2 every score is 0, the attention uniform (p = 1/2 over n = 2 keys), and
    the score gradient alpha p (g - p.g) overflows. The step raises FloatingPointError naming
    the overflow, and no RuntimeWarning escapes on the way."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FloatingPointError, match=r"^training diverged at step 2 \(overflow encountered in \w+\); "
                                                     r"lower the learning rates \[\[0\.5\]\]$"):
            train(0, n=2, d=2, c=1, kind="dot", alphas=[np.finfo(float).max], lrs=[0.5], seeds=4, batch=1, steps=3, eval_size=2,
                  weight_decay=2.0)


# ---------------------------------------------------------------------------------------
# memory of the held-out evaluation

def _peak_of_a_cosine_run(eval_size: int) -> float:
    """Peak traced memory (bytes, above what was held before) of one cosine training step
    with its two evaluations: n = 2, d = 2, c = 1, 64 models, batches of 256."""
    return peak_bytes(train, 0, n=2, d=2, c=1, kind="cosine", alphas=list(np.arange(1.0, 9.0)),
                      lrs=list(np.arange(1, 9) * 1e-3), seeds=1, steps=1, batch=256, eval_size=eval_size)


def test_the_cosine_evaluation_works_in_pieces_whatever_the_size_of_the_test_set(monkeypatch):
    """With PIECE lowered to 2^16 key numbers (to keep the test small), a piece of the 64
    models of width 2 over n = 2 keys is 256 rows. The keys of every model for 1024 more test
    rows would take 1024 * 2 * 64 * 2 * 8 bytes (2 MB) whole; in pieces the peak may grow by
    the added rows themselves (K, V, x, target, j and their joined copy: about 0.1 MB), never by that."""
    monkeypatch.setattr(model, "PIECE", 2**16)
    keys_of_the_added_rows = 1024 * 2 * 64 * 2 * 8
    grown = _peak_of_a_cosine_run(2048) - _peak_of_a_cosine_run(1024)
    assert grown < keys_of_the_added_rows / 2, grown / 2**20
