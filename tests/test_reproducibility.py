"""attnscale.reproducibility: comparing a fresh run with a stored cell within the documented
tolerances, and naming the cell or entry that differs.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnscale.reproducibility import compare_cells, stable_runs
from expect import named


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
    with pytest.raises(ValueError, match=named('cell')):
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


def test_a_label_count_that_does_not_match_the_areas_is_named():
    # three labels for areas of two scales: the message gives both counts
    with pytest.raises(ValueError, match=named('cell')):
        stable_runs(_cell(["0.5", "1", "8"], [0, 0, 0], AREA))


@pytest.mark.parametrize(
    ("fresh", "stored", "error", 'name'),
    [
        (_cell(["1"], [1], AREA[:1]), STORED, ValueError, 'fresh'),
        (_cell(["1", "8"], [1, 0], np.ones((2, 3, 3))), STORED, ValueError, 'fresh'),
    ],
    ids=["fewer-scales", "more-seeds"],
)
def test_a_fresh_cell_of_another_shape_is_refused_by_name(fresh, stored, error, name):
    with pytest.raises(error, match=named(name)):
        compare_cells(fresh, stored)


def test_the_validation_areas_are_compared_with_the_test_areas():
    # the validation set chooses the rate, so its areas count among the stable runs'
    val = np.array(AREA) + 1.0  # stored validation areas: scale "1" at rate 0 is [3, 5]
    stored = {**STORED, "val_area": val}
    moved = val.copy()
    moved[0, 0, 1] = 5.5  # a stable run's validation area 10% off (5.5 against 5); its test area unchanged
    got = compare_cells({**STORED, "val_area": moved}, stored)
    assert got.stable_area_error == pytest.approx(0.1, rel=1e-12, abs=0)
    assert (got.stable_count, got.chaotic_count) == (2, 4)  # runs (scale, rate), not seeds or sets
    assert not got.reproduces
    assert compare_cells({**STORED, "val_area": val.tolist()}, stored).reproduces


def test_the_curves_compared_are_those_of_the_calm_scales_only():
    # the best-rate curve of the chaotic scale "8" may move as far as it likes
    stored = _cell(["1", "8"], [1, 0], AREA, loss=[[0.5, 0.4, 0.3, 0.2], [0.5, 0.4, 0.3, 0.2]])
    wild = _cell(["1", "8"], [1, 0], AREA, loss=[[0.5, 0.4, 0.3, 0.2], [0.5, 0.6, 0.9, 1.5]])
    got = compare_cells(wild, stored)
    assert got.stable_curve_error == 0.0
    assert got.reproduces
    calm_moved = _cell(["1", "8"], [1, 0], AREA, loss=[[0.5, 0.4, 0.3, 0.25], [0.5, 0.4, 0.3, 0.2]])
    assert compare_cells(calm_moved, stored).stable_curve_error == pytest.approx(0.25, rel=1e-12, abs=0)


# each scale's window of rates, as a cell stores it in "lrs" (scales, rates): points of the
# 1-3-10 lattice, kept to the six significant digits the sweep stores
WINDOWS = [[0.01, 0.03, 0.1], [0.003, 0.01, 0.03]]


@pytest.mark.parametrize(
    ("stored", "fresh"),
    [
        (WINDOWS, [[0.003, 0.01, 0.03], [0.003, 0.01, 0.03]]),  # scale "1" one lattice step lower
        (WINDOWS, [[0.03, 0.1, 0.3], [0.003, 0.01, 0.03]]),  # one step higher
        ([[1.0, 3.0, 10.0], [10.0, 30.0, 100.0]], [[1.0, 3.0, 10.0], [3.0, 10.0, 30.0]]),  # SGD-sized rates
        ([[1e-9, 3e-9, 1e-8], [3e-10, 1e-9, 3e-9]], [[3e-10, 1e-9, 3e-9], [3e-10, 1e-9, 3e-9]]),  # tiny rates
        (WINDOWS, [[0.01, 0.03, 0.0999999], [0.003, 0.01, 0.03]]),  # the sixth significant digit
    ],
    ids=["step-down", "step-up", "sgd-rates", "tiny-rates", "sixth-digit"],
)
def test_another_window_of_rates_is_not_the_same_best_rate(stored, fresh):
    # the best rate is an index into the window: the same index in another window is
    # another rate, so the windows must agree exactly (as stored), whatever their size
    got = compare_cells({**STORED, "lrs": np.array(fresh)}, {**STORED, "lrs": np.array(stored)})
    assert not got.same_best_rates
    assert not got.reproduces
    assert got.same_steps_to_target and got.stable_area_error == 0.0  # only the window differs


def test_the_same_window_is_the_same_whatever_its_rounding():
    # a rate computed in floats (3 * 0.1 / 10 is 0.030000000000000006) against the stored decimal one
    fresh = {**STORED, "lrs": [[0.01, 3 * 0.1 / 10, 0.1], [0.003, 0.01, 3 * 0.1 / 10]]}
    assert fresh["lrs"][0][1] != 0.03  # really not the same floats
    got = compare_cells(fresh, {**STORED, "lrs": np.array(WINDOWS)})
    assert got.same_best_rates and got.reproduces
    assert compare_cells({**STORED, "lrs": WINDOWS}, STORED).same_best_rates  # a stored cell without windows
