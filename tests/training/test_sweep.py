"""attnscale.training.sweep: the settings of each arm, the windows of learning rates on their
lattice, loading stored cells and re-running part of them.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnscale.training import DATA, SWEEP, evaluation_steps, held_out_sets, init_params, lattice_rate, length_transfer, load_lengths, load_sweep, rate_window, run_config, sample_batch, select_scales, sweep_scales, train, tune
from attnscale.training.sweep import _PER_SCALE
from expect import named, refuses


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
    ("load", "path", 'name'),
    [
        (load_sweep, 3, 'path'),
        (load_sweep, 3.0, 'path'),
        (load_lengths, b"x.json", 'path'),
    ],
)
def test_a_path_of_the_wrong_type_is_refused_by_its_type(load, path, name):
    refuses(TypeError, name, load, path)


_LRS = {"adam": {"dot": [0.01, 0]}}


@pytest.mark.parametrize(
    ("cfg", "error", 'name'),
    [
        ([_LRS], TypeError, 'cfg'),
        ({"lrs": _LRS}, ValueError, 'cfg'),
        ({"lrs": _LRS, "rates": {"dot": 1}}, ValueError, 'rates'),
        ({"lrs": _LRS, "rates": {"dot": 2.5}}, TypeError, 'rates'),
    ],
)
def test_rate_window_refuses_a_bad_cfg_by_name(cfg, error, name):
    refuses(error, name, rate_window, "adam", "dot", 1.0, cfg)


def test_run_config_refuses_a_negative_seed_by_name():
    refuses(ValueError, 'seed', run_config, 16, 32, "dot", seed=-1)


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
    refuses(ValueError, 'n', sweep_scales, 1, 2, kind)


def _cell():
    labels = ["0.25", "1", "8"]
    cell = {key: np.arange(3 * 4, dtype=float).reshape(3, 4) + 100 * i for i, key in enumerate(_PER_SCALE) if key != "labels"}
    cell["labels"] = labels
    cell["n"] = 16  # entries that are not per scale pass through unchanged
    return cell


def test_a_restricted_cell_keeps_lists_as_lists_and_arrays_as_arrays():
    cell = _cell()
    part = select_scales(cell, ["8", "0.25"])
    assert part["labels"] == ["0.25", "8"] and isinstance(part["labels"], list)
    for key in _PER_SCALE:
        if key != "labels":
            assert isinstance(part[key], np.ndarray), key
            np.testing.assert_array_equal(part[key], cell[key][[0, 2]], err_msg=key)
    assert part["n"] == 16


def test_a_cell_without_its_per_scale_entries_is_refused_by_name():
    cell = _cell()
    del cell["loss"], cell["alphas"]
    refuses(ValueError, 'cell', select_scales, cell, ["1"])


def test_a_cell_is_written_as_json_to_six_digits_with_infinity_as_null():
    """The stored sweeps' format (training/runner.py writes every cell through it): arrays as
    nested lists, NumPy integers as integers, floats to six significant digits, an infinite
    step count (never reached the target) as null, which load_sweep reads back as inf."""
    from attnscale.training.sweep import _jsonable

    cell = {"best_lr": np.array([2, 0]), "n": np.int64(16), "area": np.array([[0.123456789, np.inf]]), "labels": ["1", "8"], "x": (np.float32(2.5),)}
    out = _jsonable(cell)
    assert out == {"best_lr": [2, 0], "n": 16, "area": [[0.123457, None]], "labels": ["1", "8"], "x": [2.5]}
    assert type(out["n"]) is int and type(out["best_lr"][0]) is int


@pytest.mark.parametrize(
    ("centre", "nearest"),
    [
        (0.012, -4),  # 1e-2: the sweep's Adam centre
        (0.02, -3),  # 3e-2 (ratio 1.5) beats 1e-2 (ratio 2)
        (9e-30, -58),  # 1e-29, ratio 1.11
        (5e-30, -59),  # 3e-30 (ratio 1.67) beats 1e-29 (ratio 2)
        (3.2e-30, -59),  # 3e-30, ratio 1.07
    ],
)
def test_a_window_starts_at_the_lattice_point_nearest_its_centre(centre, nearest):
    assert _window(centre) == [nearest, nearest + 1]


@pytest.mark.parametrize(("centre", "nearest"), [(2e-30, -59), (1e-30, -60)])
def test_a_window_can_start_at_the_bottom_of_the_lattice(centre, nearest):
    """1e-30 is lattice_rate(-60), the lowest rate the lattice allows, and 3e-30 is the point
    nearest 2e-30. Both once raised 'k must be an integer >= -60, got -61': the lattice
    index tried k0 - 1 = -61 first."""
    assert _window(centre) == [nearest, nearest + 1]


def test_tune_evaluates_on_the_schedule_of_its_dense_and_resolution_settings():
    """Every step to dense = 5, then t + max(1, floor(t / 2)): 7, 10, 15, 22 and the last, 30."""
    out = tune(
        3,
        n=6,
        d=5,
        kind="dot",
        alphas=[1.0],
        seeds=1,
        steps=30,
        batch=4,
        eval_size=8,
        validation_size=8,
        validation_every=10,
        dense=5,
        resolution=0.5,
        slides=0,
        rates={"dot": 2, "cosine": 2},
    )
    assert out["step"].tolist() == [0, 1, 2, 3, 4, 5, 7, 10, 15, 22, 30]
    assert out["loss"].shape == (1, 2, 1, 11) and out["accuracy"].shape == (1, 2, 1, 11)


CFG = {"seeds": 2, "batch": 2, "noise": 1.0, "c": 2}


TINY = {"steps": 3, "seeds": 1, "batch": 2, "eval_size": 2, "validation_size": 1, "validation_every": 1, "dense": 3, "c": 2}


def _rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize('call, name', [
    (lambda: held_out_sets(0, 4, 3, 1, 2, CFG), 'factor'),
    (lambda: held_out_sets(0, 4, 3, 2, 0, CFG), 'eval_size'),
    (lambda: init_params(_rng(), 0, 1, 2), 'seeds'),
    (lambda: init_params(_rng(), 1, 0, 2), 'models'),
    (lambda: sample_batch(_rng(), 0, 1, 2, 2), 'seeds'),
    (lambda: sample_batch(_rng(), 1, 0, 2, 2), 'batch'),
    (lambda: sweep_scales(1, 32, "dot"), 'n'),
    (lambda: sweep_scales(16, 1, "dot"), 'd'),
    (lambda: tune(0, n=4, d=2, kind="dot", alphas=[-1.0], **TINY), 'alphas'),
    (lambda: tune(0, n=4, d=2, kind="dot", alphas=[], **TINY), 'alphas'),
    (lambda: tune(0, n=4, d=2, kind="dot", alphas=[1.0], **{**TINY, "validation_size": 0}),
     'validation_size'),
])
def test_a_refusal_begins_with_the_argument_and_gives_its_minimum(call, name):
    with pytest.raises(ValueError, match=named(name)):
        call()


def test_the_smallest_documented_values_are_accepted():
    sets = held_out_sets(0, 4, 2, 2, 1, CFG)  # d = 2 and eval_size = 1 are allowed
    assert sets["short"][0]["K"].shape == (2, 1, 4, 2)
    assert sweep_scales(16, 2, "dot")[0] == sweep_scales(16, 32, "dot")[0]
    batch = sample_batch(_rng(), 1, 3, 4, 2, noise=0.0)  # noise 0: the query is the queried key
    np.testing.assert_array_equal(batch["x"], np.take_along_axis(batch["K"], batch["j"][..., None, None], axis=2)[:, :, 0])
    out = tune(0, n=4, d=2, kind="dot", alphas=[1.0], slides=0, **TINY)  # validation_size = 1
    assert out["val_loss"].size > 0 and np.isfinite(out["val_loss"]).all()


@pytest.mark.parametrize("slides", [0, 1, 2])
def test_tune_slides_an_edge_window_exactly_the_allowed_number_of_times(slides):
    """Three Adam steps at these sizes are best at the highest rate of every window, so each
    window slides up as often as allowed; its rates are then the first window's moved up by
    that many lattice steps."""
    out = tune(0, n=4, d=2, kind="dot", alphas=[1.0, 4.0], optimizer="adam", slides=slides, **TINY)
    assert out["slides"].tolist() == [slides, slides]
    assert np.issubdtype(out["slides"].dtype, np.integer)
    first = [rate_window("adam", "dot", a, {**SWEEP, **TINY}) for a in (1.0, 4.0)]
    assert out["lrs"].tolist() == [[lattice_rate(k + slides) for k in row] for row in first]
    assert "params" not in out


def test_tune_without_slides_is_train_with_the_same_settings():
    settings = {**TINY, "noise": 0.3, "c": 3, "batch": 3}
    out = tune(2, n=5, d=3, kind="dot", alphas=[1.0, 2.0], optimizer="sgd", slides=0, **settings)
    windows = [rate_window("sgd", "dot", a, {**SWEEP, **settings}) for a in (1.0, 2.0)]
    ref = train(2, n=5, d=3, kind="dot", alphas=[1.0, 2.0], lrs=[[lattice_rate(k) for k in row] for row in windows], seeds=1,
                steps=3, batch=3, noise=0.3, c=3, optimizer="sgd", eval_steps=evaluation_steps(3, SWEEP["resolution"], 3),
                eval_size=2, validation_size=1, validation_every=1)
    for key in ("loss", "val_loss", "accuracy"):
        np.testing.assert_allclose(out[key], ref[key], rtol=1e-12, atol=0)




@pytest.fixture(scope="module")
def live():
    """The smallest cell trained again from its seed (about 5 s; shared by the tests below)."""
    return length_transfer(16, 32)


def test_the_model_at_scale_one_is_the_sweeps(live):
    """Trained from the dot cell's seed, the model at 1 picks the sweep's best rate and
    ends at the sweep's final held-out losses, seed by seed (stored to six digits)."""
    cell = next(c for c in load_sweep(DATA / "training_adam.json")["cells"] if (c["kind"], c["n"], c["d"]) == ("dot", 16, 32))
    a = cell["labels"].index("1")
    assert live["best_lr"][0] == cell["best_lr"][a] and live["lrs"][0, live["best_lr"][0]] == cell["lrs"][a, cell["best_lr"][a]]
    np.testing.assert_allclose(live["final_loss"][0], cell["final_loss"][a], rtol=1e-5)
