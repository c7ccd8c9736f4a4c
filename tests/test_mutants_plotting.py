"""Tests written for the mutants of attnscale.plotting that survived the rest of the suite in
the small-modules run of tools/mutate.sh (see tests/MUTANTS.md).

They pin what the chapters and the browser test rely on: the size and layout of a default
figure, the exact wording of the argument errors, a PNG that is a PNG whatever the
matplotlib settings (white, at DPI, well formed, with its text-size chunk readable by any
decoder), how the page shrinks text (never enlarges it), which texts count, where
``show_figure`` draws its line and what it reports and displays.

The references are independent of the code under test: Pillow (which matplotlib depends on)
decodes the PNG, checks every chunk's CRC and reads its ``tEXt`` chunks; sizes in pixels are
worked out by hand from inches, points and dots per inch; messages are written out in full.
The figures are an inch or two wide so that the file renders in a few seconds.
"""

from __future__ import annotations

import io
import re
import zlib

import matplotlib
import pytest
from matplotlib.figure import Figure
from PIL import Image

from attnscale.plotting import TEXT_KEY, figure, png, rendered_text_px, show_figure, text_chunks

SMALL = {"width": 2.0, "height": 1.5}  # 200 x 150 px at 100 dpi


def _decoded(data: bytes) -> Image.Image:
    """The image as Pillow reads it, after checking every chunk's CRC up to IEND."""
    Image.open(io.BytesIO(data)).verify()
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def _chunk(kind: bytes, body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")


def _with_chunk_before_iend(data: bytes, chunk: bytes) -> bytes:
    assert data[-12:] == _chunk(b"IEND", b"")
    return data[:-12] + chunk + data[-12:]


# --- figure: the size and layout the chapters get -------------------------------------------


def test_default_figure_is_the_column_wide_and_3_6_inches_tall():
    """figure() is 6.9 x 3.6 in (690 x 360 px at 100 dpi), and a figure's PNG is its size in
    inches times 100 px (kills figure 3, 29, 31)."""
    fig, _ = figure()
    assert (fig.get_figwidth(), fig.get_figheight()) == (6.9, 3.6)
    fig, _ = figure(**SMALL)
    assert _decoded(png(fig)).size == (200, 150)


def test_figure_lays_out_its_labels_inside_the_figure():
    """The constrained layout keeps axis labels and the title on a small figure inside it;
    matplotlib's default margins would cut the y label off at the left (kills figure 30, 32)."""
    fig, ax = figure(**SMALL)
    ax.plot([0, 1000])
    ax.set(xlabel="x label", ylabel="y label", title="title")
    png(fig)
    box = fig.bbox
    for text in (ax.xaxis.label, ax.yaxis.label, ax.title):
        extent = text.get_window_extent()
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1 and box.y0 <= extent.y0 and extent.y1 <= box.y1, text.get_text()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nrows": 0}, "nrows must be an integer >= 1, got 0"),
        ({"ncols": 2.0}, "ncols must be an integer >= 1, got 2.0"),
        ({"height": 0}, "height must be a size in inches in (0, 50], got 0"),
        ({"height": 50.5}, "height must be a size in inches in (0, 50], got 50.5"),
        ({"width": 7.0}, "width must be a size in inches in (0, 6.9], got 7.0"),
    ],
)
def test_figure_errors_name_the_argument_and_its_range(kwargs, message):
    """Each error names the argument and states its range; heights above 50 in are refused
    (kills figure 6, 17, 19)."""
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        figure(**kwargs)


def test_figure_accepts_any_size_in_its_range_including_under_an_inch():
    """(0, 6.9] and (0, 50] are open at 0 only: half an inch is a size, and so is 50 in
    (kills figure 23)."""
    fig, _ = figure(width=0.5, height=0.5)
    assert (fig.get_figwidth(), fig.get_figheight()) == (0.5, 0.5)
    fig, _ = figure(height=50)
    assert fig.get_figheight() == 50


def test_figure_type_error_names_the_type_given():
    with pytest.raises(TypeError, match=r"^fig must be a matplotlib Figure, got str$"):
        png("not a figure")
    with pytest.raises(TypeError, match=r"^fig must be a matplotlib Figure, got list$"):
        rendered_text_px([])


# --- png: a PNG whatever the settings, well formed -------------------------------------------


def _plain_figure() -> Figure:
    """A figure not made by figure() (so not carrying the house rcParams), black, with text."""
    fig = Figure(figsize=(2, 1.5), facecolor="black")
    fig.text(0.5, 0.5, "label", fontsize=10, color="red")
    return fig


def test_png_is_png_at_dpi_on_white_whatever_the_savefig_settings():
    """A reader's matplotlibrc may ask savefig for SVG at 50 dpi on the figure's own colour;
    png still gives a 200 x 150 px PNG (2 x 1.5 in at 100 dpi) with a white background
    (kills png 5, 6, 7, 9, 10, 11)."""
    fig = _plain_figure()
    with matplotlib.rc_context({"savefig.format": "svg", "savefig.dpi": 50, "savefig.facecolor": "auto"}):
        data = png(fig)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    decoded = _decoded(data)
    assert decoded.size == (200, 150)
    assert float(decoded.text[TEXT_KEY]) == pytest.approx(10 * 100 / 72, abs=1e-3)
    pixels = decoded.convert("RGB")
    assert pixels.getpixel((0, 0)) == pixels.getpixel((199, 149)) == (255, 255, 255)


def test_png_with_its_text_chunk_is_a_valid_png_ending_in_iend():
    """Pillow checks each chunk's CRC and reads the size chunk; the file ends with the one
    IEND chunk (kills png 52, 53, 54, 55, 62, 63)."""
    fig, ax = figure(**SMALL)
    ax.plot([0, 1], [0, 1])
    data = png(fig)
    assert _decoded(data).text[TEXT_KEY] == "13.889"  # 10 pt at 100 dpi: 10 * 100 / 72 px
    assert data.endswith(b"\0\0\0\0IEND\xaeB`\x82")
    assert data.count(b"IEND") == 1


# --- text_chunks: read as a PNG decoder reads them -------------------------------------------


def test_text_chunks_are_the_tEXt_chunks_pillow_reads():
    """Only tEXt chunks: IHDR's body has NUL bytes too, and is not text (kills text_chunks 37;
    60 and 61 step backwards and never end, which mutmut's own time-out detects)."""
    fig, ax = figure(**SMALL)
    ax.plot([0, 1])
    data = png(fig)
    assert text_chunks(data) == _decoded(data).text
    assert set(text_chunks(data)) == {"Software", TEXT_KEY}


def test_text_chunk_keyword_ends_at_the_first_nul():
    """The PNG specification ends the keyword at the first NUL; a stray NUL later belongs to
    the text, as Pillow reads it (kills text_chunks 46)."""
    data = _with_chunk_before_iend(png(Figure(figsize=(0.5, 0.5))), _chunk(b"tEXt", b"key\0a\0b"))
    assert text_chunks(data) == {"key": "a\0b"} | {k: v for k, v in _decoded(data).text.items() if k != "key"}
    assert _decoded(data).text["key"] == "a\0b"


def test_text_chunks_stop_at_iend():
    """Bytes after IEND are not part of the image: a text chunk there is not read, as Pillow
    does not read it (kills text_chunks 56, 57)."""
    data = png(Figure(figsize=(0.5, 0.5))) + _chunk(b"tEXt", b"after\0the end")
    assert "after" not in _decoded(data).text
    assert set(text_chunks(data)) == {"Software"}


def test_text_chunks_error_is_the_documented_message():
    with pytest.raises(ValueError, match=r"^data must be the bytes of a PNG image$"):
        text_chunks(b"GIF89a")


# --- which texts count, and how the page shrinks them ----------------------------------------


def test_a_figure_narrower_than_the_column_shows_text_at_its_natural_size():
    """Half the column wide, the PNG is shown at its own size, not enlarged: 10 pt at 100 dpi
    is 10 * 100 / 72 CSS px (kills rendered_text_px 8)."""
    fig, ax = figure(width=3.45, height=1.0)
    ax.plot([0, 1])
    png(fig)
    assert rendered_text_px(fig)[0][0] == pytest.approx(10 * 100 / 72)


def test_hidden_and_blank_texts_do_not_count(monkeypatch):
    """A hidden 4 pt text and a blank one are not on the page: they are neither listed nor
    refused, and the recorded smallest size is the 10 pt tick labels' (kills _text_px 7)."""
    monkeypatch.setattr("IPython.display.display", lambda obj: None)
    fig, ax = figure(**SMALL)
    ax.plot([0, 1])
    ax.text(0.5, 0.5, "hidden", fontsize=4, visible=False)
    ax.text(0.2, 0.2, "   ", fontsize=4)
    assert text_chunks(png(fig))[TEXT_KEY] == "13.889"
    labels = [label for _, label in rendered_text_px(fig)]
    assert "hidden" not in labels and all(label.strip() for label in labels)
    show_figure(fig)


# --- show_figure: the line it draws, what it says, what it shows -----------------------------


def test_show_figure_accepts_text_at_exactly_the_minimum(monkeypatch):
    """7.2 pt at 100 dpi is 10 CSS px exactly on a figure narrower than the column: "at
    MIN_TEXT_PX or more" lets it through; 7.1 pt (9.86 px) is refused (kills show_figure 5)."""
    monkeypatch.setattr("IPython.display.display", lambda obj: None)
    fig, _ = figure(**SMALL)
    fig.text(0.5, 0.5, "edge", fontsize=7.2)
    assert rendered_text_px(fig)[0] == (10.0, "edge")
    show_figure(fig)
    fig.texts[0].set_fontsize(7.1)
    with pytest.raises(ValueError, match=r"renders at 9\.9 CSS px"):
        show_figure(fig)


def test_show_figure_error_names_the_smallest_text_and_counts_the_rest():
    """Two texts too small (6 pt is 8.33 px, 7 pt is 9.72 px): the message names the smaller
    and says one more (kills show_figure 9, 10)."""
    fig, _ = figure(**SMALL)
    fig.text(0.1, 0.1, "tiny", fontsize=6)
    fig.text(0.5, 0.5, "small", fontsize=7)
    message = "fig has text that renders at 8.3 CSS px in a 690 px column (below 10): 'tiny' and 1 more; use a larger font or a narrower figure"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        show_figure(fig)


def test_show_figure_displays_one_png_image(monkeypatch):
    """What reaches the notebook is an IPython Image holding the PNG, with its size chunk
    (kills show_figure 11)."""
    from IPython.display import Image as IPythonImage

    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    fig, ax = figure(**SMALL)
    ax.plot([0, 1])
    show_figure(fig)
    assert len(shown) == 1 and isinstance(shown[0], IPythonImage) and shown[0].format == "png"
    data = shown[0].data
    assert _decoded(data).size == (200, 150)
    assert _decoded(data).text[TEXT_KEY] == "13.889"
