"""Length generalisation (train at n, evaluate at 4n under Part III's rules): the
rules' scales against the formulas of chapter 8, the pairing with the stored
Adam sweep, properties of the evaluation, the stored results against the code,
and bad input."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from attnscale.reproducibility import STABLE_RTOL
from attnscale.training import SWEEP, forward, init_params, length_transfer, load_lengths, load_sweep, sample_batch
from attnscale.training.lengths import MEASURES, RELATIVE, TRAINED, _measure, held_out_sets

DATA = Path(__file__).resolve().parents[1] / "chapters" / "data"
TINY = {"steps": 30, "seeds": 2, "eval_size": 64, "validation_size": 64, "grid": 5}


@pytest.fixture(scope="module")
def live():
    """The smallest cell trained again from its seed (about 5 s; shared by the tests below)."""
    return length_transfer(16, 32)


@pytest.mark.parametrize("n", [16, 64, 256])
def test_rule_scales_against_their_formulas(n):
    """The trained and relative scales against hand formulas: Su's log_512 n, ln n; the
    log ratio ln(4n) / ln n; YaRN's (0.1 ln 4 + 1)^2; and the mean-field invariant scale,
    the alpha that keeps log n - alpha^2 / 2 (chapter 8) at its value for alpha = 1."""
    assert TRAINED["1"](n) == 1.0
    assert math.isclose(TRAINED["log512 n"](n), math.log2(n) / 9, rel_tol=1e-14)
    assert math.isclose(TRAINED["ln n"](n), math.log(n), rel_tol=1e-14)
    assert RELATIVE["fixed"](n, 4) == 1.0
    assert math.isclose(RELATIVE["log ratio"](n, 4), math.log2(4 * n) / math.log2(n), rel_tol=1e-14)
    assert math.isclose(RELATIVE["YaRN"](n, 4), (0.1 * math.log(4) + 1) ** 2, rel_tol=1e-14)
    a = RELATIVE["mean-field invariant"](n, 4)
    assert math.isclose(math.log(4 * n) - a**2 / 2, math.log(n) - 0.5, rel_tol=1e-14)


def test_the_model_at_scale_one_is_the_sweeps(live):
    """Trained from the dot cell's seed, the model at 1 picks the sweep's best rate and
    ends at the sweep's final held-out losses, seed by seed (stored to six digits)."""
    cell = next(c for c in load_sweep(DATA / "training_adam.json")["cells"] if (c["kind"], c["n"], c["d"]) == ("dot", 16, 32))
    a = cell["labels"].index("1")
    assert live["best_lr"][0] == cell["best_lr"][a] and live["lrs"][0, live["best_lr"][0]] == cell["lrs"][a, cell["best_lr"][a]]
    np.testing.assert_allclose(live["final_loss"][0], cell["final_loss"][a], rtol=1e-5)


def test_the_chosen_weights_give_the_training_runs_final_losses():
    """The weights each model is evaluated with are the ones its final losses came from:
    evaluated again on the training run's held-out set, they give those losses to rounding
    (a wrong model index, or the wrong learning rate, would not)."""
    out = length_transfer(8, 6, **TINY)
    np.testing.assert_allclose(out["final_loss_again"], out["final_loss"], rtol=1e-12)
    assert len(set(np.round(out["final_loss"][:, 0], 12))) == 3  # three different models


def test_held_out_sets_are_distinct_and_drawn_in_order():
    """The rows that choose the oracle's scale are never the rows that report it."""
    cfg = {**SWEEP, "seeds": 2}
    sets = held_out_sets(3, 8, 6, 4, 64, cfg)
    assert [len(sets[k]) for k in ("short", "long", "choose_long", "choose_short")] == [2, 2, 2, 2]
    assert sets["short"][0]["K"].shape[2] == 8 and sets["long"][0]["K"].shape[2] == 32
    assert not np.array_equal(sets["short"][0]["K"], sets["choose_short"][0]["K"])
    assert not np.array_equal(sets["long"][0]["K"], sets["choose_long"][0]["K"])
    again = held_out_sets(3, 8, 6, 4, 64, cfg)
    np.testing.assert_array_equal(again["choose_long"][1]["x"], sets["choose_long"][1]["x"])


def test_measures_against_the_forward_pass_and_the_expected_loss():
    """The measures against the public forward pass (the weight on the queried key and
    sum p^2 read off its p, the spread of alpha s), and the identity behind them: averaged
    over fresh values the loss of a row is 1 - 2 p_j + sum_i p_i^2 (Monte Carlo over
    4000 draws of the values, within four standard errors)."""
    rng = np.random.default_rng(9)
    weights = init_params(rng, 2, 1, 6)
    weights["Wq"] = weights["Wq"] + rng.standard_normal(weights["Wq"].shape)  # a model that attends
    rows = [sample_batch(rng, 2, 16, 10, 6)]
    scales = np.array([0.5, 2.0, 6.0])
    got = _measure(weights, 0, scales, rows)
    for i, a in enumerate(scales):
        f = forward({k: w[:, :1] for k, w in weights.items()}, rows[0], a, "dot")
        p = f["p"][:, :, 0]  # (seeds, batch, n)
        on_key = p[np.arange(2)[:, None], np.arange(16)[None, :], rows[0]["j"]]
        np.testing.assert_allclose(got["weight"][:, i], on_key.mean(axis=1), rtol=1e-12)
        np.testing.assert_allclose(got["concentration"][:, i], (p * p).sum(axis=-1).mean(axis=1), rtol=1e-12)
        np.testing.assert_allclose(got["loss"][:, i], f["loss"][:, 0], rtol=1e-12)
        np.testing.assert_allclose(got["spread"][:, i], (a * f["s"][:, :, 0]).std(axis=-1).mean(axis=1), rtol=1e-12)
        values = rng.standard_normal((4000, 2, 16, 10, 8))
        y = np.einsum("sbn,tsbnc->tsbc", p, values)
        target = np.take_along_axis(values, rows[0]["j"][None, :, :, None, None], axis=3)[:, :, :, 0]
        loss = ((y - target) ** 2).mean(axis=-1).mean(axis=-1)  # (draws, seeds)
        expected = 1 - 2 * got["weight"][:, i] + got["concentration"][:, i]
        assert np.all(np.abs(loss.mean(axis=0) - expected) < 4 * loss.std(axis=0, ddof=1) / np.sqrt(4000))


def test_accuracy_does_not_depend_on_the_scale():
    """Retrieval (the queried key has the largest weight) is invariant to the scale, so
    every rule applied to one trained model gives it the same accuracy; the losses differ."""
    out = length_transfer(8, 6, **TINY)
    long = out["long"]["1"]
    for rule in RELATIVE:
        np.testing.assert_array_equal(long[rule]["accuracy"], long["fixed"]["accuracy"])
    assert not np.allclose(long["mean-field invariant"]["loss"], long["fixed"]["loss"])
    for label in ("log512 n", "ln n"):
        np.testing.assert_array_equal(out["long"][label][label]["accuracy"], out["long"][label]["fixed"]["accuracy"])


def test_oracle_scales_are_grid_points_with_finite_losses():
    """The oracle scale is chosen on separate rows from those that report its loss, so it
    may lose to a rule there; but it is always a point of the grid, with a finite loss."""
    out = length_transfer(8, 6, **TINY)
    for label in out["trained"]:
        for length in ("short", "long"):
            chosen = out["oracle"][label][length]["scale"]
            assert np.all(np.isin(chosen, out["grid"]))
            assert np.all(np.isfinite(out["oracle"][label][length]["loss"]))


def test_stored_lengths_match_the_code(live):
    """The stored results come from the current settings, every (n, d) is there, each
    model at 1 pairs with the sweep (same best rate and final losses), and the smallest
    cell reproduces from its seed: its losses to the stable runs' tolerance, its oracle
    scales to one step of the grid (the argmin of nearly equal losses may move by one)."""
    raw = json.loads((DATA / "training_lengths.json").read_text())
    assert raw["settings"] == json.loads(json.dumps(SWEEP)) and raw["factor"] == 4
    stored = load_lengths(DATA / "training_lengths.json")
    sweep = {(c["n"], c["d"]): c for c in load_sweep(DATA / "training_adam.json")["cells"] if c["kind"] == "dot"}
    assert {(c["n"], c["d"]) for c in stored["cells"]} == set(sweep)
    for c in stored["cells"]:
        s = sweep[(c["n"], c["d"])]
        a = s["labels"].index("1")
        assert c["best_lr"][0] == s["best_lr"][a]
        np.testing.assert_allclose(c["final_loss"][0], s["final_loss"][a], rtol=1e-5)
    first = next(c for c in stored["cells"] if (c["n"], c["d"]) == (16, 32))
    np.testing.assert_array_equal(live["lrs"], first["lrs"])
    np.testing.assert_array_equal(live["best_lr"], first["best_lr"])
    step = first["grid"][1] / first["grid"][0]
    for label in first["trained"]:
        for key in MEASURES:
            np.testing.assert_allclose(live["short"][label][key], first["short"][label][key], rtol=STABLE_RTOL)
            for rule, got in live["long"][label].items():
                np.testing.assert_allclose(got[key], first["long"][label][rule][key], rtol=STABLE_RTOL)
        for length in ("short", "long"):
            ratio = live["oracle"][label][length]["scale"] / first["oracle"][label][length]["scale"]
            assert np.all((ratio < step * 1.001) & (ratio > 1 / (step * 1.001))), (label, length, ratio)
    for rule, got in live["calibrated"].items():
        np.testing.assert_allclose(got, first["calibrated"][rule], rtol=STABLE_RTOL)


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="factor"):
        length_transfer(8, 6, factor=1, **TINY)
    with pytest.raises(FileNotFoundError, match="sweep-lengths"):
        load_lengths("/no/such/file.json")
