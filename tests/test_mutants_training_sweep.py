"""``training.sweep.select_scales`` on a cell written out by hand (survivors of the mutation
run over ``attnscale.training``, tests/MUTANTS.md).

A restricted cell is a cell of the same kind: its labels stay a list (as every cell's are,
from :func:`run_config` or :func:`load_sweep`), its numbers stay NumPy arrays with the rows
of the kept scales, in the cell's order; a cell that lacks entries is refused with a message
that names them. References: the hand-made cell's rows, picked by index here.

rate_window finds the lattice point nearest its centre down to the lattice's documented floor
(lattice_rate accepts k >= -60, i.e. 1e-30); reference: the nearest of 1e-30, 3e-30, 1e-29, ...
by hand. tune evaluates on the schedule its overridden ``dense`` and ``resolution`` settings
give; reference: the schedule t + max(1, floor(resolution t)) after step ``dense``, worked out
by hand for a 30-step run."""

import numpy as np
import pytest

from attnscale.training import rate_window, select_scales, tune
from attnscale.training.sweep import _PER_SCALE
from expect import raises_exactly


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
    raises_exactly(ValueError, "cell lacks the entries ['alphas', 'loss']", select_scales, cell, ["1"])


def test_a_cell_is_written_as_json_to_six_digits_with_infinity_as_null():
    """The stored sweeps' format (training/runner.py writes every cell through it): arrays as
    nested lists, NumPy integers as integers, floats to six significant digits, an infinite
    step count (never reached the target) as null, which load_sweep reads back as inf."""
    from attnscale.training.sweep import _jsonable

    cell = {"best_lr": np.array([2, 0]), "n": np.int64(16), "area": np.array([[0.123456789, np.inf]]), "labels": ["1", "8"], "x": (np.float32(2.5),)}
    out = _jsonable(cell)
    assert out == {"best_lr": [2, 0], "n": 16, "area": [[0.123457, None]], "labels": ["1", "8"], "x": [2.5]}
    assert type(out["n"]) is int and type(out["best_lr"][0]) is int


def _window(centre: float) -> list[int]:
    """The two-rate window of SGD (dot scores) centred on ``centre`` (exponent 0: any alpha)."""
    return rate_window("sgd", "dot", 1.0, {"lrs": {"sgd": {"dot": [centre, 0]}}, "rates": {"dot": 2}})


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
    nearest 2e-30. Both raised 'k must be an integer >= -60, got -61' (a fault found by this
    test, see tests/MUTANTS.md): _lattice_index tried k0 - 1 = -61 first."""
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
