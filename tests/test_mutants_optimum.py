"""Tests written to kill the mutants of attnscale.optimum that survived the rest of the suite.

Every expected value comes from outside the code under test: a root of the stated
first-order condition found by mpmath at 80 digits, the d = 3 closed form of the cosine
optimum (alpha* = n/2 once alpha* is large), Lambert W from mpmath, or an error message
written out in full. Three tests replace the cosine moment ratio by a stand-in with a
known root (as test_mutants_core does to count evaluations) to reach the iteration cap
and the bracketing guard, which real inputs do not reach.
"""

from __future__ import annotations

import math
import re
import warnings

import mpmath as mp
import numpy as np
import pytest

import attnscale.optimum as optimum
from attnscale.optimum import alpha_star_cosine, alpha_star_frobenius_normal, fit_through_origin, su_sweep

EPS = np.finfo(float).eps

# ---- su_sweep ---------------------------------------------------------------------


def test_su_sweep_is_a_float_array_of_the_500_lengths():
    """The sweep is float64 (not numpy's default integer dtype for arange) and holds 40, 80, ..., 20000."""
    s = su_sweep()
    assert s.dtype == np.float64
    np.testing.assert_array_equal(s, 40.0 * np.arange(1, 501))


# ---- fit_through_origin: the messages word for word ---------------------------------

FIT_ERRORS = [
    (2.0, 1.0, "values must have at least one axis, got a scalar 2.0"),
    ([1.0, np.nan], [1.0, 2.0], "values must be finite, got nan in array of shape (2,) [1.0, nan]"),
    ([1.0, 2.0], [np.inf, 1.0], "basis must be finite, got inf in array of shape (2,) [inf, 1.0]"),
    ([1.0, 2.0], [1.0, 2.0, 3.0], "basis of shape (3,) does not broadcast against values of shape (2,)"),
    ([1.0, 0.0], [1.0, 2.0], "values must be non-zero (the misfit is relative to them)"),
    ([1.0, 2.0], [0.0, 0.0], "basis must not be all zero"),
]


@pytest.mark.parametrize(("values", "basis", "message"), FIT_ERRORS, ids=["scalar", "nan-values", "inf-basis", "shapes", "zero-value", "zero-basis"])
def test_fit_through_origin_error_messages_word_for_word(values, basis, message):
    """Each rejection names the right argument and shows the offending value or shape (the whole message is pinned)."""
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        fit_through_origin(values, basis)


# ---- alpha_star_frobenius_normal against its first-order condition -----------------


def _frobenius_root(n: float) -> mp.mpf:
    """alpha* from an 80-digit root of the docstring's condition
    (1 + u/n - 2u^2/n) + x (1 + 2u/n - 6u^2/n) = 0, u = e^x, on (0, log((1 + sqrt(1 + 8n))/4))."""
    with mp.workdps(80):
        m = mp.mpf(n)

        def foc(x):
            u = mp.exp(x)
            return (1 + u / m - 2 * u * u / m) + x * (1 + 2 * u / m - 6 * u * u / m)

        upper = mp.log((1 + mp.sqrt(1 + 8 * m)) / 4)
        x = mp.findroot(foc, (upper / 10**6, upper), solver="anderson", tol=mp.mpf(10) ** -70, maxsteps=500)
        return +mp.sqrt(x)


def test_frobenius_optimum_to_a_few_ulp_from_n_1_1():
    """The docstring: a few ulp for n >= 1.1, here 4 ulp (a bracket upper bound below the root, or
    brentq's default xtol of 2e-12, gives an error or a 1e-13 miss at n = 1.1 and n = 10)."""
    for n in (1.1, 1.5, 10.0, 1e4):
        got = alpha_star_frobenius_normal(n)
        assert abs(mp.mpf(got) / _frobenius_root(n) - 1) <= 4 * EPS, n


def test_frobenius_optimum_near_one_to_a_few_ulp():
    """Down to n = 1 + eps (accepted by the input check) the condition and the bracket are
    free of cancellation: within 4 ulp of mpmath. Before they were rewritten, n = 1 + eps
    raised SciPy's 'f(a) and f(b) must have different signs' (the bracket's upper end
    rounded to log 1 = 0) and the error grew like eps / (n - 1) (4e-11 at n = 1.001)."""
    for n in (1.0 + EPS, 1.0 + 3 * EPS, 1.0 + 1e-12, 1.0 + 1e-7, 1.0001, 1.001, 1.01):
        got = alpha_star_frobenius_normal(n)
        assert abs(mp.mpf(got) / _frobenius_root(n) - 1) <= 4 * EPS, n


def test_frobenius_optimum_at_the_top_of_the_float_range_without_overflow():
    """n up to the largest float: the bracket is formed without overflow (no RuntimeWarning, as the
    code's 'no overflow of 8 n' intends) and the answer is still within 4 ulp."""
    for n in (1e307, 1.7e308):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = alpha_star_frobenius_normal(n)
        assert abs(mp.mpf(got) / _frobenius_root(n) - 1) <= 4 * EPS, n


# ---- alpha_star_cosine: the reach of the bracket search ------------------------------


def _n_where_d3_optimum_is(factor: float) -> float:
    """The n whose d = 3 optimum n/2 equals factor * 1.5 sqrt(3) alpha*_N(n) 2^399, the last point the
    doubling search tests (alpha*_N from mpmath's Lambert W; a fixed point, converged in a few rounds)."""
    with mp.workdps(30):
        n = mp.mpf("1e122")
        for _ in range(10):
            alpha_n = mp.sqrt(mp.lambertw(n * mp.sqrt(mp.e) / 2).real - mp.mpf(1) / 2)
            n = 2 * factor * mp.mpf(1.5) * mp.sqrt(3) * alpha_n * mp.mpf(2) ** 399
        return float(n)


def test_alpha_star_cosine_bracket_search_reach_for_d3():
    """The bracket grows by doubling 400 times from 1.5 sqrt(d) alpha*_N(n) and then gives up with the
    documented message. For d = 3 (R = a coth a, so alpha* = n/2 once alpha* is large) an optimum 1%
    inside that reach is found; one 1% beyond it raises. A larger start, factor or count would find it."""
    inside, beyond = _n_where_d3_optimum_is(0.99), _n_where_d3_optimum_is(1.01)
    assert alpha_star_cosine(inside, 3) == pytest.approx(inside / 2, rel=1e-13)
    with pytest.raises(ValueError, match=r"^n is too large for d: the optimum could not be bracketed$"):
        alpha_star_cosine(beyond, 3)


# ---- alpha_star_cosine with a stand-in for the moment ratio --------------------------
# h(alpha) = log R + log1p(alpha (log R)') - log n; the stand-ins return log R = log n + s(alpha)
# and a zero slope, so h = s. For n = 10, d = 4 the search starts at 1.5 sqrt(4) alpha*_N(10) = 3.18.


def _stand_in(monkeypatch, s):
    calls = []

    def terms(a, d):
        calls.append(np.array(a, copy=True))  # the scales h is evaluated at, one array per call
        return np.log(10.0) + s(a), np.zeros_like(a)

    monkeypatch.setattr(optimum, "_cosine_terms", terms)
    return calls


def test_alpha_star_cosine_takes_sixty_illinois_steps_by_default(monkeypatch):
    """The docstring: at most `iterations` steps, 60 by default. With h a step at alpha = 3 (+1 above,
    -1000 below) Illinois needs over a hundred steps, so the default run uses all 60: one grow test,
    two shrink tests, the two end values, then 60 steps; the answer stays inside the bracket (1.59, 3.18)."""
    calls = _stand_in(monkeypatch, lambda a: np.where(a > 3.0, 1.0, -1000.0))
    got = alpha_star_cosine(10.0, 4.0)
    assert len(calls) == 1 + 2 + 2 + 60
    assert 1.59 < got < 3.19


def test_alpha_star_cosine_shrinking_gives_up_with_its_message(monkeypatch):
    """If h never turns negative (real inputs cannot do that: it needs 400 halvings below 1.5 sqrt(d)
    alpha*_N), the search stops after 400 halvings with its own message instead of returning a bad bracket."""
    calls = _stand_in(monkeypatch, lambda a: np.ones_like(a))
    with pytest.raises(ValueError, match=r"^could not bracket the optimum: n too close to 1$"):
        alpha_star_cosine(10.0, 4.0)
    assert len(calls) == 1 + 400


def _illinois_by_hand(s, hi0, iterations=60):
    """The documented search written out for one scalar: double hi from hi0 until h(hi) > 0,
    halve lo until h(lo) < 0, then Illinois regula falsi in log(alpha) (the value kept at an
    end that survives twice in a row is halved), stopping when the bracket is below
    4e-16 max(1, |log hi|) or h hits 0. Returns every alpha at which h is evaluated."""
    seen = []

    def h(a):
        seen.append(a)
        return s(a)

    hi = lo = hi0
    while h(hi) <= 0:
        lo, hi = hi, 2.0 * hi
    while h(lo) >= 0:
        hi, lo = lo, lo / 2.0
    xl, xh = math.log(lo), math.log(hi)
    fl, fh = h(lo), h(hi)
    side = 0
    for _ in range(iterations):
        x = xh - fh * (xh - xl) / (fh - fl)
        if not xl < x < xh:
            x = 0.5 * (xl + xh)
        f = h(math.exp(x))
        if f > 0:
            xh, fh = x, f
            if side == 1:
                fl *= 0.5
            side = 1
        else:
            xl, fl = x, f
            if side == -1:
                fh *= 0.5
            side = -1
        if xh - xl <= 4e-16 * max(1.0, abs(xh)) or f == 0:
            break
    return seen


@pytest.mark.parametrize("shape", ["log", "curved", "concave", "steep"])
def test_alpha_star_cosine_follows_the_illinois_search_step_by_step(monkeypatch, shape):
    """With a stand-in moment ratio (h = s(alpha)), the points at which alpha_star_cosine
    evaluates h are those of the documented search written out here for one scalar: the same
    bracket, then the same Illinois steps (its end-value halving, the bisection fallback, the
    stopping rule), in the same number. A change to the Illinois bookkeeping that still
    converges, only more slowly, changes this sequence."""
    s = {"log": lambda a: np.log(a / 5.0),
         "curved": lambda a: np.log(a / 5.0) + 0.8 * np.log(a / 5.0) ** 2,
         "concave": lambda a: np.log(a / 5.0) - 0.8 * np.log(a / 5.0) ** 2,
         "steep": lambda a: np.expm1(3.0 * np.log(a / 40.0))}[shape]
    calls = _stand_in(monkeypatch, s)
    got = alpha_star_cosine(10.0, 4.0)
    seen = [float(c[0]) for c in calls]
    # h as the code forms it from the stand-in: (log n + s) + log1p(0) - log n, rounding included
    expected = _illinois_by_hand(lambda a: float((np.log(10.0) + s(np.array([a]))[0]) + 0.0 - np.log(10.0)), seen[0])
    assert len(seen) == len(expected)
    np.testing.assert_allclose(seen, expected, rtol=1e-13)
    root = {"log": 5.0, "curved": 5.0, "concave": 5.0, "steep": 40.0}[shape]
    assert got == pytest.approx(root, rel=1e-14)
