"""AdamW in the training loop (decoupled weight decay, the arm where the scale
stops being a reparametrisation): a zero decay is Adam, bit for bit; a few
AdamW steps against the update written out by hand from the same seed; the
stored AdamW sweep against the code and against its Adam twin; bad input."""

import json
from pathlib import Path

import numpy as np
import pytest

from attnscale.reproducibility import compare_cells
from attnscale.training import SWEEP, init_params, load_sweep, loss_and_grads, run_config, sample_batch, select_scales, train

DATA = Path(__file__).resolve().parents[1] / "chapters" / "data"
SMALL = {"n": 8, "d": 6, "kind": "dot", "alphas": [1.0, 3.0], "lrs": [0.01, 0.05], "seeds": 2, "eval_every": 1, "eval_size": 8}


def test_zero_decay_is_adam_bit_for_bit():
    plain = train(3, steps=5, **SMALL)
    decayed = train(3, steps=5, weight_decay=0.0, **SMALL)
    for key in plain:
        np.testing.assert_array_equal(plain[key], decayed[key])


@pytest.mark.parametrize("learn_scale", [False, True])
def test_adamw_steps_match_the_update_written_out(learn_scale):
    """Three AdamW steps of the loop against W <- W (1 - lr wd) - lr m_hat / (sqrt(v_hat) + 1e-8),
    recomputed from the same seed (initial weights, then the held-out set from its own
    generator, then one batch per step), compared through the held-out loss after each step.
    With a learned scale, its log gain follows Adam at the same rate and is not decayed."""
    seed, wd, steps = 5, 0.3, 3
    out = train(seed, steps=steps, weight_decay=wd, learn_scale=learn_scale, **SMALL)
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
        np.testing.assert_allclose(out["loss"][..., t], expected, rtol=1e-12)
        if learn_scale:
            scale = (alpha * np.exp(params["log_gain"])).T.reshape(expected.shape)
            np.testing.assert_allclose(out["scale"][..., t], scale, rtol=1e-12)
    plain = train(seed, steps=steps, learn_scale=learn_scale, **SMALL)
    assert np.abs(plain["loss"][..., -1] / out["loss"][..., -1] - 1).max() > 1e-4  # the decay changed something


@pytest.mark.parametrize(("name", "decay"), [("training_adamw_dot.json", 0.1), ("training_adamw_dot_wd0.01.json", 0.01), ("training_adamw_dot_wd1.json", 1.0)])
def test_stored_adamw_sweeps_pair_with_adam(name, decay):
    """Each stored AdamW sweep (the arm at 0.1 and the grid of decays) comes from the current
    settings with its decay, has every dot cell, and pairs with the Adam cell of the same
    seed (same scales, equal held-out losses at step 0)."""
    raw = json.loads((DATA / name).read_text())
    assert raw["settings"] == json.loads(json.dumps(SWEEP)) and raw["weight_decay"] == decay and raw["optimizer"] == "adam"
    adam = {(c["n"], c["d"]): c for c in load_sweep(DATA / "training_adam.json")["cells"] if c["kind"] == "dot"}
    cells = load_sweep(DATA / name)["cells"]
    assert {(c["n"], c["d"]) for c in cells} == set(adam)
    for c in cells:
        a = adam[(c["n"], c["d"])]
        assert c["seed"] == a["seed"] and c["labels"] == a["labels"] and c["weight_decay"] == decay
        np.testing.assert_allclose(c["loss"][..., 0], a["loss"][..., 0], rtol=1e-5)  # stored to six digits


@pytest.mark.stored_sweep
def test_stored_adamw_sweep_matches_the_code():
    """Two scales of the smallest cell of the arm at 0.1 reproduce from its seed in what survives a
    change of BLAS kernel."""
    scales = ["1", "8"]  # one stable scale and one chaotic; a subset is the full cell restricted
    stored = select_scales(next(c for c in load_sweep(DATA / "training_adamw_dot.json")["cells"] if (c["n"], c["d"]) == (16, 32)), scales)
    same = compare_cells(run_config(16, 32, "dot", "adam", weight_decay=0.1, scales=scales), stored)
    assert same.reproduces, same


def test_weight_decay_is_refused_for_sgd_and_when_negative():
    with pytest.raises(ValueError, match="weight_decay"):
        train(0, steps=1, optimizer="sgd", weight_decay=0.1, **SMALL)
    with pytest.raises(ValueError, match="weight_decay"):
        run_config(16, 32, "dot", "adam", weight_decay=-1.0, steps=1, seeds=1)
