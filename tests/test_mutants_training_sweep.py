"""``training.sweep.select_scales`` on a cell written out by hand (survivors of the mutation
run over ``attnscale.training``, tests/MUTANTS.md).

A restricted cell is a cell of the same kind: its labels stay a list (as every cell's are,
from :func:`run_config` or :func:`load_sweep`), its numbers stay NumPy arrays with the rows
of the kept scales, in the cell's order; a cell that lacks entries is refused with a message
that names them. References: the hand-made cell's rows, picked by index here."""

import numpy as np

from attnscale.training import select_scales
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
