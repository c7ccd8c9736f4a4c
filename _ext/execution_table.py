"""Sphinx extension: the execution-status table of the book.

The site renders each chapter's stored outputs (``make test`` has just checked
them with nbval against a fresh run), so nothing is executed at build time.
``make execute`` runs every chapter in a fresh kernel and records its run time
in ``chapters/data/execution.json``; the directive ``execution-table`` shows
that record, one row per chapter in the order of the table of contents, each
chapter named by its title and linked to it.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from docutils import nodes
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective

RECORD = Path("chapters") / "data" / "execution.json"


def _toc_chapters(srcdir: Path) -> list[str]:
    toc = yaml.safe_load((srcdir / "_toc.yml").read_text(encoding="utf-8"))
    return [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", []) if c["file"].startswith("chapters/")]


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
            row = nodes.row()
            row += _cell(link)
            row += _cell(nodes.Text(f"{entry['seconds']:.1f}" if entry else "not recorded"))
            row += _cell(nodes.Text(entry["executed"] if entry else "-"))
            body += row
        group += body
        return [table]


def setup(app):
    app.add_directive("execution-table", ExecutionTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
