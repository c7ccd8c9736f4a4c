"""The statistics of chapter 10: the paired sign test against the binomial sum,
bootstrap intervals that cover a known median, ties, correlations within
strata, grid edges, Holm's adjustment, bad input, and the independent numbers
of issue 19 recomputed from the stored Adam sweep."""

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from attnscale.training import load_sweep
from attnscale.training.stats import at_grid_edge, final_loss_summary, holm, paired_comparison, within_strata_correlation

DATA = Path(__file__).resolve().parents[1] / "chapters" / "data"


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
    # -inf and +inf as the two middle differences: 0, not NaN
    r = paired_comparison([np.inf, 20], [20, np.inf], resamples=500)
    assert r.median_difference == 0.0 and not np.isnan(r.ci).any()


def test_median_difference_and_reproducible_intervals():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=41), rng.normal(size=41)
    r = paired_comparison(a, b)
    assert r.median_difference == pytest.approx(np.median(a - b), rel=1e-15)
    assert r.ci[0] <= r.median_difference <= r.ci[1]
    assert r.prob_later_ci[0] <= r.prob_later <= r.prob_later_ci[1]
    assert paired_comparison(a, b) == r  # fixed seed: the same interval every time


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
    with pytest.raises(ValueError, match="no stratum"):
        within_strata_correlation([1, 2, 1, 2], [1, 1, 2, 2], [0, 0, 1, 1])


def test_grid_edges_final_losses_and_holm():
    assert at_grid_edge([0, 1, 2, 3], 4).tolist() == [True, False, False, True]
    assert at_grid_edge(np.array([[1, 4], [0, 2]]), 5).tolist() == [[False, True], [True, False]]
    s = final_loss_summary([[0.1, 0.3, 0.2], [1.0, 1.0, 4.0]])
    assert s["mean"].tolist() == pytest.approx([0.2, 2.0]) and s["median"].tolist() == [0.2, 1.0]
    assert s["std"].tolist() == pytest.approx([0.1, math.sqrt(3)])
    assert (s["min"].tolist(), s["max"].tolist()) == ([0.1, 1.0], [0.3, 4.0])
    # Holm by hand: sorted 0.01, 0.02, 0.03, 0.5 -> 4 x 0.01, max(3 x 0.02, .), max(2 x 0.03, .), 1 x 0.5
    assert holm([0.03, 0.5, 0.01, 0.02]).tolist() == pytest.approx([0.06, 0.5, 0.04, 0.06])
    assert holm([0.4, 0.3]).tolist() == pytest.approx([0.6, 0.6])
    assert holm([0.9, 0.8, 0.7]).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    ("call", "arg"),
    [
        (lambda: paired_comparison([1, np.nan], [1, 2]), "a"),
        (lambda: paired_comparison([1, 2], [-np.inf, 2]), "b"),
        (lambda: paired_comparison([1, 2], [1, 2, 3]), "a and b"),
        (lambda: paired_comparison([], []), "a"),
        (lambda: paired_comparison("ab", [1, 2]), "a"),
        (lambda: paired_comparison([1, 2], [1, 2], resamples=10), "resamples"),
        (lambda: paired_comparison([1, 2], [1, 2], seed=-1), "seed"),
        (lambda: paired_comparison([1, 2], [1, 2], level=1.0), "level"),
        (lambda: paired_comparison([1, 2], [1, 2], level=np.nan), "level"),
        (lambda: within_strata_correlation([1, 2, 3], [1, 2, 3], [0, 0]), "strata"),
        (lambda: within_strata_correlation([1, 2, 3], [1, 2, 3], None), "strata"),
        (lambda: within_strata_correlation([1, 2, 3], [1, 2, np.nan], [0, 0, 0]), "y"),
        (lambda: within_strata_correlation([1, 2], [1, 2], [0, 0]), "x and y"),
        (lambda: within_strata_correlation([1, 1, 1], [1, 2, 3], [0, 0, 0]), "x and y"),
        (lambda: within_strata_correlation([1, 2, 3], [1, 2, 3], [0, 0, 0], permutations=5), "permutations"),
        (lambda: at_grid_edge([0, 4], 4), "best_lr"),
        (lambda: at_grid_edge([0.5], 4), "best_lr"),
        (lambda: at_grid_edge([0], 1), "rates"),
        (lambda: final_loss_summary([0.1]), "final_loss"),
        (lambda: final_loss_summary([0.1, np.nan]), "final_loss"),
        (lambda: final_loss_summary([0.1, -0.2]), "final_loss"),
        (lambda: holm([0.1, 1.5]), "p_values"),
        (lambda: holm([np.nan]), "p_values"),
        (lambda: holm([]), "p_values"),
    ],
)
def test_bad_input_is_rejected_by_name(call, arg):
    with pytest.raises((ValueError, TypeError), match=arg):
        call()


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
