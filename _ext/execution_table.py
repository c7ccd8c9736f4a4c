"""Sphinx extension: the execution-status table of the book.

The site renders each chapter's stored outputs (``make test`` has just checked
them with nbval against a fresh run), so nothing is executed at build time.
``make execute`` runs every chapter in a fresh kernel and records its run time
in ``chapters/data/execution.json``; the directive ``execution-table`` shows
that record, one row per chapter in the order of the table of contents, each
chapter named by its title and linked to it. A link's text is plain text, which
MathJax does not typeset here, so the maths of a title (``$\\sqrt d$``,
``$L_1$``) is written in Unicode (√d, L₁); a title with maths this cannot
write raises an error rather than show raw TeX.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from docutils import nodes
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective

RECORD = Path("chapters") / "data" / "execution.json"


def _toc_chapters(srcdir: Path) -> list[str]:
    toc = yaml.safe_load((srcdir / "_toc.yml").read_text(encoding="utf-8"))
    return [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", []) if c["file"].startswith("chapters/")]


GREEK = {"alpha": "α", "beta": "β", "tau": "τ", "lambda": "λ", "mu": "μ", "sigma": "σ", "rho": "ρ"}
SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def plain_maths(tex: str) -> str:
    """A title's inline maths in Unicode: Greek letters, square roots, and digit
    sub- and superscripts; ``ValueError`` for anything else with a backslash, brace,
    ``_`` or ``^`` left over."""
    out = re.sub(r"\\(" + "|".join(GREEK) + r")(?![A-Za-z])", lambda m: GREEK[m.group(1)], tex)
    out = re.sub(r"\\sqrt\s*\{([^{}]+)\}", lambda m: "√(" + m.group(1) + ")", out)
    out = re.sub(r"\\sqrt\s*([A-Za-z0-9])", lambda m: "√" + m.group(1), out)
    out = re.sub(r"_\{?([0-9]+)\}?", lambda m: m.group(1).translate(SUBSCRIPTS), out)
    out = re.sub(r"\^\{?([0-9]+)\}?", lambda m: m.group(1).translate(SUPERSCRIPTS), out)
    if re.search(r"[\\{}_^]", out):
        raise ValueError(f"execution-table: cannot write the title maths {tex!r} as plain text ({out!r})")
    return out


def _title_text(title: nodes.Node) -> str:
    return "".join(plain_maths(child.astext()) if isinstance(child, nodes.math) else child.astext() for child in title.children)


def _cell(content: nodes.Node) -> nodes.entry:
    entry = nodes.entry()
    entry += nodes.paragraph("", "", content)
    return entry


class ExecutionTable(SphinxDirective):
    """``execution-table``: chapter, run time and date of the last ``make execute``."""

    def run(self) -> list[nodes.Node]:
        srcdir = Path(self.env.srcdir)
        path = srcdir / RECORD
        self.env.note_dependency(str(path))
        record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        table = nodes.table()
        group = nodes.tgroup(cols=3)
        table += group
        for width in (60, 20, 20):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        row = nodes.row()
        for title in ("chapter", "run time (s)", "last executed"):
            row += _cell(nodes.Text(title))
        head += row
        group += head
        body = nodes.tbody()
        for doc in _toc_chapters(srcdir):
            stem = doc.split("/")[-1]
            entry = record.get(stem)
            link = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/" + doc, refexplicit=False,
                                         refdoc=self.env.docname, refwarn=True)
            link += nodes.inline("", stem)
            wrapper = nodes.inline("", "", classes=["execution-chapter"], docname=doc)
            wrapper += link
            row = nodes.row()
            row += _cell(wrapper)
            row += _cell(nodes.Text(f"{entry['seconds']:.1f}" if entry else "not recorded"))
            row += _cell(nodes.Text(entry["executed"] if entry else "-"))
            body += row
        group += body
        return [table]


def _titles(app, doctree: nodes.document, docname: str) -> None:
    """Write each table link's text as its chapter's title, maths in Unicode (the link
    itself was resolved inside the wrapper the directive placed around it)."""
    for node in list(doctree.findall(nodes.inline)):
        if "execution-chapter" in node.get("classes", []):
            title = app.env.titles[node["docname"]]
            for ref in node.findall(nodes.reference):
                ref.children = [nodes.inline("", _title_text(title), classes=["doc"])]


def setup(app):
    app.add_directive("execution-table", ExecutionTable)
    app.connect("doctree-resolved", _titles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
