"""The least-squares fit through the origin over Su's sweep, and the mass of a cosine kernel,
against numpy's lstsq, the notes' printed constants and quadrature."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from scipy.integrate import quad

from attnscale.optimum import alpha_star_normal, fit_through_origin, su_sweep
from attnscale.scores import cosine_kernel_mass


def test_sweep():
    s = su_sweep()
    assert s.size == 500 and s[0] == 40 and s[-1] == 20000 and np.all(np.diff(s) == 40)
    s[0] = -1
    assert su_sweep()[0] == 40  # a fresh array each call


def test_fit_against_lstsq_and_the_notes():
    n = su_sweep()
    y = alpha_star_normal(n)
    c, misfit = fit_through_origin(y, np.sqrt(np.log(n)))
    (ref,), *_ = np.linalg.lstsq(np.sqrt(np.log(n))[:, None], y, rcond=None)
    assert c == pytest.approx(ref, rel=1e-12) and round(c, 2) == 0.84
    np.testing.assert_allclose(misfit, ref * np.sqrt(np.log(n)) / y - 1, rtol=1e-10)


def test_fit_columns_at_once():
    rng = np.random.default_rng(4)
    basis = rng.uniform(1, 2, size=(30, 1))
    table = basis * np.array([[2.0, -3.0, 0.5]]) * (1 + 0.01 * rng.standard_normal((30, 3)))
    c, misfit = fit_through_origin(table, basis)
    for j in range(3):
        (ref,), *_ = np.linalg.lstsq(basis, table[:, j], rcond=None)
        assert c[j] == pytest.approx(ref, rel=1e-12)
    assert misfit.shape == (30, 3)
    exact, zero = fit_through_origin([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    assert exact == 2.0 and np.all(zero == 0)


@pytest.mark.parametrize("values, basis, match", [([1.0, 0.0], [1.0, 2.0], "values"), ([1.0, 2.0], [0.0, 0.0], "basis"),
                                                  ([1.0, 2.0], [1.0, 2.0, 3.0], "basis"), ([np.nan, 1.0], [1.0, 1.0], "values")])
def test_fit_rejects(values, basis, match):
    with pytest.raises(ValueError, match=match):
        fit_through_origin(values, basis)


@pytest.mark.parametrize("d, exponent", [(2, -0.5), (3, 0.0), (5, 1.5), (16, 7.0), (128, 62.5), (128, 63.0), (4096, 2046.5)])
def test_kernel_mass_against_quadrature(d, exponent):
    with mp.workdps(30):
        ref = mp.quad(lambda s: (1 - s * s) ** mp.mpf(exponent), [-1, 0, 1]) / mp.beta(mp.mpf(1) / 2, mp.mpf(d - 1) / 2)
    assert cosine_kernel_mass(d, exponent) == pytest.approx(float(ref), rel=1e-12)


def test_kernel_mass_is_one_for_the_cosine_law_only():
    d = np.array([3.0, 5.0, 64.0, 1000.0])
    np.testing.assert_allclose(cosine_kernel_mass(d, (d - 3) / 2), 1.0, rtol=1e-13)
    assert np.all(cosine_kernel_mass(d, (d - 2) / 2) < 1)
    q, _ = quad(lambda s: (1 - s * s) ** 1.5, -1, 1, epsabs=0, epsrel=1e-13)
    assert cosine_kernel_mass(5, 1.5) == pytest.approx(q * 3 / 4, rel=1e-12)  # divided by B(1/2, 2) = 4/3
    with pytest.raises(ValueError, match="exponent"):
        cosine_kernel_mass(5, -1.0)


@pytest.mark.parametrize("d", [2, 3, 5, 128])
@pytest.mark.parametrize("s", [-0.9, -0.1, 0.0, 0.3, 0.99])
def test_cosine_cdf_against_the_integral_of_the_density(d, s):
    from attnscale.scores import cosine_cdf

    with mp.workdps(30):
        pdf = lambda x: (1 - x * x) ** (mp.mpf(d - 3) / 2) / mp.beta(mp.mpf(1) / 2, mp.mpf(d - 1) / 2)  # noqa: E731
        ref = mp.quad(pdf, [-1, min(0, s), s]) if s > -1 else mp.mpf(0)
    assert cosine_cdf(s, d) == pytest.approx(float(ref), rel=1e-12, abs=1e-15)


def test_cosine_cdf_ends_and_shape():
    from attnscale.scores import cosine_cdf

    assert cosine_cdf(-1.0, 7) == 0.0 and cosine_cdf(1.0, 7) == 1.0 and cosine_cdf(0.0, 7) == pytest.approx(0.5, abs=1e-15)
    out = cosine_cdf(np.linspace(-1, 1, 11)[:, None], [3.0, 64.0])
    assert out.shape == (11, 2) and np.all(np.diff(out, axis=0) >= 0)
    with pytest.raises(ValueError, match="s must lie"):
        cosine_cdf(1.5, 3)


def test_vector_cosines_follow_the_law_and_the_definition():
    from scipy.stats import kstest

    from attnscale.scores import cosine_cdf, sample_vector_cosines

    x = sample_vector_cosines(np.random.default_rng(8), 50_000, 6)
    assert kstest(x, cosine_cdf, args=(6,)).pvalue > 1e-3
    assert kstest(x, cosine_cdf, args=(7,)).pvalue < 1e-6  # the test can tell neighbouring dimensions apart
    rng = np.random.default_rng(9)
    q, k = rng.standard_normal((2, 4, 3))
    by_hand = [float(q[i] @ k[i] / np.sqrt((q[i] @ q[i]) * (k[i] @ k[i]))) for i in range(4)]
    np.testing.assert_allclose(sample_vector_cosines(np.random.default_rng(9), 4, 3), by_hand, rtol=1e-14)


def test_lambertw_reference_route():
    from attnscale.optimum import alpha_star_normal_lambertw

    n = np.array([2.0, 64.0, 512.0, 1e6, 1e300])
    with mp.workdps(40):
        ref = [float(mp.sqrt(mp.lambertw(mp.sqrt(mp.e) * mp.mpf(v) / 2) - mp.mpf(1) / 2)) for v in n]
    np.testing.assert_allclose(alpha_star_normal_lambertw(n), ref, rtol=1e-14)
    # the documented loss just above n = 1, where W0 - 1/2 cancels
    near = 1 + 1e-8
    with mp.workdps(40):
        exact = float(mp.sqrt(mp.lambertw(mp.sqrt(mp.e) * mp.mpf(near) / 2) - mp.mpf(1) / 2))
    assert 1e-10 < abs(alpha_star_normal_lambertw(near) / exact - 1) < 1e-7
