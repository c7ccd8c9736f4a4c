"""Tests written for the mutants of attnscale.entropy (and one of _validate) that
survived the rest of the suite (tools/mutate.sh, core modules, commit 16825ff).

Every expected value comes from a route independent of the code under test: the
closed form sqrt(alpha_0^2 + 2 log(n / n_0)) for normal scores, a root of the
mean-field entropy found by mpmath at 40 digits from 0F1 and Bessel functions
(or from sinh and coth for d = 3), a sum written out by hand, or a documented
property (the error names the argument and shows the offending value).
"""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest

from attnscale.entropy import alpha_for_mean_field_entropy, shannon, softmax_entropy

#: the documented accuracy of the cosine route (Brent's method to 1e-10 in alpha)
COSINE_ALPHA_TOL = 1e-10


# ---- shannon: 0 log 0 = 0 without floating-point noise ------------------------------


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


# ---- axis_index (through softmax_entropy): axis == ndim is out of range ----------------


@pytest.mark.parametrize(("shape", "axis"), [((3,), 1), ((2, 3), 2)])
def test_axis_equal_to_ndim_is_rejected_naming_axis(shape, axis):
    """Valid axes are -ndim .. ndim-1; axis == ndim must raise a ValueError naming axis,
    not wrap round to axis 0 and silently reduce along the wrong axis (_validate 10)."""
    s = np.arange(float(np.prod(shape))).reshape(shape)
    with pytest.raises(ValueError, match=rf"^axis must be in \[{-len(shape)}, {len(shape) - 1}\]"):
        softmax_entropy(s, 1.0, axis=axis)


# ---- alpha_for_mean_field_entropy: normal scores (closed form) ------------------------


def test_default_training_length_is_512_and_scale_1():
    """The signature's defaults n_train = 512, alpha_train = 1: at n = 2048 the rule is
    sqrt(1 + 2 log 4) (closed form)."""
    expected = math.sqrt(1.0 + 2.0 * math.log(4.0))
    assert alpha_for_mean_field_entropy(2048.0) == pytest.approx(expected, rel=1e-14)


def test_training_length_between_one_and_two_is_accepted():
    """n_train only has to exceed 1: n_train = 1.5, n = 3 gives sqrt(1 + 2 log 2)."""
    got = alpha_for_mean_field_entropy(3.0, n_train=1.5, alpha_train=1.0)
    assert got == pytest.approx(math.sqrt(1.0 + 2.0 * math.log(2.0)), rel=1e-14)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"n_train": 1.0}, r"^n_train must be > 1, got 1\.0$"),
        ({"alpha_train": 0.0}, r"^alpha_train must be > 0, got 0\.0$"),
        ({"floor": 0.0}, r"^floor must be > 0, got 0\.0$"),
        ({"d": 2}, r"^d must be an integer >= 3, got 2$"),
    ],
    ids=["n_train", "alpha_train", "floor", "d"],
)
def test_bad_argument_error_starts_with_the_argument_name(kwargs, pattern):
    """The house rule: the message names the argument (as a word, not inside another
    word) and the bound it broke."""
    with pytest.raises(ValueError, match=pattern):
        alpha_for_mean_field_entropy(2048.0, **kwargs)


def test_unreachable_length_error_shows_the_offending_length():
    """n = 100 is below e^H = 512 e^-1/2 = 310.5: the ValueError names n and shows the
    first offending value, also when it sits inside an array."""
    with pytest.raises(ValueError, match=r"^n must exceed e\^H = 310\.544 .*got 100\.0$"):
        alpha_for_mean_field_entropy(100.0)
    with pytest.raises(ValueError, match=r"got 100\.0$"):
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
        with pytest.raises(ValueError, match="^n must exceed"):
            alpha_for_mean_field_entropy(n, 512.0, 1.0)
        assert alpha_for_mean_field_entropy(n, 512.0, 1.0, floor=0.25) == 0.25


# ---- alpha_for_mean_field_entropy: cosine scores against mpmath -----------------------


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
