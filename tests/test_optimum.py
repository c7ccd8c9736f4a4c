"""attnscale.optimum against 50-digit mpmath references."""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnscale.optimum import (
    alpha_star_normal,
    alpha_star_normal_asymptotic,
    collision_normal,
    n_for_alpha_normal,
    objective_normal,
)



@pytest.fixture(autouse=True, scope="module")
def _fifty_digits():
    """The mpmath references of this module at 50 digits; the global precision is restored afterwards."""
    with mp.workdps(50):
        yield
ULP = 2.0**-53


def reference_alpha_star(n: float) -> mp.mpf:
    """Root of x + log(1 + 2x) = log n in 50 digits, then sqrt: an independent route
    (mpmath's findroot, started from mpmath's own Lambert W)."""
    n = mp.mpf(n)
    start = mp.lambertw(n * mp.sqrt(mp.e) / 2).real - mp.mpf(1) / 2 if n > 1.5 else mp.log(n) / 3
    x = mp.findroot(lambda t: t + mp.log1p(2 * t) - mp.log(n), start)
    return mp.sqrt(x)


GRID = np.concatenate(
    [1.0 + np.logspace(-15, 0, 31), np.array([2.0, 3.0, 40.0, 512.0, 4096.0, 2e4]), np.logspace(0.5, 300, 120), [1.7e308]]
)


def test_alpha_star_normal_within_a_few_ulps_from_near_one_to_1e308():
    got = alpha_star_normal(GRID)
    worst = max(float(abs(mp.mpf(g) - reference_alpha_star(n)) / reference_alpha_star(n)) for g, n in zip(got, GRID))
    assert worst <= 4 * ULP, f"worst relative error {worst / ULP:.2f} ulp"


def test_alpha_star_satisfies_first_order_condition_and_maximises():
    n = np.array([2.0, 10.0, 512.0, 1e6])
    a = alpha_star_normal(n)
    np.testing.assert_allclose(np.exp(a**2) * (1 + 2 * a**2), n, rtol=1e-13)
    for eps in (1e-3, -1e-3):
        assert np.all(objective_normal(a * (1 + eps), n) < objective_normal(a, n))
    np.testing.assert_allclose(n_for_alpha_normal(a), n, rtol=1e-13)


def test_shapes_and_scalars():
    assert isinstance(alpha_star_normal(512), float)
    assert alpha_star_normal(np.full((2, 3, 4), 100.0)).shape == (2, 3, 4)
    assert objective_normal(np.ones((3, 1)), np.array([10.0, 20.0])).shape == (3, 2)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1.0 + 1e-12, max_value=1e300))
def test_alpha_star_is_the_inverse_of_n_for_alpha(n):
    a = alpha_star_normal(n)
    assert a > 0
    np.testing.assert_allclose(np.log(n_for_alpha_normal(a)), np.log(n), rtol=1e-12, atol=1e-12)


def test_objective_and_collision_in_log_domain():
    assert collision_normal(30.0, 1e6) == np.inf or collision_normal(30.0, 1e6) > 1e300
    assert objective_normal(40.0, 10.0) == -np.inf
    np.testing.assert_allclose(objective_normal(1e-9, 2.0), 1e-9 * 0.5, rtol=1e-9)
    np.testing.assert_allclose(objective_normal(2.0, 100.0), 2 * (1 - np.exp(4) / 100), rtol=1e-14)


def test_asymptotic_expansion_improves_with_terms_and_n():
    n = np.array([1e4, 1e8, 1e16, 1e64])
    exact = alpha_star_normal(n)
    errs = [np.abs(alpha_star_normal_asymptotic(n, t) / exact - 1) for t in (1, 2, 3)]
    assert np.all(errs[0] > errs[1]) and np.all(errs[1] > errs[2])
    for e in errs:
        assert np.all(np.diff(e) < 0)
    with pytest.raises(ValueError, match="terms must be 1, 2 or 3"):
        alpha_star_normal_asymptotic(100.0, 4)
    with pytest.raises(ValueError, match="too small"):
        alpha_star_normal_asymptotic(1.1, 3)


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda: alpha_star_normal(1.0), ValueError, "n must be > 1"),
        (lambda: alpha_star_normal([4.0, 0.5]), ValueError, "got 0.5"),
        (lambda: alpha_star_normal(np.nan), ValueError, "n must be finite"),
        (lambda: alpha_star_normal(np.inf), ValueError, "n must be finite"),
        (lambda: alpha_star_normal("100"), TypeError, "n must be a real number"),
        (lambda: alpha_star_normal(None), TypeError, "n must be a real number"),
        (lambda: objective_normal(-1.0, 10.0), ValueError, "alpha must be > 0"),
        (lambda: objective_normal(1.0, 1.0), ValueError, "n must be > 1"),
        (lambda: collision_normal(np.nan, 10.0), ValueError, "alpha must be finite"),
        (lambda: n_for_alpha_normal(0.0), ValueError, "alpha must be > 0"),
    ],
)
def test_bad_input(call, exc, words):
    with pytest.raises(exc, match=None) as info:
        call()
    assert words in str(info.value)


def test_alpha_star_normal_raises_rather_than_return_an_unconverged_value(monkeypatch):
    import attnscale.optimum as optimum

    monkeypatch.setattr(optimum, "NEWTON_STEPS", 1)
    with pytest.raises(ArithmeticError, match="did not converge"):
        optimum.alpha_star_normal(1e6)
