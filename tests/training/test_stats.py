"""attnscale.training.stats: the statistics of the sweeps (paired comparisons, Holm's
correction, intervals, rate exponents, steps to target) against hand counts and SciPy.
"""

from __future__ import annotations

import itertools
import math
import warnings

from hypothesis import given, settings, strategies as hs
from scipy.stats import rankdata
import numpy as np
import pytest

from attnscale import training as tr
from attnscale.training import DATA, load_sweep, paired_comparison
from attnscale.training.stats import at_grid_edge, final_loss_summary, holm, within_strata_correlation
from expect import named


INF = math.inf

#: a valid cell for lr_exponent: two scales, best rates 0.1 and 1
_CELL = {"alphas": [1.0, 2.0], "lrs": [0.1, 1.0], "best_lr": [0, 1]}


def _alphas(alphas):
    return {"alphas": alphas, "lrs": [[1.0], [0.5]], "best_lr": [0, 0]}


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        # best_rates: both entries, positive rates, one index per scale into a 1-d or 2-d table of rates
        pytest.param(lambda: tr.best_rates({"lrs": [0.1, 0.3]}), ValueError, "cell", id="best_rates-no-best_lr"),
        pytest.param(lambda: tr.best_rates({"lrs": [0.1, -0.3], "best_lr": [0]}), ValueError, "cell['lrs']", id="best_rates-negative"),
        # a single rate, not a grid: no index is valid (0 to -1), and the refusal is a ValueError, not an IndexError
        pytest.param(lambda: tr.best_rates({"lrs": 0.1, "best_lr": [0]}), ValueError, "cell['best_lr']", id="best_rates-scalar"),
        pytest.param(lambda: tr.best_rates({"lrs": [0.1, 0.3, 1.0], "best_lr": [[1]]}), ValueError, "cell['best_lr']", id="best_rates-2d-index"),
        pytest.param(lambda: tr.best_rates({"lrs": [0.1, 0.3, 1.0], "best_lr": 1}), ValueError, "cell['best_lr']", id="best_rates-one-index"),
        pytest.param(lambda: tr.best_rates({"lrs": np.ones((2, 2, 3)), "best_lr": [1, 0]}), ValueError, "cell['best_lr']", id="best_rates-3d-rates"),
        pytest.param(lambda: tr.best_rates({"lrs": [[0.1, 0.3]], "best_lr": [0, 1]}), ValueError, "cell['best_lr']", id="best_rates-two-for-one-row"),
        # 0 is a valid p-value: the first value outside [0, 1] is refused, in any shape
        pytest.param(lambda: tr.holm([0.0, 1.5]), ValueError, "p_values", id="holm-zero-then-above"),
        pytest.param(lambda: tr.holm([[0.5, 1.0], [-0.25, 0.1]]), ValueError, "p_values", id="holm-2d-below-0"),
        pytest.param(lambda: tr.lr_exponent([[1.0, 2.0]]), TypeError, "cells", id="lr_exponent-entry"),
        pytest.param(lambda: tr.lr_exponent((_CELL,)), TypeError, "cells", id="lr_exponent-tuple"),
        pytest.param(lambda: tr.lr_exponent(_CELL), TypeError, "cells", id="lr_exponent-dict"),
        # alphas that have no logarithm, or not one per best rate; two equal alphas leave no slope to fit
        pytest.param(lambda: tr.lr_exponent([_alphas([-1.0, 1.0])]), ValueError, "cells", id="lr_exponent-negative"),
        pytest.param(lambda: tr.lr_exponent([_alphas([0.0, 1.0])]), ValueError, "cells", id="lr_exponent-zero"),
        pytest.param(lambda: tr.lr_exponent([_alphas([math.nan, 1.0])]), ValueError, "cells", id="lr_exponent-nan"),
        pytest.param(lambda: tr.lr_exponent([_alphas([1.0, INF])]), ValueError, "cells", id="lr_exponent-inf"),
        pytest.param(lambda: tr.lr_exponent([_alphas([1.0, 2.0, 4.0])]), ValueError, "cells", id="lr_exponent-three-alphas-two-rates"),
        pytest.param(lambda: tr.lr_exponent([{"alphas": [2.0, 2.0], "lrs": [0.1, 0.3, 1.0], "best_lr": [0, 2]}]), ValueError, "cells",
                     id="lr_exponent-equal-alphas"),
        # within_strata_correlation: labels that are objects, too few units, a constant variable, no stratum where both vary,
        # fewer than 100 shuffles
        pytest.param(lambda: within_strata_correlation([1, 2, 3, 4], [2, 1, 4, 3], [0, None, 1, 1]), TypeError, "strata", id="strata-object"),
        pytest.param(lambda: within_strata_correlation([1, 2], [1, 2], [0, 0]), ValueError, "x", id="two-units"),
        pytest.param(lambda: within_strata_correlation([5, 5, 5, 5], [2, 1, 4, 3], [0, 0, 1, 1]), ValueError, "x", id="constant-x"),
        pytest.param(lambda: within_strata_correlation([1, 2, 3, 4], [7, 7, 7, 7], [0, 0, 1, 1]), ValueError, "x", id="constant-y"),
        pytest.param(lambda: within_strata_correlation([1, 2, 1, 2], [1, 1, 2, 2], [0, 0, 1, 1]), ValueError, "x", id="no-stratum"),
        pytest.param(lambda: within_strata_correlation([1, 2, 3], [1, 3, 2], [0, 0, 0], permutations=99), ValueError, "permutations",
                     id="permutations-one-below-100"),
    ],
)
def test_a_refusal_names_the_argument(call, error, name):
    """What tests/test_refusals.py's table does not try: conditions particular to these functions."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a NaN from log(-1) or log(0) must not come first
        with pytest.raises(error, match=named(name)):
            call()


def test_a_target_accuracy_of_one_is_allowed():
    # target in (0, 1]: a run that reaches 100% accuracy at step 10, and one that never does
    steps = tr.steps_to_target([0, 10, 20], [[0.5, 1.0, 1.0], [0.2, 0.9, 0.99]], 1.0)
    assert steps.tolist() == [10.0, INF]


def test_a_grid_of_two_rates_has_only_edges():
    # rates >= 2: with two rates, each index is the first or the last
    assert tr.at_grid_edge([0, 1, 1, 0], 2).tolist() == [True] * 4


def test_holm_keeps_the_shape_of_its_input():
    # sorted 0.01, 0.03, 0.04, 0.5 -> 4 x 0.01, 3 x 0.03, max(2 x 0.04, 0.09), max(0.5, 0.09)
    adjusted = tr.holm([[0.01, 0.04], [0.03, 0.5]])
    assert adjusted.shape == (2, 2)
    assert adjusted == pytest.approx(np.array([[0.04, 0.09], [0.09, 0.5]]), rel=1e-12, abs=0)
    one = tr.holm(0.3)  # a single p-value is its own adjustment
    assert np.shape(one) == () and float(one) == 0.3


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


TINY = math.ulp(0.0)  # 2**-1074, the smallest subnormal double


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

@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_lr_exponent_works_in_double_precision_whatever_the_alphas_dtype(dtype):
    """Best rates 4, 1, 1/4 at alphas 1/4, 1, 4 (all exact in half precision): the rate
    falls like 1/alpha, a slope of exactly -1."""
    cell = {"alphas": np.array([0.25, 1.0, 4.0], dtype=dtype), "lrs": [[4.0], [1.0], [0.25]], "best_lr": [0, 0, 0]}
    pooled, per_cell = tr.lr_exponent([cell])
    assert pooled == pytest.approx(-1.0, rel=1e-12, abs=0)
    assert per_cell == [pytest.approx(-1.0, rel=1e-12, abs=0)]


def test_final_loss_summary_reduces_the_seed_axis_of_any_rank():
    # rows worked out by hand: [1, 2, 3] mean 2, s.d. 1, median 2; [0, 0, 3] mean 1, s.d. sqrt 3, median 0;
    # [2, 2, 2] mean 2, s.d. 0; [0, 4, 8] mean 4, s.d. 4, median 4
    loss = np.array([[[1.0, 2.0, 3.0], [0.0, 0.0, 3.0]], [[2.0, 2.0, 2.0], [0.0, 4.0, 8.0]]])
    s = final_loss_summary(loss)
    assert {k: np.shape(val) for k, val in s.items()} == dict.fromkeys(("mean", "std", "median", "min", "max"), (2, 2))
    assert s["mean"].tolist() == [[2.0, 1.0], [2.0, 4.0]]
    assert s["std"] == pytest.approx(np.array([[1.0, math.sqrt(3)], [0.0, 4.0]]), rel=1e-15, abs=0)
    assert s["median"].tolist() == [[2.0, 0.0], [2.0, 4.0]]
    assert s["min"].tolist() == [[1.0, 0.0], [2.0, 0.0]] and s["max"].tolist() == [[3.0, 3.0], [2.0, 8.0]]
    # one row of seeds: every summary is a number
    one = final_loss_summary([0.1, 0.3, 0.2])
    assert float(one["mean"]) == pytest.approx(0.2, rel=1e-15) and float(one["std"]) == pytest.approx(0.1, rel=1e-12)
    assert (float(one["median"]), float(one["min"]), float(one["max"])) == (0.2, 0.1, 0.3)


def test_final_loss_summary_accepts_a_loss_of_zero():
    s = final_loss_summary([[0.0, 0.0], [0.0, 0.5]])
    assert s["mean"].tolist() == [0.0, 0.25] and s["min"].tolist() == [0.0, 0.0]


def test_final_loss_summary_refuses_rows_of_one_seed():
    """Two rows of one seed each: no standard deviation per row (the refusal table tries only a flat one-seed row)."""
    with pytest.raises(ValueError, match=named("final_loss")):
        final_loss_summary([[0.1], [0.2]])


def _monotone(strata: int = 5, size: int = 5):
    """Perfectly rank-correlated units in every stratum: no shuffle but the identity (or
    all reversals) reaches |rho| = 1, a chance of 2 / 120^5 per shuffle for five of five."""
    x = np.tile(np.arange(size, dtype=float), strata) + np.repeat(10.0 * np.arange(strata), size)
    return x, 3.0 * x + 1.0, np.repeat(np.arange(strata), size)


def test_a_correlation_no_shuffle_reaches_has_the_floor_p_value():
    x, y, strata = _monotone()
    r = within_strata_correlation(x, y, strata)
    assert r.stratified == pytest.approx(1.0, rel=1e-15) and r.per_stratum == pytest.approx((1.0,) * 5, rel=1e-15)
    assert r.p_value == 1 / 10001  # the default 10,000 shuffles, as the chapter quotes
    assert within_strata_correlation(x, y, strata, permutations=100).p_value == 1 / 101  # 100 is allowed


def _exact_p(x, y, strata):
    """The statistic and its exact permutation p-value, every within-stratum permutation of y
    enumerated: centred ranks per stratum (scipy), sum u w / sqrt(sum u^2 sum w^2)."""
    x, y, strata = (np.asarray(a) for a in (x, y, strata))
    groups = [np.flatnonzero(strata == k) for k in np.unique(strata)]
    cx = [rankdata(x[g]) - (len(g) + 1) / 2 for g in groups]
    cy = [rankdata(y[g]) - (len(g) + 1) / 2 for g in groups]
    norm = math.sqrt(sum(a @ a for a in cx) * sum(b @ b for b in cy))
    observed = sum(a @ b for a, b in zip(cx, cy)) / norm
    null = np.array(
        [sum(a @ b[list(p)] for a, b, p in zip(cx, cy, perms)) / norm for perms in itertools.product(*(itertools.permutations(range(len(g))) for g in groups))]
    )
    return observed, float(np.mean(np.abs(null) >= abs(observed) - 1e-12))


@pytest.mark.parametrize(
    ("x", "y", "strata"),
    [
        # two strata of two: the shuffles give rho 1, 0, 0, -1, so p = 1/2 (the identity counts)
        ([1, 2, 1, 2], [1, 2, 1, 2], [0, 0, 1, 1]),
        # strata of 2, 3 and 4 units (288 permutations), ties in y
        ([3, 1, 2, 5, 4, 9, 7, 8, 6], [1, 2, 3, 1, 3, 2, 4, 1, 2], [0, 0, 0, 1, 1, 2, 2, 2, 2]),
        # string labels, strata interleaved
        ([2, 1, 4, 3, 5, 6, 0.5, 8, 7], [10, 30, 20, 50, 40, 15, 12, 99, 3], ["b", "c", "a", "b", "a", "c", "a", "c", "c"]),
    ],
)
def test_the_permutation_p_value_agrees_with_the_exact_one(x, y, strata):
    observed, exact = _exact_p(x, y, strata)
    r = within_strata_correlation(x, y, strata)
    assert r.stratified == pytest.approx(observed, rel=1e-12, abs=1e-15)
    # (1 + K) / (1 + P) with K ~ Binomial(P, exact): within four standard errors and the +1
    assert abs(r.p_value - exact) <= 4 * math.sqrt(exact * (1 - exact) / 10000) + 1 / 10001


def test_the_default_seed_is_zero_and_the_p_value_is_reproducible():
    x, y, strata = [3, 1, 2, 5, 4, 9, 7, 8, 6], [1, 2, 3, 1, 3, 2, 4, 1, 2], [0, 0, 0, 1, 1, 2, 2, 2, 2]
    default = within_strata_correlation(x, y, strata)
    assert default.p_value == within_strata_correlation(x, y, strata, seed=0).p_value
    assert default.p_value == within_strata_correlation(x, y, strata).p_value
    # the seed matters for these data, so the equalities above say something
    assert within_strata_correlation(x, y, strata, seed=1).p_value != default.p_value


def test_the_answer_does_not_depend_on_how_the_strata_are_interleaved():
    """Only each stratum's own units, in their order, enter: the same units listed stratum
    by stratum give the same p-value (so cells can be pooled in any order)."""
    rng = np.random.default_rng(4)
    strata = rng.integers(0, 3, size=40)
    x = rng.normal(size=40)
    y = x + 4 * rng.normal(size=40)
    grouped = np.argsort(strata, kind="stable")  # by stratum, input order kept within each
    r = within_strata_correlation(x, y, strata, permutations=2000)
    s = within_strata_correlation(x[grouped], y[grouped], strata[grouped], permutations=2000)
    assert 0.001 < r.p_value < 0.999  # not at a floor or a ceiling, where any order agrees
    assert (s.p_value, s.stratified, s.per_stratum) == (r.p_value, r.stratified, r.per_stratum)
    assert s.pooled == pytest.approx(r.pooled, rel=1e-14)


def test_the_effect_size_interval_ends_are_bootstrap_replications():
    """Eight pairs, five later and three earlier, no ties: a resample's prob_later is a count
    of later pairs over 8, and so must be each end of a percentile interval, whatever the seed."""
    a, b = [1.0] * 5 + [0.0] * 3, [0.5] * 8
    for seed in range(30):
        r = tr.paired_comparison(a, b, seed=seed)
        assert r.prob_later == 5 / 8
        ends = 8 * np.array(r.prob_later_ci)
        assert np.array_equal(ends, np.round(ends)), (seed, r.prob_later_ci)
        assert 0 <= ends[0] <= 5 <= ends[1] <= 8, (seed, r.prob_later_ci)


def sign_test_p(k: int, m: int) -> float:
    """Two-sided exact sign test by hand: twice the smaller binomial tail, at most 1."""
    tail = sum(math.comb(m, i) for i in range(min(k, m - k) + 1)) / 2**m
    return min(1.0, 2 * tail)


def test_sign_test_matches_the_binomial_sum_and_drops_ties():
    a = [5, 6, 7, 8, 9, 10, 11, 12, 3, 4, 4, 4]
    b = [1, 1, 1, 1, 1, 1, 1, 1, 9, 4, 4, 4]  # 8 later, 1 earlier, 3 tied
    r = paired_comparison(a, b, resamples=1000)
    assert (r.pairs, r.later, r.earlier, r.tied) == (12, 8, 1, 3)
    assert r.p_value == pytest.approx(sign_test_p(8, 9), rel=1e-12)
    assert r.p_value == pytest.approx(2 * (1 + 9) / 2**9, rel=1e-12)  # 0.0390625
    # the effect size counts ties as half: (8 + 3/2) / 12
    assert r.prob_later == pytest.approx(9.5 / 12, rel=1e-12)
    # swapping the arms mirrors everything
    s = paired_comparison(b, a, resamples=1000)
    assert (s.later, s.earlier, s.tied, s.p_value) == (1, 8, 3, r.p_value)
    assert s.prob_later == pytest.approx(1 - r.prob_later)
    assert s.median_difference == -r.median_difference


def test_all_ties_and_never_reached():
    r = paired_comparison([20, 40, np.inf], [20, 40, np.inf], resamples=200)
    assert (r.later, r.earlier, r.tied, r.p_value, r.median_difference, r.prob_later) == (0, 0, 3, 1.0, 0.0, 0.5)
    assert r.ci == (0.0, 0.0)
    # never reaching (inf) is later than any step; both never is a tie, not a NaN
    r = paired_comparison([np.inf, np.inf, 60, np.inf], [20, 40, 40, np.inf], resamples=500)
    assert (r.later, r.earlier, r.tied) == (3, 0, 1)
    assert r.median_difference == np.inf
    assert not np.isnan([r.median_difference, *r.ci, r.prob_later, *r.prob_later_ci]).any()


def test_bootstrap_interval_covers_a_known_median():
    """Differences ~ N(1, 1): the median difference is 1. Over 300 samples of
    60 pairs the 95% percentile interval must cover it about 95% of the time;
    the binomial standard error of the coverage over 300 trials is 0.013, so
    0.90 to 0.99 allows about four standard errors below (the percentile
    bootstrap of a median is known to undercover slightly) and three above."""
    rng = np.random.default_rng(11)
    hits = 0
    trials = 300
    for t in range(trials):
        d = rng.normal(1.0, 1.0, size=60)
        r = paired_comparison(d, np.zeros(60), resamples=2000, seed=t)
        hits += r.ci[0] <= 1.0 <= r.ci[1]
    assert 0.90 <= hits / trials <= 0.99
    # and a wider level gives a wider interval
    d = rng.normal(1.0, 1.0, size=60)
    narrow, wide = paired_comparison(d, 0 * d, level=0.5), paired_comparison(d, 0 * d, level=0.99)
    assert wide.ci[0] < narrow.ci[0] <= narrow.ci[1] < wide.ci[1]


def test_paired_counts_of_the_stored_adam_sweep_by_hand():
    """The paired comparisons chapter 10 reports for Adam, pooled over the six dot-score
    cells (five seeds each; steps to 80% at each scale's best rate), counted here with
    NumPy comparisons and the exact binomial sum instead of paired_comparison:
    alpha*(n) against 1 is later in 24 pairs, earlier in 4, tied in 2 (p = 1.8e-4);
    2.5 against 1 later in 28, earlier in 2 (p = 8.7e-7), one of its later runs never
    reaching 80% (counted, as it must be, as a later arrival)."""
    cells = [c for c in load_sweep(DATA / "training_adam.json")["cells"] if c["kind"] == "dot"]
    assert len(cells) == 6
    labels = cells[0]["labels"]
    one, star, big = labels.index("1"), labels.index("α*(n)"), labels.index("2.5")
    steps = {k: np.concatenate([c["steps_to_target"][k] for c in cells]) for k in (one, star, big)}
    for arm, expected, p in ((star, (24, 4, 2), 1.8e-4), (big, (28, 2, 0), 8.7e-7)):
        a, b = steps[arm], steps[one]
        counted = (int(np.sum(a > b)), int(np.sum(a < b)), int(np.sum(a == b)))
        assert counted == expected
        r = paired_comparison(a, b, resamples=1000)
        assert (r.later, r.earlier, r.tied) == counted
        assert r.p_value == pytest.approx(sign_test_p(counted[0], counted[0] + counted[1]), rel=1e-12)
        assert r.p_value == pytest.approx(p, rel=0.03)
    never = ~np.isfinite(steps[big])
    assert never.sum() == 1 and np.isfinite(steps[one][never]).all()  # 2.5 never there, 1 there: a later arrival
    assert [(c["n"], c["d"]) for c in cells for _ in range(5)][int(np.flatnonzero(never)[0])] == (256, 32)


def test_within_strata_correlation_removes_a_confounder():
    """y depends on the stratum (a confounder shared with x) and, within the
    stratum, not at all: the pooled rank correlation is strong, the stratified
    one near 0 and not significant. A within-stratum link is found."""
    rng = np.random.default_rng(5)
    strata = np.repeat(np.arange(20), 10)
    level = strata.astype(float)
    x = level + 0.3 * rng.normal(size=200)
    y = -level + 0.3 * rng.normal(size=200)  # independent of x within a stratum
    r = within_strata_correlation(x, y, strata, permutations=2000)
    assert r.pooled < -0.9
    assert abs(r.stratified) < 0.15 and r.p_value > 0.01
    assert (r.units, r.undefined, len(r.per_stratum)) == (200, 0, 20)
    # within-stratum signal of s.d. 0.3 against noise 0.1: a correlation of about -0.95
    linked = within_strata_correlation(x, -level - (x - level) + 0.1 * rng.normal(size=200), strata, permutations=2000)
    assert linked.stratified < -0.8 and linked.p_value < 0.001
    # the stratified estimate with one stratum is Spearman's rho
    from scipy.stats import spearmanr

    one = within_strata_correlation(x[:10], y[:10], np.zeros(10), permutations=200)
    assert one.stratified == pytest.approx(spearmanr(x[:10], y[:10]).statistic, rel=1e-12)
    assert one.median == pytest.approx(one.stratified, rel=1e-12)


def test_within_strata_correlation_with_ties_and_constant_strata():
    x = [1, 2, 3, 1, 2, 3, 5, 5, 5]
    y = [20, 40, np.inf, 40, 40, 40, 1, 2, 3]  # second and third strata: constant y, constant x
    r = within_strata_correlation(x, y, [0, 0, 0, 1, 1, 1, 2, 2, 2], permutations=500)
    assert r.undefined == 2 and r.per_stratum == (1.0,)
    assert r.stratified == pytest.approx(1.0)


def test_grid_edges_and_holm():
    assert at_grid_edge([0, 1, 2, 3], 4).tolist() == [True, False, False, True]
    assert at_grid_edge(np.array([[1, 4], [0, 2]]), 5).tolist() == [[False, True], [True, False]]
    # Holm by hand: sorted 0.01, 0.02, 0.03, 0.5 -> 4 x 0.01, max(3 x 0.02, .), max(2 x 0.03, .), 1 x 0.5
    assert holm([0.03, 0.5, 0.01, 0.02]).tolist() == pytest.approx([0.06, 0.5, 0.04, 0.06])
    assert holm([0.4, 0.3]).tolist() == pytest.approx([0.6, 0.6])
    assert holm([0.9, 0.8, 0.7]).tolist() == [1.0, 1.0, 1.0]


STEPS = hs.lists(hs.sampled_from([20.0, 40.0, 60.0, 80.0, np.inf]), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None)
@given(STEPS, STEPS)
def test_swapping_the_arms_mirrors_the_comparison(a, b):
    m = min(len(a), len(b))
    a, b = np.array(a[:m]), np.array(b[:m])
    r, s = paired_comparison(a, b, resamples=100), paired_comparison(b, a, resamples=100)
    assert (r.later, r.earlier, r.tied) == (s.earlier, s.later, s.tied)
    assert r.later + r.earlier + r.tied == r.pairs == m
    assert r.p_value == s.p_value == pytest.approx(sign_test_p(r.later, r.later + r.earlier) if r.later + r.earlier else 1.0)
    assert r.prob_later + s.prob_later == pytest.approx(1.0)
    assert r.median_difference == -s.median_difference
    assert not np.isnan([r.median_difference, *r.ci, *r.prob_later_ci]).any()


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.floats(0.0, 1.0), min_size=1, max_size=20))
def test_holm_never_lowers_a_p_value_and_keeps_their_order(p):
    adjusted = holm(p)
    p = np.array(p)
    assert np.all(adjusted >= p) and np.all(adjusted <= 1.0)
    assert np.all(np.diff(adjusted[np.argsort(p, kind="stable")]) >= 0)
    assert adjusted.min() == pytest.approx(min(1.0, len(p) * p.min()))


def test_mean_interval_against_the_t_table_and_by_simulation():
    """The 95% interval of six values uses the t quantile with 5 degrees of freedom,
    2.5706 (printed tables); and over 4000 samples of six normal values it covers the
    true mean in 95% of them, within three binomial standard errors."""
    from attnscale.training import mean_interval

    x = np.array([-1.012, -1.336, -1.004, -0.998, -1.012, -1.282])
    mean, low, high = mean_interval(x)
    assert mean == pytest.approx(x.mean(), rel=1e-15)
    assert (high - low) / 2 == pytest.approx(2.5706 * x.std(ddof=1) / np.sqrt(6), rel=1e-4)
    rng = np.random.default_rng(5)
    covered = np.mean([lo <= 0.0 <= hi for lo, hi in (mean_interval(rng.standard_normal(6))[1:] for _ in range(4000))])
    assert abs(covered - 0.95) < 3 * np.sqrt(0.95 * 0.05 / 4000)
    assert mean_interval([1.0, 3.0], level=0.5)[1:] == pytest.approx((1.0, 3.0), rel=1e-12)  # t_1 quantile 0.75 is 1: mean -+ s / sqrt 2


# ---- steps to target, the best rate and the rate exponent by hand ------------------------------------------------------------
def test_steps_to_target_and_best_lr():
    step = np.array([0, 10, 20, 30])
    acc = np.array([[0.1, 0.5, 0.9, 0.95], [0.1, 0.2, 0.3, 0.4]])
    np.testing.assert_array_equal(tr.steps_to_target(step, acc, 0.8), [20, np.inf])
    np.testing.assert_array_equal(tr.steps_to_target(step, acc, 0.1), [0, 0])
    loss = np.ones((2, 3, 2, 4))
    loss[0, 2] = 0.5
    loss[1, 0] = 0.25
    np.testing.assert_array_equal(tr.best_lr_index(loss), [2, 0])


def test_lr_exponent_recovers_a_power_law():
    alphas = np.array([0.25, 1.0, 2.5, 8.0])
    lrs = [0.01, 0.03, 0.1, 0.3, 1.0, 3.0]
    # best rates 1/alpha on a grid that contains them: index of 3, 1, 0.3 (closest to 0.4), 0.1 (closest to 0.125)
    cell = {"alphas": alphas, "lrs": lrs, "best_lr": [5, 4, 3, 2]}
    pooled, per_cell = tr.lr_exponent([cell, {**cell, "best_lr": [4, 4, 4, 4]}])
    assert per_cell[1] == 0.0
    x = np.log(alphas) - np.log(alphas).mean()
    y = np.log([3.0, 1.0, 0.3, 0.1]) - np.log([3.0, 1.0, 0.3, 0.1]).mean()
    assert per_cell[0] == pytest.approx(x @ y / (x @ x))
    assert pooled == pytest.approx(per_cell[0] / 2)


def test_best_rates_reads_either_layout():
    assert tr.best_rates({"lrs": [[0.1, 0.3], [1.0, 3.0]], "best_lr": np.array([1, 0])}).tolist() == [0.3, 1.0]
    assert tr.best_rates({"lrs": [0.1, 0.3, 1.0], "best_lr": np.array([2, 0])}).tolist() == [1.0, 0.1]


