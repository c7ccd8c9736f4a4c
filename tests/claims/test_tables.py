"""attnscale.claims, the tables: a note's rows, its verdict cells and names.
"""

from __future__ import annotations

import pytest

from attnscale.claims import chapter_table
from expect import refuses


DOC = "chapters/05_gaussian_scores"


NOTE0 = "000_051da7c3837b8577.txt"


def _record(**over) -> dict:
    rec = {"id": "t-1", "source": {"file": NOTE0, "place": "main text, eq. (2)"}, "statement": "a < b",
           "claimed": "a < b", "verdict": "holds", "recompute": "none", "where": {"doc": DOC, "label": "sec-gauss-claims"}}
    rec.update(over)
    return rec


def _only_row(rec: dict) -> str:
    lines = chapter_table(DOC, [rec]).splitlines()
    assert lines[:2] == ["| Source | Claim | Verdict |", "| --- | --- | --- |"]
    (row,) = lines[2:]
    return row


@pytest.mark.parametrize("over, verdict_cell", [
    ({}, "**holds**"),
    ({"note": "Xavier initialisation keeps the scores' variance at 1"}, "**holds**: Xavier initialisation keeps the scores' variance at 1"),
    ({"note": "the  exact\n form"}, "**holds**: the exact form"),
    ({"note": ", for every $n$"}, "**holds**, for every $n$"),
    ({"note": "; the fit is rough"}, "**holds**; the fit is rough"),
    ({"note": "(arithmetic)"}, "**holds** (arithmetic)"),
    ({"note": "checked at $n = 8$. The rest is detail."}, "**holds**: checked at $n = 8$"),
    ({"note": "checked by quadrature (record t-1)."}, "**holds**: checked by quadrature"),
    ({"verdict": "approximate", "why": "Only to 2%"}, "**holds approximately**: Only to 2%"),
    ({"verdict": "not checkable", "note": "", "why": "no data"}, "**not checkable here**: no data"),
    ({"verdict": "wrong", "note": "ignored", "chapter_verdict": "X is 3, not 2"}, "**wrong**: X is 3, not 2"),
])
def test_the_verdict_cell_joins_the_word_and_the_note(over, verdict_cell):
    assert _only_row(_record(**over)) == f"| Su (2023) | a \\< b | {verdict_cell} |"


def test_a_note_without_a_short_name_shows_its_file_name():
    rec = _record(source={"file": "005_new_note.txt", "place": "section 4"})
    assert _only_row(rec) == "| 005_new_note.txt | a \\< b | **holds** |"


BAD_TEXT = [
    ("", "must be non-empty Markdown text, got ''"),
    ("  \n ", "must be non-empty Markdown text, got '  \\n '"),
    (None, "must be non-empty Markdown text, got None"),
    (7, "must be non-empty Markdown text, got 7"),
    ("**wrong** as stated", "must not print a bold verdict word (chapter_table adds the record's own)"),
    ("see {ref}`sec-x`", "uses a MyST role, which a notebook output does not render; use a plain link"),
]


@pytest.mark.parametrize("field", ["chapter_claim", "chapter_verdict"])
@pytest.mark.parametrize("text, complaint", BAD_TEXT, ids=["empty", "blank", "none", "number", "verdict-word", "role"])
def test_a_bad_chapter_field_is_refused_naming_the_record_and_the_field(field, text, complaint):
    refuses(ValueError, 'record', chapter_table, DOC, [_record(id="t-9", **{field: text})])


@pytest.mark.parametrize("text, complaint", BAD_TEXT[1:2] + BAD_TEXT[3:], ids=["blank", "number", "verdict-word", "role"])
def test_a_bad_note_is_refused_naming_the_record(text, complaint):
    """An empty or missing note is no note; any other note must be Markdown text without a verdict word or role."""
    refuses(ValueError, 'record', chapter_table, DOC, [_record(id="t-9", note=text)])


def test_bad_records_messages():
    refuses(TypeError, 'records', chapter_table, DOC, (_record(),))
    lacking = {k: v for k, v in _record(id="t-2").items() if k not in ("verdict", "where")}
    refuses(ValueError, 'records', chapter_table, DOC, [_record(), lacking])
    refuses(ValueError, 'records',
                   chapter_table, DOC, [_record(), _record(id="t-3", verdict="maybe")])
