#!/usr/bin/env bash
# Mutation testing of attnscale with mutmut 3 (CONTRIBUTING.md, "Mutation testing").
#
# Usage: tools/mutate.sh [SCRATCH_DIR] [MODULE ...]
#   SCRATCH_DIR  where the scratch copy goes (default /tmp/mut/repo); it is wiped first
#   MODULE       module paths under lib/attnscale to mutate, without .py (e.g. optimum,
#                exact/_sums, claims/_normal), or a subpackage (training: all its modules);
#                default: the core modules (_roots holds the root finder of optimum,
#                _elementary the special functions that stand in for SciPy's)
# Env: PYTHON (default: <repo>/.venv/bin/python, which must have mutmut, pytest, hypothesis),
#      JOBS (parallel workers, default nproc), SHARED (the shared/ dir for test_claims, optional),
#      SAMPLE, SEED: run only a uniform sample of SAMPLE mutants, drawn before any runs with
#      random.Random(SEED).sample(sorted(all mutant names), SAMPLE) (SEED default 2026), and
#      score the sample with a 95% Clopper-Pearson interval; a full run over training
#      (about 6,700 mutants) takes hours; a sample spends most of its time in mutmut's two
#      passes over the whole suite before the mutants.
#
# The repository itself is never modified: everything happens in a scratch copy,
# where lib/ is renamed src/ because mutmut only puts mutants/{.,src,source} on
# sys.path (the editable install would otherwise import the unmutated lib/).
# Before trusting the score, the script checks that a planted fault is caught.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCRATCH="${1:-/tmp/mut/repo}"; shift || true
MODULES=("$@")
[ ${#MODULES[@]} -eq 0 ] && MODULES=(softmax entropy optimum _roots _elementary _validate special scores montecarlo)
PY="${PYTHON:-$REPO/.venv/bin/python}"
JOBS="${JOBS:-$(nproc)}"
start=$(date +%s)

rm -rf "$SCRATCH"; mkdir -p "$SCRATCH"
(cd "$REPO" && tar --exclude=./.venv --exclude=./_build --exclude=./.git --exclude=./mutants -cf - .) | (cd "$SCRATCH" && tar xf -)
cd "$SCRATCH"
mv lib src
find . -name __pycache__ -prune -exec rm -rf {} +
rm -rf mutants .pytest_cache .hypothesis

# a subpackage stands for all its modules
expanded=()
for m in "${MODULES[@]}"; do
  if [ -d "src/attnscale/$m" ]; then
    for f in src/attnscale/"$m"/*.py; do f="${f#src/attnscale/}"; expanded+=("${f%.py}"); done
  else
    expanded+=("$m")
  fi
done
MODULES=("${expanded[@]}")
only=""
for m in "${MODULES[@]}"; do only+=$'\n'"    src/attnscale/$m.py"; done

# mutmut 3 never mutates a decorated function. The claims register's recomputations
# are all decorated (@register) and two of its helpers are cached (@lru_cache), so in
# the scratch copy those decorators are lifted: the function is defined bare and
# decorated by an assignment at the end of its module (same names, same registry).
# Other decorators (@property, @dataclass) are left alone.
"$PY" - "${MODULES[@]}" <<'LIFT'
import ast, sys
from pathlib import Path
LIFTABLE = {"register", "lru_cache"}
for mod in sys.argv[1:]:
    path = Path("src/attnscale") / f"{mod}.py"
    src = path.read_text()
    lines = src.splitlines(keepends=True)
    drop, tail = set(), []
    for node in ast.parse(src).body:
        if not isinstance(node, ast.FunctionDef) or not node.decorator_list:
            continue
        names = [(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
        if not all(isinstance(n, ast.Name) and n.id in LIFTABLE for n in names):
            continue
        for d in node.decorator_list:
            drop.update(range(d.lineno - 1, d.end_lineno))
        wrapped = node.name
        for d in reversed(node.decorator_list):  # innermost decorator applies first
            wrapped = f"({ast.get_source_segment(src, d)})({wrapped})"
        tail.append(f"{node.name} = {wrapped}\n")
    if tail:
        body = "".join(line for i, line in enumerate(lines) if i not in drop)
        path.write_text(body + "\n\n# decorators lifted by tools/mutate.sh\n" + "".join(tail))
        print(f"{mod}: {len(tail)} decorated functions lifted")
LIFT
# tests/test_install.py installs the package (lib/ is src/ here): left out.
# The tests marked stored_sweep re-run part of a stored sweep (15 s to 4 min each) and are left
# out: a survivor would pay all of them (about 400 s), so a run over training would take days.
# tests/training/test_runner.py pins short runs of every arm in their place.
cat > setup.cfg <<CFG
[mutmut]
source_paths = src
only_mutate =$only
pytest_add_cli_args_test_selection =
    tests/
    --ignore=tests/test_notebooks.py
    --ignore=tests/test_install.py
    --ignore=tests/browser
    -m
    not stored_sweep
pytest_add_cli_args =
    -p
    no:cacheprovider
    -p
    no:randomly
    -x
    -q
also_copy =
    chapters/
    _toc.yml
    intro.md
    notation.md
    api.md
    bibliography.md
    execution.md
    references.bib
    pyproject.toml
    requirements.txt
    _ext/
    binder/
    README.md
    _static/
    _config.yml
    tools/
use_git_change_detection = false
timeout_multiplier = 10.0
CFG
if [ -n "${SHARED:-}" ]; then export ATTNSCALE_SEEDS="$SHARED/seeds"; fi

# Each mutant runs, with -x, the tests that reached the mutated function, in an
# arbitrary order; run them fastest first (durations from mutmut's own stats
# phase) so that a killed mutant stops at the cheapest failing test. Only the
# order changes, never which tests run: a survivor still passes all of them.
cat >> tests/conftest.py <<'ORDER'


_MUTMUT_DURATIONS = None


def pytest_collection_modifyitems(session, config, items):
    """Scratch copy only (appended by tools/mutate.sh): fastest tests first."""
    global _MUTMUT_DURATIONS
    if not _MUTMUT_DURATIONS:  # not cached until the stats phase has written them
        import json as _json

        try:
            with open("mutmut-stats.json") as fh:
                _MUTMUT_DURATIONS = _json.load(fh)["duration_by_test"]
        except (OSError, ValueError, KeyError):
            return
    items.sort(key=lambda item: _MUTMUT_DURATIONS.get(item.nodeid, 0.0))


import pytest as _pytest


@_pytest.fixture(autouse=True, scope="session")
def _mutmut_empty_caches():
    """Scratch copy only: mutmut forks every mutant from a process that has imported the
    library and the test modules and run the unmutated code, so their caches hold its
    values (an lru_cache in a test module keeps the whole register's recomputation).
    Empty every cache of the scratch copy's modules once per session, so that a mutant's
    tests compute through the mutated body."""
    import functools
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for module in list(sys.modules.values()):
        if not (getattr(module, "__file__", None) or "").startswith(root + os.sep):
            continue
        for obj in list(vars(module).values()):
            if isinstance(obj, functools._lru_cache_wrapper):
                obj.cache_clear()
        if isinstance(getattr(module, "_LATTICE_KERNELS", None), dict):
            module._LATTICE_KERNELS.clear()
    yield
ORDER

# 1. sanity: the unmutated suite passes here, and a planted fault in the scratch copy is caught
export PYTHONDONTWRITEBYTECODE=1
sanity_args=(-q -p no:cacheprovider -x tests/test_softmax.py)
PYTHONPATH="$SCRATCH/src" "$PY" -c "import attnscale,sys; assert attnscale.__file__.startswith('$SCRATCH/src'), attnscale.__file__"
PYTHONPATH="$SCRATCH/src" nice -n 10 "$PY" -m pytest "${sanity_args[@]}" >/dev/null
# the lifted decorators leave the claims register as it is in the repository
PYTHONPATH="$SCRATCH/src" "$PY" -c "import attnscale.claims as c; print(len(c.RECOMPUTE), *sorted(c.RECOMPUTE))" >/tmp/.reg_scratch.$$
PYTHONPATH="$REPO/lib" "$PY" -c "import attnscale.claims as c; print(len(c.RECOMPUTE), *sorted(c.RECOMPUTE))" >/tmp/.reg_repo.$$
cmp -s /tmp/.reg_scratch.$$ /tmp/.reg_repo.$$ || { echo "SANITY FAILURE: the claims register differs in the scratch copy" >&2; exit 1; }
rm -f /tmp/.reg_scratch.$$ /tmp/.reg_repo.$$
cp src/attnscale/softmax.py /tmp/.softmax_orig.$$
sed -i 's/return e \/ np.sum(e, axis=ax, keepdims=True)/return e \/ (1.0 + np.sum(e, axis=ax, keepdims=True))/' src/attnscale/softmax.py
if PYTHONPATH="$SCRATCH/src" "$PY" -m pytest "${sanity_args[@]}" >/dev/null 2>&1; then
  echo "SANITY FAILURE: a planted fault in the scratch copy was not detected" >&2; exit 1
fi
mv /tmp/.softmax_orig.$$ src/attnscale/softmax.py
echo "sanity: planted fault detected, scratch copy is what gets imported"

# 2. mutation run: all mutants, or (SAMPLE) a seeded uniform sample drawn from all of them
if [ -n "${SAMPLE:-}" ]; then
  "$PY" - "$SAMPLE" "${SEED:-2026}" <<'DRAW'
import json, random, sys
from pathlib import Path
from mutmut.__main__ import copy_also_copy_files, copy_src_dir, create_mutants, setup_source_paths
size, seed = int(sys.argv[1]), int(sys.argv[2])
Path("mutants").mkdir(exist_ok=True)
copy_src_dir(); copy_also_copy_files(); setup_source_paths(); create_mutants(1)
names = sorted(k for meta in Path("mutants/src").rglob("*.meta") for k in json.loads(meta.read_text())["exit_code_by_key"])
if size > len(names):
    raise SystemExit(f"SAMPLE={size} exceeds the run's {len(names)} mutants")
sample = random.Random(seed).sample(names, size)
Path("sample.txt").write_text("".join(f"{k}\n" for k in sample))
# the others are marked skipped (mutmut's exit code 34), so that mutmut run leaves them; passing
# the names to mutmut run instead would make it run its clean tests by node id, which fails on ids
# pytest cannot parse back
keep = set(sample)
for meta in Path("mutants/src").rglob("*.meta"):
    data = json.loads(meta.read_text())
    data["exit_code_by_key"] = {k: (v if k in keep else 34) for k, v in data["exit_code_by_key"].items()}
    meta.write_text(json.dumps(data, indent=4))
print(f"sample of {size} (seed {seed}) from all {len(names)} mutants: {Path('sample.txt').resolve()}")
DRAW
fi
nice -n 10 "$PY" -m mutmut run --max-children "$JOBS" >mutmut-run.log 2>&1 || { tail -40 mutmut-run.log; exit 1; }
"$PY" -m mutmut results --all true >mutmut-results.txt 2>&1 || true

# 3. score per module (time-outs and out-of-memory kills count as detected), over the sample if any
"$PY" - <<'PYEOF'
import collections, json, os
from pathlib import Path
from mutmut.stats import status_by_exit_code
from scipy.stats import beta
codes = {k: v for meta in Path("mutants/src").rglob("*.meta") for k, v in json.loads(meta.read_text())["exit_code_by_key"].items()}
if os.path.exists("sample.txt"):
    codes = {k: codes[k] for k in open("sample.txt").read().split()}
rows = collections.defaultdict(collections.Counter)
for name, code in codes.items():
    rows[name.split("__mutmut_")[0].rsplit(".", 1)[0].removeprefix("attnscale.")][status_by_exit_code[code]] += 1
def interval(k, n):
    lo = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{100 * k / max(1, n):6.1f}% [{100 * lo:5.1f}, {100 * hi:5.1f}]"
DETECTED = ("killed", "timeout", "segfault")
print(f"{'module':22} {'mutants':>7} {'killed':>6} {'survived':>8} {'timeout':>7} {'other':>5}  detected [95% CI]")
tot = collections.Counter()
for mod, c in sorted(rows.items()):
    n = sum(c.values()); k = c["killed"]; s = c["survived"]; t = c["timeout"] + c["segfault"]
    tot.update(c)
    print(f"{mod:22} {n:7} {k:6} {s:8} {t:7} {n - k - s - t:5}  {interval(k + t, n)}")
n = sum(tot.values()); d = sum(tot[x] for x in DETECTED)
print(f"{'TOTAL':22} {n:7} {tot['killed']:6} {tot['survived']:8} {tot['timeout'] + tot['segfault']:7} {n - d - tot['survived']:5}  {interval(d, n)}")
print("statuses:", dict(tot))
for name, code in sorted(codes.items()):
    if status_by_exit_code[code] not in DETECTED:
        print(f"  {status_by_exit_code[code]}: {name}")
PYEOF
echo "survivors: $SCRATCH/mutmut-results.txt (inspect with: cd $SCRATCH && $PY -m mutmut show NAME)"
echo "elapsed: $(( $(date +%s) - start )) s"
