"""The protocol of the Part IV sweep: the evaluation schedule, the validation set
that chooses the rate, the windows of rates and their slides, and the pieces in
which cosine batches are worked through."""

import math

import numpy as np
import pytest

from attnscale.training import SWEEP, init_params, loss_and_grads, sample_batch, train
from attnscale.training.loop import _evaluate, _held_out_rows, evaluation_steps
from attnscale.training.model import PIECE, _loss_and_grads, _piece_size
from attnscale.training.stats import best_lr_index, best_rates
from attnscale.training.sweep import _lattice_index, lattice_rate, rate_window, tune


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


@pytest.mark.parametrize("kwargs, match", [({"steps": 0}, "steps must be an integer >= 1"), ({"steps": 10, "resolution": 0.0}, "resolution must lie in"),
                                           ({"steps": 10, "resolution": float("nan")}, "resolution"), ({"steps": 10, "dense": 0}, "dense must be")])
def test_evaluation_steps_refuse_bad_input(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        evaluation_steps(**kwargs)


def test_train_evaluates_at_the_given_steps_and_on_a_separate_validation_set():
    marks = evaluation_steps(12, resolution=0.5, dense=3)
    out = train(4, n=6, d=5, kind="dot", alphas=[1.0, 2.0], lrs=[0.01, 0.03], seeds=2, steps=12, batch=4, eval_steps=marks,
                eval_size=10, validation_size=6, validation_every=5)
    np.testing.assert_array_equal(out["step"], marks)
    np.testing.assert_array_equal(out["val_step"], [0, 5, 10, 12])
    assert out["loss"].shape == (2, 2, 2, marks.size) and out["val_loss"].shape == (2, 2, 2, 4)
    # at step 0 the two sets are different rows: different losses
    assert not np.allclose(out["loss"][..., 0], out["val_loss"][..., 0])
    # the validation loss at step 0 is that of the initial weights on rows drawn from default_rng([seed, 3])
    params = init_params(np.random.default_rng(4), 2, 4, 5)
    rows = _held_out_rows(np.random.default_rng([4, 3]), 2, 6, 4, 6, 5, 8, 1.0)
    np.testing.assert_allclose(out["val_loss"][..., 0].reshape(4, 2).T, _evaluate(params, rows, np.repeat([1.0, 2.0], 2), "dot")[0], rtol=1e-12)
    for bad, match in (([0, 3, 12], None), ([1, 12], "eval_steps"), ([0, 5, 5, 12], "eval_steps"), ([0, 11], "eval_steps")):
        if match:
            with pytest.raises(ValueError, match=match):
                train(4, n=6, d=5, kind="dot", alphas=[1.0], lrs=[0.01], seeds=1, steps=12, eval_steps=bad)
    with pytest.raises(ValueError, match="validation_size"):
        train(4, n=6, d=5, kind="dot", alphas=[1.0], lrs=[0.01], seeds=1, steps=2, validation_size=-3)


def test_the_held_out_mean_weights_each_chunk_by_its_size():
    """Ten rows in chunks of four (4, 4, 2): the mean is over rows, not over chunks."""
    rng = np.random.default_rng(8)
    params = init_params(rng, 1, 2, 4)
    rows = _held_out_rows(np.random.default_rng(9), 1, 10, 4, 5, 4, 3, 1.0)
    assert [r["K"].shape[1] for r in rows] == [4, 4, 2]
    whole = {key: np.concatenate([r[key] for r in rows], axis=1) for key in rows[0]}
    a = np.array([1.0, 3.0])
    for kind in ("dot", "cosine"):
        parts = _evaluate(params, rows, a, kind)
        one = _evaluate(params, [whole], a, kind)
        for x, y in zip(parts, one):
            np.testing.assert_allclose(x, y, rtol=1e-12)


def test_per_scale_rates_train_each_scale_at_its_own_rates():
    """A (scales, rates) grid trains the same models as separate runs of each scale."""
    kw = dict(n=6, d=5, kind="dot", seeds=2, steps=15, batch=4, eval_every=5, eval_size=8)
    both = train(2, alphas=[1.0, 4.0], lrs=[[0.01, 0.1], [0.003, 0.03]], **kw)
    for a, (alpha, rates) in enumerate(((1.0, [0.01, 0.1]), (4.0, [0.003, 0.03]))):
        alone = train(2, alphas=[alpha], lrs=rates, **kw)
        np.testing.assert_allclose(both["loss"][a], alone["loss"][0], rtol=1e-10)
    with pytest.raises(ValueError, match="one row of rates per scale"):
        train(2, alphas=[1.0, 4.0], lrs=[[0.01, 0.1]], **kw)


@pytest.mark.parametrize("piece", [3840, 3 * 3840, 10**9])
def test_cosine_pieces_give_the_whole_batch_gradient(monkeypatch, piece):
    """The training step works through a cosine batch in pieces of at most PIECE numbers
    of the batch's keys for every model (here 2 seeds x 40 keys x 3 models x 16 = 3840 per
    example; PIECE lowered to make pieces of 1 and 3 examples, the last one short); the
    gradients and the loss are the whole batch's to rounding."""
    import attnscale.training.model as model

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


def test_the_rate_lattice_and_its_windows():
    assert [lattice_rate(k) for k in range(-6, 3)] == [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]
    for k in range(-12, 8):
        assert _lattice_index(lattice_rate(k)) == k
        assert _lattice_index(lattice_rate(k) * 1.2) == k and _lattice_index(lattice_rate(k) / 1.2) == k
    # 4 lies nearer 3 than 10 on a log scale (log 4/3 = 0.29 < log 10/4 = 0.92)
    assert _lattice_index(4.0) == 1
    cfg = SWEEP
    assert [lattice_rate(k) for k in rate_window("sgd", "dot", 0.25, cfg)] == [0.3, 1.0, 3.0, 10.0, 30.0]
    assert [lattice_rate(k) for k in rate_window("sgd", "dot", 8.0, cfg)] == [0.01, 0.03, 0.1, 0.3, 1.0]
    assert [lattice_rate(k) for k in rate_window("adam", "dot", 8.0, cfg)] == [0.001, 0.003, 0.01, 0.03, 0.1]
    assert [lattice_rate(k) for k in rate_window("adam", "cosine", 64.0, cfg)] == [0.003, 0.01, 0.03, 0.1]
    assert [lattice_rate(k) for k in rate_window("sgd", "cosine", math.sqrt(32), cfg)] == [1.0, 3.0, 10.0, 30.0]
    with pytest.raises(ValueError, match="optimizer"):
        rate_window("lion", "dot", 1.0)
    with pytest.raises(ValueError, match="alpha must be"):
        rate_window("adam", "dot", 0.0)
    with pytest.raises(TypeError, match="k must be an integer"):
        lattice_rate(0.5)


def _small(**extra):
    return dict(n=6, d=5, kind="dot", seeds=2, steps=30, batch=4, eval_size=8, validation_size=8, validation_every=10, dense=5, **extra)


def test_a_window_slides_until_the_best_rate_is_inside():
    """Adam's window started far too low (1e-5 and up) for these scales: the best is at
    its top, so the window slides up one lattice point a round until the best lies
    inside it or the slides run out; every spliced run is the run of its rate."""
    cfg = {**SWEEP, "lrs": {"adam": {"dot": [1e-5, 0]}}, "rates": {"dot": 3}}
    out = tune(7, alphas=[1.0, 2.0], **_small(lrs=cfg["lrs"], rates=cfg["rates"], slides=2))
    # started at 3e-6, 1e-5, 3e-5: two slides up for both scales
    np.testing.assert_array_equal(out["slides"], [2, 2])
    np.testing.assert_allclose(out["lrs"], [[3e-5, 1e-4, 3e-4]] * 2)
    np.testing.assert_array_equal(out["best_lr"], [2, 2])  # still at the top: the slides ran out
    np.testing.assert_array_equal(out["best_lr"], best_lr_index(out["val_loss"]))
    # the runs spliced in are those a direct run of the final window gives
    direct = train(7, n=6, d=5, kind="dot", alphas=[1.0, 2.0], lrs=out["lrs"], seeds=2, steps=30, batch=4, eval_size=8,
                   eval_steps=evaluation_steps(30, dense=5), validation_size=8, validation_every=10)
    for key in ("loss", "accuracy", "val_loss", "diverged_at"):
        np.testing.assert_allclose(out[key], direct[key], rtol=1e-9, err_msg=key)
    # with more slides the best ends inside the window
    more = tune(7, alphas=[1.0, 2.0], **_small(lrs=cfg["lrs"], rates=cfg["rates"], slides=12))
    assert np.all((more["best_lr"] > 0) & (more["best_lr"] < 2)), more["best_lr"]
    assert np.all(more["slides"] > 2)


def test_a_window_slides_down_and_keeps_the_weights_of_its_runs():
    """Started at 0.3, 1 and 3, the best is the lowest rate: one slide down to 0.1, 0.3, 1,
    and the weights returned for the new lowest rate are those of its own run."""
    cfg = {"lrs": {"adam": {"dot": [1.0, 0]}}, "rates": {"dot": 3}}
    out = tune(3, alphas=[1.0], return_params=True, **_small(slides=1, **cfg))
    np.testing.assert_array_equal(out["slides"], [-1])
    np.testing.assert_allclose(out["lrs"], [[0.1, 0.3, 1.0]])
    assert out["params"]["Wq"].shape == (2, 1, 3, 5, 5)
    direct = train(3, n=6, d=5, kind="dot", alphas=[1.0], lrs=[0.1, 0.3, 1.0], seeds=2, steps=30, batch=4, eval_size=8,
                   eval_steps=evaluation_steps(30, dense=5), validation_size=8, validation_every=10, return_params=True)
    for key in ("Wq", "Wk"):
        np.testing.assert_allclose(out["params"][key][:, 0, 0], direct["params"][key][:, 0], rtol=1e-9, err_msg=key)
    np.testing.assert_allclose(out["loss"][0, :2], direct["loss"][0, :2], rtol=1e-9)


def test_tune_needs_a_validation_set():
    with pytest.raises(ValueError, match="validation_size"):
        tune(1, alphas=[1.0], **{**_small(), "validation_size": 0})


def test_best_rates_reads_either_layout():
    assert best_rates({"lrs": [[0.1, 0.3], [1.0, 3.0]], "best_lr": np.array([1, 0])}).tolist() == [0.3, 1.0]
    assert best_rates({"lrs": [0.1, 0.3, 1.0], "best_lr": np.array([2, 0])}).tolist() == [1.0, 0.1]
    with pytest.raises(ValueError, match="best_lr"):
        best_rates({"lrs": [[0.1, 0.3]], "best_lr": np.array([2])})
    with pytest.raises(ValueError, match="best_lr"):
        best_rates({"lrs": [[0.1, 0.3]], "best_lr": np.array([0, 1])})
