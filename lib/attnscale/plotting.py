"""The house figure style: sized for the text column, white background,
labelled axes, PNG.

Figures are made with ``matplotlib.figure.Figure`` rather than pyplot and
shown with :func:`show_figure`, which displays the PNG bytes. That makes a chapter's
stored outputs the same whatever matplotlib backend the kernel runs under
(inline in Jupyter, ``Agg`` in CI).

Legibility is computed, not hoped for. The book's text column is
:data:`COLUMN_PX` CSS pixels wide on a desktop. A PNG of ``width`` inches at
``dpi`` is ``width * dpi`` pixels wide and is shown at that size, or scaled
down to the column if it is wider; a font of ``f`` points is drawn
``f * dpi / 72`` pixels tall. So it appears on the page at
``f * dpi / 72 * min(1, COLUMN_PX / (width * dpi))`` CSS pixels
(:func:`rendered_text_px`), and :func:`show_figure` refuses a figure whose
smallest visible text would render below :data:`MIN_TEXT_PX`.
"""

from __future__ import annotations

import io
import zlib
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.text import Text

__all__ = ["STYLE", "COLUMN_PX", "MIN_TEXT_PX", "DPI", "MAX_WIDTH", "TEXT_KEY", "figure", "png", "text_chunks", "rendered_text_px", "checked_png", "show_figure"]

#: width of the book's text column on a desktop, in CSS pixels
COLUMN_PX = 690
#: the smallest text size a figure may show at that width, in CSS pixels
MIN_TEXT_PX = 10.0
#: the PNG resolution in dots per inch (a figure of MAX_WIDTH inches then fills the column at its natural size)
DPI = 100
#: the widest figure, in inches (the column at DPI)
MAX_WIDTH = COLUMN_PX / DPI

STYLE: dict[str, Any] = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "font.size": 10,
    "legend.fontsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
}


def figure(ncols: int = 1, nrows: int = 1, width: float = MAX_WIDTH, height: float = 3.6):
    """A new figure in the house style; returns ``(fig, axes)``.

    ``width`` is at most :data:`MAX_WIDTH` inches (the text column), so that
    the figure is never shrunk on the page. ``axes`` is a single Axes for a
    1 x 1 grid, otherwise a flat array.
    """
    for name, value in (("ncols", ncols), ("nrows", nrows)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    limits: tuple[tuple[str, float, float], ...] = (("width", width, MAX_WIDTH), ("height", height, 50.0))
    for name, size, top in limits:
        if isinstance(size, bool) or not (isinstance(size, (int, float)) and 0 < size <= top):
            raise ValueError(f"{name} must be a size in inches in (0, {top:g}], got {size!r}")
    matplotlib.rcParams.update(STYLE)  # type: ignore[arg-type]  # rcParams is typed with literal keys
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    return fig, (axes[0] if axes.size == 1 else axes)


def _figure(fig: object) -> Figure:
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    return fig


#: the PNG text chunk in which :func:`png` records the figure's smallest text size
TEXT_KEY = "attnscale smallest text px"


def png(fig: Figure) -> bytes:
    """The figure rendered as PNG on a white background, at :data:`DPI`. A text chunk
    :data:`TEXT_KEY` records the height of its smallest text in pixels of the image
    (the size it renders at when shown at its natural width), so a browser test can
    measure the size readers see from the width the page gives the image."""
    fig = _figure(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", facecolor="white", dpi=DPI)
    data = buffer.getvalue()
    # Drawing made the tick labels, so _text_px sees every text; the chunk goes in
    # afterwards (before IEND, the last 12 bytes) rather than drawing the figure twice.
    natural = _text_px(fig)
    if not natural:
        return data
    body = TEXT_KEY.encode("latin-1") + b"\0" + f"{natural[0][0]:.3f}".encode("latin-1")
    chunk = len(body).to_bytes(4, "big") + b"tEXt" + body + zlib.crc32(b"tEXt" + body).to_bytes(4, "big")
    return data[:-12] + chunk + data[-12:]


def text_chunks(data: bytes) -> dict[str, str]:
    """The ``tEXt`` chunks of a PNG image, as ``{keyword: text}`` (Latin-1)."""
    if not isinstance(data, (bytes, bytearray)) or data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("data must be the bytes of a PNG image")
    chunks: dict[str, str] = {}
    at = 8
    while at + 8 <= len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        kind = data[at + 4:at + 8]
        body = data[at + 8:at + 8 + length]
        if kind == b"tEXt" and b"\0" in body:
            key, _, text = body.partition(b"\0")
            chunks[key.decode("latin-1")] = text.decode("latin-1")
        if kind == b"IEND":
            break
        at += 12 + length
    return chunks


def _text_px(fig: Figure) -> list[tuple[float, str]]:
    """Every visible, non-empty text of a drawn figure with its height in pixels of the
    PNG image (font size in points times DPI / 72), smallest first."""
    sizes = [(float(t.get_fontsize()) * DPI / 72.0, t.get_text()) for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return sorted(sizes, key=lambda pair: pair[0])


def rendered_text_px(fig: Figure) -> list[tuple[float, str]]:
    """Every visible, non-empty text of the figure (tick labels, axis labels,
    titles, legends, annotations) with the height it renders at on the page,
    in CSS pixels, smallest first. The figure must have been drawn (as
    :func:`png` does), since tick labels are made when it is."""
    fig = _figure(fig)
    shrink = min(1.0, COLUMN_PX / (fig.get_figwidth() * DPI))
    return [(size * shrink, label) for size, label in _text_px(fig)]


def checked_png(fig: Figure) -> bytes:
    """The figure as PNG bytes (:func:`png`), after checking that its smallest text renders
    at :data:`MIN_TEXT_PX` CSS pixels or more in the book's column."""
    data = png(fig)
    small = [(size, label) for size, label in rendered_text_px(fig) if size < MIN_TEXT_PX]
    if small:
        size, label = small[0]
        raise ValueError(f"fig has text that renders at {size:.1f} CSS px in a {COLUMN_PX} px column "
                         f"(below {MIN_TEXT_PX:g}): {label!r} and {len(small) - 1} more; use a larger font or a narrower figure")
    return data


def show_figure(fig: Figure) -> None:
    """Display the figure in a notebook as one PNG image (``image/png``, never
    text), after the legibility check of :func:`checked_png`. A chapter's figures are
    glued instead (``attnscale.page.figure``), so that the page numbers and captions them."""
    from IPython.display import Image, display

    display(Image(data=checked_png(fig)))
