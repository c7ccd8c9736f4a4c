"""Unexamined survivors of the mutation run over attnscale.training.lengths (the length arm):
the refusals of length_transfer and held_out_sets, the oracle's default grid, the calibrated
losses, and how load_lengths reads a file.

What is pinned, and against what:

* length_transfer and held_out_sets refuse a bad argument with a message that *begins*
  with the argument's name and states the documented minimum (n, d, factor >= 2, eval_size
  >= 1, grid >= 2, seed >= 0; tests/test_bad_input.py only checks that the name occurs
  somewhere, which "n" always does). Reference: the messages written out by hand. And the
  smallest valid call (n = d = factor = grid = 2, eval_size = 1, seed 0) runs.
* The oracle's default grid is 61 points from 0.05 to 20, evenly spaced in log (the
  docstring: "a grid of ``grid`` values from 0.05 to 20", signature default 61), and the
  rules are reported on 256 fresh rows per seed and set by default. Reference: the end
  points and the ratio 400^(1/60), worked by hand; rows counted on the sets the run draws.
* ``calibrated`` holds, for the model at 1, one finite loss per seed for every relative
  rule of RELATIVE (chapter 10 reads each of them). Reference: the names of RELATIVE.
* load_lengths gives every list of numbers back as a float array, also when the file
  wrote the numbers as integers (as load_sweep reads its numeric fields), and leaves a list
  of lists of names as it is. Reference: a hand-written file, read back with json.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from expect import whole

from attnscale.training import length_transfer, load_lengths
from attnscale.training import lengths as lengths_module
from attnscale.training.lengths import RELATIVE, held_out_sets

#: the smallest training a length run allows (one step of one seed)
QUICK = {"steps": 1, "seeds": 1, "validation_size": 4}
CFG = {"seeds": 1, "batch": 4, "c": 2, "noise": 1.0}


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"n": 1}, ValueError, "n must be an integer >= 2, got 1"),
        ({"n": None}, TypeError, "n must be an integer >= 2, got None"),
        ({"d": 1}, ValueError, "d must be an integer >= 2, got 1"),
        ({"factor": 1}, ValueError, "factor must be an integer >= 2, got 1"),
        ({"eval_size": 0}, ValueError, "eval_size must be an integer >= 1, got 0"),
        ({"grid": 1}, ValueError, "grid must be an integer >= 2, got 1"),
        ({"seed": -1}, ValueError, "seed must be an integer >= 0, got -1"),
    ],
    ids=["n-1", "n-None", "d-1", "factor-1", "eval_size-0", "grid-1", "seed-negative"],
)
def test_length_transfer_refuses_a_bad_argument_with_a_message_that_begins_with_its_name(change, error, message):
    args = {"n": 8, "d": 4, "factor": 4, "seed": 0, "eval_size": 4, "grid": 3, **QUICK, **change}
    with pytest.raises(error, match=whole(message)):
        length_transfer(**args)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"seed": -1}, ValueError, "seed must be an integer >= 0, got -1"),
        ({"d": 1}, ValueError, "d must be an integer >= 2, got 1"),
        ({"cfg": None}, TypeError, "cfg must be a dict, got NoneType"),
        ({"cfg": {"seeds": 1}}, ValueError, "cfg lacks the entries ['batch', 'c', 'noise']"),
    ],
    ids=["seed-negative", "d-1", "cfg-None", "cfg-incomplete"],
)
def test_held_out_sets_refuse_a_bad_argument_with_a_message_that_begins_with_its_name(change, error, message):
    args = {"seed": 0, "n": 8, "d": 4, "factor": 4, "eval_size": 4, "cfg": CFG, **change}
    with pytest.raises(error, match=whole(message)):
        held_out_sets(**args)


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


def test_load_lengths_reads_integer_lists_as_floats_and_keeps_lists_of_names(tmp_path):
    cell = {"trained": ["1", "log512 n", "ln n"], "best_lr": [0, 2, 1], "slides": [0, 0, 1],
            "grid": [1, 2, 4], "final_loss": [[1, 0], [0, 1], [2, 3]], "alphas": [1, 0.5, 2],
            "rules": [["fixed", "log ratio"], ["log512 n", "fixed"], ["ln n", "fixed"]]}
    path = tmp_path / "lengths.json"
    path.write_text(json.dumps({"cells": [cell]}))
    raw = json.loads(path.read_text())["cells"][0]
    got = load_lengths(path)["cells"][0]
    for key in ("grid", "final_loss", "alphas"):
        assert isinstance(got[key], np.ndarray) and got[key].dtype == np.float64, (key, got[key])
        np.testing.assert_array_equal(got[key], np.array(raw[key], dtype=float))
    assert got["rules"] == raw["rules"]
    assert got["trained"] == raw["trained"]
