"""What chapter 10's tables of paired comparisons print, pinned on hand-built comparisons
(the survivors of the mutation run over attnscale.training.report's speed_table and
loss_table; see tests/MUTANTS.md).

The tables are display only: every number in them comes from a PairedComparison and a
Holm-adjusted p-value. So the comparisons here are built by hand (the dataclass, not
paired_comparison), with lower and upper interval ends that differ, and the reference is
the Markdown written out by hand, cell by cell, as chapter 10 displays it (its stored
outputs hold rows of this form, e.g. "| adam | 2.5 − 1 | 28 / 2 / 0 | 8.7e-07 (6.1e-06) |
+22 [+13, +92] | 0.93 [0.83, 1.00] |").

- speed_table without an edge cell (every "inside" comparison kept all the pairs): six
  columns, no column of the test without edge cells, in the header, the rule or the rows.
- speed_table with edge cells: the seventh column, in the header and the rule, and in every
  row, whether its pairs were all kept (the counts repeat), some dropped ("of 20") or all
  dropped ("no pairs left", inside is None).
- loss_table: its own header (higher / lower / tied, P(higher)), six columns even when the
  family has edge cells (the loss is compared over all pairs).
- For every table, that it is a well-formed Markdown table: one line per row, each with as
  many cells as the header and the rule.
"""

from __future__ import annotations

import math

import pytest

from attnscale import training as tr
from expect import raises_exactly

INF = math.inf


def _pc(pairs, later, earlier, tied, p, median, ci, prob, prob_ci):
    return tr.PairedComparison(
        pairs=pairs, later=later, earlier=earlier, tied=tied, p_value=p, median_difference=median, ci=ci, prob_later=prob, prob_later_ci=prob_ci, level=0.95
    )


# steps to the target: a clear effect, one that never got there, and one with no effect
_FAST = _pc(30, 24, 4, 2, 1.8e-4, 12.0, (-4.0, 30.0), 0.83, (0.70, 0.95))
_NEVER = _pc(30, 29, 0, 1, 3.7e-9, INF, (102.0, INF), 0.98, (0.95, 1.0))
_NONE = _pc(30, 14, 15, 1, 1.0, 0.0, (-4.0, 4.0), 0.48, (0.32, 0.67))
# final loss
_LOWER = _pc(30, 10, 20, 0, 0.099, -0.019, (-0.036, 0.002), 0.33, (0.17, 0.50))
_TINY = _pc(30, 9, 21, 0, 0.043, -0.002, (-0.016, -2.3e-4), 0.30, (0.13, 0.47))
_HIGHER = _pc(30, 22, 8, 0, 0.016, 0.046, (0.012, 0.089), 0.73, (0.57, 0.90))

# no edge cell: every "inside" comparison is over all 30 pairs
NO_EDGES = {
    ("adam", "2.5", "1"): {"speed": _FAST, "loss": _LOWER, "inside": _FAST},
    ("sgd", "8", "1"): {"speed": _NEVER, "loss": _TINY, "inside": _pc(30, 29, 0, 1, 3.7e-9, INF, (102.0, INF), 0.98, (0.95, 1.0))},
}
NO_EDGES_HOLM = {("adam", "2.5", "1"): 0.0011, ("sgd", "8", "1"): 3.0e-8}

# edge cells: one comparison kept all its pairs, one kept 20 of 30, one kept none
EDGES = {
    ("adam", "2.5", "1"): {"speed": _FAST, "loss": _LOWER, "inside": _FAST},
    ("adam", "8", "1"): {"speed": _NEVER, "loss": _HIGHER, "inside": _pc(20, 12, 6, 2, 0.24, 5.0, (-1.0, 9.0), 0.65, (0.45, 0.82))},
    ("sgd", "0.25", "1"): {"speed": _NONE, "loss": _TINY, "inside": None},
}
EDGES_HOLM = {("adam", "2.5", "1"): 0.0011, ("adam", "8", "1"): 2.2e-8, ("sgd", "0.25", "1"): 1.0}


def test_speed_table_without_edge_cells_is_the_six_column_markdown_of_the_chapter():
    assert tr.speed_table(NO_EDGES, NO_EDGES_HOLM) == (
        "| optimiser | arm − reference | later / earlier / tied | sign test p (Holm) | median difference, steps [95% interval] | P(later) [95% interval] |\n"
        "|---|---|---|---|---|---|\n"
        "| adam | 2.5 − 1 | 24 / 4 / 2 | 1.8e-04 (0.0011) | +12 [-4, +30] | 0.83 [0.70, 0.95] |\n"
        "| sgd | 8 − 1 | 29 / 0 / 1 | 3.7e-09 (3.0e-08) | never [+102, never] | 0.98 [0.95, 1.00] |"
    )


def test_speed_table_with_edge_cells_adds_the_test_over_the_pairs_left():
    assert tr.speed_table(EDGES, EDGES_HOLM) == (
        "| optimiser | arm − reference | later / earlier / tied | sign test p (Holm) | median difference, steps [95% interval] | P(later) [95% interval] "
        "| edge cells left out: later / earlier / tied of pairs, p |\n"
        "|---|---|---|---|---|---|---|\n"
        "| adam | 2.5 − 1 | 24 / 4 / 2 | 1.8e-04 (0.0011) | +12 [-4, +30] | 0.83 [0.70, 0.95] | 24 / 4 / 2 of 30, 1.8e-04 |\n"
        "| adam | 8 − 1 | 29 / 0 / 1 | 3.7e-09 (2.2e-08) | never [+102, never] | 0.98 [0.95, 1.00] | 12 / 6 / 2 of 20, 0.24 |\n"
        "| sgd | 0.25 − 1 | 14 / 15 / 1 | 1 (1) | 0 [-4, +4] | 0.48 [0.32, 0.67] | no pairs left |"
    )


def test_loss_table_is_the_six_column_markdown_of_the_chapter_even_with_edge_cells():
    header = (
        "| optimiser | arm − reference | higher / lower / tied | sign test p (Holm) | median difference [95% interval] | P(higher) [95% interval] |\n"
        "|---|---|---|---|---|---|\n"
    )
    assert tr.loss_table(NO_EDGES, {("adam", "2.5", "1"): 0.69, ("sgd", "8", "1"): 0.34}) == header + (
        "| adam | 2.5 − 1 | 10 / 20 / 0 | 0.099 (0.69) | -0.019 [-0.036, +0.002] | 0.33 [0.17, 0.50] |\n"
        "| sgd | 8 − 1 | 9 / 21 / 0 | 0.043 (0.34) | -0.002 [-0.016, -2.3e-04] | 0.30 [0.13, 0.47] |"
    )
    assert tr.loss_table(EDGES, {("adam", "2.5", "1"): 0.69, ("adam", "8", "1"): 0.15, ("sgd", "0.25", "1"): 0.34}) == header + (
        "| adam | 2.5 − 1 | 10 / 20 / 0 | 0.099 (0.69) | -0.019 [-0.036, +0.002] | 0.33 [0.17, 0.50] |\n"
        "| adam | 8 − 1 | 22 / 8 / 0 | 0.016 (0.15) | +0.046 [+0.012, +0.089] | 0.73 [0.57, 0.90] |\n"
        "| sgd | 0.25 − 1 | 9 / 21 / 0 | 0.043 (0.34) | -0.002 [-0.016, -2.3e-04] | 0.30 [0.13, 0.47] |"
    )


@pytest.mark.parametrize(
    ("table", "tests", "holm", "columns"),
    [
        (tr.speed_table, NO_EDGES, NO_EDGES_HOLM, 6),
        (tr.speed_table, EDGES, EDGES_HOLM, 7),
        (tr.loss_table, NO_EDGES, NO_EDGES_HOLM, 6),
        (tr.loss_table, EDGES, EDGES_HOLM, 6),
    ],
    ids=["speed-no-edges", "speed-edges", "loss-no-edges", "loss-edges"],
)
def test_every_line_of_a_table_has_the_cells_of_its_header(table, tests, holm, columns):
    lines = table(tests, holm).split("\n")
    assert len(lines) == 2 + len(tests)  # header, rule, one row per comparison
    # a Markdown table row is | c1 | ... | ck |: k cells, k + 1 pipes, first and last character a pipe
    assert all(line.startswith("|") and line.endswith("|") and line.count("|") == columns + 1 for line in lines)
    assert lines[1] == "|" + "---|" * columns


@pytest.mark.parametrize("table", [tr.speed_table, tr.loss_table])
@pytest.mark.parametrize("drop", ["loss", "inside"])
def test_a_comparison_without_its_loss_or_inside_test_is_refused_by_name(table, drop):
    """compare_arms always gives all three; a dict without one of them is refused with the
    family's TypeError, not a bare KeyError from deep inside the table."""
    tests = {key: {k: v for k, v in t.items() if k != drop} for key, t in NO_EDGES.items()}
    with pytest.raises(TypeError, match=r"^tests must map .* \(speed, loss, inside\)$"):
        table(tests, NO_EDGES_HOLM)


@pytest.mark.parametrize(("cell", "a", "exc", "message"), [
    ([1, 2], 0, TypeError, "cell must be a dict, got list"),
    ({"labels": []}, 0, ValueError, "cell lacks the entries ['alphas']"),
    ({"labels": ["1"], "alphas": [1.0]}, -1, ValueError, "a must be an integer >= 0, got -1"),
    ({"labels": ["1"], "alphas": [1.0]}, 2.5, TypeError, "a must be an integer >= 0, got 2.5"),
    ({"labels": ["1"], "alphas": [1.0]}, 1, ValueError, "a must index one of the cell's 1 scales, got 1"),
])
def test_scale_name_refuses_bad_input_naming_the_argument(cell, a, exc, message):
    raises_exactly(exc, message, tr.scale_name, cell, a)


def test_a_scale_with_a_decimal_label_is_named_by_its_number():
    """The legend names of chapter 10: a number (with or without a decimal point) as
    ``α = label``, a rule as ``label = alpha`` to three digits."""
    cell = {"labels": ["0.25", "2.5", "8", "α*(n)"], "alphas": [0.25, 2.5, 8.0, 1.7894]}
    assert [tr.scale_name(cell, a) for a in range(4)] == ["α = 0.25", "α = 2.5", "α = 8", "α*(n) = 1.79"]
