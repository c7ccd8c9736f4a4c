"""The chapters' "what the sources say" tables, generated from the register.

Each chapter shows the records whose ``where.doc`` names it, in register order,
through :func:`chapter_table`, so a chapter cannot show a verdict the register
does not have. A record may carry two optional Markdown fields for the chapter:
``chapter_claim`` (shown instead of ``statement``) and ``chapter_verdict``
(shown instead of ``note`` or ``why``). These, and ``note`` and ``why`` themselves, are
written with ``$...$`` maths and plain Markdown links only: the table is a notebook output, where MyST roles do not
render. The verdict word itself always comes from the record's ``verdict``.
"""

from __future__ import annotations

import re
from pathlib import Path

#: the register's verdict -> the word the chapters print, in bold
VERDICT_WORDS = {"holds": "holds", "approximate": "holds approximately", "wrong": "wrong", "not checkable": "not checkable here"}

#: source note -> the short name the chapters use
SOURCE_NAMES = {
    "000_051da7c3837b8577.txt": "Su (2023)",
    "001_5feb997a08d9f295.txt": "Su (2023), discussion",
    "002_0aefa05da3b15586.txt": "the tutorial chapter",
    "003_482530c1c121b366.txt": "Su (2022)",
    "004_58230cdbbd352fd2.txt": "the short note",
}

#: a verdict word in bold, which only chapter_table may print
_BOLD_VERDICT = re.compile(r"\*\*\s*(holds|approximate|wrong|not checkable)", re.IGNORECASE)
#: Markdown that plain-text fields (statement, place) must not trigger
_PLAIN_SPECIAL = re.compile(r"([\\`*$<|])")
#: a MyST role such as {ref}`x`, which a notebook output does not render
_ROLE = re.compile(r"\{[a-z:]+\}`")


def _plain(text: str) -> str:
    """Plain text made safe for a Markdown table cell (no emphasis, maths or pipes)."""
    return _PLAIN_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def _markdown(text: str, field: str, rid: str) -> str:
    """A chapter_* field: Markdown on one line, pipes escaped, no role and no verdict word of its own."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"record {rid!r}: {field} must be non-empty Markdown text, got {text!r}")
    if _BOLD_VERDICT.search(text):
        raise ValueError(f"record {rid!r}: {field} must not print a bold verdict word (chapter_table adds the record's own)")
    if _ROLE.search(text):
        raise ValueError(f"record {rid!r}: {field} uses a MyST role, which a notebook output does not render; use a plain link")
    return " ".join(text.split()).replace("|", r"\|")


def _verdict_cell(rec: dict) -> str:
    word = f"**{VERDICT_WORDS[rec['verdict']]}**"
    if "chapter_verdict" in rec:
        text = _markdown(rec["chapter_verdict"], "chapter_verdict", rec["id"])
    else:
        note = rec.get("note") or rec.get("why") or ""
        text = _markdown(note, "note", rec["id"]) if note else ""
    if not text:
        return word
    if text[0] in ",;":
        return word + text
    if text[0] == "(":
        return f"{word} {text}"
    return f"{word}: {text}"


def _row(rec: dict) -> str:
    source = SOURCE_NAMES.get(rec["source"]["file"], rec["source"]["file"])
    place = f"{_plain(source)}, {_plain(rec['source']['place'])}"
    claim = _markdown(rec["chapter_claim"], "chapter_claim", rec["id"]) if "chapter_claim" in rec else _plain(rec["statement"])
    return f"| {place} | {claim} | {_verdict_cell(rec)} |"


def chapter_table(doc: str, records: list[dict] | None = None) -> str:
    """The Markdown table of the register's records about one chapter.

    ``doc`` is a chapter as the register names it in ``where.doc`` (for example
    ``"chapters/05_gaussian_scores"``); ``records`` defaults to the register in
    this repository. One row per record whose ``where.doc`` is ``doc``, in
    register order, with the columns Source (the note's short name and the
    place in it), Claim (``chapter_claim``, else ``statement``) and Verdict (the
    record's verdict in bold, then ``chapter_verdict``, else ``note`` or ``why``).
    Raises ValueError if no record names ``doc``.
    """
    from . import REGISTER, VERDICTS, load_register

    if not isinstance(doc, str) or not doc.strip():
        raise TypeError(f"doc must be a chapter path such as 'chapters/05_gaussian_scores', got {doc!r}")
    if records is None:
        records = load_register(Path(REGISTER))
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise TypeError(f"records must be a list of register records (dicts), got {type(records).__name__}")
    mine = []
    for rec in records:
        missing = [f for f in ("id", "source", "statement", "verdict", "where") if f not in rec]
        if missing:
            raise ValueError(f"records: record {rec.get('id')!r} lacks {missing}")
        if rec["verdict"] not in VERDICTS:
            raise ValueError(f"records: record {rec['id']!r} has the verdict {rec['verdict']!r}, not one of {VERDICTS}")
        if rec["where"].get("doc") == doc:
            mine.append(rec)
    if not mine:
        raise ValueError(f"doc: no record of the register is about {doc!r} (where.doc)")
    lines = ["| Source | Claim | Verdict |", "| --- | --- | --- |"]
    return "\n".join(lines + [_row(rec) for rec in mine])
