"""The reproducibility comparison on cells small enough to work out by hand.

``tests/test_training.py`` compares a stored training cell with itself and with
changed copies, and only asks whether the comparison still ``reproduces``. These
tests pin the numbers the comparison reports (the mask of stable runs, the
largest relative errors, the counts) on made-up cells of two or three scales
whose answers are written out below, so that an error measured the wrong way
(a product instead of a ratio, an empty set reported as a difference, a single
run ignored) shows.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnscale.reproducibility import compare_cells, stable_runs


def _cell(labels, best_lr, area, loss=None):
    area = np.asarray(area, float)
    scales = len(labels)
    return {
        "labels": list(labels),
        "best_lr": np.asarray(best_lr),
        "steps_to_target": np.zeros(scales, int),
        "loss_area": area,
        "loss": np.ones((scales, 4)) if loss is None else np.asarray(loss, float),
    }


# two scales, three rates, two seeds; "8" is a chaotic label, the scale "1" is
# stable at rates 0 and 1 (its best rate is 1)
AREA = [[[2.0, 4.0], [2.0, 2.0], [5.0, 5.0]], [[1.0, 3.0], [2.0, 2.0], [4.0, 4.0]]]
STORED = _cell(["1", "8"], [1, 0], AREA)


def test_the_stable_runs_are_the_calm_scales_up_to_their_best_rate():
    assert stable_runs(STORED).tolist() == [[True, True, False], [False, False, False]]
    assert stable_runs(_cell(["0.5", "1"], [0, 2], AREA)).tolist() == [[True, False, False], [True, True, True]]
    with pytest.raises(ValueError, match=r"^cell lacks the entries \['best_lr'"):
        stable_runs({"labels": ["1"]})


def test_the_errors_are_relative_to_the_stored_values():
    moved = np.array(AREA)
    moved[0, 0, 1] = 4.4  # a stable run 10% off (4.4 against 4)
    moved[1, 2, :] = 5.0  # a chaotic run whose median moves from 4 to 5: 25%
    loss = np.ones((2, 4))
    loss[0, 3] = 0.5 * 1.02  # the calm scale's curve 2% off at one step
    stored = _cell(["1", "8"], [1, 0], AREA, loss=0.5 * np.ones((2, 4)))
    got = compare_cells(_cell(["1", "8"], [1, 0], moved, loss=np.where(loss == 1, 0.5, loss)), stored)
    assert got.stable_area_error == pytest.approx(0.1, rel=1e-12, abs=0)
    assert got.chaotic_median_error == pytest.approx(0.25, rel=1e-12, abs=0)
    assert got.stable_curve_error == pytest.approx(0.02, rel=1e-12, abs=0)
    assert (got.stable_count, got.chaotic_count) == (2, 4)
    assert got.stable_area_error <= 1  # still a fraction, not a product of areas
    assert not got.reproduces


def test_a_single_stable_run_is_compared():
    # one seed, one stable (scale, rate): the set being compared has one element
    stored = _cell(["1", "8"], [0, 0], [[[2.0], [3.0]], [[1.0], [1.0]]])
    fresh = _cell(["1", "8"], [0, 0], [[[2.5], [3.0]], [[1.0], [1.0]]])
    got = compare_cells(fresh, stored)
    assert got.stable_count == 1
    assert got.stable_area_error == pytest.approx(0.25, rel=1e-12, abs=0)
    assert not got.reproduces


def test_no_chaotic_runs_means_no_chaotic_error():
    stored = _cell(["0.5", "1"], [2, 2], AREA)
    got = compare_cells(stored, stored)
    assert (got.stable_count, got.chaotic_count) == (6, 0)
    assert got.chaotic_median_error == 0.0
    assert got.stable_area_error == 0.0
    assert got.reproduces
