"""Tests written against surviving mutants of the quadrature nodes and kernel sums of
``attnscale.exact`` (``_grid.normal_nodes`` and its neighbours, ``_sums._lattice_kernels``,
``_sums._powers``, ``_common._gaps``; mutmut 3).

What they pin:

- the lattice sums (normal scores, ``alpha >= 1``) when the kernel table is built afresh.
  ``_sums._lattice_kernels`` keeps its tables in the module-level cache
  ``_sums._LATTICE_KERNELS``; mutmut forks every mutant from a process that already filled
  it with the unmutated tables, so a mutated body never ran there. The test empties the
  cache for its own duration (``monkeypatch`` puts the filled one back), so the body runs
  whatever the state of the process;
- that the bulk sums do not warn at ``n = 1e9``: there ``phi`` underflows to 0 at the low
  end of the threshold grid, ``log phi`` is held at -1e300, and ``(n - 1) log phi``
  overflows to ``-inf`` on purpose (``phi^(n-1) = 0``), which NumPy must not report;
- the accepted range of needle gaps for normal scores (``gap >= -35``, the bound itself
  included) and the full text of both gap errors, with the offending value.

References, all independent of the code under test:

- 40-digit nested Gauss-Legendre quadrature in mpmath, the stored table of
  ``tests/exact_reference.py`` (``REFERENCE``);
- a closed form for a needle far below its only rival: ``E sigmoid(alpha (gap - s)) =
  e^(alpha gap) E e^(-alpha s) = e^(alpha gap + alpha^2/2)``, up to a relative
  ``e^(alpha gap + 3 alpha^2 / 2)`` (1.6e-28 at ``alpha = 2``, ``gap = -35``);
- for two keys (``n = 2``), the row's entropy as a 1-d integral over the other key's score
  in mpmath (binary entropy written without cancellation).

The last test documents a fault of the code it was written against (since fixed): the
normal nodes ended too close above a dominant needle for its entropy. The other survivors of this group are
equivalent (several of them move results only where that fault already does); the arguments
are in the review notes.
"""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import pytest

from attnscale import exact as E
from attnscale.exact import _sums
from exact_reference import RTOL, binary_entropy, call, rows
from expect import raises_exactly


# ---- lattice sums with the kernel cache emptied ---------------------------------------------


@pytest.fixture
def empty_kernel_cache(monkeypatch):
    """An empty ``_sums._LATTICE_KERNELS`` for one test; the previous cache comes back after."""
    monkeypatch.setattr(_sums, "_LATTICE_KERNELS", {})


# normal scores with alpha >= 1: rows of the 40-digit REFERENCE (tests/exact_reference.py)
LATTICE = rows((64, 2.0, None, None), (1e9, 50.0, None, None), (1000, 3.0, None, 4.0))


@pytest.mark.parametrize(("kind", "n", "alpha", "d", "gap", "value"), LATTICE)
def test_lattice_sums_from_fresh_kernels_match_mpmath_silently(empty_kernel_cache, kind, n, alpha, d, gap, value):
    """Normal scores with ``alpha >= 1`` go through the lattice convolutions; with the kernel
    cache empty, the kernel tables are built by this call. Every bulk and needle statistic
    matches the 40-digit reference to its documented accuracy, without a warning (at
    ``n = 1e9`` the overflow of ``(n - 1) log phi`` to ``-inf`` is intended).

    Kills, in ``_lattice_kernels``: the negated cache test (KeyError), ``x = None``,
    ``/ H`` for ``* H`` (46% off), the broken ``arange`` bounds (errors), the kernel one step
    longer at its top (``_M_RIGHT + 2``: the window sums then belong to the threshold one
    step down, while the needle's own kernel and the outer parts do not; the needle weight
    is 22% off), no reversal (8e-4 off), every other entry, and the dropped arguments; in
    ``_powers``: ``over`` left at NumPy's default (a RuntimeWarning at ``n = 1e9``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = call(kind, n, alpha, d, gap)
    assert got == pytest.approx(float(mp.mpf(value)), rel=RTOL[kind], abs=0)


# ---- gaps: the accepted range and the error texts --------------------------------------------


def test_gap_of_exactly_minus_35_is_accepted_for_normal_scores():
    """The documented range is ``gap >= -35``: the bound itself is valid. A needle 35
    standard deviations below its one rival has ``E p = e^(alpha gap + alpha^2/2)`` up to a
    relative 1.6e-28 at ``alpha = 2``. Kills ``arr <= -35``."""
    alpha, gap = 2.0, -35.0
    assert E.needle_weight(2, alpha, gap) == pytest.approx(math.exp(alpha * gap + alpha * alpha / 2), rel=1e-11, abs=0)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: E.needle_weight(4, 1.0, [0.2, 1.5, -2.0], 8), "gap must lie in [-1, 1] for cosine scores, got 1.5"),
        (lambda: E.needle_entropy(4, 1.0, -35.5), "gap must be >= -35 for normal scores (the needle weight underflows below), got -35.5"),
        (lambda: E.needle_sum_p2(4, 1.0, [0.0, -36.0]), "gap must be >= -35 for normal scores (the needle weight underflows below), got -36.0"),
        # the shared range check of n, alpha (kills the value dropped from, and the reason
        # upper-cased in, the message of _bounded and _lengths)
        (lambda: E.expected_sum_p2([64, 1.5], 1.0), "n must be >= 2 (a row needs at least two keys), got 1.5"),
    ],
)
def test_gap_errors_name_the_first_bad_value(call, message):
    """Both gap errors quote the first offending entry, and -35.5 is already refused. Kills
    ``_show(None)`` in both messages and the bound moved to -36."""
    raises_exactly(ValueError, message, call)


# ---- a fault: keys just above a dominant needle ---------------------------------------------------


def _two_key_entropy(alpha, gap):
    """E H for the row (needle at ``gap``, one standard normal key ``s``): the binary entropy
    of ``sigmoid(z)``, ``z = alpha (gap - s)``, is ``log1p(e^-|z|) + |z| sigmoid(-|z|)``,
    integrated over ``s`` in mpmath with breakpoints every ``1/alpha`` around the gap."""
    with mp.workdps(30):
        a, g = mp.mpf(alpha), mp.mpf(gap)

        pts = sorted({g + mp.mpf(k) / a for k in range(-40, 41, 2)} | {mp.mpf(k) for k in range(-8, 20, 2)})
        return float(mp.quad(lambda s: mp.npdf(s) * binary_entropy(a * (g - s)), [-mp.inf] + pts + [mp.inf]))


@pytest.mark.parametrize(("alpha", "gap"), [(9.0, 9.0), (10.0, 9.0), (8.0, 9.0)])
def test_entropy_of_a_dominant_needle_counts_the_keys_just_above_it(alpha, gap):
    """A fault found on the way (failed on the code of the mutation run; fixed).

    n = 2, normal scores, a needle 9 standard deviations up with ``alpha`` near the gap: the
    row's entropy (4e-18 .. 4e-17) comes from the other key near the needle, including where
    it beats the needle, and ``phi(gap + x) h(e^(alpha x))`` falls only like
    ``exp(-(gap + alpha) x)`` above it. ``_common._nodes`` ended the normal nodes at
    ``max(L, min(38.5, gap + 1, alpha + 9))``, ``L = 9.24`` at ``n = 2``: about 0.25 above
    the gap, where ``(gap + alpha) x`` is only ~4, so a relative ~1e-9 of the entropy is left
    out. Measured against the reference (which agrees with a 45-digit rule on 1600 panels to
    all 16 digits): 3.8e-10 off at ``alpha = 9``, 3.7e-10 at ``alpha = 10``, 2.5e-10 at
    ``alpha = 8``; documented: 1e-11. The nodes now reach up to where
    ``(gap + alpha) x + x^2 / 2 = 45``, which brings all three within 2e-15.
    """
    assert E.needle_entropy(2, alpha, gap) == pytest.approx(_two_key_entropy(alpha, gap), rel=RTOL["nH"], abs=0)


@pytest.mark.parametrize(("d", "alpha"), [(64, 100.0), (16, 30.0)])
def test_a_cosine_needle_at_the_bottom_of_the_range_keeps_the_keys_around_it(d, alpha):
    """n = 2, cosine scores, the needle at the lowest cosine (gap = -1): its weight
    ``E 1 / (1 + e^(alpha (s + 1)))`` comes from the other key's score just above -1, where the
    density ``(1 - s^2)^((d - 3)/2)`` is minute. ``_common._nodes`` keeps every node from
    0.1 below the lower gap to 0.1 above the upper one, whatever its weight; keeping them only
    from 0.1 *above* the lower gap (mutant 72 of the run on 8cc0bff) moves the weight by
    9.2e-7 relative at d = 64, alpha = 100 (documented: 1e-11). Reference: the 1-d integral in
    mpmath at 40 digits, with breakpoints near -1."""
    with mp.workdps(40):
        g = mp.mpf(-1)
        norm = mp.beta(mp.mpf(1) / 2, mp.mpf(d - 1) / 2)

        def integrand(s):
            return (1 - s * s) ** (mp.mpf(d - 3) / 2) / norm / (1 + mp.exp(alpha * (s - g)))

        reference = float(mp.quad(integrand, [-1, -0.99, -0.95, -0.9, -0.8, -0.6, -0.3, 0, 1]))
    assert E.needle_weight(2, alpha, -1.0, d) == pytest.approx(reference, rel=RTOL["w"], abs=0)
