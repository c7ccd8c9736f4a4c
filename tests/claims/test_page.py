"""attnscale.claims, the page (chapter 11, claims.register_page): the register rendered as a
reader sees it (a table per note, its heading and tally, the menus), checked on its structure;
every record of the register once, in its note's section, maths handed to MathJax and
everything else escaped.
"""

from __future__ import annotations

from collections import Counter
import json
from html.parser import HTMLParser
from pathlib import Path
import re

import numpy as np
import pytest

from attnscale.claims import load_register, register_page, show_value
from attnscale.claims._page import SOURCE_PARTS, SOURCE_TITLES, part_of

ROOT = Path(__file__).resolve().parents[2]


NOTES = ["000_051da7c3837b8577.txt", "001_5feb997a08d9f295.txt", "002_0aefa05da3b15586.txt", "003_482530c1c121b366.txt", "004_58230cdbbd352fd2.txt"]
#: the page's sections: a post's main text and its appended notes apart
PARTS = ["su2023", "su2023-notes", "su2023-comments", "tutorial", "su2022", "su2022-notes", "short-note"]


# four records, two notes, all four verdicts; each field exercises one rule of the page
RECORDS = [
    {"id": "g-1", "source": {"file": NOTES[0], "place": "main text, eq. (2)"}, "statement": "unused: the chapter claim is shown",
     "chapter_claim": "the peak is $a < b$, see [the exact form](#sec-gauss-exact) or [](#eq-gauss-alpha-star)",
     "claimed": 0.70710678, "value": 1.41421356, "verdict": "holds", "note": "checked at $n = 8$, see [](#sec-gauss-claims)",
     "where": {"doc": "chapters/05_gaussian_scores", "label": "sec-gauss-claims"}},
    {"id": "g-2", "source": {"file": NOTES[0], "place": "comments, reply 3"}, "statement": "x < y & z",
     "claimed": "see [the bound](#eq-saturation)", "value": False, "verdict": "wrong", "why": "a judgement; compare [](#eq-saturation)",
     "where": {"doc": "chapters/03_saturation", "label": "sec-saturation-claims"}},
    {"id": "g-3", "source": {"file": NOTES[3], "place": "appended notes, 2"}, "statement": "two numbers",
     "claimed": [1, 2.5], "value": 0.123456, "verdict": "approximate",
     "where": {"doc": "chapters/10_training", "label": "sec-training-claims"}},
    {"id": "g-4", "source": {"file": NOTES[3], "place": "appended notes, 4"}, "statement": "hard to say",
     "claimed": "hard", "value": None, "verdict": "not checkable", "note": "the note", "why": "the why",
     "where": {"doc": "chapters/10_training", "label": "sec-training-claims"}},
]


#: each row as a reader sees it: the text of its cells, and the links with their targets
EXPECTED_TEXT = {
    "g-1": ["g-1", "main text, eq. (2)", "the peak is \\(a < b\\), see the exact form or the equation", "0.7071", "1.414", "holds",
            "checked at \\(n = 8\\), see sec-gauss-claims", "gaussian scores"],
    "g-2": ["g-2", "comments, reply 3", "x < y & z", "see the bound", "statement false", "wrong", "a judgement; compare the equation", "saturation"],
    "g-3": ["g-3", "appended notes, 2", "two numbers", "1, 2.5", "0.1235", "approximate", "", "training"],
    "g-4": ["g-4", "appended notes, 4", "hard to say", "hard", "", "not checkable", "the note", "training"],
}
EXPECTED_LINKS = {
    "g-1": [("05_gaussian_scores.html#sec-gauss-exact", "the exact form"), ("05_gaussian_scores.html#equation-eq-gauss-alpha-star", "the equation"),
            ("05_gaussian_scores.html#sec-gauss-claims", "sec-gauss-claims"), ("05_gaussian_scores.html#sec-gauss-claims", "gaussian scores")],
    "g-2": [("03_saturation.html#equation-eq-saturation", "the bound"), ("03_saturation.html#equation-eq-saturation", "the equation"),
            ("03_saturation.html#sec-saturation-claims", "saturation")],
    "g-3": [("10_training.html#sec-training-claims", "training")],
    "g-4": [("10_training.html#sec-training-claims", "training")],
}


class _Node:
    def __init__(self, tag: str, attrs: dict, parent: _Node | None):
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    def elements(self, tag: str | None = None) -> list[_Node]:
        found = []
        for c in self.children:
            if isinstance(c, _Node):
                if tag is None or c.tag == tag:
                    found.append(c)
                found.extend(c.elements(tag))
        return found

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)


class _Tree(HTMLParser):
    """The page as a tree of elements; an end tag must close the element opened last."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.root = self.cur = _Node("#root", {}, None)
        self.feed(page)
        self.close()
        assert self.cur is self.root, f"<{self.cur.tag}> is never closed"

    def handle_starttag(self, tag, attrs):
        node = _Node(tag, dict(attrs), self.cur)
        self.cur.children.append(node)
        self.cur = node

    def handle_endtag(self, tag):
        assert tag == self.cur.tag, f"</{tag}> closes <{self.cur.tag}>"
        self.cur = self.cur.parent

    def handle_data(self, data):
        self.cur.children.append(data)


@pytest.fixture(scope="module")
def page():
    return register_page([dict(r) for r in RECORDS])


@pytest.fixture(scope="module")
def tree(page):
    return _Tree(page).root


def _rows(tree):
    return {tr.attrs["id"].removeprefix("claim-"): tr for tr in tree.elements("tr") if "id" in tr.attrs}


def test_each_row_shows_its_claim_its_verdict_and_where_it_is_discussed(tree):
    rows = _rows(tree)
    assert [(rid, tr.attrs["data-note"], tr.attrs["data-verdict"]) for rid, tr in rows.items()] == [
        ("g-1", "su2023", "holds"), ("g-2", "su2023", "wrong"), ("g-3", "su2022-notes", "approximate"), ("g-4", "su2022-notes", "not checkable")]
    for rid, tr in rows.items():
        cells = tr.elements("td")
        assert [td.text() for td in cells] == EXPECTED_TEXT[rid], rid
        assert [(a.attrs["href"], a.text()) for a in tr.elements("a")] == EXPECTED_LINKS[rid], rid
        assert cells[0].elements("code")[0].text() == rid
        for td in cells:  # mathematics is handed to MathJax, and only there
            typeset = [sp for sp in td.elements("span") if sp.attrs.get("class") == "mathjax_process"]
            assert bool(typeset) == ("\\(" in td.text()), (rid, td.text())


def test_note_menu_and_verdict_menu(tree):
    """The note menu names each source in words, a post's main text and its appended notes apart; no file name."""
    note, verdict = tree.elements("select")
    assert note.attrs["id"] == "claims-note" and verdict.attrs["id"] == "claims-verdict"
    assert [o.attrs["value"] for o in note.elements("option")] == [""] + PARTS
    assert [o.text() for o in note.elements("option")] == [
        "every source", "Su (2023), main text", "Su (2023), appended notes", "Su (2023), readers' comments", "the tutorial chapter",
        "Su (2022), main text", "Su (2022), appended notes", "the short note"]
    assert [(o.attrs["value"], o.text()) for o in verdict.elements("option")] == [
        ("", "every verdict"), ("holds", "holds"), ("approximate", "approximate"), ("wrong", "wrong"), ("not checkable", "not checkable")]


@pytest.mark.parametrize("source, part", [
    ({"file": NOTES[0], "place": "main text, eq. (2)"}, "su2023"),
    ({"file": NOTES[0], "place": "appended notes, 3.1, eq. (25)"}, "su2023-notes"),
    ({"file": NOTES[1], "place": "comments, reply 3"}, "su2023-comments"),
    ({"file": NOTES[3], "place": "entropy invariance (via the 2021 post it cites)"}, "su2022"),
    ({"file": NOTES[3], "place": "appended notes, 2"}, "su2022-notes"),
    ({"file": NOTES[4], "place": "section 1"}, "short-note"),
])
def test_a_record_goes_to_its_sources_part(source, part):
    assert part_of(source) == part


def test_each_note_has_a_heading_a_tally_and_a_table(tree):
    sections = [s for s in tree.elements("section") if s.attrs.get("class") == "claims-source"]
    assert [s.attrs["data-note"] for s in sections] == PARTS
    tallies = [s.elements("p")[0].text() for s in sections]
    assert tallies == ["2 records: 1 holds, 1 wrong", "no records", "no records", "no records", "no records",
                       "2 records: 1 approximate, 1 not checkable", "no records"]
    assert sections[5].elements("h3")[0].text() == "Su (2022): the appended notes, derivations added to the post by someone else"
    assert all(".txt" not in s.elements("h3")[0].text() + s.elements("p")[0].text() for s in sections)
    for sec in sections:
        (table,) = sec.elements("table")
        assert table.attrs["class"] == "claims"
        assert [th.text() for th in table.elements("th")] == ["id", "where in the source", "statement", "claimed", "recomputed", "verdict",
                                                              "note", "discussed in"]
        assert [c.tag for c in sec.children if isinstance(c, _Node)] == ["h3", "p", "table"]
        assert [c.tag for c in table.children if isinstance(c, _Node)] == ["thead", "tbody"]
    assert [len(s.elements("table")[0].elements("tr")) - 1 for s in sections] == [2, 0, 0, 0, 0, 2, 0]


def test_no_stray_text_between_the_elements(tree):
    """Text sits only in cells, headings, the tally, the menus and the script: none between two elements."""
    holders = {"td", "th", "h3", "p", "code", "label", "option", "span", "a", "script"}
    stray = []
    for node in [tree] + tree.elements():
        if node.tag not in holders:
            stray.extend((node.tag, c) for c in node.children if isinstance(c, str) and c.strip())
    assert stray == []
    assert [c.tag for c in tree.children if isinstance(c, _Node)] == ["div", "script"] + ["section"] * 7


def test_bad_rows_messages():
    """Beyond tests/test_refusals.py's table: the record, and what is wrong with it, named."""
    with pytest.raises(ValueError, match=re.escape("rows: record 'g-1' has the verdict 'maybe', not one of ")):
        register_page([dict(RECORDS[0], verdict="maybe")])
    with pytest.raises(TypeError, match=r"^rows .*got tuple$"):
        register_page(tuple(RECORDS))
    lacking = {k: v for k, v in RECORDS[2].items() if k != "value"}
    with pytest.raises(ValueError, match=re.escape("rows: record 'g-3' lacks ['value']")):
        register_page([RECORDS[0], lacking])
    elsewhere = dict(RECORDS[1], source={"file": "005_elsewhere.txt", "place": "p"})
    with pytest.raises(ValueError, match=re.escape("rows: record 'g-2' cites '005_elsewhere.txt', which is not one of the five notes")):
        register_page([RECORDS[0], elsewhere])


# ---- the register in this repository, and escaping ----------------------------------


@pytest.fixture(scope="module")
def rows():
    """Every record of the register as the page receives it, each with its pinned recomputed
    number (tests/data/claims_values.json; test_register holds the recomputations to it),
    or None where the recomputation gives no number: the page's structure does not depend on
    the values, so nothing is recomputed here."""
    pinned = json.loads((ROOT / "tests" / "data" / "claims_values.json").read_text())["records"]

    def value(rid):
        numbers = pinned[rid]["value"] if rid in pinned else None
        return numbers[0] if numbers is not None and len(numbers) == 1 else numbers

    return [{**rec, "value": value(rec["id"])} for rec in load_register(ROOT / "chapters" / "claims.yml")]


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
    assert [s.split('"', 1)[0] for s in sections] == [key for key, *_ in SOURCE_PARTS]
    assert {file for _, file, *_ in SOURCE_PARTS} == set(SOURCE_TITLES)
    for sec in sections:
        part = sec.split('"', 1)[0]
        assert set(re.findall(r'data-note="([^"]+)" data-verdict', sec)) <= {part}
        assert sec.count("<tr id=") == sum(part_of(r["source"]) == part for r in rows)
    assert sum(part_of(r["source"]).endswith("-notes") for r in rows) == sum(r["source"]["place"].startswith("appended notes") for r in rows)


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
