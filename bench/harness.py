"""The one timing harness of ``bench/bench.py``: every side of every comparison
goes through :func:`measure`, in the same process, with the same warm-up and
the same number of repeats.

A measurement is ``warmup`` untimed calls, then ``repeat`` timed runs of
``number`` calls each (``timeit.Timer.repeat``, so the garbage collector is off
while timing, for both sides alike). The summary is the median and the
interquartile range of the per-call times; the spread matters because the
benchmark machine is small and shared.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable, Sequence

import numpy as np

REPEAT = 7
WARMUP = 1


def measure(fn: Callable[[], object], *, repeat: int = REPEAT, number: int = 1, warmup: int = WARMUP) -> dict:
    """Seconds per call of ``fn()``: median, quartiles and every run."""
    if repeat < 7:
        raise ValueError(f"repeat must be at least 7, got {repeat}")
    for _ in range(warmup):
        fn()
    runs = np.array(timeit.Timer(fn).repeat(repeat=repeat, number=number)) / number
    q1, med, q3 = np.percentile(runs, [25, 50, 75])
    return {
        "median": float(med),
        "q1": float(q1),
        "q3": float(q3),
        "iqr": float(q3 - q1),
        "repeats": int(repeat),
        "calls_per_repeat": int(number),
        "warmup_calls": int(warmup),
        "runs": [float(t) for t in runs],
    }


def per_item(m: dict, items: int) -> dict:
    """The same measurement divided by the number of items a call processes."""
    out = {key: m[key] / items for key in ("median", "q1", "q3", "iqr")}
    out["runs"] = [t / items for t in m["runs"]]
    return {**m, **out, "items": int(items)}


def ratio(slow: dict, fast: dict) -> dict:
    """``slow / fast`` as a ratio of medians, with a conservative range from the
    quartiles (slow's first quartile over fast's third, and the reverse)."""
    return {
        "median": slow["median"] / fast["median"],
        "low": slow["q1"] / fast["q3"],
        "high": slow["q3"] / fast["q1"],
    }


def loglog_slope(sizes: Sequence[float], medians: Sequence[float]) -> float:
    """Least-squares slope of log(time) against log(size): time ~ size**slope."""
    return float(np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(medians, float)), 1)[0])


def scaling(make_call: Callable[[float], Callable[[], object]], sizes: Sequence[float], **kw) -> dict:
    """:func:`measure` at each size (``make_call(size)`` returns the call) and
    the fitted log-log slope of the medians."""
    points = []
    for size in sizes:
        m = measure(make_call(size), **kw)
        points.append({"size": size, "median": m["median"], "q1": m["q1"], "q3": m["q3"], "repeats": m["repeats"]})
    return {"points": points, "loglog_slope": loglog_slope([p["size"] for p in points], [p["median"] for p in points])}
