"""attnscale.exact, the needle: the weight, sum p^2 and entropy when one key stands out by a
gap, against two-key closed forms and mpmath; the nodes and kernels it integrates on.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
import subprocess
import sys
import warnings

import mpmath as mp
import numpy as np
import pytest

from attnscale import exact as E
from attnscale.scores import sample_cosines
from exact_reference import binary_entropy, cosine_density_theta, row_stats, rows, RTOL as REF_RTOL, sig, within_three_se
from expect import refuses


def _mp_mean_field_needle(n, alpha, gap, d):
    """``w0 / (w0 + (n - 1) M(alpha))`` at 30 digits; ``M`` the normal or cosine MGF (Bessel I)."""
    with mp.workdps(30):
        a = mp.mpf(alpha)
        if d is None:
            log_m = a * a / 2
        else:
            nu = mp.mpf(d) / 2 - 1
            log_m = mp.log(mp.gamma(nu + 1) * (2 / a) ** nu * mp.besseli(nu, a))
        excess = log_m - a * mp.mpf(gap)
        return float(1 / (1 + (mp.mpf(n) - 1) * mp.exp(excess)))


@pytest.mark.parametrize(
    "n, alpha, gap, d",
    [
        (1e6, 5.0, -2.0, None),  # z = log(n-1) + excess = 36: the sigmoid(-z) branch, n large
        (3, 8.0, 0.0, None),  # z = 32.7 with n = 3: log(n-1) against log(n+1) or log(n-2) is a factor 2
        (2, 30.0, -8.5, None),  # excess = 705 > 700, where 1/(1 + (n-1) e^min(excess, 700)) is wrong
        (2, 10.0, 10.0, None),  # a dominant needle, excess = -50: weight 1 - 2e-22
        (100, 0.5, 0.1, 8),  # cosine scores with 0 < alpha < 1 (log M must not be skipped)
        (1e4, 0.9, -0.3, 3),  # the same below alpha = 1, uniform scores
        (100, 2.0, 3.0, None),
        (1e6, 0.5, -1.0, None),
        (1000, 50.0, 0.3, 64),
        (10, 3.0, 0.5, 3),
    ],
)
def test_mean_field_needle_in_every_branch(n, alpha, gap, d):
    """The mean-field needle weight matches the closed form in every branch of the code:
    the sigmoid branch (z > 30), the exp cap at 700, a dominant needle, and cosine scores
    at 0 < alpha < 1."""
    got = E.needle_weight_mean_field(n, alpha, gap, d)
    assert isinstance(got, float)
    assert got == pytest.approx(_mp_mean_field_needle(n, alpha, gap, d), rel=1e-13, abs=0)


def test_mean_field_needle_shapes():
    """Broadcast 2-d input keeps its shape, each entry matching the closed form, and scalars
    give a Python float."""
    n, alpha, gap = np.array([[4.0], [8.0]]), np.array([1.0, 2.0]), 0.5
    out = E.needle_weight_mean_field(n, alpha, gap)
    assert isinstance(out, np.ndarray) and out.shape == (2, 2)
    for i in range(2):
        for j in range(2):
            assert out[i, j] == pytest.approx(_mp_mean_field_needle(n[i, 0], alpha[j], gap, None), rel=1e-14, abs=0)
    assert isinstance(E.needle_weight_mean_field(4, 1.0, 0.5), float)
    assert E.needle_weight_mean_field([[4.0, 8.0]], 1.0, 0.5, 16).shape == (1, 2)


RTOL = 1e-11  # the documented relative accuracy of the needle functions


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
    """``E g(alpha (gap - s))`` for a cosine score in ``R^d``, in ``theta = arccos s``;
    breakpoints every ``pi/32``, where the sigmoid turns, and within a dozen ``1/sqrt(d)``
    of ``pi/2``, where the density lives for large ``d``."""
    with mp.workdps(30):
        a, g = mp.mpf(alpha), mp.mpf(gap)
        f, sd = cosine_density_theta(d), 1 / mp.sqrt(d)
        pts = {mp.pi / 2 + k * sd for k in range(-12, 13, 2)} | {mp.pi * k / 32 for k in range(33)}
        pts |= {mp.acos(g + mp.mpf(k) / a) for k in range(-60, 61, 3) if abs(g + mp.mpf(k) / a) < 1}
        pts = sorted(t for t in pts if 0 <= t <= mp.pi)
        return float(mp.quad(lambda t: f(t) * _two_key(a * (g - mp.cos(t)), kind), pts))


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


@pytest.mark.parametrize(("alpha", "gap"), [(20.0, 40.0), (3.0, 40.0), (1.0, 40.0)])
def test_needle_far_above_the_bulk_keeps_its_whole_weight(alpha, gap):
    """n = 2, normal scores, a needle 40 standard deviations up: the bulk range of thresholds
    ends below the needle's kernel (or, at alpha = 1, 22 nats into its tail), so only the
    needle's own piece ``[alpha gap - 8, alpha gap + 48]`` of the grid carries it. Jensen:
    ``1 >= E p >= 1 / (1 + e^(alpha^2/2 - alpha gap)) = 1`` in double precision, and
    ``E sum p^2 >= (E p)^2``."""
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


@pytest.mark.parametrize("n", [1e4, 1e5, 1e15])
def test_mean_field_needle_silent_where_its_cap_keeps_the_product_finite(n):
    """alpha = 40, gap = 0: excess = alpha^2 / 2 = 800 is capped in the near-1/n branch,
    which is evaluated everywhere though unused here, so that (n - 1) e^cap stays finite with
    no warning, also beyond n = 1.8e4, where (n - 1) e^700 overflows. The weight
    1 / (1 + (n - 1) e^800) underflows to 0."""
    assert _no_warnings(E.needle_weight_mean_field, n, 40.0, 0.0) == 0.0


# normal scores with alpha >= 1: rows of the 40-digit REFERENCE (tests/exact_reference.py)
LATTICE = rows((64, 2.0, None, None), (1e9, 50.0, None, None), (1000, 3.0, None, 4.0))
TESTS = Path(__file__).resolve().parents[1]

FRESH = """
import json, sys, warnings
sys.path.insert(0, sys.argv[1])
from attnscale.exact import _sums
from exact_reference import call
points = json.loads(sys.argv[2])
assert not _sums._LATTICE_KERNELS  # a new interpreter: no kernel table is built yet
warnings.simplefilter("error")
print(json.dumps([call(*point) for point in points]))
"""


def test_lattice_sums_from_fresh_kernels_match_mpmath_silently():
    """Normal scores with ``alpha >= 1`` go through the lattice convolutions, whose kernel
    tables are built on first use and then kept. In a new interpreter, where these calls
    build them, with every warning an error, every bulk and needle statistic matches the
    40-digit reference to its documented accuracy (at ``n = 1e9`` the overflow of
    ``(n - 1) log phi`` to ``-inf`` is intended, and silent)."""
    points = [[kind, n, alpha, d, gap] for kind, n, alpha, d, gap, _ in LATTICE]
    done = subprocess.run([sys.executable, "-c", FRESH, str(TESTS), json.dumps(points)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for (kind, n, alpha, d, gap, value), got in zip(LATTICE, json.loads(done.stdout)):
        assert got == pytest.approx(float(mp.mpf(value)), rel=REF_RTOL[kind], abs=0), (kind, n, alpha, gap)


def test_gap_of_exactly_minus_35_is_accepted_for_normal_scores():
    """The documented range is ``gap >= -35``: the bound itself is valid. A needle 35
    standard deviations below its one rival has ``E p = e^(alpha gap + alpha^2/2)`` up to a
    relative 1.6e-28 at ``alpha = 2``."""
    alpha, gap = 2.0, -35.0
    assert E.needle_weight(2, alpha, gap) == pytest.approx(math.exp(alpha * gap + alpha * alpha / 2), rel=1e-11, abs=0)


@pytest.mark.parametrize(
    ("call", 'name'),
    [
        (lambda: E.needle_weight(4, 1.0, [0.2, 1.5, -2.0], 8), 'gap'),
        (lambda: E.needle_entropy(4, 1.0, -35.5), 'gap'),
        (lambda: E.needle_sum_p2(4, 1.0, [0.0, -36.0]), 'gap'),
        # the shared range check of n and alpha
        (lambda: E.expected_sum_p2([64, 1.5], 1.0), 'n'),
    ],
)
def test_gap_errors_name_the_first_bad_value(call, name):
    """Both gap errors quote the first offending entry, and -35.5 is already refused."""
    refuses(ValueError, name, call)


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
    assert E.needle_entropy(2, alpha, gap) == pytest.approx(_two_normal_keys(alpha, gap, "H"), rel=REF_RTOL["nH"], abs=0)


@pytest.mark.parametrize(("d", "alpha"), [(64, 100.0), (16, 30.0)])
def test_a_cosine_needle_at_the_bottom_of_the_range_keeps_the_keys_around_it(d, alpha):
    """n = 2, cosine scores, the needle at the lowest cosine (gap = -1): its weight
    ``E 1 / (1 + e^(alpha (s + 1)))`` comes from the other key's score just above -1, where the
    density ``(1 - s^2)^((d - 3)/2)`` is minute. ``_common._nodes`` keeps every node from
    0.1 below the lower gap to 0.1 above the upper one, whatever its weight; keeping them only
    from 0.1 *above* the lower gap moves the weight by
    9.2e-7 relative at d = 64, alpha = 100 (documented: 1e-11). Reference: the 1-d integral in
    mpmath at 40 digits, with breakpoints near -1."""
    with mp.workdps(40):
        g = mp.mpf(-1)
        norm = mp.beta(mp.mpf(1) / 2, mp.mpf(d - 1) / 2)

        def integrand(s):
            return (1 - s * s) ** (mp.mpf(d - 3) / 2) / norm / (1 + mp.exp(alpha * (s - g)))

        reference = float(mp.quad(integrand, [-1, -0.99, -0.95, -0.9, -0.8, -0.6, -0.3, 0, 1]))
    assert E.needle_weight(2, alpha, -1.0, d) == pytest.approx(reference, rel=REF_RTOL["w"], abs=0)


def _one_rival_entropy(n, alpha, gap, d):
    """E H for a needle that dominates its row, one bulk key at a time.

    With r_i = e^(alpha (s_i - gap)) and every r_i tiny except perhaps one, H is the sum
    over bulk keys of the entropy of the two-key row (1, r_i),
    h(r) = log(1 + r) - r log(r) / (1 + r), up to terms of order (sum_i r_i)^2. So
    E H = (n - 1) int f(s) h(e^(alpha (s - gap))) ds, a 1-d integral. Keeping h whole
    (not its first-order part r (1 - log r)) matters: the rare bulk key that comes close
    to the needle moves the answer in the 7th digit at gap 0.3. For normal scores the
    integrand peaks near s = alpha (the tilt e^(alpha s)), on half-unit panels (unit panels
    leave mpmath 1e-11 off at alpha = 5, gap = 20; half-unit ones agree with a 60-digit
    quadrature on quarter-unit panels to 4e-14).
    """
    with mp.workdps(40):
        a, g = mp.mpf(alpha), mp.mpf(gap)
        h = lambda r: mp.log1p(r) - r * mp.log(r) / (1 + r)  # noqa: E731
        if d is None:
            f, pts = mp.npdf, [mp.mpf(k) / 2 for k in range(-12, 33)] + [18, 20, 22, 26, 32]
        else:
            c, p = 1 / mp.beta(mp.mpf(1) / 2, mp.mpf(d - 1) / 2), mp.mpf(d - 3) / 2
            f = lambda s: c * (1 - s * s) ** p  # noqa: E731
            pts = sorted({mp.mpf(k) / 400 for k in range(-399, 400)} | {g, mp.mpf(-1), mp.mpf(1)})
        return (n - 1) * mp.quad(lambda s: f(s) * h(mp.exp(a * (s - g))), pts)


@pytest.mark.parametrize(
    "n, alpha, gap, d", [(1e6, 1000.0, 0.3, 4096), (1e6, 1000.0, 0.28, 4096), (1e4, 200.0, 0.9, 128), (10, 5.0, 20.0, None)]
)
def test_dominant_needle_entropy(n, alpha, gap, d):
    """A needle far above the bulk: E H ~ 1e-71 .. 1e-31 keeps its relative accuracy."""
    ref = _one_rival_entropy(n, alpha, gap, d)
    assert E.needle_weight(n, alpha, gap, d) > 1 - 1e-15  # the one-rival expansion applies
    assert E.needle_entropy(n, alpha, gap, d) == pytest.approx(float(ref), rel=RTOL, abs=0)


@pytest.mark.parametrize(
    "alpha, gap, d",
    [
        (0.7, 1.5, None), (8.0, 2.0, None), (50.0, -1.0, None), (5.0, -20.0, None), (1000.0, 0.9, 2), (300.0, 0.2, 128), (5.0, -0.5, 3),
        # the needle far below the other key: E H is tiny (2.2e-42 at alpha = 3, gap = -35), so
        # an entropy taken as a difference of kernel sums is lost in their rounding (~6e-16)
        (3.0, -35.0, None), (1.0, -35.0, None), (1.5, -35.0, None), (30.0, -1.0, 4096),
        # the needle's kernel starts below the bulk's thresholds, where the entropy integrand is -k0
        (10.0, -1.0, 4096),
    ],
)
def test_needle_with_one_other_key(alpha, gap, d):
    """n = 2: each statistic is a 1-d integral over the other key's score s of its value
    for the row of two keys whose log-weights differ by alpha (gap - s)."""
    for kind, f in (("w", E.needle_weight), ("p2", E.needle_sum_p2), ("H", E.needle_entropy)):
        ref = _two_normal_keys(alpha, gap, kind) if d is None else _two_cosine_keys(alpha, gap, d, kind)
        assert f(2, alpha, gap, d) == pytest.approx(ref, rel=RTOL, abs=0), kind


@pytest.mark.parametrize("n, alpha, gap, d", [(128, 1.5, 3.0, None), (256, 30.0, 0.5, 64)])
def test_needle_against_monte_carlo(n, alpha, gap, d):
    rng = np.random.default_rng(7)
    rows = 40_000
    s = rng.standard_normal((rows, n)) if d is None else sample_cosines(rng, (rows, n), d)
    s[:, 0] = gap
    p, p2, h = row_stats(alpha * s)
    within_three_se(p[:, 0], E.needle_weight(n, alpha, gap, d))
    within_three_se(p2, E.needle_sum_p2(n, alpha, gap, d))
    within_three_se(h, E.needle_entropy(n, alpha, gap, d))


@pytest.mark.parametrize("d", [None, 2, 3, 128])
def test_alpha_zero_is_exact(d):
    n = np.array([2.0, 3.5, 1e9])
    np.testing.assert_array_equal(E.expected_sum_p2(n, 0.0, d), 1 / n)
    np.testing.assert_array_equal(E.expected_half_l1(n, 0.0, d), 0.0)
    np.testing.assert_array_equal(E.expected_entropy(n, 0.0, d), np.log(n))
    for f in (E.needle_weight, E.needle_sum_p2, E.needle_weight_mean_field):
        np.testing.assert_array_equal(f(n, 0.0, 0.5, d), 1 / n)
    np.testing.assert_array_equal(E.needle_entropy(n, 0.0, 0.5, d), np.log(n))


def test_mean_field_needle_converges_to_the_exact_weight():
    alpha, gap = 0.3, 1.0
    n = np.array([10, 100, 1e4, 1e6, 1e8])
    err = np.abs(E.needle_weight_mean_field(n, alpha, gap) / E.needle_weight(n, alpha, gap) - 1)
    assert np.all(np.diff(err) < 0)
    assert err[-1] < 1e-6


def test_needle_at_the_scale_of_the_bulk():
    """A needle drawn from the law itself is one more ordinary key: averaging the needle
    statistics over its score recovers the bulk statistics (normal scores, trapezoid in gap)."""
    n, alpha = 16, 1.7
    g = np.linspace(-12, 12, 481)
    w = np.exp(-g * g / 2) / math.sqrt(2 * math.pi) * (g[1] - g[0])
    assert w @ E.needle_weight(n, alpha, g) == pytest.approx(1 / n, rel=1e-12)
    assert w @ E.needle_sum_p2(n, alpha, g) == pytest.approx(E.expected_sum_p2(n, alpha), rel=1e-12)
    assert w @ E.needle_entropy(n, alpha, g) == pytest.approx(E.expected_entropy(n, alpha), rel=1e-12)
