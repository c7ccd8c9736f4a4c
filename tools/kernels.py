"""Run a script's ``--one`` mode under the CPU settings the pinning tools measure across.

Used by tools/short_runs.py and tools/pin_claims.py: each runs itself once per setting and
keeps the first run's values with the spread of the others (:func:`relative_spread`). The settings are (OpenBLAS
kernel, threads, NumPy dispatch targets switched off): SkylakeX (this machine's default),
Haswell with NumPy's AVX2 paths and Prescott with its baseline SSE paths (standing for CPUs
without AVX-512 and without AVX2), and SkylakeX with one thread.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

NO_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"
SETTINGS = [("SkylakeX", None, ""), ("Haswell", None, NO_AVX512), ("Prescott", None, "X86_V3 " + NO_AVX512), ("SkylakeX", "1", "")]


def run_under_settings(script: str) -> list:
    """The JSON that ``python script --one`` prints, once per setting, in the order above."""
    results = []
    for kernel, threads, numpy_off in SETTINGS:
        env = {**os.environ, "OPENBLAS_CORETYPE": kernel, "NPY_DISABLE_CPU_FEATURES": numpy_off}
        if threads:
            env["OPENBLAS_NUM_THREADS"] = threads
        done = subprocess.run([sys.executable, script, "--one"], env=env, capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout))
        print(f"ran under {kernel}" + (f", {threads} thread" if threads else "") + (f", NumPy without {numpy_off}" if numpy_off else ""), file=sys.stderr)
    return results


def relative_spread(reference: object, others: list) -> np.ndarray:
    """Entry by entry, the largest relative difference of ``others`` from ``reference``
    (equal values, infinities and zeros included, differ by 0; a NaN counts as infinite)."""
    a = np.asarray(reference, dtype=float)
    worst = np.zeros(a.shape)
    for other in others:
        b = np.asarray(other, dtype=float)
        if b.shape != a.shape:
            raise SystemExit(f"the shape of a value differs between settings: {a.shape} and {b.shape}")
        with np.errstate(all="ignore"):
            r = np.abs(a - b) / np.abs(a)
        r[a == b] = 0.0
        r[np.isnan(r)] = np.inf
        worst = np.maximum(worst, r)
    return worst
