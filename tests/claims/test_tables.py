"""attnscale.claims, the tables: a note's rows, its verdict cells and names; and the chapters'
"what the sources say" tables, which come from the register.

Each chapter with records shows them through one code cell that calls
``attnscale.claims.chapter_table`` with its own path; no chapter keeps a hand-written verdict
table, and the stored output of the table cell is what the register gives now. So a chapter
cannot show a verdict the register does not have.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

from attnscale.claims import chapter_table, load_register
from attnscale.claims._tables import REASON_LIMIT, VERDICT_WORDS, short_reason, shown_length, source_name
from expect import named, refuses


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


@pytest.mark.parametrize("file, place, name", [
    ("000_051da7c3837b8577.txt", "main text, eq. (4)", "Su (2023)"),
    ("000_051da7c3837b8577.txt", "appended notes, 3.1, eq. (25)", "Su (2023), appended notes"),
    ("001_5feb997a08d9f295.txt", "comments", "Su (2023), discussion"),
    ("003_482530c1c121b366.txt", "main text, 熵不变性", "Su (2022)"),
    ("003_482530c1c121b366.txt", "appended notes, 2.1", "Su (2022), appended notes"),
    ("002_0aefa05da3b15586.txt", "推导1", "the tutorial chapter"),
])
def test_the_source_cell_tells_a_posts_appended_notes_from_its_main_text(file, place, name):
    """The appended notes were written by someone else: their rows do not read as the post's author."""
    assert _only_row(_record(source={"file": file, "place": place})).startswith(f"| {name} | ")


def test_a_note_without_a_short_name_shows_its_file_name():
    rec = _record(source={"file": "005_new_note.txt", "place": "section 4"})
    assert _only_row(rec) == "| 005_new_note.txt | a \\< b | **holds** |"


#: bad text for a record's Markdown fields, with the reason its refusal gives (a key phrase, not the wording)
BAD_TEXT = [
    ("", "non-empty"),
    ("  \n ", "non-empty"),
    (None, "non-empty"),
    (7, "non-empty"),
    ("**wrong** as stated", "verdict word"),
    ("see {ref}`sec-x`", "MyST role"),
]


def _refuses_for(reason: str, field: str, records: list[dict]) -> None:
    """chapter_table refuses the records naming the record first, then the field and the reason."""
    with pytest.raises(ValueError, match=named("record")) as caught:
        chapter_table(DOC, records)
    message = str(caught.value)
    assert "'t-9'" in message and field in message and reason in message, message


@pytest.mark.parametrize("field", ["chapter_claim", "chapter_verdict"])
@pytest.mark.parametrize("text, reason", BAD_TEXT, ids=["empty", "blank", "none", "number", "verdict-word", "role"])
def test_a_bad_chapter_field_is_refused_naming_the_record_the_field_and_the_reason(field, text, reason):
    _refuses_for(reason, field, [_record(id="t-9", **{field: text})])


@pytest.mark.parametrize("text, reason", BAD_TEXT[1:2] + BAD_TEXT[3:], ids=["blank", "number", "verdict-word", "role"])
def test_a_bad_note_is_refused_naming_the_record_and_the_reason(text, reason):
    """An empty or missing note is no note; any other note must be Markdown text without a verdict word or role."""
    _refuses_for(reason, "note", [_record(id="t-9", note=text)])


def test_a_record_with_an_unknown_verdict_is_refused():
    refuses(ValueError, 'records', chapter_table, DOC, [_record(), _record(id="t-3", verdict="maybe")])


# ---- the chapters' tables from the register in this repository ----------------------

ROOT = Path(__file__).resolve().parents[2]
RECORDS = load_register(ROOT / "chapters" / "claims.yml")
CHAPTERS = sorted(ROOT.glob("chapters/0*_*.ipynb")) + [ROOT / "chapters" / "10_training.ipynb", ROOT / "chapters" / "14_real_attention.ipynb"]
DOCS = sorted({r["where"]["doc"] for r in RECORDS})
CALL = re.compile(r"""chapter_table\(\s*["']([^"']+)["']""")
BOLD_VERDICT = re.compile(r"\*\*\s*(holds|approximate|wrong|not checkable)\b", re.IGNORECASE)


@functools.cache
def table_now(doc: str) -> str:
    """The chapter's table as chapter_table gives it from the register file, built once per
    chapter (each call reads and checks the whole register)."""
    return chapter_table(doc)


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def text(cell: dict) -> str:
    return "".join(cell["source"])


def table_cells(doc: str) -> list[dict]:
    return [c for c in cells(ROOT / f"{doc}.ipynb") if c["cell_type"] == "code" and "chapter_table" in text(c)]


def rows(table: str) -> list[str]:
    return [line for line in table.splitlines()[2:] if line.startswith("|")]


def test_the_register_names_only_the_chapters_here():
    assert set(DOCS) <= {f"chapters/{p.stem}" for p in CHAPTERS}


@pytest.mark.parametrize("doc", DOCS)
def test_each_chapter_with_records_has_one_table_cell_with_its_own_path(doc):
    found = table_cells(doc)
    assert len(found) == 1, f"{doc}: {len(found)} cells call chapter_table"
    assert CALL.findall(text(found[0])) == [doc]
    assert "remove-input" in found[0]["metadata"].get("tags", [])


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_hand_written_verdict_table_remains(path):
    """No Markdown table with a Verdict column, and no table row printing a verdict word in bold."""
    for cell in cells(path):
        if cell["cell_type"] != "markdown":
            continue
        for line in text(cell).splitlines():
            if not line.lstrip().startswith("|"):
                continue
            headers = [h.strip().lower() for h in line.strip().strip("|").split("|")]
            assert not any("verdict" in h for h in headers), f"{path.name}: hand-written verdict table: {line}"
            assert not BOLD_VERDICT.search(line), f"{path.name}: a table row shows a verdict of its own: {line}"


@pytest.mark.parametrize("doc", DOCS)
def test_the_table_has_one_row_per_record_with_its_verdict(doc):
    mine = [r for r in RECORDS if r["where"]["doc"] == doc]
    table = table_now(doc)
    assert table.splitlines()[0] == "| Source | Claim | Verdict |"
    lines = rows(table)
    assert len(lines) == len(mine)
    for rec, line in zip(mine, lines):
        cells_ = re.split(r"(?<!\\)\|", line)[1:-1]
        assert len(cells_) == 3, f"{rec['id']}: the row has {len(cells_)} cells: {line}"
        verdict_cell = cells_[2].strip()
        assert verdict_cell.startswith(f"**{VERDICT_WORDS[rec['verdict']]}**"), rec["id"]
        assert len(BOLD_VERDICT.findall(verdict_cell)) == 1, f"{rec['id']}: more than one verdict word"


def cells_of(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


@pytest.mark.parametrize("doc", DOCS)
def test_a_row_names_the_source_and_leaves_its_wording_and_the_record_id_to_the_register(doc):
    """The Source cell is the note's short name alone; no cell shows a record id or the place in the source."""
    ids = {r["id"] for r in RECORDS}
    for rec, line in zip([r for r in RECORDS if r["where"]["doc"] == doc], rows(table_now(doc))):
        source, claim, verdict = cells_of(line)
        assert source == source_name(rec["source"]), rec["id"]
        assert rec["source"]["place"] not in line, rec["id"]
        shown_ids = {i for i in ids if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", claim + " " + verdict)}
        assert not shown_ids, f"{rec['id']}: the row shows the record id(s) {shown_ids}"


@pytest.mark.parametrize("doc", DOCS)
def test_every_reason_is_one_short_sentence(doc):
    """The reason after the verdict word is one sentence, about one line long: a record whose first
    sentence cannot be cut that short needs a short chapter_verdict."""
    for rec, line in zip([r for r in RECORDS if r["where"]["doc"] == doc], rows(table_now(doc))):
        reason = cells_of(line)[2].split("**", 2)[2].lstrip(":, ")
        assert shown_length(reason) <= 1.25 * REASON_LIMIT, f"{rec['id']}: a reason of {shown_length(reason)} characters: {reason}"
        outside_maths = re.sub(r"\$[^$]*\$", "x", reason)
        assert not re.search(r"[a-z)]\. [A-Z]", outside_maths), f"{rec['id']}: more than one sentence: {reason}"


IDS = ["rec-a", "rec-b"]


@pytest.mark.parametrize("text, reason", [
    # the first sentence, without its full stop; abbreviations, decimals and maths do not end it
    ("It holds. The rest is detail.", "It holds"),
    ("as eq. (3) and Hua et al. (2022) say, 0.5 is right.", "as eq. (3) and Hua et al. (2022) say, 0.5 is right"),
    ("at $x = 1. 5$ it holds. More.", "at $x = 1. 5$ it holds"),
    # record ids go: an aside keeps its chapter, or goes whole; elsewhere a phrase replaces the id
    ("true row by row (chapter 7, record rec-a).", "true row by row (chapter 7)"),
    ("the same fit (record rec-b and its siblings); fine", "the same fit; fine"),
    ("its symmetry is the separate record rec-a.", "its symmetry is a separate record of the register"),
    # an aside in parentheses is detail: it stays in a short reason and goes from a longer one
    ("simulated at $d = 256$ (20000 pairs)", "simulated at $d = 256$ (20000 pairs)"),
    ("the simulated mean of the product is 0.0055 at $d = 64$ (20000 pairs; its standard error is 0.007)",
     "the simulated mean of the product is 0.0055 at $d = 64$"),
    # too long: the last aside without a link goes first, then the clause after the last break that fits
    ("the mean is 0.0055 at $d = 64$ (20000 pairs; standard error 0.007, so 0.03 is four standard errors) "
     "and well inside the bound the tutorial gives for it", "the mean is 0.0055 at $d = 64$ and well inside the bound the tutorial gives for it"),
    ("the two factors match the differences of the softmax itself within the tolerance; the eigenvalues "
     "solve the secular equation instead, which interlaces with the sorted probabilities",
     "the two factors match the differences of the softmax itself within the tolerance"),
    ("(where it is used): exactly, the sum is 0.43 of the estimate at the optimum for the normal law of the scores, "
     "and the two agree only up to 1.38 ([the exact expectation](#sec-gauss-exact))",
     "(where it is used): exactly, the sum is 0.43 of the estimate at the optimum for the normal law of the scores"),
    # a bare reference in brackets is not an aside; a sentence that cannot be cut stays whole
    ("eq. (8) is right but " + "very " * 30 + "long", "eq. (8) is right but " + "very " * 29 + "very long"),
    (", for every $n$ (derived above)", ", for every $n$ (derived above)"),
])
def test_short_reason(text, reason):
    assert short_reason(text, IDS) == reason


def test_shown_length_counts_a_link_by_its_text_and_a_formula_by_half_its_source():
    assert shown_length("ab [the form](#eq-x) $abcdef$") == len("ab the form ") + 3
    assert shown_length("[](#eq-x)") == len("the equation")


def stored_markdown(doc: str) -> str | None:
    for out in table_cells(doc)[0].get("outputs", []):
        data = out.get("data", {})
        if "text/markdown" in data:
            return "".join(data["text/markdown"])
    return None


@pytest.mark.parametrize("doc", DOCS)
def test_the_stored_table_is_the_register_now(doc):
    """A chapter whose stored output is stale (register edited, notebook not re-run) fails."""
    assert stored_markdown(doc) == table_now(doc), f"re-run {doc}.ipynb (python tools/notebooks.py {doc}.ipynb)"


def test_a_changed_verdict_changes_the_table():
    doc = "chapters/05_gaussian_scores"
    records = [dict(r) for r in RECORDS]
    i = next(i for i, r in enumerate(records) if r["id"] == "su23a-no-closed-form")
    before = chapter_table(doc, records)
    records[i]["verdict"] = "holds"
    after = chapter_table(doc, records)
    assert before != after
    changed = [(a, b) for a, b in zip(rows(before), rows(after)) if a != b]
    assert len(changed) == 1 and "**wrong**" in changed[0][0] and "**holds**" in changed[0][1]


def test_every_chapter_verdict_balances_its_dollars():
    """chapter_table refuses an empty chapter field, a MyST role or a verdict word (above), and
    builds every chapter's table; a chapter_claim's maths is checked in test_register_texts."""
    assert [r["id"] for r in RECORDS if r.get("chapter_verdict", "").count("$") % 2] == []


def test_a_pipe_is_escaped():
    rec = dict(next(r for r in RECORDS if r["id"] == "su23-jacobian"))
    doc = rec["where"]["doc"]
    assert r"a \| b" in chapter_table(doc, [dict(rec, chapter_claim="a | b")])


def test_a_computed_number_in_a_reason_comes_from_the_recomputation():
    """``{value...}`` in chapter_verdict is filled with the record's recomputed value (an
    entry of a list, a format specification), and a table cannot print a number its
    recomputation did not give."""
    from attnscale.claims import recompute
    from attnscale.claims._tables import fill_values

    assert fill_values("c = {value[1]:.2f}, {value[0]:.0%} and {value[2]}", [0.5, 2.345, 1 / 3], "r") == "c = 2.35, 50% and 0.3333"
    assert fill_values("{value:.3f} of it", 0.4273, "r") == "0.427 of it" and fill_values("no number", None, "r") == "no number"
    for bad, value, match in (("{value}", [1.0, 2.0], "names no entry"), ("{value[3]}", [1.0], "entry 3"), ("{value}", True, "recomputed number")):
        with pytest.raises(ValueError, match=match):
            fill_values(bad, value, "r")
    rec = next(r for r in RECORDS if r["id"] == "su23a-c-table-d32")
    assert "{value" in rec["chapter_verdict"]
    shown = rows(chapter_table(rec["where"]["doc"], [rec]))[0]
    assert f"recomputed {recompute(rec)[0]:.2f}" in shown and "{value" not in shown
