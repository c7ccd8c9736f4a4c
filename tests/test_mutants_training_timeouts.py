"""Mutants of attnscale.training that mutmut timed out under load and that survived when run
again alone (tools/mutate_recheck.py --timeouts; tests/MUTANTS.md).

What is pinned, and against what:

* The refusals of held_out_sets, init_params, sample_batch, sweep_scales, tune and
  identity_alignment begin with the name of the argument refused and give its minimum
  (the library's promise for bad input; tests/test_bad_input.py only checks that the name
  occurs somewhere, which "XXseedsXX" also satisfies). Reference: messages written out by
  hand.
* The smallest accepted values are accepted: d = 2 keys' width in held_out_sets and
  sweep_scales, an eval_size of 1, a validation_size of 1 in tune, noise 0 in sample_batch.
  Reference: the documented minima (n, d >= 2; sizes >= 1; noise >= 0).
* identity_alignment is a cosine per matrix over the last two axes: for a batch of matrices
  each entry is -tr(G) / (sqrt(d) ||G||_F) of its own matrix (hand-worked: -I gives 1, I
  gives -1, [[0, 1], [0, 0]] gives 0), a single matrix is accepted, a non-square one refused.
* tune slides a window of rates exactly ``slides`` times while the best rate sits on its
  edge, reports the slides as integers, returns no weights unless asked, and trains with
  every setting it is given: with ``slides = 0`` its curves are those of train called
  directly with the same settings and window (another entry point, the reference).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from expect import whole

from attnscale.training import DATA, compare_arms, evaluation_steps, forward, held_out_sets, identity_alignment, init_params
from attnscale.training import lattice_rate, load_sweep, rate_window, sample_batch, sweep_scales, train, tune
from attnscale.training.sweep import SWEEP

CFG = {"seeds": 2, "batch": 2, "noise": 1.0, "c": 2}
TINY = {"steps": 3, "seeds": 1, "batch": 2, "eval_size": 2, "validation_size": 1, "validation_every": 1, "dense": 3, "c": 2}


def _rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("call, message", [
    (lambda: held_out_sets(0, 4, 3, 1, 2, CFG), "factor must be an integer >= 2, got 1"),
    (lambda: held_out_sets(0, 4, 3, 2, 0, CFG), "eval_size must be an integer >= 1, got 0"),
    (lambda: init_params(_rng(), 0, 1, 2), "seeds must be an integer >= 1, got 0"),
    (lambda: init_params(_rng(), 1, 0, 2), "models must be an integer >= 1, got 0"),
    (lambda: sample_batch(_rng(), 0, 1, 2, 2), "seeds must be an integer >= 1, got 0"),
    (lambda: sample_batch(_rng(), 1, 0, 2, 2), "batch must be an integer >= 1, got 0"),
    (lambda: sweep_scales(1, 32, "dot"), "n must be an integer >= 2, got 1"),
    (lambda: sweep_scales(16, 1, "dot"), "d must be an integer >= 2, got 1"),
    (lambda: tune(0, n=4, d=2, kind="dot", alphas=[-1.0], **TINY), "alphas must be > 0, got -1.0"),
    (lambda: tune(0, n=4, d=2, kind="dot", alphas=[], **TINY), "alphas must have at least one entry along its last axis, got shape (0,)"),
    (lambda: tune(0, n=4, d=2, kind="dot", alphas=[1.0], **{**TINY, "validation_size": 0}),
     "validation_size must be an integer >= 1, got 0"),
])
def test_a_refusal_begins_with_the_argument_and_gives_its_minimum(call, message):
    with pytest.raises(ValueError, match=whole(message)):
        call()


def test_identity_alignment_refuses_a_non_finite_or_shapeless_g_by_name():
    with pytest.raises(ValueError, match=r"^G must be finite, got nan"):
        identity_alignment(np.array([[1.0, np.nan], [0.0, 1.0]]))
    for bad in (np.ones(3), np.ones((2, 3)), np.ones((4, 3, 2))):
        with pytest.raises(ValueError, match=whole(f"G must end in a square matrix, got shape {bad.shape}")):
            identity_alignment(bad)
    with pytest.raises(ValueError, match=whole("G has a zero matrix: its direction is undefined")):
        identity_alignment(np.stack([np.eye(2), np.zeros((2, 2))]))


def test_identity_alignment_is_a_cosine_per_matrix():
    # hand-worked: -(-I) is I itself (cosine 1); -I is opposite (-1); a nilpotent step has no trace (0);
    # diag(2, 0): -tr = -2, sqrt(d) ||G|| = sqrt(2) * 2, so -1/sqrt(2)
    G = np.stack([-np.eye(3), np.eye(3), np.diag([2.0, 0.0, 0.0]), np.triu(np.ones((3, 3)), 1)])
    np.testing.assert_allclose(identity_alignment(G), [1.0, -1.0, -1 / np.sqrt(3), 0.0], rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(identity_alignment(G.reshape(2, 2, 3, 3)), [[1.0, -1.0], [-1 / np.sqrt(3), 0.0]], rtol=1e-15, atol=1e-15)
    assert identity_alignment(-2 * np.eye(2)) == pytest.approx(1.0, rel=1e-15)  # a single matrix: a 0-d result


def test_the_smallest_documented_values_are_accepted():
    sets = held_out_sets(0, 4, 2, 2, 1, CFG)  # d = 2 and eval_size = 1 are allowed
    assert sets["short"][0]["K"].shape == (2, 1, 4, 2)
    assert sweep_scales(16, 2, "dot")[0] == sweep_scales(16, 32, "dot")[0]
    batch = sample_batch(_rng(), 1, 3, 4, 2, noise=0.0)  # noise 0: the query is the queried key
    np.testing.assert_array_equal(batch["x"], np.take_along_axis(batch["K"], batch["j"][..., None, None], axis=2)[:, :, 0])
    out = tune(0, n=4, d=2, kind="dot", alphas=[1.0], slides=0, **TINY)  # validation_size = 1
    assert out["val_loss"].size > 0 and np.isfinite(out["val_loss"]).all()


@pytest.mark.parametrize("slides", [0, 1, 2])
def test_tune_slides_an_edge_window_exactly_the_allowed_number_of_times(slides):
    """Three Adam steps at these sizes are best at the highest rate of every window, so each
    window slides up as often as allowed; its rates are then the first window's moved up by
    that many lattice steps."""
    out = tune(0, n=4, d=2, kind="dot", alphas=[1.0, 4.0], optimizer="adam", slides=slides, **TINY)
    assert out["slides"].tolist() == [slides, slides]
    assert np.issubdtype(out["slides"].dtype, np.integer)
    first = [rate_window("adam", "dot", a, {**SWEEP, **TINY}) for a in (1.0, 4.0)]
    assert out["lrs"].tolist() == [[lattice_rate(k + slides) for k in row] for row in first]
    assert "params" not in out


def test_tune_without_slides_is_train_with_the_same_settings():
    settings = {**TINY, "noise": 0.3, "c": 3, "batch": 3}
    out = tune(2, n=5, d=3, kind="dot", alphas=[1.0, 2.0], optimizer="sgd", slides=0, **settings)
    windows = [rate_window("sgd", "dot", a, {**SWEEP, **settings}) for a in (1.0, 2.0)]
    ref = train(2, n=5, d=3, kind="dot", alphas=[1.0, 2.0], lrs=[[lattice_rate(k) for k in row] for row in windows], seeds=1,
                steps=3, batch=3, noise=0.3, c=3, optimizer="sgd", eval_steps=evaluation_steps(3, SWEEP["resolution"], 3),
                eval_size=2, validation_size=1, validation_every=1)
    for key in ("loss", "val_loss", "accuracy"):
        np.testing.assert_allclose(out[key], ref[key], rtol=1e-12, atol=0)


def _stored_cells(name: str) -> dict:
    return {(c["optimizer"], c["kind"], c["n"], c["d"]): c for c in load_sweep(DATA / name)["cells"]}


@pytest.mark.parametrize("opt", ["adam", "sgd"])
def test_the_pairs_inside_the_grid_are_those_whose_best_rates_avoid_both_ends(opt):
    """Cosine cells train 3 scales at 4 rates, so an edge is index 0 or 3 (the number of
    rates, not of scales); counted here from the stored file's best_lr and lrs by hand."""
    raw = [c for c in json.loads((DATA / f"training_{opt}.json").read_text())["cells"] if c["kind"] == "cosine"]
    a, b = raw[0]["labels"].index("64"), raw[0]["labels"].index("√d")
    expected = 0
    for c in raw:
        rates = len(c["lrs"][0])
        ends = (0, rates - 1)
        if c["best_lr"][a] not in ends and c["best_lr"][b] not in ends:
            expected += len(c["steps_to_target"][a])
    tests, pairs = compare_arms(_stored_cells(f"training_{opt}.json"), opt, "cosine", "64", "√d")
    assert len(pairs["inside"][0]) == expected == 30  # no stored cosine best rate sits at an end


def test_a_cell_may_give_its_rates_as_one_shared_grid():
    """train accepts one 1-d grid of rates shared by every scale; a cell holding its rates that
    way compares exactly as the same cell with the grid repeated per scale."""
    cells = _stored_cells("training_adam.json")
    shared = {k: ({**c, "lrs": np.asarray(c["lrs"])[0]} if k[1] == "dot" else c) for k, c in cells.items()}
    assert all(np.ptp(np.asarray(cells[k]["lrs"]), axis=0).max() == 0 for k in cells if k[1] == "dot")  # rows are equal
    one, _ = compare_arms(shared, "adam", "dot", "2.5", "1")
    ref, _ = compare_arms(cells, "adam", "dot", "2.5", "1")
    assert one == ref


def _unit_batch():
    """Weights the identity and keys, query and values with exact entries: every key and the
    query of norm exactly 1 (a legal input: only a zero vector has no cosine)."""
    params = {"Wq": np.eye(2)[None, None], "Wk": np.eye(2)[None, None]}
    K = np.array([[[[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]]])  # (seeds 1, batch 1, n 3, d 2)
    data = {"K": K, "V": np.eye(3)[None, None], "x": np.array([[[0.6, 0.8]]]), "j": np.array([[2]]), "target": np.eye(3)[None, None, 2]}
    return params, data


def test_cosine_scores_of_unit_vectors_are_their_dot_products():
    params, data = _unit_batch()
    out = forward(params, data, 1.0, "cosine")
    np.testing.assert_allclose(out["s"][0, 0, 0], [0.6, 0.8, 1.0], rtol=1e-15)  # hand-worked cosines


@pytest.mark.parametrize("zero", ["key", "query"])
def test_a_zero_key_or_query_has_no_cosine_and_is_refused(zero):
    params, data = _unit_batch()
    if zero == "key":
        data["K"] = data["K"].copy()
        data["K"][0, 0, 1] = 0.0
    else:
        data["x"] = np.zeros_like(data["x"])
    with pytest.raises(FloatingPointError, match=whole("a query or key is exactly zero; its cosine is undefined")):
        forward(params, data, 1.0, "cosine")
