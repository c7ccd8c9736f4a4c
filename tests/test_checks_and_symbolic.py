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
