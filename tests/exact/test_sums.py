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
from attnscale.exact._grid import H
from expect import peak_bytes


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


def _window_matrix(alpha, d, n):
    """Nodes of cosine scores in ``R^d`` for ``n`` keys at scale ``alpha``, their thresholds
    and the number of entries a window matrix over all thresholds at once would hold
    (thresholds times the widest window)."""
    nodes = _nodes(alpha, d, n)
    j0, j1 = _sums.bulk_grid(nodes, n)
    jy = np.arange(j0, j1 + 1)
    y = jy * H
    width = np.searchsorted(nodes.u, y + _sums.X_RIGHT, "right") - np.searchsorted(nodes.u, y - _sums.X_LEFT, "left")
    return nodes, jy, jy.size * int(width.max())


def test_a_table_does_not_depend_on_how_its_thresholds_are_blocked():
    """Cosine scores at ``d = 2``, ``alpha = 1000``, ``n = 16``: the window matrix over the
    8,247 thresholds would hold 3.7 million entries, more than one block's budget, so the
    sums over all thresholds at once are taken in several blocks. Each threshold on its own
    (a block of one row) gives the same tables to the bit. (The values themselves are held
    against the 40-digit reference in test_bulk.)"""
    nodes, jy, entries = _window_matrix(1000.0, 2, 16.0)
    assert nodes.i0 is None and entries > _sums._CHUNK  # the blocked path, in more than one block
    need = {"A1", "A2", "B"}
    together = _sums.tables(nodes, jy, need)
    for i in range(0, jy.size, 7):
        alone = _sums.tables(nodes, jy[i:i + 1], need)
        for name in ("logphi", "A1", "A2", "B"):
            assert getattr(alone, name)[0] == getattr(together, name)[i], (name, int(jy[i]))


def test_the_memory_of_the_window_sums_does_not_grow_with_the_window_matrix():
    """The window sums are taken in blocks of a bounded number of entries, so their memory
    is bounded whatever the size of the problem: at ``d = 2``, ``alpha = 1e4``, ``n = 16`` the
    window matrix over all thresholds would hold about 16 million entries (eight bytes each,
    and several arrays of that shape live at once), yet the call's peak stays within twelve
    arrays of one block's budget, 201 MB (measured: 163 MB; one block of every threshold
    took 2.4 GB)."""
    _, _, entries = _window_matrix(1e4, 2, 16.0)
    assert entries > 7 * _sums._CHUNK
    assert peak_bytes(E.expected_sum_p2, 16.0, 1e4, 2) <= 12 * 8 * _sums._CHUNK
