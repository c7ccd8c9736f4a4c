"""Pin the claims register's recomputed numbers for tests/claims/test_register.py.

    python tools/pin_claims.py           # writes tests/data/claims_values.json

A record's verdict compares its recomputed value with the source's claim at the record's
tolerance (up to a few per cent for a claim the source rounds), so the verdict tests let a
recomputation drift far below that tolerance unnoticed. This file keeps every numeric value
the register recomputes (the numbers the claims page prints), at full precision, with the
spread measured under ``OPENBLAS_CORETYPE`` = SkylakeX, Haswell and Prescott (the last two with
NumPy's AVX-512 paths switched off, Prescott also its AVX2 ones: ``NPY_DISABLE_CPU_FEATURES``)
and under SkylakeX with one thread: the largest relative difference from the SkylakeX value, entry by
entry. The test allows a hundred times that spread and never less than 1e-10. A change that
moves a pinned number on purpose is followed by a new run of this script, and the diff of the
file shows what moved. Needs a CPU with AVX-512 for the SkylakeX kernel.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import relative_spread, run_under_settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "claims_values.json"


def values() -> dict[str, list[float]]:
    """Every record whose recomputation is a number or a list of numbers (not a statement)."""
    from attnscale.claims import evaluate_register, load_register

    out = {}
    for row in evaluate_register(load_register(ROOT / "chapters" / "claims.yml")):
        value = row["value"]
        if value is None or isinstance(value, bool):
            continue
        out[row["id"]] = [float(x) for x in np.ravel(value)]
    return out


def main() -> int:
    if sys.argv[1:] == ["--one"]:
        json.dump(values(), sys.stdout)
        return 0
    runs = run_under_settings(__file__)
    reference, others = runs[0], runs[1:]
    pinned = {}
    for rid, ref in reference.items():
        spread = relative_spread(ref, [other[rid] for other in others])
        pinned[rid] = {"value": ref, "spread": [float(f"{x:.1e}") for x in spread]}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"about": __doc__.split("\n\n")[0], "records": pinned}, indent=0) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(pinned)} records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
