"""Print the whole book to one PDF with the Chromium the browser tests use
(``make pdf``): Jupyter Book's single-page HTML build is served locally, opened
in headless Chromium, its mathematics typeset by MathJax, and printed to
``_build/pdf/book.pdf``. Then a smoke test: the file is a PDF with a page per
part of the book at least, and every chapter title appears in it.

Needs Debian's ``chromium`` (or ``CHROMIUM_PATH``); without it, says so and
exits with status 2.
"""

from __future__ import annotations

import re
import sys
import zlib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from sitecheck import CHROMIUM_ARGS, chromium_path, serve  # noqa: E402

SINGLE = ROOT / "_build" / "singlehtml"
OUT = ROOT / "_build" / "pdf" / "book.pdf"


def chapter_titles() -> list[str]:
    """The first heading of every chapter notebook in the table of contents."""
    import json

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    titles = []
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            path = ROOT / f"{chapter['file']}.ipynb"
            if path.is_file():
                first = "".join(json.loads(path.read_text())["cells"][0]["source"])
                titles.append(re.search(r"^# (.+)$", first, re.M).group(1).strip())
    return titles


def _plain(text: str) -> str:
    """Letters and digits only, lower case, inline maths left out: titles
    compared without markup (MathJax draws the maths as glyphs)."""
    return re.sub(r"[^a-z0-9]", "", re.sub(r"\$[^$]*\$", "", text).lower())


def outline_titles(data: bytes) -> list[str]:
    """The /Title strings of the PDF's outline entries (hex UTF-16 or literal),
    in the uncompressed objects and in the Flate-compressed object streams."""
    blobs = [data]
    for stream in re.findall(rb"stream\r?\n(.*?)\r?\nendstream", data, re.S):
        try:
            blobs.append(zlib.decompress(stream))
        except zlib.error:
            continue
    titles = []
    for blob in blobs:
        for hexed in re.findall(rb"/Title\s*<([0-9A-Fa-f]+)>", blob):
            raw = bytes.fromhex(hexed.decode())
            titles.append(raw[2:].decode("utf-16-be", "replace") if raw[:2] == b"\xfe\xff" else raw.decode("latin-1"))
        titles += [t.decode("latin-1") for t in re.findall(rb"/Title\s*\(((?:[^()\\]|\\.)*)\)", blob)]
    return titles


def main() -> int:
    browser_path = chromium_path()
    if browser_path is None:
        print("make pdf needs Chromium: sudo apt-get install chromium (or set CHROMIUM_PATH)")
        return 2
    if not (SINGLE / "index.html").is_file():
        print(f"no single-page build at {SINGLE}: run `make pdf`, which builds it first")
        return 2
    from playwright.sync_api import sync_playwright

    OUT.parent.mkdir(parents=True, exist_ok=True)
    with serve(SINGLE) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(url + "index.html", wait_until="load", timeout=120_000)
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=120_000)
        page.evaluate("() => MathJax.startup.promise.then(() => true)")
        page.emulate_media(media="print")
        page.pdf(path=str(OUT), format="A4", print_background=True, outline=True, tagged=True, margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"})
        browser.close()
    data = OUT.read_bytes()
    pages = len(re.findall(rb"/Type\s*/Page[^s]", data))
    print(f"wrote {OUT.relative_to(ROOT)}: {pages} pages, {len(data) / 1e6:.1f} MB")
    # smoke test: a real PDF, long enough, whose outline (bookmarks) names every chapter
    assert data.startswith(b"%PDF-"), "not a PDF"
    assert pages >= 20, f"only {pages} pages"
    outline = outline_titles(data)
    missing = [t for t in chapter_titles() if not any(_plain(t)[:20] in _plain(o) for o in outline)]
    assert not missing, f"chapters missing from the PDF outline: {missing}"
    print(f"smoke test passed: a PDF of {pages} pages whose outline names all {len(chapter_titles())} chapters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
