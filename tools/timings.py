"""The test loop's timings against its floor (``make timings``; nothing asserts them).

Prints, on this machine:

1. the *kernel-start floor*: nbval over as many trivial notebooks (one cell, ``1 + 1``)
   as the book has chapters, with the same command and workers as ``make test``;
2. the same with the imports every chapter makes (NumPy, SciPy, SymPy, Matplotlib and
   attnscale) in that one cell: the part of a chapter's time no faster numerics can remove;
3. nbval over the chapters themselves, and its ratio to both floors;
4. each chapter's own execution time as recorded by ``make execute``
   (``chapters/data/execution.json``), slowest first.

Each nbval run is timed once, after a warm-up run of the floor (imports, caches);
pass ``--repeat`` for the median of several. Usage::

    python tools/timings.py [--repeat 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))

TRIVIAL = {
    "cells": [{"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [
        {"data": {"text/plain": ["2"]}, "execution_count": 1, "metadata": {}, "output_type": "execute_result"}], "source": ["1 + 1"]}],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}

#: what the first cell of a chapter imports (the heaviest of them: chapter 10's)
IMPORTS = ("import math\nimport numpy as np\nimport sympy as sp\nimport mpmath\nimport scipy.stats, scipy.integrate, scipy.optimize\n"
           "import matplotlib.pyplot as plt\nimport attnscale, attnscale.exact, attnscale.plotting, attnscale.training\n1 + 1")


def nbval(paths: list[Path], workers: int) -> float:
    """Wall time of one nbval run over ``paths`` (the command and BLAS threads of ``make test-notebooks``)."""
    cmd = [sys.executable, "-m", "pytest", "--nbval", "-q", "-p", "no:cacheprovider", "-n", str(workers), "--dist", "loadfile", *map(str, paths)]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # as make test: one BLAS thread per worker
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"nbval failed:\n{done.stdout[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="nbval runs per measurement (median reported)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers, as make test")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.workers < 1:
        parser.error("--repeat and --workers must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        trivial, importing = [], []
        with_imports = json.loads(json.dumps(TRIVIAL))
        with_imports["cells"][0]["source"] = IMPORTS.splitlines(keepends=True)
        for k in range(len(CHAPTERS)):
            for notebook, paths, stem in ((TRIVIAL, trivial, "trivial"), (with_imports, importing, "imports")):
                path = Path(tmp) / f"{stem}_{k:02d}.ipynb"
                path.write_text(json.dumps(notebook))
                paths.append(path)
        nbval(importing[:2], args.workers)  # warm-up (imports, caches)
        floor = statistics.median(nbval(trivial, args.workers) for _ in range(args.repeat))
        floor_imports = statistics.median(nbval(importing, args.workers) for _ in range(args.repeat))
    book = statistics.median(nbval(CHAPTERS, args.workers) for _ in range(args.repeat))
    print(f"nbval, {len(CHAPTERS)} trivial notebooks (kernel-start floor): {floor:6.1f} s")
    print(f"nbval, {len(CHAPTERS)} notebooks that only import the stack:   {floor_imports:6.1f} s")
    print(f"nbval, the {len(CHAPTERS)} chapters:                       {book:6.1f} s  "
          f"({book / floor:.1f} x the kernel-start floor, {book / floor_imports:.1f} x the import floor)")
    recorded = json.loads((ROOT / "chapters" / "data" / "execution.json").read_text())
    print("\nper chapter, as recorded by make execute (one kernel each):")
    for name, entry in sorted(recorded.items(), key=lambda kv: -kv[1]["seconds"]):
        print(f"  {name:28s} {entry['seconds']:6.1f} s  ({entry['executed']})")
    print(f"  {'total':28s} {sum(e['seconds'] for e in recorded.values()):6.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
