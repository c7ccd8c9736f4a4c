"""The chapters as a whole: listed in the table of contents, executed in order,
and unable to pass when a stored output is stale or the library is wrong."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
# the notebook runner is build tooling in tools/, not part of the attnscale package
sys.path.insert(0, str(ROOT / "tools"))


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            files.append(chapter["file"])
            files.extend(section["file"] for section in chapter.get("sections", []))
    return files


def test_every_chapter_is_in_the_toc_and_every_toc_entry_exists():
    listed = toc_files()
    for nb in CHAPTERS:
        assert f"chapters/{nb.stem}" in listed, f"{nb.name} is not in _toc.yml"
    for entry in listed:
        assert any((ROOT / f"{entry}{ext}").is_file() for ext in (".md", ".ipynb")), f"_toc.yml lists {entry}, which does not exist"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_was_executed_top_to_bottom_and_asserts(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), "run `make execute`: the notebook was not executed top to bottom"
    outputs = json.dumps([c["outputs"] for c in code])
    assert '"output_type": "error"' not in outputs
    assert not re.search(r"/work/|/home/|/root/| at 0x[0-9a-f]{6,}", outputs), "stored outputs carry a path or address"
    source = "\n".join("".join(c["source"]) for c in code)
    assert "checks." in source, "a chapter must assert what it prints"


FIGURE_AS_TEXT = re.compile(r"Figure\(\d+x\d+\)|<Figure size|<matplotlib\.figure\.Figure")


def figure_problems(nb: dict) -> list[str]:
    """Cells that make a figure but store no image, and outputs that show a figure as text."""
    problems = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        images = [o for o in cell["outputs"] if "image/png" in o.get("data", {})]
        if re.search(r"(?<![\w.])(figure|show_figure)\(", source) and not images:
            problems.append(f"cell {index} makes a figure but stores no image/png output")
        for out in cell["outputs"]:
            texts = [out.get("text", "")] + [out.get("data", {}).get(kind, "") for kind in ("text/plain", "text/latex", "text/markdown", "text/html")]
            if any(FIGURE_AS_TEXT.search("".join(t)) for t in texts):
                problems.append(f"cell {index} shows a figure as text instead of an image")
    return problems


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_is_stored_as_an_image(path):
    assert figure_problems(json.loads(path.read_text())) == []


def test_figure_check_catches_a_figure_typeset_as_text():
    """The clash that once hid chapter 1's figure: a Figure passed to the maths display."""
    cell = {"cell_type": "code", "source": ["fig, ax = figure()\n", "show(fig)"],
            "outputs": [{"output_type": "display_data", "data": {"text/latex": "$\\displaystyle Figure(900x380)$", "text/plain": "<IPython.core.display.Math object>"}}]}
    assert len(figure_problems({"cells": [cell]})) == 2


def _copy(path: Path, tmp_path: Path) -> Path:
    target = tmp_path / path.name
    shutil.copy(path, target)
    return target


def _first_check_line(nb: dict) -> tuple[int, int, int]:
    for ci, cell in enumerate(nb["cells"]):
        for oi, out in enumerate(cell.get("outputs", [])):
            if out.get("output_type") == "stream":
                for li, line in enumerate(out["text"] if isinstance(out["text"], list) else [out["text"]]):
                    if re.search(r"\d", line):
                        return ci, oi, li
    raise AssertionError("no stream output with a number to tamper with")


@pytest.mark.slow
@pytest.mark.parametrize("path", CHAPTERS[:1], ids=lambda p: p.stem)
def test_nbval_fails_on_a_stale_stored_output(path, tmp_path):
    nb = json.loads(path.read_text())
    ci, oi, li = _first_check_line(nb)
    out = nb["cells"][ci]["outputs"][oi]
    lines = out["text"] if isinstance(out["text"], list) else [out["text"]]
    lines[li] = re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), lines[li], count=1)
    out["text"] = lines
    stale = tmp_path / path.name
    stale.write_text(json.dumps(nb))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "-p", "no:cacheprovider", "-q", str(stale)],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert result.returncode != 0, "nbval passed a notebook whose stored output was changed"
    assert "1 failed" in result.stdout


WRONG_JACOBIAN = """
import numpy as np
import attnscale.softmax as _m
_right = _m.softmax_jacobian
def _wrong(p, alpha=1.0):
    # a plausible slip: the outer product is not scaled by alpha
    J = _right(p, alpha)
    outer = np.asarray(p)[..., :, None] * np.asarray(p)[..., None, :]
    return J + (np.asarray(alpha)[..., None, None] - 1.0) * outer
_m.softmax_jacobian = _wrong
"""


@pytest.mark.slow
def test_jacobian_chapter_fails_against_a_wrong_library(tmp_path):
    from nbclient.exceptions import CellExecutionError

    from notebooks import execute_notebook

    chapter = _copy(ROOT / "chapters" / "01_softmax_jacobian.ipynb", tmp_path)
    with pytest.raises(CellExecutionError, match="AssertionError"):
        execute_notebook(chapter, prelude=WRONG_JACOBIAN, write=False)


def test_execute_notebook_rejects_bad_path(tmp_path):
    from notebooks import execute_notebook

    with pytest.raises(ValueError, match="path must be an existing .ipynb file"):
        execute_notebook(tmp_path / "missing.ipynb")


def test_stream_outputs_are_coalesced():
    import nbformat

    from notebooks import _coalesce_streams

    outs = [
        nbformat.v4.new_output("stream", name="stdout", text="a\n"),
        nbformat.v4.new_output("stream", name="stdout", text="b\n"),
        nbformat.v4.new_output("stream", name="stderr", text="c\n"),
        nbformat.v4.new_output("stream", name="stdout", text="d\n"),
    ]
    merged = _coalesce_streams(outs)
    assert [(o["name"], "".join(o["text"])) for o in merged] == [("stdout", "a\nb\n"), ("stderr", "c\n"), ("stdout", "d\n")]
