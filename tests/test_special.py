"""attnscale.special: log Bessel functions and Bessel ratios against mpmath, across the series,
uniform-asymptotic and Hankel regions and at their edges.
"""

from __future__ import annotations

import warnings

import mpmath as mp
import numpy as np
import pytest

from attnscale.special import bessel_ratio, bessel_ratio_complement, log_besseli, log_besseli_scaled


@pytest.fixture(autouse=True, scope="module")
def _thirty_digits():
    with mp.workdps(30):
        yield


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
    with pytest.raises(ValueError, match=r"^nu must .*got -1\.5$"):
        log_besseli([0.0, 0.5, -1.5], 1.0)


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


# the module docstring: the series and Hankel routes are accurate "to about 1e-14"
TOL = 1e-14


def _mp_reference(nu: float, x: float) -> tuple[float, float, float]:
    """log I_nu(x) - x, I_{nu+1}(x)/I_nu(x) and its complement, from mpmath at 50 digits."""
    with mp.workdps(50):
        n, t = mp.mpf(nu), mp.mpf(x)
        lower = mp.besseli(n, t, maxterms=10**6)
        ratio = mp.besseli(n + 1, t, maxterms=10**6) / lower
        return float(mp.log(lower) - t), float(ratio), float(1 - ratio)


def _check(nu: float, x: float) -> None:
    scaled, ratio, complement = _mp_reference(nu, x)
    assert abs(log_besseli_scaled(nu, x) - scaled) <= TOL * max(1.0, abs(scaled)), (nu, x)
    assert bessel_ratio(nu, x) == pytest.approx(ratio, rel=TOL, abs=0), (nu, x)
    assert bessel_ratio_complement(nu, x) == pytest.approx(complement, rel=TOL, abs=0), (nu, x)


# x = 10 sqrt(nu + 1) exactly, so that x^2/4 == 25 (nu + 1) holds in floating point
SERIES_EDGE = [(0.0, 10.0), (99.0, 100.0), (399.0, 200.0), (1023.0, 320.0)]


SERIES_INSIDE = [(99.0, 95.0), (150.0, 110.0), (2047.0, 400.0), (2047.0, 452.0), (2.5, 18.0)]


@pytest.mark.parametrize("nu, x", SERIES_EDGE + SERIES_INSIDE)
def test_bessel_ratio_is_accurate_throughout_the_series_region_including_its_edge(nu, x):
    """The series region x^2/4 <= 25 (nu + 1), edge included, gives the ratio and complement to 1e-14."""
    # a shrunk series bound, or its edge excluded, hands some of these points to Debye's expansion or
    # (order 2.5) to ive, where the ratio is off by up to 8e-13 (nu = 1023, x = 320); integer orders
    # below 100 would go to Poisson's integral, as accurate as the series, so they catch nothing here
    assert 0.25 * x * x <= 25.0 * (nu + 1.0)
    if (nu, x) in SERIES_EDGE:
        assert 0.25 * x * x == 25.0 * (nu + 1.0)
    _check(nu, x)


HANKEL_LOW_END = [(0.0, 2000.3), (0.5, 2000.3), (1.0, 2000.3), (63.0, 50.3 * 64.0**2), (99.0, 503000.0), (150.0, 50.3 * 151.0**2)]


HANKEL_INSIDE = [(0.0, 2500.0), (1.5, 3000.0), (5.0, 1e4)]


@pytest.mark.parametrize("nu, x", HANKEL_LOW_END + HANKEL_INSIDE)
def test_bessel_ratio_complement_is_accurate_in_the_hankel_region_down_to_its_low_end(nu, x):
    """Above x = max(2000, 50 (nu + 1)^2), also just above it, Hankel's expansion gives 1 - I_{nu+1}/I_nu to 1e-14."""
    # a Hankel region starting at 2001, 51 (nu+1)^2 or 50 (nu+2)^2 moves some of these points to ive
    # (order 0.5) or Debye (order 150), whose complement -expm1(log ive(nu+1) - log ive(nu)) is off by
    # 1.7e-13 to 2e-12 here; integer orders below 100 go to Poisson's integral, which is not
    assert x > max(2000.0, 50.0 * (nu + 1.0) ** 2)
    _check(nu, x)


def _mp_hankel_complement(nu: float, x: float, terms: int = 40) -> float:
    """1 - I_{nu+1}(x)/I_nu(x) from Hankel's expansion summed in mpmath at 60 digits
    (for x > 50 (nu + 1)^2 the terms fall by a factor 100 k or more, so 40 are far more than enough)."""
    with mp.workdps(60):
        t = mp.mpf(x)

        def series(order: float) -> mp.mpf:
            mu, term, total = 4 * mp.mpf(order) ** 2, mp.mpf(1), mp.mpf(1)
            for k in range(1, terms + 1):
                term = -term * (mu - (2 * k - 1) ** 2) / (8 * k * t)
                total += term
            return total

        return float(1 - series(nu + 1) / series(nu))


@pytest.mark.parametrize("nu, x", [(2047.0, 1e23), (2047.0, 629145600.0), (1023.0, 52743372.8), (511.0, 1e9)])
def test_bessel_ratio_complement_at_large_order_in_the_hankel_region(nu, x):
    """At large order the complement's first Hankel term is its closed form (2 nu + 1)/(2x), not
    the difference of two terms of size nu^2/(2x): before that was written out, the complement
    at (2047, 1e23) was off by 1.1e-13; now the Hankel region's 1e-14 holds at every order."""
    assert x > max(2000.0, 50.0 * (nu + 1.0) ** 2)
    assert bessel_ratio_complement(nu, x) == pytest.approx(_mp_hankel_complement(nu, x), rel=1e-14, abs=0)


@pytest.mark.parametrize("nu", [0.0, 1.0, 2.5])
def test_log_ive_at_the_smallest_subnormal_argument(nu):
    """x = 5e-324 (x/2 rounds to 0): log I_nu(x) - x from log x - log 2, not log(x/2), which gave
    NaN at nu = 0 and -inf at nu = 1 (mpmath reference)."""
    with mp.workdps(50):
        ref = float(mp.log(mp.besseli(nu, mp.mpf(5e-324))) - mp.mpf(5e-324))
    assert log_besseli_scaled(nu, 5e-324) == pytest.approx(ref, rel=1e-14, abs=1e-300)


ORDERS = [0, 0.5, 1, 2.5, 10, 49.5, 63, 99, 99.5, 100, 150, 511, 1023, 2047]


ARGS = [1e-8, 1e-3, 0.5, 3, 10, 30, 100, 300, 1000, 2500, 5000, 2e4, 1e5, 1e6, 1e9, 1e15, 1e23]


def mp_log_besseli(nu, x):
    return mp.log(mp.besseli(nu, x, maxterms=10**6))


@pytest.mark.parametrize("nu", [0, 1, 2, 5, 10, 31, 63, 99])
def test_poisson_integral_gives_integer_orders_full_accuracy_between_the_series_and_hankel_regions(nu):
    """For integer orders below 100, where x^2/4 > 25 (nu + 1) and x <= max(2000, 50 (nu + 1)^2), the
    trapezoid rule on Poisson's integral gives log ive, the ratio and (as a mean of positive terms, not
    a difference of logs) its complement to 5e-15 (measured over every integer order below 100, the
    region's edges included: at most 1.6e-15)."""
    low, high = 10.0 * np.sqrt(nu + 1.0), max(2000.0, 50.0 * (nu + 1.0) ** 2)
    for x in np.geomspace(low * 1.001, high * 0.999, 9):
        scaled, ratio, complement = _mp_reference(nu, float(x))
        assert abs(log_besseli_scaled(nu, x) - scaled) <= 5e-15 * max(1.0, abs(scaled)), x
        assert bessel_ratio(nu, x) == pytest.approx(ratio, rel=5e-15, abs=0), x
        assert bessel_ratio_complement(nu, x) == pytest.approx(complement, rel=5e-15, abs=0), x


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


@pytest.mark.parametrize("x", [1e-300, 1e-200, 1e-120, 1e-50, 1e-10, 2e-9, 1e-5])
def test_bessel_ratio_at_tiny_arguments_against_mpmath(x):
    """Down to x = 1e-300 (where x^2/4 underflows) the ratio keeps full relative accuracy, never 0."""
    for nu in (0.0, 2.0, 31.0, 500.0):
        with mp.workdps(40):
            ref = mp.besseli(nu + 1, mp.mpf(x)) / mp.besseli(nu, mp.mpf(x))
        got = bessel_ratio(nu, x)
        assert got > 0 and abs(got / float(ref) - 1) < 4e-15, (nu, x, got, ref)
