"""Unit and property tests of attnscale.softmax against independent references."""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attnscale.softmax import (
    gradient_l1,
    jacobian_frobenius,
    jacobian_half_l1,
    jacobian_spectral_norm,
    log_softmax,
    logsumexp,
    power_weights,
    softmax,
    softmax_jacobian,
)



@pytest.fixture(autouse=True, scope="module")
def _fifty_digits():
    """The mpmath references of this module at 50 digits; the global precision is restored afterwards."""
    with mp.workdps(50):
        yield


def mp_softmax(s, alpha):
    """50-digit reference: exp(alpha s_i) / sum_j exp(alpha s_j), no shifting."""
    e = [mp.exp(mp.mpf(alpha) * mp.mpf(x)) for x in s]
    z = mp.fsum(e)
    return [float(x / z) for x in e], float(mp.log(z))


@pytest.mark.parametrize(
    "s, alpha",
    [
        ([0.0, 1.0, 2.0], 1.0),
        ([1.0, 0.5, -0.5], 1.0),
        ([8.0, 4.0, -4.0], 1.0),
        ([3.0, -2.0, -2.0, -2.0], 0.7),
        ([700.0, 710.0, 720.0], 1.0),  # exp overflows float64 here without the shift
        ([-745.0, -750.0, 0.0], 1.0),
        ([0.1, 0.2, 0.3, 0.4, 0.5], 40.0),
        ([1e3, -1e3, 5.0], 2.5),
    ],
)
def test_softmax_and_logsumexp_match_mpmath(s, alpha):
    ref_p, ref_lse = mp_softmax(s, alpha)
    np.testing.assert_allclose(softmax(s, alpha), ref_p, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(logsumexp(s, alpha), ref_lse, rtol=1e-15)
    np.testing.assert_allclose(np.exp(log_softmax(s, alpha)), ref_p, rtol=1e-13, atol=1e-300)


def test_extreme_logits_do_not_overflow():
    p = softmax([1e300, -1e300, 0.0])
    assert np.array_equal(p, [1.0, 0.0, 0.0])
    p = softmax([1.7e308, -1.7e308])  # the gap itself overflows to -inf: still exact
    assert np.array_equal(p, [1.0, 0.0])
    assert logsumexp([1e300, 1e300]) == 1e300
    np.testing.assert_allclose(logsumexp([1.0, 2.0], alpha=1000.0), 2000.0, rtol=1e-15)
    np.testing.assert_allclose(softmax([5.0, 5.0], alpha=1e300), [0.5, 0.5])


def test_float32_style_overflow_is_what_the_shift_avoids():
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(np.float32(89.0)) / np.exp(np.float32(89.0))
    assert not np.isfinite(naive)
    assert np.isclose(softmax([89.0, 89.0])[0], 0.5)


def test_masks_and_batches_and_axes():
    s = np.array([[1.0, -np.inf, 2.0], [0.0, 0.0, -np.inf]])
    p = softmax(s)
    assert p[0, 1] == 0.0 and p[1, 2] == 0.0
    np.testing.assert_allclose(p.sum(axis=-1), 1.0)
    np.testing.assert_allclose(p[1], [0.5, 0.5, 0.0])
    assert log_softmax(s)[0, 1] == -np.inf
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 5, 6))
    for axis in (0, 1, 2, -1):
        ref = np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True)
        np.testing.assert_allclose(softmax(x, axis=axis), ref, rtol=1e-14)
    alphas = np.array([0.5, 1.0, 2.0, 4.0])[:, None, None]
    np.testing.assert_allclose(softmax(x, alpha=alphas)[2], softmax(x[2], alpha=2.0), rtol=1e-15)


def test_jacobian_matches_finite_differences():
    rng = np.random.default_rng(7)
    for n in (2, 3, 7):
        s = rng.normal(size=n)
        alpha = 1.7
        h = 1e-6
        fd = np.empty((n, n))
        for j in range(n):
            e = np.zeros(n)
            e[j] = h
            fd[:, j] = (softmax(s + e, alpha) - softmax(s - e, alpha)) / (2 * h)
        # central differences: truncation error O(h^2 alpha^3) ~ 1e-11, rounding ~ eps/h ~ 1e-10
        np.testing.assert_allclose(softmax_jacobian(softmax(s, alpha), alpha), fd, atol=1e-9)


def test_jacobian_batched_shape_and_alpha_broadcast():
    rng = np.random.default_rng(3)
    p = softmax(rng.normal(size=(2, 3, 5)))
    alpha = np.array([1.0, 2.0, 3.0])
    J = softmax_jacobian(p, alpha)
    assert J.shape == (2, 3, 5, 5)
    np.testing.assert_allclose(J[1, 2], softmax_jacobian(p[1, 2], 3.0))
    np.testing.assert_allclose(jacobian_half_l1(J), gradient_l1(p, alpha), rtol=1e-13)


def test_mpmath_jacobian_reference():
    s, alpha = [0.3, -1.2, 2.2, 0.0], 1.3
    ref_p, _ = mp_softmax(s, alpha)
    p = mp.matrix([mp.mpf(x) for x in ref_p])
    ref = [[float(alpha * (p[i] * (i == j) - p[i] * p[j])) for j in range(4)] for i in range(4)]
    np.testing.assert_allclose(softmax_jacobian(softmax(s, alpha), alpha), ref, rtol=1e-13, atol=1e-17)


prob_vectors = (
    arrays(np.float64, st.integers(1, 12), elements=st.floats(0.0, 1e6))
    .filter(lambda w: w.sum() > 0)
    .map(lambda w: w / w.sum())
)
alphas = st.floats(1e-3, 1e3)


@settings(max_examples=200, deadline=None)
@given(prob_vectors, alphas)
def test_jacobian_rows_and_columns_sum_to_zero(p, alpha):
    J = softmax_jacobian(p, alpha)
    scale = alpha * max(p.max(), 1e-300)
    assert np.all(np.abs(J.sum(axis=0)) <= 1e-12 * scale * len(p))
    assert np.all(np.abs(J.sum(axis=1)) <= 1e-12 * scale * len(p))


@settings(max_examples=200, deadline=None)
@given(prob_vectors, alphas)
def test_jacobian_is_symmetric_and_psd(p, alpha):
    J = softmax_jacobian(p, alpha)
    assert np.array_equal(J, J.T)
    assert np.linalg.eigvalsh(J).min() >= -1e-12 * alpha


@settings(max_examples=200, deadline=None)
@given(prob_vectors, alphas)
def test_half_l1_identity_for_any_p(p, alpha):
    np.testing.assert_allclose(
        jacobian_half_l1(softmax_jacobian(p, alpha)), gradient_l1(p, alpha), rtol=1e-12, atol=1e-15 * alpha
    )


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 10), elements=st.floats(-1e300, 1e300)), alphas)
def test_softmax_is_a_distribution_for_any_finite_logits(s, alpha):
    p = softmax(s, alpha)
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    assert abs(p.sum() - 1.0) <= 1e-14 * len(s)
    assert np.isfinite(logsumexp(s, min(alpha, 1e-3)))


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, st.integers(1, 10), elements=st.floats(-50, 50)), st.floats(-1e3, 1e3))
def test_softmax_is_shift_invariant(s, c):
    np.testing.assert_allclose(softmax(s), softmax(s + c), rtol=1e-9, atol=1e-300)


# ---- bad input ---------------------------------------------------------------


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda: softmax([1.0, np.nan]), ValueError, "s must not contain NaN"),
        (lambda: softmax([1.0, np.inf]), ValueError, "+inf"),
        (lambda: softmax([-np.inf, -np.inf]), ValueError, "fully masked"),
        (lambda: softmax(3.0), ValueError, "s must have at least one axis"),
        (lambda: softmax([]), ValueError, "at least one entry"),
        (lambda: softmax(["a", "b"]), TypeError, "s must hold real numbers"),
        (lambda: softmax("ab"), TypeError, "s must be a real number"),
        (lambda: softmax([1.0, 2.0], alpha=0.0), ValueError, "alpha must be > 0, got 0.0"),
        (lambda: softmax([1.0, 2.0], alpha=-1.0), ValueError, "alpha must be > 0, got -1.0"),
        (lambda: softmax([1.0, 2.0], alpha=np.nan), ValueError, "alpha must be finite"),
        (lambda: softmax([1.0, 2.0], alpha=np.inf), ValueError, "alpha must be finite"),
        (lambda: softmax([[1.0, 2.0]], alpha=[1.0, 2.0]), ValueError, "alpha of shape (2,) must broadcast"),
        (lambda: softmax([1.0, 2.0], axis=2), ValueError, "axis must be in [-1, 0]"),
        (lambda: softmax([1.0, 2.0], axis=0.5), TypeError, "axis must be an integer"),
        (lambda: logsumexp([np.nan]), ValueError, "NaN"),
        (lambda: log_softmax([1.0], alpha=-2), ValueError, "alpha must be > 0"),
        (lambda: softmax_jacobian([0.5, 0.6]), ValueError, "p must sum to 1"),
        (lambda: softmax_jacobian([1.5, -0.5]), ValueError, "p must be >= 0, got -0.5"),
        (lambda: softmax_jacobian([0.5, np.nan]), ValueError, "p must be finite"),
        (lambda: softmax_jacobian(0.5), ValueError, "p must have at least one axis"),
        (lambda: softmax_jacobian([0.5, 0.5], alpha=0), ValueError, "alpha must be > 0"),
        (lambda: softmax_jacobian([[0.5, 0.5]], alpha=[1.0, 2.0, 3.0]), ValueError, "does not broadcast"),
        (lambda: gradient_l1([0.2, 0.2]), ValueError, "p must sum to 1"),
        (lambda: gradient_l1([0.5, 0.5], alpha=np.inf), ValueError, "alpha must be finite"),
        (lambda: jacobian_half_l1(np.ones((2, 3))), ValueError, "J must be square"),
        (lambda: jacobian_half_l1([[np.nan]]), ValueError, "J must be finite"),
    ],
)
def test_bad_input_is_rejected_with_the_argument_named(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value)


def test_saturated_rows_keep_relative_accuracy():
    # x = [a, a, 2a] at a = 100: p_3 rounds to 1, yet p_3 (1 - p_3) = 2 e^-100 / (1 + 2 e^-100)^2
    p = softmax([100.0, 100.0, 200.0])
    with mp.workdps(120):
        e = mp.exp(-100)
        exact_diag = float(2 * e / (1 + 2 * e) ** 2)
        exact_l1 = float(1 - (1 / (1 + 2 * e)) ** 2 - 2 * (e / (1 + 2 * e)) ** 2)
    np.testing.assert_allclose(softmax_jacobian(p)[2, 2], exact_diag, rtol=1e-13)
    np.testing.assert_allclose(gradient_l1(p), exact_l1, rtol=1e-13)


def test_power_weights_is_normalised_relu_power_and_a_softmax_of_log_scores():
    from attnscale.softmax import power_weights

    rng = np.random.default_rng(9)
    x = rng.standard_normal((50, 16))
    x[:, 0] = np.abs(x[:, 0]) + 0.1  # every row has a positive score
    for m in (1.0, 2.0, 3.5):
        direct = np.maximum(x, 0) ** m
        direct /= direct.sum(axis=1, keepdims=True)
        w = power_weights(x, m)
        np.testing.assert_allclose(w, direct, rtol=1e-13, atol=0)
        with np.errstate(divide="ignore"):
            logits = np.log(np.maximum(x, 0))  # -inf where x <= 0
        np.testing.assert_allclose(w, softmax(logits, m), rtol=1e-13, atol=0)
        np.testing.assert_allclose(power_weights(x, m, scale=1e3), w, rtol=1e-13, atol=0)
    assert np.all(power_weights(x)[x <= 0] == 0)
    with pytest.raises(ValueError, match="positive score"):
        power_weights([[1.0, 2.0], [-1.0, 0.0]])


def test_spectral_norm_of_two_entry_rows_is_twice_their_product_down_to_the_smallest_floats():
    """For n = 2, J = p1 p2 [[1, -1], [-1, 1]], whose largest eigenvalue is 2 p1 p2 (closed form).
    Bisection at sqrt(lo hi) underflowed once p2 < 1e-154 (a quarter of the value from 1e-162 on);
    a saturated row such as softmax([0, -400]) must still get its tiny norm to a few ulp."""
    for e in (3, 100, 154, 156, 160, 162, 200, 300, 320):
        p = np.array([1.0, 10.0**-e])
        p = p / p.sum()
        assert jacobian_spectral_norm(p) == pytest.approx(2 * p[0] * p[1], rel=4 * np.finfo(float).eps, abs=0), e
    p = softmax([0.0, -400.0])
    assert jacobian_spectral_norm(p, alpha=3.0) == pytest.approx(6 * p[0] * p[1], rel=4 * np.finfo(float).eps, abs=0)


def test_spectral_norm_of_a_one_hot_row_is_exactly_zero():
    """A one-hot row has J = diag(p) - p p^T = 0: its norm is 0, never above the Frobenius norm."""
    rows = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    np.testing.assert_array_equal(jacobian_spectral_norm(rows), [0.0, 0.0, 0.5])
    assert jacobian_spectral_norm([1.0, 0.0, 0.0]) == 0.0 == jacobian_frobenius([1.0, 0.0, 0.0])
    assert jacobian_spectral_norm([1.0]) == 0.0


def test_power_weights_neither_overflow_nor_underflow_in_the_scale():
    """relu(scale s)^2 normalised, for scores whose product with the scale leaves the float range:
    (1e308, 5e307) at scale 10 and (1e-200, 2e-200) at scale 1e-200 give 4:1 and 1:4. The weights
    go through m log(scale s_i), whose rounding (an ulp of about 700 here) moves them by up to
    m 700 eps = 3e-13 relative (measured 9.4e-14)."""
    np.testing.assert_allclose(power_weights([1e308, 5e307], scale=10.0), [0.8, 0.2], rtol=1e-12)
    np.testing.assert_allclose(power_weights([1e-200, 2e-200], scale=1e-200), [0.2, 0.8], rtol=1e-12)
    with pytest.raises(ValueError, match=r"^scale of shape \(3,\) does not broadcast to the shape \(2,\) of s"):
        power_weights([1.0, 2.0], scale=[1.0, 2.0, 3.0])
    # a scale with more axes than s would normalise along the wrong axis: refused, also when it would broadcast
    with pytest.raises(ValueError, match=r"^scale of shape \(2, 1\) does not broadcast to the shape \(3,\) of s"):
        power_weights([1.0, 2.0, 3.0], 2, [[1.0], [2.0]])
    np.testing.assert_allclose(power_weights([[1.0, 2.0, 3.0]] * 2, 2, [[1.0], [2.0]]), np.array([[1, 4, 9]] * 2) / 14, rtol=1e-15)
