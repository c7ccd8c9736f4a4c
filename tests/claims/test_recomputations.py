"""attnscale.claims, the recomputations: the register's recomputed numbers against their pinned values
(tests/data/claims_values.json, written by tools/pin_claims.py).

The verdict tests (tests/claims/test_register.py) compare each recomputation with the source's
claim at the record's tolerance; these pin the numbers themselves, the ones the claims
page prints, so that a recomputation cannot drift below that tolerance unnoticed. The
tolerance of an entry is a hundred times the spread measured across BLAS kernels, NumPy's
SIMD paths and thread counts, and never below 1e-10."""

import json
from pathlib import Path

import numpy as np
import pytest

from attnscale.claims import evaluate_register, load_register

ROOT = Path(__file__).resolve().parents[2]
PINNED = json.loads((ROOT / "tests" / "data" / "claims_values.json").read_text())["records"]
RECORDS = {r["id"]: r for r in load_register(ROOT / "chapters" / "claims.yml")}
FLOOR, MARGIN = 1e-10, 100


def test_the_pinned_records_are_the_register_s():
    """Pinned ids are register ids that name a recomputation (103 when written; the script
    pins every record whose recomputation returns numbers, so a record added later is pinned
    by running it again)."""
    assert set(PINNED) <= {rid for rid, rec in RECORDS.items() if rec.get("recompute")}
    assert len(PINNED) >= 100


@pytest.mark.parametrize("rid", sorted(PINNED))
def test_a_recomputed_number_is_its_pinned_value(rid):
    (row,) = evaluate_register([RECORDS[rid]])
    got = np.ravel(np.asarray(row["value"], dtype=float))
    want, spread = np.array(PINNED[rid]["value"]), np.array(PINNED[rid]["spread"])
    assert got.shape == want.shape
    tol = np.maximum(MARGIN * spread, FLOOR)
    assert np.all((got == want) | (np.abs(got - want) <= tol * np.abs(want))), (got.tolist(), want.tolist())
