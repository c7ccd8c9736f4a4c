"""The assertion helpers must pass true claims and fail false ones."""

import numpy as np
import pytest
import sympy as sp

from attnscale import checks
from attnscale.symbolic import branch, general_softmax, unify_dummies

x = sp.Symbol("x", real=True)


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


def test_unify_dummies_and_branch():
    n = sp.Symbol("n", integer=True, positive=True)
    i, k = sp.symbols("i k", integer=True, positive=True)
    f = sp.Function("f")
    assert unify_dummies(sp.Sum(f(i), (i, 1, n))) == unify_dummies(sp.Sum(f(k), (k, 1, n)))
    pw = sp.Piecewise((x, x > 0), (0, True))
    assert branch(pw, x > 0) == x
    assert branch(x, x > 0) == x
    with pytest.raises(ValueError, match="condition"):
        branch(pw, x < 0)


def test_close_passes_and_fails(capsys):
    checks.close(1.0 + 1e-13, 1.0, rtol=1e-12, name="near one")
    assert capsys.readouterr().out == "near one: 1 vs 1 (rtol 1e-12)\n"
    with pytest.raises(AssertionError, match="far: 1 of 1 values outside rtol 0.001"):
        checks.close(1.1, 1.0, rtol=1e-3, name="far")
    checks.close(np.array([1.0, 2.0]), [1.0, 2.0], rtol=0, atol=1e-15, name="arrays")
    with pytest.raises(AssertionError, match="non-finite"):
        checks.close(np.nan, 1.0, rtol=1, name="nan")
    with pytest.raises(ValueError, match="rtol and atol must be >= 0"):
        checks.close(1.0, 1.0, rtol=-1, name="neg")


def test_holds_and_differs(capsys):
    checks.holds(True, "truth", "1 == 1")
    assert capsys.readouterr().out == "holds: truth (1 == 1)\n"
    with pytest.raises(AssertionError, match="does not hold"):
        checks.holds(np.bool_(False), "falsehood")
    checks.differs(0.5, 0.6, rtol=0.01, name="claim")
    assert "claimed 0.6, actually 0.5" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="agrees"):
        checks.differs(0.5, 0.5000001, rtol=0.01, name="right claim")


def test_fmt_is_stable():
    assert checks.fmt(0.0) == "0"
    assert checks.fmt(1 / 3) == "0.333333"
    assert checks.fmt(123456789.0, 3) == "1.23e+08"


# ---------------------------------------------------------------- collect mode (one block per page)


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
    with pytest.raises(RuntimeError, match=r"^page_summary needs start_page first"):
        checks.page_summary()
    checks.start_page()
    checks.holds(True, "one")
    checks.page_summary()
    with pytest.raises(RuntimeError, match=r"^page_summary needs start_page first"):
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
