"""attnscale.exact against mpmath, Monte Carlo, closed forms and its own identities.

Reference values come from two kinds of mpmath computation, both independent of
the library's discretisation (they reuse only its choice of integration interval):

- live, in the tests below, wherever the integrals are cheap: two keys (a 1-d
  integral over the score difference), cosine scores with d = 3 (uniform scores, whose
  inner integrals are exponential integrals in closed form), the near-tie limit and
  its correction, the mean-field weight (Bessel functions), the shared-query
  average for two keys (a variance-gamma law, Bessel K);
- stored in ``REFERENCE`` for general ``n`` with normal and cosine scores: nested
  Gauss-Legendre quadrature at 40 digits (``_nested_reference``; regenerate with
  ``python tests/test_exact.py --regenerate``, a few hours on one core). The stored
  values were computed with 12 outer panels and degree-4 rules (raising either degree
  moved them by < 1e-19 where checked), except the point n = 1e9, alpha = 0.05, where
  12 panels were too few (their p2 + (1 - p2) missed 1 by 3.6e-12) and 30 panels with a
  degree-5 outer rule, the generator's default, were used. One stored value was wrong
  and has been removed: the nested rule gave 7.78e-72 for the needle entropy at
  n = 1e6, alpha = 1000, gap = 0.3, d = 4096, where the true value is 1.27e-71
  (``test_dominant_needle_entropy`` computes it another way).
"""

from __future__ import annotations

import functools
import math
import sys

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnscale import exact as E
from attnscale.montecarlo import gap_density_at_zero
from attnscale.optimum import alpha_star_normal
from attnscale.scores import sample_cosines
from exact_reference import BULK, NEEDLE, REFERENCE, binary_entropy, call, sig

RTOL = 1e-11  # asserted; the measured maximum over every reference below is about 4e-14
EG = mp.euler




@pytest.mark.parametrize("kind, n, alpha, d, gap, value", REFERENCE)
def test_against_nested_mpmath_reference(kind, n, alpha, d, gap, value):
    got = call(kind, n, alpha, d, gap)
    assert got == pytest.approx(float(mp.mpf(value)), rel=RTOL, abs=0)


def _one_rival_entropy(n, alpha, gap, d):
    """E H for a needle that dominates its row, one bulk key at a time.

    With r_i = e^(alpha (s_i - gap)) and every r_i tiny except perhaps one, H is the sum
    over bulk keys of the entropy of the two-key row (1, r_i),
    h(r) = log(1 + r) - r log(r) / (1 + r), up to terms of order (sum_i r_i)^2. So
    E H = (n - 1) int f(s) h(e^(alpha (s - gap))) ds, a 1-d integral. Keeping h whole
    (not its first-order part r (1 - log r)) matters: the rare bulk key that comes close
    to the needle moves the answer in the 7th digit at gap 0.3.
    """
    with mp.workdps(40):
        a, g = mp.mpf(alpha), mp.mpf(gap)
        c = 1 / mp.beta(mp.mpf(1) / 2, mp.mpf(d - 1) / 2)
        p = mp.mpf(d - 3) / 2
        h = lambda r: mp.log1p(r) - r * mp.log(r) / (1 + r)  # noqa: E731
        pts = sorted({mp.mpf(k) / 400 for k in range(-399, 400)} | {g, mp.mpf(-1), mp.mpf(1)})
        return (n - 1) * mp.quad(lambda s: c * (1 - s * s) ** p * h(mp.exp(a * (s - g))), pts)


@pytest.mark.parametrize("n, alpha, gap, d", [(1e6, 1000.0, 0.3, 4096), (1e6, 1000.0, 0.28, 4096), (1e4, 200.0, 0.9, 128)])
def test_dominant_needle_entropy(n, alpha, gap, d):
    """A needle far above the bulk: E H ~ 1e-71 .. 1e-31 keeps its relative accuracy."""
    ref = _one_rival_entropy(n, alpha, gap, d)
    assert E.needle_weight(n, alpha, gap, d) > 1 - 1e-15  # the one-rival expansion applies
    assert E.needle_entropy(n, alpha, gap, d) == pytest.approx(float(ref), rel=RTOL, abs=0)


# ---- live mpmath: two keys -------------------------------------------------------------


def _two_key_stats(z):
    """(sum p^2, 1 - sum p^2, H) for two keys whose log-weights differ by z (the entropy in
    the cancellation-free form of ``binary_entropy``: the form -(a log a + b log b) made
    this reference 2.5e-4 too small at alpha = 5, gap = -20)."""
    a, b = sig(z), sig(-z)
    return a * a + b * b, 2 * a * b, binary_entropy(z)


@pytest.mark.parametrize("alpha", [1e-3, 0.5, 5.0, 50.0])
def test_two_normal_keys_against_the_difference_law(alpha):
    """n = 2: s1 - s2 ~ N(0, 2), so each statistic is a 1-d integral."""
    with mp.workdps(30):
        a = mp.mpf(alpha)
        pts = sorted({mp.mpf(0)} | {mp.mpf(k) / a for k in range(-60, 61, 6)} | {mp.mpf(k) for k in range(-30, 31, 3)})
        pts = [-mp.inf] + [p for p in pts if abs(p) < 40] + [mp.inf]
        dens = lambda x: mp.exp(-x * x / 4) / (2 * mp.sqrt(mp.pi))  # noqa: E731
        ref = [mp.quad(lambda x, i=i: dens(x) * _two_key_stats(a * x)[i], pts) for i in range(3)]
    assert E.expected_sum_p2(2, alpha) == pytest.approx(float(ref[0]), rel=RTOL, abs=0)
    assert E.expected_half_l1(2, alpha) == pytest.approx(float(a * ref[1]), rel=RTOL, abs=0)
    assert E.expected_entropy(2, alpha) == pytest.approx(float(ref[2]), rel=RTOL, abs=0)


def _cosine_density_theta(d):
    """Density of theta = arccos(s) for cosine scores: sin(theta)^(d-2) / B(1/2, (d-1)/2)."""
    c = 1 / mp.beta(mp.mpf(1) / 2, mp.mpf(d - 1) / 2)
    return lambda th: c * mp.sin(th) ** (d - 2)


@pytest.mark.parametrize(
    "alpha, gap, d",
    [(0.7, 1.5, None), (8.0, 2.0, None), (50.0, -1.0, None), (5.0, -20.0, None), (1000.0, 0.9, 2), (300.0, 0.2, 128), (5.0, -0.5, 3)],
)
def test_needle_with_one_other_key(alpha, gap, d):
    """n = 2: the needle's weight is sigmoid(alpha (gap - s)), a 1-d integral over s."""
    with mp.workdps(30):
        a, g = mp.mpf(alpha), mp.mpf(gap)
        if d is None:
            f = lambda s: mp.npdf(s)  # noqa: E731
            # breakpoints at the sigmoid's edge and at -alpha, where e^(-alpha s) f(s) peaks
            pts = {g + mp.mpf(k) / a for k in range(-60, 61, 6)} | {mp.mpf(k) for k in range(-30, 31, 3)} | {-a + mp.mpf(k) / 2 for k in range(-12, 13)}
            pts = [-mp.inf] + sorted(p for p in pts if abs(p) < 40) + [mp.inf]
            ref = [mp.quad(lambda s, i=i: f(s) * _two_key_stats(a * (g - s))[i], pts) for i in range(3)]
            w = mp.quad(lambda s: f(s) * sig(a * (g - s)), pts)
        else:
            f = _cosine_density_theta(d)
            pts = sorted({mp.acos(g + mp.mpf(k) / a) for k in range(-60, 61, 3) if abs(g + mp.mpf(k) / a) < 1} | {mp.pi * k / 32 for k in range(33)})
            ref = [mp.quad(lambda t, i=i: f(t) * _two_key_stats(a * (g - mp.cos(t)))[i], pts) for i in range(3)]
            w = mp.quad(lambda t: f(t) * sig(a * (g - mp.cos(t))), pts)
    assert E.needle_weight(2, alpha, gap, d) == pytest.approx(float(w), rel=RTOL, abs=0)
    assert E.needle_sum_p2(2, alpha, gap, d) == pytest.approx(float(ref[0]), rel=RTOL, abs=0)
    assert E.needle_entropy(2, alpha, gap, d) == pytest.approx(float(ref[2]), rel=RTOL, abs=0)


# ---- live mpmath: uniform scores (cosine, d = 3) in closed form ----------------------------


def _ein(z):
    """int_0^z (1 - e^-t) / t dt."""
    if z < mp.mpf("0.5"):  # the series, 40 terms: 0.5^40 / 40! < 1e-60
        term, total = mp.mpf(1), mp.mpf(0)
        for k in range(1, 41):
            term *= -z / k
            total -= term / k
        return total
    return mp.e1(z) + mp.log(z) + EG


def _kb(v):
    """int_0^v (log t + gamma) e^-t dt."""
    if v < mp.mpf("0.5"):  # sum_k (-1)^k v^(k+1) / (k! (k+1)) (log v + gamma - 1/(k+1)), 40 terms
        term, total, lv = v, mp.mpf(0), mp.log(v) + EG
        for k in range(40):
            total += term / (k + 1) * (lv - mp.mpf(1) / (k + 1))
            term *= -v / (k + 1)
        return total
    return -mp.exp(-v) * (mp.log(v) + EG) - mp.e1(v)


def _uniform_inner(a, y):
    """(1 - phi, phi, A1, A2, B) at threshold y for s uniform on [-1, 1]: with v = e^(alpha s - y),
    ds = dv / (alpha v), each is an incomplete exponential integral."""
    lo, hi, c = mp.exp(-a - y), mp.exp(a - y), 1 / (2 * a)
    return (
        c * (_ein(hi) - _ein(lo)),
        c * (mp.e1(lo) - mp.e1(hi)),
        c * (mp.exp(-lo) - mp.exp(-hi)),
        c * ((1 + lo) * mp.exp(-lo) - (1 + hi) * mp.exp(-hi)),
        c * (_kb(hi) - _kb(lo)),
    )


@functools.lru_cache(maxsize=None)
def _gl_nodes(degree, prec):
    from mpmath.calculus.quadrature import GaussLegendre

    return GaussLegendre(mp.mp).calc_nodes(degree, prec)


def _gl(fun, pts, degree=4):
    """Gauss-Legendre on each panel; ``fun`` returns a tuple."""
    acc = None
    for lo, hi in zip(pts[:-1], pts[1:]):
        half, mid = (hi - lo) / 2, (hi + lo) / 2
        for x, w in _gl_nodes(degree, mp.mp.prec):
            vals = fun(mid + half * x)
            acc = [w * half * v for v in vals] if acc is None else [c + w * half * v for c, v in zip(acc, vals)]
    return acc


def _uniform_reference(n, alpha, gap=None):
    """All six statistics (three bulk, three needle when ``gap`` is given) for d = 3."""
    with mp.workdps(30):
        a, n_ = mp.mpf(alpha), mp.mpf(n)
        y_lo, y_hi = -a - 10, a + 50 + mp.log(n_)
        pts = {y_lo + (y_hi - y_lo) * k / 24 for k in range(25)}
        pts |= {e + sg * mp.mpf(2) ** k for e in (-a, a) for sg in (-1, 1) for k in range(-24, 9)}
        if gap is not None:
            pts |= {a * gap + k for k in (-6, -3, -1, 0, 1, 3, 6, 12, 24)}
        pts = sorted(p for p in pts if y_lo <= p <= y_hi)

        def integrand(y):
            om, ph, A1, A2, B = _uniform_inner(a, y)
            lp = mp.log1p(-om) if om < 0.5 else mp.log(ph)
            out = [n_ * A2 * mp.exp((n_ - 1) * lp), a * n_ * (n_ - 1) * A1**2 * mp.exp((n_ - 2) * lp), -n_ * B * mp.exp((n_ - 1) * lp)]
            if gap is not None:
                x0 = a * gap - y
                e0 = mp.exp(x0)
                k1 = e0 * mp.exp(-e0)
                out += [
                    k1 * mp.exp((n_ - 1) * lp),
                    e0 * k1 * mp.exp((n_ - 1) * lp) + (n_ - 1) * mp.exp(-e0) * A2 * mp.exp((n_ - 2) * lp),
                    -(k1 * (x0 + EG) * mp.expm1((n_ - 1) * lp) + (n_ - 1) * mp.exp(-e0) * B * mp.exp((n_ - 2) * lp)),
                ]
            return out

        return [float(v) for v in _gl(integrand, pts)]


@pytest.mark.parametrize("n, alpha, gap", [(1e9, 1000.0, 1.0), (5, 0.3, -0.4)])
def test_uniform_scores_closed_form_inner_integrals(n, alpha, gap):
    ref = _uniform_reference(n, alpha, gap)
    got = [f(n, alpha, 3) for f in BULK.values()] + [f(n, alpha, gap, 3) for f in NEEDLE.values()]
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=0)


# ---- live mpmath: near ties, mean field, shared query --------------------------------------


def _mp_gap_density(n, d, extra=False):
    """n (n-1) int f^2 F^(n-2) ds, or with ``extra`` the coefficient C_2."""
    with mp.workdps(30):
        if d is None:
            f, fp, F = mp.npdf, (lambda s: -s * mp.npdf(s)), mp.ncdf
            top = mp.sqrt(2 * mp.log(n))
            pts = [-mp.inf, -5, 0] + [top + k * mp.mpf("0.25") for k in range(-16, 17)] + [mp.inf]
        else:
            A, p = mp.mpf(d - 1) / 2, mp.mpf(d - 3) / 2
            c = 1 / mp.beta(mp.mpf(1) / 2, A)
            f = lambda s: c * (1 - s * s) ** p  # noqa: E731
            fp = lambda s: -2 * p * s * c * (1 - s * s) ** (p - 1)  # noqa: E731
            F = lambda s: mp.betainc(A, A, 0, (1 + s) / 2, regularized=True)  # noqa: E731
            sd = 1 / mp.sqrt(d)
            top = sd * mp.sqrt(2 * mp.log(n))
            pts = sorted({mp.mpf(-1), mp.mpf(1)} | {top + k * sd / 8 for k in range(-40, 41) if abs(top + k * sd / 8) < 1} | {mp.mpf(k) / 10 for k in range(-9, 10)})
        if not extra:
            return float(n * (n - 1) * mp.quad(lambda s: f(s) ** 2 * F(s) ** (n - 2), pts))
        body = lambda s: fp(s) ** 2 * F(s) ** (n - 2) + (mp.mpf(n - 2) / 2) * f(s) ** 2 * fp(s) * F(s) ** (n - 3)  # noqa: E731
        return float(-(mp.pi**2 / 6) * n * (n - 1) * mp.quad(body, pts))


@pytest.mark.parametrize("n, d", [(8, None), (1e9, None), (1e6, 128), (50, 5)])
def test_near_tie_limit_against_mpmath(n, d):
    assert E.near_tie_limit(n, d) == pytest.approx(_mp_gap_density(n, d), rel=RTOL, abs=0)


@pytest.mark.parametrize("n, d", [(8, None), (1000, None), (64, 16)])
def test_near_tie_correction_against_mpmath(n, d):
    assert E.near_tie_correction(n, d) == pytest.approx(_mp_gap_density(n, d, extra=True), rel=RTOL, abs=0)


def test_near_tie_closed_forms():
    assert E.near_tie_limit(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-15)  # |N(0, 2)| at 0
    assert E.near_tie_correction(2) == pytest.approx(-(math.pi**1.5) / 12, rel=1e-15)
    np.testing.assert_allclose(E.near_tie_limit([2, 10, 1e6], 3), [1.0, 5.0, 5e5], rtol=1e-14)  # uniform: n/2
    assert E.near_tie_limit(7, 2) == math.inf
    for n in (3, 64, 1000):  # the library's other implementation (scipy.integrate.quad)
        assert E.near_tie_limit(n) == pytest.approx(gap_density_at_zero(n), rel=1e-10)


@pytest.mark.parametrize("n", [2, 64, 4096])
def test_half_l1_approaches_the_near_tie_limit_at_rate_alpha_squared(n):
    limit, c2 = E.near_tie_limit(n), E.near_tie_correction(n)
    for alpha in (200.0, 400.0):
        g = E.expected_half_l1(n, alpha)
        assert g < limit  # from below: C_2 < 0
        assert (g - limit) * alpha**2 == pytest.approx(c2, rel=0.03)  # the rest is O(1/alpha)
    # alpha E H -> (pi^2/6) f_Delta(0)
    assert 400.0 * E.expected_entropy(n, 400.0) == pytest.approx(math.pi**2 / 6 * limit, rel=0.01)


def test_half_l1_grows_like_log_alpha_for_d_2():
    """d = 2: int f^2 diverges at both ends for n = 2, so alpha (1 - E sum p^2) gains
    2 * n (n-1) / (2 pi^2) * log 10 per decade of alpha."""
    g = [E.expected_half_l1(2, a, 2) for a in (1e2, 1e3, 1e4)]
    np.testing.assert_allclose(np.diff(g), 2 / math.pi**2 * math.log(10), rtol=1e-3)


@pytest.mark.parametrize("n, alpha, gap, d", [(100, 2.0, 3.0, None), (1e6, 0.5, -1.0, None), (1000, 50.0, 0.3, 64), (10, 3.0, 0.5, 3)])
def test_mean_field_needle_against_mpmath(n, alpha, gap, d):
    with mp.workdps(30):
        if d is None:
            m = mp.exp(mp.mpf(alpha) ** 2 / 2)
        else:
            nu = mp.mpf(d) / 2 - 1
            m = mp.gamma(nu + 1) * (2 / mp.mpf(alpha)) ** nu * mp.besseli(nu, alpha)
        w0 = mp.exp(mp.mpf(alpha) * gap)
        ref = w0 / (w0 + (n - 1) * m)
    assert E.needle_weight_mean_field(n, alpha, gap, d) == pytest.approx(float(ref), rel=1e-13)


def test_shared_query_two_keys_against_mpmath():
    """n = 2: given R = |q|/sqrt(d), s1 - s2 = sqrt(2) R z with z ~ N(0, 1), and X = R z with
    R^2 ~ Gamma(k = d/2, rate k) is variance-gamma distributed, with density
    g^(2k) |x|^(k-1/2) K_(k-1/2)(g |x|) / (sqrt(pi) Gamma(k) (2g)^(k-1/2)), g = sqrt(2k)."""
    for d, alpha in [(16, 3.0), (2, 0.8), (256, 6.0)]:
        with mp.workdps(30):
            k = mp.mpf(d) / 2
            g = mp.sqrt(2 * k)
            c = g ** (2 * k) / (mp.sqrt(mp.pi) * mp.gamma(k) * (2 * g) ** (k - mp.mpf(1) / 2))
            dens = lambda x: c * abs(x) ** (k - mp.mpf(1) / 2) * mp.besselk(k - mp.mpf(1) / 2, g * abs(x))  # noqa: E731
            pts = [0, mp.mpf(1) / 4, mp.mpf(1) / 2, 1, 2, 4, 8, 16, 32, 64, mp.inf]
            total = 2 * mp.quad(dens, pts)
            ref = 2 * mp.quad(lambda x: dens(x) * _two_key_stats(alpha * mp.sqrt(2) * x)[0], pts)
        assert float(total) == pytest.approx(1.0, abs=1e-25)
        assert E.expected_sum_p2_shared_query(2, alpha, d) == pytest.approx(float(ref), rel=RTOL, abs=0)


# ---- Monte Carlo ---------------------------------------------------------------------------


def _row_stats(logits):
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    p2 = (p * p).sum(axis=1)
    h = -(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=1)
    return p, p2, h


def _within_three_se(samples, exact):
    mean, se = samples.mean(), samples.std(ddof=1) / math.sqrt(samples.size)
    assert se <= 0.01 * abs(mean), "the test point is too noisy to be informative"
    assert abs(mean - exact) <= 3 * se, (mean, se, exact)


@pytest.mark.parametrize("n, alpha, d", [(64, 2.0, None), (32, 20.0, 16), (256, 1.2, None)])
def test_bulk_against_monte_carlo(n, alpha, d):
    rng = np.random.default_rng(20240611)
    rows = 40_000
    s = rng.standard_normal((rows, n)) if d is None else sample_cosines(rng, (rows, n), d)
    p, p2, h = _row_stats(alpha * s)
    _within_three_se(p2, E.expected_sum_p2(n, alpha, d))
    _within_three_se(alpha * (1 - p2), E.expected_half_l1(n, alpha, d))
    _within_three_se(h, E.expected_entropy(n, alpha, d))


@pytest.mark.parametrize("n, alpha, gap, d", [(128, 1.5, 3.0, None), (256, 30.0, 0.5, 64)])
def test_needle_against_monte_carlo(n, alpha, gap, d):
    rng = np.random.default_rng(7)
    rows = 40_000
    s = rng.standard_normal((rows, n)) if d is None else sample_cosines(rng, (rows, n), d)
    s[:, 0] = gap
    p, p2, h = _row_stats(alpha * s)
    _within_three_se(p[:, 0], E.needle_weight(n, alpha, gap, d))
    _within_three_se(p2, E.needle_sum_p2(n, alpha, gap, d))
    _within_three_se(h, E.needle_entropy(n, alpha, gap, d))


def test_shared_query_against_monte_carlo():
    rng = np.random.default_rng(11)
    d, n, alpha, rows = 16, 32, 2.0, 40_000
    q = rng.standard_normal((rows, 1, d))
    k = rng.standard_normal((rows, n, d))
    _, p2, _ = _row_stats(alpha * (q * k).sum(-1) / math.sqrt(d))
    exact = E.expected_sum_p2_shared_query(n, alpha, d)
    _within_three_se(p2, exact)
    assert exact < E.expected_sum_p2(n, alpha)  # the shared |q| spreads the scale; here it lowers E sum p^2


# ---- closed forms, identities, limits ------------------------------------------------------


@pytest.mark.parametrize("d", [None, 2, 3, 128])
def test_alpha_zero_is_exact(d):
    n = np.array([2.0, 3.5, 1e9])
    np.testing.assert_array_equal(E.expected_sum_p2(n, 0.0, d), 1 / n)
    np.testing.assert_array_equal(E.expected_half_l1(n, 0.0, d), 0.0)
    np.testing.assert_array_equal(E.expected_entropy(n, 0.0, d), np.log(n))
    for f in (E.needle_weight, E.needle_sum_p2, E.needle_weight_mean_field):
        np.testing.assert_array_equal(f(n, 0.0, 0.5, d), 1 / n)
    np.testing.assert_array_equal(E.needle_entropy(n, 0.0, 0.5, d), np.log(n))


@pytest.mark.parametrize("d", [None, 2, 3, 5, 128, 4096, 65536])
def test_the_two_integrals_for_sum_p2_add_up_to_one(d):
    """E sum p^2 and 1 - E sum p^2 = n (n-1) E[p1 p2] come from different integrands."""
    n = np.geomspace(2, 1e9, 7)[None, :]
    alpha = np.geomspace(1e-3, 50.0 if d is None else 1000.0, 9)[:, None]
    total = E.expected_sum_p2(n, alpha, d) + E.expected_half_l1(n, alpha, d) / alpha
    np.testing.assert_allclose(total, 1.0, rtol=0, atol=5e-14)


def test_small_alpha_matches_its_taylor_expansion():
    """E sum p^2 = 1/n + alpha^2 (n-1)/n^2 + O(alpha^4) (normal scores, unit variance)."""
    n, alpha = np.array([2.0, 10.0, 1e6]), 1e-4
    np.testing.assert_allclose(E.expected_sum_p2(n, alpha), 1 / n + alpha**2 * (n - 1) / n**2, rtol=1e-9)


def test_mean_field_needle_converges_to_the_exact_weight():
    alpha, gap = 0.3, 1.0
    n = np.array([10, 100, 1e4, 1e6, 1e8])
    err = np.abs(E.needle_weight_mean_field(n, alpha, gap) / E.needle_weight(n, alpha, gap) - 1)
    assert np.all(np.diff(err) < 0)
    assert err[-1] < 1e-6


def test_exact_optimum_question():
    """alpha (1 - E sum p^2) has no interior maximum for normal scores: it rises to the limit."""
    alpha = np.geomspace(0.05, 500, 400)
    for n in (64, 4096):
        g = np.asarray(E.expected_half_l1(n, alpha))
        assert np.all(np.diff(g) > 0)
        assert g[-1] < E.near_tie_limit(n)
        # while the mean-field sum exp(alpha^2)/n is already 10% off below the mean-field optimum
        a_star = alpha_star_normal(n)
        assert math.exp(a_star**2) / n > 1.5 * E.expected_sum_p2(n, a_star)


def test_needle_at_the_scale_of_the_bulk():
    """A needle drawn from the law itself is one more ordinary key: averaging the needle
    statistics over its score recovers the bulk statistics (normal scores, trapezoid in gap)."""
    n, alpha = 16, 1.7
    g = np.linspace(-12, 12, 481)
    w = np.exp(-g * g / 2) / math.sqrt(2 * math.pi) * (g[1] - g[0])
    assert w @ E.needle_weight(n, alpha, g) == pytest.approx(1 / n, rel=1e-12)
    assert w @ E.needle_sum_p2(n, alpha, g) == pytest.approx(E.expected_sum_p2(n, alpha), rel=1e-12)
    assert w @ E.needle_entropy(n, alpha, g) == pytest.approx(E.expected_entropy(n, alpha), rel=1e-12)


def test_shapes_scalars_and_broadcasting():
    assert isinstance(E.expected_sum_p2(8, 1.0), float)
    assert isinstance(E.needle_weight(8, 1.0, 0.5, 16), float)
    out = E.expected_entropy(np.array([[2.0], [64.0]]), np.array([0.0, 1.0, 3.0]))
    assert out.shape == (2, 3)
    assert E.needle_entropy([4, 8], 2.0, [[0.0], [1.0], [2.0]]).shape == (3, 2)
    one = E.expected_sum_p2(np.full(5, 33.0), np.linspace(0, 4, 5))
    np.testing.assert_array_equal(one, [E.expected_sum_p2(33.0, a) for a in np.linspace(0, 4, 5)])


def test_real_n_interpolates():
    v = E.expected_sum_p2([2.0, 2.5, 3.0], 1.5)
    assert v[0] > v[1] > v[2]


# ---- properties ---------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    n=st.floats(2.0, 1e9),
    alpha=st.floats(0.0, 50.0),
    step=st.floats(0.01, 5.0),
    d=st.sampled_from([None, 2, 3, 64]),
)
def test_properties(n, alpha, step, d):
    p2 = E.expected_sum_p2(n, [alpha, alpha + step], d)
    assert 1 / n * (1 - 1e-13) <= p2[0] <= p2[1] <= 1.0
    h = E.expected_entropy(n, [alpha, alpha + step], d)
    assert 0.0 <= h[1] <= h[0] <= math.log(n) * (1 + 1e-13)
    # the needle's weight grows with its score and lies in [0, 1]
    w = E.needle_weight(n, alpha, [-0.5, 0.5], d)
    assert 0.0 <= w[0] <= w[1] <= 1.0


# ---- bad input ----------------------------------------------------------------------------

CASES = [
    (lambda: E.expected_sum_p2(1.5, 1.0), ValueError, "n must be >= 2"),
    (lambda: E.expected_sum_p2(1, 1.0), ValueError, "n must be >= 2"),
    (lambda: E.expected_sum_p2([4, -3], 1.0), ValueError, "n must be >= 2"),
    (lambda: E.expected_sum_p2(np.nan, 1.0), ValueError, "n must be finite"),
    (lambda: E.expected_sum_p2(np.inf, 1.0), ValueError, "n must be finite"),
    (lambda: E.expected_sum_p2(1e16, 1.0), ValueError, "n must be <= 1e+15"),
    (lambda: E.expected_sum_p2("10", 1.0), TypeError, "n must be a real number"),
    (lambda: E.expected_sum_p2(4 + 0j, 1.0), TypeError, "n must be real"),
    (lambda: E.expected_half_l1(4, -0.1), ValueError, "alpha must be >= 0"),
    (lambda: E.expected_entropy(4, np.nan), ValueError, "alpha must be finite"),
    (lambda: E.expected_entropy(4, np.inf), ValueError, "alpha must be finite"),
    (lambda: E.expected_sum_p2(4, 2e4), ValueError, "alpha must be <= 10000"),
    (lambda: E.expected_sum_p2(4, None), TypeError, "alpha must be a real number"),
    (lambda: E.expected_sum_p2(4, 1.0, 2.5), TypeError, "d must be an integer"),
    (lambda: E.expected_sum_p2(4, 1.0, "8"), TypeError, "d must be an integer"),
    (lambda: E.expected_sum_p2(4, 1.0, 1), ValueError, "d must be an integer >= 2"),
    (lambda: E.expected_sum_p2(4, 1.0, 70000), ValueError, "d must be <= 65536"),
    (lambda: E.near_tie_limit(1.0), ValueError, "n must be >= 2"),
    (lambda: E.near_tie_limit(8, 0), ValueError, "d must be an integer >= 2"),
    (lambda: E.near_tie_correction(8, 4), ValueError, "d must be >= 5"),
    (lambda: E.needle_weight(4, 1.0, np.nan), ValueError, "gap must be finite"),
    (lambda: E.needle_weight(4, 1.0, 1.5, 8), ValueError, "gap must lie in [-1, 1]"),
    (lambda: E.needle_entropy(4, 1.0, -40.0), ValueError, "gap must be >= -35"),
    (lambda: E.needle_sum_p2(0.5, 1.0, 0.0), ValueError, "n must be >= 2"),
    (lambda: E.needle_weight_mean_field(4, -1.0, 0.0), ValueError, "alpha must be >= 0"),
    (lambda: E.needle_weight_mean_field(4, 1.0, 2.0, 3), ValueError, "gap must lie in [-1, 1]"),
    (lambda: E.expected_sum_p2_shared_query(4, 1.0, 0), ValueError, "d must be an integer >= 1"),
    (lambda: E.expected_sum_p2_shared_query(4, 1.0, 16.5), TypeError, "d must be an integer"),
    (lambda: E.expected_sum_p2_shared_query(1, 1.0, 16), ValueError, "n must be >= 2"),
]


@pytest.mark.parametrize("call, kind, words", CASES)
def test_bad_input(call, kind, words):
    with pytest.raises(kind) as info:
        call()
    assert words in str(info.value)


# ---- the generator of REFERENCE (not run by pytest) ----------------------------------------

_XB = [-60, -45, -32, -22, -15, -10, -6.5, -4, -2.5, -1.25, 0, 1.25, 2.5, 4, 7]


def _subdivide(pts, width):
    out = [pts[0]]
    for lo, hi in zip(pts[:-1], pts[1:]):
        k = int(mp.ceil((hi - lo) / width))
        out += [lo + (hi - lo) * j / k for j in range(1, k)] + [hi]
    return out


def _kernels(x):
    e = mp.exp(x)
    q = mp.exp(-e)
    k1 = e * q
    return (-mp.expm1(-e), q, k1, k1 * e, k1 * (x + EG))


@functools.lru_cache(maxsize=None)
def _inner(d, alpha, ystr):
    """(1 - phi, phi, A1, A2, B) at threshold y, Gauss-Legendre on panels split at the
    kernel's features and the density's scale. Normal scores: in s, with the parts where
    x = alpha s - y < -60 from the expansion e^x - e^(2x)/2 + ... in closed form; cosine
    scores: in theta (s = cos theta, density sin^(d-2) theta, analytic). Beyond x = 7 the
    kernel of 1 - phi is 1 (the survival function, closed form), the others vanish."""
    a, y = mp.mpf(alpha), mp.mpf(ystr)
    sb = [(y + xb) / a for xb in _XB]
    if d is None:
        f = lambda s: mp.exp(-s * s / 2) / mp.sqrt(2 * mp.pi)  # noqa: E731
        lo, hi = max(sb[0], mp.mpf(-40)), min(sb[-1], mp.mpf(40))
        res = [mp.mpf(0)] * 5
        if hi > lo:
            pts = _subdivide(sorted({lo, hi} | {p for p in sb if lo < p < hi}), 1)
            res = _gl(lambda s: tuple(f(s) * k for k in _kernels(a * s - y)), pts)
        c = sb[0]
        if c > -40:
            m1, m2 = mp.exp(a * a / 2 - y) * mp.ncdf(c - a), mp.exp(2 * a * a - 2 * y) * mp.ncdf(c - 2 * a)
            m3 = mp.exp(9 * a * a / 2 - 3 * y) * mp.ncdf(c - 3 * a)
            t1 = mp.exp(a * a / 2 - y) * (a * mp.ncdf(c - a) - mp.npdf(c - a))
            t2 = mp.exp(2 * a * a - 2 * y) * (2 * a * mp.ncdf(c - 2 * a) - mp.npdf(c - 2 * a))
            res[0] += m1 - m2 / 2 + m3 / 6
            res[1] += mp.ncdf(c) - m1 + m2 / 2 - m3 / 6
            res[2] += m1 - m2 + m3 / 2
            res[3] += m2 - m3
            res[4] += (a * t1 + (EG - y) * m1) - (a * t2 + (EG - y) * m2)
        if sb[-1] < 40:
            res[0] += mp.ncdf(-sb[-1])
        return tuple(res)
    A = mp.mpf(d - 1) / 2
    g = _cosine_density_theta(d)
    th_lo = mp.acos(sb[-1]) if sb[-1] < 1 else mp.mpf(0)
    th_hi = mp.pi
    sd = 1 / mp.sqrt(d)
    # drop the range where f(s) min(1, e^(alpha s - y)), a bound on every integrand, is below
    # e^-110 of its maximum (this keeps the tilted mass e^(alpha s) f(s) when y is far out)
    grid = np.linspace(-1, 1, 200001)[1:-1]
    bound = 0.5 * (d - 3) * np.log1p(-grid * grid) + np.minimum(0.0, float(alpha) * grid - float(y))
    keep = grid[bound >= bound.max() - 110]
    th_lo = max(th_lo, mp.acos(min(1.0, keep[-1] + 1e-5)))
    th_hi = min(th_hi, mp.acos(max(-1.0, keep[0] - 1e-5)))
    res = [mp.mpf(0)] * 5
    if th_hi > th_lo:
        tb = {mp.acos(s) for s in sb if -1 < s < 1}
        pts = _subdivide(sorted({th_lo, th_hi} | {t for t in tb if th_lo < t < th_hi}), min(mp.mpf("0.15"), 2 * sd))
        res = _gl(lambda th: tuple(g(th) * k for k in _kernels(a * mp.cos(th) - y)), pts)
    if sb[-1] < 1:
        res[0] += mp.betainc(A, A, 0, (1 - sb[-1]) / 2, regularized=True)
    return tuple(res)


def _nested_reference(kinds, n, alpha, d, gap=None, panels=30):
    """``REFERENCE`` entries at one point. The y-interval (where the outer integrand
    exceeds 1e-40 of its maximum) is located with the library's tables; everything
    inside it is integrated in mpmath."""
    from attnscale.exact import _sums as q
    from attnscale.exact._common import _nodes

    nodes = _nodes(alpha, d, n, gap, gap)
    j0, j1 = q.bulk_grid(nodes, n)
    jy = np.arange(j0, j1 + 1) if gap is None else q.needle_grid(j0, j1, np.array([alpha * gap]))
    tab = q.tables(nodes, jy, {"A1", "A2", "B"})
    with np.errstate(all="ignore"):
        lp = tab.logphi
        size = np.abs(tab.A2) * np.exp((n - 1) * lp) + tab.A1**2 * np.exp((n - 2) * lp) + np.abs(tab.B) * np.exp((n - 1) * lp)
        if gap is not None:
            x0 = alpha * gap - tab.y
            size = size + np.exp(x0 - np.exp(x0)) * (1 + np.abs(x0))
    ok = np.nonzero(size > 1e-40 * np.nanmax(size))[0]
    ya, yb = float(tab.y[ok[0]] - 2), float(tab.y[ok[-1]] + 2)
    with mp.workdps(40):
        n_, a = mp.mpf(n), mp.mpf(alpha)

        def integrand(y):
            om, ph, A1, A2, B = _inner(d, alpha, mp.nstr(y, 45))
            lp = mp.log1p(-om) if om < 0.5 else mp.log(ph)
            out = {"p2": n_ * A2 * mp.exp((n_ - 1) * lp), "hl1": a * n_ * (n_ - 1) * A1**2 * mp.exp((n_ - 2) * lp), "H": -n_ * B * mp.exp((n_ - 1) * lp)}
            if gap is not None:
                x0 = a * mp.mpf(gap) - y
                e0 = mp.exp(x0)
                k1 = e0 * mp.exp(-e0)
                out["w"] = k1 * mp.exp((n_ - 1) * lp)
                out["np2"] = e0 * k1 * mp.exp((n_ - 1) * lp) + (n_ - 1) * mp.exp(-e0) * A2 * mp.exp((n_ - 2) * lp)
                out["nH"] = -(k1 * (x0 + EG) * mp.expm1((n_ - 1) * lp) + (n_ - 1) * mp.exp(-e0) * B * mp.exp((n_ - 2) * lp))
            return tuple(out[k] for k in kinds)

        pts = {mp.mpf(t) for t in np.linspace(ya, yb, panels + 1)}
        if gap is not None:
            pts |= {mp.mpf(alpha * gap + k) for k in (-6, -3, -1.5, 0, 1.5, 3, 6, 12, 24) if ya < alpha * gap + k < yb}
        if d is not None:  # the endpoint singularities, smoothed over O(1) in y
            pts |= {mp.mpf(e + sg * 2.0**k) for e in (-alpha, alpha) for sg in (-1, 1) for k in range(-1, 12) if ya < e + sg * 2.0**k < yb}
        return [mp.nstr(v, 25) for v in _gl(integrand, sorted(pts), degree=5)]


if __name__ == "__main__" and "--regenerate" in sys.argv:
    points = sorted({(n, a, d, g) for _, n, a, d, g, _ in REFERENCE}, key=str)
    for n, a, d, g in points:
        kinds = ["p2", "hl1", "H"] if g is None else ["w", "np2", "nH"]
        _inner.cache_clear()
        for k, v in zip(kinds, _nested_reference(kinds, n, a, d, g)):
            print(f"    ({k!r}, {n!r}, {a!r}, {d!r}, {g!r}, {v!r}),", flush=True)
