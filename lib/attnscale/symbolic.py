"""Symbolic helpers (SymPy): the general-n softmax, tidying of sums, display.

Numeric code lives in the other modules; this one only builds and shows
SymPy expressions.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

__all__ = ["GeneralSoftmax", "general_softmax", "unify_dummies", "branch", "show_math"]

_KAPPA = sp.Symbol("kappa", integer=True, positive=True)


@dataclass(frozen=True)
class GeneralSoftmax:
    """``p_i = exp(alpha s_i) / Z`` with ``Z = sum_{k=1}^n exp(alpha s_k)``, for a
    symbolic length ``n``. Indices ``i, j`` are free, ``k`` is summed."""

    n: sp.Symbol
    i: sp.Symbol
    j: sp.Symbol
    k: sp.Symbol
    alpha: sp.Symbol
    s: sp.IndexedBase
    Z: sp.Sum

    def p(self, index: sp.Expr) -> sp.Expr:
        """The probability of position ``index``."""
        return sp.exp(self.alpha * self.s[index]) / self.Z

    def sum(self, expr: sp.Expr, index: sp.Symbol) -> sp.Sum:
        """``sum_{index=1}^{n} expr`` (unevaluated)."""
        return sp.Sum(expr, (index, 1, self.n))


def general_softmax() -> GeneralSoftmax:
    """The symbols of a softmax over ``n`` positions with scale ``alpha > 0``."""
    n = sp.Symbol("n", integer=True, positive=True)
    i, j, k = sp.symbols("i j k", integer=True, positive=True)
    alpha = sp.Symbol("alpha", positive=True)
    s = sp.IndexedBase("s", real=True)
    Z = sp.Sum(sp.exp(alpha * s[k]), (k, 1, n))
    return GeneralSoftmax(n, i, j, k, alpha, s, Z)


def _expr(value: object, name: str) -> sp.Basic:
    """``value`` as a SymPy object, or a TypeError naming the argument."""
    try:
        return sp.sympify(value, strict=True)
    except (sp.SympifyError, TypeError, AttributeError):
        raise TypeError(f"{name} must be a SymPy expression (or a number), got {type(value).__name__}") from None


def unify_dummies(expr: sp.Basic) -> sp.Basic:
    """Rename the summation index of every single-index ``Sum`` to one fixed
    symbol, so that ``Sum(f(i), (i, 1, n))`` and ``Sum(f(k), (k, 1, n))`` are
    recognised as equal (SymPy does not do that by itself)."""

    def rename(term: sp.Sum) -> sp.Sum:
        var, *bounds = term.limits[0]
        return sp.Sum(term.function.xreplace({var: _KAPPA}), (_KAPPA, *bounds))

    return _expr(expr, "expr").replace(lambda e: isinstance(e, sp.Sum) and len(e.limits) == 1, rename)


def branch(expr: sp.Basic, condition: sp.Basic) -> sp.Basic:
    """The piece of a ``Piecewise`` that holds under ``condition``.

    SymPy's ``Sum(... KroneckerDelta(j, k) ..., (k, 1, n)).doit()`` answers
    with a ``Piecewise`` on ``1 <= j <= n`` (folded to the top level here);
    for an index inside the range only that piece is meaningful. Raises ``ValueError`` if no piece has
    exactly that condition, and returns ``expr`` unchanged if it is not a
    ``Piecewise``.
    """
    expr = sp.piecewise_fold(_expr(expr, "expr"))
    if not isinstance(expr, sp.Piecewise):
        return expr
    for piece, cond in expr.args:
        if cond == condition:
            return piece
    raise ValueError(f"condition {condition} is not one of the pieces' conditions {[c for _, c in expr.args]}")


def show_math(expr: sp.Basic, lhs: str | sp.Basic | None = None) -> None:
    """Display ``lhs = expr`` as typeset maths (``text/latex`` output)."""
    if type(expr).__module__.startswith("matplotlib"):
        raise TypeError("expr is a matplotlib Figure: show it with attnscale.plotting.show_figure")
    from IPython.display import Math, display

    body = sp.latex(expr)
    if lhs is not None:
        body = (lhs if isinstance(lhs, str) else sp.latex(lhs)) + " = " + body
    display(Math(body))
