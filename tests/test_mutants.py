"""Tests written to kill mutants that survived the library's own suite (tools/mutate.sh).

Every expected value comes from an independent reference: a closed form
evaluated with mpmath, a dense matrix built here from the definition, a
finite difference, or a documented property (argument named in the error,
scalar in -> float out, no overflow warning where the docstring promises a
silent +-inf).
"""

from __future__ import annotations

import warnings

import mpmath as mp
import numpy as np
import pytest

from attnscale import _validate as v
from attnscale.entropy import collision, mean_field_entropy_cosine, mean_field_entropy_normal, softmax_entropy
from attnscale.montecarlo import gap_density_at_zero, rem_collision, row_optimum
from attnscale.optimum import (
    alpha_star_normal_asymptotic,
    collision_cosine,
    collision_normal,
    objective_cosine,
    n_for_alpha_normal,
    objective_normal,
)
from attnscale.scores import cosine_logpdf, dlog_mgf_cosine, log_mgf_cosine, log_mgf_normal, sample_cosines
from attnscale.softmax import (
    jacobian_frobenius,
    log_softmax,
    logsumexp,
    softmax,
    softmax_vjp,
)
from attnscale.special import bessel_ratio, bessel_ratio_complement, log_besseli, log_besseli_scaled

RNG = np.random.default_rng(20240611)


@pytest.fixture(autouse=True, scope="module")
def _thirty_digits():
    with mp.workdps(30):
        yield


def dense_jacobian(p, alpha):
    """J = alpha (diag p - p p^T), built from the definition."""
    p = np.asarray(p, float)
    return alpha * (np.diag(p) - np.outer(p, p))


def mp_lse(row, alpha=1.0):
    return float(mp.log(mp.fsum(mp.exp(mp.mpf(alpha) * mp.mpf(x)) for x in row)))


# ---- softmax --------------------------------------------------------------------


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


def test_a_single_fully_masked_row_in_a_batch_is_rejected():
    s = np.array([[0.0, 1.0], [-np.inf, -np.inf]])
    for f in (softmax, logsumexp, log_softmax):
        with pytest.raises(ValueError, match="fully masked"):
            f(s)
        with pytest.raises(ValueError, match="fully masked"):
            f(s.T, axis=0)


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


def test_softmax_vjp_names_its_arguments():
    with pytest.raises(ValueError, match=r"^p must sum to 1"):
        softmax_vjp([0.5, 0.6], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"^g must be finite"):
        softmax_vjp([0.5, 0.5], [1.0, np.nan])


def test_jacobian_frobenius_on_a_batch_with_one_scale_per_row():
    p = softmax(RNG.normal(size=(3, 4)) * 2)
    alphas = np.array([0.5, 2.0, 3.0])
    ref = [np.linalg.norm(dense_jacobian(p[i], alphas[i]), "fro") for i in range(3)]
    np.testing.assert_allclose(jacobian_frobenius(p, alphas), ref, rtol=1e-13)
    with pytest.raises(ValueError, match=r"^p must be >= 0"):
        jacobian_frobenius([1.5, -0.5])


# ---- entropy --------------------------------------------------------------------


def test_collision_on_a_batch():
    p = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    np.testing.assert_allclose(collision(p), [0.5, 0.04 + 0.09 + 0.25], rtol=1e-15)
    with pytest.raises(ValueError, match=r"^p must sum"):
        collision([0.5, 0.6])


def test_mean_field_entropy_normal_closed_form():
    for a, n in [(0.3, 10.0), (1.7, 1e4), (2.5, 3.0)]:
        out = mean_field_entropy_normal(a, n)
        assert type(out) is float  # a plain float, not np.float64 (which numpy 2 prints as np.float64(...))
        assert out == pytest.approx(float(mp.log(n) - mp.mpf(a) ** 2 / 2), rel=1e-14)
    out = mean_field_entropy_normal(np.array([0.5, 2.0]), 100.0)
    assert isinstance(out, np.ndarray) and out.shape == (2,)
    with pytest.raises(ValueError, match=r"^alpha must be > 0"):
        mean_field_entropy_normal(-1.0, 10.0)


# ---- optimum --------------------------------------------------------------------


def test_collision_and_objective_normal_closed_forms():
    for a, n in [(0.5, 10.0), (1.5, 1e3), (3.0, 2.0)]:
        c = float(mp.exp(mp.mpf(a) ** 2) / n)
        assert collision_normal(a, n) == pytest.approx(c, rel=1e-14)
        assert objective_normal(a, n) == pytest.approx(a * (1 - c), rel=1e-12)


def test_normal_and_cosine_overflow_is_a_silent_inf():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert collision_normal(40.0, 2.0) == np.inf
        assert objective_normal(40.0, 2.0) == -np.inf
        assert n_for_alpha_normal(40.0) == np.inf
        assert collision_cosine(1e20, 10.0, 4096.0) == np.inf
        assert objective_cosine(1e20, 10.0, 4096.0) == -np.inf


def test_cosine_mean_field_names_alpha():
    with pytest.raises(ValueError, match=r"^alpha must be > 0"):
        objective_cosine(-1.0, 10.0, 3.0)


def test_asymptotic_alpha_star_closed_forms():
    for n in [3.0, 10.0, 1e3, 1e12]:
        L = mp.log(n)
        two = mp.sqrt(L - mp.log(2 * L))
        assert alpha_star_normal_asymptotic(n) == pytest.approx(float(two), rel=1e-14)  # default: two terms
        assert alpha_star_normal_asymptotic(n, terms=1) == pytest.approx(float(mp.sqrt(L)), rel=1e-14)
        if n >= 10:
            three = mp.sqrt(L - mp.log(2 * L) + (mp.log(2 * L) - mp.mpf(1) / 2) / L)
            assert alpha_star_normal_asymptotic(n, terms=3) == pytest.approx(float(three), rel=1e-14)
    # the three-term argument L - log 2L + (log 2L - 1/2)/L is negative at n = 1.5: the message shows n
    with pytest.raises(ValueError, match=r"got 1\.5$"):
        alpha_star_normal_asymptotic(np.array([5.0, 1.5]), terms=3)  # 5 is valid (argument 0.86)


# ---- scores ---------------------------------------------------------------------


def test_cosine_logpdf_closed_form_and_errors():
    for s, d in [(0.3, 3.0), (-0.7, 10.0), (0.05, 512.0)]:
        ref = (d - 3) / 2 * mp.log(1 - mp.mpf(s) ** 2) - mp.log(mp.beta(mp.mpf(1) / 2, (mp.mpf(d) - 1) / 2))
        out = cosine_logpdf(s, d)
        assert type(out) is float
        assert out == pytest.approx(float(ref), rel=1e-11, abs=1e-13)
    with pytest.raises(ValueError, match=r"^s must be finite"):
        cosine_logpdf(np.nan, 3.0)
    with pytest.raises(ValueError, match=r"got 1\.5$"):
        cosine_logpdf([0.0, 1.5], 3.0)


def test_sample_cosines_law_and_shapes():
    d = 9.0
    x = sample_cosines(np.random.default_rng(1), 200_000, d)
    assert x.min() > -1 and x.max() < 1
    assert abs(x.mean()) < 5 * np.sqrt(1 / d / x.size)
    assert x.var() == pytest.approx(1 / d, rel=0.02)
    # E|s| = 2 int_0^1 s p(s) ds, by mpmath quadrature of the density
    ea = 2 * mp.quad(lambda t: t * (1 - t * t) ** ((d - 3) / 2) / mp.beta(0.5, (d - 1) / 2), [0, 1])
    assert np.abs(x).mean() == pytest.approx(float(ea), rel=0.01)
    assert sample_cosines(np.random.default_rng(2), (2, 3), 5.0).shape == (2, 3)
    assert sample_cosines(np.random.default_rng(2), 0, 5.0).shape == (0,)
    assert sample_cosines(np.random.default_rng(2), (0, 2), 5.0).shape == (0, 2)
    with pytest.raises(TypeError, match=r"got int$"):
        sample_cosines(42, 3, 5.0)


def test_log_mgf_normal_closed_form():
    for a in [-2.0, 0.0, 0.7, 30.0]:
        out = log_mgf_normal(a)
        assert type(out) is float
        # log E[exp(a s)] for s ~ N(0, 1), by quadrature
        ref = mp.log(mp.quad(lambda s: mp.exp(a * s) * mp.npdf(s), [-mp.inf, a, mp.inf]))
        assert out == pytest.approx(float(ref), rel=1e-12, abs=1e-14)
    assert log_mgf_normal(np.array([1.0, 2.0])).shape == (2,)
    with pytest.raises(ValueError, match=r"^alpha must be finite"):
        log_mgf_normal(np.inf)


# ---- special --------------------------------------------------------------------


def test_bessel_functions_keep_the_broadcast_shape_and_return_floats_for_scalars():
    nu = np.array([[0.0], [2.5]])
    x = np.array([0.5, 3.0, 40.0])
    for f, ref in [
        (log_besseli, lambda n, t: mp.log(mp.besseli(n, t))),
        (log_besseli_scaled, lambda n, t: mp.log(mp.besseli(n, t)) - t),
        (bessel_ratio, lambda n, t: mp.besseli(n + 1, t) / mp.besseli(n, t)),
        (bessel_ratio_complement, lambda n, t: 1 - mp.besseli(n + 1, t) / mp.besseli(n, t)),
    ]:
        out = f(nu, x)
        assert isinstance(out, np.ndarray) and out.shape == (2, 3)
        want = [[float(ref(mp.mpf(n), mp.mpf(t))) for t in x] for n in nu[:, 0]]
        np.testing.assert_allclose(out, want, rtol=1e-12)
        scalar = f(1.0, 2.0)
        assert isinstance(scalar, float)
        assert scalar == pytest.approx(float(ref(mp.mpf(1), mp.mpf(2))), rel=1e-12)


def test_bessel_order_errors_name_nu_and_show_the_negative_order():
    with pytest.raises(ValueError, match=r"^nu must be finite"):
        log_besseli(np.nan, 1.0)
    with pytest.raises(ValueError, match=r"got -1\.5$"):
        log_besseli([0.0, 0.5, -1.5], 1.0)


# ---- montecarlo -----------------------------------------------------------------


def _two_key_optimum(gap):
    """For n = 2 and gap D, alpha (1 - sum p^2) = alpha / (2 cosh^2(alpha D / 2)); with
    u = alpha D / 2 the maximiser solves 2 u tanh u = 1."""
    u = mp.findroot(lambda u: 2 * u * mp.tanh(u) - 1, 0.77)
    return float(2 * u / gap)


def test_row_optimum_against_the_two_key_closed_form():
    gaps = np.array([20.0, 3.0, 0.5, 1e-2])
    scores = np.stack([np.zeros_like(gaps), -gaps], axis=1)
    want = [_two_key_optimum(g) for g in gaps]
    assert want[0] < 1.05  # inside the default bracket [0.05, 1e4]
    np.testing.assert_allclose(row_optimum(scores), want, rtol=1e-6)  # a flat maximum: ~sqrt(eps)
    # one golden-section step is allowed and stays in [lo, hi]
    one = row_optimum(scores, iterations=1)
    assert np.all((one >= 0.05) & (one <= 1e4))


def test_row_optimum_clamps_to_the_bracket():
    # maximiser far below lo (the objective decreases on [lo, hi], and underflows to 0 there)
    assert row_optimum(np.array([[0.0, -1e6]]))[0] == pytest.approx(0.05, rel=1e-9)
    assert row_optimum(np.array([[0.0, -400.0]]))[0] == pytest.approx(0.05, rel=1e-9)
    # maximiser far above hi
    assert row_optimum(np.array([[0.0, -1e-7]]))[0] == pytest.approx(1e4, rel=1e-9)
    assert row_optimum(np.array([[0.0, -1e-7]]), lo=0.5, hi=2.0)[0] == pytest.approx(2.0, rel=1e-9)


def test_row_optimum_argument_errors():
    s = np.array([[0.0, -1.0]])
    with pytest.raises(ValueError, match=r"^lo must be finite"):
        row_optimum(s, lo=np.nan)
    with pytest.raises(ValueError, match=r"^lo must be > 0"):
        row_optimum(s, lo=-1.0)
    with pytest.raises(TypeError, match=r"^lo must be a real number"):
        row_optimum(s, lo="a")
    with pytest.raises(ValueError, match=r"^hi must be finite"):
        row_optimum(s, hi=np.inf)
    with pytest.raises(ValueError, match=r"^hi must be > 0"):
        row_optimum(s, hi=-2.0)
    with pytest.raises(TypeError, match=r"^hi must be a real number"):
        row_optimum(s, hi=None)
    with pytest.raises(ValueError, match="need 0 < lo < hi"):
        row_optimum(s, lo=2.0, hi=2.0)
    with pytest.raises(ValueError, match=r"^iterations must be an integer >= 1"):
        row_optimum(s, iterations=0)


def _gap_density_reference(n):
    f = lambda x: n * (n - 1) * mp.npdf(x) ** 2 * mp.ncdf(x) ** (n - 2)  # noqa: E731
    t = mp.sqrt(2 * mp.log(n))
    return float(mp.quad(f, [-mp.inf, -5, t - 2, t - 1, t, t + 1, t + 2, mp.inf]))


def test_gap_density_closed_forms_and_mpmath():
    # n = 2: X1 - X2 ~ N(0, 2), so |gap| has density 2 / sqrt(4 pi) = 1 / sqrt(pi) at 0
    assert gap_density_at_zero(2) == pytest.approx(1 / np.sqrt(np.pi), rel=1e-13)
    # n = 3: 6 int phi^2 Phi = 6 E[Phi(Y)] / (2 sqrt(pi)), Y ~ N(0, 1/2), E[Phi(Y)] = 1/2
    assert gap_density_at_zero(3) == pytest.approx(3 / (2 * np.sqrt(np.pi)), rel=1e-13)
    for n in (10, 1000, 10**6):
        assert gap_density_at_zero(n) == pytest.approx(_gap_density_reference(n), rel=1e-12)


def test_rem_collision_closed_form():
    out = rem_collision(5.0, 100.0)
    assert type(out) is float
    assert out == pytest.approx(1 - np.sqrt(2 * np.log(100.0)) / 5.0, rel=1e-14)
    assert rem_collision(1.0, 100.0) == 0.0
    assert rem_collision(np.array([1.0, 5.0]), 100.0).shape == (2,)
    with pytest.raises(ValueError, match=r"^alpha must be > 0"):
        rem_collision(0.0, 100.0)


# ---- _validate -------------------------------------------------------------------


def test_validators_reject_bools_and_name_the_type():
    with pytest.raises(TypeError, match=r"^x must be a real number"):
        v.real_number(True, "x")
    assert v.real_number(2, "x") == 2.0
    with pytest.raises(TypeError, match=r"^rng must be a numpy Generator.*got int$"):
        v.generator(5)
    g = np.random.default_rng(0)
    assert v.generator(g) is g


def test_batch_rows_at_very_different_offsets_are_shifted_row_by_row():
    # each row is shifted by its own maximum: a row 1000 below another must not underflow
    s = np.array([[0.0, 1.0], [-1000.0, -999.0]])
    ref = [mp_lse(r) for r in s]
    np.testing.assert_allclose(logsumexp(s), ref, rtol=1e-15)
    np.testing.assert_allclose(log_softmax(s), s - np.array(ref)[:, None], rtol=1e-13)
    np.testing.assert_allclose(softmax_entropy(s), [softmax_entropy(s[0])] * 2, rtol=1e-13)


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


def test_hankel_region_against_mpmath():
    # x > max(2000, 50 (nu + 1)^2): the large-argument expansion
    for nu, x in [(0.0, 2500.0), (1.5, 3000.0), (5.0, 1e4)]:
        I0, I1 = mp.besseli(nu, x), mp.besseli(nu + 1, x)
        assert log_besseli_scaled(nu, x) == pytest.approx(float(mp.log(I0) - x), rel=1e-14)
        assert bessel_ratio_complement(nu, x) == pytest.approx(float(1 - I1 / I0), rel=1e-13)


def test_mapping_names_the_type():
    with pytest.raises(TypeError, match=r"^cfg must be a dict, got int$"):
        v.mapping(5, "cfg")
