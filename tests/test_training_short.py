"""Short runs of every training arm against their pinned values (tests/data/training_short.json,
written by tools/short_runs.py): every number the training loop returns, to a tolerance set
entry by entry from the spread measured across BLAS kernels and thread counts.

The tests marked stored_sweep re-run the stored sweeps' smallest cells (15 s to 4 min each);
these runs take seconds and pin the same code, so a change to the training code is caught
here first, and the mutation run (tools/mutate.sh) can use them in place of the sweeps."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from attnscale.training import run_config

PINNED = json.loads((Path(__file__).resolve().parent / "data" / "training_short.json").read_text())
FLOOR = 1e-9  # no entry is compared more tightly than this, however small its measured spread
MARGIN = 100  # an entry may move by a hundred times its measured spread


def _tolerance(spread: list) -> np.ndarray:
    s = np.array([math.inf if x == "inf" else x for x in spread], dtype=float)
    return np.maximum(MARGIN * s, FLOOR)


def mismatches(fresh: dict, pinned: dict, spread: dict) -> list[str]:
    """The entries of ``fresh`` outside their tolerance around ``pinned`` (inf and zero
    must match exactly where compared); keys without a spread must be equal."""
    bad = []
    if sorted(fresh) != sorted(pinned):
        return [f"keys: {sorted(set(fresh) ^ set(pinned))}"]
    for key, want in pinned.items():
        got = fresh[key]
        if key not in spread:
            if (got.tolist() if isinstance(got, np.ndarray) else got) != want:
                bad.append(f"{key}: {got!r} != {want!r}")
            continue
        got, want = np.asarray(got, float).ravel(), np.asarray(want, float).ravel()
        if got.shape != want.shape:
            bad.append(f"{key}: shape {got.shape} != {want.shape}")
            continue
        tol = _tolerance(spread[key])
        with np.errstate(all="ignore"):
            off = np.abs(got - want) > tol * np.abs(want)
        off &= (got != want) & np.isfinite(tol)  # equal values (infinities, zeros) always agree
        if off.any():
            i = int(np.argmax(off))
            bad.append(f"{key}: {int(off.sum())} entries off, first [{i}] {got[i]!r} against {want[i]!r} (rtol {tol[i]:.1e})")
    return bad


def test_the_pinned_runs_are_this_file_s_settings():
    assert PINNED["cell"] == [16, 32] and PINNED["short"]["steps"] < 100
    assert {(r["kind"], r["optimizer"], r["options"].get("learn_scale", False), r["options"].get("weight_decay", 0.0) > 0) for r in PINNED["runs"].values()} >= {
        ("dot", "adam", False, False), ("cosine", "adam", False, False), ("dot", "sgd", False, False), ("cosine", "sgd", False, False),
        ("dot", "adam", True, False), ("cosine", "adam", True, False), ("dot", "adam", False, True)}
    # most entries are compared: the ones whose measured spread makes them unpredictable are few
    every = [x for r in PINNED["runs"].values() for s in r["spread"].values() for x in s]
    assert sum(x == "inf" for x in every) < 0.3 * len(every)


@pytest.mark.parametrize("name", list(PINNED["runs"]))
def test_a_short_run_reproduces_its_pinned_values(name):
    run = PINNED["runs"][name]
    fresh = run_config(*PINNED["cell"], run["kind"], run["optimizer"], **{**PINNED["short"], **run["options"]})
    assert mismatches(fresh, run["values"], run["spread"]) == []


def test_the_comparison_sees_a_change_in_any_compared_entry():
    """Not blind: moving a compared entry by ten times its tolerance, or changing a
    decision, or a label, is reported; moving an uncompared one is not."""
    run = PINNED["runs"]["adam-cosine"]
    values, spread = run["values"], run["spread"]
    for key in ("loss", "val_area", "accuracy", "best_lr", "steps_to_target", "alphas"):
        moved = json.loads(json.dumps(values))
        flat = np.asarray(moved[key], float).ravel()
        i = int(np.flatnonzero(np.isfinite(flat) & (flat != 0))[0])
        flat[i] = flat[i] * (1 + 10 * _tolerance(spread[key])[i]) + (1 if key in ("best_lr", "steps_to_target") else 0)
        moved[key] = flat.reshape(np.shape(values[key])).tolist()
        assert len(mismatches(moved, values, spread)) == 1, key
    assert mismatches(dict(values, labels=["x"] + values["labels"][1:]), values, spread) != []
    loose = PINNED["runs"]["adam-dot"]
    i = next(i for i, x in enumerate(loose["spread"]["diverged_at"]) if x == "inf")
    moved = np.asarray(loose["values"]["diverged_at"], float).ravel()
    moved[i] += 7
    assert mismatches(dict(loose["values"], diverged_at=moved.reshape(np.shape(loose["values"]["diverged_at"]))), loose["values"], loose["spread"]) == []
