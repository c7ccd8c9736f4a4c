"""What a chapter puts on its page from the cell that computes it.

A number in the book's prose is never typed: the cell that computes it glues it under a
key (MyST-NB's ``glue``), and the prose pastes it with ``{glue:text}`key``` (or
``{glue:text}`path/to/chapter.ipynb::key``` from another page). :func:`number` and
:func:`text` glue a value as the exact text the page shows, so the stored output that
nbval compares is that text, and :func:`figure` glues a figure for a numbered
``{glue:figure}`` with a caption and alt text.
"""

from __future__ import annotations

import re
from typing import Any

from . import _validate as v

__all__ = ["Text", "Shown", "number", "text", "scientific", "mean_sd", "listing", "figure"]

_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


class Text:
    """A glued value that ``{glue:text}`` pastes as exactly ``shown``. MyST-NB reads the stored
    ``text/plain`` as a Python literal before pasting it (so a bare ``2.10`` would show as
    ``2.1`` and ``12,345`` as a tuple): the repr is therefore the quoted string, whose
    literal is ``shown`` itself."""

    def __init__(self, shown: str):
        self.shown = shown

    def __repr__(self) -> str:
        return repr(self.shown)


class Shown(str):
    """The text a glue call returns: an ordinary string, which a notebook does not display
    when a cell ends with the call (the page shows it where the prose pastes it)."""

    def _ipython_display_(self) -> None:
        return None


def _key(key: object) -> str:
    name = v.text(key, "key")
    if not _KEY.fullmatch(name):
        raise ValueError(f"key must start with a letter and hold only letters, digits, '_' and '-', got {name!r}")
    return name


def _glue(key: str, value: Any) -> None:
    from myst_nb import glue

    glue(key, value, display=False)


def text(key: str, shown: str) -> str:
    """Glue the string ``shown`` under ``key`` for ``{glue:text}`key```; returns it (as
    :class:`Shown`, which a cell ending with the call does not display)."""
    name = _key(key)
    words = v.text(shown, "shown")
    _glue(name, Text(words))
    return Shown(words)


def number(key: str, value: float, spec: str = ".3g") -> str:
    """Glue ``format(value, spec)`` under ``key`` (a finite real number; ``spec`` a format
    specification such as ``".2f"``, ``".3g"``, ``".1%"`` or ``",d"``); returns the text (as
    :class:`Shown`, which a cell ending with the call does not display)."""
    name = _key(key)
    x = v.real_number(value, "value")
    form = v.text(spec, "spec")
    try:
        shown = format(int(x) if form.endswith("d") and float(x).is_integer() else x, form)
    except (ValueError, TypeError) as err:
        raise ValueError(f"spec {form!r} is not a format for the number {x!r}: {err}") from None
    _glue(name, Text(shown))
    return Shown(shown)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def scientific(x: float, digits: int = 1, *, plain: bool = True, spaced: bool = False) -> str:
    """``x`` as prose shows it, to ``digits`` significant digits: as a plain number when
    ``plain`` and ``1e-3 <= |x| < 1e4`` (``0.24``), else with a power of ten in superscript
    digits, ``9×10⁻⁵`` (``spaced``: ``9 × 10⁻⁵``)."""
    value = v.real_number(x, "x")
    places = v.integer_at_least(digits, "digits", 1)
    if plain and 1e-3 <= abs(value) < 1e4:
        return f"{value:.{places}g}"
    mantissa, exponent = f"{value:.{places - 1}e}".split("e")
    times = " × " if spaced else "×"
    return f"{mantissa}{times}10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def mean_sd(values: Any, spec: str = ".3f") -> str:
    """Repeated measurements (e.g. one per seed) as a table shows them, ``mean ± sd`` with
    the sample standard deviation (``ddof = 1``), both in the format ``spec``: at least two
    finite values."""
    x = v.finite(values, "values").ravel()
    if x.size < 2:
        raise ValueError(f"values must hold at least two measurements, got {x.size}")
    form = v.text(spec, "spec")
    return f"{format(float(x.mean()), form)} ± {format(float(x.std(ddof=1)), form)}"


def listing(items: Any) -> str:
    """Names as an English list: ``a``, ``a and b``, ``a, b and c`` (at least one)."""
    names = [v.text(x, "items") for x in items] if not isinstance(items, str) else [items]
    if not names or not all(x.strip() for x in names):
        raise ValueError(f"items must hold at least one name, none of them empty, got {names!r}")
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def figure(key: str, fig: Any) -> None:
    """Glue a figure made with :func:`attnscale.plotting.figure` under ``key`` as one PNG
    image, after the same legibility check as :func:`attnscale.plotting.show_figure`. The
    page shows it with ``{glue:figure} key`` and its ``:name:``, ``:alt:`` and caption."""
    from IPython.display import Image

    from .plotting import checked_png

    _glue(_key(key), Image(data=checked_png(fig)))
