"""Chapter 11's page (claims.register_page): every record once, in its note's section,
maths handed to MathJax and everything else escaped."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from attnscale.claims import evaluate_register, load_register, register_page, show_value
from attnscale.claims._page import SOURCE_TITLES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rows():
    return evaluate_register(load_register(ROOT / "chapters" / "claims.yml"))


def _record(**over):
    rec = {"id": "x-1", "source": {"file": "000_051da7c3837b8577.txt", "place": "eq. (3) <b>"}, "statement": "a < b & c",
           "claimed": "1 < 2", "value": True, "verdict": "holds", "where": {"doc": "chapters/05_gaussian_scores", "label": "sec-gauss-exact"}}
    rec.update(over)
    return rec


def test_every_record_once_in_its_section(rows):
    page = register_page(rows)
    ids = re.findall(r'<tr id="claim-([^"]+)"', page)
    assert Counter(ids) == Counter(r["id"] for r in rows)
    sections = re.split(r'<section class="claims-source" data-note="', page)[1:]
    assert [s.split('"', 1)[0] for s in sections] == list(SOURCE_TITLES)
    for sec in sections:
        note = sec.split('"', 1)[0]
        assert set(re.findall(r'data-note="([^"]+)" data-verdict', sec)) <= {note}
        assert sec.count("<tr id=") == sum(r["source"]["file"] == note for r in rows)


def test_maths_goes_to_mathjax_and_text_is_escaped():
    rec = _record(chapter_claim=r"$a < b$ and [see](#sec-x), [](#eq-y) & $\sum_i p_i^2$")
    page = register_page([rec])
    cell = re.search(r'<span class="mathjax_process">(.*?)</span>', page).group(1)
    expected = ('\\(a &lt; b\\) and <a href="05_gaussian_scores.html#sec-x">see</a>, '
                '<a href="05_gaussian_scores.html#equation-eq-y">the equation</a> &amp; \\(\\sum_i p_i^2\\)')
    assert cell == expected
    # plain fields are escaped, never interpreted
    assert "eq. (3) &lt;b&gt;" in page and "1 &lt; 2" in page
    plain = register_page([_record()])
    assert "a &lt; b &amp; c" in plain and "mathjax_process" not in plain.split("<tbody>")[1]


def test_show_value():
    assert show_value(None) == "" and show_value(np.bool_(False)) == "statement false" and show_value(True) == "statement true"
    assert show_value([0.123456, 2]) == "0.1235, 2" and show_value(3.0) == "3"
    with pytest.raises(TypeError, match="value"):
        show_value("abc")


@pytest.mark.parametrize("rows, match", [([], "rows"), ([_record(verdict="maybe")], "rows"), ([_record(source={"file": "999.txt", "place": "x"})], "rows"),
                                         ([{"id": "y"}], "rows")])
def test_bad_rows(rows, match):
    with pytest.raises((TypeError, ValueError), match=match):
        register_page(rows)


def test_ids_and_labels_are_escaped():
    rec = _record(id='x"><script>alert(1)</script>', where={"doc": "chapters/05_gaussian_scores", "label": 'l" onmouseover="alert(1)'})
    page = register_page([rec])
    assert "<script>alert" not in page and 'onmouseover="' not in page
    assert "&lt;script&gt;" in page and "&quot; onmouseover=&quot;" in page


@pytest.mark.parametrize("verdict, cls", [("holds", "claims-verdict-holds"), ("approximate", "claims-verdict-approximate"),
                                          ("wrong", "claims-verdict-wrong"), ("not checkable", "claims-verdict-not-checkable")])
def test_the_verdict_word_is_coloured_by_the_site_css_in_each_theme(verdict, cls):
    """No colour is written into the page (one colour cannot read well on both themes'
    backgrounds); the verdict cell carries a class that _static/attnscale.css colours per theme."""
    page = register_page([_record(verdict=verdict)])
    assert f'<td class="claims-verdict {cls}">{verdict}</td>' in page
    assert "style=" not in page.split("</script>", 1)[1]
    css = (ROOT / "_static" / "attnscale.css").read_text(encoding="utf-8")
    for theme in ("light", "dark"):
        assert re.search(rf'html\[data-theme="{theme}"\] \.{cls} \{{ color: #[0-9a-f]{{6}}; \}}', css), (theme, cls)
