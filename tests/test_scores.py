"""attnscale.scores: the laws of dot and cosine scores (densities, CDFs, moment generating
functions, samplers and kernel masses) against closed forms, mpmath and sampling.
"""

from __future__ import annotations

from scipy.integrate import quad
from scipy.special import betaln
import mpmath as mp
import numpy as np
import pytest

from attnscale.scores import cosine_cdf, cosine_kernel_mass, cosine_logpdf, dlog_mgf_cosine, log_mgf_cosine, log_mgf_normal, sample_cosines, sample_dot_products, sample_vector_cosines


@pytest.fixture(autouse=True, scope="module")
def _thirty_digits():
    with mp.workdps(30):
        yield


def test_cosine_logpdf_closed_form_and_errors():
    for s, d in [(0.3, 3.0), (-0.7, 10.0), (0.05, 512.0)]:
        ref = (d - 3) / 2 * mp.log(1 - mp.mpf(s) ** 2) - mp.log(mp.beta(mp.mpf(1) / 2, (mp.mpf(d) - 1) / 2))
        out = cosine_logpdf(s, d)
        assert type(out) is float
        assert out == pytest.approx(float(ref), rel=1e-11, abs=1e-13)
    with pytest.raises(ValueError, match=r"^s must .*got 1\.5$"):
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


EPS = np.finfo(float).eps


def test_sample_vector_cosines_in_two_dimensions_and_of_size_zero_by_hand():
    """d = 2 is the smallest documented dimension and size = 0 an allowed sample size; the
    cosines are q.k / (|q| |k|) of the generator's next 2 size d normal numbers."""
    got = sample_vector_cosines(np.random.default_rng(11), 6, 2)
    q, k = np.random.default_rng(11).standard_normal((2, 6, 2))
    by_hand = (q[:, 0] * k[:, 0] + q[:, 1] * k[:, 1]) / np.sqrt((q * q).sum(axis=1) * (k * k).sum(axis=1))
    np.testing.assert_allclose(got, by_hand, rtol=8 * EPS, atol=8 * EPS)
    assert np.all(np.abs(got) <= 1.0)
    empty = sample_vector_cosines(np.random.default_rng(11), 0, 2)
    assert empty.shape == (0,)


def _dot_products_by_hand(seed, size, d, rho, chunk):
    """The documented construction: chunk pairs at a time, q then z from the generator,
    k = rho q + sqrt(1 - rho^2) z; also returns sum |q_l k_l| per pair for the rounding bound."""
    rng = np.random.default_rng(seed)
    out, scale = [], []
    for start in range(0, size, chunk):
        m = min(chunk, size - start)
        q = rng.standard_normal((m, d))
        z = rng.standard_normal((m, d))
        k = rho * q + np.sqrt(1.0 - rho * rho) * z
        out.append((q * k).sum(axis=1))
        scale.append(np.abs(q * k).sum(axis=1))
    return np.concatenate(out), np.concatenate(scale)


@pytest.mark.parametrize(
    "size, d, options, rho, chunk",
    [
        # the defaults: rho = 0 and chunks of 2000 (chapter 2 draws 20 000 products with them
        # from a fixed seed, so its printed numbers depend on these exact draws)
        (2500, 3, {}, 0.0, 2000),
        (5, 4, {"rho": 0.6, "chunk": 1}, 0.6, 1),  # chunk = 1 is allowed
        (7, 2, {"rho": -0.3, "chunk": 3}, -0.3, 3),
    ],
    ids=["defaults", "chunk-of-one", "negative-rho"],
)
def test_sample_dot_products_follow_the_documented_construction_draw_for_draw(size, d, options, rho, chunk):
    """Pins the documented k = rho q + sqrt(1 - rho^2) z, the default rho = 0 and chunk = 2000,
    and chunk = 1, against the construction written out by hand."""
    got = sample_dot_products(np.random.default_rng(21), size, d, **options)
    ref, scale = _dot_products_by_hand(21, size, d, rho, chunk)
    assert got.shape == (size,)
    # the two sums differ only in their order: |error| <= d eps sum |q_l k_l| for each
    assert np.all(np.abs(got - ref) <= 2 * d * EPS * scale)


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


def test_cosine_density_is_uniform_for_d3_and_normalised():
    s = np.linspace(-0.99, 0.99, 7)
    np.testing.assert_allclose(np.exp(cosine_logpdf(s, 3.0)), 0.5, rtol=1e-14)  # uniform on [-1, 1] for d = 3
    value, _ = quad(lambda t: np.exp(cosine_logpdf(t, 7.0)), -1, 1)
    np.testing.assert_allclose(value, 1.0, rtol=1e-12)


@pytest.mark.parametrize("d, rho", [(1, 0.0), (16, 0.0), (64, 0.5), (8, -0.8)])
def test_mean_and_variance(d, rho):
    x = sample_dot_products(np.random.default_rng(3), 40_000, d, rho=rho)
    var = x.var(ddof=1)
    se_mean = np.sqrt(var / x.size)
    se_var = np.sqrt((np.mean((x - x.mean()) ** 4) - var**2) / x.size)
    assert abs(x.mean() - rho * d) < 4 * se_mean
    assert abs(var - (1 + rho**2) * d) < 4 * se_var


def test_fully_correlated_keys_are_squared_norms():
    rng = np.random.default_rng(5)
    q = rng.standard_normal((3, 6))
    x = sample_dot_products(np.random.default_rng(5), 3, 6, rho=1.0)
    np.testing.assert_allclose(x, np.sum(q * q, axis=1), rtol=1e-14)
    assert np.all(sample_dot_products(np.random.default_rng(5), 3, 6, rho=-1.0) < 0)


def test_an_empty_sample_of_dot_products():
    assert sample_dot_products(np.random.default_rng(9), 0, 4).shape == (0,)


@pytest.mark.parametrize("d, exponent", [(2, -0.5), (3, 0.0), (5, 1.5), (16, 7.0), (128, 62.5), (128, 63.0), (4096, 2046.5)])
def test_kernel_mass_against_quadrature(d, exponent):
    with mp.workdps(30):
        ref = mp.quad(lambda s: (1 - s * s) ** mp.mpf(exponent), [-1, 0, 1]) / mp.beta(mp.mpf(1) / 2, mp.mpf(d - 1) / 2)
    assert cosine_kernel_mass(d, exponent) == pytest.approx(float(ref), rel=1e-12)


def test_kernel_mass_is_one_for_the_cosine_law_only():
    d = np.array([3.0, 5.0, 64.0, 1000.0])
    np.testing.assert_allclose(cosine_kernel_mass(d, (d - 3) / 2), 1.0, rtol=1e-13)
    assert np.all(cosine_kernel_mass(d, (d - 2) / 2) < 1)


@pytest.mark.parametrize("d", [2, 3, 5, 128])
@pytest.mark.parametrize("s", [-0.9, -0.1, 0.0, 0.3, 0.99])
def test_cosine_cdf_against_the_integral_of_the_density(d, s):
    with mp.workdps(30):
        pdf = lambda x: (1 - x * x) ** (mp.mpf(d - 3) / 2) / mp.beta(mp.mpf(1) / 2, mp.mpf(d - 1) / 2)  # noqa: E731
        ref = mp.quad(pdf, [-1, min(0, s), s]) if s > -1 else mp.mpf(0)
    assert cosine_cdf(s, d) == pytest.approx(float(ref), rel=1e-12, abs=1e-15)


def test_cosine_cdf_ends_and_shape():
    """The ends of the support, s = -1 and 1, are allowed."""
    assert cosine_cdf(-1.0, 7) == 0.0 and cosine_cdf(1.0, 7) == 1.0 and cosine_cdf(0.0, 7) == pytest.approx(0.5, abs=1e-15)
    out = cosine_cdf(np.linspace(-1, 1, 11)[:, None], [3.0, 64.0])
    assert out.shape == (11, 2) and np.all(np.diff(out, axis=0) >= 0)


def test_vector_cosines_follow_the_law():
    from scipy.stats import kstest

    x = sample_vector_cosines(np.random.default_rng(8), 50_000, 6)
    assert kstest(x, cosine_cdf, args=(6,)).pvalue > 1e-3
    assert kstest(x, cosine_cdf, args=(7,)).pvalue < 1e-6  # the test can tell neighbouring dimensions apart
