"""The chapters' "what the sources say" tables, generated from the register.

Each chapter shows the records whose ``where.doc`` names it, in register order,
through :func:`chapter_table`, so a chapter cannot show a verdict the register
does not have. A row gives whose claim it is (the source's short name), the claim
in English and the verdict with a one-line reason; the source's own wording, the
record's id, the recomputed value and the full note stay in the register
(chapter 11). A record may carry two optional Markdown fields for the chapter:
``chapter_claim`` (shown instead of ``statement``) and ``chapter_verdict`` (the
reason, instead of ``note`` or ``why``). The reason is the first sentence of that
text, trimmed to about ``REASON_LIMIT`` characters by ``short_reason``.
These fields, and ``note`` and ``why`` themselves, are written with ``$...$``
maths and plain Markdown links only: the table is a notebook output, where MyST
roles do not render. The verdict word itself always comes from the record's
``verdict``. A number that the record's recomputation computes is not typed in
``chapter_verdict`` but written ``{value}``, ``{value:.2f}`` or ``{value[2]:.2f}``
(an entry of a list, then a format specification) or ``{1-value:.0%}`` (one minus it), which :func:`fill_values` fills
with the recomputed value (:data:`VALUE` finds them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

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
#: source note -> the short name of its appended section of derivations, which someone
#: other than the post's author wrote (a record's place starts "appended notes")
APPENDED_NAMES = {
    "000_051da7c3837b8577.txt": "Su (2023), appended notes",
    "003_482530c1c121b366.txt": "Su (2022), appended notes",
}


def is_appended(source: dict) -> bool:
    """Whether a record's ``source`` (file and place) is a post's appended notes, not its main text."""
    return source.get("file") in APPENDED_NAMES and str(source.get("place", "")).startswith("appended notes")


def source_name(source: dict) -> str:
    """The short name the chapters give a record's ``source``: the note's (:data:`SOURCE_NAMES`),
    or its appended notes' (:data:`APPENDED_NAMES`); a note without one shows its file name."""
    if is_appended(source):
        return APPENDED_NAMES[source["file"]]
    return SOURCE_NAMES.get(source["file"], source["file"])

#: how long a reason may be, in characters as read (a formula counts half its source, a link its text)
REASON_LIMIT = 120
#: a reason longer than this loses its asides in parentheses (detail the register keeps)
ASIDE_LIMIT = 90

#: a verdict word in bold, which only chapter_table may print
_BOLD_VERDICT = re.compile(r"\*\*\s*(holds|approximate|wrong|not checkable)", re.IGNORECASE)
#: Markdown that plain-text fields (statement) must not trigger
_PLAIN_SPECIAL = re.compile(r"([\\`*$<|])")
#: a MyST role such as {ref}`x`, which a notebook output does not render
_ROLE = re.compile(r"\{[a-z:]+\}`")
#: a word before a full stop that does not end a sentence ("eq. (3)", "et al. (2017)", "e.g. this")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|cf|vs|al|eqs?|Eqs?|figs?|Figs?|ch|approx|resp|pp?|no|No|secs?|Secs?)|\b[A-Z])\.$")
#: where a long sentence may be cut, best first: the clause before survives on its own
_CLAUSE_BREAKS = ("; ", ", and ", ", but ", ", so ", ", which ", ", where ", ", while ")
_LINK = re.compile(r"\[([^\]]*)\]\(#[^)]*\)")
#: a computed number in a register text: ``{value}``, ``{value:.2f}``, ``{value[2]:.0%}``
VALUE = re.compile(r"\{(?P<complement>1-)?value(?:\[(?P<index>\d+)\])?(?::(?P<spec>[^{}]*))?\}")
_MATHS = re.compile(r"\$([^$]*)\$")


def fill_values(text: str, value: object, rid: str = "?") -> str:
    """``text`` with every ``{value...}`` (:data:`VALUE`) replaced by the recomputed ``value``:
    ``{value[i]}`` takes entry ``i`` of a list or array, and the part after a colon is a
    format specification (``".2f"``, ``".0%"``); without one a number prints as ``{:.4g}``;
    ``{1-value...}`` prints one minus the value (a ratio read as a shortfall, "off by 23%").
    Raises ValueError naming the record when a value is missing, not a number, or has no
    such entry."""
    if not VALUE.search(text):
        return text

    def one(m: re.Match) -> str:
        if value is None or isinstance(value, (bool, np.bool_)):
            raise ValueError(f"record {rid!r}: {m.group()} needs a recomputed number, got {value!r}")
        arr = np.ravel(np.asarray(value, dtype=float))
        i = int(m["index"]) if m["index"] is not None else None
        if i is None and arr.size != 1:
            raise ValueError(f"record {rid!r}: {m.group()} names no entry of the {arr.size} recomputed values (write {{value[0]}})")
        if i is not None and i >= arr.size:
            raise ValueError(f"record {rid!r}: {m.group()} asks for entry {i} of {arr.size} recomputed values")
        x = float(arr[0 if i is None else i])
        return format(1 - x if m["complement"] else x, m["spec"] or ".4g")

    return VALUE.sub(one, text)


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


def _scan(text: str) -> Iterator[tuple[int, str, int]]:
    """Each character outside ``$...$`` maths with its position and the depth of brackets it closes into."""
    depth, maths = 0, False
    for i, ch in enumerate(text):
        if ch == "$" and (i == 0 or text[i - 1] != "\\"):
            maths = not maths
        elif not maths:
            depth += (ch in "([") - (ch in ")]")
            yield i, ch, depth


def shown_length(text: str) -> int:
    """How long a Markdown reason reads: a link counts its text, a formula half its source."""
    text = _LINK.sub(lambda m: m.group(1) or "the equation", text)
    return len(_MATHS.sub(lambda m: "x" * max(1, len(m.group(1)) // 2), text))


def _first_sentence(text: str) -> str:
    for i, ch, depth in _scan(text):
        if ch == "." and depth == 0 and (i + 1 == len(text) or text[i + 1] == " ") and not _ABBREVIATION.search(text[: i + 1]):
            return text[:i]
    return text


def _asides(text: str) -> list[tuple[int, int]]:
    """The top-level parenthetical asides of ``text`` (not one that opens it, and not a
    bare reference such as "(8)" or "(2017)"), as (start, end) positions."""
    spans, start = [], None
    for i, ch, depth in _scan(text):
        if ch == "(" and depth == 1:
            start = i
        elif ch == ")" and depth == 0 and start is not None:
            if start > 0 and " " in text[start:i]:
                spans.append((start, i + 1))
            start = None
    return spans


def _without(text: str, span: tuple[int, int]) -> str:
    return re.sub(r"\s+([,;:])", r"\1", (text[: span[0]].rstrip() + text[span[1]:]).strip())


def _without_record_ids(text: str, ids: Iterable[str]) -> str:
    """``text`` without the register's record ids, which belong to the register page: an
    aside that cites one keeps only its chapter ("(chapter 7, record x)" -> "(chapter 7)")
    or goes; "record x" elsewhere reads "a separate record of the register"."""
    names = sorted((re.escape(i) for i in ids if i), key=len, reverse=True)
    if not names:
        return text
    rid = rf"(?<![\w-])(?:{'|'.join(names)})(?![\w-])"

    def aside(m: re.Match) -> str:
        if not re.search(rid, m.group(1)):
            return m.group(0)
        kept = [p for p in re.split(r",\s*", m.group(1)) if re.fullmatch(r"(?:chapter|section) [\w.]+", p)]
        return f" ({', '.join(kept)})" if kept else ""

    text = re.sub(r"\s*\(([^()$]*)\)", aside, text)
    return re.sub(rf"(?:\bthe (?:separate )?)?\brecord {rid}", "a separate record of the register", text)


def short_reason(text: str, ids: Iterable[str] = ()) -> str:
    """A one-line reason from a record's Markdown ``text`` (``chapter_verdict``, ``note`` or
    ``why``): its first sentence, without record ids (``ids``, the register's); while it reads
    longer than :data:`ASIDE_LIMIT`, without its last aside in parentheses that holds no link
    (detail, which the register keeps); then, while it reads longer than :data:`REASON_LIMIT`,
    without its last aside with a link, else cut at the last clause break (``"; "``,
    ``", and "``, ...) that fits. A sentence that cannot be cut so stays whole. No trailing
    full stop or comma."""
    sentence = _first_sentence(_without_record_ids(" ".join(text.split()), ids)).rstrip()
    while shown_length(sentence) > ASIDE_LIMIT:
        plain = [s for s in _asides(sentence) if "](#" not in sentence[s[0]:s[1]]]
        if not plain:
            break
        sentence = _without(sentence, plain[-1])
    while shown_length(sentence) > REASON_LIMIT:
        asides = _asides(sentence)
        cuts = [i for i, _, depth in _scan(sentence) if depth == 0 and sentence.startswith(_CLAUSE_BREAKS, i) and shown_length(sentence[:i]) >= 20]
        if asides:
            sentence = _without(sentence, asides[-1])
        elif cuts:
            fitting = [i for i in cuts if shown_length(sentence[:i]) <= REASON_LIMIT]
            sentence = sentence[: fitting[-1] if fitting else cuts[0]]
        else:
            break
    return sentence.rstrip(" .,;:")


def _verdict_cell(rec: dict, ids: Iterable[str]) -> str:
    word = f"**{VERDICT_WORDS[rec['verdict']]}**"
    if "chapter_verdict" in rec:
        text = _markdown(rec["chapter_verdict"], "chapter_verdict", rec["id"])
        if VALUE.search(text):
            from . import recompute

            text = fill_values(text, recompute(rec), rec["id"])
    else:
        note = rec.get("note") or rec.get("why") or ""
        text = _markdown(note, "note", rec["id"]) if note else ""
        if VALUE.search(text):
            from . import recompute

            text = fill_values(text, recompute(rec), rec["id"])
    reason = short_reason(text, ids) if text else ""
    if not reason:
        return word
    if reason[0] in ",;":
        return word + reason
    if reason[0] == "(":
        return f"{word} {reason}"
    return f"{word}: {reason}"


def _row(rec: dict, ids: Iterable[str]) -> str:
    source = _plain(source_name(rec["source"]))
    claim = _markdown(rec["chapter_claim"], "chapter_claim", rec["id"]) if "chapter_claim" in rec else _plain(rec["statement"])
    return f"| {source} | {claim} | {_verdict_cell(rec, ids)} |"


def chapter_table(doc: str, records: list[dict] | None = None) -> str:
    """The Markdown table of the register's records about one chapter.

    ``doc`` is a chapter as the register names it in ``where.doc`` (for example
    ``"chapters/05_gaussian_scores"``); ``records`` defaults to the register in
    this repository. One row per record whose ``where.doc`` is ``doc``, in
    register order, with the columns Source (the note's short name), Claim
    (``chapter_claim``, else ``statement``) and Verdict (the record's verdict in
    bold, then a one-line reason from ``chapter_verdict``, else ``note`` or
    ``why``: see ``short_reason``). Raises ValueError if no record names ``doc``.
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
    ids = [str(r["id"]) for r in records]
    lines = ["| Source | Claim | Verdict |", "| --- | --- | --- |"]
    return "\n".join(lines + [_row(rec, ids) for rec in mine])
