"""Chapter 11's page: every record of the register in one HTML table per source (a
post's main text and its appended notes apart), with menus that filter by source and by verdict, and the maths typeset.

The page is raw HTML (the menus need ``data-`` attributes on the rows), which this
site's MathJax skips unless an element carries the class ``mathjax_process``. The
statement column shows a record's ``chapter_claim`` where it has one (as the chapters'
tables do) and the plain ``statement`` otherwise; that field, the note (``note`` or
``why``) and a ``claimed`` text are Markdown with ``$...$`` maths, turned into
``\\(...\\)`` inside such an element; every other field is escaped as text.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from typing import Any

import numpy as np

from ._tables import fill_values, is_appended

#: source note -> the title of the whole note
SOURCE_TITLES = {
    "000_051da7c3837b8577.txt": "Su (2023), 'The scale of attention from gradient maximisation', with its appended notes",
    "001_5feb997a08d9f295.txt": "Su (2023), the same post: readers' comments and the author's replies",
    "002_0aefa05da3b15586.txt": "A tutorial chapter on 'Attention Is All You Need' (section 3.2.1, footnote 4)",
    "003_482530c1c121b366.txt": "Su (2022), 'Attention goes better with softmax', with its appended notes",
    "004_58230cdbbd352fd2.txt": "A short note: why attention needs scaling",
}
#: the page's sections, in order: (key, note, whether its appended notes, heading, menu label).
#: A post with appended notes (derivations someone else wrote) gets two sections, its main
#: text's and its notes', so that neither is read as the other's.
SOURCE_PARTS = [
    ("su2023", "000_051da7c3837b8577.txt", False, "Su (2023), 'The scale of attention from gradient maximisation': the main text",
     "Su (2023), main text"),
    ("su2023-notes", "000_051da7c3837b8577.txt", True, "Su (2023): the appended notes, derivations added to the post by someone else",
     "Su (2023), appended notes"),
    ("su2023-comments", "001_5feb997a08d9f295.txt", False, SOURCE_TITLES["001_5feb997a08d9f295.txt"], "Su (2023), readers' comments"),
    ("tutorial", "002_0aefa05da3b15586.txt", False, SOURCE_TITLES["002_0aefa05da3b15586.txt"], "the tutorial chapter"),
    ("su2022", "003_482530c1c121b366.txt", False, "Su (2022), 'Attention goes better with softmax': the main text", "Su (2022), main text"),
    ("su2022-notes", "003_482530c1c121b366.txt", True, "Su (2022): the appended notes, derivations added to the post by someone else",
     "Su (2022), appended notes"),
    ("short-note", "004_58230cdbbd352fd2.txt", False, SOURCE_TITLES["004_58230cdbbd352fd2.txt"], "the short note"),
]


def part_of(source: dict) -> str:
    """The key of the page section (:data:`SOURCE_PARTS`) that shows a record's ``source``."""
    appended = is_appended(source)
    return next(key for key, file, notes, _, _ in SOURCE_PARTS if file == source["file"] and notes == appended)


#: verdict -> the class of its word on the page, which _static/attnscale.css colours in each theme
VERDICT_CLASSES = {"holds": "claims-verdict-holds", "approximate": "claims-verdict-approximate", "wrong": "claims-verdict-wrong",
                   "not checkable": "claims-verdict-not-checkable"}


_MATH = re.compile(r"\$([^$]+)\$")
_LINK = re.compile(r"\[([^\]]*)\]\(#([A-Za-z0-9_-]+)\)")

_FILTER = """<div class="claims-filter" role="search">
<label>source <select id="claims-note"><option value="">every source</option>{notes}</select></label>
<label>verdict <select id="claims-verdict"><option value="">every verdict</option>{verdicts}</select></label>
<span id="claims-shown" aria-live="polite"></span>
</div>
<script>
(function () {{
  function apply() {{
    var note = document.getElementById("claims-note").value, verdict = document.getElementById("claims-verdict").value, shown = 0;
    document.querySelectorAll("section.claims-source").forEach(function (sec) {{
      var visible = 0;
      sec.querySelectorAll("tbody tr").forEach(function (tr) {{
        var on = (!note || tr.dataset.note === note) && (!verdict || tr.dataset.verdict === verdict);
        tr.style.display = on ? "" : "none";
        visible += on ? 1 : 0;
      }});
      sec.style.display = visible ? "" : "none";
      shown += visible;
    }});
    document.getElementById("claims-shown").textContent = shown + " records shown";
  }}
  document.getElementById("claims-note").addEventListener("change", apply);
  document.getElementById("claims-verdict").addEventListener("change", apply);
  apply();
}})();
</script>"""


def _page_of(doc: str) -> str:
    return html.escape(str(doc).split("/")[-1] + ".html")


def _rich(text: str, doc: str) -> str:
    """A ``$...$`` field as HTML: text escaped, maths as ``\\(...\\)`` for MathJax, and
    in-chapter links ``[text](#label)`` pointing into the chapter ``doc``. Text without
    maths is not marked for MathJax."""
    if not _MATH.search(text):
        return _links(html.escape(text), doc)
    out, last = [], 0
    for m in _MATH.finditer(text):
        out.append(_links(html.escape(text[last : m.start()]), doc))
        out.append(r"\(" + html.escape(m.group(1)) + r"\)")
        last = m.end()
    out.append(_links(html.escape(text[last:]), doc))
    return '<span class="mathjax_process">' + "".join(out) + "</span>"


def _links(escaped: str, doc: str) -> str:
    def one(m: re.Match) -> str:
        label = m.group(2)
        anchor = "equation-" + label if label.startswith("eq-") else label
        words = m.group(1) or ("the equation" if label.startswith("eq-") else label)
        return f'<a href="{_page_of(doc)}#{html.escape(anchor)}">{words}</a>'

    return _LINK.sub(one, escaped)


def show_value(value: Any) -> str:
    """A recomputed value as the register page prints it: finite numbers to four
    significant digits, a truth value as "statement true/false", nothing for None."""
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "statement true" if value else "statement false"
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=float))
    except (TypeError, ValueError) as err:
        raise TypeError(f"value must be None, a truth value or numbers, got {value!r}") from err
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"value must be finite, got {value!r}")
    return ", ".join(f"{v:.4g}" for v in arr.ravel())


def _row(r: dict) -> str:
    doc = r["where"]["doc"]
    name = doc.split("/")[-1]
    claim = _rich(r["chapter_claim"], doc) if "chapter_claim" in r else html.escape(r["statement"])
    note = _rich(fill_values(r.get("note") or r.get("why") or "", r["value"], str(r["id"])), doc)
    claimed = _rich(r["claimed"], doc) if isinstance(r["claimed"], str) else html.escape(show_value(r["claimed"]))
    link = f'<a href="{_page_of(doc)}#{html.escape(str(r["where"]["label"]))}">{html.escape(name.split("_", 1)[-1].replace("_", " "))}</a>'
    rid = html.escape(str(r["id"]))
    return (f'<tr id="claim-{rid}" data-note="{part_of(r["source"])}" data-verdict="{r["verdict"]}"><td><code>{rid}</code></td>'
            f'<td>{html.escape(r["source"]["place"])}</td><td>{claim}</td><td>{claimed}</td><td>{show_value(r["value"])}</td>'
            f'<td class="claims-verdict {VERDICT_CLASSES[r["verdict"]]}">{r["verdict"]}</td><td>{note}</td><td>{link}</td></tr>')


def register_page(rows: list[dict]) -> str:
    """The HTML of chapter 11: the filter menus, then per source (``SOURCE_PARTS``: a
    note, or a post's main text and its appended notes apart) a heading, the count
    of each verdict and a table of its records (id, place, statement, claimed, recomputed,
    verdict, note, the chapter that discusses it). ``rows`` are the evaluated records of
    :func:`attnscale.claims.evaluate_register` (each with its recomputed ``value``)."""
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise TypeError(f"rows must be a non-empty list of evaluated records (dicts), got {type(rows).__name__}")
    for r in rows:
        missing = [f for f in ("id", "source", "statement", "claimed", "value", "verdict", "where") if f not in r]
        if missing:
            raise ValueError(f"rows: record {r.get('id')!r} lacks {missing}")
        if r["verdict"] not in VERDICT_CLASSES:
            raise ValueError(f"rows: record {r['id']!r} has the verdict {r['verdict']!r}, not one of {list(VERDICT_CLASSES)}")
        if r["source"].get("file") not in SOURCE_TITLES:
            raise ValueError(f"rows: record {r['id']!r} cites {r['source'].get('file')!r}, which is not one of the five notes")
    notes = "".join(f'<option value="{key}">{html.escape(label)}</option>' for key, _, _, _, label in SOURCE_PARTS)
    parts = [_FILTER.format(notes=notes, verdicts="".join(f'<option value="{v}">{v}</option>' for v in VERDICT_CLASSES))]
    for key, _, _, title, _ in SOURCE_PARTS:
        mine = [r for r in rows if part_of(r["source"]) == key]
        tally = Counter(r["verdict"] for r in mine)
        counts = ", ".join(f"{tally[v]} {v}" for v in VERDICT_CLASSES if tally[v])
        parts.append(f'<section class="claims-source" data-note="{key}">')
        parts.append(f"<h3>{html.escape(title)}</h3><p>" + (f"{len(mine)} record{'s' * (len(mine) != 1)}: {counts}" if mine else "no records") + "</p>")
        parts.append('<table class="claims"><thead><tr><th>id</th><th>where in the source</th><th>statement</th><th>claimed</th>'
                     "<th>recomputed</th><th>verdict</th><th>note</th><th>discussed in</th></tr></thead><tbody>")
        parts.extend(_row(r) for r in mine)
        parts.append("</tbody></table></section>")
    return "\n".join(parts)
