"""Tests written against surviving mutants of ``attnscale.exact._grid`` and of the near-tie
functions in ``attnscale.exact.bulk`` (mutmut 3).

What they pin, and the independent reference for each:

- ``near_tie_limit`` for ``d = 2`` returns ``+inf`` directly, without quadrature. That
  shortcut must still give a Python float for a scalar ``n`` and keep the shape of an
  array ``n``, as every function of the package does. References: the documented value
  ``+inf`` and the package's result contract (scalar in, float out; array in, same shape
  out).
- ``near_tie_correction`` for cosine scores in ``d = 5``. There the density
  ``f = 3 (1 - s^2) / 4``, its derivative ``f' = -3 s / 2`` and the distribution function
  ``F = (1 + s)^2 (2 - s) / 4`` are polynomials, so ``C_2`` has closed forms for small
  ``n`` (worked out in the test's docstring). The tolerance is the near-tie functions'
  documented accuracy, a relative 1e-12. At ``n = 2`` the code before this test missed
  even 1e-11 (a fault, since fixed: the quantile grid was too short for ``d = 5``).

Most of the other survivors in ``_grid`` change results only at the level of rounding,
or not at all. They are argued equivalent in the review notes, not here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnscale import exact as E


def test_near_tie_limit_for_d_2_keeps_scalars_and_shapes():
    """For d = 2 the integral of f^2 diverges and the limit is +inf. A scalar n still gives
    a Python float, and an array n keeps its shape. (Kills `scalar_or_array(..., None)` and
    the dropped shape argument, which return the raveled 1-d array.)"""
    one = E.near_tie_limit(7, 2)
    assert isinstance(one, float) and one == math.inf
    grid = E.near_tie_limit(np.array([[2.0, 3.0, 4.0], [10.0, 1e6, 1e15]]), 2)
    assert isinstance(grid, np.ndarray) and grid.shape == (2, 3)
    assert np.all(grid == math.inf)
    column = E.near_tie_limit([[2.0], [5.0]], 2)
    assert column.shape == (2, 1)


@pytest.mark.parametrize(
    "n, closed_form",
    [
        (2, -math.pi**2 / 2),
        (3, -3 * math.pi**2 / 4),
    ],
)
def test_near_tie_correction_d5_matches_its_closed_forms(n, closed_form):
    """C_2 = -(pi^2/6) n (n-1) int [f'^2 F^(n-2) + ((n-2)/2) f^2 f' F^(n-3)] ds for d = 5.

    n = 2: the second term vanishes, and int f'^2 ds = (9/4) int s^2 ds = 3/2, so
    C_2 = -(pi^2/3)(3/2) = -pi^2/2.
    n = 3: int f^2 f' ds = [f^3/3] from -1 to 1 = 0, and int f'^2 F ds =
    (9/16) int (2 s^2 + 3 s^3 - s^5) ds = 3/4, so C_2 = -pi^2 (3/4).

    At d = 5, f' does not vanish at s = +-1. In the quadrature variable w (the logit of F),
    the integrand therefore decays only like e^(-|w|/2) at both ends, and for n = 2 the
    lower end is not damped by F^(n-2). A grid from w = -50 to 55 + log n (the code before
    this test) left out about e^-25 of the integral at n = 2 (2.5e-11 relative) and
    e^-27.5 (2.5e-12) for every n; the grid now reaches e^-40 at both ends.
    """
    assert E.near_tie_correction(n, 5) == pytest.approx(closed_form, rel=1e-12, abs=0)
