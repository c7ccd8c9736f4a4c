"""attnscale.lengthrules: each rule against its formula worked by hand, the exact
statistics against Monte Carlo, the solved rules against attnscale.exact, and the
needle weights quoted in issue 18 (an independent measurement).
"""

from __future__ import annotations

import math

from scipy.optimize import minimize_scalar
import numpy as np
import pytest

from attnscale import exact, exact as E, lengthrules as L, recommend as R
from exact_reference import row_stats
from expect import refuses


N = np.array([512, 2048, 16384, 2**17, 2**20], dtype=float)


def test_fixed_is_one():
    assert L.fixed(2048) == 1.0
    np.testing.assert_array_equal(L.fixed(N), np.ones(5))


def test_log512_by_hand():
    # log_512 n for powers of two: log2(n) / 9
    assert L.log512(4096) == pytest.approx(12 / 9, rel=1e-15)
    assert L.log512(512) == pytest.approx(1.0, rel=1e-15)
    assert L.log512(2**20) == pytest.approx(20 / 9, rel=1e-15)
    assert L.log512(256) == pytest.approx(8 / 9, rel=1e-15)  # below 512 the note lowers the scale
    assert L.log512(1000, base=10) == pytest.approx(3.0, rel=1e-15)


def test_qwen_logn_by_hand():
    # the released code: log_{seq_length} i if i > seq_length else 1
    assert L.qwen_logn(256) == 1.0
    assert L.qwen_logn(512) == pytest.approx(1.0, rel=1e-15)
    assert L.qwen_logn(2**18) == pytest.approx(2.0, rel=1e-15)
    assert L.qwen_logn(32768, n_train=2048) == pytest.approx(math.log(32768) / math.log(2048), rel=1e-15)


def test_yarn_by_hand():
    # 1/t = (0.1 ln s + 1)^2, s = n / n_train; s = e^5 gives (1.5)^2
    assert L.yarn(512 * math.exp(5.0)) == pytest.approx(2.25, rel=1e-14)
    assert L.yarn(16384) == pytest.approx((0.1 * math.log(32) + 1) ** 2, rel=1e-15)
    assert L.yarn(16384) == pytest.approx(1.81326, abs=5e-6)  # (1.346574)^2, by hand
    assert L.yarn(300) == 1.0


def test_ssmax_by_hand():
    assert L.ssmax(math.exp(10.0)) == pytest.approx(4.3, rel=1e-14)
    assert L.ssmax(math.exp(2.0), s=1.5) == pytest.approx(3.0, rel=1e-14)


def test_longrope_by_hand_and_phi3_numbers():
    # Phi-3-mini-128k: original 4096, extended 131072 (s = 32): the cos/sin factor is
    # sqrt(1 + ln 32 / ln 4096) = sqrt(1 + 5/12), so the logits get 17/12
    assert L.longrope(131072, n_train=4096) == pytest.approx(17 / 12, rel=1e-15)
    assert math.sqrt(L.longrope(131072, n_train=4096)) == pytest.approx(1.19024, abs=5e-6)
    assert L.longrope(100) == 1.0
    # with s = n / n_train it coincides with Qwen's LogN for n >= n_train
    np.testing.assert_allclose(L.longrope(N), L.qwen_logn(N), rtol=1e-15)


def test_chiang_cholak_by_hand():
    assert L.chiang_cholak(math.exp(3.0)) == pytest.approx(3.0, rel=1e-15)


def test_rule_alpha_dispatches_to_each_rule():
    funcs = {"fixed": L.fixed, "log512": L.log512, "qwen_logn": L.qwen_logn, "yarn": L.yarn, "longrope": L.longrope}
    for name, fn in funcs.items():
        np.testing.assert_array_equal(L.rule_alpha(name, N), fn(N))
    # the rules applied in training too count relative to their factor at n_train
    for name, fn in {"ssmax": L.ssmax, "chiang_cholak": L.chiang_cholak}.items():
        np.testing.assert_array_equal(L.rule_alpha(name, N), fn(N) / fn(512.0))
        np.testing.assert_array_equal(L.rule_alpha(name, N, n_train=1024), fn(N) / fn(1024.0))


def test_rules_relative_to_training():
    """The book's one convention: every rule's factor is 1 at the training length, and the
    rules that apply ln n in training too (Scalable-Softmax, Chiang and Cholak) are the log
    ratio ln n / ln n_train, whatever Scalable-Softmax's s; so are Su's, Qwen's and
    LongRoPE's above n_train. Below it Su's rule and the log ratio lower the scale, Qwen's
    and LongRoPE's stay at 1."""
    for nt in (512.0, 4096.0):
        for name in L.RULES:
            assert L.rule_alpha(name, nt, n_train=nt) == pytest.approx(1.0, rel=1e-9)
        above = nt * np.array([2.0, 64.0, 2048.0])
        ratio = np.log(above) / math.log(nt)
        for name in ("log512", "qwen_logn", "longrope", "ssmax", "chiang_cholak"):
            np.testing.assert_allclose(L.rule_alpha(name, above, n_train=nt), ratio, rtol=1e-14)
        below = nt / 4
        assert L.rule_alpha("ssmax", below, n_train=nt) == pytest.approx(math.log(below) / math.log(nt), rel=1e-14)
        assert L.rule_alpha("chiang_cholak", below, n_train=nt) == pytest.approx(math.log(below) / math.log(nt), rel=1e-14)
        assert L.rule_alpha("qwen_logn", below, n_train=nt) == 1.0 and L.rule_alpha("longrope", below, n_train=nt) == 1.0
    # Scalable-Softmax's s cancels: any s gives the same relative factor
    np.testing.assert_allclose(L.ssmax(N, s=1.7) / L.ssmax(512.0, s=1.7), L.rule_alpha("ssmax", N), rtol=1e-14)
    # evaluate takes the relative factor too: at n_train the row is the fixed scale's
    for name in ("ssmax", "chiang_cholak"):
        assert L.evaluate(name, 512.0)["alpha"] == pytest.approx(1.0, rel=1e-15)


# n - 1 standard normal scores plus a needle at 5, expected needle weight, as quoted
ISSUE_18 = {
    "fixed": {2048: (0.042, 3), 16384: (0.0055, 4), 2**20: (0.0001, 4)},
    "log512": {2048: (0.095, 3), 16384: (0.042, 3), 2**20: (0.0054, 4)},
}


@pytest.mark.parametrize("rule", sorted(ISSUE_18))
def test_issue_18_needle_weights(rule):
    for n, (quoted, digits) in ISSUE_18[rule].items():
        value = float(L.evaluate(rule, n, gap=5.0)["needle_weight"])
        assert round(value, digits) == quoted, (rule, n, value, quoted)


def _within(samples, value, k=3.0):
    mean = samples.mean()
    se = samples.std(ddof=1) / math.sqrt(samples.size)
    assert abs(mean - value) < k * se, (mean, value, se)
    return se


def test_evaluate_against_monte_carlo():
    n, rows, gap = 2048, 3000, 5.0
    rng = np.random.default_rng(20261124)
    out = L.evaluate("log512", n, gap=gap)
    a = float(out["alpha"])
    assert a == pytest.approx(11 / 9, rel=1e-15)
    # model (a): n i.i.d. normal scores
    _, p2, h = row_stats(a * rng.standard_normal((rows, n)))
    se = _within(h, float(out["entropy"]))
    assert se < 2e-3
    _within(a * (1 - p2), float(out["half_l1"]))
    _within(h / math.log(n), float(out["entropy_ratio"]))
    # model (b): n - 1 normal scores and a needle at gap (last column)
    s = rng.standard_normal((rows, n))
    s[:, -1] = gap
    p, p2, h = row_stats(a * s)
    se = _within(p[:, -1], float(out["needle_weight"]))
    assert se < 1e-3
    _within(h, float(out["needle_entropy"]))
    _within(a * (1 - p2), float(out["needle_half_l1"]))


def test_constant_needle_keeps_the_exact_weight():
    target = float(E.needle_weight(512, 1.0, 5.0))
    alpha = L.alpha_constant_needle(N, gap=5.0)
    assert alpha[0] == 1.0
    np.testing.assert_allclose(E.needle_weight(N, alpha, 5.0), target, rtol=1e-8)
    assert np.all(np.diff(alpha) > 0)
    # gap 3 at n = 65536: the weight rises from 1/n to a peak of 0.00142 near alpha = 3
    # and falls again; the rule takes the rising branch
    a = L.alpha_constant_needle(65536, gap=3.0, target=0.001)
    assert float(E.needle_weight(65536, a, 3.0)) == pytest.approx(0.001, rel=1e-8)
    assert 1.0 < a < 3.0


def test_constant_entropy_keeps_the_exact_entropy():
    target = float(E.expected_entropy(512, 1.0))
    assert target == pytest.approx(5.7419, abs=1e-4)
    alpha = L.alpha_constant_entropy(N)
    np.testing.assert_allclose(E.expected_entropy(N, alpha), target, rtol=1e-8)
    assert np.all(np.diff(alpha) > 0)
    a = L.alpha_constant_entropy(4096, target=3.0)
    assert float(E.expected_entropy(4096, a)) == pytest.approx(3.0, rel=1e-8)


def test_monotone_in_n():
    fixed = L.evaluate("fixed", N)
    assert np.all(np.diff(fixed["needle_weight"]) < 0)  # the needle fades at a fixed scale
    assert np.all(np.diff(fixed["entropy"]) > 0)
    note = L.evaluate("log512", N)
    assert np.all(np.diff(note["needle_weight"]) < 0)  # ... and under the note's rule too
    assert np.all(np.diff(note["entropy"]) > 0)  # the note's rule does not hold H constant
    assert np.all(np.diff(note["entropy_ratio"]) < 0)
    for name in ("yarn", "ssmax", "chiang_cholak"):
        assert np.all(np.diff(L.rule_alpha(name, N)) > 0)


def _record_scales(monkeypatch, name):
    """Wrap ``attnscale.exact.<name>`` so that the largest ``alpha`` of every call is
    kept; the values returned are the real function's."""
    real = getattr(E, name)
    scales = []

    def wrapper(n, alpha, *args, **kwargs):
        scales.append(float(np.max(alpha)))
        return real(n, alpha, *args, **kwargs)

    monkeypatch.setattr(E, name, wrapper)
    return scales


def _needle_peak(n, gap, lo, hi, rounds=7, points=41):
    """``(log alpha, weight)`` at the needle weight's largest value in ``[lo, hi]`` (in
    ``log alpha``), by scans that each narrow the interval tenfold round the best point."""
    for _ in range(rounds):
        x = np.linspace(lo, hi, points)
        w = np.asarray(E.needle_weight(n, np.exp(x), gap))
        k = int(np.argmax(w))
        step = x[1] - x[0]
        lo, hi = x[k] - 2 * step, x[k] + 2 * step
    return float(x[k]), float(w[k])


@pytest.mark.parametrize("where", ["at the grid's top", "inside the grid"])
def test_solved_rule_with_its_root_on_the_grid_does_not_search_beyond_it(monkeypatch, where):
    """E H falls with alpha, so the entropy rule's f rises. A target met at alpha = e^4 (the
    grid's last point) or between grid points is found without evaluating E H beyond e^4;
    the first is returned as e^4 itself (an exact zero of f at the bracket's end)."""
    n = 4096.0
    top = math.exp(4.0)
    target = float(E.expected_entropy(n, top)) if where == "at the grid's top" else 0.2
    assert float(E.expected_entropy(n, top)) <= target  # the root lies on the grid
    scales = _record_scales(monkeypatch, "expected_entropy")
    a = L.alpha_constant_entropy(n, target=target)
    assert max(scales) == top
    if where == "at the grid's top":
        assert a == top
    else:
        assert 1.0 < a < top
        assert float(E.expected_entropy(n, a)) == pytest.approx(target, rel=1e-10)


@pytest.mark.parametrize("gap", [3.11, 3.112])
def test_constant_needle_stops_doubling_once_the_weight_falls(monkeypatch, gap):
    """n = 2048, gap 3.11 or 3.112: the weight peaks between e^4 and 2 e^4 and is lower
    at 2 e^4 than at e^4 (gap 3.112: lower than at e^4 but higher than at e^3.75). The
    search doubles once, to 2 e^4, sees the fall and refines the peak below it: no scale
    above 2 e^4 is evaluated. A target of 0.2 lies above the peak and is refused."""
    n = 2048.0
    w = [float(E.needle_weight(n, a, gap)) for a in (math.exp(3.75), math.exp(4.0), 2 * math.exp(4.0))]
    assert w[2] < w[1] and (w[0] < w[2] if gap == 3.112 else w[2] < w[0])
    scales = _record_scales(monkeypatch, "needle_weight")
    with pytest.raises(ValueError, match="the target exceeds the largest value, reached near alpha = "):
        L.alpha_constant_needle(n, gap, target=0.2)
    assert max(scales) == pytest.approx(2 * math.exp(4.0), rel=1e-12)


def test_constant_needle_reaches_a_target_just_below_the_peak():
    """n = 65536, gap 3: the weight peaks near alpha = 3.13 (log alpha 1.1407, between the
    grid points 1.0 and 1.25) at 0.0014243. A target 1e-12 (relative) below the peak is in
    reach, so it is met on the rising side; one 1e-9 above it is refused."""
    n, gap = 65536.0, 3.0
    x, top = _needle_peak(n, gap, 0.5, 2.0)
    assert x == pytest.approx(1.1407, abs=1e-4) and top == pytest.approx(0.0014243, rel=1e-4)
    target = top * (1 - 1e-12)
    a = L.alpha_constant_needle(n, gap, target=target)
    assert float(E.needle_weight(n, a, gap)) == pytest.approx(target, rel=1e-10)
    assert math.exp(1.0) < a <= math.exp(x) * (1 + 1e-6)
    with pytest.raises(ValueError, match="exceeds the largest value"):
        L.alpha_constant_needle(n, gap, target=top * (1 + 1e-9))


@pytest.mark.parametrize("n_train", [1.5, 3.0, 7.0, 512.0])
def test_qwen_logn_at_the_largest_length(n_train):
    """n may be any finite real > 1, up to the largest float; log_{n_train} n is finite
    there (ln n = 709.78). LongRoPE gives the same numbers for n >= n_train."""
    n = float(np.finfo(float).max)
    expected = math.log(n) / math.log(n_train)
    assert L.qwen_logn(n, n_train=n_train) == pytest.approx(expected, rel=1e-14)
    assert L.longrope(n, n_train=n_train) == pytest.approx(expected, rel=1e-14)


def test_training_length_just_above_one_is_accepted():
    # n_train (and log512's base) must be > 1: 2 is a valid training length, log_2 4 = 2
    assert L.qwen_logn(4.0, n_train=2.0) == pytest.approx(2.0, rel=1e-15)
    assert L.longrope(8.0, n_train=2.0) == pytest.approx(3.0, rel=1e-15)
    assert L.log512(8.0, base=2.0) == pytest.approx(3.0, rel=1e-15)
    assert L.yarn(2.0 * math.exp(10.0), n_train=2.0) == pytest.approx(4.0, rel=1e-14)


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


@pytest.mark.parametrize("target", [None, 0.5, "first cell", "beyond the grid"])
def test_constant_entropy_for_one_length_equals_its_value_among_many(target):
    """A few lengths bisect the grid on their own, many share one evaluation of it; E H falls
    strictly, so both find the same first sign change and return the same scale, bit for bit:
    for the default target, a small one, a root in the grid's first cell and one found by
    doubling beyond it."""
    lengths = np.array([3000.0, 4096.0, 1e9, 600.0, 1e12, 900.0])  # six: the fewest that share the grid
    if target == "first cell":
        target = float(E.expected_entropy(600.0, math.exp(-11.5)))
    elif target == "beyond the grid":
        target = float(E.expected_entropy(3000.0, 300.0))
    every = L.alpha_constant_entropy(lengths, target=target)
    for m, a in zip(lengths, every):
        assert L.alpha_constant_entropy(m, target=target) == a, m


@pytest.mark.parametrize("table_sign", [1e-300, -1e-300])
def test_a_solved_rule_follows_its_function_where_the_grid_table_differs_in_the_last_bits(table_sign):
    """A table over many lengths sums in another order than one length's call, so at a grid
    point where f is within rounding of 0 the two may differ in sign. The root is that of f
    itself: f(la) = la - (g + 1e-12) (root just above the grid point g) with a table claiming
    f(g) >= 0, and f(la) = la - g (root on it) with a table claiming f(g) < 0."""
    k = 20
    g = float(L.LOG_ALPHA_GRID[k])
    root = g + 1e-12 if table_sign > 0 else g
    table = L.LOG_ALPHA_GRID - root
    table[k] = table_sign
    a = L._solve(lambda la: la - root, table, "test")
    assert math.log(a) == pytest.approx(root, abs=1e-13)


def test_solved_rules_refuse_targets_outside_their_range():
    n = 2048.0
    # a needle weight at or below its value at alpha = e^-12 (1/n as alpha -> 0)
    at_low_end = float(E.needle_weight(n, math.exp(-12.0), 5.0))
    for target in (at_low_end, 0.5 / n):
        refuses(ValueError, 'alpha_constant_needle(n=2048',
                L.alpha_constant_needle, n, 5.0, target=target)
    # an entropy below the value at alpha = 1e4, the largest supported scale
    assert float(E.expected_entropy(4096, 1e4)) > 1e-4
    refuses(ValueError, 'alpha_constant_entropy(n=4096',
            L.alpha_constant_entropy, 4096, target=1e-4)


def test_needle_below_the_bulk_only_loses_weight():
    """gap < 0: the weight falls from 1/n as alpha grows, so a target above 1/n exceeds
    the largest value, which is reached at the low end alpha = e^-12."""
    n = 2048.0
    assert float(E.needle_weight(n, math.exp(-12.0), -1.0)) < 1 / n
    refuses(ValueError, 'alpha_constant_needle(n=2048', L.alpha_constant_needle, n, gap=-1.0, target=2 / n)


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
    refuses(ValueError, 'alpha_constant_needle(n=2048', L.alpha_constant_needle, n, gap, target=above)


def test_solved_rules_at_the_smallest_lengths():
    """n_train = n = 2: the default target is the value at (2, alpha = 1), so alpha = 1."""
    assert L.alpha_constant_needle(2.0, n_train=2.0) == pytest.approx(1.0, rel=1e-12)
    assert L.alpha_constant_entropy(2.0, n_train=2.0) == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(L.alpha_constant_needle([2.0, 3.0], gap=2.0, n_train=2.0)[0], 1.0, rtol=1e-12)


def test_solved_rules_accept_no_lengths():
    assert L.alpha_constant_needle([]).shape == (0,)
    assert L.alpha_constant_entropy(np.empty((2, 0))).shape == (2, 0)


def test_refusals_at_the_edges_the_refusal_table_does_not_try():
    """A weight target of exactly 1; an entropy target of exactly ln n (a root exists iff
    target < ln n); a negative scale after valid ones; n = 1 with scales as the rule."""
    refuses(ValueError, 'target', L.alpha_constant_needle, 2048, target=1.0)
    refuses(ValueError, 'n', L.alpha_constant_entropy, 4096, target=math.log(4096))
    refuses(ValueError, 'rule', L.evaluate, [0.0, 0.5, -1.0], 2048)
    refuses(ValueError, 'n', L.evaluate, [1.0], 1.0)


def test_rule_alpha_passes_n_train_and_gap_on():
    n = np.array([2048.0, 4096.0])
    a = L.rule_alpha("constant_needle", n, n_train=1024, gap=3.0)
    np.testing.assert_allclose(E.needle_weight(n, a, 3.0), float(E.needle_weight(1024, 1.0, 3.0)), rtol=1e-9)
    a = L.rule_alpha("constant_needle", 2048)  # default gap 5, n_train 512
    assert float(E.needle_weight(2048, a, 5.0)) == pytest.approx(float(E.needle_weight(512, 1.0, 5.0)), rel=1e-9)
    a = L.rule_alpha("constant_entropy", n, n_train=1024)
    np.testing.assert_allclose(E.expected_entropy(n, a), float(E.expected_entropy(1024, 1.0)), rtol=1e-9)
    np.testing.assert_allclose(L.rule_alpha("yarn", n, n_train=1024), (0.1 * np.log(n / 1024) + 1) ** 2, rtol=1e-15)


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
    """Scales given as the rule pair with the lengths. alpha = 0 is allowed (>= 0): uniform
    weights, H = ln n, the needle gets 1/n."""
    n = np.array([2048.0, 4096.0])
    out = L.evaluate([0.0, 0.5], n, gap=4.0)
    np.testing.assert_array_equal(out["alpha"], [0.0, 0.5])
    assert out["entropy"][0] == pytest.approx(math.log(n[0]), rel=1e-12)
    assert out["entropy_ratio"][0] == pytest.approx(1.0, rel=1e-12)
    assert out["needle_weight"][0] == pytest.approx(1 / n[0], rel=1e-12)
    assert out["half_l1"][0] == 0.0 and out["needle_half_l1"][0] == 0.0
    assert out["needle_weight"][1] == pytest.approx(float(E.needle_weight(n[1], 0.5, 4.0)), rel=1e-15)


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
    assert text.endswith(" --n-train N_TRAIN training length for the length rules (default 512)"
                         " --alpha-train ALPHA_TRAIN scale used in training, as a multiple of 1/sqrt(d) (default 1)")


def test_no_scale_keeps_a_key_at_score_four_or_less_at_two_to_the_twenty():
    """Trained on 512 keys at alpha = 1 and run on 2^20: no scale reaches the training weight
    of a key at score 3 or 4, while one at score 5 can be kept."""
    from attnscale.lengthrules import alpha_constant_needle

    grid = np.exp(np.linspace(np.log(0.05), np.log(200.0), 600))
    for gap, reachable in ((3.0, False), (4.0, False), (5.0, True)):
        target = float(exact.needle_weight(512.0, 1.0, gap))
        assert (float(np.max(exact.needle_weight(2.0**20, grid, gap))) >= target) == reachable
        if reachable:
            assert alpha_constant_needle(2.0**20, gap) > 0
        else:
            with pytest.raises(ValueError):
                alpha_constant_needle(2.0**20, gap)
