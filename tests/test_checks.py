"""attnscale.checks: the comparisons a chapter's check cells make (close, differs, fmt) and the
summary they print; every expected value is written out by hand.
"""

from __future__ import annotations

from fractions import Fraction
import math
import re

import numpy as np
import pytest
import sympy as sp

from attnscale import checks
from attnscale.symbolic import general_softmax
from expect import named


x = sp.Symbol("x", real=True)


def _message(excinfo) -> str:
    return str(excinfo.value)


@pytest.mark.parametrize(
    "args, shown",
    [
        ((0.26, 1), "0.3"),  # digits must be >= 1, so 1 is allowed
        ((123.0, 1), "1e+02"),
        ((np.float64(-0.74), 1), "-0.7"),
        ((0.0,), "0"),
        ((1 / 3,), "0.333333"),  # six digits by default
        ((123456789.0, 3), "1.23e+08"),
    ],
)
def test_fmt_is_stable(args, shown):
    assert checks.fmt(*args) == shown


@pytest.mark.parametrize(
    'bad, error, name',
    [
        (np.array(np.nan), ValueError, 'x'),
        (np.array(-np.inf), ValueError, 'x'),
    ],
)
def test_fmt_errors_name_the_argument_x(bad, error, name):
    # a 0-d array (as close() passes) is checked like a plain number
    with pytest.raises(error) as excinfo:
        checks.fmt(bad)
    assert _message(excinfo).startswith(name)


@pytest.mark.parametrize(
    "lhs, rhs",
    [
        (x + 1, x),  # difference is the literal 1
        (sp.sin(x) ** 2 + sp.cos(x) ** 2, 0),  # difference simplifies to 1
        (sp.Matrix([[x + 1, 0]]), sp.Matrix([[x, 0]])),  # one entry off by 1
    ],
)
def test_identity_rejects_a_difference_of_one(lhs, rhs):
    with pytest.raises(AssertionError, match=named('identity')):
        checks.identity(lhs, rhs, "off by one")


@pytest.mark.parametrize(
    'call, error, name',
    [
        # the rest of these functions' arguments are in tests/test_refusals.py's table
        (lambda: checks.close(1.0, 1.0, name="c", atol=None), TypeError, 'atol'),
        (lambda: checks.differs(1.0, 2.0, name=3, rtol=0.1), TypeError, 'name'),
        (lambda: checks.differs(1.0, [2.0, np.inf], name="d", rtol=0.1), ValueError, 'claimed'),
    ],
)
def test_errors_name_the_offending_argument(call, error, name):
    with pytest.raises(error) as excinfo:
        call()
    assert _message(excinfo).startswith(name)


def test_close_default_rtol_is_1e_minus_12(capsys):
    # chapters 09 and 10 call close() without rtol and rely on this default
    checks.close(1.0 + 1e-13, 1.0, name="default")
    assert capsys.readouterr().out == "default: 1 vs 1 (rtol 1e-12)\n"
    with pytest.raises(AssertionError, match=named('default')):
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


def test_close_names_the_first_entry_outside_and_fails_a_non_finite_value():
    with pytest.raises(AssertionError) as excinfo:
        checks.close([1.0, 2.5, 3.0, 4.5], [1.0, 2.0, 3.0, 4.0], rtol=1e-3, name="far")
    # numpy >= 2 writes np.float64(2.5), older numpy 2.5
    pattern = r"far: 2 of 4 values outside rtol 0\.001; entry 1 is (np\.float64\()?2\.5\)?, expected (np\.float64\()?2\.0\)?"
    assert re.fullmatch(pattern, _message(excinfo))
    with pytest.raises(AssertionError, match="non-finite"):
        checks.close(np.nan, 1.0, rtol=1, name="nan")


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
    with pytest.raises(AssertionError, match=named('d')):
        checks.differs(value, claimed, name="d", rtol=rtol)


def test_fmt_digits_follow_the_library_rule_for_integers():
    # any integer type is accepted (a NumPy integer from an array of digit counts);
    # a fraction, a bool or zero is refused with the argument named
    assert checks.fmt(1 / 3, np.int64(3)) == "0.333"
    assert checks.fmt(1 / 3, 2.0) == "0.33"
    with pytest.raises(TypeError, match=named('digits')):
        checks.fmt(1.0, 2.5)
    with pytest.raises(TypeError, match=named('digits')):
        checks.fmt(1.0, True)
    with pytest.raises(ValueError, match=named('digits')):
        checks.fmt(1.0, 0)


def test_identity_passes_true_and_fails_false(capsys):
    checks.identity(sp.sin(x) ** 2 + sp.cos(x) ** 2, 1, "pythagoras")
    assert capsys.readouterr().out == "identity holds: pythagoras\n"
    with pytest.raises(AssertionError, match="'wrong' does not hold"):
        checks.identity(sp.sin(x) ** 2, 1, "wrong")
    checks.identity(sp.Matrix([[x, 1]]) * 2, sp.Matrix([[2 * x, 2]]), "matrix")
    with pytest.raises(AssertionError):
        checks.identity(sp.Matrix([[x, 1]]), sp.Matrix([[x, 2]]), "matrix wrong")


def test_identity_sees_through_renamed_summation_indices():
    S = general_softmax()
    lhs = S.sum(S.p(S.i), S.i)
    checks.identity(lhs, 1, "probabilities sum to one")
    with pytest.raises(AssertionError):
        checks.identity(lhs, 2, "not two")


@pytest.fixture
def page_mode(monkeypatch):
    """Run a test from outside a page and put checks back outside a page afterwards, even
    when the test fails half-way through collecting."""
    monkeypatch.setattr(checks, "_page", None)


def _four_checks() -> list[str]:
    checks.identity(sp.sin(x) ** 2 + sp.cos(x) ** 2, 1, "pythagoras")
    checks.close(1.0 + 1e-13, 1.0, rtol=1e-12, name="near one")
    checks.holds(True, "truth", "1 == 1")
    checks.differs(0.5, 0.6, rtol=0.01, name="claim")
    return ["identity holds: pythagoras", "near one: 1 vs 1 (rtol 1e-12)", "holds: truth (1 == 1)",
            "claim is wrong: claim: claimed 0.6, actually 0.5"]


def test_a_page_collects_its_check_lines_instead_of_printing_them(page_mode, capsys):
    checks.start_page()
    lines = _four_checks()
    assert capsys.readouterr().out == ""
    summary = checks.page_summary()
    assert summary.lines == lines
    assert capsys.readouterr().out == ""
    # page_summary ends the page: the next check prints again
    checks.holds(True, "after the page")
    assert capsys.readouterr().out == "holds: after the page\n"


def test_page_summary_text_gives_the_count_then_one_line_per_check(page_mode):
    checks.start_page()
    lines = _four_checks()
    summary = checks.page_summary()
    assert summary.summary() == "4 checks on this page passed"
    assert repr(summary) == "4 checks on this page passed:\n" + "".join(f"  {line}\n" for line in lines).rstrip("\n")
    checks.start_page()
    checks.holds(True, "alone")
    assert repr(checks.page_summary()) == "1 check on this page passed:\n  holds: alone"


def test_page_summary_html_is_one_collapsed_block_that_lists_every_check(page_mode):
    from bs4 import BeautifulSoup
    from IPython.core.formatters import format_display_data

    checks.start_page()
    checks.holds(True, "x < 1 & y > 2", "'quoted'")
    checks.holds(True, "<b>not bold</b>")
    bundle, _ = format_display_data(checks.page_summary())  # what the notebook stores
    assert set(bundle) == {"text/plain", "text/html"}
    assert bundle["text/plain"].startswith("2 checks on this page passed:\n")
    soup = BeautifulSoup(bundle["text/html"], "html.parser")
    (block,) = soup.find_all("details")
    assert block.get("class") == ["page-checks"] and block.get("open") is None, "collapsed until the reader opens it"
    assert block.find("summary").get_text() == "2 checks on this page passed"
    assert [li.get_text() for li in block.find_all("li")] == ["holds: x < 1 & y > 2 ('quoted')", "holds: <b>not bold</b>"]
    assert soup.find("b") is None, "a check's name is text, never markup"


def test_page_summary_without_start_page_is_refused(page_mode):
    with pytest.raises(RuntimeError, match=named('page_summary')):
        checks.page_summary()
    checks.start_page()
    checks.holds(True, "one")
    checks.page_summary()
    with pytest.raises(RuntimeError, match=named('page_summary')):
        checks.page_summary()  # a second summary: the page has ended


def test_page_summary_of_a_page_without_checks_fails(page_mode):
    checks.start_page()
    with pytest.raises(AssertionError, match="no check was made on this page"):
        checks.page_summary()


def test_a_failing_check_still_raises_on_a_page_and_is_not_counted(page_mode, capsys):
    checks.start_page()
    checks.holds(True, "first")
    with pytest.raises(AssertionError, match="'wrong' does not hold"):
        checks.identity(sp.sin(x) ** 2, 1, "wrong")
    with pytest.raises(AssertionError, match="far: 1 of 1 values outside"):
        checks.close(1.1, 1.0, rtol=1e-3, name="far")
    with pytest.raises(AssertionError, match="'false' does not hold"):
        checks.holds(False, "false")
    with pytest.raises(AssertionError, match="agrees"):
        checks.differs(0.5, 0.5000001, rtol=0.01, name="right claim")
    checks.holds(True, "last")
    assert capsys.readouterr().out == ""
    assert checks.page_summary().lines == ["holds: first", "holds: last"]
