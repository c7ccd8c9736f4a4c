"""attnscale.exact._sums: the lattice sums and their tables, against mpmath references,
computed from fresh kernel tables.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from attnscale import exact as E
from attnscale.exact import _sums
from attnscale.exact._common import _nodes
from exact_reference import RTOL, call, rows


def test_a_table_that_was_not_computed_is_refused_by_name():
    """``tables`` computes only the tables in ``need``; asking for another raises, naming it."""
    nodes = _nodes(2.0, None, 64.0)
    j0, j1 = _sums.bulk_grid(nodes, 64.0)
    tab = _sums.tables(nodes, np.arange(j0, j1 + 1), {"A2"})
    assert tab.get("A2") is tab.A2
    assert tab.A2.shape == tab.y.shape
    for name in ("A1", "B"):
        with pytest.raises(RuntimeError) as info:
            tab.get(name)
        assert str(info.value) == f"table {name} was not computed (pass it in need)"


def _normal_tables_far_above(alpha, y, terms=6):
    """``(1 - phi, A_1, A_2, B)`` at threshold ``y`` for standard normal scores, from the
    power series of ``exp(-e^x)`` over the normal moments (see the module docstring)."""
    with mp.workdps(30):
        a, y = mp.mpf(alpha), mp.mpf(y)

        def mom(m):  # E e^(m x), x = alpha s - y
            return mp.exp(m * m * a * a / 2 - m * y)

        c = [(-1) ** k / mp.factorial(k) for k in range(terms)]
        om = -sum(c[k] * mom(k) for k in range(1, terms))
        a1 = sum(c[k] * mom(k + 1) for k in range(terms))
        a2 = sum(c[k] * mom(k + 2) for k in range(terms))
        b = sum(c[k] * ((k + 1) * a * a - y + mp.euler) * mom(k + 1) for k in range(terms))
        return om, a1, a2, b


@pytest.mark.parametrize(
    ("alpha", "ys"),
    [(0.05, [40.0, 41.0, 45.0]), (0.5, [40.0, 50.0]), (1.0, [35.0, 45.0, 60.0])],
)
def test_tables_keep_their_relative_accuracy_where_the_head_sums_carry_them(alpha, ys):
    """Nodes for ``n_max = 1e15`` (normal scores: the trapezoid rule for ``alpha < 1``, the
    lattice for ``alpha = 1``), thresholds ``y`` above ``min(u) + 40``, where every node, or
    the tilted mass around ``u = 2 alpha^2`` that dominates ``A_2``, lies left of the window.
    Each table matches the series to 1e-12 relative (measured: below 5e-15)."""
    nodes = _nodes(alpha, None, 1e15)
    assert nodes.u[-1] - max(ys) < -_sums.X_LEFT  # the last threshold's window is empty
    tab = _sums.tables(nodes, np.array([round(y / 0.25) for y in ys]), {"A1", "A2", "B"})
    for i, y in enumerate(ys):
        om, a1, a2, b = _normal_tables_far_above(alpha, y)
        assert tab.logphi[i] == pytest.approx(float(mp.log1p(-om)), rel=1e-12, abs=0)
        assert tab.A1[i] == pytest.approx(float(a1), rel=1e-12, abs=0)
        assert tab.A2[i] == pytest.approx(float(a2), rel=1e-12, abs=0)
        assert tab.B[i] == pytest.approx(float(b), rel=1e-12, abs=0)


# rows of the 40-digit REFERENCE (tests/exact_reference.py) whose window sums take the blocked path
BLOCKED = rows((1e9, 0.05, None, None), (1e9, 50.0, 2, None), (1e4, 100.0, 128, 0.5), (64, 0.5, None, -2.0))


def test_one_threshold_per_block_gives_the_reference_values(monkeypatch):
    """With a budget of one window entry per block every threshold whose window holds a
    node is a block of its own (wider than the budget, it still gets one); the sums are
    the same as with one big block, to the documented accuracy."""
    monkeypatch.setattr(_sums, "_CHUNK", 1)
    got = [call(kind, n, alpha, d, gap) for kind, n, alpha, d, gap, _ in BLOCKED]
    for (kind, n, alpha, d, gap, value), val in zip(BLOCKED, got):
        assert val == pytest.approx(float(mp.mpf(value)), rel=RTOL[kind], abs=0), (kind, n, alpha, d, gap)


def test_blocks_of_several_rows_stay_within_the_entry_budget(monkeypatch):
    """``_CHUNK`` bounds the window-matrix entries per block (rows times the widest window
    in the block): only a single row may exceed it. With a budget of 20000 entries, the
    cosine sums at ``d = 2``, ``alpha = 50`` (windows of ~600 nodes, about a dozen
    blocks) keep every block of several rows within it, and the entropy still matches
    its reference."""
    monkeypatch.setattr(_sums, "_CHUNK", 20000)
    shapes = []
    kernel_values = _sums._kernel_values

    def spy(x, need):
        if x.ndim == 2:
            shapes.append(x.shape)
        return kernel_values(x, need)

    monkeypatch.setattr(_sums, "_kernel_values", spy)
    got = E.expected_entropy(1e9, 50.0, 2)
    assert got == pytest.approx(float(mp.mpf("18.35339296729663725829184")), rel=RTOL["H"], abs=0)
    assert len(shapes) > 5
    assert all(rows * cols <= 20000 for rows, cols in shapes if rows > 1)
    j0, j1 = _sums.bulk_grid(_nodes(50.0, 2, 1e9), 1e9)
    assert sum(rows for rows, _ in shapes) <= j1 - j0 + 1  # each row of the grid in one block at most
