"""attnscale.training.loop: train, its settings and its evaluation schedule: what a run
returns, that it learns, how its optimisers step (Adam, SGD, AdamW, a learned scale), how it
stops on divergence, and how the cosine evaluation works in pieces.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

from attnscale.training import TrainResult, TrainSettings, evaluation_steps, forward, init_params, loss_and_grads, model, sample_batch, train
from attnscale.training.loop import LIMIT
from expect import named, peak_bytes


def run(seed: int, **settings) -> TrainResult:
    """train from ``seed`` with the settings given by name."""
    return train(seed, TrainSettings(**settings))


#: the smallest valid run (tests/test_refusals.py's valid settings of train)
TINY = {"n": 4, "d": 4, "kind": "dot", "alphas": [1.0], "lrs": [1e-2], "seeds": 1, "steps": 1, "eval_size": 4}


# ---- the settings: checked once, by name ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("marks", "shown"),
    [([0, 0.5, 1], "0.5"), ([0, 2, 1], "[0.0, 2.0, 1.0]"), ([1, 1], "[1.0, 1.0]"), ([1, 2], "[1.0, 2.0]"), ([0, 1, 1, 2], "[0.0, 1.0, 1.0, 2.0]"),
     ([0, 1], "[0.0, 1.0]")],
    ids=["not-whole", "not-increasing", "repeated-1", "from-1", "repeated", "not-to-steps"],
)
def test_the_settings_refuse_bad_evaluation_steps_showing_them(marks, shown):
    """eval_steps must be increasing whole steps from 0 to steps: a refusal names eval_steps
    and shows the steps it got, so that the caller sees which one is wrong."""
    with pytest.raises(ValueError, match=named("eval_steps")) as info:
        TrainSettings(**{**TINY, "steps": 2, "eval_steps": marks})
    assert shown in str(info.value)
    assert TrainSettings(**{**TINY, "steps": 2, "eval_steps": [0, 2]}).eval_steps == (0, 2)  # no intermediate step is needed


@pytest.mark.parametrize(
    ("change", "name"),
    [({"optimizer": "sgd", "weight_decay": 0.1}, "weight_decay"), ({"alphas": [1.0, 4.0], "lrs": [[0.01, 0.1]]}, "lrs")],
    ids=["decay-with-sgd", "one-row-of-rates-for-two-scales"],
)
def test_the_settings_refuse_a_combination_by_name(change, name):
    """Values each valid alone: decoupled decay is Adam's (AdamW), and rates per scale need a row per scale."""
    with pytest.raises(ValueError, match=named(name)):
        TrainSettings(**{**TINY, **change})


def test_the_settings_are_kept_normalised_and_frozen():
    """A 1-d grid of rates becomes one row per scale, the scales and steps tuples (so settings
    can be compared and hashed); a changed copy is checked again."""
    s = TrainSettings(**{**TINY, "alphas": np.array([1.0, 2.0]), "lrs": [0.1, 0.3], "steps": 3, "eval_steps": np.array([0, 1, 3]), "learn_scale": np.bool_(True)})
    assert (s.alphas, s.lrs, s.eval_steps, s.learn_scale) == ((1.0, 2.0), ((0.1, 0.3), (0.1, 0.3)), (0, 1, 3), True)
    assert s == TrainSettings(**{**TINY, "alphas": [1.0, 2.0], "lrs": [[0.1, 0.3], [0.1, 0.3]], "steps": 3, "eval_steps": [0, 1, 3], "learn_scale": True})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.steps = 4  # type: ignore[misc]
    with pytest.raises(ValueError, match=named("eval_steps")):
        dataclasses.replace(s, steps=4)


# ---- the evaluation schedule ----------------------------------------------------------------------------------------------
def test_evaluation_steps_resolve_every_step_to_five_percent():
    marks = evaluation_steps(1000)
    assert marks[0] == 0 and marks[-1] == 1000
    assert list(marks[:21]) == list(range(21))
    gaps = np.diff(marks)
    assert gaps.min() >= 1
    # from step 20 on, the next evaluation is at most 5% of the current step further
    assert np.all(gaps[20:-1] <= np.maximum(1, np.floor(0.05 * marks[20:-2])))
    assert np.all(gaps[20:-1] / marks[20:-2] <= 0.05 + 1e-12)
    # and the schedule is as coarse as that allows: each gap is floor(5% of the step)
    np.testing.assert_array_equal(gaps[20:-1], np.maximum(1, np.floor(0.05 * marks[20:-2])).astype(int))
    assert 90 < marks.size < 130
    assert list(evaluation_steps(5)) == [0, 1, 2, 3, 4, 5]
    assert list(evaluation_steps(100, resolution=0.5, dense=2)) == [0, 1, 2, 3, 4, 6, 9, 13, 19, 28, 42, 63, 94, 100]


def test_evaluation_steps_is_dense_up_to_step_20_by_default():
    """With resolution 1 each step after the dense ones is t + floor(t): 20 -> 40 -> 80,
    then the last step 100."""
    assert evaluation_steps(100, resolution=1.0).tolist() == list(range(21)) + [40, 80, 100]
    assert evaluation_steps(100, resolution=1.0, dense=21).tolist() == list(range(22)) + [42, 84, 100]


def test_evaluation_steps_refuse_a_step_count_beyond_int64_by_name():
    """The schedule is an int64 array, so 2^63 steps cannot be held; at resolution 1 the
    schedule doubles, so it reaches 2^63 in 63 marks and the refusal is quick. The largest
    count that fits still works and ends on itself."""
    top = 2**63 - 1
    marks = evaluation_steps(top, resolution=1.0, dense=1)
    assert marks.dtype == np.int64 and int(marks[-1]) == top
    with pytest.raises(ValueError, match="^steps must be"):
        evaluation_steps(2**63, resolution=1.0, dense=1)


# ---- what a run returns ---------------------------------------------------------------------------------------------------
def test_train_takes_the_smallest_settings_its_minimums_allow():
    out = run(0, **{**TINY, "steps": 2, "c": 1, "noise": 0.0, "validation_size": 1, "validation_every": 1})
    assert out.val_step.tolist() == [0, 1, 2] and out.val_loss.shape == (1, 1, 1, 3)
    # the validation loss at step 0 is that of the initial weights on one row from default_rng([0, 3])
    params = init_params(np.random.default_rng(0), 1, 1, 4)
    row = sample_batch(np.random.default_rng([0, 3]), 1, 1, 4, 4, 1, 0.0)
    np.testing.assert_allclose(out.val_loss[0, 0, 0, 0], forward(params, row, 1.0)["loss"][0, 0], rtol=1e-9)


def test_train_defaults_a_test_set_of_256_rows_every_10_steps_and_no_validation():
    out = run(3, n=4, d=2, kind="dot", alphas=[1.5], lrs=[1e-2], seeds=2, steps=20)
    assert set(out.as_dict()) == {"loss", "accuracy", "half_l1", "step", "diverged_at"}
    assert out.scale is None and out.val_step is None and out.val_loss is None and out.params is None
    assert out.step.tolist() == [0, 10, 20]
    # the step-0 loss: the initial weights on 256 rows per seed from default_rng([3, 1]), drawn 32 at a time
    params = init_params(np.random.default_rng(3), 2, 1, 2)
    rows = np.random.default_rng([3, 1])
    chunks = [forward(params, sample_batch(rows, 2, 32, 4, 2), 1.5)["loss"][:, 0] for _ in range(8)]
    np.testing.assert_allclose(out.loss[0, 0, :, 0], np.mean(chunks, axis=0), rtol=1e-9)


def test_train_evaluates_a_validation_set_every_20_steps_by_default():
    out = run(0, **{**TINY, "steps": 40, "validation_size": 4})
    assert out.val_step.tolist() == [0, 20, 40]


def _rows(rng: np.random.Generator, seeds: int, sizes: list[int], n: int, d: int) -> dict:
    """Held-out rows drawn as train draws them, chunk after chunk from one generator, joined."""
    chunks = [sample_batch(rng, seeds, size, n, d) for size in sizes]
    return {key: np.concatenate([c[key] for c in chunks], axis=1) for key in chunks[0]}


def test_train_evaluates_at_the_given_steps_and_on_a_separate_validation_set():
    marks = evaluation_steps(12, resolution=0.5, dense=3)
    out = run(4, n=6, d=5, kind="dot", alphas=[1.0, 2.0], lrs=[0.01, 0.03], seeds=2, steps=12, batch=4, eval_steps=marks,
              eval_size=10, validation_size=6, validation_every=5)
    np.testing.assert_array_equal(out.step, marks)
    np.testing.assert_array_equal(out.val_step, [0, 5, 10, 12])
    assert out.loss.shape == (2, 2, 2, marks.size) and out.val_loss.shape == (2, 2, 2, 4)
    # at step 0 the two sets are different rows: different losses
    assert not np.allclose(out.loss[..., 0], out.val_loss[..., 0])
    # the validation loss at step 0 is that of the initial weights on 6 rows from default_rng([seed, 3]), drawn 4 at a time
    params = init_params(np.random.default_rng(4), 2, 4, 5)
    rows = _rows(np.random.default_rng([4, 3]), 2, [4, 2], 6, 5)
    np.testing.assert_allclose(out.val_loss[..., 0].reshape(4, 2).T, forward(params, rows, np.repeat([1.0, 2.0], 2))["loss"], rtol=1e-12)


@pytest.mark.parametrize("kind", ["dot", "cosine"])
def test_the_held_out_means_are_over_rows_whatever_the_chunks(kind):
    """Ten test rows drawn in chunks of four (4, 4, 2): the step-0 loss, accuracy and
    (1/2)||J||_1 are means over the ten rows (a mean over the three chunks would weigh the
    last two rows double)."""
    out = run(8, n=5, d=4, kind=kind, alphas=[1.0, 3.0], lrs=[0.01], seeds=1, steps=1, batch=4, eval_size=10)
    params = init_params(np.random.default_rng(8), 1, 2, 4)
    rows = _rows(np.random.default_rng([8, 1]), 1, [4, 4, 2], 5, 4)
    loss, _, diagnostics = loss_and_grads(params, rows, [1.0, 3.0], kind)
    for got, want in ((out.loss, loss), (out.accuracy, diagnostics["accuracy"]), (out.half_l1, diagnostics["half_l1"])):
        np.testing.assert_allclose(got[:, 0, 0, 0], want[0], rtol=1e-12)


def test_per_scale_rates_train_each_scale_at_its_own_rates():
    """A (scales, rates) grid trains the same models as separate runs of each scale."""
    kw = dict(n=6, d=5, kind="dot", seeds=2, steps=15, batch=4, eval_every=5, eval_size=8)
    both = run(2, alphas=[1.0, 4.0], lrs=[[0.01, 0.1], [0.003, 0.03]], **kw)
    for a, (alpha, rates) in enumerate(((1.0, [0.01, 0.1]), (4.0, [0.003, 0.03]))):
        alone = run(2, alphas=[alpha], lrs=rates, **kw)
        np.testing.assert_allclose(both.loss[a], alone.loss[0], rtol=1e-10)


def test_models_of_one_seed_start_alike():
    """Common random numbers: at step 0 the learning rates cannot differ."""
    out = run(5, n=8, d=8, kind="cosine", alphas=[3.0], lrs=[1e-3, 1e-2], seeds=3, steps=2, eval_every=1, eval_size=32)
    np.testing.assert_array_equal(out.loss[0, 0, :, 0], out.loss[0, 1, :, 0])
    assert not np.array_equal(out.loss[0, 0, 0, 0], out.loss[0, 0, 1, 0])


# ---- the optimisers ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_training_lowers_the_loss(optimizer):
    lr = 3e-2 if optimizer == "adam" else 0.3
    out = run(0, n=8, d=8, kind="dot", alphas=[1.0, 2.0], lrs=[lr], seeds=2, steps=100, batch=16, eval_every=50, eval_size=64, optimizer=optimizer)
    assert out.loss.shape == (2, 1, 2, 3)
    np.testing.assert_array_equal(out.step, [0, 50, 100])
    assert np.all(out.loss[..., -1] < 0.7 * out.loss[..., 0])
    assert np.all(out.accuracy[..., -1] > out.accuracy[..., 0])


def test_the_first_adam_step_moves_every_gain_by_the_rate():
    """Adam's first step is lr g / (|g| + eps) (both moments are g and g^2 after bias
    correction): the log gain moves by about the rate against the sign of its gradient, which is recomputed here from the same seed's weights
    and first batch (drawn after the held-out set, as the loop draws them)."""
    seed, n, d, lrs = 4, 8, 6, [0.01, 0.05]
    out = run(seed, n=n, d=d, kind="cosine", alphas=[2.0, 5.0], lrs=lrs, seeds=2, steps=1, eval_every=1, eval_size=8, learn_scale=True)
    rng = np.random.default_rng(seed)
    params = init_params(rng, 2, 4, d)
    params["log_gain"] = np.zeros((2, 4))
    _, grads, _ = loss_and_grads(params, sample_batch(rng, 2, 32, n, d), np.repeat([2.0, 5.0], 2), "cosine")
    g = grads["log_gain"]
    expected = np.repeat([2.0, 5.0], 2)[None, :] * np.exp(-np.tile(lrs, 2)[None, :] * g / (np.abs(g) + 1e-8))
    np.testing.assert_allclose(out.scale[..., 0], np.broadcast_to([[2.0], [5.0]], (2, 2))[..., None] * np.ones((2, 2, 2)))
    np.testing.assert_allclose(out.scale[..., 1].transpose(2, 0, 1).reshape(2, 4), expected, rtol=1e-13)


#: AdamW runs: two scales, two rates, two seeds, evaluated after every step
SMALL = {"n": 8, "d": 6, "kind": "dot", "alphas": [1.0, 3.0], "lrs": [0.01, 0.05], "seeds": 2, "eval_every": 1, "eval_size": 8}


def test_zero_decay_is_adam_bit_for_bit():
    plain = run(3, steps=5, **SMALL)
    decayed = run(3, steps=5, weight_decay=0.0, **SMALL)
    assert set(plain.as_dict()) == set(decayed.as_dict())
    for key, value in plain.as_dict().items():
        np.testing.assert_array_equal(value, getattr(decayed, key))


@pytest.mark.parametrize("learn_scale", [False, True])
def test_adamw_steps_match_the_update_written_out(learn_scale):
    """Three AdamW steps of the loop against W <- W (1 - lr wd) - lr m_hat / (sqrt(v_hat) + 1e-8),
    recomputed from the same seed (initial weights, then the held-out set from its own
    generator, then one batch per step), compared through the held-out loss after each step.
    With a learned scale, its log gain follows Adam at the same rate and is not decayed."""
    seed, wd, steps = 5, 0.3, 3
    out = run(seed, steps=steps, weight_decay=wd, learn_scale=learn_scale, **SMALL)
    rng = np.random.default_rng(seed)
    models = len(SMALL["alphas"]) * len(SMALL["lrs"])
    params = init_params(rng, SMALL["seeds"], models, SMALL["d"])
    if learn_scale:
        params["log_gain"] = np.zeros((SMALL["seeds"], models))
    eval_rng = np.random.default_rng([seed, 1])
    held_out = sample_batch(eval_rng, SMALL["seeds"], 8, SMALL["n"], SMALL["d"])
    alpha = np.repeat(SMALL["alphas"], len(SMALL["lrs"]))
    rate = np.tile(SMALL["lrs"], len(SMALL["alphas"]))
    m1 = {k: np.zeros_like(w) for k, w in params.items()}
    m2 = {k: np.zeros_like(w) for k, w in params.items()}
    for t in range(1, steps + 1):
        _, grads, _ = loss_and_grads(params, sample_batch(rng, SMALL["seeds"], 32, SMALL["n"], SMALL["d"]), alpha, "dot")
        for k in params:
            lr = rate[None, :, None, None] if params[k].ndim == 4 else rate[None, :]
            decay = wd if k in ("Wq", "Wk") else 0.0
            m1[k] = 0.9 * m1[k] + 0.1 * grads[k]
            m2[k] = 0.999 * m2[k] + 0.001 * grads[k] ** 2
            params[k] = params[k] * (1 - lr * decay) - lr * (m1[k] / (1 - 0.9**t)) / (np.sqrt(m2[k] / (1 - 0.999**t)) + 1e-8)
        loss, _, _ = loss_and_grads(params, held_out, alpha, "dot")
        expected = loss.T.reshape(len(SMALL["alphas"]), len(SMALL["lrs"]), SMALL["seeds"])
        np.testing.assert_allclose(out.loss[..., t], expected, rtol=1e-12)
        if learn_scale:
            scale = (alpha * np.exp(params["log_gain"])).T.reshape(expected.shape)
            np.testing.assert_allclose(out.scale[..., t], scale, rtol=1e-12)
    plain = run(seed, steps=steps, learn_scale=learn_scale, **SMALL)
    assert np.abs(plain.loss[..., -1] / out.loss[..., -1] - 1).max() > 1e-4  # the decay changed something


# ---- divergence ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("learn_scale", [False, True])
def test_a_model_diverging_by_its_weights_is_frozen_and_marked(learn_scale):
    """SGD at an absurd rate sends the weights past LIMIT at step 1: the model is marked,
    keeps its last weights (its curves, and a learned scale, stay as they were) and every
    evaluation stays finite, while its twin at a small rate trains on."""
    out = run(0, n=4, d=4, kind="dot", alphas=[1.0], lrs=[1e-2, 1e200], seeds=2, steps=5, eval_every=1, eval_size=8, optimizer="sgd",
              learn_scale=learn_scale)
    np.testing.assert_array_equal(out.diverged_at[0], [[0, 0], [1, 1]])
    assert np.all(np.isfinite(out.loss))
    np.testing.assert_array_equal(out.loss[0, 1, :, 1], out.loss[0, 1, :, -1])
    if learn_scale:
        frozen = out.scale[0, 1, 0, 0:]
        np.testing.assert_array_equal(frozen, np.full_like(frozen, frozen[0]))


def test_a_gain_beyond_the_limit_is_frozen_and_marked():
    """Adam at rate 20 moves the log gain past log(LIMIT) in one step while the weights
    stay far inside LIMIT: that model is marked diverged at step 1 and keeps its last
    (initial) scale, while its twin at a small rate trains on."""
    out = run(0, n=4, d=4, kind="dot", alphas=[1.5], lrs=[1e-3, 20.0], seeds=2, steps=3, eval_every=1, eval_size=8, learn_scale=True)
    np.testing.assert_array_equal(out.diverged_at[0], [[0, 0], [1, 1]])
    np.testing.assert_array_equal(out.scale[0, 1], np.full((2, 4), 1.5))
    assert np.all(out.scale[0, 0, :, -1] != 1.5) and np.all(np.isfinite(out.loss))


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


def _sgd(seed: int, lrs, steps: int = 1, **kw) -> TrainResult:
    return run(seed, kind="dot", alphas=[1.0], lrs=lrs, seeds=1, steps=steps, eval_size=4, optimizer="sgd", return_params=True, **STEP, **kw)


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
        assert out.diverged_at[0, m, 0] == (1 if out_of_range else 0), (m, lr)
        for key in ("Wq", "Wk"):
            want = params[key][0, 0] if out_of_range else new[key]
            np.testing.assert_allclose(out.params[key][0, m], want, rtol=1e-9, err_msg=f"rate {lr}, {key}")


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
    assert out.diverged_at.tolist() == [[[0.0]]]
    assert out.params[key][0, 0][i] == edge
    for k in ("Wq", "Wk"):
        assert np.abs(out.params[k]).max() <= LIMIT


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
    assert out.diverged_at.tolist() == [[[0.0]]]
    assert out.params["log_gain"][0, 0] == edge
    np.testing.assert_allclose(out.scale[0, 0, 0, -1], LIMIT ** math.copysign(1, edge), rtol=1e-12)


def test_adamw_decay_that_throws_the_weights_out_marks_a_model_whose_gain_stays_in_range():
    """Adam at rate 1 with weight_decay 1e7: the weights become W (1 - 1e7) - (about 1) per
    entry, far beyond LIMIT, while the log gain moves by about 1 (Adam's first step is lr
    m_hat / sqrt(v_hat) = lr sign(g)). The model is marked at step 1 and keeps its initial
    weights and gain (its scale stays alpha)."""
    params, _ = _first_step(0, learn_scale=True)
    assert 1e7 * np.abs(params["Wq"]).max() > 2 * LIMIT
    out = run(0, kind="dot", alphas=[1.5], lrs=[1.0], seeds=1, steps=2, eval_size=4, eval_every=1, weight_decay=1e7,
              learn_scale=True, return_params=True, **STEP)
    assert out.diverged_at.tolist() == [[[1.0]]]
    for key in ("Wq", "Wk", "log_gain"):
        np.testing.assert_array_equal(out.params[key], params[key], err_msg=key)
    np.testing.assert_array_equal(out.scale[0, 0, 0], [1.5, 1.5, 1.5])


def test_a_zero_query_stops_cosine_training_with_the_step_and_the_rates():
    """Cosine scores at scale 1e12: every row's attention is exactly one-hot, so the first
    gradient is exactly zero, and AdamW at lr 0.5, weight_decay 2 multiplies the weights by
    1 - 0.5 * 2 = 0. At step 2 every query is zero: its cosine is undefined."""
    with pytest.raises(FloatingPointError, match=r"^training diverged at step 2 .*zero.*\[\[0\.5\]\]"):
        run(0, n=2, d=2, c=1, kind="cosine", alphas=[1e12], lrs=[0.5], seeds=2, batch=4, steps=3, eval_size=4, weight_decay=2.0)


def test_an_overflowing_step_raises_and_names_the_overflow():
    """Dot scores at the largest float as scale: as above, the weights are exactly zero after
    step 1; at step 2 every score is 0, the attention uniform (p = 1/2 over n = 2 keys), and
    the score gradient alpha p (g - p.g) overflows. The step raises FloatingPointError naming
    the overflow, and no RuntimeWarning escapes on the way."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FloatingPointError, match=named('training')):
            run(0, n=2, d=2, c=1, kind="dot", alphas=[np.finfo(float).max], lrs=[0.5], seeds=4, batch=1, steps=3, eval_size=2, weight_decay=2.0)


#: Adam at rate 3 on a learned scale: both seeds' gains leave [-ln LIMIT, ln LIMIT], seed 0
#: at step 8 and seed 1 at step 9; the model at rate 0.3 never diverges
DIVERGING = {"n": 4, "d": 2, "kind": "dot", "alphas": [1.0], "lrs": [0.3, 3.0], "seeds": 2, "batch": 4, "eval_size": 4,
             "eval_every": 1, "learn_scale": True, "return_params": True}


def test_a_diverged_model_keeps_its_last_weights_when_another_diverges_later():
    out = run(0, steps=30, **DIVERGING)
    at = out.diverged_at[0]  # (lrs, seeds)
    assert at[0].tolist() == [0, 0]
    first, second = int(at[1, 0]), int(at[1, 1])
    assert 0 < first < second < 30  # the case at issue: another model diverges after this one
    for s, t in ((0, first), (1, second)):
        # from the last step before it diverged on, its curves do not move
        for key in ("loss", "accuracy", "half_l1", "scale"):
            curve = getattr(out, key)[0, 1, s]
            assert (curve[t - 1 :] == curve[t - 1]).all(), (s, key, curve[t - 1 :])
        # its final weights are the ones it had at step t - 1
        before = run(0, steps=t - 1, **DIVERGING)
        assert before.diverged_at[0, 1, s] == 0
        for key in ("Wq", "Wk", "log_gain"):
            np.testing.assert_array_equal(out.params[key][s, 1], before.params[key][s, 1], err_msg=f"seed {s}, {key}")
        # and the step it first left the range does not depend on how long the run goes on
        assert run(0, steps=t, **DIVERGING).diverged_at[0, 1, s] == t


# ---- memory -------------------------------------------------------------------------------------------------------------------
def _peak_of_a_cosine_run(eval_size: int) -> float:
    """Peak traced memory (bytes, above what was held before) of one cosine training step
    with its two evaluations: n = 2, d = 2, c = 1, 64 models, batches of 256."""
    settings = TrainSettings(n=2, d=2, c=1, kind="cosine", alphas=list(np.arange(1.0, 9.0)), lrs=list(np.arange(1, 9) * 1e-3), seeds=1, steps=1,
                             batch=256, eval_size=eval_size)
    return peak_bytes(train, 0, settings)


def test_the_cosine_evaluation_works_in_pieces_whatever_the_size_of_the_test_set(monkeypatch):
    """With PIECE lowered to 2^16 key numbers (to keep the test small), a piece of the 64
    models of width 2 over n = 2 keys is 256 rows. The keys of every model for 1024 more test
    rows would take 1024 * 2 * 64 * 2 * 8 bytes (2 MB) whole; in pieces the peak may grow by
    the added rows themselves (K, V, x, target, j and their joined copy: about 0.1 MB), never by that."""
    monkeypatch.setattr(model, "PIECE", 2**16)
    keys_of_the_added_rows = 1024 * 2 * 64 * 2 * 8
    grown = _peak_of_a_cosine_run(2048) - _peak_of_a_cosine_run(1024)
    assert grown < keys_of_the_added_rows / 2, grown / 2**20


def _peak_of_a_cosine_step(batch: int) -> float:
    """Peak traced memory (bytes, above what was held before) of one cosine training step:
    n = 2, d = 2, 64 models."""
    settings = TrainSettings(n=2, d=2, kind="cosine", alphas=list(np.arange(1.0, 9.0)), lrs=list(np.arange(1, 9) * 1e-3), seeds=1, steps=1,
                             batch=batch, eval_size=4)
    return peak_bytes(train, 0, settings)


def test_a_cosine_step_works_in_pieces_whatever_the_number_of_models():
    """Cosine scores form the keys of every model, (seeds, batch, n, models, d) numbers;
    the step works through the batch in pieces of at most 2^20 of them. With 64 models of
    width 2 and n = 2 that is 4096 examples a piece, so going from 8192 to 16384 examples
    adds pieces, not memory: the peak may grow by the added batch itself (about 2 MB),
    never by the 16 MB the added examples' keys would take whole."""
    keys_of_the_added_examples = 8192 * 2 * 64 * 2 * 8  # bytes: (seeds, batch, n, models, d) float64
    grown = _peak_of_a_cosine_step(16384) - _peak_of_a_cosine_step(8192)
    assert grown < keys_of_the_added_examples, grown / 2**20
