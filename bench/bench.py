"""Benchmarks of the book's numerics and of its whole run (``make bench``).

Every comparison times both sides with one harness (``bench/harness.py``), in
this process: one warm-up call, then ``REPEAT`` (7) timed runs; the results are
the median and the interquartile range (IQR) of those runs, and speed-ups are
ratios of medians with a range from the quartiles. Each library routine is set
against what a reader would write and, where one exists, against the strongest
reasonable baseline (a vectorised ``scipy.special.lambertw`` for the Gaussian
optimum, BLAS-backed NumPy for the training step); the accuracy of each side is
measured beside its time, and the growth of time with problem size is fitted on
a log-log scale. Results are printed and written to ``_build/bench/bench.json``
and ``bench/results.json`` (committed, and shown by the appendix
"Reproducibility and performance"). Nothing in the test suite asserts a time.

Options: ``--skip-book`` keeps the "book" section of the existing
``bench/results.json`` instead of re-running every chapter and ``make book``;
``--only PART [PART ...]`` re-runs only the named parts and keeps the others.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

# Every measurement runs with one BLAS thread. On this two-core machine, shared
# with other work, a second OpenBLAS thread made some baselines erratic (runs of
# one size spread over a factor of ten); one thread treats both sides alike.
# The variables are read when NumPy loads BLAS, and are restored just after, so
# that the book run below (kernels, nbval, make book) runs as it does for a reader.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_saved_threads = {name: os.environ.get(name) for name in THREAD_VARIABLES}
os.environ.update({name: "1" for name in THREAD_VARIABLES})

import mpmath as mp
import numpy as np
import scipy
from harness import REPEAT, WARMUP, measure, per_item, ratio, scaling
from scipy.optimize import brentq, minimize_scalar
from scipy.special import ive, lambertw

from attnscale import training as tr
from attnscale import montecarlo as mc
from attnscale.montecarlo import collision_and_gradient, typical_optimum_normal
from attnscale.softmax import gradient_l1, softmax
from attnscale.optimum import alpha_star_cosine, alpha_star_normal
from attnscale.training.model import _loss_and_grads

for _name, _value in _saved_threads.items():
    if _value is None:
        os.environ.pop(_name, None)
    else:
        os.environ[_name] = _value
BLAS_THREADS = 1

ROOT = Path(__file__).resolve().parents[1]


def summary(m: dict) -> dict:
    """A measurement without its list of runs (for the nested scaling tables)."""
    return {key: val for key, val in m.items() if key != "runs"}


# ---- the Gaussian optimum -----------------------------------------------------


def ref_alpha_normal(n: float) -> mp.mpf:
    with mp.workdps(50):
        n = mp.mpf(n)
        x = mp.findroot(lambda t: t + mp.log1p(2 * t) - mp.log(n), mp.lambertw(n * mp.sqrt(mp.e) / 2).real - mp.mpf(1) / 2)
        return mp.sqrt(x)


def lambertw_alpha_normal(n: np.ndarray) -> np.ndarray:
    """The strongest baseline: the closed form alpha* = sqrt(W0(n sqrt(e) / 2) - 1/2),
    one vectorised call of SciPy's Lambert W (principal branch, real part)."""
    return np.sqrt(lambertw(n * np.sqrt(np.e) / 2).real - 0.5)


def scipy_loop_alpha_normal(values: np.ndarray) -> np.ndarray:
    """What a reader would write: maximise the objective numerically, one n at a time."""
    return np.array([minimize_scalar(lambda a, m=m: -a * (1 - np.exp(a * a - np.log(m))), bounds=(1e-9, np.sqrt(np.log(m)) + 1), method="bounded", options={"xatol": 1e-12}).x for m in values])


def mpmath_loop_alpha_normal(values: np.ndarray) -> np.ndarray:
    """The closed form, one n at a time, with mpmath's Lambert W."""
    return np.array([float(mp.sqrt(mp.lambertw(mp.mpf(m) * mp.sqrt(mp.e) / 2).real - mp.mpf(1) / 2)) for m in values])


def bench_normal() -> dict:
    rng = np.random.default_rng(0)
    n = np.exp(rng.uniform(np.log(2.0), np.log(1e300), 1_000_000))
    sizes = [1_000, 10_000, 100_000, 1_000_000]
    loop_sizes = [250, 500, 1000, 2000]
    sides = {
        "library": (alpha_star_normal, sizes),
        "lambertw_vectorised": (lambertw_alpha_normal, sizes),
        "scipy_loop": (scipy_loop_alpha_normal, loop_sizes),
    }
    out: dict = {"values": int(n.size), "sides": {}, "scaling": {}}
    for name, (fn, grid) in sides.items():
        sc = scaling(lambda size, fn=fn: (lambda v=n[: int(size)]: fn(v)), grid)
        out["scaling"][name] = sc
        largest = sc["points"][-1]
        out["sides"][name] = {"values_per_call": int(grid[-1]), **{k: largest[k] / grid[-1] * 1e6 for k in ("median", "q1", "q3")}}
    mp_values = 300
    m = per_item(measure(lambda: mpmath_loop_alpha_normal(n[:mp_values])), mp_values)
    out["sides"]["mpmath_loop"] = {"values_per_call": mp_values, **{k: m[k] * 1e6 for k in ("median", "q1", "q3")}}
    for side in out["sides"].values():
        side["unit"] = "microseconds per value"
        side["iqr"] = side["q3"] - side["q1"]
        side["repeats"] = REPEAT
    # accuracy: worst relative error against a 50-digit reference, on 200 of the
    # values and on 60 lengths just above n = 1 (where W0 - 1/2 cancels)
    checks = {"spread": n[:200], "near_one": 1.0 + np.geomspace(1e-8, 1.0, 60)}
    fns = {"library": alpha_star_normal, "lambertw_vectorised": lambertw_alpha_normal, "scipy_loop": scipy_loop_alpha_normal, "mpmath_loop": mpmath_loop_alpha_normal}
    for where, values in checks.items():
        ref = np.array([float(ref_alpha_normal(v)) for v in values])
        for name, fn in fns.items():
            out["sides"][name][f"worst_rel_error_{where}"] = float(np.max(np.abs(fn(values) / ref - 1)))
    lib = out["sides"]["library"]
    out["speedup"] = {name: ratio(out["sides"][name], lib) for name in ("lambertw_vectorised", "scipy_loop", "mpmath_loop")}
    return out


# ---- the cosine optimum -------------------------------------------------------


def naive_alpha_cosine(n: float, d: float) -> float:
    """What a reader would write: scipy's ive for M, a finite-difference slope, brentq on G'."""
    nu = d / 2 - 1

    def log_r(a):
        return np.log(ive(nu, 2 * a)) - 2 * np.log(ive(nu, a)) + nu * (np.log(a) - 2 * np.log(2)) - 0 - np.log(float(mp.gamma(nu + 1)))

    def foc(a):
        h = 1e-6 * a
        slope = (log_r(a + h) - log_r(a - h)) / (2 * h)
        return log_r(a) + np.log1p(a * slope) - np.log(n)

    return brentq(foc, 1e-3, 1e4, xtol=1e-12)


def naive_points(pts: list[tuple[float, float]]) -> tuple[np.ndarray, list[str]]:
    """The naive solver at each point: its value, or NaN and a note where it fails."""
    values, failures = [], []
    for n, d in pts:
        try:
            with np.errstate(all="ignore"):
                values.append(naive_alpha_cosine(n, d))
        except Exception as exc:  # the point of the comparison: where the naive route breaks
            values.append(np.nan)
            failures.append(f"n={n:.0f}, d={d:.0f}: {type(exc).__name__}")
    return np.array(values), failures


def same_points(pts: list[tuple[float, float]]) -> dict:
    """Both sides on exactly the points given (all of which the naive solver
    handles): the naive solver one point at a time, the library in one call."""
    n, d = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])

    def naive_loop():
        with np.errstate(all="ignore"):
            return [naive_alpha_cosine(a, b) for a, b in pts]

    naive, lib = per_item(measure(naive_loop), len(pts)), per_item(measure(lambda: alpha_star_cosine(n, d)), len(pts))
    diff = float(np.max(np.abs(np.array(naive_loop()) / alpha_star_cosine(n, d) - 1)))
    return {"points": len(pts), "naive": ms(naive), "library": ms(lib), "speedup": ratio(naive, lib), "worst_rel_diff": diff}


def ms(m: dict) -> dict:
    return {**{k: m[k] * 1e3 for k in ("median", "q1", "q3", "iqr")}, "unit": "milliseconds per point", "repeats": m["repeats"], "points_per_call": m["items"]}


def bench_cosine() -> dict:
    ns = np.logspace(np.log10(40), np.log10(20000), 500)
    ds = np.array([32.0, 64.0, 128.0, 256.0, 512.0])
    grid = alpha_star_cosine(ns[:, None], ds)
    t_grid = per_item(measure(lambda: alpha_star_cosine(ns[:, None], ds)), grid.size)
    big_d = np.array([1024.0, 2048.0, 4096.0])
    t_big = per_item(measure(lambda: alpha_star_cosine(ns[:100, None], big_d)), 100 * big_d.size)
    # where the naive route works: every fifth n of the grid at every width
    pts = [(float(n), float(d)) for n in ns[::100] for d in ds]
    naive, failures = naive_points(pts)
    ok = np.isfinite(naive)
    lib_pts = alpha_star_cosine(np.array([p[0] for p in pts]), np.array([p[1] for p in pts]))
    # the comparison on the part of the grid where the naive solver works (d <= 128) ...
    small_d = [(float(n), float(d)) for n in ns for d in ds if d <= 128]
    small_vals, small_fail = naive_points(small_d)
    on_grid = same_points([p for p, v in zip(small_d, small_vals) if np.isfinite(v)])
    on_grid["naive_failures"] = len(small_fail)
    # ... and on the few scattered points sampled above, where the library's fixed cost per call shows
    scattered = same_points([p for p, good in zip(pts, ok) if good])
    large = []
    for n, d in ((512.0, 2048.0), (512.0, 4096.0), (1e12, 4096.0), (1e6, 16.0)):
        try:
            with np.errstate(all="ignore"):
                value = naive_alpha_cosine(n, d)
            large.append({"n": n, "d": d, "naive": value, "library": alpha_star_cosine(n, d)})
        except Exception as exc:
            large.append({"n": n, "d": d, "naive": f"fails: {type(exc).__name__}", "library": alpha_star_cosine(n, d)})
    with np.errstate(all="ignore"):
        ive_underflow = float(ive(2047.0, 300.0))
    return {
        "grid_points": int(grid.size),
        "library_grid": ms(t_grid),
        "large_d_points": int(100 * big_d.size),
        "library_large_d": ms(t_big),
        "same_points_grid": on_grid,
        "same_points_scattered": scattered,
        "sampled_points": len(pts),
        "naive_worst_rel_diff_where_it_works": float(np.max(np.abs(naive[ok] / lib_pts[ok] - 1))) if ok.any() else None,
        "naive_failures": failures,
        "large_cases": large,
        "ive(2047, 300)": ive_underflow,
    }


# ---- the Monte Carlo kernel ---------------------------------------------------


def straightforward_mc(scores, alphas):
    out = []
    for a in alphas:
        z = a * (scores - scores.max(axis=1, keepdims=True))
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        out.append(a * (1 - (p * p).sum(axis=1)))
    return np.array(out)


def bench_montecarlo() -> dict:
    rng = np.random.default_rng(1)
    rows = rng.standard_normal((2000, 4096))
    alphas = np.logspace(-1, 2, 16)
    sides = {"library": lambda: collision_and_gradient(rows, alphas)[1], "straightforward": lambda: straightforward_mc(rows, alphas)}
    results = {}
    for name, fn in sides.items():
        m = measure(fn)
        # peak memory from one further call under tracemalloc (which slows it, so it is not timed)
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        work = rows.shape[0] * alphas.size
        results[name] = {
            "seconds": {k: m[k] for k in ("median", "q1", "q3", "iqr", "repeats")},
            "rows_per_second_median": work / m["median"],
            "peak_mb": peak / 2**20,
        }
    diff = float(np.max(np.abs(sides["library"]() - sides["straightforward"]())) / np.max(np.abs(sides["straightforward"]())))
    return {"n": 4096, "rows": 2000, "scales": int(alphas.size), **results,
            "speedup": ratio(results["straightforward"]["seconds"], results["library"]["seconds"]), "max_rel_difference": diff}


# ---- the typical-row optimum ----------------------------------------------------


def batch_route_typical(n: int, measure=gradient_l1, batches: int = 8, seed: int = mc.TYPICAL_SEED) -> tuple[float, float]:
    """The typical-row optimum as the library computed it before (to 2026-11-28): the
    softmax of the whole sample (validated, in one pass) at every scale of a bounded
    search over log alpha, once for all the rows and once for each of the ``batches``
    batches, whose optima's spread over sqrt(batches) was the standard error."""
    rng = np.random.default_rng(seed)
    rows = max(50, mc.TYPICAL_VALUES // n)
    sample = [rng.standard_normal((rows, n)) for _ in range(batches)]

    def optimum(block: np.ndarray) -> float:
        def objective(log_alpha: float) -> float:
            a = float(np.exp(log_alpha))
            return -float(np.mean(np.log(measure(softmax(block, a), a))))

        found = minimize_scalar(objective, bounds=(np.log(0.3), np.log(60.0)), method="bounded", options={"xatol": 1e-4})
        return float(np.exp(found.x))

    each = np.array([optimum(block) for block in sample])
    return optimum(np.concatenate(sample)), float(np.std(each, ddof=1) / np.sqrt(batches))


def bench_typical() -> dict:
    """One call of ``typical_optimum_normal`` (n = 256, the L1 measure, the book's sample of
    eight batches of 500,000 values), the unit of chapter 4's cost (21 calls), against the
    batch route it replaced; "library" draws the sample, as a chapter's first call at an n does, and
    "library_sample_kept" reuses it, as the calls for further measures at that n do. The value must be the same float; the standard errors differ
    (the batch one has 7 degrees of freedom), and their ratio is recorded."""
    n = 256

    def drawn() -> tuple[float, float]:
        mc._sample_cache.clear()  # as at a chapter's first call at this n: the sample is drawn
        return typical_optimum_normal(n)

    sides = {"library": drawn, "library_sample_kept": lambda: typical_optimum_normal(n), "batch_route": lambda: batch_route_typical(n)}
    out: dict = {"n": n, "values_per_call": 8 * mc.TYPICAL_VALUES, "sides": {}}
    for name, fn in sides.items():
        m = measure(fn)
        out["sides"][name] = {"seconds": {k: m[k] for k in ("median", "q1", "q3", "iqr", "repeats")}}
    (value, se), (old_value, old_se) = typical_optimum_normal(n), batch_route_typical(n)
    out["same_value"] = value == old_value
    out["value"], out["se_library"], out["se_batch_route"] = value, se, old_se
    out["speedup"] = ratio(out["sides"]["batch_route"]["seconds"], out["sides"]["library"]["seconds"])
    return out


# ---- the command line's cold start ----------------------------------------------


def bench_cold_start() -> dict:
    """``python -m attnscale recommend`` as a reader runs it: a new interpreter each time
    (the import of the package and NumPy, and the computation), against the interpreter
    that only imports NumPy, the floor every run pays, and the one that imports the
    command's module and stops (imports without the computation). The command's path
    imports neither SciPy nor SymPy (``tests/test_recommend.py``). The target: half a second."""
    base = [sys.executable, "-c", "import numpy"]
    module = [sys.executable, "-c", "import attnscale.recommend"]
    cli = [sys.executable, "-m", "attnscale", "recommend", "--n", "4096", "--d", "128"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
    out: dict = {"command": "python -m attnscale recommend --n 4096 --d 128", "target_seconds": 0.5, "sides": {}}
    for name, cmd in (("recommend", cli), ("import_numpy_only", base), ("import_recommend_module", module)):
        m = measure(lambda cmd=cmd: subprocess.run(cmd, **quiet))
        out["sides"][name] = {"seconds": {k: m[k] for k in ("median", "q1", "q3", "iqr", "repeats")}}
    out["within_target"] = out["sides"]["recommend"]["seconds"]["median"] <= out["target_seconds"]
    return out


# ---- the training step --------------------------------------------------------


def straightforward_step(params, data, alpha, kind, optimize=False):
    """The training step as a reader would write it: every key formed, one
    einsum per product (the first version of attnscale.training). With
    ``optimize=True`` every einsum may reorder its contraction and hand it to
    BLAS (``numpy.einsum(..., optimize=True)``), the usual first fix."""
    from attnscale.softmax import softmax, softmax_vjp

    ein = lambda spec, *ops: np.einsum(spec, *ops, optimize=optimize)
    Wq, Wk, K, V, x, t = params["Wq"], params["Wk"], data["K"], data["V"], data["x"], data["target"]
    seeds, batch, n, d = K.shape
    c = V.shape[-1]
    a = np.asarray(alpha, dtype=float)[:, None]
    q = ein("smij,sbj->smbi", Wq, x)
    k = ein("smij,sbnj->smbni", Wk, K)
    if kind == "dot":
        s = ein("smbi,smbni->smbn", q, k) / np.sqrt(d)
    else:
        qn, kn = np.linalg.norm(q, axis=-1, keepdims=True), np.linalg.norm(k, axis=-1, keepdims=True)
        qh, kh = q / qn, k / kn
        s = ein("smbi,smbni->smbn", qh, kh)
    p = softmax(s, a[..., None])
    diff = ein("smbn,sbnc->smbc", p, V) - t[:, None]
    g_s = softmax_vjp(p, ein("smbc,sbnc->smbn", 2 * diff / (batch * c), V), a)
    if kind == "dot":
        g_q = ein("smbn,smbni->smbi", g_s, k) / np.sqrt(d)
        g_k = g_s[..., None] * q[:, :, :, None, :] / np.sqrt(d)
    else:
        g_qh = ein("smbn,smbni->smbi", g_s, kh)
        g_q = (g_qh - np.sum(g_qh * qh, axis=-1, keepdims=True) * qh) / qn
        g_kh = g_s[..., None] * qh[:, :, :, None, :]
        g_k = (g_kh - np.sum(g_kh * kh, axis=-1, keepdims=True) * kh) / kn
    return {"Wq": ein("smbi,sbj->smij", g_q, x), "Wk": ein("smbni,sbnj->smij", g_k, K)}


def matmul_step(params, data, alpha, kind):
    """The same algorithm as :func:`straightforward_step` (every key and every
    per-key gradient formed), with each product written as a batched ``@``
    and the large ones (forming the keys, the gradient of ``W_k``) as one
    ``(batch * n) x d`` matrix product per seed and model, so that the work
    goes to BLAS in large pieces."""
    from attnscale.softmax import softmax, softmax_vjp

    Wq, Wk, K, V, x, t = params["Wq"], params["Wk"], data["K"], data["V"], data["x"], data["target"]
    seeds, batch, n, d = K.shape
    models, c = Wq.shape[1], V.shape[-1]
    a = np.asarray(alpha, dtype=float)[:, None]
    flat_K = K.reshape(seeds, 1, batch * n, d)
    q = x[:, None] @ Wq.swapaxes(-1, -2)  # (s, m, b, d)
    k = (flat_K @ Wk.swapaxes(-1, -2)).reshape(seeds, models, batch, n, d)
    if kind == "dot":
        s = (k @ q[..., None])[..., 0] / np.sqrt(d)
    else:
        qn, kn = np.linalg.norm(q, axis=-1, keepdims=True), np.linalg.norm(k, axis=-1, keepdims=True)
        qh, kh = q / qn, k / kn
        s = (kh @ qh[..., None])[..., 0]
    p = softmax(s, a[..., None])  # (s, m, b, n)
    diff = (p[..., None, :] @ V[:, None])[..., 0, :] - t[:, None]
    g_p = ((2 * diff / (batch * c))[..., None, :] @ V[:, None].swapaxes(-1, -2))[..., 0, :]
    g_s = softmax_vjp(p, g_p, a)
    if kind == "dot":
        g_q = (g_s[..., None, :] @ k)[..., 0, :] / np.sqrt(d)
        g_k = g_s[..., None] * q[:, :, :, None, :] / np.sqrt(d)
    else:
        g_qh = (g_s[..., None, :] @ kh)[..., 0, :]
        g_q = (g_qh - np.sum(g_qh * qh, axis=-1, keepdims=True) * qh) / qn
        g_kh = g_s[..., None] * qh[:, :, :, None, :]
        g_k = (g_kh - np.sum(g_kh * kh, axis=-1, keepdims=True) * kh) / kn
    g_Wq = g_q.swapaxes(-1, -2) @ x[:, None]
    g_Wk = g_k.reshape(seeds, models, batch * n, d).swapaxes(-1, -2) @ flat_K
    return {"Wq": g_Wq, "Wk": g_Wk}


TRAINING_SIDES = {
    # the training loop's own step (the inputs checked once, cosine batches in pieces)
    "library": lambda params, data, alpha, kind: _loss_and_grads(params, data, alpha, kind, checked=True)[1],
    "einsum": lambda params, data, alpha, kind: straightforward_step(params, data, alpha, kind),
    "einsum_optimize": lambda params, data, alpha, kind: straightforward_step(params, data, alpha, kind, optimize=True),
    "matmul": matmul_step,
}


def training_problem(kind: str, n: int):
    """The sweep's largest cells at length ``n``: d = 64, batches of 32, five seeds,
    every scale of the sweep at each of its window's learning rates as models."""
    _, alphas = tr.sweep_scales(256, 64, kind)
    alpha = np.repeat(alphas, tr.SWEEP["rates"][kind])
    rng = np.random.default_rng(0)
    params = tr.init_params(rng, 5, alpha.size, 64)
    params = {key: w + 0.05 * rng.standard_normal(w.shape) for key, w in params.items()}
    data = tr.sample_batch(rng, 5, 32, n, 64)
    return params, data, alpha


def bench_training() -> dict:
    """One gradient step of the sweep's largest cells (n = 256, d = 64, five
    seeds, every scale and learning rate of its window as models), every side timed
    at n = 32 to 256 for the growth of time with n."""
    lengths = [32, 64, 128, 256]
    out = {}
    for kind in tr.KINDS:
        problems = {n: training_problem(kind, n) for n in lengths}
        params, data, alpha = problems[256]
        grads = {name: fn(params, data, alpha, kind) for name, fn in TRAINING_SIDES.items()}
        ref = grads["einsum"]
        res: dict = {"models": int(5 * alpha.size), "n": 256, "d": 64, "batch": 32, "sides": {}}
        for name, fn in TRAINING_SIDES.items():
            sc = scaling(lambda n, fn=fn: (lambda p=problems[n]: fn(*p, kind)), lengths)
            top = sc["points"][-1]
            err = max(float(np.max(np.abs(grads[name][key] - ref[key])) / np.max(np.abs(ref[key]))) for key in ("Wq", "Wk"))
            res["sides"][name] = {"seconds": {k: top[k] for k in ("median", "q1", "q3")} | {"iqr": top["q3"] - top["q1"], "repeats": top["repeats"]},
                                  "max_rel_difference_from_einsum": err, "scaling": sc}
        lib = res["sides"]["library"]["seconds"]
        res["speedup"] = {name: ratio(res["sides"][name]["seconds"], lib) for name in ("einsum", "einsum_optimize", "matmul")}
        strongest = min(("einsum_optimize", "matmul"), key=lambda name: res["sides"][name]["seconds"]["median"])
        res["strongest_baseline"] = strongest
        out[kind] = res
    return out


def bench_book() -> dict:
    chapters = sorted((ROOT / "chapters").glob("*.ipynb"))
    sys.path.insert(0, str(ROOT / "tools"))
    from notebooks import execute_notebook

    per_chapter = {}
    for nb in chapters:
        start = time.perf_counter()
        # the appendix shows bench/results.json, just rewritten with this run's numbers: store it
        # executed, or nbval below would fail on its printed numbers (make execute then adds this
        # run's book figures to it)
        execute_notebook(nb, write=nb.stem == "12_performance")
        per_chapter[nb.stem] = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "--nbval", "-q", "-p", "no:cacheprovider", *map(str, chapters)], cwd=ROOT, check=True, capture_output=True)
    t_nbval = time.perf_counter() - start
    floor_nb = ROOT / "_build" / "bench" / "floor.ipynb"
    import nbformat

    floor = nbformat.v4.new_notebook()
    floor.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    floor.cells = [nbformat.v4.new_code_cell("import numpy, sympy, matplotlib.pyplot")]
    nbformat.write(floor, floor_nb)
    start = time.perf_counter()
    for _ in chapters:
        execute_notebook(floor_nb, write=False)
    t_floor = time.perf_counter() - start
    env = dict(os.environ, MPLBACKEND="Agg")
    subprocess.run(["rm", "-rf", str(ROOT / "_build" / "html"), str(ROOT / "_build" / ".doctrees"), str(ROOT / "_build" / ".jupyter_cache"), str(ROOT / "_build" / "jupyter_execute")], check=True)
    start = time.perf_counter()
    subprocess.run(["make", "book"], cwd=ROOT, check=True, capture_output=True, env=env)
    t_cold = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run(["make", "book"], cwd=ROOT, check=True, capture_output=True, env=env)
    t_warm = time.perf_counter() - start
    return {
        "chapters": len(chapters),
        "per_chapter_seconds": per_chapter,
        "nbval_seconds": t_nbval,
        "kernel_floor_seconds": t_floor,
        "content_over_floor": t_nbval / t_floor,
        "cold_make_book_seconds": t_cold,
        "warm_make_book_seconds": t_warm,
    }


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "mpmath": mp.__version__,
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d"),
        "blas_threads": BLAS_THREADS,
        "timing": f"median and quartiles of {REPEAT} timed runs after {WARMUP} warm-up call (bench/harness.py)",
    }


PARTS = {"alpha_star_normal": bench_normal, "alpha_star_cosine": bench_cosine, "montecarlo": bench_montecarlo, "typical_optimum": bench_typical, "training": bench_training,
         "cold_start": bench_cold_start}


def report(results: dict) -> None:
    q = lambda m, unit="", scale=1.0: f"{m['median'] * scale:.3g}{unit} (IQR {m['q1'] * scale:.3g}-{m['q3'] * scale:.3g})"
    x = lambda r: f"{r['median']:.3g}x [{r['low']:.3g}, {r['high']:.3g}]"
    mach = results["machine"]
    print(f"\nmachine: {mach['cpu']}, {mach['cores']} cores, Python {mach['python']}; every time is the median of {REPEAT} runs after {WARMUP} warm-up call")
    n = results["alpha_star_normal"]
    for name, side in n["sides"].items():
        print(f"alpha_star_normal, {name:20s}: {q(side, ' us')} per value; worst rel. error {side['worst_rel_error_spread']:.1e} (spread), "
              f"{side['worst_rel_error_near_one']:.1e} (near n = 1)" + (f"; library faster by {x(n['speedup'][name])}" if name in n["speedup"] else ""))
    for name, sc in n["scaling"].items():
        print(f"alpha_star_normal, {name:20s}: log-log slope {sc['loglog_slope']:.2f}")
    c = results["alpha_star_cosine"]
    print(f"alpha_star_cosine: library {q(c['library_grid'], ' ms')} per point on the {c['grid_points']}-point grid; naive failures on the sample: {len(c['naive_failures'])}")
    for where in ("same_points_grid", "same_points_scattered"):
        r = c[where]
        print(f"alpha_star_cosine, {where}: {r['points']} points, naive {q(r['naive'], ' ms')}, library {q(r['library'], ' ms')} per point; "
              f"library faster by {x(r['speedup'])}; agree to {r['worst_rel_diff']:.1e}")
    m = results["montecarlo"]
    for name in ("library", "straightforward"):
        print(f"Monte Carlo n = 4096, {name}: {q(m[name]['seconds'], ' s')}, {m[name]['peak_mb']:.0f} MB peak")
    print(f"Monte Carlo: library faster by {x(m['speedup'])}")
    t = results.get("typical_optimum")
    if t:
        for name, side in t["sides"].items():
            print(f"typical_optimum_normal n = {t['n']}, {name:11s}: {q(side['seconds'], ' s')} per call")
        print(f"typical_optimum_normal: library faster by {x(t['speedup'])}; same value: {t['same_value']}; "
              f"standard error {t['se_library']:.4f} (sandwich) vs {t['se_batch_route']:.4f} (batches)")
    cs = results.get("cold_start")
    if cs:
        for name, side in cs["sides"].items():
            print(f"cold start, {name:26s}: {q(side['seconds'], ' s')}")
        print(f"cold start: {cs['command']} {'within' if cs['within_target'] else 'over'} its {cs['target_seconds']} s target")
    for kind, r in results["training"].items():
        for name, side in r["sides"].items():
            extra = f"; library faster by {x(r['speedup'][name])}" if name in r["speedup"] else ""
            print(f"training step, {kind:6s}, {name:16s}: {q(side['seconds'], ' s')}, slope in n {side['scaling']['loglog_slope']:.2f}, "
                  f"gradients within {side['max_rel_difference_from_einsum']:.0e}{extra}")
    b = results.get("book")
    if b:
        print(f"book: nbval {b['nbval_seconds']:.0f} s against a {b['kernel_floor_seconds']:.0f} s floor ({b['content_over_floor']:.1f}x); "
              f"cold make book {b['cold_make_book_seconds']:.0f} s, warm {b['warm_make_book_seconds']:.0f} s")


def write(results: dict, out_dir: Path) -> None:
    text = json.dumps(results, indent=2, default=float)
    (out_dir / "bench.json").write_text(text)
    (ROOT / "bench" / "results.json").write_text(text + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-book", action="store_true", help="keep the 'book' section of the existing bench/results.json")
    parser.add_argument("--only", nargs="+", choices=sorted(PARTS), help="re-run only these parts, keep the others from bench/results.json")
    args = parser.parse_args(argv)
    out_dir = ROOT / "_build" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    stored = ROOT / "bench" / "results.json"
    previous = json.loads(stored.read_text()) if stored.is_file() else {}
    results = {"machine": machine()}
    if args.only and "machine" in previous:
        # the parts kept were measured on the machine and day stored: keep that record, and
        # stamp each part re-run here with its own
        results["machine"] = previous["machine"]
    for name, fn in PARTS.items():
        if args.only and name not in args.only:
            if name in previous:
                results[name] = previous[name]
            continue
        print(f"running {name} ...", flush=True)
        results[name] = fn()
        if args.only:
            results[name]["machine"] = machine()
    if "book" in previous:
        # kept from an earlier run (--skip-book, --only): say which machine and day it was
        results["book"] = {**previous["book"], "machine": previous["book"].get("machine", previous["machine"])}
    # The book run executes the appendix, which reads bench/results.json: write
    # the new numbers first, so that it reads them and not the previous ones.
    write(results, out_dir)
    if not (args.skip_book or args.only):
        print("running book ...", flush=True)
        results["book"] = {**bench_book(), "machine": results["machine"]}
        write(results, out_dir)
    report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
