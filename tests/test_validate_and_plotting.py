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


def test_rendered_text_size_follows_from_width_dpi_and_font():
    """A 10 pt tick label on a figure that fits the column is 10 * 100/72 CSS px;
    a figure wider than the column is shrunk, and its text with it."""
    from matplotlib.figure import Figure

    from attnscale.plotting import COLUMN_PX, DPI, MAX_WIDTH, png, rendered_text_px

    fig, ax = figure(width=MAX_WIDTH)
    ax.plot([0, 1], [0, 1])
    png(fig)
    smallest, _ = rendered_text_px(fig)[0]
    assert smallest == pytest.approx(ax.xaxis.get_ticklabels()[0].get_fontsize() * DPI / 72)
    wide = Figure(figsize=(2 * COLUMN_PX / DPI, 3))
    wide.subplots().plot([0, 1])
    png(wide)
    assert rendered_text_px(wide)[0][0] == pytest.approx(10 * DPI / 72 / 2)
    with pytest.raises(ValueError, match="width must be a size in inches"):
        figure(width=MAX_WIDTH + 0.1)


def test_png_records_its_smallest_text_in_image_pixels():
    """The text chunk holds the smallest font's height in the image's own pixels: 9 pt at
    100 dpi is 12.5 px for a legend, on a column-wide figure and on one twice as wide
    (whose page size halves, as rendered_text_px says, but whose image pixels do not)."""
    from matplotlib.figure import Figure

    from attnscale.plotting import COLUMN_PX, DPI, TEXT_KEY, png, text_chunks

    fig, ax = figure()
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend(fontsize=9)
    assert float(text_chunks(png(fig))[TEXT_KEY]) == pytest.approx(9 * DPI / 72, abs=1e-3)
    wide = Figure(figsize=(2 * COLUMN_PX / DPI, 3))
    wide.subplots().plot([0, 1])
    assert float(text_chunks(png(wide))[TEXT_KEY]) == pytest.approx(10 * DPI / 72, abs=1e-3)
    blank = Figure(figsize=(2, 2))
    assert TEXT_KEY not in text_chunks(png(blank))  # no text, no claim about its size
    with pytest.raises(ValueError, match="data must be the bytes of a PNG image"):
        text_chunks(b"GIF89a")


def test_show_figure_refuses_text_too_small_to_read():
    from attnscale.plotting import show_figure

    fig, ax = figure()
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend(fontsize=6)
    with pytest.raises(ValueError, match="renders at 8.3 CSS px"):
        show_figure(fig)
    ax.legend(fontsize=8)
    show_figure(fig)


def test_stored_figures_fit_the_column():
    """Every image a chapter stores is at most the column wide, so the page
    never shrinks it (and its text) further."""
    import base64
    import json
    import struct
    from pathlib import Path

    from attnscale.plotting import COLUMN_PX

    for path in sorted((Path(__file__).resolve().parents[1] / "chapters").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                data = out.get("data", {}).get("image/png")
                if data:
                    raw = base64.b64decode("".join(data))
                    width = struct.unpack(">I", raw[16:20])[0]
                    assert width <= COLUMN_PX, f"{path.name}: a stored figure is {width} px wide"
