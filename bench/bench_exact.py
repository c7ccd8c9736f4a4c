"""Timings of :mod:`attnscale.exact` (``python bench/bench_exact.py``; nothing asserts them).

Each case is run once to warm up, then timed with ``timeit.Timer.repeat`` (``REPEAT``
runs of one call each); the table gives the median and the interquartile range. The
headline case is ``expected_sum_p2`` on a grid of 200 scales times 10 lengths for
normal scores (target: under one second).
"""

from __future__ import annotations

import os
import platform
import sys
import timeit

import numpy as np
import scipy

from attnscale import exact as E

REPEAT = 9


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            names = [line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return (
        f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} logical CPUs; "
        f"Python {sys.version.split()[0]}, numpy {np.__version__}, scipy {scipy.__version__}"
    )


def timed(label: str, call) -> None:
    call()  # warm-up (also fills the kernel cache)
    runs = np.array(timeit.Timer(call).repeat(repeat=REPEAT, number=1))
    q1, med, q3 = np.percentile(runs, [25, 50, 75])
    print(f"{label:<62s} median {med * 1e3:8.1f} ms   IQR [{q1 * 1e3:7.1f}, {q3 * 1e3:7.1f}] ms")


def main() -> None:
    print(machine())
    print(f"{REPEAT} timed runs per case after one warm-up\n")
    n = np.geomspace(2, 1e9, 10)[None, :]
    grids = {
        "alpha = geomspace(0.01, 50, 200)": np.geomspace(0.01, 50, 200)[:, None],
        "alpha = linspace(0.25, 50, 200)": np.linspace(0.25, 50, 200)[:, None],
        "alpha = linspace(0.05, 10, 200)": np.linspace(0.05, 10, 200)[:, None],
    }
    for name, alpha in grids.items():
        timed(f"expected_sum_p2, normal, 200 x 10, {name}", lambda a=alpha: E.expected_sum_p2(n, a))
    alpha = np.geomspace(0.01, 50, 200)[:, None]
    timed("expected_half_l1, normal, 200 x 10 (geomspace 0.01..50)", lambda: E.expected_half_l1(n, alpha))
    timed("expected_entropy, normal, 200 x 10 (geomspace 0.01..50)", lambda: E.expected_entropy(n, alpha))
    a_cos = np.geomspace(0.1, 1000, 50)[:, None]
    for d in (2, 128, 4096):
        timed(f"expected_sum_p2, cosine d={d}, 50 x 10 (geomspace 0.1..1000)", lambda d=d: E.expected_sum_p2(n, a_cos, d))
    gaps = np.linspace(0, 6, 10)[None, :]
    timed("needle_weight, normal n=4096, 200 alphas x 10 gaps", lambda: E.needle_weight(4096, alpha, gaps))
    timed("expected_sum_p2_shared_query, d=64, 20 alphas x 10 n", lambda: E.expected_sum_p2_shared_query(n, np.geomspace(0.1, 10, 20)[:, None], 64))
    timed("near_tie_limit, normal, 10 n", lambda: E.near_tie_limit(n.ravel()))


if __name__ == "__main__":
    main()
