"""The site's own Sphinx extensions (``_ext/``): the execution table writes chapter
titles' maths as Unicode, and refuses maths it cannot write rather than show raw TeX."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))

from execution_table import plain_maths  # noqa: E402


@pytest.mark.parametrize("tex, text", [(r"\sqrt d", "√d"), ("L_1", "L₁"), (r"\alpha^2", "α²"), (r"\sqrt{n}", "√(n)"), ("x_{12}", "x₁₂")])
def test_plain_maths(tex, text):
    assert plain_maths(tex) == text


@pytest.mark.parametrize("tex", [r"\frac12", r"e^{\alpha s}", r"\log_{512} n", "p_i"])
def test_plain_maths_refuses_what_it_cannot_write(tex):
    with pytest.raises(ValueError, match="cannot write the title maths"):
        plain_maths(tex)


def test_binder_files_install_the_pinned_book():
    """binder/ (used once launch buttons are turned on) installs the same pinned
    environment as `make venv` and then the library itself, on the Python the book needs."""
    root = Path(__file__).resolve().parents[1]
    lines = [ln.strip() for ln in (root / "binder" / "requirements.txt").read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines == ["-r ../requirements.txt"] and (root / "requirements.txt").is_file()
    post = (root / "binder" / "postBuild").read_text()
    assert "pip install --no-deps --no-build-isolation -e ." in post and post.startswith("#!/usr/bin/env bash")
    assert (root / "binder" / "postBuild").stat().st_mode & 0o111
    runtime = (root / "binder" / "runtime.txt").read_text().strip()
    assert runtime == "python-3.11" and '">=3.11"' in (root / "pyproject.toml").read_text()
