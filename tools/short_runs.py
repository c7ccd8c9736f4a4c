"""Short training runs of every arm, pinned for tests/training/test_sweep.py.

    python tools/short_runs.py           # writes tests/data/training_short.json

The stored sweeps of chapter 10 are re-run by the tests marked ``stored_sweep`` (15 s to
4 min each). These short runs (the smallest cell, fewer steps, seeds and held-out
examples) pin the same code to the last bits it can promise, in a few seconds: every
arm (Adam, SGD, AdamW, a learned scale; dot and cosine scores) and every number the
training loop returns.

Each run is made under ``OPENBLAS_CORETYPE`` = SkylakeX, Haswell and Prescott (the last two with
NumPy's AVX-512 paths switched off, Prescott also its AVX2 ones: ``NPY_DISABLE_CPU_FEATURES``),
and under SkylakeX with one thread. The file keeps the SkylakeX values (this machine's default
kernel) and, entry by entry, the measured spread: the largest relative difference any
other kernel or thread count showed. The test's tolerance for an entry is a hundred times
its spread, and never below 1e-9. A decision (best rate, slides, steps to target,
divergence) is compared exactly, except where the numbers it follows spread by more than
1e-6: there it can flip on another CPU, and its spread is stored as infinite (not
compared); a decision about one run follows that run's numbers, one about a scale (its
best rate, its slides) all of the scale's numbers, and where a best rate is not compared,
neither is anything reported at it. Needs a CPU with AVX-512 for the SkylakeX kernel.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import relative_spread, run_under_settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "training_short.json"
SHORT = {"steps": 50, "seeds": 2, "eval_size": 32, "validation_size": 32}
RUNS = {
    "adam-dot": {"kind": "dot", "optimizer": "adam", "options": {}},
    "adam-cosine": {"kind": "cosine", "optimizer": "adam", "options": {}},
    "sgd-dot": {"kind": "dot", "optimizer": "sgd", "options": {}},
    "sgd-cosine": {"kind": "cosine", "optimizer": "sgd", "options": {}},
    "learned-dot": {"kind": "dot", "optimizer": "adam", "options": {"learn_scale": True}},
    "learned-cosine": {"kind": "cosine", "optimizer": "adam", "options": {"learn_scale": True}},
    "adamw-dot": {"kind": "dot", "optimizer": "adam", "options": {"weight_decay": 0.1}},
    # SGD's windows reach rates at which every scale's runs are chaotic: a window a decade
    # lower, never slid, pins SGD's numbers as well as its decisions
    "sgd-dot-low": {"kind": "dot", "optimizer": "sgd", "options": {"lrs": {"adam": {"dot": [0.01, 0], "cosine": [0.01, 0]}, "sgd": {"dot": [0.1, 1], "cosine": [2.0, 1]}}, "slides": 0}},
    "sgd-cosine-low": {"kind": "cosine", "optimizer": "sgd", "options": {"lrs": {"adam": {"dot": [0.01, 0], "cosine": [0.01, 0]}, "sgd": {"dot": [0.1, 1], "cosine": [2.0, 1]}}, "slides": 0}},
}
DECISIONS = ("best_lr", "slides", "steps_to_target", "steps_to_target_all", "diverged_at")
AT_BEST_RATE = ("steps_to_target", "final_loss", "loss", "accuracy", "half_l1", "scale")
CALM = 1e-6


def _plain(x):
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    return x


def run_all() -> dict:
    from attnscale.training import run_config

    return {name: _plain(run_config(16, 32, spec["kind"], spec["optimizer"], **{**SHORT, **spec["options"]})) for name, spec in RUNS.items()}


def _spread(reference: dict, others: list[dict]) -> dict:
    spread = {}
    for key, value in reference.items():
        arr = np.asarray(value)
        if arr.dtype.kind not in "fiub" or arr.ndim == 0:
            if any(o[key] != value for o in others):
                raise SystemExit(f"{key} differs between kernels: {value!r}")
            continue
        spread[key] = relative_spread(value, [o[key] for o in others])
    labels = len(reference["labels"])
    numbers = {k: s for k, s in spread.items() if k not in DECISIONS and s.shape[:1] == (labels,)}
    per_label = np.array([max(float(s[i].max()) for s in numbers.values()) for i in range(labels)])
    for key in DECISIONS:
        if key not in spread:
            continue
        # a decision per run (scale, rate, seed) or per (scale, seed) follows the numbers of
        # the same run; one per scale (its best rate, its slides) follows all the scale's numbers
        alike = [s for s in numbers.values() if s.shape == spread[key].shape and s.ndim > 1]
        worst = np.max(alike, axis=0) if alike else per_label.reshape((labels,) + (1,) * (spread[key].ndim - 1))
        spread[key] = np.where(np.broadcast_to(worst, spread[key].shape) > CALM, np.inf, spread[key])
    # where a scale's best rate may flip, so may everything reported at the best rate
    for key in AT_BEST_RATE:
        if key in spread:
            spread[key][per_label > CALM] = np.inf
    return {k: [float(f"{x:.1e}") if math.isfinite(x) else "inf" for x in s.ravel()] for k, s in spread.items()}


def main() -> int:
    if sys.argv[1:] == ["--one"]:
        json.dump(run_all(), sys.stdout)
        return 0
    results = run_under_settings(__file__)
    reference, others = results[0], results[1:]
    runs = {name: {**spec, "values": reference[name], "spread": _spread(reference[name], [o[name] for o in others])} for name, spec in RUNS.items()}
    OUT.parent.mkdir(exist_ok=True)
    text = json.dumps({"about": __doc__.split("\n\n")[0], "cell": [16, 32], "short": SHORT, "calm": CALM, "runs": runs}, allow_nan=True)
    OUT.write_text(text + "\n")
    print(f"wrote {OUT.relative_to(ROOT)} ({len(text) // 1000} kB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
