"""The house figure style: fixed size, white background, labelled axes, PNG.

Figures are made with ``matplotlib.figure.Figure`` rather than pyplot and
shown with :func:`show_figure`, which displays the PNG bytes. That makes a chapter's
stored outputs the same whatever matplotlib backend the kernel runs under
(inline in Jupyter, ``Agg`` in CI).
"""

from __future__ import annotations

import io

import matplotlib
from matplotlib.figure import Figure

__all__ = ["STYLE", "figure", "png", "show_figure"]

STYLE = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "font.size": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "lines.linewidth": 1.6,
}


def figure(ncols: int = 1, nrows: int = 1, width: float = 7.0, height: float = 3.6):
    """A new figure in the house style; returns ``(fig, axes)``.

    ``axes`` is a single Axes for a 1 x 1 grid, otherwise a flat array.
    """
    for name, value in (("ncols", ncols), ("nrows", nrows)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    for name, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0 < value < 50):
            raise ValueError(f"{name} must be a size in inches in (0, 50), got {value!r}")
    matplotlib.rcParams.update(STYLE)
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    return fig, (axes[0] if axes.size == 1 else axes)


def png(fig: Figure) -> bytes:
    """The figure rendered as PNG on a white background."""
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", facecolor="white")
    return buffer.getvalue()


def show_figure(fig: Figure) -> None:
    """Display the figure in a notebook as one PNG image (``image/png``, never text)."""
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    from IPython.display import Image, display

    display(Image(data=png(fig)))
