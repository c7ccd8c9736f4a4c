"""attnscale.entropy: softmax entropy, collision probability and the mean-field entropies,
against closed forms and mpmath references.
"""

from __future__ import annotations

import math
import warnings

from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays
import mpmath as mp
import numpy as np
import pytest

from attnscale.entropy import alpha_for_mean_field_entropy, collision, effective_number, mean_field_entropy_cosine, mean_field_entropy_normal, renyi2, shannon, softmax_entropy
from attnscale.scores import dlog_mgf_cosine, log_mgf_cosine
from attnscale.softmax import softmax
from expect import named


@pytest.fixture(autouse=True, scope="module")
def _thirty_digits():
    with mp.workdps(30):
        yield


def test_collision_on_a_batch():
    p = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    np.testing.assert_allclose(collision(p), [0.5, 0.04 + 0.09 + 0.25], rtol=1e-15)


def test_mean_field_entropy_normal_closed_form():
    for a, n in [(0.3, 10.0), (1.7, 1e4), (2.5, 3.0)]:
        out = mean_field_entropy_normal(a, n)
        assert type(out) is float  # a plain float, not np.float64 (which numpy 2 prints as np.float64(...))
        assert out == pytest.approx(float(mp.log(n) - mp.mpf(a) ** 2 / 2), rel=1e-14)
    out = mean_field_entropy_normal(np.array([0.5, 2.0]), 100.0)
    assert isinstance(out, np.ndarray) and out.shape == (2,)


def test_softmax_entropy_default_scale_masks_and_shapes():
    s = np.array([0.3, -1.0, 2.0])
    p = [mp.exp(x) / mp.fsum(mp.exp(y) for y in s) for x in s]
    assert softmax_entropy(s) == pytest.approx(float(-mp.fsum(q * mp.log(q) for q in p)), rel=1e-14)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert softmax_entropy([0.0, -np.inf, 0.0]) == pytest.approx(np.log(2.0), rel=1e-15)
    assert softmax_entropy(np.zeros((1, 3))).shape == (1,)


def test_mean_field_entropy_cosine_and_mgf_return_types():
    # d = 3: M(alpha) = sinh(alpha) / alpha, (log M)' = coth(alpha) - 1/alpha
    a, n = 1.3, 50.0
    M = mp.sinh(a) / a
    dM = mp.coth(a) - 1 / mp.mpf(a)
    for out, ref in [
        (mean_field_entropy_cosine(a, n, 3.0), mp.log(n) + mp.log(M) - a * dM),
        (log_mgf_cosine(a, 3.0), mp.log(M)),
        (dlog_mgf_cosine(a, 3.0), dM),
    ]:
        assert type(out) is float
        assert out == pytest.approx(float(ref), rel=1e-13)
    assert mean_field_entropy_cosine(np.array([0.5, a]), n, 3.0).shape == (2,)


#: the documented accuracy of the cosine route (Brent's method to 1e-10 in alpha)
COSINE_ALPHA_TOL = 1e-10


def _hand_shannon(row):
    return -sum(p * math.log(p) for p in row if p > 0)


def test_shannon_with_zero_entries_is_silent_under_strict_float_errors():
    """0 log 0 = 0 is part of the definition: rows with zeros must give the sum over the
    positive entries even when the caller turns floating-point warnings into errors
    (log 0 divides by zero, 0 * -inf is invalid; both are the function's business)."""
    rows = [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.25, 0.0, 0.75]]
    expected = [_hand_shannon(r) for r in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's default state: warn -> now an error
        np.testing.assert_allclose(shannon(rows), expected, rtol=1e-15, atol=0)
    with np.errstate(all="raise"):  # a caller that asks NumPy to raise
        np.testing.assert_allclose(shannon(rows), expected, rtol=1e-15, atol=0)


@pytest.mark.parametrize(
    ("args", "ratio"),
    [((2048.0,), 4.0), ((3.0, 1.5, 1.0), 2.0)],
    ids=["defaults", "n_train-between-one-and-two"],
)
def test_normal_rule_closed_form_with_the_default_training_length_and_scale(args, ratio):
    """The signature's defaults n_train = 512, alpha_train = 1: at n = 2048 the rule is
    sqrt(1 + 2 log 4); n_train only has to exceed 1: n_train = 1.5, n = 3 gives sqrt(1 + 2 log 2)."""
    assert alpha_for_mean_field_entropy(*args) == pytest.approx(math.sqrt(1.0 + 2.0 * math.log(ratio)), rel=1e-14)


def test_unreachable_length_error_shows_the_offending_length():
    """n = 100 is below e^H = 512 e^-1/2 = 310.5: the ValueError names n and shows the
    first offending value, also when it sits inside an array."""
    with pytest.raises(ValueError, match=r"^n must .*got 100\.0$"):
        alpha_for_mean_field_entropy(np.array([1000.0, 100.0, 200.0]))


def _float_ties_below_the_boundary(n_train, alpha_train):
    """Floats n whose log rounds to the computed training entropy although, exactly,
    log n is below log n_train - alpha_train^2 / 2 (so no positive scale reaches it)."""
    target = math.log(n_train) - 0.5 * alpha_train * alpha_train
    with mp.workdps(40):
        exact = mp.log(mp.mpf(n_train)) - mp.mpf(alpha_train) ** 2 / 2
        n = float(mp.exp(exact))
        ties = []
        for _ in range(16):
            if float(np.log(n)) == target and mp.log(mp.mpf(n)) < exact:
                ties.append(n)
            n = float(np.nextafter(n, 0.0))
    return ties


def test_length_whose_log_ties_the_training_entropy_is_out_of_reach():
    """The docstring: lengths with log n at or below the training entropy raise (or get
    floor). At a tie in float arithmetic the answer must not be a zero scale."""
    ties = _float_ties_below_the_boundary(512.0, 1.0)
    assert ties, "no float length ties the training entropy (the test needs one)"
    for n in ties:
        with pytest.raises(ValueError, match=named('n')):
            alpha_for_mean_field_entropy(n, 512.0, 1.0)
        assert alpha_for_mean_field_entropy(n, 512.0, 1.0, floor=0.25) == 0.25


def _mp_entropy(a, n, d):
    """Mean-field entropy log n + log M(a) - a (log M)'(a) at the working precision,
    with M = 0F1(; d/2; a^2/4) and (log M)' = I_(d/2)/I_(d/2-1); sinh and coth for d = 3."""
    a, n = mp.mpf(a), mp.mpf(n)
    if a == 0:
        return mp.log(n)
    if d == 3:
        return mp.log(n) + mp.log(mp.sinh(a) / a) - a * mp.coth(a) + 1
    nu = mp.mpf(d) / 2 - 1
    return mp.log(n) + mp.log(mp.hyp0f1(nu + 1, a * a / 4)) - a * mp.besseli(nu + 1, a) / mp.besseli(nu, a)


def _mp_rule(n, n_train, alpha_train, d, guess):
    with mp.workdps(40):
        target = _mp_entropy(alpha_train, n_train, d)
        return float(mp.findroot(lambda a: _mp_entropy(a, n, d) - target, mp.mpf(guess)))


def test_mpmath_entropy_d3_closed_form_agrees_with_bessel_form():
    """Guard for the reference itself: for d = 3 the two mpmath routes agree."""
    with mp.workdps(40):
        for a in (0.3, 2.0, 50.0):
            nu = mp.mpf(0.5)
            bessel = mp.log(64) + mp.log(mp.hyp0f1(nu + 1, mp.mpf(a) ** 2 / 4)) - a * mp.besseli(nu + 1, a) / mp.besseli(nu, a)
            assert abs(_mp_entropy(a, 64, 3) - bessel) < mp.mpf(10) ** -30


@pytest.mark.parametrize(
    ("n", "alpha_train", "d", "guess"),
    [
        (520.0, 0.5, 3, 0.59),  # root 0.5905
        (512.0, 0.25, 16, 0.25),  # n = n_train: the root is alpha_train itself
        (512.0, 0.5, 64, 0.5),
        (520.0, 0.5, 64, 1.5),  # root 1.4954
    ],
)
def test_cosine_rule_roots_below_and_near_one(n, alpha_train, d, guess):
    """The bracket of Brent's method must reach down to small scales: roots below 1
    (short training rows at a small scale) to the documented 1e-10."""
    expected = _mp_rule(n, 512.0, alpha_train, d, guess)
    got = alpha_for_mean_field_entropy(n, 512.0, alpha_train, d=d)
    assert abs(got - expected) <= COSINE_ALPHA_TOL, (got, expected)


@pytest.mark.parametrize(("alpha_train", "d", "guess"), [(1e-20, 3, 2.63), (1e-100, 3, 2.63), (1e-300, 64, 9.57)])
def test_cosine_rule_with_vanishing_training_scale(alpha_train, d, guess):
    """A vanishing (but positive) training scale means uniform training rows, entropy
    log n_train: the rule at n = 1024 is the scale whose entropy is log 512 (mpmath)."""
    expected = _mp_rule(1024.0, 512.0, 0, d, guess)
    got = alpha_for_mean_field_entropy(1024.0, 512.0, alpha_train, d=d)
    assert abs(got - expected) <= COSINE_ALPHA_TOL, (got, expected)


def test_softmax_entropy_matches_shannon_and_handles_saturation_and_masks():
    rng = np.random.default_rng(0)
    s = rng.standard_normal((50, 30))
    for a in (0.1, 1.0, 30.0, 1e4):
        np.testing.assert_allclose(softmax_entropy(s, a), shannon(softmax(s, a)), rtol=1e-10, atol=1e-13)
    assert softmax_entropy([1e300, 0.0]) == 0.0


def test_mean_field_entropy_cosine_tends_to_the_normal_one_at_large_d():
    # cosine entropy approaches the normal one with alpha = sqrt(d) * a for large d
    d = 65536.0  # the largest d supported
    np.testing.assert_allclose(mean_field_entropy_cosine(np.sqrt(d) * 1.0, 512.0, d), np.log(512) - 0.5, rtol=1e-3)


def _mp_cosine_entropy_d3(alpha, n):
    """The mean-field entropy for d = 3 in closed form (M(a) = sinh(a)/a), in mpmath at 400 digits
    (enough for a up to 1e308, where log(sinh a / a) and a coth a agree to 308 digits)."""
    with mp.workdps(400):
        a = mp.mpf(alpha)
        return mp.log(n) + a + mp.log(-mp.expm1(-2 * a)) - mp.log(2) - mp.log(a) - a / mp.tanh(a) + 1


@pytest.mark.parametrize("alpha", [30.0, 1e3, 1e6, 1e12, 1e18, 1e100, 6e307, 1.7e308])
def test_mean_field_entropy_cosine_keeps_its_accuracy_at_huge_scales(alpha):
    """log M and alpha (log M)' both grow like alpha; written as (log M - alpha) + alpha (1 - (log M)')
    the entropy keeps an absolute error below 1e-12 (measured: at most 6.3e-13, at alpha = 1e3, from
    the Bessel ratio's complement there), where subtracting the two lost every digit by alpha = 1e18."""
    got = mean_field_entropy_cosine(alpha, 512.0, 3)
    assert np.isfinite(got)
    assert abs(got - float(_mp_cosine_entropy_d3(alpha, 512))) <= 1e-12


@pytest.mark.parametrize("n", [1e10, 1e20, 1e150, 1e300])
def test_cosine_entropy_rule_for_huge_lengths(n):
    """For d = 3 and a large root, H = log n + 1 - log 2 - log alpha up to O(alpha e^-2alpha), so the
    scale that keeps the training entropy t is n e^(1 - t) / 2: the rule meets it to 1e-12 relative."""
    target = _mp_cosine_entropy_d3(1.0, 512)
    with mp.workdps(400):
        expected = float(mp.mpf(n) * mp.exp(1 - target) / 2)
    assert alpha_for_mean_field_entropy(n, 512, 1.0, d=3) == pytest.approx(expected, rel=1e-12, abs=0)


def test_cosine_entropy_rule_up_to_and_beyond_the_largest_float():
    """At huge scales (d = 3) alpha / n is what the entropy keeps, so doubling n doubles the scale:
    6e307 becomes 1.2e308; from 1e308 the doubled scale overflows and is refused with n named."""
    assert alpha_for_mean_field_entropy(1024.0, 512, 6e307, d=3) == pytest.approx(1.2e308, rel=1e-12)
    with pytest.raises(ValueError, match=named('n')):
        alpha_for_mean_field_entropy(1024.0, 512, 1e308, d=3)


@pytest.mark.parametrize("d", [None, 3, 4096])
def test_entropy_rule_at_the_training_length_is_the_training_scale(d):
    """At n = n_train the rule keeps the training scale, also when alpha_train is so small that the
    training entropy rounds to log n_train (it raised 'n must exceed e^H' there)."""
    for a0 in (1e-8, 0.3, 1.0):
        assert alpha_for_mean_field_entropy(512.0, 512, a0, d=d) == a0


def test_cosine_entropy_at_subnormal_scales_is_silent():
    """alpha below 1e-308 is in the series region; the large-alpha route is not evaluated there
    (its 2/alpha overflowed with a warning, though the result was discarded)."""
    with np.errstate(over="raise", divide="raise", invalid="raise"):  # underflow of alpha^2 is harmless
        got = mean_field_entropy_cosine(1e-309, 512.0, 64)
    assert got == pytest.approx(np.log(512), abs=1e-15)


def test_mean_field_entropy_invariant_rule():
    """attnscale.entropy.alpha_for_mean_field_entropy: the mean-field entropy at (n, alpha(n))
    equals the training one, the normal case is sqrt(alpha_0^2 + 2 log(n / n_0)) with slope
    1/alpha_0 in log n at n_0 (central difference), and unreachable lengths raise or floor."""
    rule = alpha_for_mean_field_entropy
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
    assert rule(100.0, 512, 1.0, floor=1e-3) == 1e-3
    np.testing.assert_array_equal(rule(np.array([16.0, 512.0]), 512, 8.0, d=64, floor=0.5)[0], 0.5)


prob_vectors = (
    arrays(np.float64, st.integers(1, 12), elements=st.floats(0.0, 1e3))
    .filter(lambda w: w.sum() > 0)
    .map(lambda w: w / w.sum())
)


def test_entropies_against_mpmath():
    p = np.array([0.5, 0.25, 0.125, 0.125])
    with mp.workdps(40):
        ref_h = -mp.fsum(mp.mpf(x) * mp.log(mp.mpf(x)) for x in p)
    np.testing.assert_allclose(shannon(p), float(ref_h), rtol=1e-15)
    np.testing.assert_allclose(collision(p), 0.34375, rtol=1e-15)
    np.testing.assert_allclose(renyi2(p), float(-mp.log(mp.mpf("0.34375"))), rtol=1e-15)
    np.testing.assert_allclose(effective_number(p), 1 / 0.34375, rtol=1e-15)
    assert shannon([1.0, 0.0]) == 0.0


@settings(max_examples=200, deadline=None)
@given(prob_vectors)
def test_renyi2_never_exceeds_shannon_and_log_n(p):
    n = p.size
    assert renyi2(p) <= shannon(p) + 1e-12
    assert shannon(p) <= np.log(n) + 1e-12
    assert 1 - 1e-12 <= effective_number(p) <= n * (1 + 1e-12)
