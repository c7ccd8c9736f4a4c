"""What chapter 10's statistics and its printed text promise, pinned on inputs small
enough to work out by hand (the survivors of the mutation run over attnscale.training,
statistics and report; see tests/MUTANTS.md).

- final_loss_summary: reduces the last axis (seeds) of an input of any rank, accepts a
  loss of exactly 0, and names the first offending value. References: per-row means,
  sample deviations and medians written out by hand.
- within_strata_correlation: the p-value's floor 1/(1 + permutations) that the chapter
  quotes ("p at its floor 1/10001"); the permutation p-value against the exact p-value of
  the same statistic, enumerated over every within-stratum permutation with
  scipy.stats.rankdata and itertools (so a null that mixes strata or drops the
  identity's tie shows); the documented default seed 0, reproducibility, and that the
  answer depends only on each stratum's own units in their order, not on how the strata
  are interleaved in the input; and the exact messages for bad x, y, strata,
  permutations and seed.
- identity_map: accepts the smallest task (n = d = 2, seed 0), and its accuracy equals a
  hand count of argmax x.K_i (dot scores) or argmax cos(x, K_i) (cosine scores) over the
  same examples; exact messages for bad arguments.
- among_fastest and its step check: a one-scale, one-seed cell, a step of 0, an empty
  cell, and the messages.
- initial_alignment: the alignment of the held-out gradient and of the first training
  batch's gradient against a route that does not share its code: the training loop's own
  SGD step (at rates 1 and 2 from the same start, which gives the gradient and the start)
  and loss_and_grads over the joined held-out rows, with G = W_q^-1 dL/dW_k and the cosine
  -tr(G) / (sqrt(d) ||G||_F) written out with NumPy.
- p_text, steps_text, loss_text: the documented thresholds at their boundaries (0.001,
  5e-4, p = 0) and the errors for a bool or a complex number.
- summary_rows and results_table: the grid-edge dagger at the top of the grid, a scale no
  seed got to ("never", median "—"), the exact Markdown header, rule and rows the chapter
  displays, and the messages for a bad cell.
- best_rates, holm, lr_exponent, mean_interval, paired_comparison, steps_to_target: the
  exact messages for a bad argument, each naming the argument and (holm) the first value
  outside [0, 1]; a best_lr that is not one index per scale and a cell whose alphas are all
  equal are refused rather than answered (a slab of rates; a slope of 0/0).
- paired_comparison: both ends of the interval for prob_later are bootstrap replications
  (Efron's percentile interval: the B alpha/2-th and B (1 - alpha/2)-th of the B ordered
  replications), so with no ties they are multiples of 1/pairs. Reference: that lattice.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from expect import whole
from scipy.stats import rankdata

from attnscale import training as tr
from attnscale.training.stats import final_loss_summary, within_strata_correlation

INF = math.inf


# --- final_loss_summary -------------------------------------------------------------------


def test_final_loss_summary_reduces_the_seed_axis_of_any_rank():
    # rows worked out by hand: [1, 2, 3] mean 2, s.d. 1, median 2; [0, 0, 3] mean 1, s.d. sqrt 3, median 0;
    # [2, 2, 2] mean 2, s.d. 0; [0, 4, 8] mean 4, s.d. 4, median 4
    loss = np.array([[[1.0, 2.0, 3.0], [0.0, 0.0, 3.0]], [[2.0, 2.0, 2.0], [0.0, 4.0, 8.0]]])
    s = final_loss_summary(loss)
    assert {k: np.shape(val) for k, val in s.items()} == dict.fromkeys(("mean", "std", "median", "min", "max"), (2, 2))
    assert s["mean"].tolist() == [[2.0, 1.0], [2.0, 4.0]]
    assert s["std"] == pytest.approx(np.array([[1.0, math.sqrt(3)], [0.0, 4.0]]), rel=1e-15, abs=0)
    assert s["median"].tolist() == [[2.0, 0.0], [2.0, 4.0]]
    assert s["min"].tolist() == [[1.0, 0.0], [2.0, 0.0]] and s["max"].tolist() == [[3.0, 3.0], [2.0, 8.0]]
    # one row of seeds: every summary is a number
    one = final_loss_summary([0.1, 0.3, 0.2])
    assert float(one["mean"]) == pytest.approx(0.2, rel=1e-15) and float(one["std"]) == pytest.approx(0.1, rel=1e-12)
    assert (float(one["median"]), float(one["min"]), float(one["max"])) == (0.2, 0.1, 0.3)


def test_final_loss_summary_accepts_a_loss_of_zero():
    s = final_loss_summary([[0.0, 0.0], [0.0, 0.5]])
    assert s["mean"].tolist() == [0.0, 0.25] and s["min"].tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("loss", "error", "message"),
    [
        ([0.1, np.nan], ValueError, "final_loss must be finite, got nan in array of shape (2,) [0.1, nan]"),
        ([0.5, 0.0, -0.2, -0.3], ValueError, "final_loss must be >= 0, got -0.2"),
        ([[0.1], [0.2]], ValueError, "final_loss must end in an axis of at least 2 seeds, got shape (2, 1)"),
    ],
)
def test_final_loss_summary_names_the_offending_value(loss, error, message):
    with pytest.raises(error, match=whole(message)):
        final_loss_summary(loss)


# --- within_strata_correlation ------------------------------------------------------------


def _monotone(strata: int = 5, size: int = 5):
    """Perfectly rank-correlated units in every stratum: no shuffle but the identity (or
    all reversals) reaches |rho| = 1, a chance of 2 / 120^5 per shuffle for five of five."""
    x = np.tile(np.arange(size, dtype=float), strata) + np.repeat(10.0 * np.arange(strata), size)
    return x, 3.0 * x + 1.0, np.repeat(np.arange(strata), size)


def test_a_correlation_no_shuffle_reaches_has_the_floor_p_value():
    x, y, strata = _monotone()
    r = within_strata_correlation(x, y, strata)
    assert r.stratified == pytest.approx(1.0, rel=1e-15) and r.per_stratum == pytest.approx((1.0,) * 5, rel=1e-15)
    assert r.p_value == 1 / 10001  # the default 10,000 shuffles, as the chapter quotes
    assert within_strata_correlation(x, y, strata, permutations=100).p_value == 1 / 101  # 100 is allowed


def _exact_p(x, y, strata):
    """The statistic and its exact permutation p-value, every within-stratum permutation of y
    enumerated: centred ranks per stratum (scipy), sum u w / sqrt(sum u^2 sum w^2)."""
    x, y, strata = (np.asarray(a) for a in (x, y, strata))
    groups = [np.flatnonzero(strata == k) for k in np.unique(strata)]
    cx = [rankdata(x[g]) - (len(g) + 1) / 2 for g in groups]
    cy = [rankdata(y[g]) - (len(g) + 1) / 2 for g in groups]
    norm = math.sqrt(sum(a @ a for a in cx) * sum(b @ b for b in cy))
    observed = sum(a @ b for a, b in zip(cx, cy)) / norm
    null = np.array(
        [sum(a @ b[list(p)] for a, b, p in zip(cx, cy, perms)) / norm for perms in itertools.product(*(itertools.permutations(range(len(g))) for g in groups))]
    )
    return observed, float(np.mean(np.abs(null) >= abs(observed) - 1e-12))


@pytest.mark.parametrize(
    ("x", "y", "strata"),
    [
        # two strata of two: the shuffles give rho 1, 0, 0, -1, so p = 1/2 (the identity counts)
        ([1, 2, 1, 2], [1, 2, 1, 2], [0, 0, 1, 1]),
        # strata of 2, 3 and 4 units (288 permutations), ties in y
        ([3, 1, 2, 5, 4, 9, 7, 8, 6], [1, 2, 3, 1, 3, 2, 4, 1, 2], [0, 0, 0, 1, 1, 2, 2, 2, 2]),
        # string labels, strata interleaved
        ([2, 1, 4, 3, 5, 6, 0.5, 8, 7], [10, 30, 20, 50, 40, 15, 12, 99, 3], ["b", "c", "a", "b", "a", "c", "a", "c", "c"]),
    ],
)
def test_the_permutation_p_value_agrees_with_the_exact_one(x, y, strata):
    observed, exact = _exact_p(x, y, strata)
    r = within_strata_correlation(x, y, strata)
    assert r.stratified == pytest.approx(observed, rel=1e-12, abs=1e-15)
    # (1 + K) / (1 + P) with K ~ Binomial(P, exact): within four standard errors and the +1
    assert abs(r.p_value - exact) <= 4 * math.sqrt(exact * (1 - exact) / 10000) + 1 / 10001


def test_the_default_seed_is_zero_and_the_p_value_is_reproducible():
    x, y, strata = [3, 1, 2, 5, 4, 9, 7, 8, 6], [1, 2, 3, 1, 3, 2, 4, 1, 2], [0, 0, 0, 1, 1, 2, 2, 2, 2]
    default = within_strata_correlation(x, y, strata)
    assert default.p_value == within_strata_correlation(x, y, strata, seed=0).p_value
    assert default.p_value == within_strata_correlation(x, y, strata).p_value
    # the seed matters for these data, so the equalities above say something
    assert within_strata_correlation(x, y, strata, seed=1).p_value != default.p_value


def test_the_answer_does_not_depend_on_how_the_strata_are_interleaved():
    """Only each stratum's own units, in their order, enter: the same units listed stratum
    by stratum give the same p-value (so cells can be pooled in any order)."""
    rng = np.random.default_rng(4)
    strata = rng.integers(0, 3, size=40)
    x = rng.normal(size=40)
    y = x + 4 * rng.normal(size=40)
    grouped = np.argsort(strata, kind="stable")  # by stratum, input order kept within each
    r = within_strata_correlation(x, y, strata, permutations=2000)
    s = within_strata_correlation(x[grouped], y[grouped], strata[grouped], permutations=2000)
    assert 0.001 < r.p_value < 0.999  # not at a floor or a ceiling, where any order agrees
    assert (s.p_value, s.stratified, s.per_stratum) == (r.p_value, r.stratified, r.per_stratum)
    assert s.pooled == pytest.approx(r.pooled, rel=1e-14)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (
            ([np.nan, 2, 3, 4], [1, 2, 3, 4], [0, 0, 1, 1]),
            {},
            ValueError,
            "x must hold numbers or +inf (never reached), got nan in array of shape (4,) [nan, 2.0, 3.0, 4.0]",
        ),
        (
            ([1, 2, 3, 4], [1, -INF, 3, 4], [0, 0, 1, 1]),
            {},
            ValueError,
            "y must hold numbers or +inf (never reached), got -inf in array of shape (4,) [1.0, -inf, 3.0, 4.0]",
        ),
        (([1, 2, 3, 4], "y", [0, 0, 1, 1]), {}, TypeError, "y must be a real number or array of real numbers, got 'y'"),
        (([1, 2, 3, 4], [2, 1, 4, 3], "ab"), {}, TypeError, "strata must be an array of labels, one per unit, got 'ab'"),
        (([1, 2, 3, 4], [2, 1, 4, 3], None), {}, TypeError, "strata must be an array of labels, one per unit, got None"),
        (
            ([1, 2, 3, 4], [2, 1, 4, 3], [np.nan, 0, 1, 1]),
            {},
            TypeError,
            "strata must hold numbers or strings (not NaN or objects), got array of shape (4,) [nan, 0.0, 1.0, 1.0]",
        ),
        (([1, 2, 3, 4], [2, 1, 4, 3], [0, None, 1, 1]), {}, TypeError, "strata must hold numbers or strings (not NaN or objects), got objects"),
        (([1, 2, 3, 4], [2, 1, 4, 3], [0, 1]), {}, ValueError, "strata must hold one label per unit (4), got 2"),
        (([1, 2, 3, 4], [2, 1, 4, 3], [0, 0, 1, 1]), {"permutations": 99}, ValueError, "permutations must be an integer >= 100, got 99"),
        (([1, 2, 3, 4], [2, 1, 4, 3], [0, 0, 1, 1]), {"seed": -1}, ValueError, "seed must be an integer >= 0, got -1"),
        (([5, 5, 5, 5], [2, 1, 4, 3], [0, 0, 1, 1]), {}, ValueError, "x and y must each take at least two different values"),
        (([1, 2, 3, 4], [7, 7, 7, 7], [0, 0, 1, 1]), {}, ValueError, "x and y must each take at least two different values"),
        (([1, 2, 1, 2], [1, 1, 2, 2], [0, 0, 1, 1]), {}, ValueError, "x and y: no stratum has both varying, so no within-stratum correlation is defined"),
    ],
)
def test_within_strata_correlation_messages(args, kwargs, error, message):
    with pytest.raises(error, match=whole(message)):
        within_strata_correlation(*args, **kwargs)


# --- identity_map -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", tr.KINDS)
def test_identity_map_on_the_smallest_task_against_a_hand_count(kind):
    """n = d = 2 and seed 0 are allowed; W_q = W_k = I retrieves the key of largest x.K_i
    (dot scores) or largest cos(x, K_i) (cosine scores), whatever the scale."""
    acc, loss = tr.identity_map(2, 2, kind, [1.0, 3.0], examples=500, seed=0)
    b = tr.sample_batch(np.random.default_rng(0), 1, 500, 2, 2)
    score = np.einsum("sbd,sbnd->sbn", b["x"], b["K"])
    if kind == "cosine":
        score = score / np.linalg.norm(b["K"], axis=-1)
    assert acc == np.sum(np.argmax(score, axis=-1) == b["j"]) / 500
    assert loss.shape == (2,) and np.all(np.isfinite(loss))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n": 1}, ValueError, "n must be an integer >= 2, got 1"),
        ({"d": 1}, ValueError, "d must be an integer >= 2, got 1"),
        ({"alphas": 1.0}, ValueError, "alphas must have at least one axis, got a scalar 1.0"),
        ({"alphas": []}, ValueError, "alphas must have at least one entry along its last axis, got shape (0,)"),
        ({"alphas": [1.0, 0.0]}, ValueError, "alphas must be > 0, got 0.0"),
        ({"examples": 400}, ValueError, "examples must be an integer >= 500, got 400"),
        ({"seed": -1}, ValueError, "seed must be an integer >= 0, got -1"),
    ],
)
def test_identity_map_messages(kwargs, error, message):
    args = {"n": 4, "d": 4, "kind": "dot", "alphas": [1.0], "examples": 500} | kwargs
    with pytest.raises(error, match=whole(message)):
        tr.identity_map(**args)


# --- among_fastest ------------------------------------------------------------------------


def test_among_fastest_on_the_smallest_cells_and_at_step_zero():
    among, med = tr.among_fastest({"steps_to_target": [[20.0]]})  # one scale, one seed
    assert among.tolist() == [True] and med.tolist() == [20.0]
    # reaching the target at the first evaluation (step 0) is allowed; within 10% of 0 is 0
    among, med = tr.among_fastest({"steps_to_target": [[0.0, 10.0], [0.0, 0.0]]})
    assert med.tolist() == [5.0, 0.0] and among.tolist() == [False, True]


@pytest.mark.parametrize(
    ("cell", "kwargs", "error", "message"),
    [
        ({}, {}, ValueError, "cell lacks the entries ['steps_to_target']"),
        ({"steps_to_target": [[20.0, 40.0]]}, {"within": "w"}, TypeError, "within must be a real number, got 'w'"),
        (
            {"steps_to_target": [[-20.0, 20.0]]},
            {},
            ValueError,
            "cell['steps_to_target'] must hold steps >= 0 or +inf (never reached), got array of shape (1, 2) [-20.0, 20.0]",
        ),
        ({"steps_to_target": "x"}, {}, TypeError, "cell['steps_to_target'] must be a real number or array of real numbers, got 'x'"),
        ({"steps_to_target": np.zeros((2, 0))}, {}, ValueError, "cell['steps_to_target'] must be a non-empty (scales, seeds) array, got shape (2, 0)"),
    ],
)
def test_among_fastest_messages(cell, kwargs, error, message):
    with pytest.raises(error, match=whole(message)):
        tr.among_fastest(cell, **kwargs)


# --- initial_alignment --------------------------------------------------------------------


def _alignment(G):
    """-tr(G) / (sqrt(d) ||G||_F) over the last two axes, written out."""
    d = G.shape[-1]
    return -np.trace(G, axis1=-2, axis2=-1) / (math.sqrt(d) * np.sqrt(np.sum(G * G, axis=(-2, -1))))


def test_initial_alignment_against_the_training_loop_and_the_weight_gradients():
    S = tr.SWEEP
    cell = {"seed": 11, "alphas": [0.5, 2.0], "n": 4, "d": 3, "kind": "dot"}
    align, loss, first = tr.initial_alignment(cell)
    # one SGD step at rates 1 and 2 from the same start and batch: W1 = W0 - g and W2 = W0 - 2g
    out = tr.train(
        cell["seed"],
        n=4,
        d=3,
        kind="dot",
        alphas=cell["alphas"],
        lrs=[1.0, 2.0],
        seeds=S["seeds"],
        steps=1,
        batch=S["batch"],
        c=S["c"],
        noise=S["noise"],
        optimizer="sgd",
        eval_size=S["eval_size"],
        return_params=True,
    )
    one = {k: w[:, 0::2] for k, w in out["params"].items()}
    two = {k: w[:, 1::2] for k, w in out["params"].items()}
    Wq0, Wk0 = 2 * one["Wq"] - two["Wq"], 2 * one["Wk"] - two["Wk"]
    # dL/dW_k = W_q G, so G = W_q^-1 dL/dW_k
    np.testing.assert_allclose(first, _alignment(np.linalg.solve(Wq0, one["Wk"] - two["Wk"])).T, rtol=0, atol=1e-12)
    # the held-out set: eval_size rows per seed from default_rng([seed, 1]), drawn in chunks of the batch
    rng = np.random.default_rng([cell["seed"], 1])
    rows = [tr.sample_batch(rng, S["seeds"], S["batch"], 4, 3, S["c"], S["noise"]) for _ in range(S["eval_size"] // S["batch"])]
    joined = {k: np.concatenate([r[k] for r in rows], axis=1) for k in rows[0]}
    held_loss, grads, _ = tr.loss_and_grads({"Wq": Wq0, "Wk": Wk0}, joined, cell["alphas"], "dot")
    np.testing.assert_allclose(align, _alignment(np.linalg.solve(Wq0, grads["Wk"])).T, rtol=0, atol=1e-12)
    np.testing.assert_allclose(loss, held_loss.T, rtol=1e-13)
    np.testing.assert_allclose(loss, out["loss"][:, 0, :, 0], rtol=1e-13)  # the loop's loss at step 0


def test_initial_alignment_names_a_cell_without_its_entries():
    with pytest.raises(ValueError, match=whole("cell lacks the entries ['seed', 'alphas', 'n', 'd', 'kind']")):
        tr.initial_alignment({})


# --- p_text, steps_text, loss_text --------------------------------------------------------


def test_text_formats_at_their_thresholds():
    # two significant digits from 0.001 up, exponent form below it, and 0 allowed
    assert (tr.p_text(0.001), tr.p_text(0.000999), tr.p_text(0.0)) == ("0.001", "1.0e-03", "0.0e+00")
    # three decimals from 5e-4 up (in size), two significant digits below
    assert (tr.loss_text(0.0005), tr.loss_text(-0.0005), tr.loss_text(0.000499)) == ("+0.001", "-0.001", "+5.0e-04")
    assert (tr.steps_text(INF), tr.steps_text(-INF), tr.steps_text(np.float64(-3.0))) == ("never", "ref. never", "-3")


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: tr.p_text("x"), TypeError, "p must be a real number, got 'x'"),
        (lambda: tr.p_text(1.5), ValueError, "p must lie in [0, 1], got 1.5"),
        (lambda: tr.loss_text("x"), TypeError, "x must be a real number, got 'x'"),
        (lambda: tr.steps_text(True), TypeError, "x must be a real number or an infinity, got True"),
        (lambda: tr.steps_text(1 + 2j), TypeError, "x must be a real number or an infinity, got (1+2j)"),
        (lambda: tr.steps_text(None), TypeError, "x must be a real number or an infinity, got None"),
    ],
)
def test_text_format_messages(call, error, message):
    with pytest.raises(error, match=whole(message)):
        call()


# --- summary_rows and results_table -------------------------------------------------------


def _cell(**changes):
    cell = {
        "labels": ["0.25", "1", "8"],
        "alphas": [0.25, 1.0, 8.0],
        "lrs": [0.01, 0.1, 1.0],
        "best_lr": [2, 1, 0],
        "steps_to_target": [[20.0, 40.0, 60.0], [20.0, INF, INF], [INF, INF, INF]],
        "final_loss": [[0.1, 0.2, 0.3], [0.5, 0.5, 0.5], [1.0, 2.0, 3.0]],
    }
    return cell | changes


def test_summary_rows_mark_the_top_of_the_grid_and_scales_that_never_got_there():
    assert tr.summary_rows(_cell()) == [
        ("0.25", 0.25, "1 †", "3/3", "40", "20–60", "0.200 ± 0.100", "—"),  # best rate the last of the grid
        ("1", 1.0, "0.1", "1/3", "—", "20–never", "0.500 ± 0.000", "—"),  # median never: a dash
        ("8", 8.0, "0.01 †", "0/3", "—", "never", "2.000 ± 1.000", "—"),  # no seed got there
    ]


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ({}, "cell lacks the entries ['labels', 'alphas', 'lrs', 'best_lr', 'steps_to_target', 'final_loss']"),
        (
            _cell(steps_to_target=[[20.0, -1.0, 60.0], [20.0, 40.0, 60.0], [20.0, 40.0, 60.0]]),
            "cell['steps_to_target'] must hold steps >= 0 or +inf (never reached), got array of shape (3, 3) [20.0, -1.0, 60.0, 20.0, ...]",
        ),
        (_cell(best_lr=[0]), "cell['best_lr'] must hold one index into lrs (0 to 2) per scale, got [0]"),
    ],
)
def test_summary_rows_messages(cell, message):
    with pytest.raises(ValueError, match=whole(message)):
        tr.summary_rows(cell)


def test_results_table_is_the_markdown_the_chapter_displays():
    one = {"labels": ["1"], "alphas": [1.0], "lrs": [0.01, 0.1, 1.0], "best_lr": [1], "steps_to_target": [[20.0, 40.0, 60.0]], "final_loss": [[0.1, 0.2, 0.3]]}
    cells = {("adam", "dot", n, d): one for n in (16, 64, 256) for d in (32, 64)}
    assert tr.results_table(cells, "adam", "dot") == (
        "| n | d | scale | α | best lr | reached | steps to 80% (median) | range | final loss | final accuracy |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
        "| 16 | 32 | 1 | 1 | 0.1 | 3/3 | 40 | 20–60 | 0.200 ± 0.100 | — |\n"
        "| 16 | 64 | 1 | 1 | 0.1 | 3/3 | 40 | 20–60 | 0.200 ± 0.100 | — |\n"
        "| 64 | 32 | 1 | 1 | 0.1 | 3/3 | 40 | 20–60 | 0.200 ± 0.100 | — |\n"
        "| 64 | 64 | 1 | 1 | 0.1 | 3/3 | 40 | 20–60 | 0.200 ± 0.100 | — |\n"
        "| 256 | 32 | 1 | 1 | 0.1 | 3/3 | 40 | 20–60 | 0.200 ± 0.100 | — |\n"
        "| 256 | 64 | 1 | 1 | 0.1 | 3/3 | 40 | 20–60 | 0.200 ± 0.100 | — |"
    )


# --- the other statistics: messages, refusals, the bootstrap interval --------------------

_ONE_INDEX = "cell['best_lr'] must hold one index into each scale's rates (0 to 2), got "
_NEVER = " must hold numbers or +inf (never reached), got "


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        # a 2-d best_lr, a single index and a 3-d table of rates: none is one index per scale
        pytest.param(
            lambda: tr.best_rates({"lrs": [0.1, 0.3, 1.0], "best_lr": [[1]]}),
            ValueError,
            _ONE_INDEX + "[[1]] for rates of shape (3,)",
            id="best_rates-2d-index",
        ),
        pytest.param(
            lambda: tr.best_rates({"lrs": [0.1, 0.3, 1.0], "best_lr": 1}), ValueError, _ONE_INDEX + "1 for rates of shape (3,)", id="best_rates-one-index"
        ),
        pytest.param(
            lambda: tr.best_rates({"lrs": np.ones((2, 2, 3)), "best_lr": [1, 0]}),
            ValueError,
            _ONE_INDEX + "[1, 0] for rates of shape (2, 2, 3)",
            id="best_rates-3d-rates",
        ),
        pytest.param(lambda: tr.holm([]), ValueError, "p_values must hold at least one p-value", id="holm-empty"),
        pytest.param(lambda: tr.holm([0.2, 1.5]), ValueError, "p_values must be in [0, 1], got 1.5", id="holm-above-1"),
        pytest.param(lambda: tr.holm([[0.5, 1.0], [-0.25, 0.1]]), ValueError, "p_values must be in [0, 1], got -0.25", id="holm-below-0"),
        # two equal alphas: no slope to fit (the centred log alphas are all 0)
        pytest.param(
            lambda: tr.lr_exponent([{"alphas": [2.0, 2.0], "lrs": [0.1, 0.3, 1.0], "best_lr": [0, 2]}]),
            ValueError,
            "cells: each cell must hold at least two different alphas",
            id="lr_exponent-equal-alphas",
        ),
        pytest.param(lambda: tr.mean_interval([1.0, 2.0, 3.0], level="0.9"), TypeError, "level must be a real number, got '0.9'", id="mean_interval-level"),
        pytest.param(
            lambda: tr.paired_comparison([1.0, np.nan], [1.0, 2.0]), ValueError, "a" + _NEVER + "nan in array of shape (2,) [1.0, nan]", id="paired-a"
        ),
        pytest.param(
            lambda: tr.paired_comparison([1.0, 2.0], [-INF, 2.0]), ValueError, "b" + _NEVER + "-inf in array of shape (2,) [-inf, 2.0]", id="paired-b"
        ),
        pytest.param(lambda: tr.steps_to_target([0, 1], [0.1, 0.9], "0.8"), TypeError, "target must be a real number, got '0.8'", id="steps_to_target-target"),
    ],
)
def test_statistics_messages(call, error, message):
    with pytest.raises(error, match=whole(message)):
        call()


def test_the_effect_size_interval_ends_are_bootstrap_replications():
    """Eight pairs, five later and three earlier, no ties: a resample's prob_later is a count
    of later pairs over 8, and so must be each end of a percentile interval, whatever the seed."""
    a, b = [1.0] * 5 + [0.0] * 3, [0.5] * 8
    for seed in range(30):
        r = tr.paired_comparison(a, b, seed=seed)
        assert r.prob_later == 5 / 8
        ends = 8 * np.array(r.prob_later_ci)
        assert np.array_equal(ends, np.round(ends)), (seed, r.prob_later_ci)
        assert 0 <= ends[0] <= 5 <= ends[1] <= 8, (seed, r.prob_later_ci)
