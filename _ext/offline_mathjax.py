"""Sphinx extension: serve MathJax from the built site instead of a CDN
(and load it on every page, since headings with maths appear in every page's
navigation; and remove duplicated script tags that would raise JavaScript errors).

MathJax 3 comes from the pinned PyPI package ``django-static-mathjax`` (static
files only; Django is not needed). Its ``es5`` folder is copied to
``_static/mathjax`` and ``mathjax_path`` points there, so every page renders its
mathematics with no network, from a local server or from ``file://``.

Set ``ATTNSCALE_MATHJAX_CDN=1`` when building to keep Sphinx's default CDN
instead (for example for a published build that should stay small).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

LOCAL_PATH = "mathjax/tex-mml-chtml.js"


def _source() -> Path:
    import mathjax  # the django-static-mathjax package

    es5 = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (es5 / "tex-mml-chtml.js").is_file():
        raise RuntimeError(f"MathJax files not found under {es5}; is django-static-mathjax installed?")
    return es5


def _use_cdn() -> bool:
    return os.environ.get("ATTNSCALE_MATHJAX_CDN", "") not in ("", "0")


def _configure(app, config) -> None:
    if not _use_cdn():
        config.mathjax_path = LOCAL_PATH


def _copy(app, exception) -> None:
    if exception is not None or _use_cdn() or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    if not (target / "tex-mml-chtml.js").is_file():
        shutil.copytree(_source(), target, dirs_exist_ok=True)


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """Drop repeated script tags: sphinx-thebe registers its configuration
    snippet once per read phase, and a second copy is a JavaScript error
    ("Identifier 'THEBE_JS_URL' has already been declared") on every page."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        # the two copies differ only in a filename of None versus ""
        attributes = getattr(script, "attributes", {})
        key = (getattr(script, "filename", None) or "", tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    # MathJax on every page: navigation entries carry maths even where the page body has none
    app.set_html_assets_policy("always")
    app.connect("config-inited", _configure)
    app.connect("build-finished", _copy)
    app.connect("html-page-context", _dedupe_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
