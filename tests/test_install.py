"""The package as a user installs it: ``pip install .`` (not editable), away from the book's
checkout. Every module imports, ``python -m attnscale recommend`` works, and reading the
book's data without a checkout fails with an error that says what to set."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """attnscale installed with ``pip install --no-deps --target`` from a copy of the sources
    (so the build leaves nothing in the checkout); its dependencies are this environment's."""
    base = tmp_path_factory.mktemp("install")
    source = base / "source"
    shutil.copytree(ROOT / "lib", source / "lib", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    target = base / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--target", str(target), str(source)],
                   check=True, capture_output=True, text=True)
    return target


def _run(target: Path, *args: str, book: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ATTNSCALE_BOOK"}
    env["PYTHONPATH"] = str(target)
    if book is not None:
        env["ATTNSCALE_BOOK"] = str(book)
    return subprocess.run([sys.executable, *args], cwd=target.parent, env=env, capture_output=True, text=True)


def test_every_module_imports_from_a_plain_install(installed):
    probe = ("import pkgutil, importlib, attnscale\n"
             f"assert attnscale.__file__.startswith({str(installed)!r}), attnscale.__file__\n"
             "names = [m.name for m in pkgutil.walk_packages(attnscale.__path__, 'attnscale.') if not m.name.endswith('__main__')]\n"
             "for name in names:\n"
             "    importlib.import_module(name)\n"
             "print(len(names))")
    done = _run(installed, "-c", probe)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 20


def test_recommend_runs_from_a_plain_install(installed):
    done = _run(installed, "-m", "attnscale", "recommend", "--n", "4096", "--d", "128")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Recommendation for n = 4096 keys, d = 128")


def test_the_register_needs_the_book_and_says_what_to_set(installed):
    probe = "from attnscale.claims import REGISTER, load_register\nload_register(REGISTER)"
    done = _run(installed, "-c", probe)
    assert done.returncode != 0 and "ATTNSCALE_BOOK" in done.stderr
    named = _run(installed, "-c", probe + "\nprint('read', REGISTER)", book=ROOT)
    assert named.returncode == 0, named.stderr
    assert f"read {ROOT / 'chapters' / 'claims.yml'}" in named.stdout


def test_a_book_folder_that_does_not_exist_is_refused_by_name(installed, tmp_path):
    done = _run(installed, "-c", "from attnscale._paths import book_root\nbook_root()", book=tmp_path / "missing")
    assert done.returncode != 0 and "ATTNSCALE_BOOK must name" in done.stderr
