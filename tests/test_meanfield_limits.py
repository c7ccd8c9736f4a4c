"""Where mean field stops being accurate, and the Frobenius-norm optimum under mean field.

References are independent of the library's routes: nested mpmath quadratures of the
exact E sum p^2 (stored in test_exact), the definition of the limit on a grid, a bounded
scalar search, and mpmath root-finding on the mean-field Frobenius objective.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from attnscale import exact
from attnscale.optimum import alpha_star_frobenius_normal


# E sum p^2 for normal scores from test_exact's table of nested 25-digit mpmath quadratures
MPMATH_P2 = [(64, 2.0, "0.1607351123806254831573238"), (1e9, 0.05, "1.002503127603273129336232e-9"), (4096, 10.0, "0.6416768492372704137117076")]


@pytest.mark.parametrize("n, alpha, value", MPMATH_P2)
def test_ratio_against_mpmath(n, alpha, value):
    with mp.workdps(30):
        ref = mp.exp(mp.mpf(alpha) ** 2) / mp.mpf(n) / mp.mpf(value)
    assert exact.mean_field_ratio(n, alpha) == pytest.approx(float(ref), rel=1e-11)


def test_ratio_is_one_at_zero_and_broadcasts():
    assert exact.mean_field_ratio(64, 0.0) == 1.0
    out = exact.mean_field_ratio([[64], [512]], [0.0, 1.0, 2.0])
    assert out.shape == (2, 3)
    assert out[1, 2] == pytest.approx(exact.mean_field_ratio(512, 2.0), rel=1e-14)


@pytest.mark.parametrize("n", [2, 64, 1e6])
@pytest.mark.parametrize("factor", [1.05, 1.1, 2.0])
def test_limit_is_the_first_crossing(n, factor):
    a = exact.mean_field_limit(n, factor)
    assert abs(np.log(exact.mean_field_ratio(n, a))) == pytest.approx(np.log(factor), rel=1e-9)
    grid = np.linspace(1e-3, a, 100)[:-1]
    assert np.all(np.abs(np.log(exact.mean_field_ratio(n, grid))) < np.log(factor))


def test_limit_values_and_steps():
    # chapter 7's values to two decimals, and the answer does not depend on the walk's step
    a = exact.mean_field_limit([64, 512, 4096, 32768, 1e6])
    assert np.round(a, 2).tolist() == [1.01, 1.38, 1.72, 2.02, 2.45]
    assert exact.mean_field_limit(4096, step=0.01) == pytest.approx(a[2], abs=1e-11)
    assert exact.mean_field_limit(64, 1.1) < exact.mean_field_limit(64, 1.5)


@pytest.mark.parametrize("kwargs, match", [({"n": 1.5}, "n must lie"), ({"n": 2e15}, "n must lie"), ({"n": 64, "factor": 1.0}, "factor"),
                                           ({"n": 64, "step": 0.5}, "step"), ({"n": 64, "step": 0.0}, "step")])
def test_limit_rejects(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        exact.mean_field_limit(**kwargs)


def _frobenius_mp(n):
    with mp.workdps(40):
        n = mp.mpf(n)
        # maximise log of the squared objective, x (u/n - 2u^3/n^2 + u^2/n^2), u = e^x, x = alpha^2
        g = lambda x: mp.log(x) + mp.log(mp.exp(x) / n - 2 * mp.exp(3 * x) / n**2 + mp.exp(2 * x) / n**2)  # noqa: E731
        x0 = mp.mpf(alpha_star_frobenius_normal(float(n))) ** 2
        return mp.sqrt(mp.findroot(lambda x: mp.diff(g, x), (x0 * (1 - mp.mpf("1e-6")), x0 * (1 + mp.mpf("1e-6"))), solver="anderson"))


@pytest.mark.parametrize("n", [1.5, 2, 16, 1024, 1e9, 1e100])
def test_frobenius_optimum_against_mpmath(n):
    assert alpha_star_frobenius_normal(n) == pytest.approx(float(_frobenius_mp(n)), rel=1e-13)


def test_frobenius_optimum_against_a_bounded_search_and_the_l1_optimum():
    from attnscale.optimum import alpha_star_normal

    for n in (16, 64, 256, 1024):
        def neg(a, n=n):
            return -a * np.sqrt(max(np.exp(a * a) / n - 2 * np.exp(3 * a * a) / n**2 + np.exp(2 * a * a) / n**2, 0.0))
        ref = minimize_scalar(neg, bounds=(1e-3, np.sqrt(np.log(n))), method="bounded", options={"xatol": 1e-10}).x
        assert alpha_star_frobenius_normal(n) == pytest.approx(ref, abs=1e-8)
    # the Frobenius optimum sits below the L1 one (the extra sum p^3 term penalises concentration)
    n = np.array([4.0, 64.0, 1e6])
    assert np.all(alpha_star_frobenius_normal(n) < alpha_star_normal(n))
    assert alpha_star_frobenius_normal(n).shape == (3,)


def test_limit_refuses_a_factor_the_quadrature_cannot_resolve():
    # log ratio ~ alpha^2 / n for small alpha, with rounding near 1e-14: a factor of 1 + 1e-15 cannot be located
    with pytest.raises(ValueError, match="factor must be at least 1 \\+ 1e-10"):
        exact.mean_field_limit(2, 1 + 1e-15)
    a = exact.mean_field_limit(10, 1 + 1e-6)
    assert a == pytest.approx(np.sqrt(10 * np.log1p(1e-6)), rel=1e-3)


def test_frobenius_optimum_at_the_top_of_the_float_range():
    # 8 n overflows above 2.2e307; the bracket must not
    for n in (2.2e307, 1e308, 1.7e308):
        a = alpha_star_frobenius_normal(n)
        assert np.isfinite(a) and a == pytest.approx(float(_frobenius_mp(n)), rel=1e-13)
