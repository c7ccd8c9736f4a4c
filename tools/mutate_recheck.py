"""Re-run mutmut's survivors in fresh processes against whole test files.

mutmut runs a mutant only against the tests its stats phase saw calling the mutated
function. A test that reads a shared result (a module- or session-scoped fixture, a
cache in a test module) is seen calling the library only if it was the first to build
that result, so a mutant can survive every test it was given while a test it was not
given fails on it. This script runs each survivor, in a new interpreter with nothing
cached, against the test files named on the command line (``-x``: it stops at the first
failure), and marks the ones that fail as killed in mutmut's own records.

Usage (from the repository; SCRATCH is the directory tools/mutate.sh made):
    python tools/mutate_recheck.py SCRATCH PREFIX TESTFILE ... [--jobs 2]
PREFIX selects survivors by name (e.g. ``attnscale.claims.``); TESTFILE paths are
relative to SCRATCH (e.g. ``tests/test_claims.py``). ``mutmut results`` then counts the
re-killed mutants as killed; each verdict is written to SCRATCH/recheck-PREFIX.txt as it
comes, so a re-check stopped half-way keeps what it found (run it again for the rest).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def _survivors(mutants: Path, prefix: str) -> dict[str, Path]:
    found = {}
    for meta in sorted((mutants / "src").rglob("*.meta")):
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            if code == 0 and name.startswith(prefix):
                found[name] = meta
    return found


def _fails(mutants: Path, name: str, tests: list[str]) -> bool:
    env = {**os.environ, "MUTANT_UNDER_TEST": name, "PYTHONPATH": str(mutants / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *tests]
    done = subprocess.run(cmd, cwd=mutants, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return done.returncode == 1  # 1: a test failed; 0: all passed; other codes: no verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scratch", type=Path)
    parser.add_argument("prefix")
    parser.add_argument("tests", nargs="+")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    mutants = args.scratch.resolve() / "mutants"
    if not (mutants / "src").is_dir():
        parser.error(f"{mutants / 'src'} does not exist: run tools/mutate.sh first")
    survivors = _survivors(mutants, args.prefix)
    # the unmutated code must pass the same tests, or a failure says nothing about a mutant
    if _fails(mutants, "", args.tests):
        parser.error("the tests fail on the unmutated code; nothing can be concluded")
    print(f"{len(survivors)} survivors to re-run against {len(args.tests)} test files", flush=True)
    out = args.scratch / f"recheck-{args.prefix.rstrip('.')}.txt"
    killed = 0
    # each verdict is recorded as it comes, so that a stopped re-check keeps what it found
    with ThreadPoolExecutor(max_workers=args.jobs) as pool, out.open("w") as log:
        for name, dead in zip(survivors, pool.map(lambda n: _fails(mutants, n, args.tests), survivors)):
            log.write(f"{name} {'killed' if dead else 'survived'}\n")
            log.flush()
            if dead:
                killed += 1
                record = json.loads(survivors[name].read_text())
                record["exit_code_by_key"][name] = 1
                survivors[name].write_text(json.dumps(record))
    print(f"{killed} of {len(survivors)} killed by the whole files; verdicts in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
