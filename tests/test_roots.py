"""attnscale._roots, the library's bracketed root finder, on functions whose roots are known
exactly: straight, convex, concave and steep in the variable, where plain regula falsi keeps
one end for ever and only the shrinking of the kept end makes it converge."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnscale._roots import bracketed_root, regula_falsi

# f(x) with x = log(alpha) and a root at alpha = 5 or 40 (x = log 5, log 40)
SHAPES = {
    "straight": (lambda x: x - math.log(5.0), math.log(5.0)),
    "convex": (lambda x: (x - math.log(5.0)) + 0.8 * (x - math.log(5.0)) ** 2, math.log(5.0)),
    "concave": (lambda x: (x - math.log(5.0)) - 0.8 * (x - math.log(5.0)) ** 2, math.log(5.0)),
    "steep": (lambda x: np.expm1(3.0 * (x - math.log(40.0))), math.log(40.0)),
}


def _counted(f):
    calls = []

    def g(x, idx):
        calls.append(np.array(x, copy=True))
        return f(x)

    return g, calls


@pytest.mark.parametrize("method", ["illinois", "anderson-bjorck"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_method_converges_on_every_shape_whichever_end_it_must_move(shape, method):
    """From a bracket a factor 2 wide on either side of the root (the first step lands on
    one side, so either end may be the one kept), both methods reach a bracket of width
    4e-16 relative in at most 15 steps; plain regula falsi needs about 50 on the curved ones."""
    f, root = SHAPES[shape]
    for lo, hi in ((root - math.log(2.0), root + 0.1), (root - 0.1, root + math.log(2.0))):
        g, calls = _counted(f)
        x_lo, x_hi, left = regula_falsi(g, np.array([lo]), np.array([hi]), np.array([f(lo)]), np.array([f(hi)]),
                                        xtol=4e-16, rtol=4e-16, iterations=15, method=method)
        assert left.size == 0 and len(calls) <= 15
        assert x_lo[0] <= root * (1 + 1e-15) and x_hi[0] >= root * (1 - 1e-15)
        assert x_hi[0] - x_lo[0] <= 4e-16 * max(1.0, abs(x_hi[0]))


def test_many_brackets_at_once_each_to_its_own_root():
    """One call refines every bracket; a bracket is evaluated only while it is not done."""
    roots = np.array([0.5, 1.0, 2.0, 3.0, 7.0])
    sizes = []

    def f(x, idx):
        sizes.append(idx.size)
        return x**3 - roots[idx] ** 3

    lo, hi = roots / 2, roots * 2
    x_lo, x_hi, left = regula_falsi(f, lo, hi, lo**3 - roots**3, hi**3 - roots**3, xtol=1e-14, rtol=1e-14, iterations=60)
    assert left.size == 0
    np.testing.assert_allclose(0.5 * (x_lo + x_hi), roots, rtol=1e-14)
    assert sizes[0] == roots.size and sizes == sorted(sizes, reverse=True)


def test_steps_running_out_leave_a_bracket_and_name_the_unfinished():
    """A jump (not a root the secant can find quickly): after two steps the bracket still holds
    the jump, and the bracket is reported as not done; the scalar solver raises instead."""
    def jump(x):
        return np.where(x > 3.0, 1.0, -1000.0)

    x_lo, x_hi, left = regula_falsi(lambda x, idx: jump(x), np.array([1.0]), np.array([10.0]), np.array([-1000.0]),
                                    np.array([1.0]), xtol=1e-12, rtol=1e-12, iterations=2)
    assert list(left) == [0] and x_lo[0] <= 3.0 < x_hi[0] and x_hi[0] - x_lo[0] > 1e-12
    with pytest.raises(RuntimeError, match="after 2 steps"):
        bracketed_root(lambda x: float(jump(x)), 1.0, 10.0, xtol=1e-12, rtol=1e-12, iterations=2)
    assert bracketed_root(lambda x: float(jump(x)), 1.0, 10.0, xtol=1e-12, rtol=1e-12) == pytest.approx(3.0, abs=1e-12)


@pytest.mark.parametrize("xtol, rtol", [(1e-10, 1e-12), (1e-14, 4 * np.finfo(float).eps), (1e-300, 4 * np.finfo(float).eps)])
def test_the_scalar_root_is_within_half_the_tolerance(xtol, rtol):
    """The midpoint of a bracket no wider than max(xtol, rtol |x|): within half of that of the
    root, for roots near 1 and far from it, and for f rising or falling."""
    for root in (2.0 ** (1 / 3), 1234.5678, 1e-3):
        for sign in (1.0, -1.0):
            got = bracketed_root(lambda x: sign * (x**3 - root**3), root / 3, root * 3, xtol=xtol, rtol=rtol)
            assert abs(got - root) <= 0.5 * max(xtol, rtol * root) * (1 + 1e-12) + 2 * np.spacing(root)


def test_an_exact_zero_at_an_end_or_on_the_way_is_returned_as_it_is():
    calls = []

    def linear(x):
        calls.append(x)
        return x - 2.0

    assert bracketed_root(linear, 2.0, 5.0, xtol=1e-12, rtol=0.0) == 2.0
    assert bracketed_root(linear, 0.0, 2.0, xtol=1e-12, rtol=0.0) == 2.0
    calls.clear()
    assert bracketed_root(linear, 0.0, 4.0, xtol=1e-12, rtol=0.0) == 2.0  # the first secant point is the root
    assert len(calls) == 3


def test_a_bracket_without_a_sign_change_is_refused():
    with pytest.raises(ValueError, match="must change sign"):
        bracketed_root(lambda x: x * x + 1.0, -1.0, 1.0, xtol=1e-12, rtol=0.0)
