"""The book's table of contents as the tests read it: every entry of ``_toc.yml``, in order."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def toc_entries() -> list[str]:
    """The entries of ``_toc.yml`` (paths without their extension) in the book's order: the
    root, then each part's chapters, each followed by its sections, depth first."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    entries = [toc["root"]]

    def walk(items: list | None) -> None:
        for item in items or []:
            if "file" in item:
                entries.append(item["file"])
            walk(item.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return entries
