"""Tests written to kill the mutants of optimum, montecarlo, special and softmax that
survived the rest of the suite (tools/mutate.sh).

Every expected value is independent of the code under test: a closed form
evaluated with mpmath, a dense matrix or a brute-force sum built here from the
definition, or a documented property (convergence within the stated number of
steps, the argument named in an error message, the input shape kept).
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

import warnings

import attnscale.optimum as optimum
from attnscale.montecarlo import collision_and_gradient
from attnscale.optimum import alpha_star_cosine, alpha_star_normal
from attnscale.softmax import jacobian_frobenius, jacobian_max_entry, jacobian_spectral_norm, softmax
from attnscale.special import log_besseli, log_besseli_scaled

# ---- optimum: alpha* for normal scores ---------------------------------------------

NORMAL_NS = np.concatenate([1.0 + np.logspace(-15, 0, 16), np.logspace(0.5, 308, 24)])


def test_alpha_star_normal_newton_converges_in_six_steps(monkeypatch):
    # the docstring: Newton from x = log n is quadratic, at most about six steps up to 1e308
    # (a wrong derivative still finds the root, but only linearly, in many more steps)
    monkeypatch.setattr(optimum, "NEWTON_STEPS", 6)
    got = alpha_star_normal(NORMAL_NS)
    with mp.workdps(50):
        for n, a in zip(NORMAL_NS, got):
            x = mp.mpf(float(a)) ** 2
            # exp(a^2) (1 + 2 a^2) = n; in logs, relative to the size of the terms
            residual = x + mp.log1p(2 * x) - mp.log(mp.mpf(float(n)))
            assert abs(residual) <= 1e-14 * (x + mp.log1p(2 * x)), (n, a)


def test_alpha_star_normal_unconverged_error_shows_n(monkeypatch):
    monkeypatch.setattr(optimum, "NEWTON_STEPS", 1)
    with pytest.raises(ArithmeticError) as info:
        alpha_star_normal(12345.0)
    assert "n = 12345.0" in str(info.value)


# ---- optimum: cosine scores, d = 3 in closed form ------------------------------------
# d = 3: M(a) = sinh(a)/a, so R(a) = M(2a)/M(a)^2 = a coth(a) and a (log R)'(a) = 1 - 2a/sinh(2a)


def _mp_log_r_d3(a):
    return mp.log(a * mp.coth(a))


def _mp_slope_d3(a):
    return 1 - 2 * a / mp.sinh(2 * a)


def _mp_alpha_star_d3(n, start):
    """Root of log R + log(1 + a (log R)') = log n in log a, for d = 3, at 50 digits."""
    with mp.workdps(50):
        n = mp.mpf(float(n))

        def h(t):
            a = mp.e**t
            return _mp_log_r_d3(a) + mp.log1p(_mp_slope_d3(a)) - mp.log(n)

        return float(mp.e ** mp.findroot(h, mp.log(mp.mpf(float(start)))))


def test_cosine_terms_d3_against_closed_forms():
    # the slope for small alpha is ~ 2 alpha^2 / 3: it must come from r(2a) - r(a), not from
    # the difference of the complements 1 - r, which are close to 1 there
    a = np.array([1e-8, 1e-6, 1e-3, 0.1, 1.0, 7.0, 30.0, 300.0, 5000.0, 1e6])
    log_r, slope = optimum._cosine_terms(a.copy(), np.full(a.size, 3.0))
    with mp.workdps(50):
        ref_log_r = [float(_mp_log_r_d3(mp.mpf(x))) for x in a]
        ref_slope = [float(_mp_slope_d3(mp.mpf(x))) for x in a]
    np.testing.assert_allclose(log_r, ref_log_r, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(slope, ref_slope, rtol=1e-11)


def test_alpha_star_cosine_d3_near_n_one_against_mpmath():
    # n close to 1: alpha* is small and the slope term decides the root
    for n in (1.0 + 1e-9, 1.0 + 1e-6, 1.001):
        got = alpha_star_cosine(n, 3)
        assert abs(got / _mp_alpha_star_d3(n, got) - 1) <= 1e-11, n


D3_FAST = [1.001, 1.5, 40.0, 2e4, 1e12]


def test_alpha_star_cosine_illinois_converges_in_fifteen_steps():
    # Illinois from a factor-2 bracket is superlinear: 15 steps give full precision here
    # (plain bisection, or regula falsi with a stuck endpoint, would need about 50)
    got = alpha_star_cosine(np.array(D3_FAST), 3, iterations=15)
    for n, a in zip(D3_FAST, got):
        assert abs(a / _mp_alpha_star_d3(n, a) - 1) <= 1e-13, n


def test_alpha_star_cosine_stops_once_converged(monkeypatch):
    # the docstring: it usually stops after about ten steps; count the evaluations of
    # R and its slope (bracketing plus regula falsi) rather than run all 60 iterations
    calls = []
    real = optimum._cosine_terms

    def counted(a, d):
        calls.append(a.size)
        return real(a, d)

    monkeypatch.setattr(optimum, "_cosine_terms", counted)
    for n, d in [(1.001, 2.0), (1.5, 16.0), (40.0, 5.0), (2e4, 3.0), (1e12, 1024.0)]:
        calls.clear()
        alpha_star_cosine(n, d)
        assert len(calls) <= 20, (n, d, len(calls))


def test_alpha_star_cosine_beyond_the_bessel_range_raises():
    # for d = 3 the optimum is about n/2; for n = 1e300 that is far beyond alpha = 1e25,
    # where the Bessel functions are trusted, and the bracket cannot be formed
    with pytest.raises(ValueError) as info:
        alpha_star_cosine(1e300, 3)
    assert str(info.value) == "n is too large for d: the optimum could not be bracketed"


# ---- montecarlo ------------------------------------------------------------------


def _dense_collision(z, alpha):
    p = np.exp(alpha * (z - z.max(axis=1, keepdims=True)))
    p /= p.sum(axis=1, keepdims=True)
    return np.sum(p * p, axis=1)


def test_collision_and_gradient_chunks_cover_every_row():
    # more rows than keys, in chunks of one and of two: every row is filled, whatever the chunking
    z = np.random.default_rng(7).normal(size=(9, 3))
    alphas = np.array([0.5, 2.0])
    ref = np.array([_dense_collision(z, a) for a in alphas])
    for chunk in (1, 2, 256):
        coll, grad = collision_and_gradient(z, alphas, chunk=chunk)
        np.testing.assert_allclose(coll, ref, rtol=1e-13)
        np.testing.assert_allclose(grad, alphas[:, None] * (1 - ref), rtol=1e-12)


def test_collision_and_gradient_chunk_error_names_chunk():
    with pytest.raises(ValueError) as info:
        collision_and_gradient(np.zeros((2, 3)), [1.0], chunk=0)
    assert str(info.value).startswith("chunk must be an integer >= 1")


# ---- special ---------------------------------------------------------------------


def test_log_besseli_at_arguments_whose_square_underflows_is_silent():
    # x^2/4 underflows to 0 for x = 1e-200: log I_nu(x) = nu log(x/2) - log Gamma(nu+1) + O(x^2),
    # and the log(0) inside the series must not leak a divide-by-zero warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = log_besseli(np.array([0.5, 3.0]), 1e-200)
        scaled = log_besseli_scaled(0.5, 1e-200)
    with mp.workdps(30):
        ref = [float(nu * mp.log(mp.mpf("5e-201")) - mp.loggamma(nu + 1)) for nu in (0.5, 3.0)]
    np.testing.assert_allclose(got, ref, rtol=1e-14)
    np.testing.assert_allclose(scaled, ref[0], rtol=1e-14)


# ---- softmax ---------------------------------------------------------------------


def _dense_jacobian(p, alpha=1.0):
    p = np.asarray(p, dtype=float)
    return alpha * (np.diag(p) - np.outer(p, p))


def test_jacobian_norms_default_scale_is_one():
    p = softmax(np.array([0.3, -1.2, 2.0, 0.7]))
    J = _dense_jacobian(p)
    np.testing.assert_allclose(jacobian_frobenius(p), np.linalg.norm(J), rtol=1e-13)
    np.testing.assert_allclose(jacobian_max_entry(p), np.abs(J).max(), rtol=1e-13)
    # one vector in, one value out (no batch axis appears)
    assert np.ndim(jacobian_max_entry(p)) == 0 and np.ndim(jacobian_frobenius(p)) == 0


def test_jacobian_max_entry_on_a_batch_with_one_scale_per_row():
    p = softmax(np.random.default_rng(3).normal(size=(3, 5)))
    alpha = np.array([0.5, 2.0, 7.0])
    got = jacobian_max_entry(p, alpha)
    assert got.shape == (3,)
    np.testing.assert_allclose(got, [np.abs(_dense_jacobian(row, a)).max() for row, a in zip(p, alpha)], rtol=1e-13)
    got = jacobian_max_entry(p, 2.0)
    assert got.shape == (3,)
    np.testing.assert_allclose(got, [np.abs(_dense_jacobian(row, 2.0)).max() for row in p], rtol=1e-13)


def test_jacobian_spectral_norm_of_single_key_rows_is_zero_per_row():
    # n = 1: p = [1], J = alpha (p - p^2) = 0
    got = jacobian_spectral_norm(np.ones((3, 1)), np.array([1.0, 2.0, 3.0]))
    assert got.shape == (3,)
    np.testing.assert_allclose(got, 0.0, atol=1e-15)


def test_jacobian_spectral_norm_at_a_tie_is_silent():
    # p = (1/2, 1/2): the bracket [p_(2), p_(1)] is a point, p - mu = 0 there; J has eigenvalues 0 and 1/2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = jacobian_spectral_norm(np.array([[0.5, 0.5], [0.25, 0.75]]))
    ref = [np.linalg.eigvalsh(_dense_jacobian(row)).max() for row in ([0.5, 0.5], [0.25, 0.75])]
    np.testing.assert_allclose(got, ref, rtol=1e-14)


def test_jacobian_spectral_norm_error_names_p():
    with pytest.raises(ValueError) as info:
        jacobian_spectral_norm([0.5, 0.6])
    assert str(info.value).startswith("p must sum to 1")


@pytest.mark.parametrize(
    "s, axis, message",
    [
        ([0.0, np.nan], -1, "s must not contain NaN, got array of shape (2,) [0.0, nan]"),
        ([0.0, np.inf], -1, "s must not contain +inf (only -inf, as a mask, is allowed)"),
        (np.zeros((0, 3)), 0, "s must have at least one entry along axis 0, got shape (0, 3)"),
        ([[0.0, 1.0], [-np.inf, -np.inf]], -1, "s has a slice whose every entry is -inf (fully masked): its softmax is undefined"),
    ],
)
def test_softmax_score_errors_word_for_word(s, axis, message):
    with pytest.raises(ValueError) as info:
        softmax(np.array(s), 1.0, axis)
    assert str(info.value) == message


# ---- softmax.power_weights and montecarlo.typical_row_optimum (added after the first mutation run) ----


def test_power_weights_messages_defaults_axis_and_extreme_scales():
    from attnscale.softmax import power_weights

    for call, kind, message in (
        (lambda: power_weights([np.nan, 1.0]), ValueError, "s must be finite"),
        (lambda: power_weights(3.0), ValueError, "s must have at least one axis"),
        (lambda: power_weights([1.0, 2.0], m="x"), TypeError, "m must be a real number"),
        (lambda: power_weights([1.0, 2.0], m=0.0), ValueError, "m must be > 0"),
        (lambda: power_weights([1.0, 2.0], scale=0.0), ValueError, "scale must be > 0"),
        (lambda: power_weights([-1.0, -2.0]), ValueError, "s must have a positive score in every row (relu^m"),
    ):
        with pytest.raises(kind) as info:
            call()
        assert str(info.value).startswith(message), str(info.value)
    # the default power is 2: relu(s)^2 / sum relu(s)^2
    np.testing.assert_allclose(power_weights([1.0, 2.0, -1.0]), [0.2, 0.8, 0.0], rtol=1e-15)
    # along axis 0 each column is one distribution
    s = np.array([[1.0, 3.0], [2.0, 1.0]])
    np.testing.assert_allclose(power_weights(s, axis=0), [[0.2, 0.9], [0.8, 0.1]], rtol=1e-14)
    # the scale cancels even where s / scale would overflow: it multiplies the scores
    # (through logarithms near -668, so rounding is amplified about a thousandfold)
    np.testing.assert_allclose(power_weights([1e10, 2e10], scale=1e-300), [0.2, 0.8], rtol=1e-12)


def test_typical_row_optimum_against_a_two_key_closed_form_and_its_bounds():
    """For one row of two keys with gap 3, alpha (1 - sum p^2) = 2 alpha p (1 - p) is
    (2/3) u sech^2(u) / 2 with u = 3 alpha / 2, largest where 2 u tanh(u) = 1."""
    from scipy.optimize import brentq

    from attnscale.montecarlo import typical_row_optimum

    u = brentq(lambda x: 2 * x * np.tanh(x) - 1, 0.1, 2.0, xtol=1e-14)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unknown solver option would warn
        got = typical_row_optimum(np.array([[0.0, 3.0]]))
    assert abs(got / (2 * u / 3) - 1) < 2e-4
    # an optimum beyond the default upper bound 60 stops at it
    edge = typical_row_optimum(np.array([[0.0, 0.01]]))
    assert abs(edge / 60.0 - 1) < 1e-3
    for call, kind, message in (
        (lambda: typical_row_optimum([[np.nan, 1.0]]), ValueError, "scores must be finite"),
        (lambda: typical_row_optimum([[0.0, 1.0]], measure=3), TypeError, "measure must be a function of (p, alpha), got int"),
        (lambda: typical_row_optimum([[0.0, 1.0]], lo=np.nan), ValueError, "lo must be finite"),
        (lambda: typical_row_optimum([[0.0, 1.0]], lo=-1.0), ValueError, "lo must be > 0"),
        (lambda: typical_row_optimum([[0.0, 1.0]], hi=np.nan), ValueError, "hi must be finite"),
        (lambda: typical_row_optimum([[0.0, 1.0]], hi=-1.0), ValueError, "hi must be > 0"),
        (lambda: typical_row_optimum([[0.0, 1.0]], lo=1.0, hi=1.0), ValueError, "need lo < hi"),
        (lambda: typical_row_optimum([[0.0, 1.0]], measure=lambda p, a: np.zeros(len(p))), ValueError, "measure must return one positive value per row"),
    ):
        with pytest.raises(kind) as info:
            call()
        assert str(info.value).startswith(message), str(info.value)
