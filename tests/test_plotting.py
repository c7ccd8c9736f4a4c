"""attnscale.plotting: figure sizes in the book's column, the PNG a figure becomes (its chunks
and text), and the refusal of text too small to read.
"""

from __future__ import annotations

import io

from PIL import Image
from matplotlib.figure import Figure
import matplotlib
import pytest
import zlib

from attnscale.plotting import COLUMN_PX, DPI, MAX_WIDTH, TEXT_KEY, figure, png, rendered_text_px, show_figure, text_chunks
from expect import named


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


def test_default_figure_is_the_column_wide_and_3_6_inches_tall():
    """figure() is 6.9 x 3.6 in (690 x 360 px at 100 dpi), and a figure's PNG is its size in
    inches times 100 px."""
    fig, _ = figure()
    assert (fig.get_figwidth(), fig.get_figheight()) == (6.9, 3.6)
    fig, _ = figure(**SMALL)
    assert _decoded(png(fig)).size == (200, 150)


def test_figure_lays_out_its_labels_inside_the_figure():
    """The constrained layout keeps axis labels and the title on a small figure inside it;
    matplotlib's default margins would cut the y label off at the left."""
    fig, ax = figure(**SMALL)
    ax.plot([0, 1000])
    ax.set(xlabel="x label", ylabel="y label", title="title")
    png(fig)
    box = fig.bbox
    for text in (ax.xaxis.label, ax.yaxis.label, ax.title):
        extent = text.get_window_extent()
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1 and box.y0 <= extent.y0 and extent.y1 <= box.y1, text.get_text()


@pytest.mark.parametrize(
    ("kwargs", 'name'),
    [
        ({"height": 50.5}, 'height'),
        ({"width": 7.0}, 'width'),
    ],
)
def test_figure_refuses_a_size_just_above_its_range(kwargs, name):
    """Heights above 50 in and widths above the column's 6.9 in are refused (tests/test_refusals.py
    tries the other bad sizes)."""
    with pytest.raises(ValueError, match=named(name)):
        figure(**kwargs)


def test_figure_accepts_any_size_in_its_range_including_under_an_inch():
    """(0, 6.9] and (0, 50] are open at 0 only: half an inch is a size, and so is 50 in."""
    fig, _ = figure(width=0.5, height=0.5)
    assert (fig.get_figwidth(), fig.get_figheight()) == (0.5, 0.5)
    fig, _ = figure(height=50)
    assert fig.get_figheight() == 50


def _plain_figure() -> Figure:
    """A figure not made by figure() (so not carrying the house rcParams), black, with text."""
    fig = Figure(figsize=(2, 1.5), facecolor="black")
    fig.text(0.5, 0.5, "label", fontsize=10, color="red")
    return fig


def test_png_is_png_at_dpi_on_white_whatever_the_savefig_settings():
    """A reader's matplotlibrc may ask savefig for SVG at 50 dpi on the figure's own colour;
    png still gives a 200 x 150 px PNG (2 x 1.5 in at 100 dpi) with a white background."""
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
    IEND chunk."""
    fig, ax = figure(**SMALL)
    ax.plot([0, 1], [0, 1])
    data = png(fig)
    assert _decoded(data).text[TEXT_KEY] == "13.889"  # 10 pt at 100 dpi: 10 * 100 / 72 px
    assert data.endswith(b"\0\0\0\0IEND\xaeB`\x82")
    assert data.count(b"IEND") == 1


def test_text_chunks_are_the_tEXt_chunks_pillow_reads():
    """Only tEXt chunks: IHDR's body has NUL bytes too, and is not text."""
    fig, ax = figure(**SMALL)
    ax.plot([0, 1])
    data = png(fig)
    assert text_chunks(data) == _decoded(data).text
    assert set(text_chunks(data)) == {"Software", TEXT_KEY}


def test_text_chunk_keyword_ends_at_the_first_nul():
    """The PNG specification ends the keyword at the first NUL; a stray NUL later belongs to
    the text, as Pillow reads it."""
    data = _with_chunk_before_iend(png(Figure(figsize=(0.5, 0.5))), _chunk(b"tEXt", b"key\0a\0b"))
    assert text_chunks(data) == {"key": "a\0b"} | {k: v for k, v in _decoded(data).text.items() if k != "key"}
    assert _decoded(data).text["key"] == "a\0b"


def test_text_chunks_stop_at_iend():
    """Bytes after IEND are not part of the image: a text chunk there is not read, as Pillow
    does not read it."""
    data = png(Figure(figsize=(0.5, 0.5))) + _chunk(b"tEXt", b"after\0the end")
    assert "after" not in _decoded(data).text
    assert set(text_chunks(data)) == {"Software"}


def test_a_figure_narrower_than_the_column_shows_text_at_its_natural_size():
    """Half the column wide, the PNG is shown at its own size, not enlarged: 10 pt at 100 dpi
    is 10 * 100 / 72 CSS px."""
    fig, ax = figure(width=3.45, height=1.0)
    ax.plot([0, 1])
    png(fig)
    assert rendered_text_px(fig)[0][0] == pytest.approx(10 * 100 / 72)


def test_hidden_and_blank_texts_do_not_count(monkeypatch):
    """A hidden 4 pt text and a blank one are not on the page: they are neither listed nor
    refused, and the recorded smallest size is the 10 pt tick labels'."""
    monkeypatch.setattr("IPython.display.display", lambda obj: None)
    fig, ax = figure(**SMALL)
    ax.plot([0, 1])
    ax.text(0.5, 0.5, "hidden", fontsize=4, visible=False)
    ax.text(0.2, 0.2, "   ", fontsize=4)
    assert text_chunks(png(fig))[TEXT_KEY] == "13.889"
    labels = [label for _, label in rendered_text_px(fig)]
    assert "hidden" not in labels and all(label.strip() for label in labels)
    show_figure(fig)


def test_show_figure_accepts_text_at_exactly_the_minimum(monkeypatch):
    """7.2 pt at 100 dpi is 10 CSS px exactly on a figure narrower than the column: "at
    MIN_TEXT_PX or more" lets it through; 7.1 pt (9.86 px) is refused."""
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
    and says one more."""
    fig, _ = figure(**SMALL)
    fig.text(0.1, 0.1, "tiny", fontsize=6)
    fig.text(0.5, 0.5, "small", fontsize=7)
    with pytest.raises(ValueError, match=r"^fig .* 8\.3 CSS px .*'tiny' and 1 more"):
        show_figure(fig)


def test_show_figure_displays_one_png_image(monkeypatch):
    """What reaches the notebook is an IPython Image holding the PNG, with its size chunk."""
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


def test_figure_house_style():
    fig, ax = figure()
    assert fig.get_facecolor()[:3] == (1.0, 1.0, 1.0)
    fig2, axes = figure(ncols=2)
    assert len(axes) == 2
    with pytest.raises(TypeError, match=named("fig")):
        show_figure("not a figure")


def test_rendered_text_size_follows_from_width_dpi_and_font():
    """A 10 pt tick label on a figure that fits the column is 10 * 100/72 CSS px;
    a figure wider than the column is shrunk, and its text with it."""
    fig, ax = figure(width=MAX_WIDTH)
    ax.plot([0, 1], [0, 1])
    png(fig)
    smallest, _ = rendered_text_px(fig)[0]
    assert smallest == pytest.approx(ax.xaxis.get_ticklabels()[0].get_fontsize() * DPI / 72)
    wide = Figure(figsize=(2 * COLUMN_PX / DPI, 3))
    wide.subplots().plot([0, 1])
    png(wide)
    assert rendered_text_px(wide)[0][0] == pytest.approx(10 * DPI / 72 / 2)


def test_png_records_its_smallest_text_in_image_pixels():
    """The text chunk holds the smallest font's height in the image's own pixels: 9 pt at
    100 dpi is 12.5 px for a legend, on a column-wide figure and on one twice as wide
    (whose page size halves, as rendered_text_px says, but whose image pixels do not)."""
    fig, ax = figure()
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend(fontsize=9)
    assert float(text_chunks(png(fig))[TEXT_KEY]) == pytest.approx(9 * DPI / 72, abs=1e-3)
    wide = Figure(figsize=(2 * COLUMN_PX / DPI, 3))
    wide.subplots().plot([0, 1])
    assert float(text_chunks(png(wide))[TEXT_KEY]) == pytest.approx(10 * DPI / 72, abs=1e-3)
    blank = Figure(figsize=(2, 2))
    assert TEXT_KEY not in text_chunks(png(blank))  # no text, no claim about its size


def test_stored_figures_fit_the_column():
    """Every image a chapter stores is at most the column wide, so the page
    never shrinks it (and its text) further."""
    import base64
    import json
    import struct
    from pathlib import Path

    for path in sorted((Path(__file__).resolve().parents[1] / "chapters").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                data = out.get("data", {}).get("image/png")
                if data:
                    raw = base64.b64decode("".join(data))
                    width = struct.unpack(">I", raw[16:20])[0]
                    assert width <= COLUMN_PX, f"{path.name}: a stored figure is {width} px wide"
