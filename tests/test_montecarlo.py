"""Monte Carlo kernels against straightforward references."""

import mpmath as mp
import numpy as np
import pytest

from attnscale.montecarlo import collision_and_gradient, gap_density_at_zero, rem_collision, row_optimum
from attnscale.softmax import gradient_l1, softmax


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


def test_rem_collision():
    n = np.e**8  # alpha_c = 4
    assert rem_collision(2.0, n) == 0.0
    np.testing.assert_allclose(rem_collision(8.0, n), 0.5, rtol=1e-12)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: collision_and_gradient(np.ones(5), [1.0]), "scores must be a 2-d array"),
        (lambda: collision_and_gradient(np.ones((2, 1)), [1.0]), "n >= 2"),
        (lambda: collision_and_gradient(np.ones((2, 3)), [[1.0]]), "alphas must be 1-d"),
        (lambda: collision_and_gradient(np.ones((2, 3)), [-1.0]), "alphas must be > 0"),
        (lambda: row_optimum(np.ones((2, 3)), lo=2.0, hi=1.0), "need 0 < lo < hi"),
        (lambda: gap_density_at_zero(1), "n must be an integer >= 2"),
        (lambda: rem_collision(1.0, 1.0), "n must be > 1"),
        (lambda: collision_and_gradient(np.full((2, 3), np.nan), [1.0]), "scores must be finite"),
    ],
)
def test_bad_input(call, words):
    with pytest.raises(ValueError) as info:
        call()
    assert words in str(info.value)


def test_typical_row_optimum_matches_a_dense_grid():
    """The bounded search agrees with the argmax of the mean log over a dense grid,
    computed by the other kernel (collision_and_gradient)."""
    from attnscale.montecarlo import typical_row_optimum

    rows = np.random.default_rng(5).standard_normal((200, 128))
    grid = np.geomspace(0.3, 60.0, 4001)  # ratio 1.0013 between neighbours
    _, grad = collision_and_gradient(rows, grid)
    best = grid[int(np.argmax(np.log(grad).mean(axis=1)))]
    assert typical_row_optimum(rows) == pytest.approx(best, rel=3e-3)


def test_typical_row_optimum_rejects_a_measure_that_is_not_positive():
    from attnscale.montecarlo import typical_row_optimum

    rows = np.random.default_rng(5).standard_normal((10, 8))
    with pytest.raises(ValueError, match="measure"):
        typical_row_optimum(rows, lambda p, a: -np.ones(p.shape[0]))


@pytest.mark.parametrize("n", [10**40])
def test_gap_density_for_astronomical_n_against_mpmath(n):
    """Past n ~ 1e31 the largest score passes 12: the integral must follow it (mpmath
    quadrature of the same integral over the whole line, with 25 digits beyond those of n:
    Phi(x)^(n-2) needs 1 - Phi(x) ~ 1/n resolved)."""
    with mp.workdps(len(str(n)) + 25):
        N = mp.mpf(n)
        f = lambda x: N * (N - 1) * mp.npdf(x) ** 2 * mp.ncdf(x) ** (N - 2)
        top = mp.sqrt(2 * mp.log(N))
        ref = mp.quad(f, [-mp.inf, top - 3, top - 1, top, top + 1, top + 3, mp.inf])
    assert abs(gap_density_at_zero(n) / float(ref) - 1) < 1e-8


def test_gap_density_refuses_lengths_beyond_the_float_range_naming_n():
    """An integer n above the largest float cannot be integrated in floats: a ValueError names n
    (it was Python's OverflowError from float(n))."""
    with pytest.raises(ValueError, match=r"^n must be at most the largest float"):
        gap_density_at_zero(10**309)


# ---- typical_optimum_normal: the book's one sampled value of the typical-row optimum ----------


def test_typical_optimum_normal_is_the_optimum_of_its_own_sample(monkeypatch):
    """Its value is typical_row_optimum of the rows drawn batch by batch from default_rng(seed),
    float for float (the blocks and the sample kept between calls change no digit)."""
    from attnscale import montecarlo as mc
    from attnscale.softmax import jacobian_frobenius

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
