"""The map from chapters to library functions on the API page (``api.md``), chapter first.

Command line: ``python tools/api_map.py`` prints the table; ``--write`` puts it into api.md
between its two marker lines. ``tests/test_site_extensions.py`` checks that the page holds
the table the chapters' imports give today.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- chapter map: made by tools/api_map.py -->", "<!-- end of chapter map -->"


def _chapters() -> list[Path]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    return [ROOT / f"{f}.ipynb" for f in files if (ROOT / f"{f}.ipynb").is_file()]


def _imports(path: Path) -> list[str]:
    """``module.name`` for every name a chapter imports from attnscale (``module`` for a module)."""
    names: list[str] = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse("".join(cell["source"]))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("attnscale"):
                base = node.module.removeprefix("attnscale").lstrip(".")
                for alias in node.names:
                    names.append(f"{base}.{alias.name}" if base else alias.name)
    return sorted(dict.fromkeys(names))


def _title(path: Path) -> str:
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for line in "".join(cell["source"]).splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return path.stem


def table() -> str:
    rows = ["| Chapter | What it uses from `attnscale` |", "| --- | --- |"]
    for path in _chapters():
        used = ", ".join(f"`{name}`" for name in _imports(path)) or "nothing"
        rows.append(f"| {{doc}}`{_title(path)} <{path.relative_to(ROOT).with_suffix('').as_posix()}>` | {used} |")
    return "\n".join(rows)


def block() -> str:
    return f"{START}\n{table()}\n{END}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="put the table into api.md")
    args = parser.parse_args(argv)
    if not args.write:
        print(table())
        return 0
    page = ROOT / "api.md"
    text = page.read_text(encoding="utf-8")
    start, end = text.index(START), text.index(END) + len(END)
    page.write_text(text[:start] + block() + text[end:], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
