"""Mutation follow-up for the length arm (attnscale.training.lengths) and the gradient
check of chapter 10 (attnscale.training.analysis.finite_difference_error).

What is pinned, and against what:

* ``length_transfer`` returns the fields chapter 10 reads from the stored file (``n``,
  ``d``, ``alphas``, ...): a tiny fresh run must have exactly the fields of a stored cell
  (the reference is chapters/data/training_lengths.json, read with the json module), and
  its ``n``, ``d`` and training scales must be the hand values 1, log2(n) / 9 and ln n.
* ``load_lengths`` reads the file faithfully: walked side by side with ``json.loads`` of
  the same file, every dict has the same keys, every list of numbers comes back as an
  array of the same values, and every other value is unchanged.
* ``finite_difference_error`` runs on the model the chapter describes (two seeds, scales
  0.7, 1.7 and 3, d = 6, four examples of n = 5 keys), reports a planted gradient error on
  the documented scale (relative to max(1, |difference quotient|)), and perturbs each
  model's weights away from the initial value the models of a seed share, so a backward
  pass that used another model's weights is caught (references: hand-written numbers and
  planted wrong gradients built from the library's own correct ``loss_and_grads``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from attnscale import training as tr
from attnscale.training import analysis as an
from attnscale.training import length_transfer, load_lengths

STORED = Path(__file__).resolve().parents[1] / "chapters" / "data" / "training_lengths.json"
SMALLEST = {"steps": 1, "seeds": 1, "eval_size": 4, "validation_size": 4, "grid": 3}


@pytest.fixture(scope="module")
def tiny():
    return length_transfer(8, 6, **SMALLEST)


def test_a_fresh_length_run_has_the_fields_of_a_stored_cell(tiny):
    """Chapter 10 reads c["n"], c["d"], c["alphas"], c["short"], c["calibrated"], ... of
    the stored cells, which the runner writes from length_transfer's result."""
    raw = json.loads(STORED.read_text())
    assert set(tiny) == set(raw["cells"][0])


def test_a_fresh_length_run_reports_its_length_width_and_training_scales(tiny):
    assert (tiny["n"], tiny["d"], tiny["factor"]) == (8, 6, 4)
    assert tiny["trained"] == ["1", "log512 n", "ln n"]
    np.testing.assert_allclose(tiny["alphas"], [1.0, 3 / 9, math.log(8)], rtol=1e-14)


def _same(loaded, raw, where="cell"):
    """Walk a loaded value and its raw JSON together."""
    if isinstance(raw, dict):
        assert isinstance(loaded, dict) and set(loaded) == set(raw), (where, sorted(set(loaded) ^ set(raw)))
        for key in raw:
            _same(loaded[key], raw[key], f"{where}[{key!r}]")
    elif isinstance(raw, list) and raw and not any(isinstance(x, str) for x in raw):  # numbers, or lists of numbers
        assert isinstance(loaded, np.ndarray), where
        np.testing.assert_array_equal(loaded, np.array(raw, dtype=float), err_msg=where)
    else:
        assert loaded == raw and type(loaded) is type(raw), where


def test_load_lengths_gives_back_exactly_the_stored_fields():
    raw = json.loads(STORED.read_text())
    data = load_lengths(STORED)
    assert set(data) == set(raw)
    assert len(data["cells"]) == len(raw["cells"]) == 6
    for got, want in zip(data["cells"], raw["cells"]):
        _same(got, want, f"cell {want['n']}, {want['d']}")
        assert got["trained"] == ["1", "log512 n", "ln n"]


def test_the_gradient_check_runs_on_the_documented_model(monkeypatch):
    """Two seeds, three scales 0.7, 1.7 and 3, d = 6, four examples of n = 5 keys (the
    chapter's prose and the docstring)."""
    right = an.loss_and_grads
    seen = []

    def spy(params, batch, scales, kind):
        seen.append((np.array(scales, dtype=float), {k: w.shape for k, w in params.items()}, batch["K"].shape))
        return right(params, batch, scales, kind)

    monkeypatch.setattr(an, "loss_and_grads", spy)
    tr.finite_difference_error("dot")
    assert len(seen) == 1 + 2 * 2 * 2 * 3 * 6 * 6
    for scales, shapes, keys in seen:
        assert scales.tolist() == [0.7, 1.7, 3.0]
        assert shapes == {"Wq": (2, 3, 6, 6), "Wk": (2, 3, 6, 6)}
        assert keys == (2, 4, 5, 6)


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
