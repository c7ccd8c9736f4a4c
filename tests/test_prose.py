"""The book's markdown, read as a reader reads it: no typed number that a cell computes,
and no sentence about the book's own history.

**The glue rule.** A number in the prose comes from the cell that computes it, through
MyST-NB's glue (``{glue:text}`key``` ...), never typed. A number that is not computed (a
setting, a source's claim, an equation number) may be typed, but every one with a decimal
point or a percent sign must be listed, with its reason, in the allow-list of its page,
``tests/data/quoted_numbers/<page-stem>.yml`` (see the README there). Integers need no entry.

What is read: the markdown of every page of ``_toc.yml`` (the ``.md`` pages and the
markdown cells of the notebooks): prose, headings, tables typed in markdown, inline and
display maths (``$...$``, ``$$...$$``, ``{math}``), admonitions and numbered statements
(their titles too), figure captions and ``:alt:`` texts. What is not read, because it is
not a typed number of the prose:

- code: code cells and their outputs (numbers printed or tabulated by code, and glued
  values, are outputs), fenced code blocks, ``{eval-rst}``, ``{bibliography}`` and the
  other directives in ``CODE_DIRECTIVES``, inline code spans;
- roles that point somewhere: ``{glue:...}``, ``{ref}``, ``{eq}``, ``{cite:...}``,
  ``{doc}``, ... (an explicit title, ``{ref}`text <target>```, is prose and is read;
  ``{math}`` is maths and is read);
- addresses: URLs, link targets ``[text](target)``, cross-reference targets
  ``(label)=``, directive arguments that are keys or paths (``{figure}``,
  ``{glue:figure}``, ...) and directive options other than ``:alt:``; HTML comments and
  tags (their text is read); substitutions ``{{ name }}``;
- dotted identifiers with more than one dot (a section ``3.2.1``, a version ``1.0.4``) and
  versions: a number after "Python", "version", "release" or "v", or followed by ``.x``
  or ``+`` ("Python 3.11", "3.11+", "1.x").

**The claims tables.** A chapter's table of what the sources say (a code cell calling
``attnscale.claims.chapter_table``) is generated, but from texts typed into the register,
``chapters/claims.yml``: each row's claim (``chapter_claim``, else ``statement``) and its
one-line reason (``chapter_verdict``, else the first sentence of ``note`` or ``why``, as
``short_reason`` cuts it). Those texts are read as the page's markdown, against the same
allow-list; a number the record's recomputation gives is written ``{value:.2f}`` in
``chapter_verdict``, ``note`` or ``why`` and filled in from the recomputation
(``attnscale.claims._tables.VALUE``), so it is not read.

**The register.** The page that shows the whole register (chapter 11, a code cell calling
``attnscale.claims.register_page``) is read with every record's ``note``, ``why`` and
``chapter_verdict`` in full, against that page's allow-list; ``statement``,
``chapter_claim`` and a ``claimed`` text quote the sources and are read where a chapter's
table shows them.

A number is read as typed, without its sign (``-0.52`` is ``0.52``): digits with one
decimal point (``2.10``, ``0.5e-3``), or a number with a percent sign (``5%``, ``5\\%``,
``5 %``, ``5 percent``, all read as ``5%``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from book_toc import toc_entries

ROOT = Path(__file__).resolve().parents[1]
QUOTED = ROOT / "tests" / "data" / "quoted_numbers"


def toc_pages() -> list[Path]:
    """Every page of ``_toc.yml``: its root, the parts' chapters and their sections."""
    pages = []
    for entry in toc_entries():
        found = [ROOT / f"{entry}{ext}" for ext in (".md", ".ipynb") if (ROOT / f"{entry}{ext}").is_file()]
        assert found, f"_toc.yml lists {entry}, which does not exist"
        pages.append(found[0])
    return pages


PAGES = toc_pages()


# ---------------------------------------------------------------- reading the markdown


@dataclass(frozen=True)
class Block:
    """One piece of a page's markdown: a ``.md`` file whole, or one markdown cell."""

    where: str  # "intro.md" or "cell 12"
    text: str


def markdown_blocks(path: Path) -> list[Block]:
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text(encoding="utf-8"))
        return [Block(f"cell {i}", "".join(c["source"])) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown"]
    return [Block(path.name, path.read_text(encoding="utf-8"))]


#: directives whose content is code or generated, not prose (their argument is not read either)
CODE_DIRECTIVES = {
    "code", "code-block", "code-cell", "sourcecode", "literalinclude", "include", "eval-rst", "eval-md", "raw",
    "bibliography", "execution-table", "toctree", "tableofcontents", "glue:math", "mermaid", "graphviz", "jupyter-execute",
}
#: directives whose argument is a key or a path, not a title (their content is read)
KEY_ARGUMENT_DIRECTIVES = {"figure", "image", "glue:figure", "glue:any", "glue", "glue:md", "glue:text", "iframe"}
#: roles whose content is prose or maths, read as such
READ_ROLES = {"math", "sup", "sub", "abbr", "term", "guilabel", "kbd", "menuselection"}
#: roles that point somewhere; only an explicit title (``text <target>``) is read
TITLED_ROLES = {"ref", "numref", "doc", "prf:ref", "any", "download"}

FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,}|:{3,})\s*(?P<info>.*?)\s*$")
OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):(?P<value>.*)$")


def _blank(s: str) -> str:
    """``s`` with every character but a newline made a space (so offsets keep their place)."""
    return re.sub(r"[^\n]", " ", s)


def _closes(fence: str, line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and set(stripped) == {fence[0]} and len(stripped) >= len(fence)


def _strip_fences(text: str) -> str:
    """Blank what is not prose at the level of lines: code blocks, code-like directives,
    directive options (but ``:alt:``'s text) and arguments that are keys or paths."""
    out = []
    stack: list[tuple[str, bool]] = []  # (fence, is code)
    options: bool | str = False  # right after a directive's opening line: its options
    for line in text.split("\n"):
        if stack and stack[-1][1]:  # inside code: only its closing fence matters
            if _closes(stack[-1][0], line):
                stack.pop()
            out.append(_blank(line))
            continue
        if options == "yaml":  # a directive's options as a YAML block between --- lines
            if line.strip() == "---":
                options = False
            m = re.match(r"^\s*alt:", line)
            out.append(_blank(m.group()) + line[m.end():] if m else _blank(line))
            continue
        if options:
            if line.strip() == "---":
                options = "yaml"
                out.append(_blank(line))
                continue
            m = OPTION.match(line)
            if m:
                out.append(_blank(line[: m.start("value")]) + line[m.start("value"):] if m["key"] == "alt" else _blank(line))
                continue
            options = False
        if stack and _closes(stack[-1][0], line):
            stack.pop()
            out.append(_blank(line))
            continue
        m = FENCE.match(line)
        if m:
            fence, info = m["fence"], m["info"]
            d = re.match(r"^\{(?P<name>[^}]+)\}\s*(?P<arg>.*)$", info)
            if d:
                name = d["name"].strip()
                code = name in CODE_DIRECTIVES
                keep_arg = not code and name not in KEY_ARGUMENT_DIRECTIVES
                out.append(_blank(line[: m.start("info") + d.start("arg")]) + (line[m.start("info") + d.start("arg"):] if keep_arg else _blank(line[m.start("info") + d.start("arg"):])))
                options = not code
            else:  # a plain fence: a code block (``` or ```python); a bare ::: closes nothing open here
                code = fence[0] != ":"
                out.append(_blank(line))
            stack.append((fence, code))
            continue
        out.append(line)
    return "\n".join(out)


def _role(m: re.Match) -> str:
    name, ticks, content = m["name"], m["ticks"], m["content"]
    head = _blank(m.group()[: m.start("content") - m.start()])
    tail = _blank(ticks)
    if name in READ_ROLES:
        return head + content + tail
    if name in TITLED_ROLES:
        t = re.match(r"^(?P<title>.*?)\s*<[^<>]*>$", content, re.S)
        if t:
            return head + t["title"] + _blank(content[len(t["title"]):]) + tail
    return _blank(m.group())


ROLE = re.compile(r"\{(?P<name>[\w:.+-]+)\}(?P<ticks>`+)(?P<content>.*?)(?P=ticks)", re.S)
INLINE_CODE = re.compile(r"(?P<ticks>`+)(?!`).*?(?<!`)(?P=ticks)(?!`)", re.S)
PATTERNS_TO_BLANK = [
    re.compile(r"<!--.*?-->", re.S),  # HTML comments
    re.compile(r"^\s*\([\w:.-]+\)=\s*$", re.M),  # cross-reference targets (label)=
    re.compile(r"^\s*\[[^\]]+\]:\s*\S+.*$", re.M),  # link definitions [label]: url
    re.compile(r"\$\$\s*\([\w:.-]+\)"),  # the label after a display equation: $$ (eq-label)
    re.compile(r"\{\{.*?\}\}", re.S),  # substitutions
    re.compile(r"<(?:https?|ftp|mailto):[^>\s]*>"),  # autolinks
    re.compile(r"\b(?:https?|ftp)://[^\s)>\]]+"),  # bare addresses
    re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>"),  # HTML tags (their text stays)
]
LINK_TARGET = re.compile(r"(?<=\])\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?\)")


def prose_of(markdown: str) -> str:
    """``markdown`` with everything that is not prose or maths blanked, offsets kept."""
    text = _strip_fences(markdown)
    text = ROLE.sub(_role, text)
    text = INLINE_CODE.sub(lambda m: _blank(m.group()), text)
    for pattern in PATTERNS_TO_BLANK:
        text = pattern.sub(lambda m: _blank(m.group()), text)
    return LINK_TARGET.sub(lambda m: _blank(m.group()), text)


# ---------------------------------------------------------------- the numbers in it

NUMBER = re.compile(
    r"(?<![\d.])(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)*|\d+(?:\.\d+)*)(?P<exp>[eE][-+]?\d+(?![\w.]))?"
    r"(?P<percent>\s?\\?%|\s?per\s?cent\b)?"
)
VERSION_BEFORE = re.compile(r"(?:\b(?:[Pp]ython|[Vv]ersions?|[Rr]eleases?)\s*|(?<![A-Za-z])[vV])$")
VERSION_AFTER = re.compile(r"^(?:\.x\b|\+(?=[\s,.;:)]|$))")


@dataclass(frozen=True)
class Found:
    number: str  # as the allow-list writes it: "2.10", "5%", "0.5e-3"
    where: str  # "cell 12, line 3"
    context: str  # the line it stands on, shortened around it

    def __str__(self) -> str:
        return f"{self.number} ({self.where}): ...{self.context}..."


def typed_numbers(markdown: str, where: str = "") -> list[Found]:
    """Every number with a decimal point or a percent sign in the prose and maths of ``markdown``."""
    prose = prose_of(markdown)
    found = []
    for m in NUMBER.finditer(prose):
        digits = m["digits"]
        if digits.count(".") > 1:
            continue  # a section 3.2.1 or a version 1.0.4
        if VERSION_BEFORE.search(prose[max(0, m.start() - 12): m.start()]) or VERSION_AFTER.match(prose[m.end("digits"):]):
            continue
        if "." not in digits and not m["percent"]:
            continue  # an integer
        number = digits + (m["exp"] or "") + ("%" if m["percent"] else "")
        start = prose.rfind("\n", 0, m.start()) + 1
        end = prose.find("\n", m.end())
        line = markdown[start: len(markdown) if end < 0 else end]
        col = m.start() - start
        context = line[max(0, col - 50): col + len(m.group()) + 50].strip()
        found.append(Found(number, f"{where + ', ' if where else ''}line {markdown.count(chr(10), 0, m.start()) + 1}", context))
    return found


TABLE_CALL = re.compile(r"""chapter_table\(\s*["']([^"']+)["']""")


def table_blocks(path: Path, records: list[dict] | None = None) -> list[Block]:
    """The register's texts that the page's claims table shows (none for a page without one):
    per record of the table, its claim and its reason as ``short_reason`` cuts it, with every
    computed ``{value...}`` blanked."""
    from attnscale.claims import REGISTER, load_register
    from attnscale.claims._tables import VALUE, short_reason

    if path.suffix != ".ipynb":
        return []
    nb = json.loads(path.read_text(encoding="utf-8"))
    docs = [d for c in nb["cells"] if c["cell_type"] == "code" for d in TABLE_CALL.findall("".join(c["source"]))]
    if not docs:
        return []
    records = load_register(Path(REGISTER)) if records is None else records
    ids = [str(r["id"]) for r in records]
    blocks = []
    for rec in (r for r in records if r["where"].get("doc") in docs):
        claim = str(rec.get("chapter_claim") or rec["statement"])
        reason = short_reason(str(rec.get("chapter_verdict") or rec.get("note") or rec.get("why") or ""), ids)
        for part, text in (("claim", claim), ("reason", reason)):
            blocks.append(Block(f"claims table, {rec['id']}, {part}", VALUE.sub(lambda m: _blank(m.group()), " ".join(text.split()))))
    return blocks


#: a page that shows the whole register (chapter 11) calls this
REGISTER_CALL = re.compile(r"\bregister_page\(")
#: the register's reader-facing texts, read in full on the register's page; the statement, the
#: chapter_claim and a claimed text quote the sources, and are read where a chapter's table shows them
REGISTER_FIELDS = ("note", "why", "chapter_verdict")


def register_blocks(path: Path, records: list[dict] | None = None) -> list[Block]:
    """The register's texts for the page that shows the register (a code cell calling
    ``attnscale.claims.register_page``; none for another page): every record's ``note``,
    ``why`` and ``chapter_verdict`` in full (the page shows the note, else the why; the
    chapters' tables a reason cut from the chapter_verdict, else the note or why), with every
    computed ``{value...}`` blanked."""
    from attnscale.claims import REGISTER, load_register
    from attnscale.claims._tables import VALUE

    if path.suffix != ".ipynb":
        return []
    nb = json.loads(path.read_text(encoding="utf-8"))
    if not any(c["cell_type"] == "code" and REGISTER_CALL.search("".join(c["source"])) for c in nb["cells"]):
        return []
    records = load_register(Path(REGISTER)) if records is None else records
    return [Block(f"register, {rec['id']}, {field}", VALUE.sub(lambda m: _blank(m.group()), " ".join(str(rec[field]).split())))
            for rec in records for field in REGISTER_FIELDS if isinstance(rec.get(field), str)]


def page_numbers(path: Path) -> list[Found]:
    blocks = markdown_blocks(path) + table_blocks(path) + register_blocks(path)
    return [f for block in blocks for f in typed_numbers(block.text, block.where)]


# ---------------------------------------------------------------- the allow-lists


def allow_list_path(path: Path) -> Path:
    return QUOTED / f"{path.stem}.yml"


def allow_list_problems(entries: object) -> list[str]:
    """What is wrong with an allow-list's entries as written (not whether they are used)."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        return [f"the file must hold a YAML list of {{number, why}}, got {type(entries).__name__}"]
    problems, seen = [], set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            problems.append(f"entry {index}: must be a mapping {{number, why}}, got {entry!r}")
            continue
        number, why = entry.get("number"), entry.get("why")
        extra = set(entry) - {"number", "why"}
        if extra:
            problems.append(f"entry {index}: unknown keys {sorted(extra)} (only number and why)")
        if not isinstance(number, str):
            problems.append(f"entry {index}: number must be a quoted string such as \"2.10\" (YAML reads 2.10 as 2.1), got {number!r}")
        else:
            m = NUMBER.fullmatch(number)
            if not m or ("." not in m["digits"] and not m["percent"]) or (m["percent"] and m["percent"] != "%"):
                problems.append(f"entry {index}: {number!r} is not a number with a decimal point or a percent sign as the test reads it ('0.84', '5%')")
            if number in seen:
                problems.append(f"entry {index}: {number} is listed twice")
            seen.add(number)
        if not isinstance(why, str) or len(why.split()) < 2:
            problems.append(f"entry {index} ({number}): needs a 'why' that gives the reason the number is typed, got {why!r}")
    return problems


def load_allow_list(path: Path) -> list[dict]:
    """The entries of a page's allow-list (none when it has no file); fails on a malformed file."""
    file = allow_list_path(path)
    if not file.is_file():
        return []
    entries = yaml.safe_load(file.read_text(encoding="utf-8"))
    problems = allow_list_problems(entries)
    assert not problems, f"{file.relative_to(ROOT)}:\n  " + "\n  ".join(problems)
    return entries or []


def unlisted(found: list[Found], entries: list[dict]) -> list[Found]:
    allowed = {e["number"] for e in entries}
    return [f for f in found if f.number not in allowed]


def stale(found: list[Found], entries: list[dict]) -> list[str]:
    present = {f.number for f in found}
    return [e["number"] for e in entries if e["number"] not in present]


def _page_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", PAGES, ids=_page_id)
def test_every_typed_number_is_glued_or_listed_with_its_reason(path):
    """A number with a decimal point or a percent sign typed in the page's markdown is
    either glued from the cell that computes it or listed in the page's allow-list."""
    bad = unlisted(page_numbers(path), load_allow_list(path))
    assert not bad, (
        f"{_page_id(path)}: {len(bad)} typed number(s) neither glued nor listed in "
        f"{allow_list_path(path).relative_to(ROOT)} (glue a computed number with attnscale.page, or write it "
        "{value:.2f} in the register's chapter_verdict; list a quoted constant or a setting with its reason):\n  " + "\n  ".join(map(str, bad))
    )


@pytest.mark.parametrize("path", PAGES, ids=_page_id)
def test_allow_list_entries_have_a_reason_and_still_appear_on_their_page(path):
    entries = load_allow_list(path)  # fails on an entry without a why
    gone = stale(page_numbers(path), entries)
    assert not gone, f"{allow_list_path(path).relative_to(ROOT)} lists numbers that {_page_id(path)} no longer shows: {gone}"


def test_every_allow_list_belongs_to_a_page():
    stems = {p.stem for p in PAGES}
    orphans = sorted(f.name for f in QUOTED.glob("*.yml") if f.stem not in stems)
    assert not orphans, f"allow-lists in tests/data/quoted_numbers/ for no page of _toc.yml: {orphans}"
    assert len(stems) == len(PAGES), "two pages share a file stem, so their allow-lists would clash"


# ---------------------------------------------------------------- glue roles that resolve

#: ``{glue:text}`page.ipynb::key``` without a format: MyST-NB's role splits its text at the
#: last ":", so it looks for the key "page.ipynb:" and warns; ``page.ipynb::key:s`` works
CROSS_PAGE_TEXT = re.compile(r"\{glue:text\}`(?P<target>[^`]*::[^`:]*)`")


def cross_page_glue_without_format(markdown: str) -> list[str]:
    return [m["target"] for m in CROSS_PAGE_TEXT.finditer(markdown)]


@pytest.mark.parametrize("path", PAGES, ids=_page_id)
def test_a_glued_number_from_another_page_names_its_format(path):
    bad = [t for block in markdown_blocks(path) for t in cross_page_glue_without_format(block.text)]
    assert not bad, (f"{_page_id(path)}: {{glue:text}} from another page needs a format after the key "
                     f"(MyST-NB reads the text after the last ':' as one), e.g. `{bad[0]}:s`: {bad}")


def test_the_cross_page_check_reads_the_role_as_myst_nb_does():
    text = ("{glue:text}`ch05-a` {glue:text}`05_gaussian_scores.ipynb::ch05-b:s` "
            "{glue:text}`05_gaussian_scores.ipynb::ch05-c` {glue:}`05_gaussian_scores.ipynb::ch05-d`")
    assert cross_page_glue_without_format(text) == ["05_gaussian_scores.ipynb::ch05-c"]


# ---------------------------------------------------------------- the book's present tense

HISTORY = re.compile(
    r"\b(?:an?|the|our|this book's|the book's) (?:earlier|previous|former|older|first|old) (?:version|edition|draft|release|build)s?\b"
    r"|\bprevious(?:ly)? (?:version|edition|draft)s?\b"
    r"|\b(?:this|the) (?:chapter|page|book|section|table|figure|appendix|introduction|text)(?: once)? used to\b"
    r"|\bused to (?:say|state|claim|give|read|show|print|quote|call)\b"
    r"|\b(?:was|were|has been|have been|is now|are now|now) (?:corrected|fixed|amended|revised)\b"
    r"|\bwe (?:previously|formerly|once|earlier) (?:said|stated|claimed|gave|wrote|reported|showed|called|used|had)\b"
    r"|\bwe previously\b|\bformerly\b"
    r"|\b(?:this|the) (?:chapter|page|book|section) (?:once|formerly|originally) (?:said|stated|claimed|gave|read|showed)\b",
    re.I,
)


def history_sentences(markdown: str, where: str = "") -> list[str]:
    """The sentences of ``markdown``'s prose that talk about the book's own history (each once)."""
    flat = re.sub(r"\s+", " ", prose_of(markdown))
    found: list[str] = []
    for m in HISTORY.finditer(flat):
        start = max(flat.rfind(". ", 0, m.start()) + 2, m.start() - 120, 0)
        end = flat.find(". ", m.end())
        sentence = f"{where + ': ' if where else ''}{flat[start: end + 1 if end >= 0 else len(flat)].strip()[:240]}"
        if sentence not in found:
            found.append(sentence)
    return found


@pytest.mark.parametrize("path", PAGES, ids=_page_id)
def test_no_sentence_about_the_books_history(path):
    """The book speaks in its present tense: no "an earlier version said", "now corrected"."""
    found = [s for block in markdown_blocks(path) for s in history_sentences(block.text, block.where)]
    assert not found, f"{_page_id(path)}: say what holds, not what the book once said:\n  " + "\n  ".join(found)


# ---------------------------------------------------------------- the detectors themselves

MADE_UP_PAGE = r"""(sec-made-up-1.5)=
# A made-up page with 2.10 in its prose

The optimum is 2.10 at $n = 512$, about 5% above the usual scale, and
$\alpha = 3.53$ is the freezing point. In display maths:

$$
\alpha^* \approx 0.84\sqrt{\log n}, \qquad 95\%\text{ of the time}
$$ (eq-made-up)

A glued value {glue:text}`ch05-alpha-512` and another {glue:}`05_gaussian_scores.ipynb::ch05-gradient-2048`,
code `alpha = 7.25` and a call to {cite:p}`su2023gradient`, {ref}`sec-made-up-1.5`,
[a link](https://example.org/v2.5/page.html) and https://example.org/a/9.75, a
section 3.2.1, Python 3.11 (or 3.12+) and Jupyter Book 1.x, an integer 20,000 and $n = 2^{20}$, but $x = 1.5+y$.
A titled reference, {ref}`the 4.5 case <sec-made-up-1.5>`, is prose.

```{prf:observation} A title with 6.5 in it
:label: obs-made-up-0.25

Inside a statement, 12.5 percent and $-0.52$.
```

```python
beta = 8.125  # code, not prose
```

```{glue:figure} fig-made-up-1.75
:name: fig-made-up
:alt: A curve that rises to 0.99 as alpha grows.
:width: 80%

A caption that quotes 1.25.
```

<!-- a comment with 3.75 -->
```{eval-rst}
.. automodule:: attnscale.x  (version 9.5)
```
"""


def test_the_detector_finds_typed_numbers_and_ignores_glued_ones():
    found = typed_numbers(MADE_UP_PAGE)
    assert [f.number for f in found] == ["2.10", "2.10", "5%", "3.53", "0.84", "95%", "1.5", "4.5", "6.5", "12.5%", "0.52", "0.99", "1.25"]
    assert found[1].where == "line 4" and "at $n = 512$" in found[1].context
    assert found[3].context.startswith("$\\alpha = 3.53$")


def test_the_detector_reads_a_notebooks_markdown_cells_only(tmp_path):
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["The optimum is ", "{glue:text}`ch05-alpha` ", "and $\\alpha = 3.53$."]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": ["page.number('ch05-alpha', 2.014, '.2f')"],
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["2.01 and 7.5%\n"]}]},
        {"cell_type": "markdown", "metadata": {}, "source": ["About 5% more."]},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "05_made_up.ipynb"
    path.write_text(json.dumps(nb))
    found = page_numbers(path)
    assert [(f.number, f.where) for f in found] == [("3.53", "cell 0, line 1"), ("5%", "cell 2, line 1")]


def test_the_allow_list_judges_unlisted_and_stale_numbers():
    found = typed_numbers("A rate of 0.03, Su's 0.84 and a typed 2.10.")
    entries = [{"number": "0.03", "why": "the learning rate, a setting"}, {"number": "0.84", "why": "Su's coefficient as quoted"},
               {"number": "1.77", "why": "a number the page no longer shows"}]
    assert allow_list_problems(entries) == []
    assert [f.number for f in unlisted(found, entries)] == ["2.10"]
    assert stale(found, entries) == ["1.77"]


def test_a_malformed_allow_list_is_refused():
    problems = allow_list_problems([
        {"number": "0.84"},  # no why
        {"number": "0.5", "why": ""},  # an empty why
        {"number": 2.1, "why": "YAML read 2.10 as a float"},  # not quoted
        {"number": "12", "why": "an integer needs no entry"},
        {"number": "0.5", "why": "listed twice here"},
        {"number": "5%", "why": "a share", "where": "chapter 5"},  # an unknown key
    ])
    assert [p.split(":")[0] for p in problems] == ["entry 0 (0.84)", "entry 1 (0.5)", "entry 2", "entry 3", "entry 4", "entry 5"]
    assert "why" in problems[0] and "quoted string" in problems[2] and "twice" in problems[4] and "unknown keys" in problems[5]
    assert allow_list_problems({"number": "0.84", "why": "not in a list"}) != []
    assert allow_list_problems(None) == []


def test_the_history_detector_finds_sentences_about_earlier_versions():
    text = (
        "The optimum is about 2. An earlier version of this chapter said 3.16 here. "
        "The figure was corrected. This chapter used to quote the mean field. "
        "We previously gave a wrong bound, now corrected.\n\n"
        "The weight is no longer normalised. Vaswani et al. (2017) write that the dot products grow large."
    )
    found = history_sentences(text)
    assert len(found) == 4 and not any("no longer normalised" in s or "Vaswani" in s for s in found), found
    assert history_sentences("Su's note was written in 2023; the `was corrected` flag is code.") == []


def test_the_claims_table_texts_are_read_and_computed_values_are_not(tmp_path):
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# A page"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [],
         "source": ["display(Markdown(chapter_table(\"chapters/99_made_up\")))"]},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "99_made_up.ipynb"
    path.write_text(json.dumps(nb))
    base = {"source": {"file": "x"}, "claimed": 1.0, "verdict": "holds", "where": {"doc": "chapters/99_made_up", "label": "x"}}
    records = [
        dict(base, id="a", statement="c = 3.5 in the fit", chapter_verdict="recomputed {value[0]:.2f}, 12% off at $n = 40$"),
        dict(base, id="b", statement="plain", note="simulated 0.0055. A second sentence with 9.5 is not shown."),
        dict(base, id="c", statement="elsewhere", note="1.5", where={"doc": "chapters/98_other", "label": "x"}),
    ]
    found = [(f.number, f.where.split(", line")[0]) for b in table_blocks(path, records) for f in typed_numbers(b.text, b.where)]
    assert found == [("3.5", "claims table, a, claim"), ("12%", "claims table, a, reason"), ("0.0055", "claims table, b, reason")]
    assert table_blocks(tmp_path.parent / "intro.md", records) == []


def test_the_register_page_reads_every_note_why_and_chapter_verdict(tmp_path):
    """On the page that shows the register, each record's note, why and chapter_verdict are read in
    full (a second sentence too), computed values are not, and the statement is left to the tables."""
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [],
                     "source": ["display(HTML(register_page(rows)))"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "11_made_up.ipynb"
    path.write_text(json.dumps(nb))
    base = {"source": {"file": "x"}, "claimed": 1.0, "verdict": "holds", "where": {"doc": "chapters/99_made_up", "label": "x"}}
    records = [
        dict(base, id="a", statement="c = 3.5 in the fit", note="recomputed {value[0]:.2f}. Then 12% off at $n = 40$."),
        dict(base, id="b", statement="plain", why="a judgement", chapter_verdict="the drop is 0.49, and {value:.0%} of it"),
        dict(base, id="c", statement="plain", note="no number"),
    ]
    found = [(f.number, f.where.split(", line")[0]) for b in register_blocks(path, records) for f in typed_numbers(b.text, b.where)]
    assert found == [("12%", "register, a, note"), ("0.49", "register, b, chapter_verdict")]
    assert register_blocks(tmp_path.parent / "intro.md", records) == []
    other = tmp_path / "05_made_up.ipynb"
    other.write_text(json.dumps(dict(nb, cells=[dict(nb["cells"][0], source=["print(1)"])])))
    assert register_blocks(other, records) == []


# ---------------------------------------------------------------- labels written out in the register

#: the prefixes of the book's labels that are not English: a label starting with one of them,
#: written out in a register text, is a label the reader was meant to follow as a link
LABEL_PREFIXES = ("ch", "sec", "eq", "fig", "obs", "tab", "thm", "prop", "def")
LABEL_TARGET = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$", re.M)
LABEL_OPTION = re.compile(r"^\s*:(?:label|name):\s*(?P<label>\S+)\s*$", re.M)
#: a link to a place in the book, [text](#label): the one place a label may be written
ANCHOR_LINK = re.compile(r"\]\(#[^()\s]*\)")
#: the register's texts read by the reader (the page shows note or why; the tables chapter_verdict, chapter_claim)
LABELLED_FIELDS = ("note", "why", "chapter_verdict", "chapter_claim")


def book_labels(paths: list[Path]) -> set[str]:
    """The labels the pages define, by ``(label)=`` targets and ``:label:`` / ``:name:`` options,
    that begin with one of :data:`LABEL_PREFIXES` and a hyphen."""
    labels = set()
    for path in paths:
        if path.suffix == ".ipynb":
            texts = ["".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]
        else:
            texts = [path.read_text(encoding="utf-8")]
        for text in texts:
            labels.update(m["label"] for pattern in (LABEL_TARGET, LABEL_OPTION) for m in pattern.finditer(text))
    return {label for label in labels if label.split("-", 1)[0] in LABEL_PREFIXES and "-" in label}


def bare_labels(text: str, labels: set[str]) -> list[str]:
    """The labels of ``labels`` written in ``text`` other than as a link target ``](#label)``."""
    if not labels:
        return []
    pattern = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, sorted(labels, key=len, reverse=True))) + r")(?![\w-])")
    return pattern.findall(ANCHOR_LINK.sub("]", text))


def _label_pages() -> list[Path]:
    chapters = ROOT / "chapters"
    return sorted({*chapters.glob("*.ipynb"), *chapters.glob("*.md"), *ROOT.glob("*.md"), *PAGES})


def test_no_register_text_writes_out_a_label_of_the_book():
    """A note, why, chapter_verdict or chapter_claim points to a place in the book with a link
    [text](#label), never by the label written out: '(ch-cosine)', 'see sec-x' or 'fig-05-decoder'."""
    from attnscale.claims import REGISTER, load_register

    labels = book_labels(_label_pages())
    assert len(labels) > 20 and "ch-cosine" in labels, sorted(labels)
    bad = [(rec["id"], field, found) for rec in load_register(Path(REGISTER)) for field in LABELLED_FIELDS
           if isinstance(rec.get(field), str) and (found := bare_labels(rec[field], labels))]
    assert not bad, "labels written out in the register (link them as [text](#label)):\n  " + "\n  ".join(map(str, bad))


def test_the_label_detector_finds_labels_after_brackets_and_with_one_hyphen(tmp_path):
    """Labels come from the pages' targets and options, prefixed ones only (a label like
    'typical-row' is also English); one is found after '(' and at a sentence's end, not in a link."""
    page = tmp_path / "99_made_up.md"
    page.write_text("(ch-made)=\n# A\n\n(typical-row)=\n```{figure} x.png\n:name: fig-99-plot\n```\n"
                    "```{prf:theorem}\n:label: thm-made-up.2\n```\n(sec-made-up-1.5)=\n")
    notebook = tmp_path / "98_made_up.ipynb"
    notebook.write_text(json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["(eq-one)=\n", "$$x$$\n"]}]}))
    labels = book_labels([page, notebook])
    assert labels == {"ch-made", "fig-99-plot", "thm-made-up.2", "sec-made-up-1.5", "eq-one"}
    assert bare_labels("as shown (ch-made), and in fig-99-plot.", labels) == ["ch-made", "fig-99-plot"]
    assert bare_labels("see thm-made-up.2 and sec-made-up-1.5; eq-one", labels) == ["thm-made-up.2", "sec-made-up-1.5", "eq-one"]
    assert bare_labels("as shown [in chapter 6](#ch-made) and [the plot](#fig-99-plot)", labels) == []
    assert bare_labels("the typical-row optimum; ch-made-up and xch-made are other words", labels) == []
