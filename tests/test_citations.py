"""The bibliography renders in one author-year style: sphinxcontrib-bibtex writes
"X et al." for three or more authors, but "X and others" when an entry lists one or
two named authors followed by ``and others``. Every truncated author list must
therefore name at least three authors."""

from __future__ import annotations

import re
from pathlib import Path

BIB = Path(__file__).resolve().parents[1] / "references.bib"


def truncated_lists_too_short(text: str) -> list[str]:
    """Entry keys whose author list ends in ``and others`` after fewer than three names."""
    bad = []
    for key, body in re.findall(r"@\w+\{([^,]+),(.*?)\n\}", text, flags=re.S):
        found = re.search(r"\bauthor\s*=\s*\{(.*?)\},?\s*\n", body, flags=re.S)
        if not found:
            continue
        names = [n.strip() for n in re.split(r"\s+and\s+", " ".join(found.group(1).split()))]
        if names[-1] == "others" and len(names) - 1 < 3:
            bad.append(key.strip())
    return bad


def test_the_check_catches_a_short_truncated_list():
    sample = "@misc{x2023,\n  author = {Bai, Jinze and others},\n  year = {2023}\n}\n@misc{y2023,\n  author = {A, B and C, D and E, F and others},\n  year = {2023}\n}\n"
    assert truncated_lists_too_short(sample) == ["x2023"]


def test_every_truncated_author_list_names_three_authors():
    text = BIB.read_text(encoding="utf-8")
    assert text.count("@") >= 20  # the bibliography was read
    assert truncated_lists_too_short(text) == []
