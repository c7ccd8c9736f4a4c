"""Tests written for survivors of a uniform random sample of the mutation run over
attnscale.training (statistics, the loss-curve figure and the stored sweep's loader; see
tests/MUTANTS.md). Each pins a documented or user-visible promise against a reference that
does not share the code under test.

- loss_curves: the six-panel figure is 6.9 x 8.2 in (690 x 820 px in the chapter), tall enough
  that each panel's five-entry legend covers under half of it. Reference: the sizes written out
  by hand; the panel and legend boxes measured by matplotlib's layout on hand-made cells.
- paired_comparison's median (_median_rows): a median between a "never" and a "reference
  never" (+inf and -inf middle values) is the documented 0, computed without a RuntimeWarning;
  the median of equal differences is that difference, and of an odd number of differences the
  middle one, exactly, even for subnormal numbers (where 0.5 x + 0.5 x is not x). Reference:
  the definition of the median, and the bootstrap distributions of two and three pairs worked
  out by hand.
- paired_comparison's percentile interval: its ends are the (1 - level)/2 and (1 + level)/2
  quantiles of the replications. Reference: two pairs, one later and one earlier, whose
  resampled prob_later is 0, 1/2 or 1 with probabilities 1/4, 1/2, 1/4 (and median difference
  -d, 0 or d likewise); at level 0.375 the quantiles 0.3125 and 0.6875 both fall on the middle
  value, while a lower quantile below 1/4 would fall on the lowest.
- best_rates, lr_exponent, tune: the exact messages naming ``cell``, ``cells`` (with the type
  it got) and ``slides``; lr_exponent works in double precision whatever the dtype of a
  cell's alphas (slope -1 worked out by hand for rates proportional to 1/alpha).
- load_sweep: JSON has one kind of number (RFC 8259: 1 and 1.0 are the same value), so the
  loaded cell does not depend on how a file spells them: alphas, rates and final losses come
  back as float arrays, best_lr and slides as integer arrays; a cell keeps exactly its stored
  entries, and one stored without ``slides`` (written before the windows slid) still loads.
  Reference: hand-written files.
- lr_exponent and bad alphas: a cell whose alphas are not positive numbers, or not one per
  best rate, is refused with an error naming ``cells`` (a fault found here: it gave a silent
  NaN or NumPy's matmul error, against the promise of tests/test_bad_input.py).
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from expect import whole

from attnscale import training as tr

INF = math.inf
TINY = math.ulp(0.0)  # 2**-1074, the smallest subnormal double


# --- loss_curves: the figure's size -------------------------------------------------------


def _cells():
    """Six hand-made cells (SGD, dot scores) of five scales, two seeds and three steps."""
    cell = {"labels": ["0.25", "1", "α*(n)", "2.5", "8"], "alphas": [0.25, 1.0, 1.19, 2.5, 8.0], "lrs": [[0.1, 0.3, 1.0]] * 5, "best_lr": [1] * 5,
            "step": [0.0, 10.0, 20.0], "loss": [[[1.0, 0.5, 0.1], [0.9, 0.4, 0.05]]] * 5}
    return {("sgd", "dot", n, d): cell for n in (16, 64, 256) for d in (32, 64)}


def test_the_curve_figure_is_tall_enough_for_each_panels_legend():
    fig = tr.loss_curves(_cells(), "sgd", "dot", "Dot scores, SGD")
    # three rows of two panels in the text column: 690 x 820 px as the chapter shows it
    assert (fig.get_figwidth(), fig.get_figheight()) == (6.9, 8.2)
    fig.draw_without_rendering()
    for ax in fig.axes:
        # the five-entry legend sits over the curves (lower left): it must leave most of the panel free
        assert ax.get_legend().get_window_extent().height < 0.5 * ax.get_window_extent().height


# --- paired_comparison: the median of differences -----------------------------------------


def test_the_median_of_never_against_reference_never_is_zero_and_silent():
    """Differences +inf (a never reached) and -inf (b never reached): the middle values of
    two are -inf and +inf, whose median is documented as 0. Resamples: both +inf (1/4),
    both -inf (1/4), one of each (1/2, median 0), so the 95% interval is (-inf, inf)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's default for -inf + inf is a RuntimeWarning
        r = tr.paired_comparison([INF, 1.0], [1.0, INF])
    assert (r.later, r.earlier, r.tied) == (1, 1, 0)
    assert r.median_difference == 0.0
    assert r.ci == (-INF, INF)
    assert r.prob_later == 0.5 and r.p_value == 1.0


def test_the_median_of_equal_differences_is_that_difference_even_when_subnormal():
    # two pairs, each later by the smallest double: every resample holds two copies of it
    r = tr.paired_comparison([TINY, TINY], [0.0, 0.0])
    assert (r.later, r.median_difference, r.ci) == (2, TINY, (TINY, TINY))
    assert (r.prob_later, r.prob_later_ci) == (1.0, (1.0, 1.0))


def test_the_median_of_an_odd_number_of_differences_is_the_middle_one_exactly():
    """Three pairs: the median is the middle difference, 5 TINY; a resample of three has its
    own middle difference, so both interval ends are differences of the sample."""
    r = tr.paired_comparison([3 * TINY, 5 * TINY, 7 * TINY], [0.0, 0.0, 0.0])
    assert r.median_difference == 5 * TINY
    assert r.ci[0] <= 5 * TINY <= r.ci[1]
    assert set(r.ci) <= {3 * TINY, 5 * TINY, 7 * TINY}, [x / TINY for x in r.ci]


# --- paired_comparison: the percentile interval --------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_interval_ends_are_the_two_sided_quantiles_of_the_replications(seed):
    """Two pairs, one later by 1 and one earlier by 1. A resample of two pairs holds the later
    one twice (1/4: prob_later 1, median 1), once (1/2: 1/2 and 0) or never (1/4: 0 and -1).
    At level 0.375 the ends are the 0.3125 and 0.6875 quantiles, both of the middle value
    (the cumulative probabilities are 1/4, 3/4, 1; 10,000 resamples put each empirical one
    within 0.02 of its value at over 4 standard deviations)."""
    r = tr.paired_comparison([1.0, 0.0], [0.0, 1.0], level=0.375, seed=seed)
    assert (r.later, r.earlier, r.prob_later, r.median_difference) == (1, 1, 0.5, 0.0)
    assert r.prob_later_ci == (0.5, 0.5)
    assert r.ci == (0.0, 0.0)


# --- messages that name the argument ------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        pytest.param(lambda: tr.best_rates([0.1, 0.3]), TypeError, "cell must be a dict, got list", id="best_rates-list"),
        pytest.param(lambda: tr.best_rates({"lrs": [0.1, 0.3]}), ValueError, "cell lacks the entries ['best_lr']", id="best_rates-no-best_lr"),
        pytest.param(lambda: tr.lr_exponent(({"alphas": [1.0, 2.0], "lrs": [0.1, 1.0], "best_lr": [0, 1]},)), TypeError,
                     "cells must be a list of stored cells, got tuple", id="lr_exponent-tuple"),
        pytest.param(lambda: tr.lr_exponent({"alphas": [1.0, 2.0]}), TypeError, "cells must be a list of stored cells, got dict", id="lr_exponent-dict"),
        pytest.param(lambda: tr.sweep.tune(0, n=4, d=4, kind="dot", alphas=[1.0], slides=-1), ValueError, "slides must be an integer >= 0, got -1",
                     id="tune-slides-negative"),
        pytest.param(lambda: tr.sweep.tune(0, n=4, d=4, kind="dot", alphas=[1.0], slides=2.5), TypeError, "slides must be an integer >= 0, got 2.5",
                     id="tune-slides-fraction"),
    ],
)
def test_messages_name_the_argument(call, error, message):
    with pytest.raises(error, match=whole(message)):
        call()


# --- lr_exponent ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_lr_exponent_works_in_double_precision_whatever_the_alphas_dtype(dtype):
    """Best rates 4, 1, 1/4 at alphas 1/4, 1, 4 (all exact in half precision): the rate
    falls like 1/alpha, a slope of exactly -1."""
    cell = {"alphas": np.array([0.25, 1.0, 4.0], dtype=dtype), "lrs": [[4.0], [1.0], [0.25]], "best_lr": [0, 0, 0]}
    pooled, per_cell = tr.lr_exponent([cell])
    assert pooled == pytest.approx(-1.0, rel=1e-12, abs=0)
    assert per_cell == [pytest.approx(-1.0, rel=1e-12, abs=0)]


@pytest.mark.parametrize(
    "alphas",
    [[-1.0, 1.0], [0.0, 1.0], [math.nan, 1.0], [1.0, INF], [1.0, 2.0, 4.0]],
    ids=["negative", "zero", "nan", "inf", "three-alphas-two-rates"],
)
def test_lr_exponent_refuses_bad_alphas_by_name(alphas):
    cell = {"alphas": alphas, "lrs": [[1.0], [0.5]], "best_lr": [0, 0]}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a NaN from log(-1) or log(0) must not come first
        with pytest.raises(ValueError, match="^cells entry's alphas must "):
            tr.lr_exponent([cell])


# --- load_sweep -----------------------------------------------------------------------------


def _stored(**entries):
    """A stored cell of two scales, one seed and two rates, as a file might hold it."""
    cell = {"n": 16, "d": 32, "kind": "dot", "optimizer": "sgd", "labels": ["1", "8"], "alphas": [0.5, 8.0], "lrs": [[0.3, 1.0], [0.1, 0.3]],
            "slides": [0, -1], "best_lr": [1, 0], "steps_to_target": [[40.0], [None]], "steps_to_target_all": [[[60.0], [40.0]], [[None], [None]]],
            "final_loss": [[0.25], [0.5]], "final_loss_all": [[[0.5], [0.25]], [[0.5], [0.75]]]}
    cell.update(entries)
    return {k: v for k, v in cell.items() if v is not None}


def _load(tmp_path, cell):
    path = tmp_path / "training_toy.json"
    path.write_text(json.dumps({"optimizer": "sgd", "cells": [cell]}))
    return tr.load_sweep(path)["cells"][0]


def test_a_loaded_cell_does_not_depend_on_how_the_file_spells_its_numbers(tmp_path):
    """The same cell with whole numbers spelled 1 or 1.0 (one JSON number either way)."""
    whole = _stored(alphas=[1, 8], lrs=[[1, 3], [1, 3]], final_loss=[[0], [1]], final_loss_all=[[[1], [0]], [[1], [1]]], slides=[0, -1], best_lr=[1, 0])
    point = _stored(alphas=[1.0, 8.0], lrs=[[1.0, 3.0], [1.0, 3.0]], final_loss=[[0.0], [1.0]], final_loss_all=[[[1.0], [0.0]], [[1.0], [1.0]]],
                    slides=[0.0, -1.0], best_lr=[1.0, 0.0])
    for stored in (whole, point):
        c = _load(tmp_path, stored)
        for key, value in (("alphas", [1.0, 8.0]), ("lrs", [[1.0, 3.0], [1.0, 3.0]]), ("final_loss", [[0.0], [1.0]]),
                           ("final_loss_all", [[[1.0], [0.0]], [[1.0], [1.0]]]), ("steps_to_target", [[40.0], [INF]])):
            assert isinstance(c[key], np.ndarray) and c[key].dtype.kind == "f", (key, c[key])
            assert c[key].tolist() == value, key
        for key, value in (("best_lr", [1, 0]), ("slides", [0, -1])):
            assert isinstance(c[key], np.ndarray) and c[key].dtype.kind == "i", (key, c[key])
            assert c[key].tolist() == value, key


def test_a_loaded_cell_has_exactly_its_stored_entries(tmp_path):
    stored = _stored()
    c = _load(tmp_path, stored)
    assert sorted(c) == sorted(stored)
    assert c["labels"] == ["1", "8"] and (c["n"], c["d"], c["kind"], c["optimizer"]) == (16, 32, "dot", "sgd")
    assert c["steps_to_target_all"].tolist() == [[[60.0], [40.0]], [[INF], [INF]]]


def test_a_cell_stored_before_the_windows_slid_still_loads(tmp_path):
    stored = _stored(slides=None)
    c = _load(tmp_path, stored)
    assert "slides" not in c and sorted(c) == sorted(stored)
    assert c["best_lr"].tolist() == [1, 0] and c["best_lr"].dtype.kind == "i"
