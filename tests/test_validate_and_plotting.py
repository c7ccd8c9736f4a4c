import numpy as np
import pytest

from attnscale import _validate as v
from attnscale.plotting import figure


def test_integer_at_least():
    assert v.integer_at_least(5, "n", 2) == 5
    assert v.integer_at_least(np.int64(3), "n", 2) == 3
    assert v.integer_at_least(4.0, "n", 2) == 4
    with pytest.raises(ValueError, match="n must be an integer >= 2, got 1"):
        v.integer_at_least(1, "n", 2)
    with pytest.raises(TypeError, match="n must be an integer"):
        v.integer_at_least(2.5, "n", 2)
    with pytest.raises(TypeError, match="n must be an integer"):
        v.integer_at_least(True, "n", 0)


def test_probabilities_and_positive():
    with pytest.raises(ValueError, match="q must sum to 1"):
        v.probabilities([0.3, 0.3], "q")
    with pytest.raises(ValueError, match="x must be > 0, got -1.0"):
        v.positive([1.0, -1.0], "x")
    with pytest.raises(TypeError, match="complex"):
        v.finite([1j], "z")


def test_figure_house_style():
    fig, ax = figure()
    assert fig.get_facecolor()[:3] == (1.0, 1.0, 1.0)
    fig2, axes = figure(ncols=2)
    assert len(axes) == 2
    with pytest.raises(ValueError, match="ncols must be an integer >= 1"):
        figure(ncols=0)
    with pytest.raises(ValueError, match="width must be a size"):
        figure(width=-1)


def test_png_and_show_figure():
    from attnscale.plotting import png, show_figure
    from attnscale.symbolic import show_math

    fig, ax = figure()
    ax.plot([0, 1], [0, 1])
    data = png(fig)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        png("not a figure")
    show_figure(fig)  # outside a notebook IPython prints the repr; it must not raise
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
        show_figure("not a figure")
    # the two display helpers cannot be confused: a figure is not maths
    with pytest.raises(TypeError, match="expr is a matplotlib Figure"):
        show_math(fig)
