"""attnscale.symbolic: the SymPy derivations the chapters show, checked against direct
differentiation and numbers.
"""

from __future__ import annotations

from IPython.display import Math
import matplotlib.pyplot as plt
import pytest
import sympy as sp

from attnscale.symbolic import branch, general_softmax, show_math, unify_dummies


@pytest.fixture
def shown(monkeypatch):
    """Whatever ``show_math`` passes to IPython's ``display``, in order."""
    import IPython.display

    objects = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: objects.extend(objs))
    return objects


def latex_of(obj):
    """The ``text/latex`` representation a notebook stores for ``obj``."""
    assert isinstance(obj, Math)
    return obj._repr_latex_()


P_I = r"\frac{e^{\alpha {s}_{i}}}{\sum_{k=1}^{n} e^{\alpha {s}_{k}}}"


def test_general_softmax_prints_as_in_chapter_one(shown):
    """Chapter 1 shows ``p_i`` with these names; the stored output is the reference."""
    S = general_softmax()
    show_math(S.p(S.i), "p_i")
    assert [latex_of(o) for o in shown] == [r"$\displaystyle p_i = " + P_I + "$"]
    assert [str(x) for x in (S.n, S.i, S.j, S.k, S.alpha, S.s)] == ["n", "i", "j", "k", "alpha", "s"]


def test_general_softmax_symbols_carry_the_documented_assumptions():
    """``n`` positions and the indices are positive integers, ``alpha > 0``, scores are real."""
    S = general_softmax()
    for index in (S.n, S.i, S.j, S.k):
        assert index.is_integer is True and index.is_positive is True, index
    assert S.alpha.is_positive is True
    assert S.s[S.i].is_real is True
    assert len({S.i, S.j, S.k}) == 3
    # what the assumptions buy, asked of SymPy on expressions built from them
    assert sp.sqrt(S.alpha**2) == S.alpha
    assert sp.im(S.s[S.j]) == 0
    assert sp.cos(sp.pi * S.n) == (-1) ** S.n  # n is an integer
    assert (S.n >= 1) is sp.true and (S.i >= 1) is sp.true  # at least one position; indices count from 1


def test_general_softmax_normaliser_sums_over_k_from_one_to_n():
    S = general_softmax()
    k = sp.Symbol("k", integer=True, positive=True)
    n = sp.Symbol("n", integer=True, positive=True)
    alpha = sp.Symbol("alpha", positive=True)
    s = sp.IndexedBase("s", real=True)
    assert S.Z == sp.Sum(sp.exp(alpha * s[k]), (k, 1, n))
    assert S.Z.limits == ((S.k, 1, S.n),)
    assert S.sum(S.p(S.k), S.k) == sp.Sum(sp.exp(alpha * s[k]) / S.Z, (k, 1, n))


def test_chapter_one_jacobian_entry(shown):
    """dp_i/ds_j, the piece for j in range, as chapter 1 shows it."""
    S = general_softmax()
    n, i, j, s = S.n, S.i, S.j, S.s
    derivative = branch(sp.diff(S.p(i), s[j]).doit(), j <= n)
    show_math(derivative, r"\frac{\partial p_i}{\partial s_j}")
    assert latex_of(shown[-1]) == (
        r"$\displaystyle \frac{\partial p_i}{\partial s_j} = - \frac{\alpha e^{\alpha {s}_{i}} e^{\alpha {s}_{j}}}"
        r"{\left(\sum_{k=1}^{n} e^{\alpha {s}_{k}}\right)^{2}} + \frac{\alpha e^{\alpha {s}_{i}} \delta_{i j}}"
        r"{\sum_{k=1}^{n} e^{\alpha {s}_{k}}}$"
    )


def test_chapter_three_cross_entropy_gradient(shown):
    """dL/ds_j for L = -alpha s_y + log Z, the piece for j in range, as chapter 3 shows it."""
    S = general_softmax()
    y = sp.Symbol("y", integer=True, positive=True)
    grad = branch(sp.diff(-S.alpha * S.s[y] + sp.log(S.Z), S.s[S.j]).doit(), S.j <= S.n)
    show_math(grad, r"\frac{\partial \mathcal{L}}{\partial s_j}")
    assert latex_of(shown[-1]) == (
        r"$\displaystyle \frac{\partial \mathcal{L}}{\partial s_j} = "
        r"\frac{\alpha e^{\alpha {s}_{j}}}{\sum_{k=1}^{n} e^{\alpha {s}_{k}}} - \alpha \delta_{j y}$"
    )


def test_chapter_four_row_sum_off_the_diagonal():
    """sum over j != i of p_i p_j is p_i (1 - p_i) (chapter 4), via the piece ``i <= n``."""
    S = general_softmax()
    i, j, n = S.i, S.j, S.n
    row_off = branch(S.sum(S.p(i) * S.p(j) * (1 - sp.KroneckerDelta(i, j)), j).doit(), i <= n)
    difference = unify_dummies(sp.expand(row_off - S.p(i) * (1 - S.p(i))))
    assert sp.simplify(difference) == 0


alpha = sp.Symbol("alpha", positive=True)


@pytest.mark.parametrize(
    ("expr", "lhs", "expected"),
    [
        # chapter 5's stored outputs
        (alpha * (1 - sp.exp(alpha**2) / sp.Symbol("n", positive=True)), "G(\\alpha)", r"G(\alpha) = \alpha \left(1 - \frac{e^{\alpha^{2}}}{n}\right)"),
        (sp.exp(alpha**2 / 2), r"\mathbb{E}[e^{\alpha s}]", r"\mathbb{E}[e^{\alpha s}] = e^{\frac{\alpha^{2}}{2}}"),
        # a SymPy left-hand side is typeset, not printed as a string
        (sp.exp(alpha**2 / 2), sp.Function("M")(alpha), r"M{\left(\alpha \right)} = e^{\frac{\alpha^{2}}{2}}"),
        (alpha**2, sp.Symbol("x_1"), r"x_{1} = \alpha^{2}"),
        # no left-hand side: the expression alone
        (sp.exp(alpha**2 / 2), None, r"e^{\frac{\alpha^{2}}{2}}"),
        (sp.Integer(3), None, "3"),
    ],
)
def test_show_math_displays_lhs_equals_latex(shown, expr, lhs, expected):
    show_math(expr, lhs)
    assert len(shown) == 1
    assert latex_of(shown[0]) == "$\\displaystyle " + expected + "$"


def test_show_math_refuses_a_figure_and_points_to_show_figure(shown):
    fig = plt.figure()
    try:
        with pytest.raises(TypeError) as caught:
            show_math(fig)
    finally:
        plt.close(fig)
    assert str(caught.value) == "expr is a matplotlib Figure: show it with attnscale.plotting.show_figure"
    assert shown == []


@pytest.mark.parametrize(
    ("call", "value", "type_name"),
    [
        (unify_dummies, "Sum(f(i), (i, 1, n))", "str"),
        (lambda e: branch(e, sp.true), [1, 2], "list"),
    ],
)
def test_non_sympy_expr_is_refused_naming_its_type(call, value, type_name):
    with pytest.raises(TypeError) as caught:
        call(value)
    assert str(caught.value) == f"expr must be a SymPy expression (or a number), got {type_name}"


x = sp.Symbol("x", real=True)


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
