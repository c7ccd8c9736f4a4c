"""The refusals of the Part IV tables and curve figure, pinned to their whole messages
(survivors of the full mutation run over attnscale.training; see tests/MUTANTS.md).

speed_table and loss_table take compare_arms' results keyed by comparison and one
Holm-adjusted p-value per comparison; anything else is refused with a message that says
what is wanted. A list where the dict belongs is a TypeError (not an AttributeError from
inside the check); loss_curves refuses a title that is not a string by the argument's name.
References: the messages written out by hand.
"""

from __future__ import annotations


import pytest
from expect import whole

from attnscale import training as tr

_TESTS = "tests must map (optimizer, arm, reference) to compare_arms' dict of PairedComparison (speed, loss, inside)"
_HOLM = "holm_p must hold one adjusted p-value per comparison in tests"


def _one_comparison() -> dict:
    r = tr.paired_comparison([10.0, 20.0, 30.0], [20.0, 30.0, 40.0])
    return {("adam", "1", "8"): {"speed": r, "loss": r, "inside": None}}


@pytest.mark.parametrize("table", [tr.speed_table, tr.loss_table], ids=["speed_table", "loss_table"])
@pytest.mark.parametrize("tests", [[1], {}, {("adam", "1", "8"): {"speed": 1}}], ids=["list", "empty", "not-comparisons"])
def test_a_table_refuses_what_is_not_a_family_of_comparisons(table, tests):
    with pytest.raises(TypeError, match=whole(_TESTS)):
        table(tests, {})


@pytest.mark.parametrize("table", [tr.speed_table, tr.loss_table], ids=["speed_table", "loss_table"])
@pytest.mark.parametrize("holm_p", [{}, [0.5], {("adam", "1", "2.5"): 0.5}], ids=["empty", "list", "other-key"])
def test_a_table_refuses_p_values_that_are_not_one_per_comparison(table, holm_p):
    with pytest.raises(ValueError, match=whole(_HOLM)):
        table(_one_comparison(), holm_p)


def test_the_curve_figure_refuses_a_title_that_is_not_text():
    with pytest.raises(TypeError, match=whole("title must be a string, got 5")):
        tr.loss_curves({}, "sgd", "dot", 5)
