"""Tests written against surviving mutants of the per-threshold tables of
``attnscale.exact`` (``_sums.tables``, ``_sums._prefix``, ``_sums.Tables.get``, ``_common._nodes``; mutmut 3).

What they pin:

- the error raised for a table that was not computed, in full;
- the parts of ``A_1``, ``A_2``, ``B`` and ``1 - phi`` left of the kernel window
  (``x < -40``), which ``_sums`` takes from prefix sums of tilted weights and documents
  as keeping their relative accuracy ("no term is dropped, so small tails keep their
  relative accuracy"). They carry the whole table at thresholds ``y`` above
  ``min(u) + 40``, which matter for ``E sum p^2`` once ``n`` is large: at the largest
  accepted ``n = 1e15`` the answer moves by ~1e-5 if ``A_2``'s head is wrong;
- the blocked window sums (normal scores with ``alpha < 1``, cosine scores): with
  ``_sums._CHUNK`` set to 1, so that every threshold is a block of its own (a window
  wider than the budget still gets a block), the results match the 40-digit references,
  and with a moderate budget no block of several rows holds more than ``_CHUNK``
  window entries (the documented memory bound of the blocks);
- the nodes kept for a normal needle far above the bulk (``_common._nodes``): they reach
  far enough up for the tilted tail that carries the needle's entropy.

References, all independent of the code under test:

- the tables at thresholds far above the nodes, for standard normal scores, from the
  expansion ``exp(-e^x) = sum_k (-e^x)^k / k!`` and the normal moments
  ``E e^(m x) = e^(m^2 alpha^2 / 2 - m y)``, ``E[x e^(m x)] = (m alpha^2 - y) E e^(m x)``,
  in 30-digit mpmath; truncated after ``K`` terms the error is below the next term
  (``|exp(-z) - sum_(k<K) (-z)^k/k!| <= z^K / K!`` for ``z >= 0``), under 1e-30 relative
  here;
- ``E sum p^2`` at ``n = 1e15`` from the law of large numbers: with ``w = e^(alpha s)``,
  ``E sum p^2 = n E[w_1^2 / Z^2] = E w^2 / (n (E w)^2) (1 + O(1/n))``, the ``1/n`` term's
  coefficient being a few units for ``alpha <= 1`` (normal: ``E w^k = e^(k^2 alpha^2/2)``;
  cosine ``d = 3``, uniform scores: ``E w^k = sinh(k alpha) / (k alpha)``), so the closed
  form is good to ~1e-14 there;
- rows of the 40-digit nested Gauss-Legendre table ``REFERENCE`` of
  ``tests/exact_reference.py``;
- for a needle that dominates its row, the one-rival expansion of the entropy (the sum
  over bulk keys of the two-key entropy), a 1-d integral in 30-digit mpmath;
- the documented block budget ``_sums._CHUNK`` (window-matrix entries per block), watched
  through a spy on ``_sums._kernel_values``.

The other survivors of this group are equivalent (they change rows of the table that no
integrand can see, or only the size of the blocks); the arguments are in the review notes.
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
    """``tables`` computes only the tables in ``need``; asking for another raises, naming it.

    Kills ``RuntimeError(None)`` in ``Tables.get`` and ``A1 = A2 = B = ""`` in ``tables``
    (the missing tables then come back as empty strings)."""
    nodes = _nodes(2.0, None, 64.0)
    j0, j1 = _sums.bulk_grid(nodes, 64.0)
    tab = _sums.tables(nodes, np.arange(j0, j1 + 1), {"A2"})
    assert tab.get("A2") is tab.A2
    assert tab.A2.shape == tab.y.shape
    for name in ("A1", "B"):
        with pytest.raises(RuntimeError) as info:
            tab.get(name)
        assert str(info.value) == f"table {name} was not computed (pass it in need)"


# ---- the parts of each sum left of the kernel window ------------------------------------------


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
    Each table matches the series to 1e-12 relative (measured: below 5e-15).

    Kills ``_prefix``'s ``exp(3 (u - c))`` for ``exp(2 (u - c))`` in the prefix sums of
    ``A_2`` (off by 11% to 100% at these thresholds), and in ``tables`` the head part of
    ``A_2`` subtracted or dropped (``np.where(None, ...)``)."""
    nodes = _nodes(alpha, None, 1e15)
    assert nodes.u[-1] - max(ys) < -_sums.X_LEFT  # the last threshold's window is empty
    tab = _sums.tables(nodes, np.array([round(y / 0.25) for y in ys]), {"A1", "A2", "B"})
    for i, y in enumerate(ys):
        om, a1, a2, b = _normal_tables_far_above(alpha, y)
        assert tab.logphi[i] == pytest.approx(float(mp.log1p(-om)), rel=1e-12, abs=0)
        assert tab.A1[i] == pytest.approx(float(a1), rel=1e-12, abs=0)
        assert tab.A2[i] == pytest.approx(float(a2), rel=1e-12, abs=0)
        assert tab.B[i] == pytest.approx(float(b), rel=1e-12, abs=0)


@pytest.mark.parametrize(("alpha", "d"), [(0.05, None), (0.5, None), (1.0, None), (0.1, 3), (1.0, 3)])
def test_sum_p2_at_the_largest_n_is_its_law_of_large_numbers_value(alpha, d):
    """``E sum p^2`` at ``n = 1e15`` (the largest accepted ``n``) equals
    ``E w^2 / (n (E w)^2)`` up to ``O(1/n)`` (about 1e-14 here). The thresholds near
    ``y = log n + 5`` that carry the integral lie more than 40 above most nodes, so ``A_2``
    comes from the head sums there. The documented 1e-12 is measured up to ``n = 1e9``;
    the bound holds here too (measured: at most 5.1e-15).

    Kills ``_prefix``'s ``exp(3 (u - c))`` in the prefix sums of ``A_2`` (2.5e-6 to
    6.6e-6 off) and, in ``tables``, the head part of ``A_2`` subtracted (1.7e-5 off) or
    dropped (8.7e-6 off)."""
    n = 1e15
    with mp.workdps(30):
        a = mp.mpf(alpha)
        if d is None:
            ratio = mp.exp(a * a)
        else:
            moment = lambda k: mp.sinh(k * a) / (k * a)  # noqa: E731
            ratio = moment(2) / moment(1) ** 2
        ref = float(ratio / n)
    assert E.expected_sum_p2(n, alpha, d) == pytest.approx(ref, rel=1e-12, abs=0)


# ---- the blocked window sums -----------------------------------------------------------------

# rows of the 40-digit REFERENCE (tests/exact_reference.py) whose window sums take the blocked path
BLOCKED = rows((1e9, 0.05, None, None), (1e9, 50.0, 2, None), (1e4, 100.0, 128, 0.5), (64, 0.5, None, -2.0))


def test_one_threshold_per_block_gives_the_reference_values(monkeypatch):
    """With a budget of one window entry per block every threshold whose window holds a
    node is a block of its own (wider than the budget, it still gets one); the sums are
    the same as with one big block, to the documented accuracy.

    Kills, in ``tables``: ``stop = start - 1`` (a block never starts: an endless loop,
    which mutmut's time-out counts as detected), ``stop = start + 2`` (the second row of a block is cut to the
    first one's window: the needle entropy at ``d = 128`` is 6.5e-6 off), and
    ``slice(None, stop)`` / ``slice(stop)`` (each block rewrites every earlier row with its
    own, narrower window: up to 100% off)."""
    monkeypatch.setattr(_sums, "_CHUNK", 1)
    got = [call(kind, n, alpha, d, gap) for kind, n, alpha, d, gap, _ in BLOCKED]
    for (kind, n, alpha, d, gap, value), val in zip(BLOCKED, got):
        assert val == pytest.approx(float(mp.mpf(value)), rel=RTOL[kind], abs=0), (kind, n, alpha, d, gap)


def test_blocks_of_several_rows_stay_within_the_entry_budget(monkeypatch):
    """``_CHUNK`` bounds the window-matrix entries per block (rows times the widest window
    in the block): only a single row may exceed it. With a budget of 20000 entries, the
    cosine sums at ``d = 2``, ``alpha = 50`` (windows of ~600 nodes, about a dozen
    blocks) keep every block of several rows within it, and the entropy still matches
    its reference.

    Kills, in ``tables``: ``(stop - start - 1)`` in the growth test (every block takes one
    row too many: up to 20600 entries) and ``slice(start, None)`` (each block computes
    all rows to the end of the grid: up to 307000 entries, 2.2 million in all instead of
    234000; the values stay right because later blocks overwrite the extra rows)."""
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


# ---- the nodes kept for a needle far above the bulk ------------------------------------------


def test_entropy_of_a_normal_needle_far_above_the_bulk_counts_the_tilted_tail():
    """A needle at ``gap = 20`` with ``alpha = 5`` and ``n = 10`` dominates its row; the
    entropy is then ``(n - 1) int f(s) h(e^(alpha (s - gap))) ds`` with
    ``h(r) = log(1 + r) - r log(r) / (1 + r)`` (up to a relative ~1e-37), whose integrand
    peaks near ``s = alpha`` (the tilt ``e^(alpha s)``) and still matters at ``s = 9``.
    Reference: that 1-d integral in 30-digit mpmath on unit panels (finer panels at 40
    digits move it by 6e-15).

    Kills, in ``_common._nodes``, ``alpha - 9`` for ``alpha + 9`` in the top of the nodes
    kept for a needle (the normal law cut near ``s = 9.4``: 2.6e-6 off)."""
    with mp.workdps(30):
        a, g = mp.mpf(5), mp.mpf(20)

        def integrand(s):
            r = mp.exp(a * (s - g))
            return mp.npdf(s) * (mp.log1p(r) - r * mp.log(r) / (1 + r))

        ref = 9 * mp.quad(integrand, list(range(-6, 17)) + [18, 20, 22, 26, 32])
    assert E.needle_entropy(10, 5.0, 20.0) == pytest.approx(float(ref), rel=RTOL["nH"], abs=0)
