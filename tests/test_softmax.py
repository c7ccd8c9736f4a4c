"""Unit and property tests of attnscale.softmax against independent references.
"""

from __future__ import annotations

import warnings

from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra.numpy import arrays
import mpmath as mp
import numpy as np
import pytest

from attnscale.entropy import softmax_entropy
from attnscale.softmax import gradient_l1, jacobian_frobenius, jacobian_half_l1, jacobian_max_entry, jacobian_spectral_norm, log_softmax, logsumexp, power_weights, softmax, softmax_jacobian, softmax_vjp
from expect import named


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


def test_a_scale_per_row_that_does_not_fit_the_batch_is_refused_naming_alpha():
    with pytest.raises(ValueError, match=named("alpha")):
        softmax_jacobian([[0.5, 0.5]], alpha=[1.0, 2.0, 3.0])


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
    # n = 1 in a batch with one scale per row: J = alpha (p - p^2) = 0 in every row
    np.testing.assert_array_equal(jacobian_spectral_norm(np.ones((3, 1)), np.array([1.0, 2.0, 3.0])), [0.0, 0.0, 0.0])


def test_power_weights_neither_overflow_nor_underflow_in_the_scale():
    """relu(scale s)^2 normalised, for scores whose product with the scale leaves the float range:
    (1e308, 5e307) at scale 1 (the default) and 10, and (1e-200, 2e-200) at scale 1e-200 give 4:1 and 1:4. The weights
    go through m log(scale s_i), whose rounding (an ulp of about 700 here) moves them by up to
    m 700 eps = 3e-13 relative (measured 9.4e-14)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(power_weights([1e308, 5e307]), [0.8, 0.2], rtol=1e-12)
        np.testing.assert_allclose(power_weights([1e308, 5e307], scale=10.0), [0.8, 0.2], rtol=1e-12)
    np.testing.assert_allclose(power_weights([1e-200, 2e-200], scale=1e-200), [0.2, 0.8], rtol=1e-12)
    # a scale with more axes than s would normalise along the wrong axis: refused, also when it would broadcast
    with pytest.raises(ValueError, match=named('scale')):
        power_weights([1.0, 2.0, 3.0], 2, [[1.0], [2.0]])
    np.testing.assert_allclose(power_weights([[1.0, 2.0, 3.0]] * 2, 2, [[1.0], [2.0]]), np.array([[1, 4, 9]] * 2) / 14, rtol=1e-15)


RNG = np.random.default_rng(20240611)


def dense_jacobian(p, alpha):
    """J = alpha (diag p - p p^T), built from the definition."""
    p = np.asarray(p, float)
    return alpha * (np.diag(p) - np.outer(p, p))


def mp_lse(row, alpha=1.0):
    return float(mp.log(mp.fsum(mp.exp(mp.mpf(alpha) * mp.mpf(x)) for x in row)))


def test_logsumexp_and_log_softmax_on_batches_along_either_axis():
    s = RNG.normal(size=(3, 4)) * 3
    for axis in (0, 1, -1):
        ref_lse = np.apply_along_axis(mp_lse, axis, s)
        np.testing.assert_allclose(logsumexp(s, axis=axis), ref_lse, rtol=1e-14)
        ref_logp = s - np.expand_dims(ref_lse, axis)
        np.testing.assert_allclose(log_softmax(s, axis=axis), ref_logp, rtol=1e-13, atol=1e-14)
    # the default scale is alpha = 1
    np.testing.assert_allclose(log_softmax(s[0]), s[0] - mp_lse(s[0]), rtol=1e-13, atol=1e-14)
    # one row: the reduced axis goes, the batch axis of length 1 stays
    assert logsumexp(np.zeros((1, 3))).shape == (1,)
    np.testing.assert_allclose(logsumexp(np.zeros((1, 3))), [np.log(3.0)], rtol=1e-15)


def test_logsumexp_beyond_float64_is_a_silent_inf():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert logsumexp([1e300, 0.0], alpha=1e10) == np.inf


def test_softmax_vjp_is_the_dense_jacobian_times_g():
    p = softmax(RNG.normal(size=(4, 5)))
    g = RNG.normal(size=(4, 5))
    alphas = np.array([0.5, 1.0, 2.0, 7.0])
    out = softmax_vjp(p, g, alphas)
    ref = np.array([dense_jacobian(p[i], alphas[i]) @ g[i] for i in range(4)])
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-15)
    # default alpha = 1, and a central difference of softmax(s) along g
    s = np.array([0.3, -1.2, 2.0])
    gv = np.array([1.0, -2.0, 0.5])
    h = 1e-6
    fd = (softmax(s + h * gv) - softmax(s - h * gv)) / (2 * h)
    np.testing.assert_allclose(softmax_vjp(softmax(s), gv), fd, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("measure, of_dense", [(jacobian_frobenius, np.linalg.norm), (jacobian_max_entry, lambda J: np.abs(J).max())], ids=["frobenius", "max-entry"])
def test_jacobian_norms_with_one_scale_per_row_one_for_all_and_the_default(measure, of_dense):
    p = softmax(RNG.normal(size=(3, 5)) * 2)
    for alpha in (np.array([0.5, 2.0, 7.0]), 2.0):
        got = measure(p, alpha)
        assert got.shape == (3,)
        np.testing.assert_allclose(got, [of_dense(dense_jacobian(row, a)) for row, a in zip(p, np.broadcast_to(alpha, 3))], rtol=1e-13)
    # the default scale is 1; one vector in, one value out (no batch axis appears)
    got = measure(p[0])
    assert np.ndim(got) == 0
    np.testing.assert_allclose(got, of_dense(dense_jacobian(p[0], 1.0)), rtol=1e-13)


def test_batch_rows_at_very_different_offsets_are_shifted_row_by_row():
    # each row is shifted by its own maximum: a row 1000 below another must not underflow
    s = np.array([[0.0, 1.0], [-1000.0, -999.0]])
    ref = [mp_lse(r) for r in s]
    np.testing.assert_allclose(logsumexp(s), ref, rtol=1e-15)
    np.testing.assert_allclose(log_softmax(s), s - np.array(ref)[:, None], rtol=1e-13)
    np.testing.assert_allclose(softmax_entropy(s), [softmax_entropy(s[0])] * 2, rtol=1e-13)


def test_jacobian_spectral_norm_at_a_tie_is_silent():
    # p = (1/2, 1/2): the bracket [p_(2), p_(1)] is a point, p - mu = 0 there; J has eigenvalues 0 and 1/2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = jacobian_spectral_norm(np.array([[0.5, 0.5], [0.25, 0.75]]))
    ref = [np.linalg.eigvalsh(dense_jacobian(row, 1.0)).max() for row in ([0.5, 0.5], [0.25, 0.75])]
    np.testing.assert_allclose(got, ref, rtol=1e-14)


@pytest.mark.parametrize(
    "s, axis, shown",
    [
        ([0.0, np.nan], -1, "[0.0, nan]"),  # the offending scores
        ([0.0, np.inf], -1, "-inf"),  # what is allowed instead
        (np.zeros((0, 3)), 0, "(0, 3)"),  # the shape
        ([[0.0, 1.0], [-np.inf, -np.inf]], -1, "masked"),  # why the slice has no softmax
    ],
)
def test_softmax_refuses_bad_scores_naming_s_and_saying_what_is_wrong(s, axis, shown):
    with pytest.raises(ValueError, match=named("s")) as info:
        softmax(np.array(s), 1.0, axis)
    assert shown in str(info.value)


def test_a_fully_masked_slice_along_the_given_axis_is_refused_in_a_batch():
    """One masked row among valid ones, and the same batch transposed with axis=0: the check
    follows the axis, so the masked column is refused too rather than giving NaN."""
    s = np.array([[0.0, 1.0], [-np.inf, -np.inf]])
    for f in (softmax, logsumexp, log_softmax):
        for batch, axis in ((s, -1), (s.T, 0)):
            with pytest.raises(ValueError, match=named("s")) as info:
                f(batch, axis=axis)
            assert "masked" in str(info.value), f


def test_power_weights_defaults_axis_and_extreme_scales():
    # the default power is 2: relu(s)^2 / sum relu(s)^2
    np.testing.assert_allclose(power_weights([1.0, 2.0, -1.0]), [0.2, 0.8, 0.0], rtol=1e-15)
    # along axis 0 each column is one distribution
    s = np.array([[1.0, 3.0], [2.0, 1.0]])
    np.testing.assert_allclose(power_weights(s, axis=0), [[0.2, 0.9], [0.8, 0.1]], rtol=1e-14)
    # the scale cancels even where s / scale would overflow: it multiplies the scores
    # (through logarithms near -668, so rounding is amplified about a thousandfold)
    np.testing.assert_allclose(power_weights([1e10, 2e10], scale=1e-300), [0.2, 0.8], rtol=1e-12)


EPS = np.finfo(float).eps


def _mp_spectral_norm(p):
    """Largest eigenvalue of diag(q) - q q^T for q = p / sum(p) normalised at 30 digits
    (mpmath's symmetric eigensolver); the secular root of p is that times sum(p)."""
    with mp.workdps(30):
        n = len(p)
        total = mp.fsum(mp.mpf(float(x)) for x in p)
        q = [mp.mpf(float(x)) / total for x in p]
        J = mp.matrix(n, n)
        for i in range(n):
            for j in range(n):
                J[i, j] = (q[i] if i == j else 0) - q[i] * q[j]
        return max(mp.eigsy(J, eigvals_only=True)) * total


def mp_secular_root(p):
    """The root of g(mu) = sum_i p_i / (p_i - mu) between the two largest entries of p, from the
    definition at the module's 50 digits: bisection at geometric midpoints (the root may be tiny
    next to p_(1)) until the bracket is 1e-30 wide relative; p_(1) at a tie, 0 with one positive entry.
    Equal entries are summed as one term times their count."""
    values, counts = np.unique(np.ravel(p)[np.ravel(p) > 0], return_counts=True)
    terms = [(mp.mpf(float(x)), int(m)) for x, m in zip(values[::-1], counts[::-1])]
    if counts.sum() < 2:
        return mp.mpf(0)
    if counts[-1] > 1:
        return terms[0][0]
    lo, hi = terms[1][0], terms[0][0]
    while hi - lo > lo * mp.mpf(10) ** -30:
        mid = mp.sqrt(lo * hi)
        if mp.fsum(m * x / (x - mid) for x, m in terms) < 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def ulps_off(got, ref):
    """|got - ref| in units of the float spacing at ref (subnormal spacing below 2.2e-308)."""
    return float(abs(mp.mpf(float(got)) - ref) / mp.mpf(np.spacing(float(ref))))


def assert_secular_roots(rows, ulps=2.0):
    """jacobian_spectral_norm(rows) at alpha = 1 is each row's secular root to ``ulps``, silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = jacobian_spectral_norm(rows)
    for row, value in zip(rows, got):
        ref = mp_secular_root(row)
        assert ulps_off(value, ref) <= ulps, (row, value, ref)


@pytest.mark.parametrize("n", [3, 5, 16, 64, 200])
def test_spectral_norm_is_the_secular_root_to_two_ulps_on_random_rows(n):
    """Normal scores at scales from nearly flat to peaked; for three keys the root is also the
    largest eigenvalue of the dense J of p / sum(p), times sum(p) (mpmath's symmetric
    eigensolver at 30 digits: the floats p sum to 1 only within rounding, and in a saturated
    row the eigenvalue of the unnormalised J moves with that rounding, the root of g does not)."""
    rng = np.random.default_rng(n)
    rows = softmax(rng.standard_normal((8, n)) * np.array([1e-4, 0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0])[:, None])
    assert_secular_roots(rows)
    if n == 3:
        np.testing.assert_allclose(jacobian_spectral_norm(rows), [float(_mp_spectral_norm(row)) for row in rows], rtol=2 * EPS, atol=0)


@pytest.mark.parametrize("n", [3, 16, 64])
def test_spectral_norm_keeps_two_ulps_in_saturated_rows_down_to_subnormal_roots(n):
    """Scores with a large scale: p_(2) from 1e-13 down to the subnormal range, where the root,
    about 2 p_(2), is tiny next to p_(1) ~ 1 and the ulp is the subnormal spacing."""
    rng = np.random.default_rng(100 + n)
    s = rng.standard_normal((6, n))
    top2 = -np.sort(-s, axis=1)[:, :2]
    s = (s - top2[:, :1]) / (top2[:, :1] - top2[:, 1:])  # the gap to the second score is 1
    rows = softmax(s, np.array([30.0, 100.0, 300.0, 700.0, 735.0, 742.0])[:, None])
    assert 0 < np.sort(rows[-1])[-2] < np.finfo(float).tiny  # the last row's p_(2) is subnormal
    assert_secular_roots(rows)


@pytest.mark.parametrize("n", [3, 10, 100, 1000])
def test_spectral_norm_of_near_ties_is_the_secular_root_to_two_ulps(n):
    """p_(1) a few ulps to 1e-4 above p_(2): flat rows with one entry raised by k ulps (the root is
    pushed towards p_(1) by the other n - 2 entries, so closely that a step of the model can round
    onto the bracket's end), the same with the others an ulp below p_(2), and up to 100 scores
    whose top two differ by 1e-15 to 1e-5. Nothing may warn (no evaluation at a pole)."""
    rows = []
    for k in (1, 2, 3, 5, 8, 16, 100, 10**4):
        for below in (0, 1):
            p = np.full(n, 1.0 / n)
            step = np.spacing(p[1])
            p[0] += k * step
            p[2:] -= below * step
            rows.append(p)
    assert_secular_roots(np.array(rows))
    rng = np.random.default_rng(7 * n)
    s = rng.standard_normal((4, min(n, 100)))
    for s_row, gap in zip(s, (1e-15, 1e-12, 1e-9, 1e-5)):
        s_row[np.argmax(s_row)] = np.sort(s_row)[-2] + gap
    assert_secular_roots(softmax(s, 3.0))


def test_spectral_norm_of_ties_and_near_ties_below_the_top_is_the_secular_root():
    """p_(2) shared by several entries (a pole of weight 2 p_(2) or more), or a third entry within
    1e-12 of p_(2) in score: the other terms of g then have a pole at or next to p_(2)."""
    rng = np.random.default_rng(3)
    rows = []
    for n in (4, 16, 64):
        for offset in (0.0, 1e-12, 1e-6):
            s = rng.standard_normal(n)
            order = np.argsort(s)
            s[order[-3]] = s[order[-2]] - offset
            s[order[-4]] = s[order[-2]]
            rows.append(softmax(s, 2.0))
    for row in rows:
        assert_secular_roots(row[None, :])


def test_spectral_norm_keeps_two_ulps_with_many_small_entries_after_the_second_largest():
    """Thousands of entries far below p_(2): each of their terms is rounded away when a sum
    adds it one by one after p_(2)'s (near -1 at the root), which moved the root by up to 90
    ulps; in either order of the row the root stays within two ulps."""
    for count, tiny in ((500, 3e-19), (4096, 3e-17)):
        p = np.full(count + 2, tiny)
        p[1] = 0.01
        p[0] = 1.0 - p[1:].sum()
        assert_secular_roots(np.stack([p, p[::-1]]), ulps=2.0)


def test_spectral_norm_stays_between_the_top_two_when_they_are_adjacent_floats():
    """With no float strictly between p_(2) and p_(1) the closed form is taken, and its
    roundings must not carry it past p_(1)."""
    rows = np.array([[0.45, 0.44999999999999996, 0.10000000000000009], [0.4000000000000001, 0.4, 0.19999999999999984]])
    got = jacobian_spectral_norm(rows)
    assert np.all((np.sort(rows, axis=1)[:, -2] <= got) & (got <= rows.max(axis=1))), got
    assert_secular_roots(rows, ulps=1.0)


def test_spectral_norm_of_a_batch_is_silent_where_one_row_finishes_early():
    """A row that converges in the first pass (its bracket left with no float inside) while
    the others go on is never evaluated at a pole: no warning, no floating-point error, and
    the same values as row by row."""
    early = [0.4, 0.3999999999999999, 0.20000000000000007]
    other = softmax([1.0, 2.0, 3.0]).tolist()
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        got = jacobian_spectral_norm([early, other, other])
    np.testing.assert_array_equal(got, [jacobian_spectral_norm(early), jacobian_spectral_norm(other), jacobian_spectral_norm(other)])


def test_spectral_norm_at_a_tie_at_the_top_is_the_tied_probability_exactly():
    """p_(1) = p_(2): e_i - e_j is an eigenvector of J with eigenvalue p_(1), the largest."""
    rows = np.array([[0.4, 0.4, 0.2, 0.0], [0.25, 0.25, 0.25, 0.25], [0.1, 0.3, 0.3, 0.3]])
    np.testing.assert_array_equal(jacobian_spectral_norm(rows), rows.max(axis=1))
    third = np.full(3, 1.0) / 3
    assert jacobian_spectral_norm(third) == third[0]


def test_spectral_norm_keeps_the_batch_shape_and_takes_one_scale_per_row():
    """Rows of shape (2, 3, 4, n) with a scale for each row, for each column of rows, or one
    for all: alpha times the secular root of each row (the product adds half an ulp)."""
    rng = np.random.default_rng(11)
    p = softmax(rng.standard_normal((2, 3, 4, 9)) * 2)
    roots = np.array([float(mp_secular_root(row)) for row in p.reshape(-1, 9)]).reshape(2, 3, 4)
    for alpha in (rng.uniform(0.5, 20, size=(2, 3, 4)), rng.uniform(0.5, 20, size=(3, 1)), 2.5):
        got = jacobian_spectral_norm(p, alpha)
        assert got.shape == (2, 3, 4)
        np.testing.assert_allclose(got, alpha * roots, rtol=3 * EPS, atol=0)


def test_spectral_norm_converges_within_eight_passes_and_refuses_too_few():
    """iterations caps the passes over a row: eight suffice for random, saturated, flat and
    near-tied rows (five at most have been needed) and give the default's values; one pass
    cannot converge a row that needs solving, and the refusal names iterations. Rows solved
    in closed form (ties, one-hot, two keys) need no pass."""
    rng = np.random.default_rng(5)
    rows = [softmax(rng.standard_normal((500, n)) * scale, alpha) for n in (3, 16, 256) for scale in (1e-6, 1.0) for alpha in (1.0, 8.0, 300.0)]
    flat = np.full((3, 100), 0.01)
    flat[:, 0] += np.spacing(0.01) * np.array([4, 16, 100])
    for p in rows + [flat]:
        np.testing.assert_array_equal(jacobian_spectral_norm(p, iterations=8), jacobian_spectral_norm(p))
    with pytest.raises(ValueError, match=named("iterations")):
        jacobian_spectral_norm(rows[1], iterations=1)
    closed = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.25, 0.75, 0.0], [0.4, 0.4, 0.2]])
    np.testing.assert_array_equal(jacobian_spectral_norm(closed, iterations=1), [0.5, 0.0, 0.375, 0.4])


@settings(max_examples=200, deadline=None)
@given(prob_vectors)
def test_spectral_norm_lies_within_two_ulps_of_a_sign_change_of_the_secular_function(p):
    """For any probability vector with two distinct positive leading entries, g changes sign
    between the result minus and plus two ulps (evaluated at 50 digits), and the result lies
    between p_(2) and p_(1)."""
    top = np.sort(p)[::-1]
    assume(p.size > 1 and top[1] > 0 and top[0] > top[1])
    got = float(jacobian_spectral_norm(p))
    assert top[1] <= got <= top[0]
    q = [mp.mpf(float(x)) for x in p if x > 0]
    spacing = mp.mpf(np.spacing(got))
    lo, hi = max(mp.mpf(got) - 2 * spacing, mp.mpf(top[1])), min(mp.mpf(got) + 2 * spacing, mp.mpf(top[0]))

    def g(mu):
        return mp.fsum(x / (x - mu) for x in q)

    assert (lo == top[1] or g(lo) <= 0) and (hi == top[0] or g(hi) >= 0), (p, got)


def test_jacobian_spectral_norm_with_many_iterations_is_silent_and_exact():
    """A cap far above what any row needs is allowed: a one-hot row is 0, its exact eigenvalue,
    and the masked 0/0 of its zero entries must not warn; a two-key row keeps 2 p1 p2 = 0.375."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = jacobian_spectral_norm(np.array([[1.0, 0.0, 0.0], [0.25, 0.75, 0.0]]), 1.0, iterations=1100)
    assert got[0] == 0.0
    assert got[1] == pytest.approx(0.375, rel=4 * EPS)


@settings(max_examples=200, deadline=None)
@given(prob_vectors, st.floats(1e-2, 1e2))
def test_measures_match_the_dense_matrix(p, alpha):
    J = softmax_jacobian(p, alpha)
    np.testing.assert_allclose(jacobian_frobenius(p, alpha), np.linalg.norm(J), rtol=1e-9, atol=1e-14 * alpha)
    np.testing.assert_allclose(jacobian_max_entry(p, alpha), np.abs(J).max(), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(jacobian_spectral_norm(p, alpha), np.linalg.norm(J, 2), rtol=1e-9, atol=1e-13 * alpha)


def test_spectral_norm_batched_and_ties():
    rng = np.random.default_rng(0)
    p = softmax(rng.normal(size=(5, 7, 30)) * 2)
    ref = np.linalg.eigvalsh(softmax_jacobian(p, 1.5))[..., -1]
    np.testing.assert_allclose(jacobian_spectral_norm(p, 1.5), ref, rtol=1e-12)
    np.testing.assert_allclose(jacobian_spectral_norm([0.4, 0.4, 0.2], 1.0), np.linalg.eigvalsh(softmax_jacobian([0.4, 0.4, 0.2]))[-1], rtol=1e-12)


@pytest.mark.parametrize(
    "logits, rtol",
    [
        ([[30.0, 5.0, 4.0, 0.0], [10.0, -10.0, -12.0, -30.0]], 1e-9),
        # p_(2) ~ 1e-17 next to p_(1) ~ 1: the root is ~2 p_(2); LAPACK on the accurate dense J is the reference
        ([40.0, 0.0, -6.0, -9.0], 1e-12),
    ],
    ids=["saturated", "tiny"],
)
def test_spectral_norm_keeps_its_relative_accuracy_in_saturated_rows(logits, rtol):
    p = softmax(np.array(logits))
    np.testing.assert_allclose(jacobian_spectral_norm(p), np.linalg.eigvalsh(softmax_jacobian(p))[..., -1], rtol=rtol)
    assert np.all(jacobian_spectral_norm(p) <= jacobian_frobenius(p))
