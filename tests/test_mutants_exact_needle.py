"""Tests written against surviving mutants of the needle model in ``attnscale.exact``
(``_sums.needle``, ``_sums.needle_grid``, ``needle.needle_weight_mean_field``; mutmut 3).

What they pin:

- the threshold grid of a needle far above the bulk (its whole kernel lies above the bulk
  range, so the needle's own piece of the grid carries all of its weight), of a needle wholly
  below the bulk next to one far above it (the piece of the first is skipped, the second
  still gets its own), and of a needle just below the bulk (the piece reaches below the bulk
  range, where the needle's entropy kernel still has to be integrated);
- that the needle sums and the mean-field weight do not warn (no floating-point overflow
  reaches NumPy's default warning) for valid inputs at huge ``n``.

References, all independent of the code under test:

- two keys (``n = 2``): each statistic is a 1-d integral over the other key's score
  ``s`` of a function of ``alpha (gap - s)`` (sigmoid, sum of squares, binary entropy),
  done in mpmath over the normal density or, for cosine scores, over ``theta = arccos s``;
- closed forms through the moment generating function: a needle far below its one rival has
  ``E p = e^(alpha gap) M(alpha)`` to a relative ``e^-185`` where it is used;
- Jensen's inequality: ``w0 / (w0 + (n - 1) M) <= E p_needle <= 1`` (``M`` the moment
  generating function, ``e^(alpha^2/2)`` or the Bessel form for cosine scores), which pins a
  dominant needle's weight to 1 in double precision; for a needle far below ``n ~ 1e9``
  bulk keys the same ratio to second order, ``1 + (e^(alpha^2) - 1) / (n - 1)``;
- a needle far below the bulk leaves the other ``n - 1`` keys' statistics unchanged far
  below 1e-15: ``expected_sum_p2`` and ``expected_entropy`` at ``n - 1`` (checked against
  mpmath in ``tests/test_exact.py``).

Two tests failed on the code they were written against and document faults found on the
way, since fixed: ``test_entropy_of_a_needle_dominated_by_the_other_key`` (the needle
entropy of a row that the other key dominates was computed as a sum of ~1e-16 lattice sums
of kernels whose integrals are zero, so it could be 1e25 times too large, or negative) and
``test_mean_field_needle_does_not_warn_at_large_n``.
"""

from __future__ import annotations

import functools
import math
import warnings

import mpmath as mp
import pytest

from attnscale import exact as E
from exact_reference import binary_entropy, sig

RTOL = 1e-11  # the documented relative accuracy of the needle functions


# ---- references --------------------------------------------------------------------------


def _two_key(z, kind):
    """The needle's weight, sum p^2 or entropy of the row (needle, other) for log-weight
    difference ``z`` = needle minus other."""
    if kind == "w":
        return sig(z)
    if kind == "p2":
        return sig(z) ** 2 + sig(-z) ** 2
    return binary_entropy(z)


@functools.lru_cache(maxsize=None)
def _two_normal_keys(alpha, gap, kind):
    """``E g(alpha (gap - s))``, ``s ~ N(0, 1)``; breakpoints where the sigmoid turns and
    around ``s = +-alpha``, where ``e^(-+alpha s)`` tilts the density."""
    with mp.workdps(30):
        a, g = mp.mpf(alpha), mp.mpf(gap)
        pts = {mp.mpf(k) for k in range(-39, 40, 3)} | {g + mp.mpf(k) / a for k in range(-60, 61, 6)}
        pts |= {sg * a + mp.mpf(k) / 2 for sg in (-1, 1) for k in range(-16, 17)}
        pts = [-mp.inf] + sorted(p for p in pts if abs(p) < 40) + [mp.inf]
        return float(mp.quad(lambda s: mp.npdf(s) * _two_key(a * (g - s), kind), pts))


@functools.lru_cache(maxsize=None)
def _two_cosine_keys(alpha, gap, d, kind):
    """``E g(alpha (gap - s))`` for a cosine score in ``R^d``, ``d`` large: density
    ``sin(theta)^(d-2) / B(1/2, (d-1)/2)`` of ``theta = arccos s``, which lives within a
    dozen ``1/sqrt(d)`` of ``pi/2`` (beyond, below e^-70 of its peak)."""
    with mp.workdps(20):
        a, g = mp.mpf(alpha), mp.mpf(gap)
        c = 1 / mp.beta(mp.mpf(1) / 2, mp.mpf(d - 1) / 2)
        sd = 1 / mp.sqrt(d)
        pts = sorted({mp.pi / 2 + k * sd for k in range(-12, 13, 2)} | {mp.mpf(0), mp.pi})
        return float(mp.quad(lambda t: c * mp.sin(t) ** (d - 2) * _two_key(a * (g - mp.cos(t)), kind), pts))


def _log_mgf_cosine(alpha, d):
    """``log E e^(alpha s)`` for cosine scores: ``Gamma(nu + 1) (2/alpha)^nu I_nu(alpha)``, ``nu = d/2 - 1``."""
    with mp.workdps(30):
        a, nu = mp.mpf(alpha), mp.mpf(d) / 2 - 1
        return float(mp.log(mp.gamma(nu + 1) * (2 / a) ** nu * mp.besseli(nu, a)))


def _no_warnings(call, *args):
    """``call(*args)`` with every warning turned into an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call(*args)


# ---- a needle far above the bulk: its own piece of the threshold grid ---------------------------


@pytest.mark.parametrize(("alpha", "gap"), [(20.0, 40.0), (3.0, 40.0), (1.0, 40.0)])
def test_needle_far_above_the_bulk_keeps_its_whole_weight(alpha, gap):
    """n = 2, normal scores, a needle 40 standard deviations up: the bulk range of thresholds
    ends below the needle's kernel (or, at alpha = 1, 22 nats into its tail), so only the
    needle's own piece ``[alpha gap - 8, alpha gap + 48]`` of the grid carries it. Jensen:
    ``1 >= E p >= 1 / (1 + e^(alpha^2/2 - alpha gap)) = 1`` in double precision, and
    ``E sum p^2 >= (E p)^2``. Mutants that end the piece at ``(v + 48) H``, at ``v - 48``, or
    build it as ``arange(start)`` lost the needle (weight 0, or 1 - 9e-11 at alpha = 1)."""
    lower = 1 / (1 + math.exp(alpha * alpha / 2 - alpha * gap))
    assert lower == 1.0
    assert E.needle_weight(2, alpha, gap) == pytest.approx(1.0, rel=RTOL, abs=0)
    assert E.needle_sum_p2(2, alpha, gap) == pytest.approx(1.0, rel=RTOL, abs=0)
    assert E.needle_entropy(2, alpha, gap) == pytest.approx(_two_normal_keys(alpha, gap, "H"), rel=RTOL, abs=0)


def test_second_needle_keeps_its_piece_after_one_wholly_below_the_bulk():
    """Cosine scores in d = 4096 at alpha = 200: the bulk lives within |s| < 0.6, so the
    needle at gap = -1 lies wholly below the bulk's thresholds (its piece is skipped) and the
    one at gap = +1 wholly above (its piece is needed). Both in one call: the loop over the
    needles must go on past the skipped one (``break`` for ``continue`` lost the second,
    weight 0). References, with ``M`` the Bessel form (``log M(200) = 4.9``): for gap = -1,
    ``E sigmoid(alpha (-1 - s)) = e^(-alpha) M(alpha)`` up to a relative
    ``e^(-alpha) M(2 alpha) / M(alpha) ~ e^-185`` (the sigmoid's second term; the law is
    symmetric); for gap = +1, Jensen's bound ``1 / (1 + M(alpha) e^(-alpha)) = 1``."""
    alpha, d = 200.0, 4096
    log_m = _log_mgf_cosine(alpha, d)
    assert 1 / (1 + math.exp(log_m - alpha)) == 1.0
    w = E.needle_weight(2, alpha, [-1.0, 1.0], d)
    assert w[0] == pytest.approx(math.exp(log_m - alpha), rel=RTOL, abs=0)
    assert w[1] == pytest.approx(1.0, rel=RTOL, abs=0)


# ---- a needle just below the bulk: the piece reaches below the bulk range ------------------------


def test_needle_just_below_the_bulk_two_cosine_keys():
    """d = 4096, alpha = 10, gap = -1: the needle's kernel starts below the bulk's threshold
    range. Its entropy integrand there is ``-k0`` (the other key's phi is 0), whose integral
    must be kept: mutants that start the piece at ``(v - 8) H``, at ``v + 8``, at 0, or drop
    it, lose it and return -0.0029 for 5.04e-4. Weight and sum p^2 pinned alongside."""
    alpha, gap, d = 10.0, -1.0, 4096
    assert E.needle_entropy(2, alpha, gap, d) == pytest.approx(_two_cosine_keys(alpha, gap, d, "H"), rel=RTOL, abs=0)
    assert E.needle_weight(2, alpha, gap, d) == pytest.approx(_two_cosine_keys(alpha, gap, d, "w"), rel=RTOL, abs=0)
    assert E.needle_sum_p2(2, alpha, gap, d) == pytest.approx(_two_cosine_keys(alpha, gap, d, "p2"), rel=RTOL, abs=0)


# ---- no overflow warnings at huge n -----------------------------------------------------------------


@pytest.mark.parametrize("n", [1e9, 1e15])
def test_needle_below_a_huge_bulk_is_silent_and_exact(n):
    """Normal scores, alpha = 1, gap = -35: the grid reaches below the bulk, where phi = 0
    and ``log phi`` is held at -1e300; ``(n - 1) log phi`` then overflows to -inf, on purpose
    (``phi^(n-1) = 0``). NumPy must not warn (it did with ``over`` left at its default).
    Values: the needle weight is ``w0 E[1 / S]`` to second order in the relative spread of
    ``S``, i.e. the mean-field weight times ``1 + (e^(alpha^2) - 1) / (n - 1)`` (the next term
    is ~1e-16 / n); the row's sum p^2 and entropy are those of the other ``n - 1`` keys."""
    alpha, gap = 1.0, -35.0
    ref_p2, ref_h = E.expected_sum_p2(n - 1, alpha), E.expected_entropy(n - 1, alpha)
    w0 = math.exp(alpha * gap)
    ref_w = w0 / (w0 + (n - 1) * math.exp(alpha * alpha / 2)) * (1 + math.expm1(alpha * alpha) / (n - 1))
    assert _no_warnings(E.needle_weight, n, alpha, gap) == pytest.approx(ref_w, rel=RTOL, abs=0)
    assert _no_warnings(E.needle_sum_p2, n, alpha, gap) == pytest.approx(ref_p2, rel=RTOL, abs=0)
    assert _no_warnings(E.needle_entropy, n, alpha, gap) == pytest.approx(ref_h, rel=RTOL, abs=0)


def test_mean_field_needle_silent_where_its_cap_keeps_the_product_finite():
    """n = 1e4, alpha = 40, gap = 0: excess = alpha^2 / 2 = 800 is capped in the unused
    near-1/n branch so that (n - 1) e^cap stays finite (with the cap at 701, as a mutant of
    the earlier cap of 700 had it, 9999 e^701 = 2.7e308 overflowed and NumPy warned). The
    weight 1 / (1 + 9999 e^800) underflows to 0."""
    assert _no_warnings(E.needle_weight_mean_field, 1e4, 40.0, 0.0) == 0.0


# ---- faults found on the way (these failed on the code of the mutation run) ----------------------------


@pytest.mark.parametrize(
    ("alpha", "gap", "d"),
    [(3.0, -35.0, None), (5.0, -20.0, None), (1.0, -35.0, None), (1.5, -35.0, None), (30.0, -1.0, 4096)],
)
def test_entropy_of_a_needle_dominated_by_the_other_key(alpha, gap, d):
    """n = 2 with the needle far below the other key: E H is tiny (2.2e-42 at alpha = 3,
    gap = -35). The library computed it as ``-(a + b)`` with ``a = int k0 (phi - 1)`` and
    ``b = int q0 B``, each of which carries the trapezoid sum of an entropy kernel, ~6e-16,
    instead of its exact integral 0: it returned 2.2e-17 (alpha = 3), -1.4e-17 (alpha = 5),
    and 3.6e-14 for 3.638e-14 (alpha = 1); documented: relative 1e-11. Each term is now
    summed in whichever of its two exact forms has the smaller integrand."""
    ref = _two_normal_keys(alpha, gap, "H") if d is None else _two_cosine_keys(alpha, gap, d, "H")
    assert E.needle_entropy(2, alpha, gap, d) == pytest.approx(ref, rel=RTOL, abs=0)


@pytest.mark.parametrize("n", [1e5, 1e15])
def test_mean_field_needle_does_not_warn_at_large_n(n):
    """The unused near-1/n branch is evaluated everywhere: (n - 1) e^700 overflows once
    n > 1.8e4 and NumPy warned "overflow encountered in multiply" on valid input (the value,
    0.0, was right)."""
    assert _no_warnings(E.needle_weight_mean_field, n, 40.0, 0.0) == 0.0
