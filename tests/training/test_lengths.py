"""attnscale.training.lengths: the length arm (train at n, test at 4n): held-out sets, the
measures it reports and its stored cells.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from attnscale.reproducibility import STABLE_RTOL
from attnscale.training import DATA, SWEEP, forward, held_out_sets, init_params, length_transfer, lengths as lengths_module, load_lengths, load_sweep, sample_batch
from attnscale.training.lengths import MEASURES, RELATIVE, TRAINED, _measure
from expect import named


STORED = DATA / "training_lengths.json"


def _same(loaded, raw, where="cell"):
    """Walk a loaded value and its raw JSON together."""
    if isinstance(raw, dict):
        assert isinstance(loaded, dict) and set(loaded) == set(raw), (where, sorted(set(loaded) ^ set(raw)))
        for key in raw:
            _same(loaded[key], raw[key], f"{where}[{key!r}]")
    elif isinstance(raw, list) and raw and not any(isinstance(x, str) for x in raw):  # numbers, or lists of numbers
        assert isinstance(loaded, np.ndarray), where
        np.testing.assert_array_equal(loaded, np.array(raw, dtype=float), err_msg=where)
    else:
        assert loaded == raw and type(loaded) is type(raw), where


def test_load_lengths_gives_back_exactly_the_stored_fields():
    raw = json.loads(STORED.read_text())
    data = load_lengths(STORED)
    assert set(data) == set(raw)
    assert len(data["cells"]) == len(raw["cells"]) == 6
    for got, want in zip(data["cells"], raw["cells"]):
        _same(got, want, f"cell {want['n']}, {want['d']}")
        assert got["trained"] == ["1", "log512 n", "ln n"]


#: the smallest training a length run allows (one step of one seed)
QUICK = {"steps": 1, "seeds": 1, "validation_size": 4}


def test_the_smallest_valid_length_run_works():
    """Two keys, width two, twice the length, one row, a grid of two scales, seed 0: each
    at the documented minimum, and the run reports finite losses at both lengths."""
    out = length_transfer(2, 2, factor=2, seed=0, eval_size=1, grid=2, **QUICK)
    assert (out["n"], out["d"], out["factor"], out["seed"]) == (2, 2, 2, 0)
    np.testing.assert_allclose(out["grid"], [0.05, 20.0], rtol=1e-12)
    for label in out["trained"]:
        assert np.all(np.isfinite(out["short"][label]["loss"]))
        for rule in out["long"][label]:
            assert np.all(np.isfinite(out["long"][label][rule]["loss"]))


def test_by_default_the_oracle_grid_is_61_scales_from_005_to_20_and_the_rules_see_256_rows(monkeypatch):
    drawn = []

    def counting(*args, **kwargs):
        sets = held_out_sets(*args, **kwargs)
        drawn.append({name: sum(chunk["K"].shape[1] for chunk in rows) for name, rows in sets.items()})
        return sets

    monkeypatch.setattr(lengths_module, "held_out_sets", counting)
    out = length_transfer(4, 2, **QUICK)
    grid = out["grid"]
    assert grid.shape == (61,)
    assert math.isclose(grid[0], 0.05, rel_tol=1e-12) and math.isclose(grid[-1], 20.0, rel_tol=1e-12)
    np.testing.assert_allclose(grid[1:] / grid[:-1], 400 ** (1 / 60), rtol=1e-12)
    assert drawn == [{"short": 256, "long": 256, "choose_long": 256, "choose_short": 256}]
    for label in out["trained"]:
        for length in ("short", "long"):
            assert np.all(np.isin(out["oracle"][label][length]["scale"], grid))


def test_calibrated_losses_are_reported_for_every_relative_rule():
    out = length_transfer(8, 4, seed=3, eval_size=8, grid=5, steps=1, seeds=2, validation_size=4)
    assert set(out["calibrated"]) == set(RELATIVE)
    for rule, loss in out["calibrated"].items():
        assert loss.shape == (2,) and np.all(np.isfinite(loss)) and np.all(loss > 0), rule


def test_load_lengths_reads_number_lists_as_floats_indices_as_integers_and_keeps_lists_of_names(tmp_path):
    cell = {"trained": ["1", "log512 n", "ln n"], "best_lr": [0, 2, 1], "slides": [-1, 0, 2],
            "grid": [1, 2, 4], "final_loss": [[1, 0], [0, 1], [2, 3]], "alphas": [1, 0.5, 2],
            "rules": [["fixed", "log ratio"], ["log512 n", "fixed"], ["ln n", "fixed"]]}
    path = tmp_path / "lengths.json"
    path.write_text(json.dumps({"cells": [cell]}))
    got = load_lengths(path)["cells"][0]
    for key in ("grid", "final_loss", "alphas"):
        assert isinstance(got[key], np.ndarray) and got[key].dtype == np.float64, (key, got[key])
        np.testing.assert_array_equal(got[key], np.array(cell[key], dtype=float))
    for key in ("best_lr", "slides"):
        assert np.issubdtype(got[key].dtype, np.integer), (key, got[key].dtype)
        assert got[key].tolist() == cell[key]
    assert [f"{s:+d}" for s in got["slides"]] == ["-1", "+0", "+2"]
    assert got["rules"] == cell["rules"] and got["trained"] == cell["trained"]
    # and so in the stored file
    for c in load_lengths(STORED)["cells"]:
        assert np.issubdtype(c["slides"].dtype, np.integer) and np.issubdtype(c["best_lr"].dtype, np.integer)


CFG2 = {"seeds": 2, "batch": 2, "c": 1, "noise": 0.0}


def test_held_out_sets_take_two_keys():
    sets = held_out_sets(0, 2, 3, 2, 3, CFG2)
    assert {name: [chunk["K"].shape for chunk in rows] for name, rows in sets.items()} == {
        "short": [(2, 2, 2, 3), (2, 1, 2, 3)], "long": [(2, 2, 4, 3), (2, 1, 4, 3)],
        "choose_long": [(2, 2, 4, 3), (2, 1, 4, 3)], "choose_short": [(2, 2, 2, 3), (2, 1, 2, 3)]}


@pytest.mark.parametrize("noise", [0.0, 0.5])
def test_held_out_rows_see_the_query_through_the_configured_noise(noise):
    """With noise sigma the query is (K_j + sigma eps) / sqrt(1 + sigma^2): at sigma = 0 it
    is exactly the queried key; at sigma = 0.5 it is not, and the noise it carries,
    x sqrt(1.25) - K_j = 0.5 eps, has the spread of 0.5 standard normals."""
    sets = held_out_sets(3, 4, 5, 2, 40, {**CFG2, "batch": 16, "noise": noise})
    for rows in sets.values():
        for chunk in rows:
            key = np.take_along_axis(chunk["K"], chunk["j"][..., None, None], axis=2)[:, :, 0]
            if noise == 0.0:
                np.testing.assert_array_equal(chunk["x"], key)
            else:  # 2 seeds x 16 (or 8) rows x 5 coordinates of N(0, 1) noise each
                eps = (chunk["x"] * math.sqrt(1 + noise**2) - key) / noise
                assert abs(np.std(eps) - 1) < 0.3, np.std(eps)


def test_load_lengths_points_a_missing_file_to_the_make_target_that_writes_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=named("path") + ".*make sweep-lengths"):
        load_lengths(tmp_path / "none.json")


@pytest.fixture(scope="module")
def small():
    """A run of 30 steps at n = 8, d = 6, shared by the tests below."""
    return length_transfer(8, 6, steps=30, seeds=2, eval_size=64, validation_size=64, grid=5)


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


def test_the_chosen_weights_give_the_training_runs_final_losses(small):
    """The weights each model is evaluated with are the ones its final losses came from:
    evaluated again on the training run's held-out set, they give those losses to rounding
    (a wrong model index, or the wrong learning rate, would not)."""
    out = small
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


def test_accuracy_does_not_depend_on_the_scale(small):
    """Retrieval (the queried key has the largest weight) is invariant to the scale, so
    every rule applied to one trained model gives it the same accuracy; the losses differ."""
    out = small
    long = out["long"]["1"]
    for rule in RELATIVE:
        np.testing.assert_array_equal(long[rule]["accuracy"], long["fixed"]["accuracy"])
    assert not np.allclose(long["mean-field invariant"]["loss"], long["fixed"]["loss"])
    for label in ("log512 n", "ln n"):
        np.testing.assert_array_equal(out["long"][label][label]["accuracy"], out["long"][label]["fixed"]["accuracy"])


def test_oracle_scales_are_grid_points_with_finite_losses(small):
    """The oracle scale is chosen on separate rows from those that report its loss, so it
    may lose to a rule there; but it is always a point of the grid, with a finite loss."""
    out = small
    for label in out["trained"]:
        for length in ("short", "long"):
            chosen = out["oracle"][label][length]["scale"]
            assert np.all(np.isin(chosen, out["grid"]))
            assert np.all(np.isfinite(out["oracle"][label][length]["loss"]))


def test_stored_lengths_match_the_code(live):
    """The stored results come from the current settings, every (n, d) is there, each
    model at 1 pairs with the sweep (same best rate and final losses), and the smallest
    cell reproduces from its seed: its rates exactly, the final losses of its model at 1
    to the sweep's six digits, its losses to the stable runs' tolerance, its oracle scales
    to one step of the grid (the argmin of nearly equal losses may move by one)."""
    raw = json.loads((DATA / "training_lengths.json").read_text())
    assert raw["settings"] == json.loads(json.dumps(SWEEP)) and raw["factor"] == 4
    stored = load_lengths(DATA / "training_lengths.json")
    sweep = {(c["n"], c["d"]): c for c in load_sweep(DATA / "training_adam.json")["cells"] if c["kind"] == "dot"}
    assert {(c["n"], c["d"]) for c in stored["cells"]} == set(sweep)
    for c in stored["cells"]:
        s = sweep[(c["n"], c["d"])]
        a = s["labels"].index("1")
        assert c["best_lr"][0] == s["best_lr"][a] and c["lrs"][0, c["best_lr"][0]] == s["lrs"][a, s["best_lr"][a]]
        np.testing.assert_allclose(c["final_loss"][0], s["final_loss"][a], rtol=1e-5)
    first = next(c for c in stored["cells"] if (c["n"], c["d"]) == (16, 32))
    np.testing.assert_array_equal(live["lrs"], first["lrs"])
    np.testing.assert_array_equal(live["best_lr"], first["best_lr"])
    s = sweep[(16, 32)]
    np.testing.assert_allclose(live["final_loss"][0], s["final_loss"][s["labels"].index("1")], rtol=1e-5)
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


def test_a_fresh_length_run_has_the_fields_of_a_stored_cell(small):
    """Chapter 10 reads c["n"], c["d"], c["alphas"], c["short"], c["calibrated"], ... of
    the stored cells, which the runner writes from length_transfer's result."""
    raw = json.loads(STORED.read_text())
    assert set(small) == set(raw["cells"][0])


def test_a_fresh_length_run_reports_its_length_width_and_training_scales(small):
    assert (small["n"], small["d"], small["factor"]) == (8, 6, 4)
    assert small["trained"] == ["1", "log512 n", "ln n"]
    np.testing.assert_allclose(small["alphas"], [1.0, 3 / 9, math.log(8)], rtol=1e-14)
