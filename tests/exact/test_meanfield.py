"""attnscale.exact.meanfield: the mean-field limit and its check, against mpmath and the exact
expectations it approximates.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from attnscale import exact, exact as E
from exact_reference import rows
from expect import refuses


@pytest.mark.parametrize(
    'kwargs, exc, name',
    [
        ({"n": 1e15 + 0.5}, ValueError, 'n'),
        ({"n": [2.0, 1.5]}, ValueError, 'n'),
        ({"n": [1e15, 2e15]}, ValueError, 'n'),
        ({"n": 64, "step": 0.2}, ValueError, 'step'),
    ],
)
def test_mean_field_limit_messages(kwargs, exc, name):
    """The edges test_refusals does not try: n = 2 and n = 1e15 are allowed, 1e15 + 0.5 is
    not; a bad entry after a valid one; a step just above the largest, 0.1."""
    refuses(exc, name, lambda: E.mean_field_limit(**kwargs))


def test_mean_field_limit_accepts_the_largest_step():
    """step = 0.1 is allowed (the range is (0, 0.1]) and gives the 10% crossing for n = 64."""
    a = E.mean_field_limit(64, step=0.1)
    assert math.log(E.mean_field_ratio(64, a)) == pytest.approx(math.log(1.1), rel=1e-9, abs=0)
    assert a == pytest.approx(1.0121793124, abs=1e-9)


@pytest.mark.parametrize(
    "n, factor, step", [(64, 1.1, 0.05), (1e6, 1.1, 0.02), (4096, 2.0, 0.05), (2, 1.05, 0.05), (2, 2.0, 0.05), (1e6, 1.05, 0.05), (1e6, 2.0, 0.05)]
)
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


# E sum p^2 for normal scores from the table of nested mpmath quadratures
MPMATH_P2 = [(n, a, v) for kind, n, a, _, _, v in rows((64, 2.0, None, None), (1e9, 0.05, None, None), (4096, 10.0, None, None)) if kind == "p2"]


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


def test_limit_values_and_steps():
    # chapter 7's values to two decimals, and the answer does not depend on the walk's step
    a = exact.mean_field_limit([64, 512, 4096, 32768, 1e6])
    assert np.round(a, 2).tolist() == [1.01, 1.38, 1.72, 2.02, 2.45]
    assert exact.mean_field_limit(4096, step=0.01) == pytest.approx(a[2], abs=1e-11)
    assert exact.mean_field_limit(64, 1.1) < exact.mean_field_limit(64, 1.5)


def test_limit_of_a_factor_close_to_one():
    """log ratio ~ alpha^2 / n for small alpha: a factor of 1 + 1e-6 is still resolved."""
    a = exact.mean_field_limit(10, 1 + 1e-6)
    assert a == pytest.approx(np.sqrt(10 * np.log1p(1e-6)), rel=1e-3)
