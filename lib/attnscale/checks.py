"""Assertion helpers used by every chapter.

Each helper checks one claim, reports one short and stable line when it holds,
and raises ``AssertionError`` when it does not, so that a chapter whose claim
has become false fails under nbval.

Outside a page the line is printed. A chapter calls :func:`start_page` first: its
checks' lines are then collected, and :func:`page_summary` shows them at the end as
one collapsed block ("N checks on this page passed"), which nbval still compares line
by line. Every check still asserts where it is made.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike

from . import _validate as v
from .symbolic import unify_dummies

__all__ = ["identity", "close", "holds", "differs", "fmt", "start_page", "page_summary", "PageChecks"]

#: the lines of the checks made since :func:`start_page`, or None when checks print
_page: list[str] | None = None


def start_page() -> None:
    """Collect the lines of the checks that follow instead of printing them, until
    :func:`page_summary` (a chapter's first cell calls this)."""
    global _page
    _page = []


def _report(line: str) -> None:
    if _page is None:
        print(line)
    else:
        _page.append(line)


class PageChecks:
    """The checks of one page: its text is the count and one line per check; in HTML it
    is a collapsed ``<details>`` block whose summary gives the count."""

    def __init__(self, lines: list[str]):
        self.lines = list(lines)

    def summary(self) -> str:
        count = len(self.lines)
        return f"{count} check{'' if count == 1 else 's'} on this page passed"

    def __repr__(self) -> str:
        return "\n".join([self.summary() + ":", *("  " + line for line in self.lines)])

    def _repr_html_(self) -> str:
        from html import escape

        items = "".join(f"<li>{escape(line)}</li>" for line in self.lines)
        return (f'<details class="page-checks"><summary>{escape(self.summary())}</summary>'
                f"<ul>{items}</ul></details>")


def page_summary() -> PageChecks:
    """The checks collected since :func:`start_page`, as one :class:`PageChecks` (the last
    expression of a chapter's summary cell, so the notebook displays it); collection stops."""
    global _page
    if _page is None:
        raise RuntimeError("page_summary needs start_page first: no checks were collected")
    found, _page = PageChecks(_page), None
    if not found.lines:
        raise AssertionError("page_summary: no check was made on this page")
    return found


def fmt(x: float | np.ndarray, digits: int = 6) -> str:
    """A number printed with ``digits`` significant digits (stable output)."""
    x = v.real_number(x, "x") if not isinstance(x, np.ndarray) else v.real_number(float(x), "x")
    digits = v.integer_at_least(digits, "digits", 1)
    if x == 0.0:
        return "0"
    return f"{x:.{digits}g}"


def _is_zero(expr: sp.Basic) -> bool:
    """True if SymPy can show ``expr == 0``: cheap canonical forms first."""
    if isinstance(expr, sp.MatrixBase):
        return all(_is_zero(e) for e in expr)
    tidy = unify_dummies(sp.expand(expr.doit()))
    if tidy == 0:
        return True
    return sp.simplify(tidy) == 0 or sp.simplify(expr) == 0


def identity(lhs: sp.Basic, rhs: sp.Basic, name: str) -> None:
    """Assert that ``simplify(lhs - rhs) == 0`` (matrices: entrywise).

    SymPy's ``simplify`` may fail to prove a true identity, but it never
    proves a false one, so a pass is a proof and a failure is a red flag.
    """
    v.text(name, "name")
    lhs, rhs = sp.sympify(lhs), sp.sympify(rhs)
    diff = lhs - rhs
    if isinstance(diff, sp.MatrixBase):
        diff = sp.Matrix(diff)
    if not _is_zero(diff):
        raise AssertionError(f"identity '{name}' does not hold: lhs - rhs simplifies to {sp.simplify(diff)}")
    _report(f"identity holds: {name}")


def close(
    value: ArrayLike,
    expected: ArrayLike,
    *,
    name: str,
    rtol: float = 1e-12,
    atol: float = 0.0,
    digits: int = 6,
) -> None:
    """Assert ``|value - expected| <= atol + rtol |expected|`` entrywise.

    ``rtol`` and ``atol`` should be justified where they are chosen (floating
    point, truncation error, Monte Carlo standard error). Prints the value and
    the expected value to the digits the tolerance supports (scalars), or the
    count of values that agree (arrays).
    """
    v.text(name, "name")
    rtol, atol = v.real_number(rtol, "rtol"), v.real_number(atol, "atol")
    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    got = np.asarray(value, dtype=float)
    e = np.asarray(expected, dtype=float)
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(e))):
        raise AssertionError(f"{name}: non-finite value or expectation ({got!r} vs {e!r})")
    got, e = np.broadcast_arrays(got, e)
    err = np.abs(got - e)
    ok = err <= atol + rtol * np.abs(e)
    tol = f"rtol {rtol:g}" + (f", atol {atol:g}" if atol else "")
    # Only digits the tolerance vouches for are printed, so stored outputs do
    # not change with rounding noise from one machine or BLAS to another.
    if got.ndim == 0 and e == 0:
        line = f"{name}: |value| <= {atol:g}"
    elif got.ndim == 0:
        shown = digits if rtol == 0 else max(1, min(digits, int(np.ceil(-np.log10(rtol))) + 1))
        line = f"{name}: {fmt(got, shown)} vs {fmt(e, shown)} ({tol})"
    else:
        line = f"{name}: all {got.size} values agree ({tol})"
    if not ok.all():
        bad = int(np.argmin(ok.ravel()))
        raise AssertionError(
            f"{name}: {int((~ok).sum())} of {got.size} values outside {tol}; "
            f"entry {bad} is {got.ravel()[bad]!r}, expected {e.ravel()[bad]!r}"
        )
    _report(line)


def holds(condition: bool | np.bool_, name: str, detail: str = "") -> None:
    """Assert a boolean statement; ``detail`` says what was compared."""
    v.text(name, "name")
    if not bool(condition):
        raise AssertionError(f"'{name}' does not hold" + (f": {detail}" if detail else ""))
    _report(f"holds: {name}" + (f" ({detail})" if detail else ""))


def differs(value: ArrayLike, claimed: ArrayLike, *, name: str, rtol: float, digits: int = 6) -> None:
    """Assert that a source's ``claimed`` value is wrong: it is further than
    ``rtol`` (relative) from the recomputed ``value``, for at least one entry.
    Prints both, so the book shows the correction."""
    v.text(name, "name")
    rtol = v.real_number(rtol, "rtol")
    if rtol < 0:
        raise ValueError(f"rtol must be >= 0, got {rtol}")
    got = v.finite(value, "value")
    c = v.finite(claimed, "claimed")
    got, c = np.broadcast_arrays(got, c)
    rel = np.abs(got - c) / np.maximum(np.abs(got), np.finfo(float).tiny)
    if not (rel > rtol).any():
        raise AssertionError(f"{name}: the claim {c!r} agrees with the recomputed {got!r} within rtol {rtol:g}")
    if got.ndim == 0:
        _report(f"claim is wrong: {name}: claimed {fmt(c, digits)}, actually {fmt(got, digits)}")
    else:
        _report(f"claim is wrong: {name}: {int((rel > rtol).sum())} of {got.size} values off by more than rtol {rtol:g}")
