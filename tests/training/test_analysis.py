"""attnscale.training.analysis: comparing arms cell by cell, the gradient check by finite
differences, and the grid-edge and pairing rules, on hand-built cells.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnscale import training as tr
from attnscale.training import DATA, analysis as an, compare_arms, load_sweep
from expect import named


LABELS = ["8", "2.5", "1"]  # the arm "2.5" is scale 1 of each cell, the reference "1" scale 2


RATES = [0.001, 0.003, 0.01, 0.03]  # four rates: indices 0 and 3 are the grid's edges


# (arm, reference) best-rate index per cell, in the sweep's order (16, 32), (16, 64), (64, 32), ...
BEST = [(1, 2), (0, 1), (1, 3), (0, 3), (2, 2), (2, 1)]


def _cells(best=BEST):
    """Six cells of two seeds; steps spelled as Python integers."""
    cells = {}
    for i, (n, d) in enumerate((n, d) for n in tr.SWEEP["ns"] for d in tr.SWEEP["ds"]):
        a, r = best[i]
        cells[("adam", "dot", n, d)] = {
            "labels": list(LABELS), "alphas": [8.0, 2.5, 1.0], "lrs": [list(RATES)] * 3, "best_lr": [1, a, r],
            "steps_to_target": [[500, 500], [40 + i, 60 + i], [40 + i, 50 + i]],
            "final_loss": [[9.0, 9.0], [0.5 + i / 100, 0.2], [0.3, 0.4 + i / 100]],
        }
    return cells


def test_compare_arms_gives_back_the_steps_and_losses_it_compared():
    tests, pairs = tr.compare_arms(_cells(), "adam", "dot", "2.5", "1")
    assert set(pairs) == {"speed", "loss", "inside"} == set(tests)
    arm_steps = [40, 60, 41, 61, 42, 62, 43, 63, 44, 64, 45, 65]
    ref_steps = [40, 50, 41, 51, 42, 52, 43, 53, 44, 54, 45, 55]
    np.testing.assert_array_equal(pairs["speed"][0], arm_steps)
    np.testing.assert_array_equal(pairs["speed"][1], ref_steps)
    np.testing.assert_allclose(pairs["loss"][0], [0.5, 0.2, 0.51, 0.2, 0.52, 0.2, 0.53, 0.2, 0.54, 0.2, 0.55, 0.2], rtol=1e-15)
    np.testing.assert_allclose(pairs["loss"][1], [0.3, 0.4, 0.3, 0.41, 0.3, 0.42, 0.3, 0.43, 0.3, 0.44, 0.3, 0.45], rtol=1e-15)
    # both best rates inside the grid in cells 0, 4 and 5 only
    np.testing.assert_array_equal(pairs["inside"][0], [40, 60, 44, 64, 45, 65])
    np.testing.assert_array_equal(pairs["inside"][1], [40, 50, 44, 54, 45, 55])
    # a step count is a float (a never is +inf), however the cell spells it
    assert all(x.dtype == np.float64 for x in (*pairs["speed"], *pairs["inside"], *pairs["loss"]))
    # the tests count the same pairs: each seed 0 tied, each seed 1 later by 10 steps
    assert (tests["speed"].later, tests["speed"].earlier, tests["speed"].tied) == (6, 0, 6)
    assert (tests["inside"].later, tests["inside"].earlier, tests["inside"].tied) == (3, 0, 3)
    # final loss: seed 0 higher (0.5.. against 0.3), seed 1 lower (0.2 against 0.4..)
    assert (tests["loss"].later, tests["loss"].earlier, tests["loss"].tied) == (6, 6, 0)


def test_compare_arms_has_no_inside_test_when_every_pair_has_a_rate_at_an_edge():
    tests, pairs = tr.compare_arms(_cells(best=[(0, 1), (1, 3), (3, 0), (0, 3), (3, 2), (2, 0)]), "adam", "dot", "2.5", "1")
    assert tests["inside"] is None
    assert pairs["inside"][0].size == pairs["inside"][1].size == 0
    assert tests["speed"].pairs == 12


def _refusal(kind, cells=None, **kwargs):
    args = {"cells": _cells() if cells is None else cells, "optimizer": "adam", "kind": "dot", "arm": "2.5", "reference": "1"}
    args |= kwargs
    with pytest.raises(kind) as err:
        tr.compare_arms(**args)
    return str(err.value)


def test_compare_arms_shows_the_scales_of_the_cells_when_refusing_an_arm():
    their = "; their scales are ['8', '2.5', '1']"
    assert _refusal(ValueError, arm="3") == "arm '3' is not a scale of the cells" + their
    assert _refusal(ValueError, reference="3") == "reference '3' is not a scale of the cells" + their


@pytest.mark.parametrize("field", ["labels", "steps_to_target", "final_loss", "best_lr"])
def test_compare_arms_refuses_a_cell_that_lacks_a_field(field):
    cells = _cells()
    del cells[("adam", "dot", 64, 32)][field]
    assert _refusal(ValueError, cells=cells) == f"cells entry lacks the entries [{field!r}]"


def test_compare_arms_refuses_a_cell_that_is_not_a_dict():
    cells = _cells()
    cells[("adam", "dot", 256, 64)] = [1, 2]
    assert _refusal(TypeError, cells=cells) == "cells entry must be a dict, got list"


@pytest.mark.parametrize("kind", tr.KINDS)
def test_the_gradient_check_passes_the_backward_pass_on_every_partial_of_a_model_drawn_from_its_seed(kind):
    """Every partial derivative of both matrices of the six models (2 seeds x 3 scales, d = 6:
    432) agrees with its central difference to rounding noise; that noise is the model's own,
    so another seed (the default is 1) draws another model and gives another worst error."""
    worst, count = tr.finite_difference_error(kind)
    assert count == 2 * 2 * 3 * 6 * 6
    assert worst < 1e-8
    assert worst == tr.finite_difference_error(kind, seed=1)[0]
    assert worst != tr.finite_difference_error(kind, seed=2)[0]


def test_the_gradient_check_reports_an_error_relative_to_a_quotient_above_one(monkeypatch):
    """The loss multiplied by 1000 (its gradient too: still a right pair), then the
    backward pass made 1% too large: every quotient above 1 in size shows exactly the
    planted 1% (|1.01 g - g| / |g|), those below 1 less, so the worst is 0.01."""
    right = an.loss_and_grads

    def off(params, batch, scales, kind):
        loss, grads, extra = right(params, batch, scales, kind)
        return 1000 * loss, {k: 1010 * g for k, g in grads.items()}, extra

    monkeypatch.setattr(an, "loss_and_grads", off)
    worst, count = tr.finite_difference_error("dot")
    assert count == 432
    assert math.isclose(worst, 0.01, rel_tol=1e-4)


def test_compare_arms_names_the_cell_it_lacks():
    cells = {("sgd", "cosine", n, d): {} for n in (16, 64, 256) for d in (32, 64) if (n, d) != (256, 64)}
    with pytest.raises(ValueError, match=named("cells") + r" lacks \('sgd', 'cosine', 256, 64\)"):
        compare_arms(cells, "sgd", "cosine", "64", "√d")


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


@pytest.mark.parametrize("alphas", [1.0, []], ids=["a-number", "none"])
def test_identity_map_refuses_alphas_that_are_not_a_list_of_scales(alphas):
    with pytest.raises(ValueError, match=named("alphas")):
        tr.identity_map(4, 4, "dot", alphas, examples=500)


def test_among_fastest_on_the_smallest_cells_and_at_step_zero():
    among, med = tr.among_fastest({"steps_to_target": [[20.0]]})  # one scale, one seed
    assert among.tolist() == [True] and med.tolist() == [20.0]
    # reaching the target at the first evaluation (step 0) is allowed; within 10% of 0 is 0
    among, med = tr.among_fastest({"steps_to_target": [[0.0, 10.0], [0.0, 0.0]]})
    assert med.tolist() == [5.0, 0.0] and among.tolist() == [False, True]


@pytest.mark.parametrize(
    ("steps", "error"),
    [([[-20.0, 20.0]], ValueError), ("x", TypeError), (np.zeros((2, 0)), ValueError), ([20.0, 40.0], ValueError)],
    ids=["negative", "text", "no-seeds", "1-d"],
)
def test_among_fastest_refuses_steps_that_are_not_a_table_of_counts(steps, error):
    with pytest.raises(error, match=named("cell['steps_to_target']")):
        tr.among_fastest({"steps_to_target": steps})


def _stored_cells(name: str) -> dict:
    return {(c["optimizer"], c["kind"], c["n"], c["d"]): c for c in load_sweep(DATA / name)["cells"]}


def test_a_cell_may_give_its_rates_as_one_shared_grid():
    """train accepts one 1-d grid of rates shared by every scale; a cell holding its rates that
    way compares exactly as the same cell with the grid repeated per scale."""
    cells = _stored_cells("training_adam.json")
    shared = {k: ({**c, "lrs": np.asarray(c["lrs"])[0]} if k[1] == "dot" else c) for k, c in cells.items()}
    assert all(np.ptp(np.asarray(cells[k]["lrs"]), axis=0).max() == 0 for k in cells if k[1] == "dot")  # rows are equal
    one, _ = compare_arms(shared, "adam", "dot", "2.5", "1")
    ref, _ = compare_arms(cells, "adam", "dot", "2.5", "1")
    assert one == ref


@pytest.fixture(scope="module")
def cells():
    sweeps = [tr.load_sweep(tr.DATA / f"training_{opt}.json") for opt in tr.SWEEP["lrs"]]
    return {(c["optimizer"], c["kind"], c["n"], c["d"]): c for s in sweeps for c in s["cells"]}


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


def test_among_fastest_on_a_hand_built_cell():
    cell = {"steps_to_target": np.array([[40, 44, 80], [20, 40, 40], [60, 60, np.inf], [np.inf, np.inf, np.inf]])}
    among, med = tr.among_fastest(cell)
    assert med.tolist() == [44, 40, 60, np.inf]
    assert among.tolist() == [True, True, False, False]  # within 10% of 40: up to 44
    assert tr.among_fastest(cell, within=0)[0].tolist() == [False, True, False, False]
    assert tr.among_fastest(cell, within=0.5)[0].tolist() == [True, True, True, False]
    # when no scale got there, all are equally (not) fast
    assert tr.among_fastest({"steps_to_target": np.full((2, 3), np.inf)})[0].tolist() == [True, True]


def test_initial_alignment_reproduces_the_stored_first_loss(cells):
    c = cells[("adam", "dot", 16, 32)]
    align, loss, first = tr.initial_alignment(c)
    assert align.shape == loss.shape == first.shape == (len(c["alphas"]), tr.SWEEP["seeds"])
    np.testing.assert_allclose(loss, np.asarray(c["loss"])[:, :, 0], rtol=1e-5)  # the sweep stores six digits
    assert np.all(np.abs(align) <= 1)
    with pytest.raises(ValueError, match="dot-score"):
        tr.initial_alignment(cells[("adam", "cosine", 16, 32)])


@pytest.mark.parametrize("kind", tr.KINDS)
def test_a_planted_gradient_error_is_reported_relative_to_at_least_one(monkeypatch, kind):
    """Every partial derivative off by 0.5: an entry whose difference quotient is below 1
    in size shows the full 0.5 (relative to max(1, |quotient|)), so the worst is 0.5."""
    right = an.loss_and_grads

    def off(params, batch, scales, kind):
        loss, grads, extra = right(params, batch, scales, kind)
        return loss, {k: g + 0.5 for k, g in grads.items()}, extra

    monkeypatch.setattr(an, "loss_and_grads", off)
    worst, count = tr.finite_difference_error(kind)
    assert count == 432
    assert math.isclose(worst, 0.5, rel_tol=1e-6)


@pytest.mark.parametrize("kind", tr.KINDS)
def test_a_backward_pass_using_another_models_weights_is_caught(monkeypatch, kind):
    """The models of a seed start from one shared draw; the check perturbs each of them
    away from it, so a backward pass that took the first model's weights for all three
    (the loss itself right) no longer agrees with the central differences."""
    right = an.loss_and_grads

    def shared(params, batch, scales, kind):
        loss, _, extra = right(params, batch, scales, kind)
        first = {k: np.repeat(w[:, :1], w.shape[1], axis=1) for k, w in params.items()}
        return loss, right(first, batch, scales, kind)[1], extra

    monkeypatch.setattr(an, "loss_and_grads", shared)
    assert tr.finite_difference_error(kind)[0] > 1e-4
