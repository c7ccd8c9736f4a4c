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


# the accuracy bound, on functions where the secant is no help: a jump, sign-type functions
# and a triple root, at 30 roots spread over the bracket [-1, 3] (none on a grid point)
_ROOTS = -1.0 + 4.0 * (np.arange(1, 31) / 31 + 0.01 * math.sqrt(2.0))
_HARD = {
    "jump": lambda r: (lambda x: 1.0 if x > r else -1000.0),
    "sign": lambda r: (lambda x: float(np.sign(x - r))),
    "falling step": lambda r: (lambda x: -1.0 if x >= r else 5.0),
    "triple root": lambda r: (lambda x: (x - r) ** 3),
}


@pytest.mark.parametrize("xtol, rtol", [(1e-6, 0.0), (1e-13, 1e-9), (0.0, 1e-8)])
@pytest.mark.parametrize("shape", list(_HARD))
def test_the_scalar_root_is_within_half_the_tolerance_on_jumps_and_a_triple_root(shape, xtol, rtol):
    """The documented bound, max(xtol, rtol |x|) / 2, at every one of 30 roots (up to the
    rounding of the midpoint): a solver that stopped at a bracket twice as wide misses it at
    some of them. Such functions take more steps than smooth ones, hence iterations=200."""
    for root in _ROOTS:
        got = bracketed_root(_HARD[shape](float(root)), -1.0, 3.0, xtol=xtol, rtol=rtol, iterations=200)
        bound = 0.5 * max(xtol, rtol * abs(root)) + 2 * np.spacing(root)
        assert abs(got - root) <= bound, f"root {root!r}: off by {abs(got - root) / bound:.3f} of the bound"


def test_about_as_many_evaluations_as_brentq_on_smooth_functions():
    """The module's claim: Anderson and Björck's method needs about as many evaluations as
    Brent's method; here at most 1.25 times scipy.optimize.brentq's count plus 2, at the
    tolerances of the library's callers."""
    optimize = pytest.importorskip("scipy.optimize")
    functions = {
        "cubic": (lambda x: x**3 - 2.0, 0.5, 3.0),
        "steep": (lambda x: math.expm1(3.0 * (x - math.log(40.0))), 1.0, 6.0),
        "log": (lambda x: math.log(x) - 1.3, 0.1, 50.0),
        "tanh": (lambda x: math.tanh(x - 0.3) + 0.1, -4.0, 5.0),
        "erf": (lambda x: math.erf(x) - 0.9, 0.0, 4.0),
    }
    for name, (f, lo, hi) in functions.items():
        for xtol, rtol in ((1e-12, 4 * np.finfo(float).eps), (1e-10, 1e-12)):
            ours, brent = [], []
            bracketed_root(lambda x: ours.append(x) or f(x), lo, hi, xtol=xtol, rtol=rtol)
            optimize.brentq(lambda x: brent.append(x) or f(x), lo, hi, xtol=xtol, rtol=rtol)
            assert len(ours) <= 1.25 * len(brent) + 2, f"{name}: {len(ours)} evaluations, brentq {len(brent)}"


def test_ends_far_out_do_not_overflow_the_midpoint():
    """Ends near the largest float: the midpoint (lo + hi) / 2 would overflow to inf."""
    got = bracketed_root(lambda x: x / 1e308 - 1.5, 1e308, 1.7e308, xtol=0.0, rtol=1e-12)
    assert abs(got - 1.5e308) <= 0.5e-12 * 1.5e308 * (1 + 1e-9)
    got = bracketed_root(lambda x: float(np.sign(x - 1e300)), -1.7e308, 1.7e308, xtol=0.0, rtol=1e-12, iterations=400)
    assert abs(got - 1e300) <= 0.5e-12 * 1e300 * (1 + 1e-9)


def test_a_nan_from_f_inside_the_bracket_is_refused_and_located():
    """A NaN compares as neither side of zero; it used to be taken as negative (the answer was
    2.9, where f is NaN next to the ends of the NaN stretch, not the root 1.5)."""
    def holed(x):
        return math.nan if 2.0 < x < 2.9 else x**3 - 1.5**3

    with pytest.raises(ValueError, match=r"^f is NaN at x = 2\.\d*, inside the bracket \[0\.0, 3\.0\]"):
        bracketed_root(holed, 0.0, 3.0, xtol=1e-12, rtol=0.0)
    with pytest.raises(ValueError, match=r"^f is NaN at the end hi = 3\.0"):
        bracketed_root(lambda x: math.nan if x > 2.5 else x - 1.0, 0.0, 3.0, xtol=1e-12, rtol=0.0)
    with pytest.raises(ValueError, match=r"^f is NaN at x = .*\(bracket 1, "):
        regula_falsi(lambda x, idx: np.where(idx == 1, np.nan, x - 1.0), np.array([0.0, 0.0]), np.array([3.0, 3.0]),
                     np.array([-1.0, -1.0]), np.array([2.0, 2.0]), xtol=1e-12, rtol=0.0, iterations=10)


@pytest.mark.parametrize("lo, hi, name", [(3.0, 0.2, "lo"), (1.0, 1.0, "lo"), (math.inf, 2.0, "lo"), (-math.inf, 2.0, "lo"),
                                          (math.nan, 2.0, "lo"), (0.0, math.inf, "hi"), (0.0, math.nan, "hi"), (0.0, "2", "hi")])
def test_ends_out_of_order_or_not_finite_are_refused_by_name(lo, hi, name):
    """The docstring asks lo < hi; reversed ends used to return 0.9 for a root at 1.3, and
    infinite ends ran out of steps with an unclear message."""
    with pytest.raises((ValueError, TypeError), match=f"^{name} must"):
        bracketed_root(lambda x: x**3 - 1.3**3, lo, hi, xtol=1e-12, rtol=0.0)


@pytest.mark.parametrize("name, bad", [("xtol", math.nan), ("xtol", -1e-12), ("xtol", math.inf), ("xtol", None),
                                       ("rtol", math.nan), ("rtol", -1e-12), ("rtol", math.inf), ("rtol", True)])
def test_tolerances_negative_or_not_finite_are_refused_by_name(name, bad):
    tolerances = {"xtol": 1e-12, "rtol": 1e-12, name: bad}
    with pytest.raises((ValueError, TypeError), match=f"^{name} must"):
        bracketed_root(lambda x: x - 1.0, 0.0, 3.0, **tolerances)
    with pytest.raises((ValueError, TypeError), match=f"^{name} must"):
        regula_falsi(lambda x, idx: x - 1.0, np.array([0.0]), np.array([3.0]), np.array([-1.0]), np.array([2.0]),
                     iterations=10, **tolerances)


def test_brackets_out_of_order_or_without_the_documented_signs_are_refused_by_name():
    def f(x, idx):
        return x - 1.0

    with pytest.raises(ValueError, match="^x_lo must be < x_hi"):
        regula_falsi(f, np.array([3.0]), np.array([0.0]), np.array([-1.0]), np.array([2.0]), xtol=1e-12, rtol=0.0, iterations=10)
    with pytest.raises(ValueError, match="^x_hi must be finite"):
        regula_falsi(f, np.array([0.0]), np.array([np.inf]), np.array([-1.0]), np.array([2.0]), xtol=1e-12, rtol=0.0, iterations=10)
    with pytest.raises(ValueError, match="^f_lo and f_hi must"):
        regula_falsi(f, np.array([0.0]), np.array([3.0]), np.array([2.0]), np.array([-1.0]), xtol=1e-12, rtol=0.0, iterations=10)
