"""attnscale.exact.meanfield: the mean-field limit and its check, against mpmath and the exact
expectations it approximates.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from attnscale import exact, exact as E
from expect import refuses


@pytest.mark.parametrize(
    'kwargs, exc, name',
    [
        ({"n": np.nan}, ValueError, 'n'),
        ({"n": "x"}, TypeError, 'n'),
        ({"n": 1e15 + 0.5}, ValueError, 'n'),
        ({"n": [2.0, 1.5]}, ValueError, 'n'),
        ({"n": [1e15, 2e15]}, ValueError, 'n'),
        ({"n": 64, "factor": 1.0}, ValueError, 'factor'),
        ({"n": 64, "factor": 0.5}, ValueError, 'factor'),
        ({"n": 64, "step": 0.0}, ValueError, 'step'),
        ({"n": 64, "step": 0.2}, ValueError, 'step'),
    ],
)
def test_mean_field_limit_messages(kwargs, exc, name):
    """Each bad argument gets its own full message naming the argument and the first bad
    value (n = 2 and n = 1e15 are allowed, 1e15 + 0.5 is not; factor <= 1 fails the
    `> 1` check before the resolution check)."""
    refuses(exc, name, lambda: E.mean_field_limit(**kwargs))


def test_mean_field_limit_accepts_the_largest_step():
    """step = 0.1 is allowed (the range is (0, 0.1]) and gives the 10% crossing for n = 64."""
    a = E.mean_field_limit(64, step=0.1)
    assert math.log(E.mean_field_ratio(64, a)) == pytest.approx(math.log(1.1), rel=1e-9, abs=0)
    assert a == pytest.approx(1.0121793124, abs=1e-9)


@pytest.mark.parametrize("n, factor, step", [(64, 1.1, 0.05), (1e6, 1.1, 0.02), (4096, 2.0, 0.05)])
def test_mean_field_limit_is_the_first_crossing_to_1e_12(n, factor, step):
    """The documented search: the first alpha at which |log ratio| passes log(factor), refined to
    1e-12. Against an independent route: a fine scan of the public ratio for the first sign
    change, then SciPy's brentq to 1e-15 inside it."""
    from scipy.optimize import brentq

    def g(a):
        return abs(math.log(E.mean_field_ratio(n, a))) - math.log(factor)

    grid = np.arange(1, 1001) * (step / 2)
    values = np.abs(np.log(E.mean_field_ratio(n, grid))) - math.log(factor)
    k = int(np.argmax(values > 0))
    assert k > 0 and values[k - 1] <= 0
    ref = brentq(g, grid[k - 1], grid[k], xtol=1e-15)
    assert E.mean_field_limit(n, factor, step=step) == pytest.approx(ref, abs=2e-12, rel=0)


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


def test_limit_refuses_a_factor_the_quadrature_cannot_resolve():
    # log ratio ~ alpha^2 / n for small alpha, with rounding near 1e-14: a factor of 1 + 1e-15 cannot be located
    with pytest.raises(ValueError, match="factor must be at least 1 \\+ 1e-10"):
        exact.mean_field_limit(2, 1 + 1e-15)
    a = exact.mean_field_limit(10, 1 + 1e-6)
    assert a == pytest.approx(np.sqrt(10 * np.log1p(1e-6)), rel=1e-3)
