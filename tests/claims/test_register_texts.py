"""The claims register's texts: maths typeset, Markdown the renderers take, no record ids.

A record is shown (on chapter 11's page and in the chapters' tables) with its
``chapter_claim``, Markdown with ``$...$`` maths, where it has one, and with its
plain-text ``statement``, escaped, otherwise. So a statement that writes
mathematics as plain text ("alpha (1 - e^{alpha^2}/n)") needs a ``chapter_claim``,
and a ``chapter_claim`` keeps all its maths between dollars.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RECORDS = yaml.load((ROOT / "chapters" / "claims.yml").read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

_GREEK = ("alpha|beta|gamma|delta|epsilon|zeta|eta|theta|kappa|lambda|mu|nu|xi|pi|rho"
          "|sigma|tau|phi|chi|psi|omega")
#: a Greek letter's name written out (alpha, delta_ij, Gamma(d/2)), not inside a word
GREEK_NAME = re.compile(r"(?i:(?<![A-Za-z])(?:" + _GREEK + r")(?![A-Za-z]))")
#: mathematics written as plain text
PLAIN_MATHS = re.compile(
    GREEK_NAME.pattern
    # a function applied: sqrt(d), exp(x), log(1 + x), sum_i, diag(p), Var(X), softmax(x)
    + r"|(?i:(?<![A-Za-z])(?:sqrt|exp|sum|log|ln|diag|softmax|relu|var|max|min|sin|cos)\s*[(\[{_^])"
    + r"|(?<![A-Za-z])(?:sqrt|exp)(?![A-Za-z])"
    + r"|(?<![A-Za-z])(?:log|ln)\s+(?:\d|[A-Za-z](?![A-Za-z]))"  # log n, log 512
    + r"|(?<![A-Za-z])sum\s+(?:over|of\s+[a-z](?![a-z])|[a-z](?![a-z]))"  # sum over i, sum p^2
    + r"|\^"  # powers: e^{alpha^2}, p^T
    + r"|[A-Za-z0-9})]_[A-Za-z0-9{]"  # subscripts: p_i, d_k, log_512
    + r"|(?<![\w.])[A-Za-z]\s?\.\s?[A-Za-z](?![\w.])"  # q.k (not e.g. or i.e.)
    + r"|(?<![A-Za-z])(?:\d+|[A-Za-z])\s*/\s*(?:\d|[A-Za-z](?![A-Za-z])|\()"  # 1/d, d/2, 1/(...)
    + r"|[\w)\]]\s*(?:<=|>=|!=|=>|->|<|>|=|~)\s*[\w(\[-]"  # relations: d = 128, i != j, H_2 <= H
    + r"|\|\||\|[^|\s][^|]*\|"  # norms and absolute values
    + r"|\bO\(|\b[EPD]\s*[\[(]"  # O(alpha^5), E[...], D(XY)
    + r"|(?<![\w'’.-])(?![aAI](?![\w'’-]))[A-Za-z](?![\w'’-]|\.\w)"  # a lone symbol: with d, per n (not a, A, I)
)
#: inline maths and link targets, which a chapter_claim may hold
_MATH = re.compile(r"(?<!\\)\$(?:[^$\\]|\\.)+?(?<!\\)\$")
_LINK_TARGET = re.compile(r"\]\(#[^)]*\)")

EXAMPLE = "Substituting the normal MGF, the mean-field objective is alpha (1 - e^{alpha^2}/n)."
ENGLISH = ("The paper reports no experiment comparing scaled and unscaled dot products, "
           "and a reader's doubt about it is answered in the comments (e.g. the second one).")


def plain_maths(text: str) -> list[str]:
    return [m.group(0) for m in PLAIN_MATHS.finditer(text)]


def outside_maths(text: str) -> str:
    """A chapter_claim with its $...$ maths and its link targets taken out."""
    return _LINK_TARGET.sub("]", _MATH.sub(" ", text))


def unescaped_dollars(text: str) -> int:
    return len(re.findall(r"(?<!\\)\$", text))


def test_the_detector_flags_plain_text_maths():
    assert plain_maths(EXAMPLE)
    assert plain_maths(ENGLISH) == []
    for maths in ("q.k has variance d", "1/sqrt(d)", "sum p_i^2", "alpha* = 0.84", "H_2 <= H",
                  "O(alpha^5)", "E[q.k] = 0", "||J||_1", "tau -> 0", "log n", "delta_ij", "with d",
                  "Gamma(d/2)", "relu^2", "for i != j", "x_max"):
        assert plain_maths(maths), maths
    for english in ("Softmax preserves the order of its inputs.", "T5 uses a learnable scaling.",
                    "A temperature changes a sigmoid's output.", "It is an L1 norm, i.e. a sum.",
                    "The alphabet, a theorem and a stigma.", "Rényi entropy"):
        assert plain_maths(english) == [], english


def test_a_statement_with_plain_text_maths_has_a_chapter_claim():
    bare = {r["id"]: plain_maths(r["statement"]) for r in RECORDS if "chapter_claim" not in r}
    assert {rid: found for rid, found in bare.items() if found} == {}


def test_the_maths_helpers_see_dollars_and_links():
    assert unescaped_dollars(r"$a$ costs \$5") == 2
    assert outside_maths(r"as $\alpha \to 0$ see [the proof](#sec-alpha-zero)") == "as   see [the proof]"
    assert GREEK_NAME.search(outside_maths(r"as alpha grows, $\alpha^*$ moves"))
    assert not GREEK_NAME.search(outside_maths(r"as $\alpha$ grows, $\alpha^*$ moves"))


@pytest.mark.parametrize("rec", [r for r in RECORDS if "chapter_claim" in r], ids=lambda r: r["id"])
def test_a_chapter_claim_keeps_its_maths_between_dollars(rec):
    claim = rec["chapter_claim"]
    assert unescaped_dollars(claim) % 2 == 0, "unbalanced $"
    rest = outside_maths(claim)
    assert "$" not in rest.replace(r"\$", ""), "a $ left over"
    assert not GREEK_NAME.search(rest), f"Greek name outside maths: {GREEK_NAME.search(rest).group(0)!r}"
    assert plain_maths(rest) == [], "plain-text maths outside $...$"


# ---- note, why and a string claimed: Markdown with $...$ maths too ----------------
# Chapter 11's page and the chapters' tables show a record's note (or why) and a
# claimed value that is text as Markdown with $...$ maths, like chapter_claim: so
# their maths stays between dollars, and they hold nothing else Markdown would read
# (emphasis, code, table pipes, MyST roles). Record ids ("record su23a-large-alpha")
# are names, not maths, and are taken out before the check.

#: the fields shown as Markdown besides chapter_claim (claimed only when it is text)
PROSE_FIELDS = ("note", "why", "claimed")
_IDS = sorted((str(r["id"]) for r in RECORDS), key=len, reverse=True)
_ID = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, _IDS)) + r")(?![\w-])")
_ROLE = re.compile(r"\{[\w:-]+\}`")
PLAIN_NOTE = "alpha (1 - sum p^2) = 8.75e-7 at alpha = 1e-6 (n = 8), linear in alpha."
TYPESET_NOTE = r"$\alpha(1 - \sum_i p_i^2) = 8.75\times10^{-7}$ at $\alpha = 10^{-6}$ ($n = 8$), linear in $\alpha$ (record su23a-large-alpha)."


def markdown_problems(text: str) -> list[str]:
    """What keeps a note, why or claimed text from showing its maths typeset: plain-text
    maths, a Greek name or a stray $ outside $...$, unbalanced dollars, or Markdown that
    the renderers do not take (*, **, backticks, a table pipe, a MyST role)."""
    problems = []
    if unescaped_dollars(text) % 2:
        problems.append("unbalanced $")
    rest = _ID.sub(" ", outside_maths(text))
    if "$" in rest:
        problems.append("a $ outside maths")
    for bad, what in (("*", "* outside maths"), ("`", "backtick"), ("|", "| outside maths")):
        if bad in rest:
            problems.append(what)
    if _ROLE.search(text):
        problems.append("MyST role")
    problems += [f"plain-text maths {m!r}" for m in plain_maths(rest)]
    return problems


def test_the_markdown_check_flags_a_plain_maths_note():
    assert markdown_problems(PLAIN_NOTE)
    assert markdown_problems(TYPESET_NOTE) == []
    assert markdown_problems("read as **holds**") and markdown_problems("see {ref}`sec-x`")
    assert markdown_problems("costs $5") and markdown_problems("1 - |x|") and markdown_problems("`p`")
    assert markdown_problems("the largest $\\alpha$ is $\\alpha^*$ * 2")
    assert markdown_problems("as in record su23a-large-alpha, alpha grows")
    assert markdown_problems(ENGLISH) == []


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: r["id"])
def test_a_note_why_and_claimed_text_keep_their_maths_between_dollars(rec):
    found = {f: markdown_problems(rec[f]) for f in PROSE_FIELDS if isinstance(rec.get(f), str)}
    assert {f: p for f, p in found.items() if p} == {}


def test_chapter_11_states_how_many_records_are_typeset():
    """Chapter 11 gives the number of records with a chapter_claim, glued from the cell that counts them
    (and the stored glue is that count now)."""
    typeset = sum("chapter_claim" in r for r in RECORDS)
    cells = json.loads((ROOT / "chapters" / "11_claims_register.ipynb").read_text(encoding="utf-8"))["cells"]
    prose = " ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert "{glue:text}`ch11-typeset` records that have a formula" in " ".join(prose.split())
    (cell,) = [c for c in cells if c["cell_type"] == "code" and 'page.number("ch11-typeset", sum("chapter_claim" in r for r in records)' in "".join(c["source"])]
    stored = [out for out in cell["outputs"] if out.get("metadata", {}).get("scrapbook", {}).get("name") == "ch11-typeset"]
    # the stored text/plain is a Python literal, which MyST-NB reads before pasting it
    assert [str(ast.literal_eval(out["data"]["application/papermill.record/text/plain"])) for out in stored] == [str(typeset)]


#: a chapter label written as text, not as the target of a link [text](#label)
_BARE_LABEL = re.compile(r"(?<![\w#(-])(?:sec|eq|fig|obs|thm|ch)-[a-z0-9]+(?:-[a-z0-9]+)+")


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: r["id"])
def test_a_reader_facing_text_names_no_record_id_and_no_bare_label(rec):
    """A note, why or chapter_verdict is read on chapter 11's page and in the chapters' tables: it
    points to another record in words ("the next record", "chapter 7") and to a place in its own
    chapter with a link, never by an internal id or a label written out."""
    for field in ("note", "why", "chapter_verdict"):
        text = rec.get(field)
        if isinstance(text, str):
            assert not _ID.search(text), (field, _ID.search(text).group(0))
            assert not _BARE_LABEL.search(_LINK_TARGET.sub("]", text)), (field, _BARE_LABEL.search(_LINK_TARGET.sub("]", text)).group(0))
