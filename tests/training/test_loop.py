"""attnscale.training.loop: train and its evaluation schedule: what a run returns, how it
stops on divergence, and how the cosine evaluation works in pieces.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from attnscale.training import evaluation_steps, forward, init_params, loss_and_grads, model, sample_batch, train
from attnscale.training.loop import LIMIT
from expect import named, peak_bytes


#: the smallest valid run (tests/test_refusals.py's valid call of train)
TINY = {"n": 4, "d": 4, "kind": "dot", "alphas": [1.0], "lrs": [1e-2], "seeds": 1, "steps": 1, "eval_size": 4}



@pytest.mark.parametrize("marks, shown", [([0, 0.5, 1], "0.5"), ([0, 2, 1], "[0.0, 2.0, 1.0]"), ([1, 1], "[1.0, 1.0]")])
def test_train_refuses_bad_evaluation_steps_showing_them(marks, shown):
    """eval_steps must be increasing whole steps from 0 to steps: a refusal names eval_steps
    and shows the steps it got, so that the caller sees which one is wrong."""
    with pytest.raises(ValueError, match=named("eval_steps")) as info:
        train(0, **{**TINY, "steps": 2, "eval_steps": marks})
    assert shown in str(info.value)


def test_evaluation_steps_refuse_a_step_count_beyond_int64_by_name():
    """The schedule is an int64 array, so 2^63 steps cannot be held; at resolution 1 the
    schedule doubles, so it reaches 2^63 in 63 marks and the refusal is quick. The largest
    count that fits still works and ends on itself."""
    top = 2**63 - 1
    marks = evaluation_steps(top, resolution=1.0, dense=1)
    assert marks.dtype == np.int64 and int(marks[-1]) == top
    with pytest.raises(ValueError, match="^steps must be"):
        evaluation_steps(2**63, resolution=1.0, dense=1)



def test_evaluation_steps_refuses_a_bad_resolution_by_name():
    with pytest.raises(TypeError, match=named('resolution')):
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


def test_a_zero_query_stops_cosine_training_with_the_step_and_the_rates():
    """Cosine scores at scale 1e12: every row's attention is exactly one-hot, so the first
    gradient is exactly zero, and AdamW at lr 0.5, weight_decay 2 multiplies the weights by
    1 - 0.5 * 2 = 0. At step 2 every query is zero: its cosine is undefined."""
    with pytest.raises(FloatingPointError, match=r"^training diverged at step 2 .*zero.*\[\[0\.5\]\]"):
        train(0, n=2, d=2, c=1, kind="cosine", alphas=[1e12], lrs=[0.5], seeds=2, batch=4, steps=3, eval_size=4, weight_decay=2.0)


def test_an_overflowing_step_raises_and_names_the_overflow():
    """Dot scores at the largest float as scale: as above, the weights are exactly zero after
    step 1; at step 2 every score is 0, the attention uniform (p = 1/2 over n = 2 keys), and
    the score gradient alpha p (g - p.g) overflows. The step raises FloatingPointError naming
    the overflow, and no RuntimeWarning escapes on the way."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FloatingPointError, match=named('training')):
            train(0, n=2, d=2, c=1, kind="dot", alphas=[np.finfo(float).max], lrs=[0.5], seeds=4, batch=1, steps=3, eval_size=2,
                  weight_decay=2.0)


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



#: Adam at rate 3 on a learned scale: both seeds' gains leave [-ln LIMIT, ln LIMIT], seed 0
#: at step 8 and seed 1 at step 9; the model at rate 0.3 never diverges
DIVERGING = {"n": 4, "d": 2, "kind": "dot", "alphas": [1.0], "lrs": [0.3, 3.0], "seeds": 2, "batch": 4, "eval_size": 4,
             "eval_every": 1, "learn_scale": True, "return_params": True}


def test_a_diverged_model_keeps_its_last_weights_when_another_diverges_later():
    run = train(0, steps=30, **DIVERGING)
    at = run["diverged_at"][0]  # (lrs, seeds)
    assert at[0].tolist() == [0, 0]
    first, second = int(at[1, 0]), int(at[1, 1])
    assert 0 < first < second < 30  # the case at issue: another model diverges after this one
    for s, t in ((0, first), (1, second)):
        # from the last step before it diverged on, its curves do not move
        for key in ("loss", "accuracy", "half_l1", "scale"):
            curve = run[key][0, 1, s]
            assert (curve[t - 1 :] == curve[t - 1]).all(), (s, key, curve[t - 1 :])
        # its final weights are the ones it had at step t - 1
        before = train(0, steps=t - 1, **DIVERGING)
        assert before["diverged_at"][0, 1, s] == 0
        for key in ("Wq", "Wk", "log_gain"):
            np.testing.assert_array_equal(run["params"][key][s, 1], before["params"][key][s, 1], err_msg=f"seed {s}, {key}")
        # and the step it first left the range does not depend on how long the run goes on
        assert train(0, steps=t, **DIVERGING)["diverged_at"][0, 1, s] == t
