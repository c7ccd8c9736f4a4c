"""attnscale.page: a number or phrase glued from the cell that computes it shows on the page
exactly as the text the call returns; a figure is glued only when it is legible.

Gluing is MyST-NB's own ``glue`` (not a stand-in): only its last step, IPython's
``display``, is replaced to capture the bundle a notebook would store. What the page shows
is then what MyST-NB's ``{glue:text}`` role makes of that bundle's ``text/plain``
(``format_plain_text`` with the role's default format ``s``, or with an explicit one).
"""

from __future__ import annotations

import matplotlib
import numpy as np

matplotlib.use("Agg")

import pytest
from myst_nb.core.variables import format_plain_text

from attnscale import page
from attnscale.plotting import figure

PREFIX = "application/papermill.record/"


@pytest.fixture
def glued(monkeypatch):
    """The bundles MyST-NB's glue displays, as ``{key: (data, metadata)}``."""
    import myst_nb.ext.glue as glue_module

    stored: dict[str, tuple[dict, dict]] = {}

    def display(data, raw=False, metadata=None):
        assert raw is True
        stored[metadata["scrapbook"]["name"]] = (data, metadata)

    monkeypatch.setattr(glue_module, "ipy_display", display)
    return stored


def pasted(bundle: dict, spec: str = "s") -> str:
    """What ``{glue:text}`key``` (or ``key:spec``) shows for a glued bundle."""
    return format_plain_text(bundle[PREFIX + "text/plain"], spec)


NUMBERS = [
    (2.014, ".2f", "2.01"),
    (2.1, ".2f", "2.10"),  # a trailing zero the text keeps
    (0.02, ".3f", "0.020"),
    (-0.5, ".2f", "-0.50"),
    (0.1234, ".1%", "12.3%"),
    (12345, ",d", "12,345"),
    (12345.0, ",d", "12,345"),  # a float that is an integer takes an integer spec
    (1234.5, ",.1f", "1,234.5"),
    (3.0, ".3g", "3"),
    (3.14159, ".3g", "3.14"),
    (2.5e-5, ".2g", "2.5e-05"),
]


@pytest.mark.parametrize(("value", "spec", "shown"), NUMBERS, ids=[f"{s}:{t}" for _, s, t in NUMBERS])
def test_number_returns_its_text_and_glues_exactly_that_text(glued, value, spec, shown):
    assert page.number("ch00-made-up", value, spec) == shown
    data, metadata = glued["ch00-made-up"]
    assert metadata["scrapbook"] == {"name": "ch00-made-up", "mime_prefix": PREFIX}
    assert list(data) == [PREFIX + "text/plain"], "glued as text only, with no other rendering"
    assert pasted(data) == shown, f"{{glue:text}} would show {pasted(data)!r}, not {shown!r}"


def test_number_takes_numpy_scalars_and_defaults_to_three_significant_digits(glued):
    assert page.number("ch00-a", np.float64(2.01437)) == "2.01"
    assert page.number("ch00-b", np.int64(7), "d") == "7"
    assert page.number("ch00-c", np.float32(0.5), ".1f") == "0.5"
    assert set(glued) == {"ch00-a", "ch00-b", "ch00-c"}


@pytest.mark.parametrize("shown", ["keep 1/sqrt(d)", "2.10", "12,345", "slower in 28 of 30 seeds", "it's 'quoted'"])
def test_text_returns_the_phrase_and_glues_exactly_that_phrase(glued, shown):
    assert page.text("ch00-verdict", shown) == shown
    data, _ = glued["ch00-verdict"]
    assert list(data) == [PREFIX + "text/plain"]
    assert pasted(data) == shown, f"{{glue:text}} would show {pasted(data)!r}, not {shown!r}"


@pytest.mark.parametrize("spec", ["s", ""])
def test_a_text_value_pastes_as_itself_through_ipythons_formatter(spec):
    """``page.Text`` on its own: IPython's plain-text formatter (what glue stores) and the
    role's formatting (``{glue:text}`key``` is format ``s``, ``key:`` the empty format)
    give back the text, even where Python would read it as a number or a tuple."""
    from IPython.core.formatters import format_display_data

    for shown in ("2.10", "1,000", "-0.50", "3", "text"):
        bundle, _ = format_display_data(page.Text(shown))
        assert list(bundle) == ["text/plain"]
        assert format_plain_text(bundle["text/plain"], spec) == shown


BAD_KEYS = [
    (5, TypeError),
    (None, TypeError),
    ("", ValueError),
    ("05-alpha", ValueError),  # starts with a digit
    ("ch05 alpha", ValueError),
    ("ch05.alpha", ValueError),
    ("ch05::alpha", ValueError),  # the cross-page separator
    ("ch05-alpha\n", ValueError),  # a trailing newline
]


@pytest.mark.parametrize(("key", "kind"), BAD_KEYS, ids=[repr(k) for k, _ in BAD_KEYS])
def test_a_bad_key_is_refused_by_name_and_nothing_is_glued(glued, key, kind):
    for call in (lambda: page.number(key, 1.0), lambda: page.text(key, "a phrase")):
        with pytest.raises(kind, match=r"^key "):
            call()
    assert glued == {}


@pytest.mark.parametrize(("value", "kind"), [("2.0", TypeError), (None, TypeError), (True, TypeError), (1 + 2j, TypeError),
                                             (float("nan"), ValueError), (float("inf"), ValueError)])
def test_a_bad_value_is_refused_by_name_and_nothing_is_glued(glued, value, kind):
    with pytest.raises(kind, match=r"^value "):
        page.number("ch00-x", value, ".2f")
    assert glued == {}


@pytest.mark.parametrize(("value", "spec", "kind"), [(1.0, 2, TypeError), (1.0, None, TypeError), (1.0, "q", ValueError),
                                                     (2.5, ",d", ValueError), (2.0, "s", ValueError), (1.0, ".2.2f", ValueError)])
def test_a_bad_spec_is_refused_by_name_and_nothing_is_glued(glued, value, spec, kind):
    with pytest.raises(kind, match=r"^spec "):
        page.number("ch00-x", value, spec)
    assert glued == {}


@pytest.mark.parametrize(("call", "kind", "name"), [(lambda: page.text("ch00-x", 2.0), TypeError, "shown"),
                                                    (lambda: page.figure("fig 00", figure(width=4, height=3)[0]), ValueError, "key"),
                                                    (lambda: page.figure("fig-00-x", "not a figure"), TypeError, "fig")])
def test_a_refused_text_or_figure_glues_nothing(glued, call, kind, name):
    with pytest.raises(kind, match=f"^{name} "):
        call()
    assert glued == {}


def test_figure_glues_one_png_image_of_a_legible_figure(glued):
    fig, ax = figure(width=4, height=3)
    ax.plot([0, 1], [0, 1], label="a line")
    ax.set_xlabel("x (units)")
    ax.legend()
    assert page.figure("fig-00-made-up", fig) is None
    data, metadata = glued["fig-00-made-up"]
    assert metadata["scrapbook"]["name"] == "fig-00-made-up"
    assert PREFIX + "image/png" in data and not any(k.endswith(("text/latex", "text/html")) for k in data)


def test_figure_refuses_unreadable_text_and_glues_nothing(glued):
    fig, ax = figure(width=4, height=3)
    ax.plot([0, 1], [0, 1])
    ax.set_title("a title in a tiny font", fontsize=4)
    with pytest.raises(ValueError, match=r"^fig has text that renders at .*'a title in a tiny font'"):
        page.figure("fig-00-tiny", fig)
    assert glued == {}


def test_a_cell_ending_with_a_glue_call_displays_nothing(monkeypatch):
    """The returned text is a str, and IPython shows nothing for it as a cell's last value."""
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.setattr(page, "_glue", lambda key, value: None)
    shown = page.number("k", 2.1, ".2f")
    assert shown == "2.10" and isinstance(shown, str)
    shell = InteractiveShell.instance()
    result = shell.display_formatter.format(shown)
    assert result == ({}, {})
    InteractiveShell.clear_instance()


def test_scientific_writes_a_power_of_ten_in_superscript_digits():
    from attnscale.page import scientific

    assert scientific(6.2e-11) == "6×10⁻¹¹" and scientific(0.24, 2) == "0.24" and scientific(12345.0, 2) == "1.2×10⁴"
    assert scientific(2.0e-4, 2, plain=False, spaced=True) == "2.0 × 10⁻⁴"
    assert scientific(0.5, 1, plain=False) == "5×10⁻¹"


def test_mean_sd_shows_the_mean_and_the_sample_standard_deviation():
    from attnscale.page import mean_sd

    assert mean_sd([3.0, 3.1, 3.2]) == "3.100 ± 0.100"
    assert mean_sd(np.array([1.0, 2.0]), ".1f") == "1.5 ± 0.7"


def test_listing_joins_names_as_english():
    from attnscale.page import listing

    assert listing(["a"]) == "a" and listing(("a", "b")) == "a and b" and listing(iter(["0.25", "2", "8"])) == "0.25, 2 and 8"
    with pytest.raises(ValueError, match=r"^items "):
        listing(["", "b"])  # an empty name (tests/test_refusals.py tries the other bad items)
