"""Survivors of the full mutation run over attnscale.training.stats (see tests/MUTANTS.md)
that no earlier test caught: refusals pinned to their whole messages, the edges of the
accepted ranges, the shape and fields of what comes back, the documented bootstrap stream
and defaults, and the accuracy of lr_exponent's centred fit.

What is pinned, and against what:

* steps_to_target, at_grid_edge, best_rates, holm, lr_exponent, mean_interval and
  paired_comparison refuse bad input with a message that begins with the argument's name
  and shows the offending value (tests/test_training_stats.py only checks that the name
  occurs somewhere in the message). Reference: the messages written out by hand; for a
  scalar ``lrs`` (no rates at all) the range of valid indices is the empty "0 to -1".
* the ends of the documented ranges are accepted: a target accuracy of exactly 1
  (``target`` in (0, 1]) and a grid of two rates (``rates`` >= 2, where both are edges).
  Reference: hand-worked answers.
* holm returns "in the input order and shape": a 2 x 2 table stays 2 x 2, a scalar stays a
  scalar. Reference: Holm's adjustment worked by hand.
* paired_comparison: ``level`` is carried into the result; a pair where both arms never
  got there (+inf against +inf) is a tie computed silently even when the caller makes
  NumPy raise on invalid operations; and the percentile intervals come from the
  documented stream, ``resamples`` rows of ``np.random.default_rng(seed).integers(0, n)``,
  by default 10,000 rows from seed 0. Reference: the bootstrap redone with NumPy alone
  (np.median per row, np.quantile with method="inverted_cdf" at (1 -+ level)/2), on data
  for which seed 1, or a 10,001st replication, or an unseeded generator would move an end.
* lr_exponent: the fit is centred on each cell's means, so the mean log rate (the unit of
  the rates) cancels before the products are summed; rates proportional to 1/alpha give
  the exponent -1 to 1e-9 even when the alphas lie within 0.06% of one another at rates
  near 1e-3 (logs about 10^4 times their spread). Reference: the exponent of 1/alpha.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from expect import whole

from attnscale import training as tr

INF = math.inf


# --- refusals: whole messages -------------------------------------------------------------

_ONE_INDEX = "cell['best_lr'] must hold one index into each scale's rates "
_NAN2 = " must be finite, got nan in array of shape (2,) "


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        pytest.param(
            lambda: tr.steps_to_target([0, INF], [0.1, 0.2], 0.5),
            ValueError,
            "step must be finite, got inf in array of shape (2,) [0.0, inf]",
            id="steps_to_target-step",
        ),
        pytest.param(
            lambda: tr.steps_to_target([0, 1], [0.1, math.nan], 0.5),
            ValueError,
            "accuracy" + _NAN2 + "[0.1, nan]",
            id="steps_to_target-accuracy",
        ),
        pytest.param(
            lambda: tr.at_grid_edge([0], 1), ValueError, "rates must be an integer >= 2, got 1", id="at_grid_edge-rates"
        ),
        pytest.param(
            lambda: tr.at_grid_edge([0, math.nan], 4), ValueError, "best_lr" + _NAN2 + "[0.0, nan]", id="at_grid_edge-nan"
        ),
        # the valid indices of a grid of 4 rates are 0 to 3, and the message shows what it got
        pytest.param(
            lambda: tr.at_grid_edge([0, 4], 4),
            ValueError,
            "best_lr must hold integer indices in [0, 3], got array of shape (2,) [0.0, 4.0]",
            id="at_grid_edge-beyond",
        ),
        pytest.param(
            lambda: tr.best_rates({"lrs": [0.1, -0.3], "best_lr": [0]}),
            ValueError,
            "cell['lrs'] must be > 0, got -0.3",
            id="best_rates-negative",
        ),
        # a single rate, not a grid: no index is valid (0 to -1), and the refusal is a ValueError, not an IndexError
        pytest.param(
            lambda: tr.best_rates({"lrs": 0.1, "best_lr": [0]}),
            ValueError,
            _ONE_INDEX + "(0 to -1), got [0] for rates of shape ()",
            id="best_rates-scalar",
        ),
        pytest.param(
            lambda: tr.holm([math.nan]),
            ValueError,
            "p_values must be finite, got nan in array of shape (1,) [nan]",
            id="holm-nan",
        ),
        # 0 is a valid p-value: the message shows the first value outside [0, 1]
        pytest.param(lambda: tr.holm([0.0, 1.5]), ValueError, "p_values must be in [0, 1], got 1.5", id="holm-zero-then-above"),
        pytest.param(lambda: tr.lr_exponent([]), ValueError, "cells must hold at least one stored cell", id="lr_exponent-empty"),
        pytest.param(
            lambda: tr.lr_exponent([[1.0, 2.0]]), TypeError, "cells entry must be a dict, got list", id="lr_exponent-entry"
        ),
        pytest.param(
            lambda: tr.mean_interval([1.0, math.nan]), ValueError, "values" + _NAN2 + "[1.0, nan]", id="mean_interval-values"
        ),
        pytest.param(
            lambda: tr.paired_comparison([1, 2], [1, 2], resamples=10),
            ValueError,
            "resamples must be an integer >= 100, got 10",
            id="paired-resamples",
        ),
        pytest.param(
            lambda: tr.paired_comparison([1, 2], [1, 2], seed=-1),
            ValueError,
            "seed must be an integer >= 0, got -1",
            id="paired-seed",
        ),
        pytest.param(
            lambda: tr.paired_comparison([1, 2], [1, 2], level=math.nan),
            ValueError,
            "level must be finite, got nan",
            id="paired-level-nan",
        ),
        pytest.param(
            lambda: tr.paired_comparison([1, 2], [1, 2], level="0.9"),
            TypeError,
            "level must be a real number, got '0.9'",
            id="paired-level-text",
        ),
    ],
)
def test_messages_begin_with_the_arguments_name(call, error, message):
    with pytest.raises(error, match=whole(message)):
        call()


# --- the ends of the documented ranges ------------------------------------------------------


def test_a_target_accuracy_of_one_is_allowed():
    # target in (0, 1]: a run that reaches 100% accuracy at step 10, and one that never does
    steps = tr.steps_to_target([0, 10, 20], [[0.5, 1.0, 1.0], [0.2, 0.9, 0.99]], 1.0)
    assert steps.tolist() == [10.0, INF]


def test_a_grid_of_two_rates_has_only_edges():
    # rates >= 2: with two rates, each index is the first or the last
    assert tr.at_grid_edge([0, 1, 1, 0], 2).tolist() == [True] * 4


# --- holm: the input's shape ----------------------------------------------------------------


def test_holm_keeps_the_shape_of_its_input():
    # sorted 0.01, 0.03, 0.04, 0.5 -> 4 x 0.01, 3 x 0.03, max(2 x 0.04, 0.09), max(0.5, 0.09)
    adjusted = tr.holm([[0.01, 0.04], [0.03, 0.5]])
    assert adjusted.shape == (2, 2)
    assert adjusted == pytest.approx(np.array([[0.04, 0.09], [0.09, 0.5]]), rel=1e-12, abs=0)
    one = tr.holm(0.3)  # a single p-value is its own adjustment
    assert np.shape(one) == () and float(one) == 0.3


# --- paired_comparison ----------------------------------------------------------------------


def test_the_result_carries_its_level():
    a, b = [3.0, 5.0, 1.0], [1.0, 2.0, 2.0]
    assert tr.paired_comparison(a, b, resamples=100).level == 0.95  # the default
    assert tr.paired_comparison(a, b, resamples=100, level=0.8).level == 0.8


def test_pairs_that_both_never_got_there_are_tied_silently_even_when_numpy_raises():
    """+inf against +inf is a tie (D = 0), not inf - inf = NaN: computed without an invalid
    operation, so a caller who has NumPy raise on those gets the answer, not an error."""
    with np.errstate(all="raise"):
        r = tr.paired_comparison([INF, 60.0, 20.0, INF, 30.0], [INF, 40.0, 40.0, 20.0, 30.0], resamples=500)
    assert (r.later, r.earlier, r.tied) == (2, 1, 2)
    assert r.median_difference == 0.0 and r.prob_later == 0.6


def _bootstrap(d, resamples, seed, level):
    """The documented percentile intervals redone with NumPy alone (finite differences)."""
    idx = np.random.default_rng(seed).integers(0, d.size, size=(resamples, d.size))
    q = ((1 - level) / 2, (1 + level) / 2)
    medians = np.median(d[idx], axis=1)
    later = ((d > 0) + 0.5 * (d == 0))[idx].mean(axis=1)
    ci = np.quantile(medians, q, method="inverted_cdf")
    prob_ci = np.quantile(later, q, method="inverted_cdf")
    return (float(ci[0]), float(ci[1])), (float(prob_ci[0]), float(prob_ci[1]))


#: ten pairs of steps, one tied; their bootstrap is lumpy enough that the stream shows: with
#: the default 10,000 rows from seed 0 the upper end for prob_later is 0.95, while a 10,001st
#: row gives 1.0, and so does (or the median's interval moves) every one of the seeds 1 to 59
A = [49.0, 58.0, 56.0, 40.0, 58.0, 60.0, 59.0, 23.0, 38.0, 44.0]
B = [40.0] * 10


def test_the_default_bootstrap_is_ten_thousand_resamples_from_seed_zero():
    d = np.subtract(A, B)
    ci, prob_ci = _bootstrap(d, 10_000, 0, 0.95)
    assert (ci, prob_ci) == ((0.0, 18.5), (0.5, 0.95))  # the values the reference gives, written out
    r = tr.paired_comparison(A, B)
    assert (r.ci, r.prob_later_ci) == (ci, prob_ci)
    assert (r.later, r.earlier, r.tied, r.median_difference, r.prob_later) == (7, 2, 1, 12.5, 0.75)


@pytest.mark.parametrize(("seed", "resamples", "level"), [(0, 200, 0.95), (5, 500, 0.9), (12, 300, 0.8)])
def test_the_bootstrap_follows_the_documented_stream(seed, resamples, level):
    d = np.subtract(A, B)
    ci, prob_ci = _bootstrap(d, resamples, seed, level)
    for _ in range(2):  # and again: the same seed, the same intervals
        r = tr.paired_comparison(A, B, seed=seed, resamples=resamples, level=level)
        assert (r.ci, r.prob_later_ci) == (ci, prob_ci)


# --- lr_exponent: the centred fit -------------------------------------------------------------


def test_the_exponent_is_accurate_for_close_alphas_at_small_rates():
    """Four cells of seven alphas each, 0.01% apart around 1000 to 5000, with best rates
    1/alpha (about 1e-3): log alpha is about 7 and log rate about -7, each some 10^4 times
    its spread within a cell, so the slope must be formed from centred logs; then it is -1
    to about 1e-11 (rounding of the logs), well inside 1e-9."""
    cells = []
    for base in (1000.0, 2000.0, 3000.0, 5000.0):
        alphas = base * (1 + 1e-4 * np.arange(7))
        cells.append({"alphas": alphas, "lrs": (1 / alphas)[:, None], "best_lr": np.zeros(7, dtype=int)})
    pooled, per_cell = tr.lr_exponent(cells)
    assert pooled == pytest.approx(-1.0, rel=1e-9, abs=0)
    assert per_cell == pytest.approx([-1.0] * 4, rel=1e-9, abs=0)
