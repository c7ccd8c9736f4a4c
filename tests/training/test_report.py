"""attnscale.training.report: the tables, figures and sentences made from the sweeps: numbers
formatted for the page, loss curves drawn as the chapter describes them.
"""

from __future__ import annotations

from collections import defaultdict
import math
import statistics

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.text import Text
import matplotlib.pyplot as plt
import numpy as np
import pytest

from attnscale import training as tr
from attnscale.plotting import DPI, MIN_TEXT_PX
from expect import named, refuses


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


def test_speed_table_adds_the_test_over_the_pairs_left_when_a_comparison_lost_only_some():
    tests = {key: t for key, t in EDGES.items() if t["inside"] is not None}  # 30 of 30 pairs left, and 20 of 30
    assert "| edge cells left out:" in tr.speed_table(tests, {key: EDGES_HOLM[key] for key in tests})


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


@pytest.mark.parametrize("table", [tr.speed_table, tr.loss_table])
@pytest.mark.parametrize("drop", ["loss", "inside"])
def test_a_comparison_without_its_loss_or_inside_test_is_refused_by_name(table, drop):
    """compare_arms always gives all three; a dict without one of them is refused with the
    family's TypeError, not a bare KeyError from deep inside the table."""
    tests = {key: {k: v for k, v in t.items() if k != drop} for key, t in NO_EDGES.items()}
    with pytest.raises(TypeError, match=named('tests')):
        table(tests, NO_EDGES_HOLM)


@pytest.mark.parametrize(("cell", "a", "name"), [({"labels": []}, 0, "cell"), ({"labels": ["1"], "alphas": [1.0]}, 1, "a")],
                         ids=["no-alphas", "one-past-the-last"])
def test_scale_name_refuses_a_cell_without_alphas_or_an_index_past_its_scales(cell, a, name):
    refuses(ValueError, name, tr.scale_name, cell, a)


def test_a_scale_with_a_decimal_label_is_named_by_its_number():
    """The legend names of chapter 10: a number (with or without a decimal point) as
    ``α = label``, a rule as ``label = alpha`` to three digits."""
    cell = {"labels": ["0.25", "2.5", "8", "α*(n)"], "alphas": [0.25, 2.5, 8.0, 1.7894]}
    assert [tr.scale_name(cell, a) for a in range(4)] == ["α = 0.25", "α = 2.5", "α = 8", "α*(n) = 1.79"]


PANELS = [(16, 32), (16, 64), (64, 32), (64, 64), (256, 32), (256, 64)]  # row by row, as laid out


SCALES = ["tab:blue", "tab:green", "tab:orange", "tab:red", "tab:purple"]  # one per scale, in the cell's order


@pytest.fixture(scope="module")
def cells():
    sweeps = [tr.load_sweep(tr.DATA / f"training_{opt}.json") for opt in tr.SWEEP["lrs"]]
    return {(c["optimizer"], c["kind"], c["n"], c["d"]): c for s in sweeps for c in s["cells"]}


@pytest.fixture(scope="module")
def fig(cells):
    fig = tr.loss_curves(cells, "sgd", "dot", "Dot scores, SGD")
    yield fig
    plt.close(fig)


def _seeds(cell, a):
    """Scale ``a``'s held-out loss curves as plain lists of floats, one per seed."""
    return [[float(x) for x in seed] for seed in cell["loss"][a]]


def test_each_median_line_is_the_median_over_seeds_against_the_step(fig, cells):
    for ax, (n, d) in zip(fig.axes, PANELS):
        cell = cells[("sgd", "dot", n, d)]
        steps = [float(s) for s in cell["step"]]
        assert len(ax.lines) == len(cell["labels"]) == 5
        for a, line in enumerate(ax.lines):
            seeds = _seeds(cell, a)
            assert [float(x) for x in line.get_xdata()] == steps
            assert [float(y) for y in line.get_ydata()] == [statistics.median(column) for column in zip(*seeds)]
            assert steps[0] == 0 and steps[-1] == tr.SWEEP["steps"]


def test_each_band_runs_from_the_smallest_to_the_largest_seed_at_each_step(fig, cells):
    for ax, (n, d) in zip(fig.axes, PANELS):
        cell = cells[("sgd", "dot", n, d)]
        assert len(ax.collections) == 5
        for a, band in enumerate(ax.collections):
            columns = list(zip(*_seeds(cell, a)))
            edge = defaultdict(set)
            for x, y in band.get_paths()[0].vertices:
                edge[float(x)].add(float(y))
            assert sorted(edge) == [float(s) for s in cell["step"]]
            for x, column in zip(sorted(edge), columns):
                assert edge[x] == {min(column), max(column)}


def test_the_panels_are_laid_out_titled_and_labelled_as_in_the_chapter(fig):
    assert len(fig.axes) == 6
    assert [ax.get_title() for ax in fig.axes] == [f"n = {n}, d = {d}" for n, d in PANELS]
    # the x label under the bottom row only, the y label left of the left column only
    assert [ax.get_xlabel() for ax in fig.axes] == ["", "", "", "", "step", "step"]
    assert [ax.get_ylabel() for ax in fig.axes] == ["held-out loss", "", "held-out loss", "", "held-out loss", ""]
    assert fig.get_suptitle() == "Dot scores, SGD (median over 5 seeds; band: min to max)"
    for ax in fig.axes:
        assert ax.get_yscale() == "log"
        assert ax.get_ylim() == (0.002, 2.5)


def test_the_legend_names_each_scale_and_its_best_rate(fig):
    # the first panel, n = 16 and d = 32: SGD's best rates there, read off the stored grid by hand
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["α = 0.25, lr 3", "α = 1, lr 1", "α*(n) = 1.19, lr 1", "α = 2.5, lr 0.3", "α = 8, lr 0.1"]


def test_median_lines_are_one_and_a_half_points_over_edgeless_bands_of_their_colour(fig):
    for ax in fig.axes:
        for colour, line, band in zip(SCALES, ax.lines, ax.collections):
            assert line.get_linewidth() == 1.5
            assert to_rgba(line.get_color()) == to_rgba(colour)
            assert list(band.get_linewidth()) == [0]
            assert tuple(band.get_facecolor()[0]) == to_rgba(colour, 0.2)


def test_text_sizes_put_the_legend_at_the_legibility_floor_under_the_titles(fig):
    legend = [t.get_fontsize() for ax in fig.axes for t in ax.get_legend().get_texts()]
    titles = [ax.title.get_fontsize() for ax in fig.axes]
    assert legend == [8.0] * 30 and titles == [9.0] * 6
    suptitle = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text().startswith("Dot scores, SGD")]
    assert suptitle == [10.0]
    # the figure is 6.9 in wide, so shown unscaled in the 690 px column: a point is 100/72 CSS px;
    # 8 pt is 11.1 px, the smallest whole point size at or above the floor (7 pt would be 9.7 px)
    assert fig.get_figwidth() * DPI == 690
    assert 7 * 100 / 72 < MIN_TEXT_PX <= 8 * 100 / 72


def test_every_legend_sits_in_the_lower_left_corner_of_its_panel(fig):
    """The same corner in every panel, so a reader finds the key at one place (left to
    matplotlib's "best", it moves between panels: three places over these six, measured)."""
    FigureCanvasAgg(fig).draw()
    for ax in fig.axes:
        box = ax.get_legend().get_window_extent().transformed(ax.transAxes.inverted())
        assert 0 <= box.x0 < 0.05 and 0 <= box.y0 < 0.05 and box.x1 < 0.6 and box.y1 < 0.6


@pytest.mark.parametrize("show", ["loss_curves", "results_table"])
def test_cells_that_are_not_a_dict_are_refused_naming_their_type(show):
    args = ([], "sgd", "dot", "t") if show == "loss_curves" else ([], "sgd", "dot")
    with pytest.raises(TypeError) as err:
        getattr(tr, show)(*args)
    assert str(err.value) == "cells must be a dict keyed by (optimizer, kind, n, d), got list"


def _one_comparison() -> dict:
    r = tr.paired_comparison([10.0, 20.0, 30.0], [20.0, 30.0, 40.0])
    return {("adam", "1", "8"): {"speed": r, "loss": r, "inside": None}}


@pytest.mark.parametrize("table", [tr.speed_table, tr.loss_table], ids=["speed_table", "loss_table"])
@pytest.mark.parametrize("holm_p", [[0.5], {("adam", "1", "2.5"): 0.5}], ids=["list", "other-key"])
def test_a_table_refuses_p_values_that_are_not_one_per_comparison(table, holm_p):
    with pytest.raises(ValueError, match=named('holm_p')):
        table(_one_comparison(), holm_p)


def _cells():
    """Six hand-made cells (SGD, dot scores) of five scales, two seeds and three steps."""
    cell = {"labels": ["0.25", "1", "α*(n)", "2.5", "8"], "alphas": [0.25, 1.0, 1.19, 2.5, 8.0], "lrs": [[0.1, 0.3, 1.0]] * 5, "best_lr": [1] * 5,
            "step": [0.0, 10.0, 20.0], "loss": [[[1.0, 0.5, 0.1], [0.9, 0.4, 0.05]]] * 5}
    return {("sgd", "dot", n, d): cell for n in (16, 64, 256) for d in (32, 64)}


def test_the_curve_figure_is_tall_enough_for_each_panels_legend():
    fig = tr.loss_curves(_cells(), "sgd", "dot", "Dot scores, SGD")
    # three rows of two panels in the text column: 690 x 820 px as the chapter shows it
    assert (fig.get_figwidth(), fig.get_figheight()) == (6.9, 8.2)
    fig.draw_without_rendering()
    for ax in fig.axes:
        # the five-entry legend sits over the curves (lower left): it must leave most of the panel free
        assert ax.get_legend().get_window_extent().height < 0.5 * ax.get_window_extent().height


def test_text_formats_at_their_thresholds():
    assert (tr.p_text(1e-5), tr.p_text(0.0431), tr.p_text(1.0)) == ("1.0e-05", "0.043", "1")
    assert (tr.steps_text(np.inf), tr.steps_text(0.0), tr.steps_text(40.0), tr.steps_text(-20)) == ("never", "0", "+40", "-20")
    assert (tr.loss_text(-0.0312), tr.loss_text(2e-4), tr.loss_text(0.0)) == ("-0.031", "+2.0e-04", "+0.000")
    # two significant digits from 0.001 up, exponent form below it, and 0 allowed
    assert (tr.p_text(0.001), tr.p_text(0.000999), tr.p_text(0.0)) == ("0.001", "1.0e-03", "0.0e+00")
    # three decimals from 5e-4 up (in size), two significant digits below
    assert (tr.loss_text(0.0005), tr.loss_text(-0.0005), tr.loss_text(0.000499)) == ("+0.001", "-0.001", "+5.0e-04")
    assert (tr.steps_text(INF), tr.steps_text(-INF), tr.steps_text(np.float64(-3.0))) == ("never", "ref. never", "-3")


def test_a_step_count_of_true_is_refused_by_name():
    with pytest.raises(TypeError, match=named("x")):
        tr.steps_text(True)


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
    ("cell", 'name'),
    [
        (_cell(steps_to_target=[[20.0, -1.0, 60.0], [20.0, 40.0, 60.0], [20.0, 40.0, 60.0]]), "cell['steps_to_target']"),
        (_cell(best_lr=[0]), "cell['best_lr']"),
        (_cell(best_lr=[3, 1, 0]), "cell['best_lr']"),
        (_cell(best_lr=[-1, 1, 0]), "cell['best_lr']"),
    ],
    ids=["negative-steps", "one-index", "beyond-the-grid", "negative-index"],
)
def test_summary_rows_messages(cell, name):
    with pytest.raises(ValueError, match=named(name)):
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
