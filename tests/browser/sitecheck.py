"""Checks of a built page as a reader's browser sees it (used by test_site.py)."""

from __future__ import annotations

import http.server
import os
import shutil
import threading
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

from bs4 import BeautifulSoup

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RAW_TEX = ("$$", "\\begin{", "\\frac", "\\(", "\\[", "\\sqrt", "\\alpha", "\\log")


def chromium_path() -> str | None:
    return os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


@contextmanager
def serve(root: Path):
    """Serve ``root`` on 127.0.0.1 at a free port; yields the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def load_typeset(page, url: str, timeout_ms: int = 30_000) -> bool:
    """Load ``url`` and, if the page uses MathJax, wait until it has typeset; says whether it does."""
    page.goto(url, wait_until="load", timeout=timeout_ms)
    has_mathjax = page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')")
    if has_mathjax:
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=timeout_ms)
        page.evaluate("() => MathJax.startup.promise.then(() => true)")
    return has_mathjax


def visit(page, url: str, timeout_ms: int = 30_000) -> dict:
    """Load ``url`` and return every problem a reader would see, by kind."""
    problems = {"console": [], "requests": [], "math": [], "images": []}
    page.on("console", lambda msg: problems["console"].append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: problems["console"].append(str(exc)))
    page.on("requestfailed", lambda req: problems["requests"].append(f"{req.url} ({req.failure})"))
    page.on("response", lambda res: problems["requests"].append(f"{res.url} -> {res.status}") if res.status >= 400 else None)
    if load_typeset(page, url, timeout_ms):
        errors = page.evaluate("() => document.querySelectorAll('mjx-merror, .MathJax_Error').length")
        if errors:
            problems["math"].append(f"{errors} MathJax error(s)")
    text = page.evaluate(
        """() => {
            const body = document.body.cloneNode(true);
            body.querySelectorAll('pre, code, .highlight, script, style, mjx-container, mjx-assistive-mml, textarea').forEach(e => e.remove());
            return body.innerText;
        }"""
    )
    for token in RAW_TEX:
        if token in text:
            where = text.index(token)
            problems["math"].append(f"raw {token!r} in visible text: ...{text[max(0, where - 40):where + 40]!r}...")
    problems["images"] = page.evaluate(
        """async () => {
            const imgs = [...document.images];
            imgs.forEach(i => { i.loading = 'eager'; });
            await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })));
            return imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src'));
        }"""
    )
    return problems


def broken_links(root: Path, page_files: list[Path]) -> list[str]:
    """Internal links (and their #anchors) of the given built pages that do not resolve."""
    # Parsing is the slow part, and most pages are both read for their links and
    # linked to, so each file is parsed once and its soup kept for both uses.
    soups: dict[Path, BeautifulSoup] = {}
    ids_cache: dict[Path, set[str]] = {}

    def soup_of(path: Path) -> BeautifulSoup:
        key = path.resolve()
        if key not in soups:
            soups[key] = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        return soups[key]

    def ids(path: Path) -> set[str]:
        if path not in ids_cache:
            soup = soup_of(path)
            ids_cache[path] = {t["id"] for t in soup.find_all(id=True)} | {t["name"] for t in soup.find_all(attrs={"name": True})}
        return ids_cache[path]

    bad = []
    for page in page_files:
        soup = soup_of(page)
        for a in soup.find_all("a", href=True):
            href = a["href"]
            parsed = urlparse(href)
            if parsed.scheme or href.startswith(("mailto:", "javascript:", "//")):
                continue
            target = page if not parsed.path else (page.parent / unquote(parsed.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or root.resolve() not in target.parents and target != root.resolve():
                bad.append(f"{page.name}: {href} (no file)")
                continue
            if parsed.fragment and target.suffix == ".html" and unquote(parsed.fragment) not in ids(target):
                bad.append(f"{page.name}: {href} (no anchor)")
    return bad


def page_url(base: str, root: Path, page: Path) -> str:
    return urljoin(base, page.relative_to(root).as_posix())


LAYOUT = """() => {
  const width = document.documentElement.clientWidth;
  const sideways = document.documentElement.scrollWidth - width;
  const scrolls = (el) => {
    for (let e = el; e && e !== document.body; e = e.parentElement) {
      const o = getComputedStyle(e).overflowX;
      if ((o === 'auto' || o === 'scroll') && e.getBoundingClientRect().right <= width + 1) return true;
    }
    return false;
  };
  const overflowing = [];
  document.querySelectorAll('mjx-container[display="true"]').forEach((m) => {
    const box = m.getBoundingClientRect();
    const wider = m.scrollWidth > m.clientWidth + 1 || box.right > width + 1 || box.left < -1;
    if (wider && !scrolls(m)) {
      overflowing.push((m.getAttribute('aria-label') || m.textContent || '').slice(0, 60));
    }
  });
  return {sideways: sideways, overflowing: overflowing};
}"""


def layout_problems(page, url: str, timeout_ms: int = 30_000) -> dict:
    """After the maths is typeset: how far the page scrolls sideways (px), and
    the display equations that stick out of the viewport without a scroll box
    of their own."""
    load_typeset(page, url, timeout_ms)
    return page.evaluate(LAYOUT)


def settled_layout(page) -> dict:
    """:func:`layout_problems` for the page as it is now (after a change of
    viewport, say): waits two animation frames for the reflow, then measures."""
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    return page.evaluate(LAYOUT)


# Text contrast, as WCAG defines it: (L1 + 0.05) / (L2 + 0.05) for the relative luminances of
# the text's colour and of what is behind it. "Behind it" is the first opaque background up the
# element's ancestors, with any translucent backgrounds on the way composited over it (and the
# white canvas last); the text's colour is weakened by the opacity of the element and its
# ancestors. Every text node that is rendered (checkVisibility with opacity and visibility, a box
# of at least 2 by 2 CSS pixels) is judged by its parent element's colour, and so is every
# formula typeset by MathJax (whose glyphs are drawn with CSS, not text nodes) and every select
# menu. Not judged: text inside images and inline SVG (the figures' text has its own test),
# screen-reader-only text (.visually-hidden, .sr-only), the options of a closed select menu, and
# background images or gradients (none carries text on this site). The caller decides what is
# shown: :func:`contrast_problems` first opens every <details> block (collapsed code and the
# block of checks), so their text is judged as a reader who opens them sees it.
CONTRAST = r"""(minimum) => {
  const parse = (css) => {
    let m = css.match(/^rgba?\(([^)]+)\)/);
    if (m) {
      const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    m = css.match(/^color\(srgb ([^)]+)\)/);
    if (m) {
      const p = m[1].split(/[\s\/]+/).filter(Boolean).map(Number);
      return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1];
    }
    return null;
  };
  const over = (top, bottom) => [0, 1, 2].map(i => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const luminance = (c) => {
    const l = c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
  };
  const styles = new Map(), backs = new Map(), opacities = new Map();
  const style = (el) => { if (!styles.has(el)) styles.set(el, getComputedStyle(el)); return styles.get(el); };
  const behind = (el) => {  // the opaque colour behind el's text
    if (!el) return [255, 255, 255, 1];
    if (!backs.has(el)) {
      const c = parse(style(el).backgroundColor);
      backs.set(el, c && c[3] >= 1 ? c : c && c[3] > 0 ? over(c, behind(el.parentElement)) : behind(el.parentElement));
    }
    return backs.get(el);
  };
  const opacity = (el) => {
    if (!el) return 1;
    if (!opacities.has(el)) opacities.set(el, parseFloat(style(el).opacity) * opacity(el.parentElement));
    return opacities.get(el);
  };
  const rgb = (c) => `rgb(${c.slice(0, 3).map(Math.round).join(', ')})`;
  const judge = (el, text) => {
    const fg = parse(style(el).color), bg = behind(el);
    if (!fg) return null;
    const ink = over([fg[0], fg[1], fg[2], fg[3] * opacity(el)], bg);
    const [dark, light] = [luminance(ink), luminance(bg)].sort((a, b) => a - b);
    const ratio = (light + 0.05) / (dark + 0.05);
    return {ratio: Math.round(ratio * 100) / 100, text: text.trim().replace(/\s+/g, ' ').slice(0, 60),
            element: el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\s+/).join('.') : ''),
            color: rgb(ink), background: rgb(bg)};
  };
  const SKIP = 'script, style, noscript, template, svg, option, mjx-container, .visually-hidden, .sr-only';
  const shown = (el) => el.checkVisibility({opacityProperty: true, visibilityProperty: true});
  const judged = new Set(), low = [];
  let count = 0;
  const keep = (found) => { if (!found) return; count += 1; if (found.ratio < minimum) low.push(found); };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const el = t.parentElement;
    if (!el || judged.has(el) || !t.textContent.trim() || el.closest(SKIP) || !shown(el)) continue;
    const range = document.createRange();
    range.selectNodeContents(t);
    const box = range.getBoundingClientRect();
    if (box.width < 2 || box.height < 2) continue;
    judged.add(el);
    keep(judge(el, t.textContent));
  }
  document.querySelectorAll('mjx-container, select').forEach((el) => {
    if (!shown(el) || el.closest('svg')) return;
    keep(judge(el, el.tagName === 'SELECT' ? (el.selectedOptions[0] || {}).textContent || '' : el.getAttribute('aria-label') || el.textContent));
  });
  return {count: count, low: low};
}"""

#: the least contrast a text may have (WCAG 2 AA for normal text)
MIN_CONTRAST = 4.5

#: transitions and animations off, so colours and opacities are measured at rest
_AT_REST = "*, *::before, *::after { transition: none !important; animation: none !important; }"


def contrast_problems(page, themes=("light", "dark"), minimum: float = MIN_CONTRAST) -> dict:
    """For each theme (the page's ``data-theme`` set to it), how many texts were judged and
    those below ``minimum`` (see CONTRAST), with every ``<details>`` block opened. The page's
    theme and its open blocks are put back afterwards."""
    at_rest = page.add_style_tag(content=_AT_REST)
    own = page.evaluate("() => document.documentElement.dataset.theme ?? null")
    page.evaluate("() => document.querySelectorAll('details:not([open])').forEach(d => { d.dataset.contrastOpened = '1'; d.open = true; })")
    found = {}
    try:
        for theme in themes:
            page.evaluate("(t) => { document.documentElement.dataset.theme = t; }", theme)
            found[theme] = page.evaluate(CONTRAST, minimum)
    finally:
        page.evaluate("(t) => { if (t === null) delete document.documentElement.dataset.theme; else document.documentElement.dataset.theme = t; }", own)
        page.evaluate("() => document.querySelectorAll('details[data-contrast-opened]').forEach(d => { d.open = false; delete d.dataset.contrastOpened; })")
        at_rest.evaluate("(e) => e.remove()")
    return found
