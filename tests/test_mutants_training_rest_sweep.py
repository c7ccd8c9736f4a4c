"""Survivors of the full mutation run over attnscale.training in training/sweep.py (see
tests/MUTANTS.md): the stored sweep's loader, the learning-rate windows and the refusals of
rate_window, run_config and sweep_scales.

What is pinned, and against what:

* load_sweep: JSON has one kind of number (RFC 8259: 1 and 1.0 are the same value), so a loaded
  cell does not depend on how a file spells its numbers: every loss, accuracy, L1 distance,
  learned scale, validation area, divergence step and step count to the target comes back as a
  float array (the runner writes them through ``float``; a target never reached would be inf),
  also when the file spells them as whole numbers. The evaluation steps come back as integers,
  as run_config gives them (evaluation_steps' int64). Reference: a hand-written file, spelled
  with and without decimal points.
* load_sweep and load_lengths refuse a path that is not a str or Path with a message naming the
  type they got (the message of tests/test_bad_input.py's promise, written out by hand).
* rate_window finds the lattice point nearest its centre down to the lattice's floor
  (lattice_rate accepts k >= -60, i.e. 1e-30): a centre far below the floor gets the window
  that starts there. Reference: the lattice's floor, by hand.
* rate_window refuses a bad ``cfg`` and a bad number of ``rates`` with messages that begin with
  the name of what is wrong; run_config refuses a negative seed by the name ``seed`` and takes
  seed 0 (the smallest integer >= 0, as train does); sweep_scales, like train, takes the
  shortest length n = 2 and refuses n = 1 by that minimum. Reference: the messages and
  minimums written out by hand.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnscale.training import load_lengths, load_sweep, rate_window, run_config, sweep_scales
from expect import raises_exactly

#: entries the runner writes as integers: they stay integers whatever else happens
_WHOLE = ("n", "d", "seed", "slides", "step", "val_step", "best_lr")


def _stored() -> dict:
    """A learned-scale cell of two scales, two rates, one seed and three evaluations, with every
    number a whole one: (alphas, lrs, seeds) for the per-rate entries, (alphas, seeds) and
    (alphas, seeds, evals) for those at the best rate. Every target is reached."""
    return {
        "n": 16, "d": 32, "kind": "dot", "optimizer": "adam", "weight_decay": 0, "seed": 16032,
        "labels": ["1", "8"], "alphas": [1, 8], "lrs": [[1, 3], [1, 3]], "slides": [0, 1], "step": [0, 1, 2], "val_step": [0, 2],
        "val_area": [[[1], [2]], [[0], [1]]], "loss_area": [[[2], [1]], [[1], [0]]], "final_loss_all": [[[1], [0]], [[0], [1]]],
        "steps_to_target_all": [[[2], [1]], [[1], [2]]], "diverged_at": [[[0], [0]], [[0], [2]]], "best_lr": [1, 0],
        "steps_to_target": [[1], [1]], "final_loss": [[0], [0]],
        "loss": [[[1, 1, 0]], [[1, 0, 0]]], "accuracy": [[[0, 1, 1]], [[0, 0, 1]]], "half_l1": [[[1, 0, 0]], [[1, 1, 0]]],
        "final_scale_all": [[[1], [2]], [[8], [4]]], "scale": [[[1, 2, 2]], [[8, 8, 4]]],
    }


def _with_points(x, key=""):
    """The same numbers as the runner spells them: floats with a decimal point."""
    if isinstance(x, dict):
        return {k: _with_points(val, k) for k, val in x.items()}
    if isinstance(x, list):
        return [_with_points(val, key) for val in x]
    return float(x) if isinstance(x, int) and key not in _WHOLE else x


def _load(tmp_path, cell: dict) -> dict:
    path = tmp_path / "training_toy.json"
    path.write_text(json.dumps({"optimizer": "adam", "cells": [cell]}))
    return load_sweep(path)["cells"][0]


FLOAT_ENTRIES = ("loss", "loss_area", "accuracy", "half_l1", "diverged_at", "scale", "final_scale_all", "val_area",
                 "steps_to_target", "steps_to_target_all")


@pytest.mark.parametrize("spelling", ["whole", "point"])
@pytest.mark.parametrize("key", FLOAT_ENTRIES)
def test_a_loaded_cell_has_its_numbers_in_floats_however_the_file_spells_them(tmp_path, key, spelling):
    stored = _stored() if spelling == "whole" else _with_points(_stored())
    c = _load(tmp_path, stored)
    assert isinstance(c[key], np.ndarray) and c[key].dtype == np.float64, (key, c[key])
    assert c[key].tolist() == _stored()[key]


def test_a_loaded_cell_has_its_evaluation_steps_in_integers(tmp_path):
    c = _load(tmp_path, _with_points(_stored()))
    assert isinstance(c["step"], np.ndarray) and c["step"].dtype.kind == "i", c["step"]
    assert c["step"].tolist() == [0, 1, 2]


def _window(centre: float) -> list[int]:
    """The two-rate window of SGD (dot scores) centred on ``centre`` (exponent 0: any alpha)."""
    return rate_window("sgd", "dot", 1.0, {"lrs": {"sgd": {"dot": [centre, 0]}}, "rates": {"dot": 2}})


@pytest.mark.parametrize("centre", [1e-31, 3e-32, 1e-33, 1e-100, 5e-324])
def test_a_window_centred_below_the_lattice_starts_at_its_floor(centre):
    """1e-30 = lattice_rate(-60) is the lattice point nearest anything below it."""
    assert _window(centre) == [-60, -59]


@pytest.mark.parametrize(
    ("load", "path", "message"),
    [
        (load_sweep, 3, "path must be a str or Path, got int"),
        (load_sweep, 3.0, "path must be a str or Path, got float"),
        (load_lengths, b"x.json", "path must be a str or Path, got bytes"),
    ],
)
def test_a_path_of_the_wrong_type_is_refused_by_its_type(load, path, message):
    raises_exactly(TypeError, message, load, path)


_LRS = {"adam": {"dot": [0.01, 0]}}


@pytest.mark.parametrize(
    ("cfg", "error", "message"),
    [
        ([_LRS], TypeError, "cfg must be a dict, got list"),
        ({"lrs": _LRS}, ValueError, "cfg lacks the entries ['rates']"),
        ({"lrs": _LRS, "rates": {"dot": 1}}, ValueError, "rates must be an integer >= 2, got 1"),
        ({"lrs": _LRS, "rates": {"dot": 2.5}}, TypeError, "rates must be an integer >= 2, got 2.5"),
    ],
)
def test_rate_window_refuses_a_bad_cfg_by_name(cfg, error, message):
    raises_exactly(error, message, rate_window, "adam", "dot", 1.0, cfg)


def test_run_config_refuses_a_negative_seed_by_name():
    raises_exactly(ValueError, "seed must be an integer >= 0, got -1", run_config, 16, 32, "dot", seed=-1)


def test_run_config_trains_the_smallest_cell_with_seed_zero():
    """n = 2, d = 2, seed 0: one scale, one seed, two rates, two steps."""
    tiny = {"seeds": 1, "steps": 2, "batch": 2, "eval_size": 4, "validation_size": 4, "validation_every": 1, "dense": 2}
    c = run_config(2, 2, "dot", seed=0, scales=["1"], slides=0, **tiny)
    assert (c["n"], c["d"], c["seed"], c["labels"]) == (2, 2, 0, ["1"])
    assert c["final_loss"].shape == (1, 1) and np.isfinite(c["final_loss"]).all()


@pytest.mark.parametrize(("kind", "count"), [("dot", 5), ("cosine", 3)])
def test_sweep_scales_takes_the_shortest_length(kind, count):
    labels, alphas = sweep_scales(2, 2, kind)
    assert len(labels) == len(alphas) == count and all(a > 0 for a in alphas)
    raises_exactly(ValueError, "n must be an integer >= 2, got 1", sweep_scales, 1, 2, kind)
