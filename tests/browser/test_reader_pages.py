"""The chapter pages as a reader finishes them, read from the built HTML (no browser needed).

Run after the site is built (``make test`` runs it with the browser tests, after the strict
build); it reads ``_build/html``, or the site named by ``ATTNSCALE_SITE`` (the ``html``
folder of a build made elsewhere, e.g. ``--path-output /tmp/me`` gives
``/tmp/me/_build/html``). Every page of ``_toc.yml`` under ``chapters/`` is a chapter page.

Each rule of the reader's edition (CONTRIBUTING.md, "What a reader finishes") is one test,
parametrized over the chapter pages, and each is tried first on small broken pages below:

- **prose budget**: at most 3,000 words of prose (chapter 10's main page 3,500). Counted
  in the article: headings, paragraphs, lists, admonitions and numbered statements, figure
  captions and glued values. Not counted: code cells with their outputs (the claims tables
  and the check block among them), code blocks, display maths, tables, images and their alt
  text, section and caption numbers. An inline formula counts as one word.
- **opening statement**: after the title, the first block (code cells without output and
  labels aside) is a numbered statement (a sphinx-proof admonition with a number), or one
  paragraph of context and then the statement; the statement has at most 130 words (the rule
  says about 120): its title and prose, an inline formula one word and a display equation
  one word.
- **what to remember**: the page's last section (h2) is "What to remember", with three to
  five sentences.
- **figures**: every image of the article is in a ``<figure>`` with a non-empty caption and
  alt text of at least eight words that is not a file name.
- **checks collapsed**: a page whose notebook calls ``checks.*`` shows exactly one
  ``details.page-checks`` block whose summary reads "N checks on this page passed" (N >= 1,
  one list item per check), right before "What to remember", and no check line elsewhere
  in its outputs.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, NavigableString, Tag

from book_toc import toc_entries

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ["ATTNSCALE_SITE"]) if os.environ.get("ATTNSCALE_SITE") else ROOT / "_build" / "html"

WORD_LIMIT = 3000
WORD_LIMITS = {"10_training": 3500}  # chapter 10's main page: the experiment and its findings
OPENING_LIMIT = 130  # "at most about 120 words"
MIN_ALT_WORDS = 8
REMEMBER = "What to remember"
SENTENCES = (3, 5)


def chapter_stems() -> list[str]:
    """The pages of ``_toc.yml`` under ``chapters/``, in the book's order."""
    return [f.split("/", 1)[1] for f in toc_entries() if f.startswith("chapters/")]


CHAPTERS = chapter_stems()


@lru_cache(maxsize=None)
def chapter(stem: str) -> Tag:
    """The chapter's article, parsed once (the measures below only read it)."""
    if not (SITE / "index.html").is_file():
        pytest.fail(f"the site is not built at {SITE}: run `make book` (or `make test`, which builds it first)")
    path = SITE / "chapters" / f"{stem}.html"
    assert path.is_file(), f"chapters/{stem} is in _toc.yml but {path} was not built"
    return article_of(path.read_text(encoding="utf-8"))


def article_of(html: str) -> Tag:
    """The page's article (only that part of the page is parsed: the rest is navigation)."""
    start = html.find("<article")
    end = html.find("</article>", start)
    soup = BeautifulSoup(html[start:end + len("</article>")] if 0 <= start < end else html, "html.parser")
    article = soup.find("article") or soup.body or soup
    assert article.get_text(strip=True), "the page has no article"
    return article


# ---------------------------------------------------------------- measures


def _classes(tag: Tag) -> list[str]:
    return tag.get("class") or []


def not_prose(tag: Tag) -> bool:
    """What the prose budget does not count: code cells with their outputs, code blocks,
    display maths, tables, images, scripts, and the numbers and link marks Sphinx adds to
    headings and captions."""
    classes = _classes(tag)
    return (tag.name in ("pre", "table", "img", "script", "style")
            or (tag.name == "div" and ("cell" in classes or "math" in classes or any("highlight" in c for c in classes)))
            or (tag.name == "a" and "headerlink" in classes)
            or (tag.name == "span" and ("section-number" in classes or "caption-number" in classes))
            or (tag.name == "mjx-container" and tag.get("display") == "true"))


def _inline_maths(tag: Tag) -> bool:
    return (tag.name == "span" and "math" in _classes(tag)) or (tag.name == "mjx-container" and tag.get("display") != "true")


def _display_maths(tag: Tag) -> bool:
    return (tag.name == "div" and "math" in _classes(tag)) or (tag.name == "mjx-container" and tag.get("display") == "true")


def _strings(node: Tag, skip, display_word: bool = False):
    """The text of ``node`` outside what ``skip`` says, an inline formula as the word ``M``
    (and, if ``display_word``, a display equation too)."""
    for child in node.children:
        if isinstance(child, Tag):
            if _inline_maths(child) or (display_word and _display_maths(child)):
                yield " M "
            elif not skip(child):
                block = child.name not in INLINE
                yield " " if block else ""
                yield from _strings(child, skip, display_word)
                yield " " if block else ""
        elif type(child) is NavigableString:  # not a comment, doctype or CDATA
            yield str(child)


INLINE = {"a", "em", "strong", "b", "i", "span", "code", "sub", "sup", "abbr", "cite", "small", "mark", "kbd", "var", "q", "s", "u"}


def text_of(node: Tag, skip=not_prose, display_word: bool = False) -> str:
    return "".join(_strings(node, skip, display_word))


def words(text: str) -> int:
    return sum(1 for token in text.split() if re.search(r"\w", token))


def prose_words(article: Tag) -> int:
    """The words of the article's prose (see the module's docstring for what counts)."""
    return words(text_of(article))


def _blocks_after_title(article: Tag) -> list[Tag]:
    """The blocks that follow the page's h1 in its section, labels and silent code cells aside."""
    title = article.find("h1")
    assert title is not None, "the page has no title (h1)"
    blocks = []
    for sibling in title.find_next_siblings():
        if sibling.name == "span" and not sibling.get_text(strip=True):
            continue  # a label target
        if "cell" in (sibling.get("class") or []) and not sibling.select_one("div.cell_output"):
            continue  # a code cell that shows no output (its source is hidden)
        blocks.append(sibling)
    return blocks


def _numbered_statement(block: Tag) -> bool:
    classes = block.get("class") or []
    number = block.select_one(".admonition-title .caption-number")
    return block.name == "div" and "proof" in classes and number is not None and bool(number.get_text(strip=True))


def opening_statement(article: Tag) -> tuple[Tag | None, str]:
    """The numbered statement that opens the page, or None and why not."""
    blocks = _blocks_after_title(article)
    if blocks and _numbered_statement(blocks[0]):
        return blocks[0], ""
    if len(blocks) > 1 and blocks[0].name == "p" and _numbered_statement(blocks[1]):
        return blocks[1], ""
    shown = ", ".join(f"<{b.name} class='{' '.join(b.get('class') or [])}'>" for b in blocks[:3])
    return None, f"the title is not followed by a numbered statement (or one paragraph and then one); it is followed by {shown}"


def statement_words(statement: Tag) -> int:
    """Words of a statement's title and prose: an inline formula one word, a display equation one."""
    return words(text_of(statement, skip=lambda t: not_prose(t) and not _display_maths(t), display_word=True))


def h2_sections(article: Tag) -> list[Tag]:
    return [h.parent for h in article.find_all("h2") if h.parent.name == "section"]


def heading_text(section: Tag) -> str:
    return " ".join(text_of(section.find(["h1", "h2", "h3"])).split())


ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|et al|cf|vs|approx|resp)\.|\b(?:Figs?|Eqs?|eqs?|No|Sec|p|pp)\.(?=\s*\d)", re.I)
SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s|$)")


def sentences(text: str) -> int:
    """Sentences in a block of text: its sentence ends, and at least one if it has words."""
    text = ABBREVIATIONS.sub("abbr", " ".join(text.split()))
    return max(len(SENTENCE_END.findall(text)), 1 if words(text) else 0)


def remember_sentences(section: Tag) -> int:
    """Sentences of a section's prose: each paragraph or list item counted on its own, so an
    item without a full stop is one sentence."""
    blocks = [b for b in section.find_all(["p", "li"]) if not b.find(["p", "li"]) and not any(not_prose(a) for a in b.parents)]
    return sum(sentences(text_of(b)) for b in blocks)


FILE_NAME = re.compile(r"^\S+\.(?:png|jpe?g|svg|gif|webp|pdf)$", re.I)


def figure_problems(article: Tag) -> list[str]:
    problems = []
    for index, img in enumerate(article.find_all("img")):
        name = f"image {index + 1} ({(img.get('src') or '?').rsplit('/', 1)[-1][:24]})"
        figure = img.find_parent("figure")
        caption = figure.find("figcaption") if figure else None
        caption_text = text_of(caption).strip() if caption else ""
        if figure is None:
            problems.append(f"{name} is not in a numbered figure (show it with page.figure and {{glue:figure}})")
        elif not caption_text:
            problems.append(f"{name} has no caption")
        alt = " ".join((img.get("alt") or "").split())
        if FILE_NAME.match(alt) or words(alt) < MIN_ALT_WORDS:
            problems.append(f"{name} has alt text {alt[:60]!r}: describe what the figure shows in {MIN_ALT_WORDS} words or more")
    return problems


SUMMARY = re.compile(r"^(\d+) checks? on this page passed$")
CHECK_LINE = re.compile(
    r"^(?:identity holds|holds|claim is wrong): |: all \d+ values agree \(rtol |: \|value\| <= |\S vs \S.* \(rtol [^)]*\)$", re.M
)


def makes_checks(stem: str) -> bool:
    """Whether the chapter's notebook calls a check."""
    nb = json.loads((ROOT / "chapters" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    source = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    return re.search(r"\bchecks\.(?:identity|close|holds|differs)\(", source) is not None


def check_block_problems(article: Tag) -> list[str]:
    """What is wrong with a page's collapsed block of checks, for a page that makes checks."""
    blocks = article.select("details.page-checks")
    if len(blocks) != 1:
        return [f"{len(blocks)} collapsed blocks of checks (details.page-checks), not one: end the page with checks.page_summary()"]
    block, problems = blocks[0], []
    summary = block.find("summary")
    said = " ".join(summary.get_text(" ").split()) if summary else ""
    m = SUMMARY.match(said)
    items = len(block.find_all("li"))
    if not m or int(m[1]) < 1:
        problems.append(f"the block's summary reads {said!r}, not 'N checks on this page passed'")
    elif int(m[1]) != items:
        problems.append(f"the summary counts {m[1]} checks but the block lists {items}")
    sections = h2_sections(article)
    if not sections or heading_text(sections[-1]) != REMEMBER:
        problems.append(f"the block must stand right before the section '{REMEMBER}', which the page does not end with")
    else:
        before = sections[-1].find_previous_sibling()
        while before is not None and before.name == "section":  # the end of the section before
            inside = before.find_all(True, recursive=False)
            before = inside[-1] if inside else None
        if before is None or before is not block.find_parent("div", class_="cell"):
            problems.append(f"the block is not the last thing before the section '{REMEMBER}'")
    shown = []
    for out in article.select("div.cell_output"):
        if out.find_parent("details", class_="page-checks") or out.select_one("details.page-checks"):
            continue
        shown += [line for line in out.get_text("\n").split("\n") if CHECK_LINE.search(line.strip())]
    if shown:
        problems.append(f"{len(shown)} check line(s) printed outside the block, e.g. {shown[0].strip()[:80]!r}")
    return problems


# ---------------------------------------------------------------- the rules on every chapter


@pytest.mark.parametrize("stem", CHAPTERS)
def test_prose_fits_the_reading_budget(stem):
    limit = WORD_LIMITS.get(stem, WORD_LIMIT)
    count = prose_words(chapter(stem))
    assert count <= limit, f"chapters/{stem}: {count:,} words of prose, more than {limit:,}: cut, or move detail to an appendix"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_page_opens_with_a_short_numbered_statement(stem):
    statement, why = opening_statement(chapter(stem))
    assert statement is not None, f"chapters/{stem}: {why}"
    count = statement_words(statement)
    assert count <= OPENING_LIMIT, f"chapters/{stem}: the opening statement has {count} words, more than {OPENING_LIMIT}: state the result, move detail into the body"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_page_ends_with_what_to_remember_in_three_to_five_sentences(stem):
    sections = h2_sections(chapter(stem))
    assert sections, f"chapters/{stem} has no section"
    last = heading_text(sections[-1])
    assert last == REMEMBER, f"chapters/{stem}: the last section is {last!r}, not {REMEMBER!r}"
    count = remember_sentences(sections[-1])
    assert SENTENCES[0] <= count <= SENTENCES[1], f"chapters/{stem}: '{REMEMBER}' has {count} sentences, not {SENTENCES[0]} to {SENTENCES[1]}"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_every_figure_has_a_caption_and_descriptive_alt_text(stem):
    problems = figure_problems(chapter(stem))
    assert not problems, f"chapters/{stem}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("stem", CHAPTERS)
def test_checks_are_collapsed_into_one_block_before_what_to_remember(stem):
    if not makes_checks(stem):
        pytest.skip(f"chapters/{stem} makes no check")
    problems = check_block_problems(chapter(stem))
    assert not problems, f"chapters/{stem}:\n  " + "\n  ".join(problems)


# ---------------------------------------------------------------- the rules on broken pages


def _page(body: str) -> Tag:
    return article_of(f'<html><body><article class="bd-article"><section id="t">{body}</section></article></body></html>')


def _statement(text: str, number: str = "Theorem 1.1 ") -> str:
    return (f'<div class="proof theorem admonition"><p class="admonition-title"><span class="caption-number">{number}</span>'
            f' (A title)</p><section class="theorem-content"><p>{text}</p></section></div>')


PARAGRAPH = "<p>" + "word " * 100 + "</p>"
CHECKS = ('<div class="cell docutils container"><div class="cell_output docutils container"><div class="output text_html">'
          '<details class="page-checks"><summary>2 checks on this page passed</summary><ul><li>holds: a</li><li>holds: b</li></ul>'
          "</details></div></div></div>")
REMEMBER_OK = f'<section id="r"><h2><span class="section-number">1.2. </span>{REMEMBER}<a class="headerlink">#</a></h2><p>One. Two, e.g. this. Three.</p></section>'
GOOD = ('<h1>1. A title<a class="headerlink">#</a></h1><p>Context.</p>' + _statement("The result.")
        + f'<section id="a"><h2>Body</h2>{PARAGRAPH}{CHECKS}</section>' + REMEMBER_OK)


def test_a_good_page_passes_every_rule():
    page = _page(GOOD)
    assert prose_words(page) < 200
    statement, why = opening_statement(page)
    assert statement is not None and statement_words(statement) == 4, why  # "(A title)", "The result."
    assert heading_text(h2_sections(page)[-1]) == REMEMBER and remember_sentences(h2_sections(page)[-1]) == 3
    assert figure_problems(page) == [] and check_block_problems(page) == []


def test_the_budget_counts_prose_and_not_code_outputs_maths_or_tables():
    code = '<div class="cell"><div class="cell_input"><pre>' + "x = 1\n" * 500 + "</pre></div><div class='cell_output'>" + "out " * 900 + "</div></div>"
    table = "<table><tr>" + "<td>cell</td>" * 900 + "</tr></table>"
    maths = '<div class="math">\\[' + " a +" * 900 + " b\\]</div>" + "<p>Inline " + '<span class="math">\\(a + b + c + d\\)</span> ' * 10 + "</p>"
    page = _page("<h1>T</h1>" + code + table + maths)
    assert prose_words(page) == 1 + 1 + 10  # the title, "Inline", ten formulas of one word each
    long = _page("<h1>T</h1>" + PARAGRAPH * 31)
    assert prose_words(long) == 3101 > WORD_LIMIT


def test_the_opening_rule_catches_a_missing_or_long_statement():
    missing, why = opening_statement(_page("<h1>T</h1><p>Context.</p><p>More context.</p>" + _statement("Late.")))
    assert missing is None and "not followed by a numbered statement" in why
    unnumbered, _ = opening_statement(_page("<h1>T</h1>" + _statement("No number.", number="")))
    assert unnumbered is None
    long, _ = opening_statement(_page("<h1>T</h1>" + _statement("word " * 128 + '<span class="math">\\(x^2 + y^2\\)</span>')))
    assert statement_words(long) == 2 + 128 + 1 > OPENING_LIMIT  # "(A title)", the words, one formula
    with_display = _statement("Short. " + '<div class="math">\\[' + " a +" * 300 + " b\\]</div>")
    assert statement_words(opening_statement(_page("<h1>T</h1>" + with_display))[0]) == 2 + 1 + 1


def test_the_ending_rule_catches_a_wrong_last_section_and_a_wrong_length():
    wrong_last = _page(GOOD + '<section id="z"><h2>What the sources say</h2><p>A table.</p></section>')
    assert heading_text(h2_sections(wrong_last)[-1]) == "What the sources say"
    two = _page(f'<h1>T</h1><section id="r"><h2>{REMEMBER}</h2><ul><li><p>One point</p></li><li><p>Another. And one more? No.</p></li></ul></section>')
    assert remember_sentences(h2_sections(two)[-1]) == 4
    long = _page(f'<h1>T</h1><section id="r"><h2>{REMEMBER}</h2><p>' + "A sentence, Fig. 2 and $x$. " * 6 + "</p></section>")
    assert remember_sentences(h2_sections(long)[-1]) == 6 > SENTENCES[1]
    short = _page(f'<h1>T</h1><section id="r"><h2>{REMEMBER}</h2><p>Only one, i.e. this.</p></section>')
    assert remember_sentences(h2_sections(short)[-1]) == 1 < SENTENCES[0]


def test_the_figure_rule_catches_bare_uncaptioned_and_badly_described_images():
    alt = "a heat map of the Jacobian with a positive diagonal"
    page = _page(
        f'<div class="cell_output"><img src="../_images/a.png" alt="{alt}"></div>'  # not in a figure
        f'<figure><img src="b.png" alt="{alt}"><figcaption><p><span class="caption-number">Fig. 1 </span></p></figcaption></figure>'  # empty caption
        '<figure><img src="c.png" alt="c.png"><figcaption><p>A caption.</p></figcaption></figure>'  # a file name
        '<figure><img src="d.png" alt="a curve"><figcaption><p>A caption.</p></figcaption></figure>'  # too short
        f'<figure><img src="e.png" alt="{alt}"><figcaption><p>A caption.</p></figcaption></figure>'  # fine
    )
    problems = figure_problems(page)
    assert [p.split(" ", 3)[2] for p in problems] == ["(a.png)", "(b.png)", "(c.png)", "(d.png)"], problems
    assert "numbered figure" in problems[0] and "no caption" in problems[1] and "alt text" in problems[2] + problems[3]


def test_the_check_rule_catches_missing_miscounted_misplaced_and_printed_checks():
    body = '<h1>T</h1>' + _statement("R.")
    none = check_block_problems(_page(body + REMEMBER_OK))
    assert none and "0 collapsed blocks" in none[0]
    wrong_count = CHECKS.replace("2 checks", "3 checks")
    assert "counts 3 checks but the block lists 2" in check_block_problems(_page(body + wrong_count + REMEMBER_OK))[0]
    misplaced = _page(body + CHECKS + "<p>A paragraph after the block.</p>" + REMEMBER_OK)
    assert any("not the last thing before" in p for p in check_block_problems(misplaced))
    printed = ('<div class="cell"><div class="cell_output"><div class="output stream"><pre>identity holds: x = x\n'
               "tr J: 1.00392 vs 1.00392 (rtol 1e-14)\n</pre></div></div></div>")
    problems = check_block_problems(_page(body + printed + CHECKS + REMEMBER_OK))
    assert problems == ["2 check line(s) printed outside the block, e.g. 'identity holds: x = x'"], problems
    summary = CHECKS.replace("2 checks on this page passed", "all good")
    assert "not 'N checks on this page passed'" in check_block_problems(_page(body + summary + REMEMBER_OK))[0]


def test_makes_checks_reads_the_notebooks_code():
    assert makes_checks("01_softmax_jacobian")
