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
re-killed mutants as killed; with ``--timeouts`` the script re-runs mutmut's time-outs instead
(under load a time-out may be slowness rather than detection) and records each as what its
re-run shows; each verdict is written to SCRATCH/recheck-PREFIX.txt as it
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


# mutmut's exit codes: 0 survived; these are its time-outs (36, and SIGXCPU in its spellings)
TIMEOUT_CODES = (36, -24, 24, 152, 255)


def _records(mutants: Path) -> dict[str, tuple[int | None, Path]]:
    """Every mutant of the run: its exit code (None before it has run) and its record file."""
    found = {}
    for meta in sorted((mutants / "src").rglob("*.meta")):
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            found[name] = (code, meta)
    return found


def _survivors(mutants: Path, prefix: str, codes: tuple[int, ...] = (0,)) -> dict[str, Path]:
    return {name: meta for name, (code, meta) in _records(mutants).items() if code in codes and name.startswith(prefix)}


def _outcome(mutants: Path, name: str, tests: list[str], timeout: float, skip: str | None = None) -> str:
    env = {**os.environ, "MUTANT_UNDER_TEST": name, "PYTHONPATH": str(mutants / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *(["-m", f"not {skip}"] if skip else []), *tests]
    try:
        done = subprocess.run(cmd, cwd=mutants, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timed out"
    # 1: a test failed; 0: all passed; other codes (an error in collection, an interrupt): no verdict
    return {1: "killed", 0: "survived"}.get(done.returncode, "no verdict")


def _fails(mutants: Path, name: str, tests: list[str], skip: str | None = None) -> bool:
    return _outcome(mutants, name, tests, timeout=3600, skip=skip) == "killed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scratch", type=Path)
    parser.add_argument("prefix")
    parser.add_argument("tests", nargs="+")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeouts", action="store_true",
                        help="re-run the mutants mutmut timed out (a time-out under load may be slowness, not detection): "
                             "a failure is recorded as killed, a pass as survived, a new time-out is kept")
    parser.add_argument("--skip-marked", metavar="MARK", help="leave out the tests marked MARK (e.g. stored_sweep, as tools/mutate.sh does)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before a re-run counts as timed out (default 900)")
    args = parser.parse_args(argv)
    mutants = args.scratch.resolve() / "mutants"
    if not (mutants / "src").is_dir():
        parser.error(f"{mutants / 'src'} does not exist: run tools/mutate.sh first")
    survivors = _survivors(mutants, args.prefix, TIMEOUT_CODES if args.timeouts else (0,))
    # the unmutated code must pass the same tests, or a failure says nothing about a mutant
    if _fails(mutants, "", args.tests, args.skip_marked):
        parser.error("the tests fail on the unmutated code; nothing can be concluded")
    what = "timed-out mutants" if args.timeouts else "survivors"
    print(f"{len(survivors)} {what} to re-run against {len(args.tests)} test files", flush=True)
    out = args.scratch / f"recheck-{args.prefix.rstrip('.')}{'-timeouts' if args.timeouts else ''}.txt"
    counts = {"killed": 0, "survived": 0, "timed out": 0, "no verdict": 0}
    # each verdict is recorded as it comes, so that a stopped re-check keeps what it found
    with ThreadPoolExecutor(max_workers=args.jobs) as pool, out.open("w") as log:
        outcomes = pool.map(lambda n: _outcome(mutants, n, args.tests, args.timeout, args.skip_marked), survivors)
        for name, outcome in zip(survivors, outcomes):
            log.write(f"{name} {outcome}\n")
            log.flush()
            counts[outcome] += 1
            # a survivor is only ever promoted to killed; a time-out becomes whatever its re-run says
            code = {"killed": 1, "survived": 0}.get(outcome) if args.timeouts else (1 if outcome == "killed" else None)
            if code is not None:
                record = json.loads(survivors[name].read_text())
                record["exit_code_by_key"][name] = code
                survivors[name].write_text(json.dumps(record))
    print(f"of {len(survivors)} {what}: " + ", ".join(f"{v} {k}" for k, v in counts.items()) + f"; verdicts in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
