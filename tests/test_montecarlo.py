"""Monte Carlo kernels against straightforward references.
"""

from __future__ import annotations

import functools
import warnings

from numpy.typing import ArrayLike
import mpmath as mp
import numpy as np
import pytest

from attnscale.montecarlo import collision_and_gradient, gap_density_at_zero, rem_collision, row_optimum, typical_row_optimum
from attnscale.softmax import gradient_l1, jacobian_frobenius, softmax


def test_collision_and_gradient_match_the_softmax_route():
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((37, 50)) * 3
    alphas = np.array([0.01, 0.5, 3.0, 40.0])
    coll, grad = collision_and_gradient(scores, alphas, chunk=8)
    p = softmax(np.broadcast_to(scores, (4,) + scores.shape), alphas[:, None, None])
    np.testing.assert_allclose(coll, (p**2).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(grad, gradient_l1(p, alphas[:, None]), rtol=1e-11, atol=1e-300)


def test_row_optimum_matches_a_fine_grid():
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((12, 40))
    grid = np.logspace(-1, 3, 8001)
    _, grad = collision_and_gradient(scores, grid)
    brute = grid[np.argmax(grad, axis=0)]
    np.testing.assert_allclose(row_optimum(scores), brute, rtol=2e-3)


def test_gap_density_against_simulation():
    rng = np.random.default_rng(2)
    top2 = -np.sort(-rng.standard_normal((200_000, 8)), axis=1)[:, :2]
    gaps = top2[:, 0] - top2[:, 1]
    h = 0.02
    empirical = np.mean(gaps < h) / h  # P(gap < h) / h -> f(0) as h -> 0, bias O(h)
    se = np.sqrt(np.mean(gaps < h) / gaps.size) / h
    assert abs(empirical - gap_density_at_zero(8)) < 4 * se + 0.05 * empirical


def test_typical_row_optimum_ignores_a_shift_of_each_row_however_large():
    """softmax(alpha s) does not change when a row is shifted: rows 2,000 above the others (far
    beyond exp's range if the batch shared one shift) give the same optimum, to the search's
    documented accuracy (1e-4 in log alpha; the shift moves the scores by rounding, ~1e-13)."""
    rows = np.random.default_rng(0).standard_normal((50, 8))
    moved = rows + np.where(np.arange(50) < 25, 2000.0, -3.0)[:, None]
    assert typical_row_optimum(moved) == pytest.approx(typical_row_optimum(rows), rel=1e-4)


def test_typical_row_optimum_matches_a_dense_grid():
    """The bounded search agrees with the argmax of the mean log over a dense grid,
    computed by the other kernel (collision_and_gradient)."""
    rows = np.random.default_rng(5).standard_normal((200, 128))
    grid = np.geomspace(0.3, 60.0, 4001)  # ratio 1.0013 between neighbours
    _, grad = collision_and_gradient(rows, grid)
    best = grid[int(np.argmax(np.log(grad).mean(axis=1)))]
    assert typical_row_optimum(rows) == pytest.approx(best, rel=3e-3)


def test_typical_optimum_normal_is_the_optimum_of_its_own_sample(monkeypatch):
    """Its value is typical_row_optimum of the rows drawn batch by batch from default_rng(seed),
    float for float (the blocks and the sample kept between calls change no digit)."""
    from attnscale import montecarlo as mc

    monkeypatch.setattr(mc, "TYPICAL_VALUES", 3_200)  # 100 rows of 32 keys per batch
    monkeypatch.setattr(mc, "_CHUNK_VALUES", 1_000)  # blocks of 31 rows: the last is short
    rng = np.random.default_rng(11)
    blocks = [rng.standard_normal((100, 32)) for _ in range(3)]
    value, se = mc.typical_optimum_normal(32, jacobian_frobenius, batches=3, seed=11)
    assert value == mc.typical_row_optimum(np.concatenate(blocks), jacobian_frobenius)
    assert 0 < se < 0.1 * value
    assert (value, se) == mc.typical_optimum_normal(32, jacobian_frobenius, batches=3, seed=11)  # same seed, same number
    assert mc.typical_optimum_normal(32, jacobian_frobenius, batches=3, seed=12)[0] != value  # another seed, another sample


def test_typical_optimum_normal_keeps_at_least_fifty_rows_per_batch(monkeypatch):
    from attnscale import montecarlo as mc

    monkeypatch.setattr(mc, "TYPICAL_VALUES", 10)
    rng = np.random.default_rng(mc.TYPICAL_SEED)
    rows = np.concatenate([rng.standard_normal((50, 8)) for _ in range(2)])
    assert mc.typical_optimum_normal(8, batches=2)[0] == mc.typical_row_optimum(rows)


def test_sandwich_standard_error_is_exact_for_quadratic_rows():
    """Rows f_i(x) = -c (x - m_i)^2 / 2: the mean peaks at mean(m), whose standard error is
    sd(m) / sqrt(N), and central differences of a quadratic are exact, so the sandwich formula
    must give it to rounding, whatever c."""
    from attnscale.montecarlo import _sandwich_se

    m = np.random.default_rng(3).normal(0.5, 0.2, 10_000)
    for c in (0.5, 3.0):
        se = _sandwich_se(lambda x: -c * (x - m) ** 2 / 2, float(m.mean()))
        assert se == pytest.approx(m.std(ddof=1) / np.sqrt(m.size), rel=1e-9)
    with pytest.raises(ValueError, match="not a maximum"):
        _sandwich_se(lambda x: (x - m) ** 2, float(m.mean()))


@pytest.mark.parametrize("n, measure", [(64, "gradient_l1"), (256, "jacobian_max_entry")])
def test_typical_optimum_normal_standard_error_matches_the_spread_over_seeds_and_batches(monkeypatch, n, measure):
    """The standard error is honest, judged by two routes that share nothing with it.

    Over 30 independent seeds the values spread as it says: (K - 1) s^2 / SE^2 is chi-square with
    K - 1 = 29 degrees of freedom, and must lie inside its central 99.9%. On the same samples the
    old estimator, the spread of the 8 batches' own optima over sqrt(8), pooled over the seeds
    (30 * 7 = 210 degrees of freedom), must agree with it inside the central
    99.9% of chi-square/210. The sandwich estimate itself barely moves between seeds (it uses
    every row, not 8 batches). The largest entry is a maximum over keys, kinked in alpha: the
    central differences must cope with it. Small samples (312 or 78 rows per batch) keep it fast."""
    from scipy.stats import chi2

    from attnscale import montecarlo as mc
    from attnscale import softmax as sm

    fn = getattr(sm, measure)
    monkeypatch.setattr(mc, "TYPICAL_VALUES", 20_000)
    seeds, batches = 30, 8
    results = np.array([mc.typical_optimum_normal(n, fn, seed=s) for s in range(seeds)])
    values, se = results[:, 0], results[:, 1]
    assert se.std() < 0.1 * se.mean()
    said = np.sqrt(np.mean(se**2))
    spread = values.std(ddof=1) ** 2 * (seeds - 1) / said**2
    assert chi2.ppf(0.0005, seeds - 1) < spread < chi2.ppf(0.9995, seeds - 1)
    batch_var = []
    for s in range(seeds):
        rng = np.random.default_rng(s)
        each = [mc.typical_row_optimum(rng.standard_normal((20_000 // n, n)), fn) for _ in range(batches)]
        batch_var.append(np.var(each, ddof=1) / batches)
    dof = seeds * (batches - 1)
    pooled = np.mean(batch_var) / said**2 * dof
    assert chi2.ppf(0.0005, dof) < pooled < chi2.ppf(0.9995, dof)
    if n == 64:  # and the optimum sits near the freezing point sqrt(2 log 64) = 2.88, a few percent above it
        assert abs(values.mean() / np.sqrt(2 * np.log(64)) - 1.03) < 0.03


@pytest.fixture(autouse=True, scope="module")
def _thirty_digits():
    with mp.workdps(30):
        yield


def test_row_optimum_clamps_to_the_bracket():
    # maximiser far below lo (the objective decreases on [lo, hi], and underflows to 0 there)
    assert row_optimum(np.array([[0.0, -1e6]]))[0] == pytest.approx(0.05, rel=1e-9)
    assert row_optimum(np.array([[0.0, -400.0]]))[0] == pytest.approx(0.05, rel=1e-9)
    # maximiser far above hi
    assert row_optimum(np.array([[0.0, -1e-7]]))[0] == pytest.approx(1e4, rel=1e-9)
    assert row_optimum(np.array([[0.0, -1e-7]]), lo=0.5, hi=2.0)[0] == pytest.approx(2.0, rel=1e-9)
    # an empty bracket is refused (lo < hi strictly)
    with pytest.raises(ValueError, match="need 0 < lo < hi"):
        row_optimum(np.array([[0.0, -1.0]]), lo=2.0, hi=2.0)


def _gap_density_reference(n):
    f = lambda x: n * (n - 1) * mp.npdf(x) ** 2 * mp.ncdf(x) ** (n - 2)  # noqa: E731
    t = mp.sqrt(2 * mp.log(n))
    return float(mp.quad(f, [-mp.inf, -5, t - 2, t - 1, t, t + 1, t + 2, mp.inf]))


def test_gap_density_closed_forms_and_mpmath():
    # n = 2: X1 - X2 ~ N(0, 2), so |gap| has density 2 / sqrt(4 pi) = 1 / sqrt(pi) at 0
    assert gap_density_at_zero(2) == pytest.approx(1 / np.sqrt(np.pi), rel=1e-13)
    # n = 3: 6 int phi^2 Phi = 6 E[Phi(Y)] / (2 sqrt(pi)), Y ~ N(0, 1/2), E[Phi(Y)] = 1/2
    assert gap_density_at_zero(3) == pytest.approx(3 / (2 * np.sqrt(np.pi)), rel=1e-13)
    for n in (10, 1000, 10**6):
        assert gap_density_at_zero(n) == pytest.approx(_gap_density_reference(n), rel=1e-12)


def test_rem_collision_closed_form():
    out = rem_collision(5.0, 100.0)
    assert type(out) is float
    assert out == pytest.approx(1 - np.sqrt(2 * np.log(100.0)) / 5.0, rel=1e-14)
    assert rem_collision(1.0, 100.0) == 0.0
    assert rem_collision(np.array([1.0, 5.0]), 100.0).shape == (2,)


def test_typical_row_optimum_against_a_two_key_closed_form_and_its_bounds():
    """For one row of two keys with gap 3, alpha (1 - sum p^2) = 2 alpha p (1 - p) is
    (2/3) u sech^2(u) / 2 with u = 3 alpha / 2, largest where 2 u tanh(u) = 1."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unknown solver option would warn
        got = typical_row_optimum(np.array([[0.0, 3.0]]))
    assert abs(got / _two_key_optimum(3.0) - 1) < 2e-4
    # an optimum beyond the default upper bound 60 stops at it
    edge = typical_row_optimum(np.array([[0.0, 0.01]]))
    assert abs(edge / 60.0 - 1) < 1e-3
    # an empty bracket, and a measure that is not positive (zero, not only negative), are refused
    for call, kind, message in (
        (lambda: typical_row_optimum([[0.0, 1.0]], lo=1.0, hi=1.0), ValueError, "need lo < hi"),
        (lambda: typical_row_optimum([[0.0, 1.0]], measure=lambda p, a: np.zeros(len(p))), ValueError, "measure must return one positive value per row"),
    ):
        with pytest.raises(kind) as info:
            call()
        assert str(info.value).startswith(message), str(info.value)


def _dense_collision(scores: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``sum p^2`` and ``1 - sum p^2``, the latter as ``2 sum_{i<j} p_i p_j`` (positive terms only,
    so saturated rows keep their relative accuracy)."""
    p = np.exp(alpha * (scores - scores.max(axis=1, keepdims=True)))
    p /= p.sum(axis=1, keepdims=True)
    pairs = np.triu(p[:, :, None] * p[:, None, :], k=1)
    return np.sum(p * p, axis=1), 2 * pairs.sum(axis=(1, 2))


@functools.cache
def _two_key_u() -> float:
    """The root of 2 u tanh u = 1, by mpmath at 30 digits."""
    with mp.workdps(30):
        return float(mp.findroot(lambda u: 2 * u * mp.tanh(u) - 1, 0.77))


def _two_key_optimum(gap: ArrayLike) -> ArrayLike:
    """For one row of two scores a gap D apart, alpha (1 - sum p^2) = alpha / (2 cosh^2(alpha D / 2)),
    largest at alpha = 2 u / D with 2 u tanh u = 1."""
    return 2 * _two_key_u() / gap


def test_collision_and_gradient_gives_the_same_rows_whatever_the_block_size():
    """Rows are processed ``chunk`` at a time (default 256): 600 rows (two full blocks and a
    short one) and blocks of 7 give each row's values as the dense computation does."""
    scores = np.random.default_rng(11).standard_normal((600, 5)) * 2
    alphas = np.array([0.5, 3.0])
    ref, rest = np.array([_dense_collision(scores, a) for a in alphas]).transpose(1, 0, 2)
    for chunk in (256, 7, 600, 1):
        coll, grad = collision_and_gradient(scores, alphas, chunk=chunk)
        np.testing.assert_allclose(coll, ref, rtol=1e-13, err_msg=str(chunk))
        np.testing.assert_allclose(grad, alphas[:, None] * rest, rtol=1e-12, err_msg=str(chunk))


def test_row_optimum_is_as_accurate_as_its_golden_section_steps_allow():
    """Golden-section search in log alpha: after ``iterations`` steps (80 by default) the bracket
    is ``(hi/lo)^(0.618^iterations)`` wide, so 5 steps leave the two-key optimum within that
    factor, and the default reaches it to the objective's rounding (about sqrt(eps))."""
    gaps = np.array([20.0, 3.0, 0.5, 1e-2])
    scores = np.stack([np.zeros_like(gaps), -gaps], axis=1)
    true = _two_key_optimum(gaps)
    assert true[0] < 1.05  # inside the default bracket [0.05, 1e4]
    np.testing.assert_allclose(row_optimum(scores), true, rtol=1e-6)
    # one step is allowed and stays in [lo, hi]
    one = row_optimum(scores, iterations=1)
    assert np.all((one >= 0.05) & (one <= 1e4))
    few = row_optimum(scores, lo=0.05, hi=1e4, iterations=5)
    bound = np.log(1e4 / 0.05) * 0.6180339887**5
    assert np.all(np.abs(np.log(few / true)) <= bound)
    assert np.any(np.abs(np.log(few / true)) > 1e-3)  # and five steps are not the default's eighty


def test_typical_row_optimum_accepts_a_measure_returning_python_numbers():
    """``measure`` returns "one positive value per row": a list of mpmath numbers (a measure
    computed at high precision) is such a value and is read as floats."""

    def measure(p, alpha):
        with mp.workdps(30):
            return [mp.mpf(alpha) * (1 - mp.fsum(mp.mpf(float(x)) ** 2 for x in row)) for row in p]

    got = typical_row_optimum(np.array([[0.0, 3.0]]), measure)
    # the docstring: the search is to 1e-4 in log alpha
    assert abs(np.log(got / _two_key_optimum(3.0))) < 1e-4


@pytest.mark.parametrize(
    "rows",
    [np.array([[0.0, 3.0]]), np.random.default_rng(1).standard_normal((50, 16))],
    ids=["two keys", "normal rows"],
)
def test_typical_row_optimum_searches_log_alpha_to_1e_4_and_not_finer(rows):
    """The docstring fixes the search tolerance at 1e-4 in log alpha: the bounded Brent search never
    steps closer than a third of it to its best point, so no two calls of a (possibly costly)
    ``measure`` fall within 1e-5 of each other in log alpha (measured minimum 3.3e-5)."""
    logs: list[float] = []

    def measure(p, alpha):
        logs.append(np.log(alpha))
        return alpha * (1 - np.sum(p * p, axis=-1))

    got = typical_row_optimum(rows, measure)
    x = np.array(logs)
    gaps = np.abs(x[:, None] - x[None, :])[~np.eye(x.size, dtype=bool)]
    assert gaps.min() > 1e-5
    if rows.shape == (1, 2):
        assert abs(np.log(got / _two_key_optimum(3.0))) < 1e-4


def _mp_gap_density(n: int) -> float:
    """n (n-1) int phi(x)^2 Phi(x)^(n-2) dx by mpmath quadrature, with Phi^(n-2) written as
    exp((n-2) log1p(-Q(x))) so that 20 digits resolve Q ~ 1/n for any n, and the range cut
    into quarters of a unit around sqrt(2 log n), where the mass is."""
    with mp.workdps(20):
        N = mp.mpf(n)
        c = mp.log(N) + mp.log(N - 1) - mp.log(2 * mp.pi)
        top = mp.sqrt(2 * mp.log(N))
        pts = sorted({mp.mpf(-12)} | {top + k * mp.mpf("0.25") for k in range(-16, 17)} | {top + 12})
        return float(mp.quad(lambda x: mp.exp(c - x * x + (N - 2) * mp.log1p(-mp.ncdf(-x))), pts))


@pytest.mark.parametrize(
    "n",
    [350_000_000, 10**40, 5084 * 10**138, 10**300, 10**308, int(np.finfo(float).max)],
    ids=["3.5e8", "1e40", "5.084e141", "1e300", "1e308", "largest float"],
)
def test_gap_density_matches_mpmath_to_the_requested_1e_11(n):
    """The integral is asked of QUADPACK to 1e-11 relative (epsrel, epsabs = 0); the function meets
    it (measured errors 7e-16 to 1.3e-13 at these n; before Phi(x)^(n-2) was written through
    Phi(-x) for x > 5, log_ndtr's -0.0 beyond x = 37.5 put 1e308 off by 7e-8). With SciPy's default epsabs or epsrel the result at n = 3.5e8 is off by 4e-10; with the breakpoints placed at
    sqrt(3 log n) (32) it is off by 1.5e-11 at n = 5.084e141; without breakpoints (38, 45) the
    quadrature misses the narrow peak near sqrt(2 log n) = 37 at n = 1e300 and returns 0."""
    assert abs(gap_density_at_zero(n) / _mp_gap_density(n) - 1) < 1e-11


def test_row_optimum_places_the_two_key_maximiser_to_its_documented_3e_8():
    """The docstring's accuracy: the objective is flat at its maximum, so the golden-section result
    sits within about 3e-8 of the two-key closed form alpha = 2 u / D (2 u tanh u = 1), not
    within the bracket's 2e-16 (measured: at most 2.4e-8 over these 400 gaps, 2.65e-8 over 2000)."""
    gaps = _two_key_optimum(np.geomspace(5e3, 0.1, 400))  # optima from 0.1 to 5e3, inside [0.05, 1e4]
    rows = np.stack([np.zeros_like(gaps), -gaps], axis=1)
    got = row_optimum(rows)
    rel = np.abs(got / _two_key_optimum(gaps) - 1)
    assert rel.max() <= 3e-8, rel.max()
    assert np.median(rel) > 1e-12  # not exact: the flat maximum leaves rounding-level noise, as stated
