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

from book_toc import toc_entries

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
# the notebook runner is build tooling in tools/, not part of the attnscale package
sys.path.insert(0, str(ROOT / "tools"))


def test_every_chapter_is_in_the_toc():
    """(That every entry of _toc.yml exists is checked when test_prose.py collects its pages.)"""
    listed = toc_entries()
    for nb in CHAPTERS:
        assert f"chapters/{nb.stem}" in listed, f"{nb.name} is not in _toc.yml"


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
TEXT_KINDS = ("text/plain", "text/latex", "text/markdown", "text/html")


def figure_problems(nb: dict) -> list[str]:
    """Cells that make or glue a figure but store no image, and outputs that show a figure
    as text. A figure is stored as ``image/png``, shown (``show_figure``) or glued
    (``page.figure``: MyST-NB stores it under ``application/papermill.record/image/png``)."""
    problems = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        images = [o for o in cell["outputs"] if any(kind.endswith("image/png") for kind in o.get("data", {}))]
        if re.search(r"(?<![\w.])(figure|show_figure)\(|\bpage\.figure\(", source) and not images:
            problems.append(f"cell {index} makes a figure but stores no image/png output")
        for out in cell["outputs"]:
            texts = [out.get("text", "")] + [v for k, v in out.get("data", {}).items() if k.endswith(TEXT_KINDS)]
            if any(FIGURE_AS_TEXT.search("".join(t)) for t in texts):
                problems.append(f"cell {index} shows a figure as text instead of an image")
    return problems


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_is_stored_as_an_image(path):
    assert figure_problems(json.loads(path.read_text())) == []


def test_figure_check_catches_a_figure_typeset_as_text():
    """A Figure passed to the maths display is stored as text, and no image."""
    cell = {"cell_type": "code", "source": ["fig, ax = figure()\n", "show(fig)"],
            "outputs": [{"output_type": "display_data", "data": {"text/latex": "$\\displaystyle Figure(900x380)$", "text/plain": "<IPython.core.display.Math object>"}}]}
    assert len(figure_problems({"cells": [cell]})) == 2


def test_figure_check_accepts_a_glued_figure_and_catches_a_glue_without_image():
    glued = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "fig-01-x", "mime_prefix": "application/papermill.record/"}},
             "data": {"application/papermill.record/image/png": "iVBORw0KGgo=", "application/papermill.record/text/plain": "<IPython.core.display.Image object>"}}
    cell = {"cell_type": "code", "source": ["fig, ax = figure()\n", "page.figure('fig-01-x', fig)"], "outputs": [glued]}
    assert figure_problems({"cells": [cell]}) == []
    assert figure_problems({"cells": [dict(cell, outputs=[])]}) == ["cell 0 makes a figure but stores no image/png output"]
    as_text = dict(glued, data={"application/papermill.record/text/plain": "<Figure size 690x380 with 2 Axes>"})
    assert figure_problems({"cells": [dict(cell, outputs=[as_text])]}) == [
        "cell 0 makes a figure but stores no image/png output", "cell 0 shows a figure as text instead of an image"]


SUMMARY = re.compile(r"^(\d+) checks? on this page passed:$")
CHECK_LINE = re.compile(r"^(?:identity holds|holds|claim is wrong): |: all \d+ values agree \(rtol |: \|value\| <= |\S vs \S.* \(rtol [^)]*\)$")


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def summary_problems(nb: dict) -> list[str]:
    """Where a chapter that makes checks does not collect them into one summary: the first
    code cell starts the page (checks.start_page()), one cell of its own shows
    checks.page_summary() right before "## What to remember", its stored text counts the
    lines it lists, and no other output prints a check line."""
    cells = nb["cells"]
    code = [i for i, c in enumerate(cells) if c["cell_type"] == "code"]
    problems = []
    if not code or "checks.start_page()" not in _text(cells[code[0]]["source"]):
        problems.append("the first code cell does not call checks.start_page()")
    summaries = [i for i in code if _text(cells[i]["source"]).strip() == "checks.page_summary()"]
    if len(summaries) != 1:
        return problems + [f"{len(summaries)} cells of their own that show checks.page_summary(), not one"]
    at = summaries[0]
    after = cells[at + 1] if at + 1 < len(cells) else None
    if after is None or after["cell_type"] != "markdown" or not _text(after["source"]).lstrip().startswith("## What to remember"):
        problems.append(f"cell {at} (checks.page_summary()) is not followed by the section '## What to remember'")
    shown = [_text(o["data"]["text/plain"]) for o in cells[at]["outputs"] if "text/plain" in o.get("data", {})]
    lines = shown[0].split("\n") if len(shown) == 1 else []
    m = SUMMARY.match(lines[0]) if lines else None
    if not m:
        problems.append(f"cell {at} stores no 'N checks on this page passed' output")
    elif int(m[1]) != len(lines) - 1 or int(m[1]) < 1:
        problems.append(f"cell {at} counts {m[1]} checks but lists {len(lines) - 1}")
    for i in code:
        for out in cells[i]["outputs"]:
            printed = [line for line in _text(out.get("text", "")).split("\n") if CHECK_LINE.search(line)]
            if printed:
                problems.append(f"cell {i} prints check lines instead of collecting them, e.g. {printed[0][:70]!r}")
    return problems


def _makes_checks(nb: dict) -> bool:
    return any(re.search(r"\bchecks\.(?:identity|close|holds|differs)\(", _text(c["source"])) for c in nb["cells"] if c["cell_type"] == "code")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_checks_are_collected_into_one_summary_before_what_to_remember(path):
    nb = json.loads(path.read_text())
    if not _makes_checks(nb):
        pytest.skip(f"{path.name} makes no check")
    assert summary_problems(nb) == []


GLUE_KEY = re.compile(r"^(?:ch|fig-)(?P<nn>\d\d)-[a-z0-9]+(?:-[a-z0-9]+)*$")


def glued_keys(nb: dict) -> list[str]:
    """The keys a notebook glues (MyST-NB records each in its output's scrapbook metadata)."""
    return [o["metadata"]["scrapbook"]["name"] for c in nb["cells"] if c["cell_type"] == "code"
            for o in c["outputs"] if "scrapbook" in o.get("metadata", {})]


def glue_key_problems(keys_by_page: dict[str, list[str]]) -> list[str]:
    """Keys not named ``chNN-words`` or ``fig-NN-words`` after their page's number, and keys
    glued twice in the book (a cross-page role must name one value)."""
    problems, seen = [], {}
    for stem, keys in keys_by_page.items():
        for key in keys:
            m = GLUE_KEY.match(key)
            if not m or m["nn"] != stem[:2]:
                problems.append(f"{stem}: key {key!r} is not ch{stem[:2]}- or fig-{stem[:2]}- and lowercase words joined by hyphens")
            if key in seen:
                problems.append(f"{stem}: key {key!r} is glued again (first in {seen[key]})")
            seen.setdefault(key, stem)
    return problems


def test_glue_keys_are_named_after_their_chapter_and_unique_in_the_book():
    assert glue_key_problems({p.stem: glued_keys(json.loads(p.read_text())) for p in CHAPTERS}) == []


GLUED_TEXT = "application/papermill.record/text/plain"


def glued_text_problems(nb: dict) -> list[str]:
    """Glued texts that ``{glue:text}`` would show otherwise than stored. The role reads the
    stored ``text/plain`` as a Python literal first, so an unquoted ``2.10`` shows as ``2.1``
    and ``12,345`` as ``(12, 345)``; a quoted string literal shows as its content."""
    import ast

    from myst_nb.core.variables import format_plain_text

    problems = []
    for index, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            stored = _text(out.get("data", {}).get(GLUED_TEXT, ""))
            if "scrapbook" not in out.get("metadata", {}) or not stored or "image/png" in "".join(out.get("data", {})):
                continue
            try:
                meant = ast.literal_eval(stored)
            except (SyntaxError, ValueError):
                meant = stored
            meant = meant if isinstance(meant, str) else stored
            shown = format_plain_text(stored, "s")
            if shown != meant:
                problems.append(f"cell {index}: {out['metadata']['scrapbook']['name']} is stored as {meant!r} but the page shows {shown!r}")
    return problems


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_glued_text_shows_on_the_page_as_stored(path):
    assert glued_text_problems(json.loads(path.read_text())) == []


def test_the_glued_text_check_reads_the_role_as_myst_nb_does():
    def nb(*texts):
        meta = {"scrapbook": {"name": "ch00-x", "mime_prefix": "application/papermill.record/"}}
        return {"cells": [{"cell_type": "code", "outputs": [{"output_type": "display_data", "metadata": meta, "data": {GLUED_TEXT: t}} for t in texts]}]}

    assert glued_text_problems(nb("'2.10'", "'12,345'", "2.01", "text", "3")) == []
    assert glued_text_problems(nb("2.10", "12,345")) == ["cell 0: ch00-x is stored as '2.10' but the page shows '2.1'",
                                                        "cell 0: ch00-x is stored as '12,345' but the page shows '(12, 345)'"]


def test_the_glue_key_check_catches_bad_and_repeated_keys():
    assert glue_key_problems({"05_x": ["ch05-alpha-512", "fig-05-curve"], "07_y": ["ch07-alpha"]}) == []
    assert glue_key_problems({"05_x": ["ch05-alpha", "ch07-alpha", "ch05_Alpha", "ch05-alpha"]}) == [
        "05_x: key 'ch07-alpha' is not ch05- or fig-05- and lowercase words joined by hyphens",
        "05_x: key 'ch05_Alpha' is not ch05- or fig-05- and lowercase words joined by hyphens",
        "05_x: key 'ch05-alpha' is glued again (first in 05_x)",
    ]


#: The check lines each chapter printed before its checks were collapsed into a summary: a
#: chapter's summary may count more, never fewer. Chapter 10 became a main page and an
#: appendix, which share its count.
CHECKS_BEFORE = {
    ("01_softmax_jacobian",): 32, ("02_dot_products",): 42, ("03_saturation",): 43, ("04_l1_identity",): 49,
    ("05_gaussian_scores",): 64, ("06_cosine_scores",): 74, ("07_beyond_mean_field",): 66, ("08_entropy_invariance",): 109,
    ("09_why_softmax",): 20, ("10_training", "13_training_protocol"): 239, ("11_claims_register",): 1, ("12_performance",): 25,
}


def summary_count(nb: dict) -> int:
    """The N of the stored "N checks on this page passed" (0 without a summary)."""
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            m = SUMMARY.match(_text(out.get("data", {}).get("text/plain", "")).split("\n")[0])
            if m:
                return int(m[1])
    return 0


@pytest.mark.parametrize("stems", list(CHECKS_BEFORE), ids=lambda s: "+".join(s))
def test_no_chapter_checks_less_than_before_its_checks_were_collapsed(stems):
    counts = {stem: summary_count(json.loads((ROOT / "chapters" / f"{stem}.ipynb").read_text()))
              for stem in stems if (ROOT / "chapters" / f"{stem}.ipynb").is_file()}
    assert sum(counts.values()) >= CHECKS_BEFORE[stems], (
        f"{counts}: the page summaries count fewer checks than the {CHECKS_BEFORE[stems]} lines printed before (collapse, don't remove)")


def _cell(kind: str, source: str, outputs: list | None = None) -> dict:
    return {"cell_type": kind, "source": [source], **({"outputs": outputs or []} if kind == "code" else {})}


def _summary_output(text: str) -> dict:
    return {"output_type": "execute_result", "data": {"text/plain": text, "text/html": "<details class='page-checks'></details>"}}


def test_the_summary_check_catches_a_chapter_that_prints_or_miscounts_its_checks():
    good = [_cell("code", "from attnscale import checks\nchecks.start_page()"), _cell("code", "checks.holds(True, 'a')"),
            _cell("code", "checks.page_summary()", [_summary_output("1 check on this page passed:\n  holds: a")]),
            _cell("markdown", "## What to remember\n\nOne. Two. Three.")]
    assert _makes_checks({"cells": good}) and summary_problems({"cells": good}) == []
    printed = [_cell("code", "checks.holds(True, 'a')", [{"output_type": "stream", "name": "stdout", "text": ["holds: a\n"]}])]
    assert summary_problems({"cells": printed}) == ["the first code cell does not call checks.start_page()",
                                                    "0 cells of their own that show checks.page_summary(), not one"]
    miscounted = good[:2] + [_cell("code", "checks.page_summary()", [_summary_output("2 checks on this page passed:\n  holds: a")])] + good[3:]
    assert summary_problems({"cells": miscounted}) == ["cell 2 counts 2 checks but lists 1"]
    misplaced = good[:3] + [_cell("markdown", "## What the sources say")] + good[3:]
    assert summary_problems({"cells": misplaced}) == ["cell 2 (checks.page_summary()) is not followed by the section '## What to remember'"]
    also_printed = [good[0], printed[0]] + good[2:]
    assert summary_problems({"cells": also_printed}) == ["cell 1 prints check lines instead of collecting them, e.g. 'holds: a'"]


def _copy(path: Path, tmp_path: Path) -> Path:
    target = tmp_path / path.name
    shutil.copy(path, target)
    return target


def _tamper_first_check_line(nb: dict) -> str:
    """Change one digit of the first check line with one in the page summary's stored text;
    returns the line."""
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "text/plain" not in data or not SUMMARY.match(_text(data["text/plain"]).split("\n")[0]):
                continue
            lines = _text(data["text/plain"]).splitlines(keepends=True)
            for li, line in enumerate(lines):
                if CHECK_LINE.search(line.strip()) and re.search(r"\d", line):
                    lines[li] = re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), line, count=1)
                    data["text/plain"] = lines
                    return lines[li]
    raise AssertionError("no stored check line with a number to tamper with")


@pytest.mark.slow
@pytest.mark.parametrize("path", [ROOT / "chapters" / "00_use_it.ipynb"], ids=lambda p: p.stem)  # the quickest chapter to run
def test_nbval_fails_on_a_stale_stored_output(path, tmp_path):
    """A check line stored in the page's summary of checks (which nbval compares like any
    output) that a fresh run does not reproduce fails the notebook."""
    nb = json.loads(path.read_text())
    changed = _tamper_first_check_line(nb)
    assert changed not in path.read_text(), "the tampered line must differ from the stored one"
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


def test_the_api_page_maps_each_chapter_to_what_it_imports():
    """api.md's chapter-first map is what the chapters import today (tools/api_map.py --write)."""
    import api_map

    assert api_map.block() in (ROOT / "api.md").read_text(encoding="utf-8"), "run `python tools/api_map.py --write`"
