"""The learned-scale arm of Part IV: the gradient of the trained log gain against
central differences, one Adam step by hand, the pairing of the learned and fixed
runs through their shared seed, the stored results against the code, and bad input."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from attnscale.reproducibility import CHAOTIC_LABELS, STABLE_RTOL, compare_cells
from attnscale.training import SWEEP, init_params, load_sweep, loss_and_grads, run_config, sample_batch, select_scales, sweep_scales, train

DATA = Path(__file__).resolve().parents[1] / "chapters" / "data"


def _model(kind, seed=3):
    rng = np.random.default_rng(seed)
    params = init_params(rng, 2, 3, 6)
    params["Wq"] = params["Wq"] + 0.3 * rng.standard_normal(params["Wq"].shape)  # the models of a seed part ways
    params["log_gain"] = rng.normal(0.0, 0.5, (2, 3))
    return params, sample_batch(rng, 2, 4, 5, 6), np.array([0.7, 1.7, 3.0])


@pytest.mark.parametrize("kind", ["dot", "cosine"])
def test_every_gradient_with_a_learned_scale_matches_central_differences(kind):
    """d loss / d log_gain (and the weight gradients, now at the learned scale
    alpha exp(log_gain)) against central differences of the loss, entry by entry."""
    params, batch, alpha = _model(kind)
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
    params, batch, alpha = _model("dot")
    params["log_gain"][:] = 0.0
    loss, grads, _ = loss_and_grads(params, batch, alpha, "dot")
    fixed = {k: params[k] for k in ("Wq", "Wk")}
    loss0, grads0, _ = loss_and_grads(fixed, batch, alpha, "dot")
    np.testing.assert_allclose(loss, loss0, rtol=1e-14)
    for k in fixed:
        np.testing.assert_allclose(grads[k], grads0[k], rtol=1e-12, atol=1e-15)


def test_the_first_adam_step_moves_every_gain_by_the_rate():
    """Adam's first step is lr g / (|g| + eps) (both moments are g and g^2 after bias
    correction): the log gain moves by about the rate against the sign of its gradient, which is recomputed here from the same seed's weights
    and first batch (drawn after the held-out set, as the loop draws them)."""
    seed, n, d, lrs = 4, 8, 6, [0.01, 0.05]
    out = train(seed, n=n, d=d, kind="cosine", alphas=[2.0, 5.0], lrs=lrs, seeds=2, steps=1, eval_every=1, eval_size=8, learn_scale=True)
    rng = np.random.default_rng(seed)
    params = init_params(rng, 2, 4, d)
    params["log_gain"] = np.zeros((2, 4))
    _, grads, _ = loss_and_grads(params, sample_batch(rng, 2, 32, n, d), np.repeat([2.0, 5.0], 2), "cosine")
    g = grads["log_gain"]
    expected = np.repeat([2.0, 5.0], 2)[None, :] * np.exp(-np.tile(lrs, 2)[None, :] * g / (np.abs(g) + 1e-8))
    np.testing.assert_allclose(out["scale"][..., 0], np.broadcast_to([[2.0], [5.0]], (2, 2))[..., None] * np.ones((2, 2, 2)))
    np.testing.assert_allclose(out["scale"][..., 1].transpose(2, 0, 1).reshape(2, 4), expected, rtol=1e-13)


def test_learned_and_fixed_runs_share_their_start():
    """The learned arm uses the fixed cell's seed, so at step 0 (scale = the
    initial scale, weights shared) its held-out losses are the fixed cell's, seed by seed."""
    kw = {"steps": 20, "seeds": 2, "eval_size": 32, "validation_size": 32}
    fixed = run_config(16, 32, "dot", "adam", **kw)
    learned = run_config(16, 32, "dot", "adam", learn_scale=True, **kw)
    np.testing.assert_allclose(learned["loss"][..., 0], fixed["loss"][..., 0], rtol=1e-12)
    np.testing.assert_allclose(learned["scale"][..., 0], np.broadcast_to(np.array(fixed["alphas"])[:, None], (5, 2)), rtol=1e-15)
    assert not np.allclose(learned["loss"][..., -1], fixed["loss"][..., -1])  # and then they part


@pytest.mark.parametrize("kind", ["dot", "cosine"])
def test_stored_learned_sweep_is_the_current_settings(kind):
    """The stored learned-scale runs come from the current settings, every cell is
    there, and each pairs with the fixed-scale cell of the same seed (equal losses at
    step 0)."""
    path = DATA / f"training_learned_{kind}.json"
    raw = json.loads(path.read_text())
    assert raw["settings"] == json.loads(json.dumps(SWEEP)) and raw["learn_scale"] is True
    sweep = load_sweep(path)
    fixed = {(c["n"], c["d"]): c for c in load_sweep(DATA / "training_adam.json")["cells"] if c["kind"] == kind}
    assert {(c["n"], c["d"]) for c in sweep["cells"]} == set(fixed)
    for c in sweep["cells"]:
        f = fixed[(c["n"], c["d"])]
        assert c["seed"] == f["seed"] and c["labels"] == f["labels"]
        np.testing.assert_allclose(c["loss"][..., 0], f["loss"][..., 0], rtol=1e-5)  # stored to six digits


@pytest.mark.stored_sweep
@pytest.mark.parametrize("kind", ["dot", "cosine"])
def test_stored_learned_sweep_matches_the_code(kind):
    """Two scales of the smallest cell of each kind reproduce from its seed in what
    survives a change of BLAS kernel: the fixed sweep's comparison, and the learned
    scale at the end of the stable runs to the same relative tolerance."""
    sweep = load_sweep(DATA / f"training_learned_{kind}.json")
    n, d = (16, 32)
    # two scales, one stable and one chaotic (a subset is the full cell restricted:
    # test_a_subset_of_scales_is_the_full_cell_restricted)
    scales = ["α*(n)", "8"] if kind == "dot" else ["α*cos(n,d)", "64"]
    stored = select_scales(next(c for c in sweep["cells"] if (c["n"], c["d"]) == (n, d)), scales)
    live = run_config(n, d, kind, "adam", learn_scale=True, scales=scales)
    same = compare_cells(live, stored)
    assert same.reproduces, same
    calm = np.array([label not in CHAOTIC_LABELS for label in stored["labels"]])
    error = np.abs(live["scale"][calm, :, -1] / stored["scale"][calm, :, -1] - 1).max()
    assert error <= STABLE_RTOL, error


def test_sweep_scales_are_the_learned_arms_starting_points():
    labels, alphas = sweep_scales(64, 32, "cosine")
    assert labels[0] == "√d" and math.isclose(alphas[0], math.sqrt(32))


def test_bad_learned_scale_input_is_refused_by_name():
    kw = {"n": 4, "d": 4, "kind": "dot", "alphas": [1.0], "lrs": [1e-2], "seeds": 1, "steps": 1, "eval_size": 4}
    for bad in ("yes", 1, None):
        with pytest.raises(TypeError, match="learn_scale"):
            train(0, learn_scale=bad, **kw)
    params, batch, alpha = _model("dot")
    with pytest.raises(ValueError, match="log_gain"):
        loss_and_grads({**params, "log_gain": np.zeros(3)}, batch, alpha, "dot")
    with pytest.raises(ValueError, match="log_gain"):
        loss_and_grads({**params, "log_gain": np.full((2, 3), np.nan)}, batch, alpha, "dot")


def test_a_gain_beyond_the_limit_is_frozen_and_marked():
    """Adam at rate 20 moves the log gain past log(LIMIT) in one step while the weights
    stay far inside LIMIT: that model is marked diverged at step 1 and keeps its last
    (initial) scale, while its twin at a small rate trains on."""
    out = train(0, n=4, d=4, kind="dot", alphas=[1.5], lrs=[1e-3, 20.0], seeds=2, steps=3, eval_every=1, eval_size=8, learn_scale=True)
    np.testing.assert_array_equal(out["diverged_at"][0], [[0, 0], [1, 1]])
    np.testing.assert_array_equal(out["scale"][0, 1], np.full((2, 4), 1.5))
    assert np.all(out["scale"][0, 0, :, -1] != 1.5) and np.all(np.isfinite(out["loss"]))


def test_a_model_diverging_by_its_weights_keeps_its_scale():
    """SGD at an absurd rate sends the weights past LIMIT: the model is frozen, its
    learned scale with it (the same at every later evaluation)."""
    out = train(0, n=4, d=4, kind="dot", alphas=[1.0], lrs=[1e-2, 1e200], seeds=2, steps=5, eval_every=1, eval_size=8, optimizer="sgd", learn_scale=True)
    assert np.all(out["diverged_at"][0, 1] > 0) and np.all(out["diverged_at"][0, 0] == 0)
    at = int(out["diverged_at"][0, 1, 0])
    frozen = out["scale"][0, 1, 0, at - 1:]
    np.testing.assert_array_equal(frozen, np.full_like(frozen, frozen[0]))
