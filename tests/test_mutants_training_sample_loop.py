"""Survivors of a uniform sample of the mutation run over attnscale.training (see
tests/MUTANTS.md): the refusals of train, compare_arms, held_out_sets and load_lengths
pinned to their whole messages, and four behaviours of the model and its training loop.

What is pinned, and against what:

* train refuses a non-finite ``weight_decay`` or ``noise`` and a scalar or empty
  ``alphas`` with a message that begins with the argument's name (the library's promise;
  tests/test_bad_input.py only checks that the name occurs somewhere). Reference: the
  messages written out by hand.
* compare_arms names the *first* cell it lacks, in the sweep's order (n = 16, 64, 256
  outer, d = 32, 64 inner), also when only one cell is missing. Reference: the keys
  written out by hand.
* held_out_sets takes the shortest length the model allows, n = 2 (as train and
  length_transfer do), and refuses n = 1 by that minimum; and its rows honour ``noise``:
  with noise 0 the query of every row *is* its queried key (the task of
  attnscale.training.model: x = (K_j + sigma eps) / sqrt(1 + sigma^2)). Reference: the
  documented task and minimum.
* load_lengths gives the window slides back as integers, as tune returns them and
  load_sweep reads them (signed counts of lattice steps, printed with ``:+d``), and a
  missing file points to the make target that writes it (``make sweep-lengths``, the
  Makefile's target). References: a hand-written file, the message written out by hand.
* forward uses dot scores when no kind is given (its signature's default). Reference: a
  hand-worked example, p = (3/4, 1/4) and loss 1/16.
* train: a diverged model "keeps its last weights from then on", even when another
  model diverges later, and ``diverged_at`` is the first step it left the range.
  Reference: the same run stopped just before the divergence (common random numbers:
  the first t steps do not depend on how many follow), and constancy of its curves.
* the cosine training step works through the batch in pieces of at most 2^20 key
  numbers (model.PIECE, 8 MB), so its memory does not grow with the batch beyond the
  batch's own data. Reference: the size of the keys of every model that the added
  examples would need if they were not cut into pieces.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from expect import peak_bytes, whole

from attnscale.training import SWEEP, compare_arms, forward, held_out_sets, load_lengths, train

ROOT = Path(__file__).resolve().parents[1]
#: the smallest valid run (tests/test_bad_input.py's valid call of train)
TINY = {"n": 4, "d": 4, "kind": "dot", "alphas": [1.0], "lrs": [1e-2], "seeds": 1, "steps": 1, "eval_size": 4}


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"weight_decay": math.nan}, ValueError, "weight_decay must be finite, got nan in nan"),
        ({"weight_decay": "x"}, TypeError, "weight_decay must be a real number or array of real numbers, got 'x'"),
        ({"noise": math.inf}, ValueError, "noise must be finite, got inf in inf"),
        ({"noise": None}, TypeError, "noise must be a real number or array of real numbers, got None"),
        ({"alphas": 1.0}, ValueError, "alphas must have at least one axis, got a scalar 1.0"),
        ({"alphas": []}, ValueError, "alphas must have at least one entry along its last axis, got shape (0,)"),
    ],
    ids=["weight_decay-nan", "weight_decay-text", "noise-inf", "noise-none", "alphas-scalar", "alphas-empty"],
)
def test_train_refuses_a_bad_setting_with_a_message_that_begins_with_its_name(change, error, message):
    with pytest.raises(error, match=whole(message)):
        train(0, **{**TINY, **change})


def test_compare_arms_names_the_first_cell_it_lacks():
    assert (SWEEP["ns"], SWEEP["ds"]) == ([16, 64, 256], [32, 64])  # the order the messages below follow
    with pytest.raises(ValueError, match=whole("cells lacks ('adam', 'dot', 16, 32) (optimizer 'adam', kind 'dot')")):
        compare_arms({}, "adam", "dot", "2.5", "1")
    # only the last cell missing: it is named (a single missing cell is the usual case)
    cells = {("sgd", "cosine", n, d): {} for n in (16, 64, 256) for d in (32, 64) if (n, d) != (256, 64)}
    with pytest.raises(ValueError, match=whole("cells lacks ('sgd', 'cosine', 256, 64) (optimizer 'sgd', kind 'cosine')")):
        compare_arms(cells, "sgd", "cosine", "64", "√d")


CFG = {"seeds": 2, "batch": 2, "c": 1, "noise": 0.0}


def test_held_out_sets_take_two_keys_and_refuse_one_by_that_minimum():
    sets = held_out_sets(0, 2, 3, 2, 3, CFG)
    assert {name: [chunk["K"].shape for chunk in rows] for name, rows in sets.items()} == {
        "short": [(2, 2, 2, 3), (2, 1, 2, 3)], "long": [(2, 2, 4, 3), (2, 1, 4, 3)],
        "choose_long": [(2, 2, 4, 3), (2, 1, 4, 3)], "choose_short": [(2, 2, 2, 3), (2, 1, 2, 3)]}
    with pytest.raises(ValueError, match=whole("n must be an integer >= 2, got 1")):
        held_out_sets(0, 1, 3, 2, 3, CFG)


@pytest.mark.parametrize("noise", [0.0, 0.5])
def test_held_out_rows_see_the_query_through_the_configured_noise(noise):
    """With noise sigma the query is (K_j + sigma eps) / sqrt(1 + sigma^2): at sigma = 0 it
    is exactly the queried key; at sigma = 0.5 it is not, and the noise it carries,
    x sqrt(1.25) - K_j = 0.5 eps, has the spread of 0.5 standard normals."""
    sets = held_out_sets(3, 4, 5, 2, 40, {**CFG, "batch": 16, "noise": noise})
    for rows in sets.values():
        for chunk in rows:
            key = np.take_along_axis(chunk["K"], chunk["j"][..., None, None], axis=2)[:, :, 0]
            if noise == 0.0:
                np.testing.assert_array_equal(chunk["x"], key)
            else:  # 2 seeds x 16 (or 8) rows x 5 coordinates of N(0, 1) noise each
                eps = (chunk["x"] * math.sqrt(1 + noise**2) - key) / noise
                assert abs(np.std(eps) - 1) < 0.3, np.std(eps)


def test_load_lengths_gives_the_window_slides_back_as_integers(tmp_path):
    path = tmp_path / "lengths.json"
    path.write_text('{"cells": [{"trained": ["1", "log512 n", "ln n"], "best_lr": [0, 2, 1], "slides": [-1, 0, 2]}]}')
    cell = load_lengths(path)["cells"][0]
    for key, want in (("best_lr", [0, 2, 1]), ("slides", [-1, 0, 2])):
        assert np.issubdtype(cell[key].dtype, np.integer), (key, cell[key].dtype)
        assert cell[key].tolist() == want
    assert [f"{s:+d}" for s in cell["slides"]] == ["-1", "+0", "+2"]
    # and so in the stored file
    for c in load_lengths(ROOT / "chapters" / "data" / "training_lengths.json")["cells"]:
        assert np.issubdtype(c["slides"].dtype, np.integer) and np.issubdtype(c["best_lr"].dtype, np.integer)


def test_load_lengths_points_a_missing_file_to_the_make_target_that_writes_it(tmp_path):
    missing = tmp_path / "none.json"
    with pytest.raises(FileNotFoundError, match=whole(f"path: no stored results at {missing}; run `make sweep-lengths` to produce them")):
        load_lengths(missing)


def test_forward_uses_dot_scores_by_default():
    """W_q = W_k = I, d = 2, keys e_1 and e_2, query x = (sqrt(2) ln 3, 0): dot scores
    s = x.K_i / sqrt(2) = (ln 3, 0), so p = softmax(s) = (3/4, 1/4) at alpha = 1, the output
    y = p . V = 3/4 with values (1, 0), and the loss (3/4 - 1)^2 = 1/16 against the target 1.
    (Cosine scores would be (1, 0), p_1 = e / (e + 1).)"""
    eye = np.eye(2)[None, None]
    params = {"Wq": eye.copy(), "Wk": eye.copy()}
    data = {"K": np.eye(2)[None, None], "V": np.array([[[[1.0], [0.0]]]]), "x": np.array([[[math.sqrt(2) * math.log(3), 0.0]]]),
            "target": np.array([[[1.0]]]), "j": np.array([[0]])}
    f = forward(params, data, 1.0)
    np.testing.assert_allclose(f["p"].ravel(), [0.75, 0.25], rtol=1e-14)
    np.testing.assert_allclose(f["loss"].ravel(), [1 / 16], rtol=1e-13)


#: Adam at rate 3 on a learned scale: both seeds' gains leave [-ln LIMIT, ln LIMIT], seed 0
#: at step 8 and seed 1 at step 9; the model at rate 0.3 never diverges
DIVERGING = {"n": 4, "d": 2, "kind": "dot", "alphas": [1.0], "lrs": [0.3, 3.0], "seeds": 2, "batch": 4, "eval_size": 4,
             "eval_every": 1, "learn_scale": True, "return_params": True}


def test_a_diverged_model_keeps_its_last_weights_when_another_diverges_later():
    run = train(0, steps=30, **DIVERGING)
    at = run["diverged_at"][0]  # (lrs, seeds)
    assert at[0].tolist() == [0, 0]
    first, second = int(at[1, 0]), int(at[1, 1])
    assert 0 < first < second < 30  # the case at issue: another model diverges after this one
    for s, t in ((0, first), (1, second)):
        # from the last step before it diverged on, its curves do not move
        for key in ("loss", "accuracy", "half_l1", "scale"):
            curve = run[key][0, 1, s]
            assert (curve[t - 1 :] == curve[t - 1]).all(), (s, key, curve[t - 1 :])
        # its final weights are the ones it had at step t - 1
        before = train(0, steps=t - 1, **DIVERGING)
        assert before["diverged_at"][0, 1, s] == 0
        for key in ("Wq", "Wk", "log_gain"):
            np.testing.assert_array_equal(run["params"][key][s, 1], before["params"][key][s, 1], err_msg=f"seed {s}, {key}")
        # and the step it first left the range does not depend on how long the run goes on
        assert train(0, steps=t, **DIVERGING)["diverged_at"][0, 1, s] == t


def _peak_of_a_cosine_step(batch: int) -> float:
    """Peak traced memory (bytes, above what was held before) of one cosine training step:
    n = 2, d = 2, 64 models."""
    return peak_bytes(train, 0, n=2, d=2, kind="cosine", alphas=list(np.arange(1.0, 9.0)),
                      lrs=list(np.arange(1, 9) * 1e-3), seeds=1, steps=1, batch=batch, eval_size=4)


def test_a_cosine_step_works_in_pieces_whatever_the_number_of_models():
    """Cosine scores form the keys of every model, (seeds, batch, n, models, d) numbers;
    the step works through the batch in pieces of at most 2^20 of them. With 64 models of
    width 2 and n = 2 that is 4096 examples a piece, so going from 8192 to 16384 examples
    adds pieces, not memory: the peak may grow by the added batch itself (about 2 MB),
    never by the 16 MB the added examples' keys would take whole."""
    keys_of_the_added_examples = 8192 * 2 * 64 * 2 * 8  # bytes: (seeds, batch, n, models, d) float64
    grown = _peak_of_a_cosine_step(16384) - _peak_of_a_cosine_step(8192)
    assert grown < keys_of_the_added_examples, grown / 2**20
