"""Chapter 10's verdicts (attnscale.training.verdicts.conclusions): the names and values of
the length arm's verdicts on the stored results, and three verdicts on stored results
edited by hand so that the expected verdict can be worked out without the module
(survivors of the mutation run over attnscale.training.verdicts; see tests/MUTANTS.md).

The independent references:

- on the stored results, the chapter's own statements (section "Length generalisation"):
  started from each seed's best scale at n, the logarithmic ratio, YaRN and the
  mean-field invariant scale each cost loss at 4n (24, 23 and 29 of 30 pairs, p = 0.0014,
  0.0052 and 5.8e-8, so below 0.05 even after Holm's correction over three); the best
  scale at 4n is not larger than at n for the models at 1 and at log512 n (p = 0.064);
  and the chapter's count of 95 verdicts (section on BLAS kernels), whose names are
  written out here by hand for the length arm;
- the rate rule on an SGD sweep whose best rates are set to ``alpha**b`` with ``b`` = -0.4
  in three cells and -0.6 in the other three: each cell's least-squares slope is its
  ``b``, their mean is -1/2 (so -1/2 lies inside any interval about the mean) and the
  Student-t half-width, 2.571 * 0.1095 / sqrt(6) = 0.115, leaves -1 outside;
- AdamW at decay 1, scale 0.25, edited so that at Adam's best rate its final loss is
  Adam's plus 0.1 in every pair and at its own best rate (another rate) Adam's minus 0.1:
  "0.25 at Adam's rate" is then higher in 30 of 30 pairs (sign test p = 2^-29);
- the best scale at 4n of the model at ln n set to half its best scale at n in every
  seed (smaller in 30 of 30), and that of the model at 1 to twice it (larger in 30 of 30).
"""

from __future__ import annotations

import json
import shutil

import pytest

from attnscale.training import DATA, conclusions
from attnscale.training.verdicts import _FILES

LENGTH_KEYS = {
    "lengths: model at 1, log ratio at 4n, loss",
    "lengths: model at 1, YaRN at 4n, loss",
    "lengths: model at 1, mean-field invariant at 4n, loss",
    "lengths: model at log512 n, log512 n at 4n, loss",
    "lengths: model at ln n, ln n at 4n, loss",
    "lengths: model at 1 from its best scale, log ratio, loss",
    "lengths: model at 1 from its best scale, YaRN, loss",
    "lengths: model at 1 from its best scale, mean-field invariant, loss",
    "lengths: best scale at 4n against n, model at 1",
    "lengths: best scale at 4n against n, model at log512 n",
    "lengths: best scale at 4n against n, model at ln n",
}


@pytest.fixture(scope="module")
def stored():
    return conclusions(DATA)[0]


def _edit_sgd(raw: dict) -> None:
    """Best rate alpha**b in every SGD dot cell (b = -0.4, -0.6 alternately), the rate lattice
    of each scale shifted so that its best rate takes that value."""
    dots = [c for c in raw["cells"] if c["kind"] == "dot"]
    assert len(dots) == 6
    for i, c in enumerate(dots):
        b = -0.4 if i % 2 == 0 else -0.6
        for a, alpha in enumerate(c["alphas"]):
            row = c["lrs"][a]
            factor = alpha**b / row[c["best_lr"][a]]
            c["lrs"][a] = [x * factor for x in row]


def _edit_adamw(raw: dict, adam: dict) -> None:
    """AdamW (decay 1), scale 0.25: Adam's loss + 0.1 at Adam's best rate, Adam's loss - 0.1 at
    another rate, which becomes AdamW's own best."""
    adam_cells = {(c["n"], c["d"]): c for c in adam["cells"] if c["kind"] == "dot"}
    for c in raw["cells"]:
        ref = adam_cells[(c["n"], c["d"])]
        a, r = c["labels"].index("0.25"), ref["best_lr"][ref["labels"].index("0.25")]
        base = ref["final_loss"][ref["labels"].index("0.25")]
        own = r + 1 if r + 1 < len(c["lrs"][a]) else r - 1
        c["final_loss_all"][a][r] = [x + 0.1 for x in base]
        c["final_loss_all"][a][own] = [x - 0.1 for x in base]
        c["best_lr"][a] = own
        c["final_loss"][a] = list(c["final_loss_all"][a][own])


def _edit_lengths(raw: dict) -> None:
    """Best scale at 4n: half that at n for the model at ln n, twice it for the model at 1."""
    for c in raw["cells"]:
        for label, factor in (("ln n", 0.5), ("1", 2.0)):
            oracle = c["oracle"][label]
            oracle["long"]["scale"] = [factor * s for s in oracle["short"]["scale"]]


@pytest.fixture(scope="module")
def edited(tmp_path_factory):
    """The stored results with the three edits above, and their verdicts."""
    directory = tmp_path_factory.mktemp("edited")
    for name in _FILES:
        shutil.copy(DATA / name, directory / name)
    edits = {
        "training_sgd.json": _edit_sgd,
        "training_adamw_dot_wd1.json": lambda raw: _edit_adamw(raw, json.loads((DATA / "training_adam.json").read_text())),
        "training_lengths.json": _edit_lengths,
    }
    for name, edit in edits.items():
        raw = json.loads((directory / name).read_text())
        edit(raw)
        (directory / name).write_text(json.dumps(raw, ensure_ascii=False))
    return conclusions(directory)[0]


def test_the_length_arm_has_its_eleven_verdicts_and_ninety_five_in_all(stored):
    assert len(stored) == 95
    assert {k for k in stored if k.startswith("lengths: ")} == LENGTH_KEYS


def test_from_the_best_scale_at_n_every_rule_still_costs_loss_as_the_chapter_says(stored):
    for rule in ("log ratio", "YaRN", "mean-field invariant"):
        assert stored[f"lengths: model at 1 from its best scale, {rule}, loss"] == "higher", rule


def test_the_best_scale_at_4n_is_not_larger_for_the_models_at_1_and_log512(stored):
    assert stored["lengths: best scale at 4n against n, model at 1"] == "no difference"
    assert stored["lengths: best scale at 4n against n, model at log512 n"] == "no difference"


def test_an_exponent_near_one_half_puts_that_rule_inside_and_minus_one_outside(edited):
    assert edited["rate rule: sgd, exponent -1/2"] == "inside"
    assert edited["rate rule: sgd, exponent -1"] == "outside"


def test_the_decay_grid_compares_0_25_at_adams_rate_not_at_its_own(edited):
    assert edited["decay 1: 0.25 at Adam's rate, loss"] == "higher"


def test_a_best_scale_smaller_or_larger_at_4n_in_every_seed_is_named_so(edited):
    assert edited["lengths: best scale at 4n against n, model at ln n"] == "smaller"
    assert edited["lengths: best scale at 4n against n, model at 1"] == "larger"
