"""Tests written to kill the mutants of lengthrules and recommend that survived the rest
of the suite (tools/mutate.sh).

Every expected value is independent of the code under test: the rule's definition
evaluated with :mod:`attnscale.exact` (the quantity a solved rule holds constant), a
closed form (Lambert W from mpmath or scipy, ``ln n`` and ``1/n`` at ``alpha = 0``), a
search written here, or a documented property (the argument named in an error message,
the command line's printed text, the range a solver covers).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import lambertw

from attnscale import exact as E
from attnscale import lengthrules as L
from attnscale import recommend as R
from expect import raises_exactly

NAN = float("nan")
LENGTH_MESSAGE = "n must be > 1 (a softmax over n <= 1 keys has no gradient), got 1.0"


# ---- the closed-form rules ----------------------------------------------------------------


def test_training_length_just_above_one_is_accepted():
    # n_train (and log512's base) must be > 1: 2 is a valid training length, log_2 4 = 2
    assert L.qwen_logn(4.0, n_train=2.0) == pytest.approx(2.0, rel=1e-15)
    assert L.longrope(8.0, n_train=2.0) == pytest.approx(3.0, rel=1e-15)
    assert L.log512(8.0, base=2.0) == pytest.approx(3.0, rel=1e-15)
    assert L.yarn(2.0 * math.exp(10.0), n_train=2.0) == pytest.approx(4.0, rel=1e-14)


def test_rule_parameters_are_named_in_errors():
    for fn in (L.qwen_logn, L.yarn, L.longrope):
        raises_exactly(ValueError, "n_train must be > 1, got 1.0", fn, 1024, n_train=1.0)
        raises_exactly(ValueError, LENGTH_MESSAGE, fn, 1.0)
    raises_exactly(ValueError, "base must be > 1, got 0.5", L.log512, 1024, base=0.5)
    for fn in (L.fixed, L.log512, L.ssmax, L.chiang_cholak):
        raises_exactly(ValueError, LENGTH_MESSAGE, fn, 1.0)


# ---- the solved rules: round trips through the definition --------------------------------


def test_constant_needle_round_trips_across_the_alpha_grid():
    """The target taken from the exact weight at alpha0 gives alpha0 back: just above the
    low end e^-12 (root in the first grid cell), inside the grid, and at its top e^4."""
    n, gap = 2048.0, 5.0
    for alpha0 in (math.exp(-11.9), 0.37, math.exp(4.0)):
        target = float(E.needle_weight(n, alpha0, gap))
        a = L.alpha_constant_needle(n, gap, target=target)
        assert a == pytest.approx(alpha0, rel=1e-9)
        assert float(E.needle_weight(n, a, gap)) == pytest.approx(target, rel=1e-10)


def test_constant_entropy_round_trips_beyond_the_alpha_grid():
    """alpha above the grid's e^4 is found by doubling, up to the supported 1e4; small
    targets (below 1 nat) are reached too. Brent's method runs to xtol = 1e-14 in
    log alpha, and E H is smooth in alpha, so alpha0 comes back to a few 1e-14."""
    n = 4096.0
    seventh = 4.0
    for _ in range(7):
        seventh += math.log(2.0)  # e^4 doubled seven times, about 6989 (< 1e4 / e): a doubling point, no Brent steps
    for alpha0 in (0.37, 100.0, math.exp(seventh)):
        target = float(E.expected_entropy(n, alpha0))
        a = L.alpha_constant_entropy(n, target=target)
        assert a == pytest.approx(alpha0, rel=5e-14)
    a = L.alpha_constant_entropy(n, target=0.5)
    assert float(E.expected_entropy(n, a)) == pytest.approx(0.5, rel=1e-10)
    assert 1.0 < a < math.exp(4.0)


def test_solved_rules_refuse_targets_outside_their_range():
    n = 2048.0
    # a needle weight at or below its value at alpha = e^-12 (1/n as alpha -> 0)
    at_low_end = float(E.needle_weight(n, math.exp(-12.0), 5.0))
    for target in (at_low_end, 0.5 / n):
        raises_exactly(ValueError, f"alpha_constant_needle(n=2048, target={target:.6g}): the target is reached "
                "already at alpha = e^-12 (it lies at or beyond the alpha -> 0 limit)",
                L.alpha_constant_needle, n, 5.0, target=target)
    # an entropy below the value at alpha = 1e4, the largest supported scale
    assert float(E.expected_entropy(4096, 1e4)) > 1e-4
    raises_exactly(ValueError, "alpha_constant_entropy(n=4096, target=0.0001): the target is out of reach for alpha <= 10000",
            L.alpha_constant_entropy, 4096, target=1e-4)


def test_needle_below_the_bulk_only_loses_weight():
    """gap < 0: the weight falls from 1/n as alpha grows, so a target above 1/n exceeds
    the largest value, which is reached at the low end alpha = e^-12."""
    n = 2048.0
    assert float(E.needle_weight(n, math.exp(-12.0), -1.0)) < 1 / n
    raises_exactly(ValueError, f"alpha_constant_needle(n=2048, target={2 / n:.6g}): the target exceeds the largest value, "
            f"reached near alpha = {math.exp(-12.0):.4g}", L.alpha_constant_needle, n, gap=-1.0, target=2 / n)


def test_constant_needle_refines_a_peak_between_grid_points():
    """gap 3.11, n = 2048: the weight peaks near alpha = 56.5 (between e^4 and the first
    doubling) and falls again. A target between the best grid value and the true peak is
    reached on the rising side; one above the peak is refused, naming where it lies."""
    n, gap = 2048.0, 3.11

    def weight(log_alpha):
        return float(E.needle_weight(n, math.exp(log_alpha), gap))

    peak = minimize_scalar(lambda x: -weight(x), bounds=(3.75, 4.5), method="bounded", options={"xatol": 1e-10})
    top = -peak.fun
    sampled = max(weight(x) for x in (3.75, 4.0, 4.0 + math.log(2.0)))
    assert weight(4.0 + math.log(2.0)) < weight(4.0) < top  # it falls after the peak
    target = 0.5 * (sampled + top)
    a = L.alpha_constant_needle(n, gap, target=target)
    assert float(E.needle_weight(n, a, gap)) == pytest.approx(target, rel=1e-10)
    assert math.exp(3.75) < a < math.exp(peak.x)
    above = top * (1 + 1e-6)
    raises_exactly(ValueError, f"alpha_constant_needle(n=2048, target={above:.6g}): the target exceeds the largest value, "
            f"reached near alpha = {math.exp(peak.x):.4g}", L.alpha_constant_needle, n, gap, target=above)


def test_solved_rules_at_the_smallest_lengths():
    """n_train = n = 2: the default target is the value at (2, alpha = 1), so alpha = 1."""
    assert L.alpha_constant_needle(2.0, n_train=2.0) == pytest.approx(1.0, rel=1e-12)
    assert L.alpha_constant_entropy(2.0, n_train=2.0) == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(L.alpha_constant_needle([2.0, 3.0], gap=2.0, n_train=2.0)[0], 1.0, rtol=1e-12)


def test_solved_rules_accept_no_lengths():
    assert L.alpha_constant_needle([]).shape == (0,)
    assert L.alpha_constant_entropy(np.empty((2, 0))).shape == (2, 0)


def test_solved_rules_name_the_bad_argument():
    raises_exactly(ValueError, LENGTH_MESSAGE, L.alpha_constant_needle, 1.0)
    raises_exactly(ValueError, LENGTH_MESSAGE, L.alpha_constant_entropy, 1.0)
    raises_exactly(ValueError, "n must be >= 2 for the needle model, got 1.5", L.alpha_constant_needle, 1.5)
    raises_exactly(ValueError, "gap must be finite, got nan", L.alpha_constant_needle, 2048, gap=NAN)
    raises_exactly(ValueError, "n_train must be > 1, got 1.0", L.alpha_constant_needle, 2048, n_train=1.0)
    raises_exactly(ValueError, "n_train must be > 1, got 1.0", L.alpha_constant_entropy, 2048, n_train=1.0)
    for bad in (1.0, 1.5, 0.0):
        raises_exactly(ValueError, f"target must lie in (0, 1) for a weight, got {bad!r}", L.alpha_constant_needle, 2048, target=bad)
    raises_exactly(TypeError, "target must be a real number, got 'x'", L.alpha_constant_needle, 2048, target="x")
    raises_exactly(ValueError, "target must lie in (0, inf) for an entropy in nats, got -1.0", L.alpha_constant_entropy, 4096, target=-1.0)
    # a root exists iff target < ln n: the boundary itself is refused
    raises_exactly(ValueError, "n must exceed e^target = 4096 (E H < ln n), got 4096.0",
            L.alpha_constant_entropy, 4096, target=math.log(4096))


# ---- rule_alpha and evaluate -------------------------------------------------------------


def test_rule_alpha_passes_n_train_and_gap_on():
    n = np.array([2048.0, 4096.0])
    a = L.rule_alpha("constant_needle", n, n_train=1024, gap=3.0)
    np.testing.assert_allclose(E.needle_weight(n, a, 3.0), float(E.needle_weight(1024, 1.0, 3.0)), rtol=1e-9)
    a = L.rule_alpha("constant_needle", 2048)  # default gap 5, n_train 512
    assert float(E.needle_weight(2048, a, 5.0)) == pytest.approx(float(E.needle_weight(512, 1.0, 5.0)), rel=1e-9)
    a = L.rule_alpha("constant_entropy", n, n_train=1024)
    np.testing.assert_allclose(E.expected_entropy(n, a), float(E.expected_entropy(1024, 1.0)), rtol=1e-9)
    s = n / 1024
    np.testing.assert_allclose(L.rule_alpha("yarn", n, n_train=1024), (0.1 * np.log(s) + 1) ** 2, rtol=1e-15)
    np.testing.assert_allclose(L.rule_alpha("qwen_logn", n, n_train=1024), np.log(n) / math.log(1024), rtol=1e-15)
    np.testing.assert_allclose(L.rule_alpha("log512", n, n_train=1024), np.log(n) / math.log(1024), rtol=1e-15)
    np.testing.assert_allclose(L.rule_alpha("longrope", n, n_train=1024), 1 + np.log(s) / math.log(1024), rtol=1e-15)


def test_rule_alpha_names_the_bad_argument():
    raises_exactly(TypeError, "rule must be a string, got 3", L.rule_alpha, 3, 10)
    raises_exactly(ValueError, "n_train must be > 1, got 1.0", L.rule_alpha, "fixed", 10, n_train=1.0)
    raises_exactly(ValueError, "gap must be finite, got nan", L.rule_alpha, "fixed", 10, gap=NAN)


def test_evaluate_returns_every_statistic_by_name():
    n = np.array([2048.0, 65536.0])
    out = L.evaluate("fixed", n)  # default gap 5
    assert set(out) == {"n", "alpha", "entropy", "entropy_ratio", "half_l1", "needle_weight", "needle_entropy",
                        "needle_entropy_ratio", "needle_half_l1"}
    np.testing.assert_array_equal(out["n"], n)
    np.testing.assert_allclose(out["needle_weight"], E.needle_weight(n, 1.0, 5.0), rtol=1e-15)
    np.testing.assert_allclose(out["needle_entropy_ratio"], E.needle_entropy(n, 1.0, 5.0) / np.log(n), rtol=1e-14)
    np.testing.assert_allclose(out["needle_half_l1"], 1.0 - E.needle_sum_p2(n, 1.0, 5.0), rtol=1e-14)
    out = L.evaluate("constant_needle", 2048, gap=3.0, n_train=1024)
    assert float(out["needle_weight"]) == pytest.approx(float(E.needle_weight(1024, 1.0, 3.0)), rel=1e-9)


def test_evaluate_at_alpha_zero_and_below_one():
    """alpha = 0 is allowed (>= 0): uniform weights, H = ln n, the needle gets 1/n."""
    n = 2048.0
    out = L.evaluate([0.0, 0.5], n, gap=4.0)
    np.testing.assert_array_equal(out["alpha"], [0.0, 0.5])
    assert out["entropy"][0] == pytest.approx(math.log(n), rel=1e-12)
    assert out["entropy_ratio"][0] == pytest.approx(1.0, rel=1e-12)
    assert out["needle_weight"][0] == pytest.approx(1 / n, rel=1e-12)
    assert out["half_l1"][0] == 0.0 and out["needle_half_l1"][0] == 0.0
    assert out["needle_weight"][1] == pytest.approx(float(E.needle_weight(n, 0.5, 4.0)), rel=1e-15)


def test_evaluate_names_the_bad_argument():
    raises_exactly(ValueError, "gap must be finite, got nan", L.evaluate, "fixed", 1024, gap=NAN)
    raises_exactly(ValueError, "n_train must be > 1, got 1.0", L.evaluate, "fixed", 1024, n_train=1.0)
    raises_exactly(ValueError, "rule must be finite, got nan in array of shape (1,) [nan]", L.evaluate, [NAN], 1024)
    raises_exactly(ValueError, "rule (the values of alpha) must be >= 0, got -1.0", L.evaluate, [0.0, 0.5, -1.0], 2048)
    raises_exactly(ValueError, LENGTH_MESSAGE, L.evaluate, [1.0], 1.0)


# ---- recommend: scale_at_share ------------------------------------------------------------


def test_scale_at_share_small_shares_and_the_smallest_cosine_dimension():
    for n, share, d in ((512, 0.1, None), (64, 0.05, None), (512, 0.1, 3), (16, 0.9, 3)):
        a = R.scale_at_share(n, share, d)
        assert float(E.expected_half_l1(n, a, d)) == pytest.approx(share * float(E.near_tie_limit(n, d)), rel=1e-9)
    assert R.scale_at_share(512, 0.1) < 1.0


def test_scale_at_share_near_the_largest_supported_alpha():
    """Roots up to exact's ALPHA_MAX = 1e4 are found. The two alpha0 are the last points
    of the doubling bracket (4 * 2^11 for dot scores, 4 sqrt(5) * 2^10 for cosine, d = 5),
    where the share is met exactly, so no Brent steps at these costly scales are needed."""
    for n, d, alpha0 in ((512.0, None, 4.0 * 2**11), (64.0, 5, 4.0 * math.sqrt(5) * 2**10)):
        assert alpha0 < E.ALPHA_MAX
        share = float(E.expected_half_l1(n, alpha0, d)) / float(E.near_tie_limit(n, d))
        assert 0.999 < share < 1
        assert R.scale_at_share(n, share, d) == pytest.approx(alpha0, rel=1e-12)


def test_scale_at_share_names_the_bad_argument():
    raises_exactly(ValueError, LENGTH_MESSAGE, R.scale_at_share, 1, 0.9)
    raises_exactly(TypeError, "share must be a real number, got 'x'", R.scale_at_share, 512, "x")
    raises_exactly(ValueError, "share must lie strictly between 0 and 1, got 1.0", R.scale_at_share, 512, 1.0)
    raises_exactly(ValueError, "d must be an integer >= 3, got 2", R.scale_at_share, 512, 0.9, 2)


# ---- recommend: the decoder ---------------------------------------------------------------


def _decoder_reference(T):
    """The mean share over positions 2..T from scipy's Lambert W (alpha*(t) =
    sqrt(W0(t sqrt(e)/2) - 1/2)), and its maximiser by a tight bounded search."""
    t = np.arange(2, T + 1, dtype=float)
    a_t = np.sqrt(lambertw(t * math.sqrt(math.e) / 2).real - 0.5)
    best = a_t * -np.expm1(a_t**2 - np.log(t))

    def mean(a):
        return float(np.mean(np.maximum(a * -np.expm1(a * a - np.log(t)), 0.0) / best))

    r = minimize_scalar(lambda a: -mean(a), bounds=(0.3, 3.5), method="bounded", options={"xatol": 1e-12})
    return r.x, mean


@pytest.mark.parametrize("T", [16, 256])
def test_decoder_best_scale_to_its_stated_tolerance(T):
    """Brent's method to 1e-8 (docstring): against a reference maximiser found to 1e-12."""
    x, mean = _decoder_reference(T)
    alpha, share = R.decoder_best_scale(T)
    assert abs(alpha - x) < 5e-8
    assert share == pytest.approx(mean(x), rel=1e-12)


def test_decoder_at_the_longest_length():
    """T = DECODER_MAX = 1e6 is accepted; the best scale there lies above 3, inside [0.2, 4]."""
    T = R.DECODER_MAX
    share = R.decoder_share(1.0, T)
    assert share.shape == (T - 1,)
    alpha, mean_share = R.decoder_best_scale(T)
    x, mean = _decoder_reference(T)
    assert 3.0 < alpha < 4.0 and abs(alpha - x) < 5e-8
    assert mean_share == pytest.approx(mean(alpha), rel=1e-12)
    assert float(share.mean()) == pytest.approx(mean(1.0), rel=1e-12)


def test_decoder_share_at_the_shortest_length():
    a2 = math.sqrt(lambertw(math.sqrt(math.e)).real - 0.5)  # alpha*(2)
    np.testing.assert_allclose(R.decoder_share(a2, 2), [1.0], rtol=1e-12)


def test_decoder_names_the_bad_argument():
    raises_exactly(ValueError, "length must be an integer >= 2, got 1", R.decoder_best_scale, 1)
    raises_exactly(ValueError, "length must be an integer >= 2, got 1", R.decoder_share, 1.0, 1)
    raises_exactly(ValueError, "length must be <= 1000000, got 1000001", R.decoder_share, 1.0, 10**6 + 1)
    raises_exactly(ValueError, "alpha must be > 0, got 0.0", R.decoder_share, 0.0, 16)


# ---- recommend: the scales ----------------------------------------------------------------

CHAPTERS = {"usual": "ch-dot-products", "mean_field": "ch-gaussian", "freezing": "ch-beyond-mean-field",
            "ninety": "ch-beyond-mean-field"}


def test_recommend_names_the_chapter_of_each_scale():
    assert [(r.name, r.chapter) for r in R.recommend(512, 64)] == list(CHAPTERS.items())
    assert [(r.name, r.chapter) for r in R.recommend(512, 128, "cosine")] == [("mean_field", "ch-cosine"),
                                                                              ("ninety", "ch-cosine")]


@pytest.mark.parametrize("n, d", [(16.0, 3), (512.0, 128)])
def test_recommend_cosine_gradient_and_share(n, d):
    limit = float(E.near_tie_limit(n, d))
    for r in R.recommend(n, d, "cosine"):
        assert r.gradient == pytest.approx(float(E.expected_half_l1(n, r.alpha, d)), rel=1e-14)
        assert r.share == pytest.approx(r.gradient / limit, rel=1e-14)
        assert r.factor == r.alpha
    assert R.recommend(n, d, "cosine")[1].share == pytest.approx(0.9, rel=1e-9)


@pytest.mark.parametrize("d", [1, 2])
def test_recommend_small_dot_dimensions(d):
    """dot scores accept any d >= 1: the factor on q.k is alpha / sqrt(d)."""
    rows = {r.name: r for r in R.recommend(64, d)}
    with mp.workdps(30):
        lambert = float(mp.sqrt(mp.lambertw(mp.sqrt(mp.e) * 64 / 2) - mp.mpf(1) / 2))
    assert rows["mean_field"].alpha == pytest.approx(lambert, rel=1e-13)
    assert rows["mean_field"].factor == pytest.approx(lambert / math.sqrt(d), rel=1e-13)
    assert rows["usual"].factor == pytest.approx(1 / math.sqrt(d), rel=1e-15)


def test_recommend_names_the_bad_argument():
    raises_exactly(TypeError, "scores must be a string, got 3", R.recommend, 512, 64, 3)
    raises_exactly(ValueError, "d must be an integer >= 1, got 0", R.recommend, 512, 0)
    for d in (0, 1, 2):  # cosine scores need d >= 3, checked before any computation
        raises_exactly(ValueError, f"d must be an integer >= 3, got {d}", R.recommend, 512, d, "cosine")
    raises_exactly(TypeError, "d must be an integer >= 3, got 2.5", R.recommend, 512, 2.5, "cosine")


# ---- the command line ---------------------------------------------------------------------

DOT_512_64 = """\
n = 512 keys, d = 64, dot-product scores q.k/sqrt(d); model: independent scores (standard normal)
                                      alpha        x q.k  E[alpha(1 - sum p^2)]  of limit  derived in
usual scale (1/sqrt(d))               1.000        0.125                  0.995     32.7%  ch-dot-products
mean-field gradient optimum           2.008        0.251                  1.914     62.9%  ch-gaussian
freezing point sqrt(2 log n)          3.532       0.4415                  2.653     87.1%  ch-beyond-mean-field
90% of the exact gradient limit       3.936        0.492                  2.740     90.0%  ch-beyond-mean-field
The exact expected gradient rises with alpha to a limit and has no maximiser; larger
scales saturate more rows. In the book's training experiment (ch-training), with the
learning rate tuned per scale, scales above the usual one did not reach the target
sooner.
Mean field (ch-beyond-mean-field): at its optimum alpha = 2.008, e^(alpha^2)/n = 0.1103
against the exact E sum p^2 = 0.04712, a ratio of 2.34, so the mean field is not valid
there (a ratio between 1/1.1 and 1.1 counts as valid). At this n it stays within a
factor 1.1 up to alpha = 1.381.
Length scaling: n does not exceed the training length n0 = 512, so no rule applies (set
n_train, --n-train).
"""

COSINE_4096_128 = """\
n = 4096 keys, d = 128, cosine scores cos(q, k); model: independent scores (uniform directions in R^128)
                                      alpha  x cos(q, k)  E[alpha(1 - sum p^2)]  of limit  derived in
mean-field gradient optimum          29.700         29.7                 28.698     65.7%  ch-cosine
90% of the exact gradient limit      52.900         52.9                 39.297     90.0%  ch-cosine
The exact expected gradient rises with alpha to a limit and has no maximiser; larger
scales saturate more rows. In the book's training experiment (ch-training), with the
learning rate tuned per scale, scales above the usual one did not reach the target
sooner.
Mean field (ch-beyond-mean-field): at its optimum alpha = 29.700, the mean field's sum
p^2 = 0.08902 against the exact E sum p^2 = 0.03373, a ratio of 2.64, so the mean field
is not valid there (a ratio between 1/1.1 and 1.1 counts as valid).
Length scaling: chapter 8's rules are derived for normal scores; the book does not
compute them for cosine scores.
"""


def test_command_line_prints_the_dot_table(capsys):
    # the numbers: alpha* from Lambert W, sqrt(2 ln 512) = 3.532, factors alpha / 8
    with mp.workdps(30):
        a = mp.sqrt(mp.lambertw(mp.sqrt(mp.e) * 256) - mp.mpf(1) / 2)
        assert f"{float(a):.3f}" == "2.008" and f"{float(mp.exp(a * a) / 512):.4g}" == "0.1103"
    assert f"{math.sqrt(2 * math.log(512)):.3f}" == "3.532" and f"{math.sqrt(2 * math.log(512)) / 8:.4g}" == "0.4415"
    for argv in (["recommend", "--n", "512", "--d", "64"], ["recommend", "--n", "512", "--d", "64", "--scores", "dot"]):
        assert R.main(argv) == 0
        assert capsys.readouterr().out.split("The scales behind it:\n", 1)[1] == DOT_512_64
    assert R.report(512, 64).split("The scales behind it:\n", 1)[1] + "\n" == DOT_512_64


def test_command_line_prints_the_cosine_table(capsys):
    assert R.main(["recommend", "--n", "4096", "--d", "128", "--scores", "cosine"]) == 0
    assert capsys.readouterr().out.split("The scales behind it:\n", 1)[1] == COSINE_4096_128
    assert R.report(4096, 128, "cosine").split("The scales behind it:\n", 1)[1] + "\n" == COSINE_4096_128


def _cli_error(capsys, argv):
    with pytest.raises(SystemExit) as err:
        R.main(argv)
    assert err.value.code == 2
    return capsys.readouterr().err.strip().splitlines()


def test_command_line_errors(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # argparse wraps its usage line to the terminal's width
    assert _cli_error(capsys, []) == ["usage: python -m attnscale [-h] {recommend} ...",
                                      "python -m attnscale: error: the following arguments are required: command"]
    usage = ["usage: python -m attnscale recommend [-h] --n N --d D [--scores {dot,cosine}]",
             "                                     [--n-train N_TRAIN]",
             "                                     [--alpha-train ALPHA_TRAIN]"]
    assert _cli_error(capsys, ["recommend", "--d", "64"]) == [
        *usage, "python -m attnscale recommend: error: the following arguments are required: --n"]
    assert _cli_error(capsys, ["recommend", "--n", "512"]) == [
        *usage, "python -m attnscale recommend: error: the following arguments are required: --d"]
    lines = _cli_error(capsys, ["recommend", "--n", "512", "--d", "64", "--scores", "bilinear"])
    assert lines[:3] == usage
    assert lines[3].startswith("python -m attnscale recommend: error: argument --scores: invalid choice: 'bilinear'")
    # errors found by the library are reported by the top-level parser
    assert _cli_error(capsys, ["recommend", "--n", "512", "--d", "2", "--scores", "cosine"]) == [
        "usage: python -m attnscale [-h] {recommend} ...", "python -m attnscale: error: d must be an integer >= 3, got 2"]


def _help(capsys, argv):
    """The help text with its whitespace (line breaks, alignment) collapsed to single spaces."""
    with pytest.raises(SystemExit) as err:
        R.main(argv)
    assert err.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_command_line_help(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    text = _help(capsys, ["--help"])
    assert text.startswith("usage: python -m attnscale [-h] {recommend} ... The Scale of Attention: the book's answers. ")
    assert " recommend the scales the book derives for n keys and head dimension d " in text
    text = _help(capsys, ["recommend", "--help"])
    assert text.startswith("usage: python -m attnscale recommend [-h] --n N --d D [--scores {dot,cosine}] ")
    assert " --n N number of keys in a row --d D head dimension --scores {dot,cosine} dot-product (default) or cosine scores" in text
