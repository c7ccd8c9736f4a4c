"""Bessel functions in the log domain, cosine scores, and alpha* for cosine scores,
against mpmath references at 60 to 90 digits."""

import mpmath as mp
import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import betaln

from attnscale.optimum import alpha_star_cosine, alpha_star_normal, collision_cosine, objective_cosine
from attnscale.scores import cosine_logpdf, dlog_mgf_cosine, log_mgf_cosine, sample_cosines
from attnscale.special import bessel_ratio, bessel_ratio_complement, log_besseli, log_besseli_scaled

ORDERS = [0, 0.5, 1, 2.5, 10, 49.5, 63, 99, 99.5, 100, 150, 511, 1023, 2047]
ARGS = [1e-8, 1e-3, 0.5, 3, 10, 30, 100, 300, 1000, 2500, 5000, 2e4, 1e5, 1e6, 1e9, 1e15, 1e23]


def mp_log_besseli(nu, x):
    return mp.log(mp.besseli(nu, x, maxterms=10**6))


@pytest.mark.parametrize("nu", ORDERS)
def test_log_besseli_and_ratios_against_mpmath(nu):
    with mp.workdps(90):
        for x in ARGS:
            ref = mp_log_besseli(nu, x)
            scaled = ref - x
            assert abs(log_besseli_scaled(nu, x) - float(scaled)) <= 1e-13 * max(1.0, abs(float(scaled)))
            assert abs(log_besseli(nu, x) - float(ref)) <= 1e-13 * max(1.0, abs(float(ref)))
            ratio = mp.exp(mp_log_besseli(nu + 1, x) - ref)
            assert abs(bessel_ratio(nu, x) / float(ratio) - 1) <= 1e-11
            assert abs(bessel_ratio_complement(nu, x) / float(1 - ratio) - 1) <= 1e-10


def test_log_mgf_cosine_against_quadrature_and_closed_forms():
    for d in (2.5, 4.0, 16.0, 128.0):
        for a in (0.5, 5.0, 50.0):
            integrand = lambda s: np.exp(a * (s - 1) + 0.5 * (d - 3) * np.log1p(-s * s) - betaln(0.5, 0.5 * (d - 1)))
            value, _ = quad(integrand, -1, 1, epsabs=0, epsrel=1e-13, limit=400)
            np.testing.assert_allclose(log_mgf_cosine(a, d), a + np.log(value), rtol=1e-10)
    a = [1e-6, 0.3, 7.0, 300.0]  # d = 3: M(alpha) = sinh(alpha) / alpha
    with mp.workdps(50):
        ref = [float(mp.log(mp.sinh(x) / x)) for x in a]
    np.testing.assert_allclose(log_mgf_cosine(np.array(a), 3), ref, rtol=1e-13)


def test_dlog_mgf_is_the_derivative():
    a, d, h = np.array([0.1, 2.0, 30.0, 500.0]), 64.0, 1e-5
    fd = (log_mgf_cosine(a * (1 + h), d) - log_mgf_cosine(a * (1 - h), d)) / (2 * a * h)
    np.testing.assert_allclose(dlog_mgf_cosine(a, d), fd, rtol=1e-7)
    np.testing.assert_allclose(dlog_mgf_cosine(1e-4, 64.0), 1e-4 / 64, rtol=1e-6)  # E_tilt[s] ~ alpha Var(s) = alpha / d


def test_cosine_density_and_sampler():
    s = np.linspace(-0.99, 0.99, 7)
    np.testing.assert_allclose(np.exp(cosine_logpdf(s, 3.0)), 0.5, rtol=1e-14)  # uniform on [-1, 1] for d = 3
    value, _ = quad(lambda t: np.exp(cosine_logpdf(t, 7.0)), -1, 1)
    np.testing.assert_allclose(value, 1.0, rtol=1e-12)
    draws = sample_cosines(np.random.default_rng(0), 200_000, 16.0)
    np.testing.assert_allclose(draws.var(), 1 / 16, rtol=0.02)


def mp_alpha_star_cosine(n, d):
    with mp.workdps(60):
        nu = mp.mpf(d) / 2 - 1

        def log_m(a):
            return mp.loggamma(nu + 1) + nu * mp.log(2 / a) + mp.log(mp.besseli(nu, a, maxterms=10**6))

        def h(log_a):
            a = mp.e**log_a
            log_r = log_m(2 * a) - 2 * log_m(a)
            slope = mp.diff(lambda t: log_m(2 * t) - 2 * log_m(t), a)
            return log_r + mp.log(1 + a * slope) - mp.log(n)

        # Newton from the library's value. mpmath's own check (|h|^2 below about 1e-58) can fail on the
        # noise of the numerical derivative (3e-25 at n = 1e12, d = 2, where a = 1.4e23); h grows like
        # log a, so a residual below 1e-20 moves the root by about 1e-20 of itself, far below the 1e-9
        # the test compares
        root = mp.findroot(h, mp.log(alpha_star_cosine(float(n), float(d))), verify=False)
        assert abs(h(root)) < mp.mpf(10) ** -20, (n, d, h(root))
        return mp.e**root


@pytest.mark.parametrize("d", [2, 3, 5, 16, 128, 1024, 4096])
def test_alpha_star_cosine_against_mpmath(d):
    for n in (1.5, 40.0, 2e4, 1e6, 1e12):
        got = alpha_star_cosine(n, d)
        ref = mp_alpha_star_cosine(n, d)
        assert abs(got / float(ref) - 1) <= 1e-9, (n, d, got, ref)


def test_alpha_star_cosine_closed_form_d3_and_maximises():
    # d = 3: M = sinh(a)/a, R = a coth(a), and for large n the optimum is n/2
    np.testing.assert_allclose(alpha_star_cosine(np.array([2e4, 1e12]), 3), [1e4, 5e11], rtol=1e-12)
    n, d = np.array([[100.0], [5000.0]]), np.array([32.0, 128.0, 512.0])
    a = alpha_star_cosine(n, d)
    assert a.shape == (2, 3)
    for eps in (1e-3, -1e-3):
        assert np.all(objective_cosine(a * (1 + eps), n, d) < objective_cosine(a, n, d))
    assert np.all(collision_cosine(a, n, d) < 1)


def test_large_d_limit_is_the_gaussian_optimum():
    n = 512.0
    ratios = alpha_star_cosine(n, np.array([512.0, 4096.0, 65536.0])) / (np.sqrt([512.0, 4096.0, 65536.0]) * alpha_star_normal(n))
    assert np.all(np.diff(np.abs(ratios - 1)) < 0) and abs(ratios[-1] - 1) < 1e-3


def test_vectorised_grid_shape():
    grid = alpha_star_cosine(np.arange(40, 401, 40.0)[:, None], np.array([32.0, 64.0, 128.0, 256.0, 512.0]))
    assert grid.shape == (10, 5) and np.all(np.diff(grid, axis=0) > 0) and np.all(np.diff(grid, axis=1) > 0)


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda: alpha_star_cosine(10.0, 1.5), ValueError, "d must be >= 2"),
        (lambda: alpha_star_cosine(1.0, 16), ValueError, "n must be > 1"),
        (lambda: alpha_star_cosine(np.nan, 16), ValueError, "n must be finite"),
        (lambda: alpha_star_cosine(10.0, np.inf), ValueError, "d must be finite"),
        (lambda: alpha_star_cosine(10.0, 16, iterations=0), ValueError, "iterations must be an integer >= 1"),
        (lambda: log_besseli(-1.0, 2.0), ValueError, "nu must be >= 0"),
        (lambda: log_besseli(1.0, 0.0), ValueError, "x must be > 0"),
        (lambda: bessel_ratio(1.0, np.nan), ValueError, "x must be finite"),
        (lambda: log_mgf_cosine(-1.0, 16), ValueError, "alpha must be > 0"),
        (lambda: cosine_logpdf(1.0, 16), ValueError, "s must lie in (-1, 1)"),
        (lambda: sample_cosines("rng", 3, 16), TypeError, "rng must be a numpy Generator"),
        (lambda: sample_cosines(np.random.default_rng(0), 3, 1), ValueError, "d must be >= 2"),
    ],
)
def test_bad_input(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value)


@pytest.mark.parametrize("x", [1e-300, 1e-200, 1e-120, 1e-50, 1e-10, 2e-9, 1e-5])
def test_bessel_ratio_at_tiny_arguments_against_mpmath(x):
    """Down to x = 1e-300 (where x^2/4 underflows) the ratio keeps full relative accuracy, never 0."""
    for nu in (0.0, 2.0, 31.0, 500.0):
        with mp.workdps(40):
            ref = mp.besseli(nu + 1, mp.mpf(x)) / mp.besseli(nu, mp.mpf(x))
        got = bessel_ratio(nu, x)
        assert got > 0 and abs(got / float(ref) - 1) < 4e-15, (nu, x, got, ref)
