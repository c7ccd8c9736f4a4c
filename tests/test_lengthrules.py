"""attnscale.lengthrules: each rule against its formula worked by hand, the exact
statistics against Monte Carlo, the solved rules against attnscale.exact, and the
needle weights quoted in issue 18 (an independent measurement)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnscale import exact as E
from attnscale import lengthrules as L

N = np.array([512, 2048, 16384, 2**17, 2**20], dtype=float)


# ---- the rules, against their formulas --------------------------------------------------


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


# ---- the issue's needle table (an independent measurement) ------------------------------

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


# ---- the exact statistics against Monte Carlo ------------------------------------------


def _softmax_rows(logits):
    z = logits - logits.max(axis=1, keepdims=True)
    w = np.exp(z)
    return w / w.sum(axis=1, keepdims=True)


def _entropy(p):
    return -(p * np.log(p)).sum(axis=1)


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
    p = _softmax_rows(a * rng.standard_normal((rows, n)))
    se = _within(_entropy(p), float(out["entropy"]))
    assert se < 2e-3
    _within(a * (1 - (p * p).sum(axis=1)), float(out["half_l1"]))
    _within(_entropy(p) / math.log(n), float(out["entropy_ratio"]))
    # model (b): n - 1 normal scores and a needle at gap (last column)
    s = rng.standard_normal((rows, n))
    s[:, -1] = gap
    p = _softmax_rows(a * s)
    se = _within(p[:, -1], float(out["needle_weight"]))
    assert se < 1e-3
    _within(_entropy(p), float(out["needle_entropy"]))
    _within(a * (1 - (p * p).sum(axis=1)), float(out["needle_half_l1"]))


def test_evaluate_accepts_alpha_values():
    out = L.evaluate([1.0, 2.0], [2048, 4096], gap=3.0)
    np.testing.assert_array_equal(out["alpha"], [1.0, 2.0])
    assert out["needle_weight"][1] == pytest.approx(float(E.needle_weight(4096, 2.0, 3.0)), rel=1e-15)


# ---- the solved rules -------------------------------------------------------------------


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
    a = L.alpha_constant_needle(65536, gap=3.0, target=0.00141)  # just below the peak
    assert float(E.needle_weight(65536, a, 3.0)) == pytest.approx(0.00141, rel=1e-8)
    with pytest.raises(ValueError, match="exceeds the largest"):
        L.alpha_constant_needle(65536, gap=3.0, target=0.0015)


def test_constant_entropy_keeps_the_exact_entropy():
    target = float(E.expected_entropy(512, 1.0))
    assert target == pytest.approx(5.7419, abs=1e-4)
    alpha = L.alpha_constant_entropy(N)
    np.testing.assert_allclose(E.expected_entropy(N, alpha), target, rtol=1e-8)
    assert np.all(np.diff(alpha) > 0)
    a = L.alpha_constant_entropy(4096, target=3.0)
    assert float(E.expected_entropy(4096, a)) == pytest.approx(3.0, rel=1e-8)


def test_unreachable_targets_are_refused():
    with pytest.raises(ValueError, match="n must exceed"):
        L.alpha_constant_entropy(256)  # ln 256 = 5.55 < 5.74: no alpha >= 0 reaches it
    with pytest.raises(ValueError, match="target"):
        L.alpha_constant_needle(2048, gap=5.0, target=1e-4)  # below 1/n


# ---- monotonicity -----------------------------------------------------------------------


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


# ---- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [L.fixed, L.log512, L.qwen_logn, L.yarn, L.ssmax, L.longrope, L.chiang_cholak])
@pytest.mark.parametrize("bad", [1.0, 0.5, -3.0, float("nan"), float("inf")])
def test_bad_lengths(fn, bad):
    with pytest.raises(ValueError, match="n must"):
        fn(bad)


@pytest.mark.parametrize("bad", ["x", None, 1 + 2j])
def test_bad_length_types(bad):
    with pytest.raises(TypeError, match="n must"):
        L.yarn(bad)


def test_bad_parameters():
    for fn in (L.qwen_logn, L.yarn, L.longrope):
        with pytest.raises(ValueError, match="n_train"):
            fn(1024, n_train=1.0)
        with pytest.raises(TypeError, match="n_train"):
            fn(1024, n_train="512")
    with pytest.raises(ValueError, match="base"):
        L.log512(1024, base=0.5)
    with pytest.raises(ValueError, match="s must"):
        L.ssmax(1024, s=-0.1)
    with pytest.raises(ValueError, match="rule"):
        L.rule_alpha("softmax", 1024)
    with pytest.raises(TypeError, match="rule"):
        L.evaluate(None, 1024)
    with pytest.raises(ValueError, match="rule"):
        L.evaluate([-1.0], 1024)
    with pytest.raises(ValueError, match="gap"):
        L.evaluate("fixed", 1024, gap=float("nan"))
    with pytest.raises(ValueError, match="n must"):
        L.evaluate("fixed", 1.5)
    with pytest.raises(ValueError, match="target"):
        L.alpha_constant_entropy(4096, target=-1.0)
    with pytest.raises(ValueError, match="target"):
        L.alpha_constant_needle(4096, target=1.5)


def test_mean_field_entropy_invariant_rule():
    """attnscale.entropy.alpha_for_mean_field_entropy: the mean-field entropy at (n, alpha(n))
    equals the training one, the normal case is sqrt(alpha_0^2 + 2 log(n / n_0)) with slope
    1/alpha_0 in log n at n_0 (central difference), and unreachable lengths raise or floor."""
    from attnscale.entropy import alpha_for_mean_field_entropy as rule
    from attnscale.entropy import mean_field_entropy_cosine, mean_field_entropy_normal

    n = np.array([512.0, 2048.0, 2.0**20])
    a = rule(n, 512, 1.5)
    np.testing.assert_allclose(mean_field_entropy_normal(a, n), mean_field_entropy_normal(1.5, 512.0), rtol=1e-14)
    h = 1e-5
    slope = (rule(512 * np.exp(h), 512, 1.5) - rule(512 * np.exp(-h), 512, 1.5)) / (2 * h)
    assert abs(slope - 1 / 1.5) < 1e-8
    for d in (3, 64, 1024):
        lengths = np.array([600.0, 4096.0, 1e6])
        a = rule(lengths, 512, 8.0, d=d)
        np.testing.assert_allclose(mean_field_entropy_cosine(a, lengths, d), mean_field_entropy_cosine(8.0, 512.0, d), rtol=1e-9)
        assert np.all(np.diff(a) > 0) and a[0] > 8.0
    with pytest.raises(ValueError, match="n must exceed"):
        rule(100.0, 512, 1.0)
    assert rule(100.0, 512, 1.0, floor=1e-3) == 1e-3
    np.testing.assert_array_equal(rule(np.array([16.0, 512.0]), 512, 8.0, d=64, floor=0.5)[0], 0.5)
