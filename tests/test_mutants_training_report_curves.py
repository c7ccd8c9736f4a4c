"""Tests written for the mutants of attnscale.training.report's loss-curve figure (and the check
of its ``cells`` argument) that survived the library tests in the training run of
tools/mutate.sh (see tests/MUTANTS.md).

Chapter 10 shows ``loss_curves`` as PNG images, which no test compares, so these tests read the
figure's artists instead. They pin what a reader of the chapter sees: in each of the six panels
(rows n = 16, 64, 256; columns d = 32, 64) and for each scale, a line through the median over the
five seeds against the training step, a band from the smallest to the largest seed at each step,
a log y-axis from 2e-3 to 2.5, the panel titles, axis labels and suptitle, the median lines'
width (1.5 pt, bands without an edge), and the text sizes: the legend at 8 pt, the smallest whole
point size that clears the book's 10 CSS px floor at 100 dpi, panel titles at 9 pt and the
suptitle at 10 pt; each legend in the lower left corner of its panel. A ``cells`` that is not a
dict is refused with a message naming its type.

The references do not share the code under test: medians, minima and maxima are taken over the
stored curves with plain Python (``statistics.median``, ``min``, ``max``) on lists of floats;
titles, labels, colours, sizes and messages are written out by hand. Only the stored SGD sweep's
six dot-score cells are loaded, and the figure is drawn once for the module.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

import matplotlib.pyplot as plt
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.text import Text

from attnscale import training as tr
from attnscale.plotting import DPI, MIN_TEXT_PX

PANELS = [(16, 32), (16, 64), (64, 32), (64, 64), (256, 32), (256, 64)]  # row by row, as laid out
SCALES = ["tab:blue", "tab:green", "tab:orange", "tab:red", "tab:purple"]  # one per scale, in the cell's order


@pytest.fixture(scope="module")
def cells():
    sweep = tr.load_sweep(tr.DATA / "training_sgd.json")
    return {(c["optimizer"], c["kind"], c["n"], c["d"]): c for c in sweep["cells"] if c["kind"] == "dot"}


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


@pytest.mark.parametrize("bad, name", [([], "list"), ((), "tuple"), ("cells", "str"), (None, "NoneType")])
@pytest.mark.parametrize("show", ["loss_curves", "results_table"])
def test_cells_that_are_not_a_dict_are_refused_naming_their_type(show, bad, name):
    args = (bad, "sgd", "dot", "t") if show == "loss_curves" else (bad, "sgd", "dot")
    with pytest.raises(TypeError) as err:
        getattr(tr, show)(*args)
    assert str(err.value) == f"cells must be a dict keyed by (optimizer, kind, n, d), got {name}"
