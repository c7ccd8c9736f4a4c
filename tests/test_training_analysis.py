"""Chapter 10's analyses and displays (attnscale.training.analysis and .report), each
against a route that does not share its code: direct counts, a planted wrong gradient,
the stored sweep, hand-built cells."""

from __future__ import annotations

import numpy as np
import pytest

from attnscale import training as tr
from attnscale.training import analysis as an


@pytest.fixture(scope="module")
def cells():
    sweeps = [tr.load_sweep(tr.DATA / f"training_{opt}.json") for opt in tr.SWEEP["lrs"]]
    return {(c["optimizer"], c["kind"], c["n"], c["d"]): c for s in sweeps for c in s["cells"]}


@pytest.mark.parametrize("kind", tr.KINDS)
def test_finite_differences_match_the_backward_pass(kind):
    worst, count = tr.finite_difference_error(kind)
    assert count == 2 * 2 * 3 * 6 * 6  # two matrices of (seeds, scales, d, d)
    assert worst < 1e-8


def test_finite_differences_catch_a_wrong_gradient(monkeypatch):
    right = an.loss_and_grads

    def wrong(params, batch, scales, kind):
        loss, grads, extra = right(params, batch, scales, kind)
        return loss, {k: 1.01 * g for k, g in grads.items()}, extra

    monkeypatch.setattr(an, "loss_and_grads", wrong)
    assert tr.finite_difference_error("dot")[0] > 1e-4


def test_identity_map_by_hand():
    acc, loss = tr.identity_map(16, 32, "dot", [0.5, 1.0, 4.0])
    # the same examples, scored by hand: s_i = x.K_i / sqrt(d), the argmax is the scale-free retrieval
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(2):
        b = tr.sample_batch(rng, 1, 500, 16, 32)
        s = np.einsum("sbd,sbnd->sbn", b["x"], b["K"])
        hits += int(np.sum(np.argmax(s, axis=-1) == b["j"]))
    assert acc == hits / 1000
    assert loss.shape == (3,) and np.all(np.diff(loss) < 0)  # sharper attention retrieves better here
    with pytest.raises(ValueError, match="examples"):
        tr.identity_map(16, 32, "dot", [1.0], examples=700)


def test_among_fastest_on_a_hand_built_cell():
    cell = {"steps_to_target": np.array([[40, 44, 80], [20, 40, 40], [60, 60, np.inf], [np.inf, np.inf, np.inf]])}
    among, med = tr.among_fastest(cell)
    assert med.tolist() == [44, 40, 60, np.inf]
    assert among.tolist() == [True, True, False, False]  # within 10% of 40: up to 44
    assert tr.among_fastest(cell, within=0)[0].tolist() == [False, True, False, False]
    assert tr.among_fastest(cell, within=0.5)[0].tolist() == [True, True, True, False]
    # when no scale got there, all are equally (not) fast
    assert tr.among_fastest({"steps_to_target": np.full((2, 3), np.inf)})[0].tolist() == [True, True]


def test_compare_arms_counts_directly(cells):
    tests, pairs = tr.compare_arms(cells, "adam", "dot", "2.5", "1")
    a, b = pairs["speed"]
    keys = [("adam", "dot", n, d) for n in tr.SWEEP["ns"] for d in tr.SWEEP["ds"]]
    ia, ib = (cells[keys[0]]["labels"].index(x) for x in ("2.5", "1"))
    direct_a = np.concatenate([cells[k]["steps_to_target"][ia] for k in keys])
    direct_b = np.concatenate([cells[k]["steps_to_target"][ib] for k in keys])
    assert np.array_equal(a, direct_a) and np.array_equal(b, direct_b)
    r = tests["speed"]
    assert (r.later, r.earlier, r.tied) == (int(np.sum(a > b)), int(np.sum(a < b)), int(np.sum(a == b)))
    edges = np.concatenate([np.repeat(cells[k]["best_lr"][i] in (0, cells[k]["lrs"].shape[-1] - 1), tr.SWEEP["seeds"]) for k in keys for i in (ia,)])
    edges_b = np.concatenate([np.repeat(cells[k]["best_lr"][ib] in (0, cells[k]["lrs"].shape[-1] - 1), tr.SWEEP["seeds"]) for k in keys])
    assert tests["inside"].pairs == int(np.sum(~(edges | edges_b)))
    with pytest.raises(ValueError, match="not a scale"):
        tr.compare_arms(cells, "adam", "dot", "3.0", "1")
    with pytest.raises(ValueError, match="lacks"):
        tr.compare_arms({}, "adam", "dot", "2.5", "1")


def test_initial_alignment_reproduces_the_stored_first_loss(cells):
    c = cells[("adam", "dot", 16, 32)]
    align, loss, first = tr.initial_alignment(c)
    assert align.shape == loss.shape == first.shape == (len(c["alphas"]), tr.SWEEP["seeds"])
    np.testing.assert_allclose(loss, np.asarray(c["loss"])[:, :, 0], rtol=1e-5)  # the sweep stores six digits
    assert np.all(np.abs(align) <= 1)
    with pytest.raises(ValueError, match="dot-score"):
        tr.initial_alignment(cells[("adam", "cosine", 16, 32)])


def test_text_formats():
    assert (tr.p_text(1e-5), tr.p_text(0.0431), tr.p_text(1.0)) == ("1.0e-05", "0.043", "1")
    assert (tr.steps_text(np.inf), tr.steps_text(0.0), tr.steps_text(40.0), tr.steps_text(-20)) == ("never", "0", "+40", "-20")
    assert (tr.loss_text(-0.0312), tr.loss_text(2e-4), tr.loss_text(0.0)) == ("-0.031", "+2.0e-04", "+0.000")


def test_summary_rows_on_a_hand_built_cell():
    cell = {"labels": ["1", "α*(n)"], "alphas": [1.0, 1.7], "lrs": [0.01, 0.1, 1.0], "best_lr": [0, 1],
            "steps_to_target": np.array([[20.0, 40.0, np.inf], [20.0, 20.0, 60.0]]), "final_loss": np.array([[0.1, 0.2, 0.3], [0.1, 0.1, 0.1]])}
    rows = tr.summary_rows(cell)
    assert rows[0] == ("1", 1.0, "0.01 †", "2/3", "40", "20–never", "0.200 ± 0.100", "—")
    assert rows[1] == ("α*(n)", 1.7, "0.1", "3/3", "20", "20–60", "0.100 ± 0.000", "—")
    # with accuracy curves (scales, seeds, evaluations), the last evaluation's mean and s.d.
    curves = np.zeros((2, 3, 4))
    curves[0, :, -1] = [0.7, 0.8, 0.9]
    curves[1, :, -1] = 1.0
    rows = tr.summary_rows({**cell, "accuracy": curves})
    assert rows[0][-1] == "0.800 ± 0.100" and rows[1][-1] == "1.000 ± 0.000"
    # one window of rates per scale: the best rate is read from the scale's own row
    assert tr.summary_rows({**cell, "lrs": [[0.01, 0.03, 0.1], [0.3, 1.0, 3.0]]})[1][2] == "1"
    assert tr.scale_name(cell, 0) == "α = 1" and tr.scale_name(cell, 1) == "α*(n) = 1.7"


def test_tables_and_figure(cells):
    md = tr.results_table(cells, "adam", "dot")
    assert md.count("\n") == 1 + 6 * 5  # header, rule and five scales in each of six cells
    tests = {("adam", "2.5", "1"): tr.compare_arms(cells, "adam", "dot", "2.5", "1")[0]}
    holm = {k: 0.5 for k in tests}
    assert "| adam | 2.5 − 1 |" in tr.speed_table(tests, holm) and "| adam | 2.5 − 1 |" in tr.loss_table(tests, holm)
    # no best rate at an edge: the column of the test without edge cells would repeat it, and is left out
    assert "edge cells left out" not in tr.speed_table(tests, holm)
    # with one cell's pairs dropped it appears, with the smaller count
    (key, t), = tests.items()
    a, b = tr.compare_arms(cells, "adam", "dot", "2.5", "1")[1]["speed"]
    dropped = {key: {**t, "inside": tr.paired_comparison(a[5:], b[5:], resamples=100)}}
    table = tr.speed_table(dropped, holm)
    assert "edge cells left out" in table and "of 25," in table
    with pytest.raises(ValueError, match="holm_p"):
        tr.speed_table(tests, {})
    fig = tr.loss_curves(cells, "sgd", "cosine", "t")
    assert len(fig.axes) == 6
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_bad_steps_and_rates_are_refused():
    for bad in ([[np.nan, 20.0], [40.0, 60.0]], [[-20.0, 20.0]], [20.0, 40.0]):
        with pytest.raises(ValueError, match="steps_to_target"):
            tr.among_fastest({"steps_to_target": bad})
    cell = {"labels": ["1"], "alphas": [1.0], "lrs": [0.01, 0.1], "best_lr": [2], "steps_to_target": [[20.0, 40.0]], "final_loss": [[0.1, 0.2]]}
    with pytest.raises(ValueError, match="best_lr"):
        tr.summary_rows(cell)
    with pytest.raises(ValueError, match="best_lr"):
        tr.summary_rows(dict(cell, best_lr=[-1]))
    assert tr.steps_text(-np.inf) == "ref. never" and tr.steps_text(np.inf) == "never"
