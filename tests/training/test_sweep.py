"""attnscale.training.sweep: the settings of each arm, the windows of learning rates on their
lattice and their tuning, one cell's run, loading stored cells, re-running part of the stored
sweeps of every arm (marked stored_sweep), and short runs of every arm against their pinned
values (tests/data/training_short.json).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from attnscale.reproducibility import CHAOTIC_LABELS, STABLE_RTOL, compare_cells, stable_runs
from attnscale.training import (
    DATA,
    SWEEP,
    TrainSettings,
    best_lr_index,
    evaluation_steps,
    held_out_sets,
    lattice_rate,
    load_sweep,
    rate_window,
    run_config,
    sample_batch,
    select_scales,
    sweep_scales,
    train,
    tune,
)
from expect import refuses


#: entries that stay integers however the file spells its numbers: sizes, seeds and evaluation steps
_INTEGERS = ("n", "d", "seed", "step", "val_step")


def _stored() -> dict:
    """A learned-scale cell of two scales, two rates, one seed and three evaluations, with every
    number a whole one: (alphas, lrs, seeds) for the per-rate entries, (alphas, seeds) and
    (alphas, seeds, evals) for those at the best rate. One run never reaches the target (null)."""
    return {
        "n": 16, "d": 32, "kind": "dot", "optimizer": "adam", "weight_decay": 0, "seed": 16032,
        "labels": ["1", "8"], "alphas": [1, 8], "lrs": [[1, 3], [1, 3]], "slides": [0, -1], "step": [0, 1, 2], "val_step": [0, 2],
        "val_area": [[[1], [2]], [[0], [1]]], "loss_area": [[[2], [1]], [[1], [0]]], "final_loss_all": [[[1], [0]], [[0], [1]]],
        "steps_to_target_all": [[[2], [1]], [[1], [None]]], "diverged_at": [[[0], [0]], [[0], [2]]], "best_lr": [1, 0],
        "steps_to_target": [[1], [1]], "final_loss": [[0], [0]],
        "loss": [[[1, 1, 0]], [[1, 0, 0]]], "accuracy": [[[0, 1, 1]], [[0, 0, 1]]], "half_l1": [[[1, 0, 0]], [[1, 1, 0]]],
        "final_scale_all": [[[1], [2]], [[8], [4]]], "scale": [[[1, 2, 2]], [[8, 8, 4]]],
    }


def _with_points(x, key=""):
    """The same numbers spelled with a decimal point, the indices best_lr and slides included."""
    if isinstance(x, dict):
        return {k: _with_points(val, k) for k, val in x.items()}
    if isinstance(x, list):
        return [_with_points(val, key) for val in x]
    return float(x) if isinstance(x, int) and key not in _INTEGERS else x


def _load(tmp_path, cell: dict) -> dict:
    path = tmp_path / "training_toy.json"
    path.write_text(json.dumps({"optimizer": "adam", "cells": [cell]}))
    return load_sweep(path)["cells"][0]


@pytest.mark.parametrize("spelling", ["whole", "point"])
def test_a_loaded_cell_has_its_measurements_in_floats_and_its_indices_in_integers(tmp_path, spelling):
    """Whether the file spells a number 1 or 1.0, a loaded cell has exactly the stored entries:
    every per-scale measurement a float64 array (a target never reached, null, as inf), the
    evaluation steps, best rates and slides integer arrays."""
    stored = _stored() if spelling == "whole" else _with_points(_stored())
    c = _load(tmp_path, stored)
    assert sorted(c) == sorted(stored)
    expected = _stored()
    expected["steps_to_target_all"][1][1] = [math.inf]
    for key, value in expected.items():
        if not isinstance(value, list) or key == "labels":
            assert c[key] == value, key
            continue
        integers = key in ("step", "best_lr", "slides")
        assert isinstance(c[key], np.ndarray) and c[key].dtype == (np.int64 if integers else np.float64), (key, c[key])
        assert c[key].tolist() == value, key


def test_a_cell_stored_before_the_windows_slid_still_loads(tmp_path):
    stored = {k: val for k, val in _with_points(_stored()).items() if k != "slides"}
    c = _load(tmp_path, stored)
    assert sorted(c) == sorted(stored)
    assert c["best_lr"].tolist() == [1, 0] and c["best_lr"].dtype == np.int64


def _window(centre: float) -> list[int]:
    """The two-rate window of SGD (dot scores) centred on ``centre`` (exponent 0: any alpha)."""
    return rate_window("sgd", "dot", 1.0, {"lrs": {"sgd": {"dot": [centre, 0]}}, "rates": {"dot": 2}})


@pytest.mark.parametrize(
    ("centre", "nearest"),
    [
        (0.012, -4),  # 1e-2: the sweep's Adam centre
        (0.02, -3),  # 3e-2 (ratio 1.5) beats 1e-2 (ratio 2)
        (1.9, 1),  # 3 (ratio 1.58) beats 1 (ratio 1.9), though 1 is nearer on a linear scale
        (9e-30, -58),  # 1e-29, ratio 1.11
        (5e-30, -59),  # 3e-30 (ratio 1.67) beats 1e-29 (ratio 2)
        (3.2e-30, -59),  # 3e-30, ratio 1.07
        # the bottom of the lattice, lattice_rate(-60) = 1e-30, nearest 2e-30 and anything below it
        (2e-30, -59), (1e-30, -60), (1e-31, -60), (3e-32, -60), (1e-33, -60), (1e-100, -60), (5e-324, -60),
    ],
)
def test_a_window_starts_at_the_lattice_point_nearest_its_centre(centre, nearest):
    assert _window(centre) == [nearest, nearest + 1]


_LRS = {"adam": {"dot": [0.01, 0]}}


@pytest.mark.parametrize(
    ("cfg", "error", 'name'),
    [
        ({"lrs": _LRS}, ValueError, 'cfg'),
        ({"lrs": _LRS, "rates": {"dot": 1}}, ValueError, 'rates'),
        ({"lrs": _LRS, "rates": {"dot": 2.5}}, TypeError, 'rates'),
    ],
)
def test_rate_window_refuses_a_bad_cfg_by_name(cfg, error, name):
    refuses(error, name, rate_window, "adam", "dot", 1.0, cfg)


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
    refuses(ValueError, 'd', sweep_scales, 16, 1, kind)


#: the entries of a cell indexed by scale first (the sweep's format)
PER_SCALE = ("labels", "alphas", "lrs", "slides", "val_area", "loss_area", "final_loss_all", "steps_to_target_all", "diverged_at",
             "best_lr", "steps_to_target", "final_loss", "loss", "accuracy", "half_l1")


def _cell():
    labels = ["0.25", "1", "8"]
    cell = {key: np.arange(3 * 4, dtype=float).reshape(3, 4) + 100 * i for i, key in enumerate(PER_SCALE) if key != "labels"}
    cell["labels"] = labels
    cell["n"] = 16  # entries that are not per scale pass through unchanged
    return cell


def test_a_restricted_cell_keeps_lists_as_lists_and_arrays_as_arrays():
    cell = _cell()
    part = select_scales(cell, ["8", "0.25"])
    assert part["labels"] == ["0.25", "8"] and isinstance(part["labels"], list)
    for key in PER_SCALE:
        if key != "labels":
            assert isinstance(part[key], np.ndarray), key
            np.testing.assert_array_equal(part[key], cell[key][[0, 2]], err_msg=key)
    assert part["n"] == 16


def test_a_cell_without_its_per_scale_entries_is_refused_by_name():
    cell = _cell()
    del cell["loss"], cell["alphas"]
    refuses(ValueError, 'cell', select_scales, cell, ["1"])


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
    ref = train(2, TrainSettings(n=5, d=3, kind="dot", alphas=[1.0, 2.0], lrs=[[lattice_rate(k) for k in row] for row in windows], seeds=1,
                                 steps=3, batch=3, noise=0.3, c=3, optimizer="sgd", eval_steps=evaluation_steps(3, SWEEP["resolution"], 3),
                                 eval_size=2, validation_size=1, validation_every=1))
    for key in ("loss", "val_loss", "accuracy"):
        np.testing.assert_allclose(out[key], getattr(ref, key), rtol=1e-12, atol=0)


# ---- the scales and the windows of rates ---------------------------------------------------------------------------------------
def test_sweep_scales():
    """The scales compared, and the learned arm's starting points: alpha*(n) among the dot
    scales, sqrt(d) first among the cosine ones."""
    labels, alphas = sweep_scales(64, 32, "dot")
    assert labels == ["0.25", "1", "α*(n)", "2.5", "8"]
    assert alphas[2] == pytest.approx(1.5504, abs=1e-3)
    labels, alphas = sweep_scales(64, 32, "cosine")
    assert labels[0] == "√d" and alphas[0] == pytest.approx(np.sqrt(32))


def test_the_rate_lattice_and_its_windows():
    assert [lattice_rate(k) for k in range(-6, 3)] == [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]
    for k in range(-12, 8):  # a window starts at the lattice point nearest its centre
        assert _window(lattice_rate(k)) == _window(lattice_rate(k) * 1.2) == _window(lattice_rate(k) / 1.2) == [k, k + 1]
    cfg = SWEEP
    assert [lattice_rate(k) for k in rate_window("sgd", "dot", 0.25, cfg)] == [0.3, 1.0, 3.0, 10.0, 30.0]
    assert [lattice_rate(k) for k in rate_window("sgd", "dot", 8.0, cfg)] == [0.01, 0.03, 0.1, 0.3, 1.0]
    assert [lattice_rate(k) for k in rate_window("adam", "dot", 8.0, cfg)] == [0.001, 0.003, 0.01, 0.03, 0.1]
    assert [lattice_rate(k) for k in rate_window("adam", "cosine", 64.0, cfg)] == [0.003, 0.01, 0.03, 0.1]
    assert [lattice_rate(k) for k in rate_window("sgd", "cosine", math.sqrt(32), cfg)] == [1.0, 3.0, 10.0, 30.0]


# ---- tuning: the windows slide ----------------------------------------------------------------------------------------------------
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
    direct = train(7, TrainSettings(n=6, d=5, kind="dot", alphas=[1.0, 2.0], lrs=out["lrs"], seeds=2, steps=30, batch=4, eval_size=8,
                                    eval_steps=evaluation_steps(30, dense=5), validation_size=8, validation_every=10))
    for key in ("loss", "accuracy", "val_loss", "diverged_at"):
        np.testing.assert_allclose(out[key], getattr(direct, key), rtol=1e-9, err_msg=key)
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
    direct = train(3, TrainSettings(n=6, d=5, kind="dot", alphas=[1.0], lrs=[0.1, 0.3, 1.0], seeds=2, steps=30, batch=4, eval_size=8,
                                    eval_steps=evaluation_steps(30, dense=5), validation_size=8, validation_every=10, return_params=True))
    for key in ("Wq", "Wk"):
        np.testing.assert_allclose(out["params"][key][:, 0, 0], direct.params[key][:, 0], rtol=1e-9, err_msg=key)
    np.testing.assert_allclose(out["loss"][0, :2], direct.loss[0, :2], rtol=1e-9)


# ---- one cell's run -----------------------------------------------------------------------------------------------------------------
def test_a_subset_of_scales_is_the_full_cell_restricted():
    """Training only some scales gives the full cell's runs at those scales:
    the models of a seed share weights and batches whatever the scales."""
    short = {"steps": 40, "seeds": 2, "eval_size": 32, "validation_size": 32}
    full = run_config(16, 32, "dot", "adam", **short)
    part = run_config(16, 32, "dot", "adam", scales=["2.5", "1"], **short)
    assert part["labels"] == ["1", "2.5"]
    picked = select_scales(full, ["1", "2.5"])
    for key in ("alphas", "lrs", "val_area", "loss_area", "final_loss_all", "loss", "accuracy", "half_l1"):
        np.testing.assert_allclose(part[key], picked[key], rtol=1e-12, err_msg=key)
    for key in ("best_lr", "slides", "steps_to_target_all", "diverged_at"):
        np.testing.assert_array_equal(part[key], picked[key], err_msg=key)
    assert not np.allclose(select_scales(full, ["0.25", "2.5"])["loss"], part["loss"])


def test_learned_and_fixed_runs_share_their_start():
    """The learned arm uses the fixed cell's seed, so at step 0 (scale = the
    initial scale, weights shared) its held-out losses are the fixed cell's, seed by seed."""
    kw = {"steps": 20, "seeds": 2, "eval_size": 32, "validation_size": 32}
    fixed = run_config(16, 32, "dot", "adam", **kw)
    learned = run_config(16, 32, "dot", "adam", learn_scale=True, **kw)
    np.testing.assert_allclose(learned["loss"][..., 0], fixed["loss"][..., 0], rtol=1e-12)
    np.testing.assert_allclose(learned["scale"][..., 0], np.broadcast_to(np.array(fixed["alphas"])[:, None], (5, 2)), rtol=1e-15)
    assert not np.allclose(learned["loss"][..., -1], fixed["loss"][..., -1])  # and then they part


# ---- the stored sweeps of every arm: their settings, their pairing, and re-runs ----------------------------------------------------
def test_a_missing_sweep_points_to_the_make_target_that_writes_it():
    with pytest.raises(FileNotFoundError, match="make sweep"):
        load_sweep(DATA / "no_such_sweep.json")


@pytest.mark.parametrize("optimizer", list(SWEEP["lrs"]))
def test_stored_sweep_is_the_current_settings(optimizer):
    """The stored results are those of the current settings, and every cell is there."""
    path = DATA / f"training_{optimizer}.json"
    raw = json.loads(path.read_text())
    assert raw["settings"] == json.loads(json.dumps(SWEEP))
    assert raw["optimizer"] == optimizer and raw["command"].startswith("python -m attnscale.training --arms ")
    cells = {(c["n"], c["d"], c["kind"], c["optimizer"]) for c in load_sweep(path)["cells"]}
    assert cells == {(n, d, k, optimizer) for n in SWEEP["ns"] for d in SWEEP["ds"] for k in ("dot", "cosine")}


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


def test_compare_cells_notices_a_changed_result():
    """The comparison behind the re-runs below is not blind on a stored cell: a stable run
    moved by 1e-3, or a changed best rate, or a chaotic median moved by half, each break it."""
    cell = next(c for c in load_sweep(DATA / "training_adam.json")["cells"] if (c["n"], c["d"], c["kind"]) == (16, 32, "dot"))
    assert compare_cells(cell, cell).reproduces
    mask = stable_runs(cell)
    moved = {**cell, "loss_area": np.where(mask[..., None], cell["loss_area"] * (1 + 1e-3), cell["loss_area"])}
    assert not compare_cells(moved, cell).reproduces
    assert not compare_cells({**cell, "best_lr": (cell["best_lr"] + 1) % 4}, cell).reproduces
    wild = {**cell, "loss_area": np.where(mask[..., None], cell["loss_area"], 1.5 * cell["loss_area"])}
    assert not compare_cells(wild, cell).reproduces
    with pytest.raises(ValueError, match="same cell"):
        compare_cells({**cell, "labels": cell["labels"][:-1]}, cell)


@pytest.mark.stored_sweep
@pytest.mark.parametrize("optimizer", list(SWEEP["lrs"]))
def test_stored_sweep_matches_the_code(optimizer):
    """The smallest cell reproduces from its seed in everything that survives a
    change of BLAS kernel (see attnscale.reproducibility for the measured spread
    behind the tolerances)."""
    sweep = load_sweep(DATA / f"training_{optimizer}.json")
    cell = next(c for c in sweep["cells"] if (c["n"], c["d"], c["kind"]) == (16, 32, "dot"))
    # chapter 10 re-runs alpha = 1, alpha*(n) and 2.5 of the Adam cell live (under nbval), so
    # here Adam re-runs the other two scales and SGD the whole cell
    scales = ["0.25", "8"] if optimizer == "adam" else None
    fresh = run_config(16, 32, "dot", optimizer, scales=scales)
    same = compare_cells(fresh, cell if scales is None else select_scales(cell, scales))
    assert same.reproduces, same
    assert same.stable_count >= (2 if scales else 8) and same.chaotic_count >= 5


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


@pytest.mark.stored_sweep
def test_stored_adamw_sweep_matches_the_code():
    """Two scales of the smallest cell of the arm at 0.1 reproduce from its seed in what survives a
    change of BLAS kernel."""
    scales = ["1", "8"]  # one stable scale and one chaotic; a subset is the full cell restricted
    stored = select_scales(next(c for c in load_sweep(DATA / "training_adamw_dot.json")["cells"] if (c["n"], c["d"]) == (16, 32)), scales)
    same = compare_cells(run_config(16, 32, "dot", "adam", weight_decay=0.1, scales=scales), stored)
    assert same.reproduces, same


# ---- short runs of every arm against their pinned values ----------------------------------------------------------------------------
# tests/data/training_short.json, written by tools/short_runs.py: every number the training loop
# returns, to a tolerance set entry by entry from the spread measured across BLAS kernels and
# thread counts. The re-runs above take 15 s to 4 min each; these take seconds and pin the same
# code, so a change to the training code is caught here first, and the mutation run
# (tools/mutate.sh) can use them in place of the sweeps.
PINNED = json.loads((Path(__file__).resolve().parents[1] / "data" / "training_short.json").read_text())
FLOOR = 1e-9  # no entry is compared more tightly than this, however small its measured spread
MARGIN = 100  # an entry may move by a hundred times its measured spread


def _tolerance(spread: list) -> np.ndarray:
    s = np.array([math.inf if x == "inf" else x for x in spread], dtype=float)
    return np.maximum(MARGIN * s, FLOOR)


def mismatches(fresh: dict, pinned: dict, spread: dict) -> list[str]:
    """The entries of ``fresh`` outside their tolerance around ``pinned`` (inf and zero
    must match exactly where compared); keys without a spread must be equal."""
    bad = []
    if sorted(fresh) != sorted(pinned):
        return [f"keys: {sorted(set(fresh) ^ set(pinned))}"]
    for key, want in pinned.items():
        got = fresh[key]
        if key not in spread:
            if (got.tolist() if isinstance(got, np.ndarray) else got) != want:
                bad.append(f"{key}: {got!r} != {want!r}")
            continue
        got, want = np.asarray(got, float).ravel(), np.asarray(want, float).ravel()
        if got.shape != want.shape:
            bad.append(f"{key}: shape {got.shape} != {want.shape}")
            continue
        tol = _tolerance(spread[key])
        with np.errstate(all="ignore"):
            off = np.abs(got - want) > tol * np.abs(want)
        off &= (got != want) & np.isfinite(tol)  # equal values (infinities, zeros) always agree
        if off.any():
            i = int(np.argmax(off))
            bad.append(f"{key}: {int(off.sum())} entries off, first [{i}] {got[i]!r} against {want[i]!r} (rtol {tol[i]:.1e})")
    return bad


def test_the_pinned_runs_are_this_file_s_settings():
    assert PINNED["cell"] == [16, 32] and PINNED["short"]["steps"] < 100
    assert {(r["kind"], r["optimizer"], r["options"].get("learn_scale", False), r["options"].get("weight_decay", 0.0) > 0) for r in PINNED["runs"].values()} >= {
        ("dot", "adam", False, False), ("cosine", "adam", False, False), ("dot", "sgd", False, False), ("cosine", "sgd", False, False),
        ("dot", "adam", True, False), ("cosine", "adam", True, False), ("dot", "adam", False, True)}
    # most entries are compared: the ones whose measured spread makes them unpredictable are few
    every = [x for r in PINNED["runs"].values() for s in r["spread"].values() for x in s]
    assert sum(x == "inf" for x in every) < 0.3 * len(every)


@pytest.mark.parametrize("name", list(PINNED["runs"]))
def test_a_short_run_reproduces_its_pinned_values(name):
    run = PINNED["runs"][name]
    fresh = run_config(*PINNED["cell"], run["kind"], run["optimizer"], **{**PINNED["short"], **run["options"]})
    assert mismatches(fresh, run["values"], run["spread"]) == []


def test_the_comparison_sees_a_change_in_any_compared_entry():
    """Not blind: moving a compared entry by ten times its tolerance, or changing a
    decision, or a label, is reported; moving an uncompared one is not."""
    run = PINNED["runs"]["adam-cosine"]
    values, spread = run["values"], run["spread"]
    for key in ("loss", "val_area", "accuracy", "best_lr", "steps_to_target", "alphas"):
        moved = json.loads(json.dumps(values))
        flat = np.asarray(moved[key], float).ravel()
        i = int(np.flatnonzero(np.isfinite(flat) & (flat != 0))[0])
        flat[i] = flat[i] * (1 + 10 * _tolerance(spread[key])[i]) + (1 if key in ("best_lr", "steps_to_target") else 0)
        moved[key] = flat.reshape(np.shape(values[key])).tolist()
        assert len(mismatches(moved, values, spread)) == 1, key
    assert mismatches(dict(values, labels=["x"] + values["labels"][1:]), values, spread) != []
    loose = PINNED["runs"]["adam-dot"]
    i = next(i for i, x in enumerate(loose["spread"]["diverged_at"]) if x == "inf")
    moved = np.asarray(loose["values"]["diverged_at"], float).ravel()
    moved[i] += 7
    assert mismatches(dict(loose["values"], diverged_at=moved.reshape(np.shape(loose["values"]["diverged_at"]))), loose["values"], loose["spread"]) == []
