"""Run a script's ``--one`` mode under the CPU settings the pinning tools measure across.

Used by tools/short_runs.py and tools/pin_claims.py: each runs itself once per setting and
keeps the first run's values with the spread of the others. The settings are (OpenBLAS
kernel, threads, NumPy dispatch targets switched off): SkylakeX (this machine's default),
Haswell with NumPy's AVX2 paths and Prescott with its baseline SSE paths (standing for CPUs
without AVX-512 and without AVX2), and SkylakeX with one thread.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
