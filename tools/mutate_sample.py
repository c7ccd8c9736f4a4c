"""Run a uniform random sample of a mutmut run's mutants first, and score it.

A full run over a large package takes hours; a uniform sample of its mutants, drawn with
a fixed seed before any of them runs, estimates the share the tests kill with a stated
uncertainty, and its survivors are few enough to examine one by one.

Usage (from the repository; SCRATCH is the directory tools/mutate.sh made, stopped once
mutmut has written its mutants, i.e. its ``mutants/src/**/*.meta`` files):
    python tools/mutate_sample.py SCRATCH park [--size 500] [--seed 2026]
    (cd SCRATCH && python -m mutmut run --max-children 2)   # runs the sample only
    python tools/mutate_sample.py SCRATCH score
    python tools/mutate_sample.py SCRATCH unpark             # then mutmut run does the rest

``park`` draws ``random.Random(seed).sample(sorted(names), size)`` from all the run's
mutants (those already run keep their results), writes the sample to SCRATCH/sample.txt and marks every other mutant with
no result as skipped (mutmut's exit code 34), so that ``mutmut run`` leaves it; the parked
names go to SCRATCH/parked.txt. ``unpark`` gives them back (no result). ``score`` counts
the sample's outcomes and prints the survivors' names.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

from mutmut.stats import status_by_exit_code

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutate_recheck import _records  # noqa: E402

SKIPPED = 34  # mutmut 3's exit code for a skipped mutant


def _codes(scratch: Path) -> dict[str, int | None]:
    codes = {name: code for name, (code, _) in _records(scratch / "mutants").items()}
    if not codes:
        raise SystemExit(f"no mutmut records under {scratch / 'mutants' / 'src'}: run tools/mutate.sh first")
    return codes


def _rewrite(scratch: Path, change: dict[str, int | None]) -> None:
    by_meta: dict[Path, dict[str, int | None]] = defaultdict(dict)
    for name, (_, meta) in _records(scratch / "mutants").items():
        if name in change:
            by_meta[meta][name] = change[name]
    for meta, hit in by_meta.items():
        data = json.loads(meta.read_text())
        data["exit_code_by_key"].update(hit)
        meta.write_text(json.dumps(data, indent=4))


def park(scratch: Path, size: int, seed: int) -> None:
    codes = _codes(scratch)
    names = sorted(codes)
    if size > len(names):
        raise SystemExit(f"--size {size} exceeds the run's {len(names)} mutants")
    sample = random.Random(seed).sample(names, size)
    rest = sorted(k for k in set(names) - set(sample) if codes[k] is None)
    (scratch / "sample.txt").write_text("".join(f"{k}\n" for k in sample))
    (scratch / "parked.txt").write_text("".join(f"{k}\n" for k in rest))
    _rewrite(scratch, dict.fromkeys(rest, SKIPPED))
    print(f"sample of {size} (seed {seed}) from all {len(names)} mutants; {len(rest)} others with no result parked")


def unpark(scratch: Path) -> None:
    parked = (scratch / "parked.txt").read_text().split()
    codes = _codes(scratch)
    _rewrite(scratch, {k: None for k in parked if codes.get(k) == SKIPPED})
    print(f"{len(parked)} mutants given back to mutmut")


def score(scratch: Path) -> None:
    sample = (scratch / "sample.txt").read_text().split()
    codes = _codes(scratch)
    outcomes = Counter(status_by_exit_code[codes[k]] for k in sample)
    print(f"sample of {len(sample)}:", dict(sorted(outcomes.items())))
    for k in sorted(k for k in sample if status_by_exit_code[codes[k]] != "killed"):
        print(f"  {status_by_exit_code[codes[k]]}: {k}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scratch", type=Path)
    ap.add_argument("action", choices=("park", "unpark", "score"))
    ap.add_argument("--size", type=int, default=500)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args(argv)
    if args.action == "park":
        park(args.scratch, args.size, args.seed)
    elif args.action == "unpark":
        unpark(args.scratch)
    else:
        score(args.scratch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
