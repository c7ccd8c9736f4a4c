"""What the chapters rely on from ``attnscale.checks``, pinned exactly.

Every chapter states its claims through ``identity``, ``close``, ``holds`` and
``differs``, and nbval compares the lines they print with the stored outputs.
So these tests pin (a) the printed line, character for character, for the
cases the chapters use (scalars and arrays, ``rtol = 0``, an ``atol``, a
``detail``, ``digits``), (b) the verdict at the documented boundaries
(``|value - expected| <= atol + rtol |expected|`` with equality allowed; a
claim equal to the recomputed value is not "wrong", even with ``rtol = 0``),
and (c) the error messages, which name the offending argument (the contract of
``attnscale._validate``).

The references are hand-written: expected lines and messages typed out, the
number of significant digits the tolerance vouches for worked out by hand
(``rtol = 1e-3`` vouches for three digits, and ``close`` prints one more), and
false identities whose difference is exactly 1.
"""

import math
import re
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from attnscale import checks

x = sp.Symbol("x", real=True)


def _message(excinfo) -> str:
    return str(excinfo.value)


# --- fmt ---------------------------------------------------------------------


def test_fmt_accepts_one_significant_digit():
    # digits must be >= 1, so 1 is allowed
    assert checks.fmt(0.26, 1) == "0.3"
    assert checks.fmt(123.0, 1) == "1e+02"
    assert checks.fmt(np.float64(-0.74), 1) == "-0.7"


@pytest.mark.parametrize(
    "bad, error, message",
    [
        ("x", TypeError, "x must be a real number, got 'x'"),
        (np.array(np.nan), ValueError, "x must be finite, got nan"),
        (np.array(-np.inf), ValueError, "x must be finite, got -inf"),
    ],
)
def test_fmt_errors_name_the_argument_x(bad, error, message):
    # a 0-d array (as close() passes) is checked like a plain number
    with pytest.raises(error) as excinfo:
        checks.fmt(bad)
    assert _message(excinfo) == message


# --- identity ----------------------------------------------------------------


@pytest.mark.parametrize(
    "lhs, rhs",
    [
        (x + 1, x),  # difference is the literal 1
        (sp.sin(x) ** 2 + sp.cos(x) ** 2, 0),  # difference simplifies to 1
        (sp.Matrix([[x + 1, 0]]), sp.Matrix([[x, 0]])),  # one entry off by 1
    ],
)
def test_identity_rejects_a_difference_of_one(lhs, rhs):
    with pytest.raises(AssertionError, match=r"^identity 'off by one' does not hold: lhs - rhs simplifies to "):
        checks.identity(lhs, rhs, "off by one")


# --- argument names in error messages ------------------------------------------


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: checks.identity(1, 1, 3), TypeError, "name must be a string, got 3"),
        (lambda: checks.close(1.0, 1.0, name=None), TypeError, "name must be a string, got None"),
        (lambda: checks.close(1.0, 1.0, name="c", rtol="r"), TypeError, "rtol must be a real number, got 'r'"),
        (lambda: checks.close(1.0, 1.0, name="c", atol=None), TypeError, "atol must be a real number, got None"),
        (lambda: checks.holds(True, 3), TypeError, "name must be a string, got 3"),
        (lambda: checks.differs(1.0, 2.0, name=3, rtol=0.1), TypeError, "name must be a string, got 3"),
        (lambda: checks.differs(1.0, 2.0, name="d", rtol="r"), TypeError, "rtol must be a real number, got 'r'"),
        (lambda: checks.differs(np.nan, 2.0, name="d", rtol=0.1), ValueError, "value must be finite, got nan in nan"),
        (lambda: checks.differs(1.0, [2.0, np.inf], name="d", rtol=0.1), ValueError, "claimed must be finite, got inf in array of shape (2,) [2.0, inf]"),
    ],
)
def test_errors_name_the_offending_argument(call, error, message):
    with pytest.raises(error) as excinfo:
        call()
    assert _message(excinfo) == message


# --- close: verdict ----------------------------------------------------------


def test_close_default_rtol_is_1e_minus_12(capsys):
    # chapters 09 and 10 call close() without rtol and rely on this default
    checks.close(1.0 + 1e-13, 1.0, name="default")
    assert capsys.readouterr().out == "default: 1 vs 1 (rtol 1e-12)\n"
    with pytest.raises(AssertionError, match=r"^default: 1 of 1 values outside rtol 1e-12; "):
        checks.close(1.0 + 1e-11, 1.0, name="default")


@pytest.mark.parametrize(
    "value, expected, rtol, atol",
    [
        (0.5, 0.5, 0.0, 0.0),  # exact equality with no tolerance at all
        ([0.5, -3.0], [0.5, -3.0], 0.0, 0.0),
        (1.25, 1.0, 0.0, 0.25),  # |error| equal to atol (all exact in binary)
        (1.5, 1.0, 0.5, 0.0),  # |error| equal to rtol |expected|
    ],
)
def test_close_allows_equality_with_the_tolerance(value, expected, rtol, atol):
    checks.close(value, expected, rtol=rtol, atol=atol, name="boundary")


def test_close_tolerance_scales_with_the_expected_value():
    # 0.5 off at 100 is 0.5%: inside rtol 1e-2, whose allowance there is 1.0
    checks.close(100.5, 100.0, rtol=1e-2, name="relative")
    checks.close([100.5, -199.0], [100.0, -200.0], rtol=1e-2, name="relative")
    with pytest.raises(AssertionError):
        checks.close(0.0105, 0.01, rtol=1e-2, name="relative")


@pytest.mark.parametrize(
    "value, expected",
    [
        (math.comb(100, 50), 1.008913445455642e29),  # a Python int beyond int64
        (1.008913445455642e29, math.comb(100, 50)),
        (Fraction(1, 3), 1 / 3),
        (1 / 3, Fraction(1, 3)),
    ],
)
def test_close_accepts_exact_python_numbers(value, expected, capsys):
    checks.close(value, expected, rtol=1e-15, name="exact number")
    assert capsys.readouterr().out.startswith("exact number: ")


def test_close_names_the_first_entry_outside(capsys):
    with pytest.raises(AssertionError) as excinfo:
        checks.close([1.0, 2.5, 3.0, 4.5], [1.0, 2.0, 3.0, 4.0], rtol=1e-3, name="far")
    # numpy >= 2 writes np.float64(2.5), older numpy 2.5
    pattern = r"far: 2 of 4 values outside rtol 0\.001; entry 1 is (np\.float64\()?2\.5\)?, expected (np\.float64\()?2\.0\)?"
    assert re.fullmatch(pattern, _message(excinfo))


# --- close: the printed line ---------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, line",
    [
        # rtol 1e-3 vouches for three digits; close prints one more
        ({"value": 1 / 3, "expected": 1 / 3 + 1e-5, "rtol": 1e-3}, "s: 0.3333 vs 0.3333 (rtol 0.001)"),
        ({"value": 2 / 3, "expected": 2 / 3, "rtol": 1e-8}, "s: 0.666667 vs 0.666667 (rtol 1e-08)"),  # capped at digits = 6
        # rtol = 0: all `digits` digits, and the atol is shown
        ({"value": 1 / 3, "expected": 1 / 3, "rtol": 0}, "s: 0.333333 vs 0.333333 (rtol 0)"),
        ({"value": 1 / 3, "expected": 0.33, "rtol": 0, "atol": 0.005, "digits": 3}, "s: 0.333 vs 0.33 (rtol 0, atol 0.005)"),
        # a caller's digits caps the tolerance's, down to a single digit
        ({"value": 0.31, "expected": 0.3, "rtol": 0.1, "digits": 1}, "s: 0.3 vs 0.3 (rtol 0.1)"),
        # a tolerance of 100% or more still shows one digit
        ({"value": 0.31, "expected": 0.2, "rtol": 1.0}, "s: 0.3 vs 0.2 (rtol 1)"),
        # an expectation of exactly 0: only the bound is printed
        ({"value": 1e-17, "expected": 0.0, "atol": 1e-16}, "s: |value| <= 1e-16"),
        ({"value": 0.0, "expected": 0.0, "rtol": 0}, "s: |value| <= 0"),
        # arrays: a count
        ({"value": np.array([1.0, 2.0]), "expected": [1.0, 2.0], "rtol": 0, "atol": 1e-15}, "s: all 2 values agree (rtol 0, atol 1e-15)"),
        ({"value": [[1.0, 2.0], [3.0, 4.0]], "expected": [[1.0, 2.0], [3.0, 4.0]], "rtol": 1e-9}, "s: all 4 values agree (rtol 1e-09)"),
        ({"value": [0.0, 1e-9], "expected": 0.0, "atol": 1e-8}, "s: all 2 values agree (rtol 1e-12, atol 1e-08)"),
    ],
)
def test_close_prints_one_stable_line(kwargs, line, capsys):
    checks.close(name="s", **kwargs)
    assert capsys.readouterr().out == line + "\n"


# --- holds ---------------------------------------------------------------------


def test_holds_prints_and_raises_with_and_without_detail(capsys):
    checks.holds(True, "bare")
    assert capsys.readouterr().out == "holds: bare\n"
    checks.holds(np.bool_(True), "with detail", "2 > 1")
    assert capsys.readouterr().out == "holds: with detail (2 > 1)\n"
    with pytest.raises(AssertionError) as excinfo:
        checks.holds(False, "bare")
    assert _message(excinfo) == "'bare' does not hold"
    with pytest.raises(AssertionError) as excinfo:
        checks.holds(np.bool_(False), "with detail", "1 > 2")
    assert _message(excinfo) == "'with detail' does not hold: 1 > 2"


# --- differs -------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, line",
    [
        ({"value": 1 / 3, "claimed": 0.3, "rtol": 0.01}, "claim is wrong: d: claimed 0.3, actually 0.333333"),
        ({"value": 1 / 3, "claimed": 2 / 3, "rtol": 0.01, "digits": 3}, "claim is wrong: d: claimed 0.667, actually 0.333"),
        # relative to the recomputed value: 0.001 vs 0.002 is 100% off
        ({"value": 0.001, "claimed": 0.002, "rtol": 0.5}, "claim is wrong: d: claimed 0.002, actually 0.001"),
        # rtol = 0 is allowed: any difference makes the claim wrong
        ({"value": 1.0, "claimed": 1.5, "rtol": 0}, "claim is wrong: d: claimed 1.5, actually 1"),
        # arrays: how many entries are off; an equal entry does not count, even at rtol 0
        ({"value": [1.0, 2.0, 3.0], "claimed": [1.0, 2.5, 3.5], "rtol": 0.01}, "claim is wrong: d: 2 of 3 values off by more than rtol 0.01"),
        ({"value": [1.0, 2.0], "claimed": [1.0, 3.0], "rtol": 0}, "claim is wrong: d: 1 of 2 values off by more than rtol 0"),
    ],
)
def test_differs_prints_the_correction(kwargs, line, capsys):
    checks.differs(name="d", **kwargs)
    assert capsys.readouterr().out == line + "\n"


@pytest.mark.parametrize(
    "value, claimed, rtol",
    [
        (100.0, 101.0, 0.05),  # 1% off, within 5%
        (-200.0, -201.0, 0.01),  # 0.5% off, within 1%
        (1.0, 1.0, 0.0),  # an exact claim is right even with no tolerance
        ([1.0, 2.0], [1.0, 2.0], 0.0),
        (0.0, 0.0, 0.0),
    ],
)
def test_differs_rejects_a_claim_within_rtol(value, claimed, rtol):
    with pytest.raises(AssertionError, match=r"^d: the claim .* agrees with the recomputed .* within rtol "):
        checks.differs(value, claimed, name="d", rtol=rtol)


def test_fmt_digits_follow_the_library_rule_for_integers():
    # any integer type is accepted (a NumPy integer from an array of digit counts);
    # a fraction, a bool or zero is refused with the argument named
    assert checks.fmt(1 / 3, np.int64(3)) == "0.333"
    assert checks.fmt(1 / 3, 2.0) == "0.33"
    with pytest.raises(TypeError, match=r"^digits must be an integer >= 1, got 2\.5$"):
        checks.fmt(1.0, 2.5)
    with pytest.raises(TypeError, match=r"^digits must be an integer >= 1, got True$"):
        checks.fmt(1.0, True)
    with pytest.raises(ValueError, match=r"^digits must be an integer >= 1, got 0$"):
        checks.fmt(1.0, 0)
