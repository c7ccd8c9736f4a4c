"""Sphinx extension: author-year labels in the bibliography, so that the list
reads the way the text cites ("Vaswani et al. 2017", not "[1]").

Registers a pybtex label style ``authoryear`` and a formatting style of the
same name (pybtex's ``plain``, sorted by author, with those labels), used by
``bibliography.md`` as ``:style: authoryear``.
"""

from __future__ import annotations

from collections import Counter

from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle


def _names(entry) -> str:
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    # names as printed: LaTeX accents decoded ("M{\\'e}zard" is Mézard)
    last = [Text.from_latex(" ".join(p.last_names)).render_as("text") for p in people]
    if "others" in last[1:]:  # BibTeX's "and others" means "et al."
        return f"{last[0]} et al."
    if not last:
        return entry.fields.get("key", entry.key)
    if len(last) == 1:
        return last[0]
    if len(last) == 2:
        return f"{last[0]} and {last[1]}"
    return f"{last[0]} et al."


class AuthorYearLabels(BaseLabelStyle):
    """``Su 2023``, ``Vaswani et al. 2017``; a, b, ... where two would collide."""

    def format_labels(self, sorted_entries):
        entries = list(sorted_entries)
        base = [f"{_names(e)} {e.fields.get('year', 'n.d.')}" for e in entries]
        seen, total = Counter(), Counter(base)
        for label in base:
            if total[label] > 1:
                seen[label] += 1
                yield label + "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]
            else:
                yield label


class AuthorYearStyle(PlainStyle):
    default_label_style = "authoryear"


def setup(app):
    register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabels)
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
