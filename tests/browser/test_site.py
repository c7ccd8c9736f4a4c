"""The built site as a reader sees it: every page of the table of contents in
headless Chromium (Debian's ``chromium`` through Playwright), served locally.

Run after the site is built (``make test`` does: this is its last stage). It
reads ``_build/html``, or the site named by ``ATTNSCALE_SITE`` (the ``html``
folder of a build made elsewhere: ``--path-output /tmp/me`` gives
``/tmp/me/_build/html``). Without Chromium the test is skipped with
instructions, except under ``CI=true``, where it must run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from attnscale.claims._page import part_of

from book_toc import toc_entries

from sitecheck import (
    CHROMIUM_ARGS,
    MIN_CONTRAST,
    broken_links,
    chromium_path,
    contrast_problems,
    layout_problems,
    load_typeset,
    page_url,
    serve,
    settled_layout,
    visit,
)

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ["ATTNSCALE_SITE"]) if os.environ.get("ATTNSCALE_SITE") else ROOT / "_build" / "html"
SHOTS = SITE.parent / "screenshots"
IN_CI = os.environ.get("CI", "").lower() == "true"


def toc_pages() -> list[Path]:
    return [SITE / f"{f}.html" for f in toc_entries()]


@pytest.fixture(scope="module")
def browser():
    path = chromium_path()
    if path is None:
        message = "no Chromium found: install Debian's package (sudo apt-get install chromium) or set CHROMIUM_PATH"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    if not (SITE / "index.html").is_file():
        pytest.fail("the site is not built: run `make book` (or `make test`, which builds it first)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def base_url():
    with serve(SITE) as url:
        yield url


PLACEHOLDERS = ("scale-of-attention/scale-of-attention", "executablebooks/jupyter-book", "mybinder.org/v2/gh/executablebooks", "binder-examples/")


def test_no_placeholder_repository_address_on_the_site():
    """No button or link may point at a repository that is not the book's."""
    if not (SITE / "index.html").is_file():
        pytest.fail("the site is not built: run `make book` (or `make test`, which builds it first)")
    found = {(page.name, p) for page in SITE.rglob("*.html") for p in PLACEHOLDERS if p in page.read_text(encoding="utf-8")}
    assert not found, f"placeholder addresses on the site: {sorted(found)[:5]}"


def _all_pages() -> list[Path]:
    extra = [SITE / name for name in ("genindex.html", "proof.html", "prf-prf.html") if (SITE / name).is_file()]
    return toc_pages() + extra


WIDTHS = (1280, 390)  # a desktop's and a phone's

# What the per-page tests measure on a loaded page: every figure's source (a cell's
# output or a numbered figure glued from one),
# shown width and natural width (FIGURES), and the styles the theme test judges
# (DARK_STYLE). They are read by the survey below, which takes them all in one visit.
FIGURES = """() => [...document.querySelectorAll('.cell_output img, .bd-article figure img')].map(
  (i) => [new URL(i.getAttribute('src'), document.baseURI).pathname, i.getBoundingClientRect().width, i.naturalWidth])"""

DARK_STYLE = """() => {
  const img = document.querySelector('.bd-article figure img, .cell_output img');
  const s = img ? getComputedStyle(img) : null;
  return {filter: s && s.filter, background: s && s.backgroundColor};
}"""

THEMES = ("light", "dark")
THEME_PAGES = ("01_softmax_jacobian",)  # a chapter with figures


def styles_in_each_theme(page) -> dict:
    """DARK_STYLE read with the page switched to each theme in turn. The page's
    own theme is put back afterwards, so nothing measured later sees a change."""
    own = page.evaluate("() => document.documentElement.dataset.theme ?? null")
    styles = {}
    for theme in THEMES:
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        styles[theme] = page.evaluate(DARK_STYLE)
    page.evaluate("(t) => { if (t === null) delete document.documentElement.dataset.theme; else document.documentElement.dataset.theme = t; }", own)
    return styles


def survey_page(browser, url: str, themes: bool = False) -> dict:
    """Visit ``url`` once and gather everything the per-page tests assert on.

    Loading a page and typesetting its maths is what makes this stage slow, so a
    page is loaded once, at a desktop's width, and then narrowed to a phone's
    (as a reader turning a tablet would). Returned:

    - ``problems``: what :func:`sitecheck.visit` reports (console errors, failed
      requests, raw or broken maths, missing images). Its listeners stay on
      until the page closes, so anything that goes wrong while the page is
      measured below is counted too;
    - per width, ``layout`` (:func:`sitecheck.settled_layout`), ``figures``
      (FIGURES, read after ``visit`` has waited for every image) and, if
      ``themes``, ``styles`` (:func:`styles_in_each_theme`);
    - ``contrast``: per theme, the texts judged and those below MIN_CONTRAST
      (:func:`sitecheck.contrast_problems`), at the desktop's width only: the
      phone's layout hides the sidebars but colours no text differently.
    """
    page = browser.new_page(viewport={"width": WIDTHS[0], "height": 844})
    try:
        found = {"problems": visit(page, url), "layout": {}, "figures": {}, "styles": {}}
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 844})
            found["layout"][width] = settled_layout(page)
            found["figures"][width] = page.evaluate(FIGURES)
            if themes:
                found["styles"][width] = styles_in_each_theme(page)
            if width == WIDTHS[0]:
                found["contrast"] = contrast_problems(page, THEMES)
    finally:
        page.close()
    return found


@pytest.fixture(scope="module")
def survey(browser, base_url):
    """``survey(page_file)``: :func:`survey_page` of a built page, taken the first
    time a test asks for that page and kept for the module's other tests, so
    each page is loaded once however many tests look at it."""
    surveyed: dict[Path, dict] = {}

    def of(page_file: Path) -> dict:
        if page_file not in surveyed:
            url = page_url(base_url, SITE, page_file)
            surveyed[page_file] = survey_page(browser, url, themes=page_file.stem in THEME_PAGES)
        return surveyed[page_file]

    return of


@pytest.mark.parametrize("page_file", _all_pages(), ids=lambda p: p.stem)
def test_page_reads_cleanly_at_both_widths(survey, page_file):
    """Loaded once: no console error, failed request, raw or broken maths, or
    missing image; then at a desktop's and a phone's width, nothing scrolls
    sideways and every display equation fits the column or sits in a scroll
    box of its own."""
    assert page_file.is_file(), f"{page_file.name} is in _toc.yml but was not built"
    found = survey(page_file)
    problems, layout = found["problems"], found["layout"]
    assert problems == {"console": [], "requests": [], "math": [], "images": []}, problems
    bad = {width: found for width, found in layout.items() if found["sideways"] > 1 or found["overflowing"]}
    assert not bad, bad


@pytest.mark.parametrize("page_file", _all_pages(), ids=lambda p: p.stem)
def test_every_text_has_enough_contrast_in_both_themes(survey, page_file):
    """In the light and the dark theme, every text a reader sees on the page (collapsed
    blocks opened; maths included, text inside images not) has a contrast of at least
    MIN_CONTRAST (WCAG AA, 4.5:1) against its effective background, measured in the shared
    survey (see :data:`sitecheck.CONTRAST` for what is judged and how)."""
    assert page_file.is_file(), f"{page_file.name} was not built"
    contrast = survey(page_file)["contrast"]
    for theme in THEMES:
        assert contrast[theme]["count"] > 10, (theme, contrast[theme])  # the page's text was read
    low = {theme: contrast[theme]["low"] for theme in THEMES if contrast[theme]["low"]}
    summary = {theme: f"{len(found)} texts below {MIN_CONTRAST}:1, e.g. " + "; ".join(
        f"{f['ratio']}:1 {f['element']} {f['text']!r} ({f['color']} on {f['background']})" for f in found[:5]) for theme, found in low.items()}
    assert not low, summary


def test_internal_links_and_anchors_resolve():
    if not (SITE / "index.html").is_file():
        pytest.fail("the site is not built")
    assert broken_links(SITE, toc_pages()) == []


def test_search_finds_lambert(browser, base_url):
    page = browser.new_page()
    try:
        page.goto(base_url + "search.html?q=Lambert", wait_until="load")
        page.wait_for_selector("#search-results li", timeout=30_000)
        hits = page.locator("#search-results li").count()
    finally:
        page.close()
    assert hits > 0


def test_the_introduction_shows_the_recommendation_on_its_first_screen(browser, base_url):
    """At 1280 x 800 the introduction's "What to use" box shows all its text (its four
    situations and its scope) on the first screen; a screenshot is saved for a person to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        visit(page, page_url(base_url, SITE, SITE / "intro.html"))  # index.html redirects here
        box = page.locator(".admonition.recommendation")
        assert box.count() == 1
        # every line of advice and the scope under it (the box's padding may run below)
        bottoms = page.evaluate("""() => [...document.querySelectorAll('.admonition.recommendation li, .admonition.recommendation > p')]
            .map(e => e.getBoundingClientRect().bottom)""")
        bounds = box.bounding_box()
        text = box.inner_text()
        page.screenshot(path=str(SHOTS / "introduction_first_screen.png"), full_page=False)
    finally:
        page.close()
    assert bounds is not None and bounds["y"] >= 0 and len(bottoms) >= 5 and max(bottoms) <= 800, (bounds, bottoms)
    for words in ("Dot-product attention", "Cosine (QK-norm) attention", "Longer rows than in training", "Comparing widths"):
        assert words in text


def test_screenshots_for_a_person(browser, base_url):
    """A desktop's and a phone's view of chapter 5, saved for a person to look at.
    The page is loaded once and narrowed for the phone's picture (measured to give
    the same picture, byte for byte, as loading it afresh at the phone's size)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    chapter = SITE / "chapters" / "05_gaussian_scores.html"
    sizes = (("desktop", {"width": 1280, "height": 900}), ("phone", {"width": 390, "height": 844}))
    page = browser.new_page(viewport=sizes[0][1])
    try:
        visit(page, page_url(base_url, SITE, chapter))
        for name, size in sizes:
            page.set_viewport_size(size)
            settled_layout(page)  # waits for the reflow after the change of size
            page.screenshot(path=str(SHOTS / f"gaussian_scores_{name}.png"), full_page=False)
            assert (SHOTS / f"gaussian_scores_{name}.png").stat().st_size > 10_000
    finally:
        page.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_figure_text_renders_at_least_ten_css_pixels(survey, width):
    """At a desktop's and a phone's width, every figure of every chapter shows its
    smallest text at MIN_TEXT_PX CSS pixels or more: the height recorded in the image
    (its smallest font in image pixels, written by attnscale.plotting.png) times the
    width the page gives the image over its natural width, both measured here (in the
    shared survey of each page). (On a phone a figure keeps its natural size and
    scrolls inside its own box.)"""
    from urllib.parse import unquote

    from attnscale.plotting import MIN_TEXT_PX, TEXT_KEY, text_chunks

    sizes, missing = {}, []
    for page_file in toc_pages():
        for src, shown, natural in survey(page_file)["figures"][width]:
            image = SITE / unquote(src).lstrip("/")
            name = f"{page_file.stem}: {image.name}"
            chunks = text_chunks(image.read_bytes()) if image.suffix == ".png" else {}
            if TEXT_KEY not in chunks or not natural:
                missing.append(name)
            else:
                sizes[name] = float(chunks[TEXT_KEY]) * shown / natural
    assert not missing, f"figures without a recorded text size (not made by attnscale.plotting.png): {missing}"
    assert len(sizes) >= 10, sizes  # the book has figures in ten chapters
    small = {k: round(v, 2) for k, v in sizes.items() if v < MIN_TEXT_PX}
    assert not small, f"text below {MIN_TEXT_PX} CSS px at {width} px: {small}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("theme", THEMES)
def test_figures_are_undimmed_on_white_in_both_themes(survey, theme, width):
    """Figures are shown undimmed on white in both themes, at a desktop's and a phone's width
    (styles read in the shared survey, see :func:`styles_in_each_theme`). The contrast of
    every text, the register's ids among them, is test_every_text_has_enough_contrast_in_both_themes'."""
    figure = survey(SITE / "chapters" / "01_softmax_jacobian.html")["styles"][width][theme]
    assert figure["filter"] in (None, "none"), figure
    if theme == "dark":
        assert figure["background"] == "rgb(255, 255, 255)", figure


def fields_of(r: dict) -> list[str]:
    """The register fields chapter 11 typesets: the claim, the note and a claimed text."""
    return [r.get("chapter_claim", ""), r.get("note") or r.get("why") or "", r["claimed"] if isinstance(r["claimed"], str) else ""]


def test_register_filters_by_note_and_verdict(browser, base_url):
    """Chapter 11's menus show exactly the records of the chosen note and verdict
    (counted against the register itself), and hide the sections left empty; the
    claims, notes and claimed texts written with maths are typeset (one MathJax formula
    per $...$)."""
    records = yaml.safe_load((ROOT / "chapters" / "claims.yml").read_text())
    page = browser.new_page()
    try:
        assert load_typeset(page, page_url(base_url, SITE, SITE / "chapters" / "11_claims_register.html"))
        formulas = sum(f.count("$") // 2 for r in records for f in fields_of(r))
        assert page.evaluate("() => document.querySelectorAll('table.claims mjx-container').length") == formulas > 0
        rows = "section.claims-source tbody tr"
        visible = f"() => [...document.querySelectorAll('{rows}')].filter(r => r.offsetParent !== null).map(r => [r.dataset.note, r.dataset.verdict])"
        assert len(page.evaluate(visible)) == len(records)
        page.select_option("#claims-verdict", "wrong")
        shown = page.evaluate(visible)
        assert len(shown) == sum(r["verdict"] == "wrong" for r in records) and {v for _, v in shown} == {"wrong"}
        note = "su2022"  # the main text of Su (2022); its appended notes are a section of their own
        page.select_option("#claims-note", note)
        shown = page.evaluate(visible)
        assert len(shown) == sum(r["verdict"] == "wrong" and part_of(r["source"]) == note for r in records) > 0
        assert {tuple(r) for r in shown} == {(note, "wrong")}
        sections = page.evaluate("() => [...document.querySelectorAll('section.claims-source')].filter(s => s.offsetParent !== null).length")
        assert sections == 1
        assert page.inner_text("#claims-shown").startswith(f"{len(shown)} records")
    finally:
        page.close()


BROKEN_PAGE = """<!doctype html><html><head><title>broken</title></head><body>
<p>An unrendered formula: $$\\frac{a}{b}$$</p>
<img src="missing.png" alt="missing">
<a href="nowhere.html">a dead link</a> <a href="#no-such-anchor">a dead anchor</a>
<script>console.error("boom")</script>
</body></html>"""


FAINT_PAGE = """<!doctype html><html><head><title>faint</title><style>
html[data-theme="light"] body { background: #ffffff; color: #222832; }
html[data-theme="dark"] body { background: #121212; color: #ced6dd; }
.faint { color: #b0b0b0; }
html[data-theme="dark"] .card { background: #ced6dd; }
.veil { background: rgba(0, 0, 0, 0.6); }
.ghost { opacity: 0.2; }
</style></head><body>
<p>Readable in both themes.</p>
<p class="faint">Faint on white.</p>
<div class="card"><h3>A heading on a light card</h3></div>
<div class="veil"><span style="color: #444">Dark on a dark veil</span></div>
<p class="ghost">Nearly transparent.</p>
<details><summary>Open me</summary><p style="color: #f0f0f0">Pale, behind a fold.</p></details>
<p style="display: none; color: #ffffff">Never shown.</p>
<span class="visually-hidden" style="color: #ffffff">For screen readers.</span>
</body></html>"""


def test_the_contrast_check_catches_faint_text(browser, tmp_path):
    """The contrast measure, directly and through survey_page (what the page test reads),
    flags faint text, text that only one theme hides, text on a translucent background,
    text faded by opacity and text in a closed <details> block, and nothing that is not
    shown or is readable."""
    (tmp_path / "faint.html").write_text(FAINT_PAGE)
    with serve(tmp_path) as url:
        page = browser.new_page()
        try:
            page.goto(url + "faint.html", wait_until="load")
            direct = contrast_problems(page)
            assert page.evaluate("() => document.querySelector('details').open") is False  # put back as it was
        finally:
            page.close()
        surveyed = survey_page(browser, url + "faint.html")["contrast"]
    for found in (direct, surveyed):
        low = {theme: {f["text"] for f in found[theme]["low"]} for theme in THEMES}
        assert low["light"] == {"Faint on white.", "Dark on a dark veil", "Nearly transparent.", "Pale, behind a fold."}, found
        assert low["dark"] == {"A heading on a light card", "Dark on a dark veil", "Nearly transparent."}, found
        assert all(found[theme]["count"] == 7 for theme in THEMES), found  # every shown text, the fold's summary and content too
        heading = next(f for f in found["dark"]["low"] if f["text"] == "A heading on a light card")
        assert heading["element"] == "h3" and heading["color"] == "rgb(206, 214, 221)" and heading["background"] == "rgb(206, 214, 221)"
        assert heading["ratio"] == 1.0


def test_the_checks_catch_a_broken_page(browser, tmp_path):
    """visit's problems and the layout, through survey_page as the page test reads them."""
    (tmp_path / "broken.html").write_text(BROKEN_PAGE)
    (tmp_path / "wide.html").write_text('<!doctype html><html><body><div style="width:900px">too wide</div></body></html>')
    with serve(tmp_path) as url:
        found = survey_page(browser, url + "broken.html")["problems"]
        assert any("\\frac" in m or "$$" in m for m in found["math"]), found
        assert found["images"] == ["missing.png"], found
        assert any("missing.png" in r for r in found["requests"]), found
        assert any("boom" in c for c in found["console"]), found
        page = browser.new_page(viewport={"width": 390, "height": 844})
        try:
            equation = '<mjx-container display="true" style="display:block;width:900px;overflow:visible">E = mc^2</mjx-container>'
            (tmp_path / "eq.html").write_text(f'<!doctype html><html><body style="overflow-x:hidden">{equation}</body></html>')
            loose = layout_problems(page, url + "eq.html")
            (tmp_path / "boxed.html").write_text(f'<!doctype html><html><body><div style="overflow-x:auto">{equation}</div></body></html>')
            boxed = layout_problems(page, url + "boxed.html")
        finally:
            page.close()
        # the same measurement after a change of viewport, as the page test takes it
        # (through survey_page: loaded at a desktop's width, then narrowed)
        wide_layout = survey_page(browser, url + "wide.html")["layout"]
        wide_desktop, wide_resized = wide_layout[1280], wide_layout[390]
    assert wide_desktop["sideways"] <= 1 and wide_resized["sideways"] > 400, (wide_desktop, wide_resized)
    assert loose["overflowing"] == ["E = mc^2"], loose
    assert boxed["overflowing"] == [] and boxed["sideways"] <= 1, boxed
    links = broken_links(tmp_path, [tmp_path / "broken.html"])
    assert any("nowhere.html" in b for b in links) and any("no-such-anchor" in b for b in links), links
