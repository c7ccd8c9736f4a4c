"""What a surviving mutant of attnscale.claims returns, record by record, against the original.

A recomputation of the claims register has one caller, ``recompute(record)``, and is given
only the register's records. A mutant that survives the tests may still return something else
for one of them (a gap in the tests), or return exactly what the original returns for every
record that reaches it: then nothing the book shows or tests can tell it apart, and if the
recomputation does not read its record at all, no input whatever can. This script runs each
survivor, in a fresh interpreter with nothing cached, over the records that reach the mutated
function (every record, for a helper shared by several recomputations) and compares the values
with the unmutated code's, exactly (``repr`` of every float).

Usage (from the repository; SCRATCH is the directory tools/mutate.sh made for claims):
    python tools/mutate_claims_outputs.py SCRATCH [--jobs 2] > outputs.tsv
One line per survivor: name, ``same``/``differs``/``raises`` (or ``not a recomputation``), the number of records run, whether
the function reads its record, and for ``differs`` the first record whose value moved.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutate_recheck import _survivors  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# the modules that hold the recomputations and their helpers (the rest of the package loads
# the register, states verdicts and writes tables and the page: examined by hand)
RECOMPUTATIONS = ("_cosine", "_entropy", "_jacobian", "_normal", "_other", "_registry", "_scores")
REGISTER = ROOT / "chapters" / "claims.yml"

# run inside the scratch copy: the values of the named records (all when none are named)
PROBE = r"""
import json, sys
import numpy as np
from attnscale.claims import load_register, recompute
ids = set(json.loads(sys.argv[2]))
out = {}
for rec in load_register(sys.argv[1]):
    if rec.get("recompute") and (not ids or rec["id"] in ids):
        try:
            v = recompute(rec)
            out[rec["id"]] = repr(v.tolist() if isinstance(v, np.ndarray) else v)
        except Exception as exc:  # a mutant may raise where the original returns
            out[rec["id"]] = f"raises {type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def _function(name: str) -> tuple[str, str]:
    module, _, rest = name.rpartition(".x_")
    return module, re.sub(r"__mutmut_\d+$", "", rest)


def _reads_record(source: Path, func: str) -> bool:
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.FunctionDef) and node.name == func:
            arg = node.args.args[0].arg if node.args.args else None
            return any(isinstance(n, ast.Name) and n.id == arg for n in ast.walk(node)) if arg else False
    return True  # not found: assume it does


def _values(mutants: Path, mutant: str, ids: list[str]) -> dict:
    env = {**os.environ, "MUTANT_UNDER_TEST": mutant, "PYTHONPATH": str(mutants / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE, str(REGISTER), json.dumps(ids)], cwd=mutants, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"*": f"raises at import or load: {done.stderr.strip().splitlines()[-1:]}"}
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scratch", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--names", type=Path, help="a file of mutant names, one a line: only those survivors")
    args = parser.parse_args(argv)
    mutants = args.scratch.resolve() / "mutants"
    sys.path.insert(0, str(ROOT / "lib"))
    from attnscale.claims import load_register

    by_function: dict[str, list[str]] = {}
    for rec in load_register(REGISTER):
        if rec.get("recompute"):
            by_function.setdefault(rec["recompute"], []).append(rec["id"])
    survivors = list(_survivors(mutants, "attnscale.claims."))
    if args.names:
        wanted = set(args.names.read_text().split())
        survivors = [name for name in survivors if name in wanted]
    print(f"{len(survivors)} survivors", file=sys.stderr)
    originals: dict[tuple, dict] = {}

    def one(name: str) -> str:
        module, func = _function(name)
        if module.rpartition(".")[2] not in RECOMPUTATIONS:
            return f"{name}\tnot a recomputation\t0\t\t"
        ids = by_function.get(func, [])  # a helper: every record
        key = tuple(ids)
        if key not in originals:
            originals[key] = _values(mutants, "none", ids)
        want, got = originals[key], _values(mutants, name, ids)
        source = mutants.parent / "src" / Path(*module.split(".")).with_suffix(".py")
        if not source.exists():
            source = source.with_suffix("") / "__init__.py"
        reads = _reads_record(source, func) if ids else True
        moved = [rid for rid in want if got.get(rid) != want[rid]]
        if not moved:
            verdict = "same"
        elif any(str(got.get(rid, "")).startswith("raises") for rid in moved):
            verdict = "raises"
        else:
            verdict = "differs"
        first = f"{moved[0]}: {want[moved[0]]} -> {got.get(moved[0])}" if moved else ""
        return f"{name}\t{verdict}\t{len(want)}\t{'reads record' if reads else 'ignores record'}\t{first}"

    with ThreadPoolExecutor(args.jobs) as pool:
        for line in pool.map(one, survivors):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
