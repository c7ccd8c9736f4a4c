"""attnscale._elementary: log-gamma, the logistic function and its log, and the normal quantile
without SciPy, against mpmath at 40 digits, at their extremes and for array and scalar input."""

from __future__ import annotations

import warnings

import mpmath as mp
import numpy as np
import pytest

from attnscale._elementary import expit, gammaln, log_expit, ndtri


@pytest.fixture(autouse=True, scope="module")
def _forty_digits():
    with mp.workdps(40):
        yield


def test_gammaln_matches_the_log_gamma_function_from_tiny_to_huge_arguments():
    near_zeros = [1.0 - 1e-6, 1.0 + 1e-9, 2.0 - 1e-4, 2.0 - 1e-8, 2.0 + 1e-12, 2.0 + 1e-4]
    x = np.concatenate([np.geomspace(1e-300, 1e300, 61), [0.5, 1.0, 1.5, 2.0, 2.5, 63.5, 64.0], near_zeros])
    got = gammaln(x)
    for xi, g in zip(x, got):
        ref = float(mp.loggamma(mp.mpf(float(xi))))
        assert abs(g - ref) <= 2e-15 * max(1.0, abs(ref)), xi
    assert gammaln(1.0) == 0.0 and gammaln(2.0) == 0.0
    assert gammaln(1e308) == np.inf  # log Gamma overflows beyond about 2.6e305


def test_expit_and_log_expit_are_accurate_and_silent_at_both_extremes():
    x = np.array([-745.0, -700.0, -40.0, -1.0, -1e-20, 0.0, 1e-20, 1.0, 40.0, 700.0, 1e308])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p, lp = expit(x), log_expit(x)
    for xi, pi, lpi in zip(x, p, lp):
        log_ref = -mp.log1p(mp.exp(-mp.mpf(float(xi))))  # not log(1/(1 + e^-x)), which rounds to 0
        assert pi == pytest.approx(float(mp.exp(log_ref)), rel=4e-16, abs=1e-320)
        assert lpi == pytest.approx(float(log_ref), rel=4e-16, abs=1e-320)
    assert expit(0.0) == 0.5 and log_expit(1e308) == 0.0 and log_expit(-1e308) == -1e308


def test_ndtri_inverts_the_normal_distribution_deep_into_both_tails():
    p = np.concatenate([[1e-310, 1e-300, 1e-100, 1e-35, 1e-10, 0.01, 0.3, 0.5], 1 - np.array([0.3, 0.01, 1e-10])])
    z = ndtri(p)
    for pi, zi in zip(p, z):
        # the reference inverts mpmath's normal distribution function at the float pi
        ref = mp.findroot(lambda t: mp.ncdf(t) - mp.mpf(float(pi)), float(zi))
        assert zi == pytest.approx(float(ref), rel=2e-15, abs=1e-300)
    assert ndtri(0.5) == 0.0
    assert ndtri(0.0) == -np.inf and ndtri(1.0) == np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(ndtri(np.nan)) and np.isnan(gammaln(np.nan))


def test_the_functions_keep_shapes_and_return_numpy_floats_for_scalars():
    grid = np.linspace(0.1, 0.9, 6).reshape(2, 3)
    for f in (gammaln, expit, log_expit, ndtri):
        assert f(grid).shape == (2, 3) and f(grid).dtype == np.float64
        assert isinstance(f(0.25), np.float64)
