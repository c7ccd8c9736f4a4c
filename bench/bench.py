"""Benchmarks of the book's numerics and of its whole run (``make bench``).

Each measurement is a ratio taken in one run, against what a reader would
otherwise write. Results are printed as a table and written to
``_build/bench/bench.json`` and ``bench/results.json`` (the latter is committed
and shown by the appendix "Reproducibility and performance"). Nothing in the
test suite asserts a time.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import mpmath as mp
import numpy as np
import scipy
from scipy.optimize import brentq, minimize_scalar
from scipy.special import ive

from attnscale.montecarlo import collision_and_gradient
from attnscale.optimum import alpha_star_cosine, alpha_star_normal

ROOT = Path(__file__).resolve().parents[1]


def timed(fn, *args, repeat: int = 3):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - start)
    return best, out


def ref_alpha_normal(n: float) -> mp.mpf:
    with mp.workdps(50):
        n = mp.mpf(n)
        x = mp.findroot(lambda t: t + mp.log1p(2 * t) - mp.log(n), mp.lambertw(n * mp.sqrt(mp.e) / 2).real - mp.mpf(1) / 2)
        return mp.sqrt(x)


def bench_normal() -> dict:
    rng = np.random.default_rng(0)
    n = np.exp(rng.uniform(np.log(2.0), np.log(1e300), 1_000_000))
    t_lib, _ = timed(alpha_star_normal, n)
    sub = n[:2000]

    def loop_scipy(values):
        return np.array([minimize_scalar(lambda a, m=m: -a * (1 - np.exp(a * a - np.log(m))), bounds=(1e-9, np.sqrt(np.log(m)) + 1), method="bounded", options={"xatol": 1e-12}).x for m in values])

    t_scipy, _ = timed(loop_scipy, sub, repeat=1)
    sub_mp = n[:300]

    def loop_mpmath(values):
        return np.array([float(mp.sqrt(mp.lambertw(mp.mpf(m) * mp.sqrt(mp.e) / 2).real - mp.mpf(1) / 2)) for m in values])

    t_mp, _ = timed(loop_mpmath, sub_mp, repeat=1)
    check = n[:200]
    ref = np.array([float(ref_alpha_normal(m)) for m in check])
    err = lambda got: float(np.max(np.abs(got / ref - 1)))
    per_lib = t_lib / n.size
    return {
        "values": int(n.size),
        "library_seconds": t_lib,
        "per_value_library_us": per_lib * 1e6,
        "per_value_scipy_loop_us": t_scipy / sub.size * 1e6,
        "per_value_mpmath_loop_us": t_mp / sub_mp.size * 1e6,
        "speedup_vs_scipy_loop": (t_scipy / sub.size) / per_lib,
        "speedup_vs_mpmath_loop": (t_mp / sub_mp.size) / per_lib,
        "worst_rel_error_library": err(alpha_star_normal(check)),
        "worst_rel_error_scipy_loop": err(loop_scipy(check)),
        "worst_rel_error_mpmath_loop": err(loop_mpmath(check)),
    }


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


def bench_cosine() -> dict:
    ns = np.logspace(np.log10(40), np.log10(20000), 500)
    ds = np.array([32.0, 64.0, 128.0, 256.0, 512.0])
    t_grid, grid = timed(alpha_star_cosine, ns[:, None], ds, repeat=1)
    t_big, _ = timed(alpha_star_cosine, ns[:100, None], np.array([1024.0, 2048.0, 4096.0]), repeat=1)
    pts = [(float(n), float(d)) for n in ns[::100] for d in ds]
    start = time.perf_counter()
    naive, failures = [], []
    for n, d in pts:
        try:
            with np.errstate(all="ignore"):
                naive.append(naive_alpha_cosine(n, d))
        except Exception as exc:  # the point of the comparison: where the naive route breaks
            naive.append(np.nan)
            failures.append(f"n={n:.0f}, d={d:.0f}: {type(exc).__name__}")
    t_naive = (time.perf_counter() - start) / len(pts)
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
    lib_pts = np.array([alpha_star_cosine(n, d) for n, d in pts])
    ok = np.isfinite(naive)
    return {
        "grid_points": int(grid.size),
        "grid_seconds": t_grid,
        "per_point_library_ms": t_grid / grid.size * 1e3,
        "large_d_points": 300,
        "large_d_seconds": t_big,
        "per_point_naive_ms": t_naive * 1e3,
        "speedup_vs_naive": t_naive / (t_grid / grid.size),
        "naive_worst_rel_diff_where_it_works": float(np.nanmax(np.abs(np.array(naive)[ok] / lib_pts[ok] - 1))) if ok.any() else None,
        "naive_failures": failures,
        "large_cases": large,
        "ive(2047, 300)": ive_underflow,
    }


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
    results = {}
    for name, fn in (("library", lambda: collision_and_gradient(rows, alphas)), ("straightforward", lambda: straightforward_mc(rows, alphas))):
        tracemalloc.start()
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        results[name] = {"rows_per_second": rows.shape[0] * alphas.size / elapsed, "peak_mb": peak / 2**20}
    return {"n": 4096, "rows": 2000, "scales": int(alphas.size), **results}


def straightforward_step(params, data, alpha, kind):
    """The training step as a reader would write it: every key formed, one
    einsum per product (the first version of attnscale.training)."""
    from attnscale.softmax import softmax, softmax_vjp

    Wq, Wk, K, V, x, t = params["Wq"], params["Wk"], data["K"], data["V"], data["x"], data["target"]
    seeds, batch, n, d = K.shape
    c = V.shape[-1]
    a = np.asarray(alpha, dtype=float)[:, None]
    q = np.einsum("smij,sbj->smbi", Wq, x)
    k = np.einsum("smij,sbnj->smbni", Wk, K)
    if kind == "dot":
        s = np.einsum("smbi,smbni->smbn", q, k) / np.sqrt(d)
    else:
        qn, kn = np.linalg.norm(q, axis=-1, keepdims=True), np.linalg.norm(k, axis=-1, keepdims=True)
        qh, kh = q / qn, k / kn
        s = np.einsum("smbi,smbni->smbn", qh, kh)
    p = softmax(s, a[..., None])
    diff = np.einsum("smbn,sbnc->smbc", p, V) - t[:, None]
    g_s = softmax_vjp(p, np.einsum("smbc,sbnc->smbn", 2 * diff / (batch * c), V), a)
    if kind == "dot":
        g_q = np.einsum("smbn,smbni->smbi", g_s, k) / np.sqrt(d)
        g_k = g_s[..., None] * q[:, :, :, None, :] / np.sqrt(d)
    else:
        g_qh = np.einsum("smbn,smbni->smbi", g_s, kh)
        g_q = (g_qh - np.sum(g_qh * qh, axis=-1, keepdims=True) * qh) / qn
        g_kh = g_s[..., None] * qh[:, :, :, None, :]
        g_k = (g_kh - np.sum(g_kh * kh, axis=-1, keepdims=True) * kh) / kn
    return {"Wq": np.einsum("smbi,sbj->smij", g_q, x), "Wk": np.einsum("smbni,sbnj->smij", g_k, K)}


def bench_training() -> dict:
    """One gradient step of the sweep's largest cells (n = 256, d = 64, five
    seeds, every scale and learning rate of Adam as models)."""
    from attnscale import training as tr

    out = {}
    for kind in tr.KINDS:
        _, alphas = tr.sweep_scales(256, 64, kind)
        alpha = np.repeat(alphas, len(tr.SWEEP["lrs"]["adam"]))
        rng = np.random.default_rng(0)
        params = tr.init_params(rng, 5, alpha.size, 64)
        params = {key: w + 0.05 * rng.standard_normal(w.shape) for key, w in params.items()}
        data = tr.sample_batch(rng, 5, 32, 256, 64)
        lib_s, (_, lib, _) = timed(tr.loss_and_grads, params, data, alpha, kind)
        ref_s, ref = timed(straightforward_step, params, data, alpha, kind, repeat=1)
        err = max(float(np.max(np.abs(lib[key] - ref[key])) / np.max(np.abs(ref[key]))) for key in lib)
        out[kind] = {"models": int(5 * alpha.size), "library_seconds": lib_s, "straightforward_seconds": ref_s,
                     "speedup": ref_s / lib_s, "max_rel_difference": err}
    return out


def bench_book() -> dict:
    chapters = sorted((ROOT / "chapters").glob("*.ipynb"))
    sys.path.insert(0, str(ROOT / "tools"))
    from notebooks import execute_notebook

    per_chapter = {}
    for nb in chapters:
        start = time.perf_counter()
        execute_notebook(nb, write=False)
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
    }


def main() -> int:
    out_dir = ROOT / "_build" / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    results = {"machine": machine()}
    # The book run below executes the appendix against the previous bench/results.json,
    # so a new benchmark must first be added to that file (or the appendix made to wait for it).
    for name, fn in (("alpha_star_normal", bench_normal), ("alpha_star_cosine", bench_cosine), ("montecarlo", bench_montecarlo), ("training", bench_training), ("book", bench_book)):
        print(f"running {name} ...", flush=True)
        results[name] = fn()
    text = json.dumps(results, indent=2, default=float)
    (out_dir / "bench.json").write_text(text)
    (ROOT / "bench" / "results.json").write_text(text + "\n")
    n, c, m, b = results["alpha_star_normal"], results["alpha_star_cosine"], results["montecarlo"], results["book"]
    print(f"\nmachine: {results['machine']['cpu']}, {results['machine']['cores']} cores, Python {results['machine']['python']}")
    print(f"alpha_star_normal: {n['values']} values in {n['library_seconds']:.3f} s; {n['speedup_vs_scipy_loop']:.0f}x the scipy loop, "
          f"{n['speedup_vs_mpmath_loop']:.0f}x the mpmath loop; worst relative error {n['worst_rel_error_library']:.1e} (scipy {n['worst_rel_error_scipy_loop']:.1e})")
    print(f"alpha_star_cosine: {c['grid_points']} points in {c['grid_seconds']:.2f} s; {c['speedup_vs_naive']:.0f}x a per-point scipy solver; naive failures: {len(c['naive_failures'])}")
    print(f"Monte Carlo n = 4096: library {m['library']['rows_per_second']:.0f} rows/s, {m['library']['peak_mb']:.0f} MB peak; "
          f"straightforward {m['straightforward']['rows_per_second']:.0f} rows/s, {m['straightforward']['peak_mb']:.0f} MB")
    for kind, r in results["training"].items():
        print(f"training step, {kind} scores, {r['models']} models at n = 256, d = 64: {r['library_seconds']:.2f} s against "
              f"{r['straightforward_seconds']:.2f} s straightforward ({r['speedup']:.1f}x), gradients agree to {r['max_rel_difference']:.0e}")
    print(f"book: nbval {b['nbval_seconds']:.0f} s against a {b['kernel_floor_seconds']:.0f} s floor ({b['content_over_floor']:.1f}x); "
          f"cold make book {b['cold_make_book_seconds']:.0f} s, warm {b['warm_make_book_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
