"""Unexamined survivors of the mutation run over attnscale.training.analysis (see
tests/MUTANTS.md): compare_arms on hand-built cells, its refusals pinned to their whole
messages, and the gradient check's arguments, model and error scale.

What is pinned, and against what:

* ``compare_arms`` returns, beside the tests, the arrays it compared under the three
  names the tests have (``speed``, ``loss``, ``inside``; chapter 10 reads
  ``pairs[k]["loss"]``): the steps of the two scales, their final losses, and the steps of
  the pairs whose two best rates both lie inside the rate grid, pooled over the six cells
  in the sweep's order. Steps come back as floats (a never is ``+inf``) even when a cell
  spells them as integers. When no pair lies inside, ``inside`` is None (the docstring).
  Reference: six hand-built cells and the arrays and counts written out by hand.
* ``compare_arms`` refuses a bad argument with a message that begins with its name (the
  library's promise; tests/test_bad_input.py only checks that the name occurs somewhere)
  and ends with the type it got; a cell that lacks a field is refused by name
  (``cells entry``), not met with a KeyError. Reference: the messages written out by hand.
* ``finite_difference_error`` refuses ``h <= 0`` and a negative seed by name, takes seed
  0, and with its default seed (1) draws, from ``np.random.default_rng(seed)``, the
  initial weights (as ``init_params`` draws them), then a perturbation of 0.1 times a
  standard normal per weight, then the batch. Reference: the same draws made here from a
  generator of the same seed.
* ``finite_difference_error`` measures an error relative to ``max(1, |difference
  quotient|)``: a backward pass 1% off on a loss scaled so that the quotients exceed 1 is
  reported as 0.01. Reference: the planted 1%, hand-worked.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from attnscale import training as tr
from attnscale.training import analysis as an

# ----------------------------------------------------------------------------- compare_arms

LABELS = ["8", "2.5", "1"]  # the arm "2.5" is scale 1 of each cell, the reference "1" scale 2
RATES = [0.001, 0.003, 0.01, 0.03]  # four rates: indices 0 and 3 are the grid's edges
# (arm, reference) best-rate index per cell, in the sweep's order (16, 32), (16, 64), (64, 32), ...
BEST = [(1, 2), (0, 1), (1, 3), (0, 3), (2, 2), (2, 1)]
#        inside  arm@edge ref@edge  both    inside  inside


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


def test_compare_arms_refusals_name_the_argument():
    assert _refusal(TypeError, cells=[1]) == "cells must be a dict keyed by (optimizer, kind, n, d), got list"
    assert _refusal(TypeError, arm=None) == "arm must be a string, got None"
    assert _refusal(TypeError, reference=2.5) == "reference must be a string, got 2.5"
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


# ------------------------------------------------------------------- finite_difference_error


def test_the_gradient_check_refuses_a_bad_step_or_seed_by_name():
    with pytest.raises(ValueError, match=re.escape("h must be > 0, got 0.0")):
        tr.finite_difference_error("dot", h=0.0)
    with pytest.raises(ValueError, match=re.escape("seed must be an integer >= 0, got -1")):
        tr.finite_difference_error("dot", seed=-1)
    with pytest.raises(TypeError, match=re.escape("seed must be an integer >= 0, got 'a'")):
        tr.finite_difference_error("dot", seed="a")


class _Seen(Exception):
    """Raised by the spy after the first backward pass: what it saw is all the test needs."""


@pytest.mark.parametrize("seed", [None, 0, 5])
def test_the_gradient_check_draws_its_model_from_the_seed(monkeypatch, seed):
    """From np.random.default_rng(seed) (default 1), in order: W_q and W_k as init_params
    draws them, 0.1 x a standard normal added to every weight (W_q's, then W_k's), and
    the batch of 4 examples of 5 keys."""
    seen = {}

    def spy(params, batch, scales, kind):
        seen.update(params={k: w.copy() for k, w in params.items()}, batch=batch)
        raise _Seen

    monkeypatch.setattr(an, "loss_and_grads", spy)
    with pytest.raises(_Seen):
        tr.finite_difference_error("dot", **({} if seed is None else {"seed": seed}))
    rng = np.random.default_rng(1 if seed is None else seed)
    draw = rng.normal(0.0, 1 / math.sqrt(6), (2, 2, 1, 6, 6))  # (W_q, W_k), seeds, one draw shared by the 3 models
    for i, key in enumerate(("Wq", "Wk")):
        want = np.repeat(draw[i], 3, axis=1) + 0.1 * rng.standard_normal((2, 3, 6, 6))
        np.testing.assert_allclose(seen["params"][key], want, rtol=1e-14, atol=0)
    K = rng.standard_normal((2, 4, 5, 6))
    np.testing.assert_array_equal(seen["batch"]["K"], K)


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
