"""The byte-model sweep (``make sweep-lm``): its settings, its groups of runs trained
together, and the stored results in ``chapters/data/bytelm/`` (one gzipped JSON file per
group, written when the group ends; a file already there is skipped, so an interrupted
sweep resumes where it stopped).

Groups, in order: dot scores at ``alpha = 1`` over the rate grid and the seeds; the other
scales likewise (a scale whose best rate, by mean validation loss over the seeds, sits at
an edge of the grid gets a further rate beyond that edge, up to ``slides`` times); then
cosine scores at the best rate of ``alpha = 1``: fixed ``g``, and ``g`` learned raw and as
``g0 exp(u)`` from two starts. Last, once every rate is chosen, the confirmation groups
(``*_confirm``): every dot scale at its chosen rate and two fixed cosine scales, on fresh
seeds, without row statistics.
"""

from __future__ import annotations

import gzip
import json
import math
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .._paths import in_book
from ..training.runner import _cpu
from . import corpus
from .model import Config, _require
from .train import Members, Optim, evaluate, evaluation_windows, train_members

__all__ = ["DATA", "SWEEP", "CONFIRM_KEYS", "same_settings", "model_config", "optim", "rows", "group_plan", "run_group", "load", "main"]

DATA = in_book("chapters/data/bytelm")
LN2 = math.log(2.0)

SWEEP: dict[str, Any] = {
    "model": {"layers": 2, "width": 64, "heads": 2, "context": 128},
    "optim": {"steps": 200, "batch": 16, "weight_decay": 0.1, "clip": 1.0, "warmup": 0.1, "final": 0.1, "b1": 0.9, "b2": 0.95, "chunk": 25},
    # run in this order (the extremes and 2.5 first, then the cosine arm, then the rest)
    "alphas": [1.0, 0.25, 8.0, 2.5, 0.5, 2.0, 4.0],
    "alphas_before_cosine": 4,
    "rates": [0.005, 0.01, 0.02],
    "slides": 2,
    "seeds": [0, 1, 2],
    # fresh seeds for the confirmation: each dot scale at the best rate chosen on the seeds
    # above, and the cosine settings in "cosine_confirm" at the rate of alpha = 1, so the
    # paired comparisons are not made on the seeds that chose the rate
    "confirm_seeds": [3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    "cosine_confirm": {"cos_fixed": ["sqrt_d", "alpha_cos"]},
    # cosine scores (d_head = 32, n = 128): sqrt(d)/2, sqrt(d), the book's alpha*_cos(128, 32), twice that
    "cosine_fixed": ["half_sqrt_d", "sqrt_d", "alpha_cos", "two_alpha_cos"],
    "cosine_learned_starts": ["sqrt_d", "alpha_cos"],
    # validation windows (loss), rows (statistics), long windows (lengths beyond training)
    "eval_windows": 128,
    "row_windows": 16,
    "row_ns": [16, 32, 64, 128, 256],
    "long_windows": 16,
    "long_factor": 4,
    "rules": ["fixed", "qwen_logn", "constant_entropy", "constant_needle"],
    "checkpoints": [50, 100, 150, 200],
}


#: the settings only the confirmation groups read (the groups stored before they were added
#: do not record them)
CONFIRM_KEYS = ("confirm_seeds", "cosine_confirm")


def same_settings(group: dict[str, Any], settings: dict[str, Any] | None = None) -> bool:
    """Whether a stored group was run with ``settings`` (the sweep's by default): every
    setting equal, the confirmation's settings compared only for a group that records them."""
    s = SWEEP if settings is None else settings
    stored = group["settings"]
    keys = (set(s) | set(stored)) - {k for k in CONFIRM_KEYS if k not in stored}
    return all(stored.get(k) == s.get(k) for k in keys)


def model_config(kind: str = "dot", scale_mode: str = "fixed", settings: dict[str, Any] | None = None) -> Config:
    s = SWEEP if settings is None else settings
    return Config(**s["model"], kind=kind, scale_mode=scale_mode)


def optim(settings: dict[str, Any] | None = None) -> Optim:
    s = SWEEP if settings is None else settings
    return Optim(**s["optim"])


def named_scale(name: str, settings: dict[str, Any] | None = None) -> float:
    """A cosine scale by name, for the sweep's d_head and context."""
    from ..optimum import alpha_star_cosine

    cfg = model_config("cosine", settings=settings)
    root = math.sqrt(cfg.d_head)
    star = float(alpha_star_cosine(cfg.context, cfg.d_head))
    table = {"half_sqrt_d": root / 2, "sqrt_d": root, "alpha_cos": star, "two_alpha_cos": 2 * star}
    _require(name in table, "name", f"must be one of {sorted(table)}, got {name!r}")
    return table[name]


# --- row statistics (question 3 and 4) -------------------------------------------------

def rows(logits: np.ndarray, ns: list[int]) -> dict[str, dict[str, list]]:
    """Statistics of causal rows with ``n`` keys (query position ``n - 1``) from attention
    logits (L, B, H, T, T): per n, arrays (L, H, B) of the logits' standard deviation over
    the keys, sum p^2, entropy / ln n, excess kurtosis and the gap between the two largest
    logits (in units of the row's standard deviation)."""
    out: dict[str, dict[str, list]] = {}
    T = logits.shape[-1]
    for n in ns:
        if n > T:
            continue
        z = np.asarray(logits[..., n - 1, :n], dtype=np.float64).transpose(0, 2, 1, 3)  # (L, H, B, n)
        sd = z.std(-1)
        c = z - z.mean(-1, keepdims=True)
        kurt = (c ** 4).mean(-1) / np.maximum(sd ** 4, 1e-300) - 3.0
        top = np.sort(z, axis=-1)
        gap = (top[..., -1] - top[..., -2]) / np.maximum(sd, 1e-300)
        p = np.exp(z - z.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        s2 = (p ** 2).sum(-1)
        ent = -(p * np.log(np.maximum(p, 1e-300))).sum(-1) / math.log(n)
        out[str(n)] = {k: np.round(a, 5).tolist() for k, a in (("sd", sd), ("sum_p2", s2), ("entropy", ent), ("kurtosis", kurt), ("gap", gap))}
    return out


@lru_cache(maxsize=4)
def rule_factors(rule: str, n0: int, length: int) -> tuple[float, ...]:
    """Per query position (n = position + 1 keys) the rule's factor relative to training at
    n0 keys: 1 for n <= n0 (the rows the model was trained on), the rule's multiplier of
    alpha0 for longer rows."""
    from ..lengthrules import rule_alpha

    n = np.arange(1, length + 1, dtype=np.float64)
    longer = n[n > n0]
    f = np.ones(length)
    if longer.size:
        grid = np.unique(np.round(np.geomspace(n0, longer.max(), 40)))
        vals = np.asarray(rule_alpha(rule, grid, n_train=n0), dtype=np.float64)
        f[n > n0] = np.exp(np.interp(np.log(longer), np.log(grid), np.log(vals)))
    return tuple(float(x) for x in f)


# --- the groups ------------------------------------------------------------------------

def _ghz() -> float:
    """The clock the kernel reports for the first CPU, in GHz (nan if unknown)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return round(float(line.split(":", 1)[1]) / 1000, 3)
    except (OSError, ValueError):
        pass
    return float("nan")


@lru_cache(maxsize=8)
def _logits_fn(cfg: Config) -> Any:
    import jax

    from .model import attention_logits

    return jax.jit(jax.vmap(lambda p, a, w: attention_logits(p, w, cfg, a), in_axes=(0, 0, None)))


def _group_file(name: str, data: Path) -> Path:
    return data / f"{name}.json.gz"


def load_group(name: str, data: Path = DATA) -> dict[str, Any] | None:
    path = _group_file(name, data)
    if not path.exists():
        return None
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        result: dict[str, Any] = json.load(fh)
    return result


def load(data: Path = DATA) -> dict[str, dict[str, Any]]:
    """Every stored group, by name."""
    out = {}
    for path in sorted(data.glob("*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            g = json.load(fh)
        out[g["name"]] = g
    return out


def _mean_by_rate(groups: list[dict[str, Any]]) -> dict[float, float]:
    acc: dict[float, list[float]] = {}
    for g in groups:
        for m in g["members"]:
            acc.setdefault(m["rate"], []).append(m["val_bpb"])
    return {r: float(np.mean(v)) for r, v in acc.items()}


def best_rate(groups: list[dict[str, Any]]) -> float:
    means = _mean_by_rate(groups)
    return min(means, key=lambda r: means[r])


def dot_groups(alpha: float, data: Path = DATA) -> list[dict[str, Any]]:
    """The stored groups of one dot-score scale: its grid and its slides."""
    out = []
    for name in [f"dot_a{alpha:g}"] + [f"dot_a{alpha:g}_slide{i}" for i in range(1, 10)]:
        g = load_group(name, data)
        if g is not None:
            out.append(g)
    return out


def _slide(alpha: float, settings: dict[str, Any], data: Path) -> tuple[str, list[float]] | None:
    """The next slide of a scale whose best rate sits at an edge, or None."""
    groups = dot_groups(alpha, data)
    if not groups:
        return None
    means = _mean_by_rate(groups)
    rates = sorted(means)
    best = min(means, key=lambda r: means[r])
    slides = len(groups) - 1
    if slides >= settings["slides"] or rates[0] < best < rates[-1]:
        return None
    new = best / 2 if best == rates[0] else best * 2
    return f"dot_a{alpha:g}_slide{slides + 1}", [new]


def group_plan(settings: dict[str, Any] | None = None, data: Path = DATA) -> list[dict[str, Any]]:
    """The groups still to run given what is stored, in order (resolved one at a time: a
    slide or the cosine rate depends on stored results)."""
    s = SWEEP if settings is None else settings
    plan: list[dict[str, Any]] = []

    def dot(alphas: list[float]) -> None:
        for alpha in alphas:
            if load_group(f"dot_a{alpha:g}", data) is None:
                plan.append({"name": f"dot_a{alpha:g}", "kind": "dot", "mode": "fixed", "rates": s["rates"], "scales": [alpha], "labels": [f"{alpha:g}"]})

    k = s["alphas_before_cosine"]
    dot(s["alphas"][:k])
    if load_group("dot_a1", data) is not None:
        rate = best_rate(dot_groups(1.0, data))
        for name, mode, labels in (("cos_fixed", "fixed", s["cosine_fixed"]), ("cos_raw", "raw", s["cosine_learned_starts"]),
                                   ("cos_exp", "exp", s["cosine_learned_starts"])):
            if load_group(name, data) is None:
                plan.append({"name": name, "kind": "cosine", "mode": mode, "rates": [rate], "scales": [named_scale(x, s) for x in labels],
                             "labels": list(labels)})
    dot(s["alphas"][k:])
    for alpha in s["alphas"]:
        if load_group(f"dot_a{alpha:g}", data) is not None:
            slide = _slide(alpha, s, data)
            if slide is not None:
                plan.append({"name": slide[0], "kind": "dot", "mode": "fixed", "rates": slide[1], "scales": [alpha], "labels": [f"{alpha:g}"]})
    if not plan:
        plan.extend(_confirmations(s, data))
    return plan


def _confirmations(s: dict[str, Any], data: Path) -> list[dict[str, Any]]:
    """The confirmation groups not yet stored (called once every rate is chosen)."""
    out: list[dict[str, Any]] = []
    common = {"seeds": list(s["confirm_seeds"]), "rows": False}
    for alpha in s["alphas"]:
        name = f"dot_a{alpha:g}_confirm"
        if load_group(name, data) is None:
            out.append({"name": name, "kind": "dot", "mode": "fixed", "rates": [best_rate(dot_groups(alpha, data))], "scales": [alpha],
                        "labels": [f"{alpha:g}"], **common})
    rate = best_rate(dot_groups(1.0, data))
    for base, labels in s["cosine_confirm"].items():
        name = f"{base}_confirm"
        if load_group(name, data) is None:
            mode = {"cos_fixed": "fixed", "cos_raw": "raw", "cos_exp": "exp"}[base]
            out.append({"name": name, "kind": "cosine", "mode": mode, "rates": [rate], "scales": [named_scale(x, s) for x in labels],
                        "labels": list(labels), **common})
    return out


def _learned_scales(params: Any, cfg: Config, scales: np.ndarray) -> list[list[list[float]]] | None:
    """Per member, per layer, per head: the cosine scale g the parameters hold."""
    if cfg.scale_mode == "fixed":
        return None
    out = []
    for b in params["blocks"]:
        if cfg.scale_mode == "raw":
            out.append(np.asarray(b["g"]))
        else:
            out.append(scales[:, None] * np.exp(np.asarray(b["u"])))
    return np.round(np.stack(out, axis=1), 5).tolist()  # (M, L, H)


def run_group(spec: dict[str, Any], settings: dict[str, Any] | None = None, data: Path | None = DATA, *, steps: int | None = None,
              with_rows: bool = True) -> dict[str, Any]:
    """Train one group (every rate x scale x seed as members of one compiled step),
    evaluate it, and store it under ``data`` (not stored when ``data`` is None).
    ``steps`` overrides the run length (the short test)."""


    import jax

    s = SWEEP if settings is None else settings
    cfg = model_config(spec["kind"], spec["mode"], s)
    opt = optim(s)
    if steps is not None:
        opt = Optim(**{**opt.as_dict(), "steps": steps, "chunk": min(opt.chunk, steps)})
    seeds = spec.get("seeds", s["seeds"])
    triples = [(r, sc, lab, seed) for r in spec["rates"] for sc, lab in zip(spec["scales"], spec["labels"]) for seed in seeds]
    members = Members(seeds=tuple(t[3] for t in triples), rates=tuple(float(t[0]) for t in triples), scales=tuple(float(t[1]) for t in triples))
    scales = np.asarray(members.scales, dtype=np.float32)
    train, valid = corpus.split()
    row_w = evaluation_windows(valid, s["row_windows"], cfg.context + 1)
    checkpoints = tuple(c for c in s["checkpoints"] if c <= opt.steps)
    logits_fn = _logits_fn(cfg)
    trace: dict[int, Any] = {}
    init_rows: list[Any] = []

    def on_checkpoint(step: int, params: Any) -> None:
        trace[step] = _learned_scales(params, cfg, scales)
        if step == 0 and with_rows:
            lg = np.asarray(logits_fn(params, scales, row_w[:, :-1]))
            init_rows.extend(rows(lg[i], s["row_ns"]) for i in range(len(triples)))

    t0 = time.time()
    params, losses = train_members(cfg, opt, members, train, checkpoints=checkpoints, on_checkpoint=on_checkpoint)
    train_seconds = time.time() - t0
    ev = evaluate(cfg, params, scales, evaluation_windows(valid, s["eval_windows"], cfg.context + 1))
    result: dict[str, Any] = {
        "name": spec["name"], "kind": spec["kind"], "mode": spec["mode"], "settings": s, "steps": opt.steps,
        "train_seconds": round(train_seconds, 2), "jax": jax.__version__, "cpu": _cpu(),
        "tokens_per_second": round(len(triples) * opt.steps * opt.batch * cfg.context / train_seconds, 1),
        "members": [],
    }
    final_rows: list[Any] = []
    if with_rows:
        lg = np.asarray(logits_fn(params, scales, row_w[:, :-1]))
        final_rows = [rows(lg[i], s["row_ns"]) for i in range(len(triples))]
    for i, (rate, scale, label, seed) in enumerate(triples):
        m = {"rate": rate, "scale": round(scale, 6), "label": label, "seed": seed,
             "val_nats": round(float(ev[i].mean()), 6), "val_bpb": round(float(ev[i].mean()) / LN2, 6),
             "train_curve": np.round(losses[i].reshape(-1, 5).mean(1) / LN2, 5).tolist()}
        if trace.get(0) is not None:
            m["learned_scale"] = {str(k): tr[i] for k, tr in trace.items() if tr is not None}
        if with_rows:
            m["rows_init"], m["rows_final"] = init_rows[i], final_rows[i]
        result["members"].append(m)
    if with_rows:
        _longer(result, cfg, params, scales, valid, s)
    if data is not None:
        data.mkdir(parents=True, exist_ok=True)
        tmp = _group_file(spec["name"], data).with_suffix(".tmp")
        with gzip.open(tmp, "wt", encoding="utf-8") as fh:
            json.dump(result, fh, separators=(",", ":"))
        tmp.replace(_group_file(spec["name"], data))
    return result


def _longer(result: dict[str, Any], cfg: Config, params: Any, scales: np.ndarray, valid: np.ndarray, s: dict[str, Any]) -> None:
    """Loss per byte at positions beyond the training context under each length rule, and
    the rows of 256 keys, for the members at the group's best rate (question 6)."""
    import jax


    members = result["members"]
    rate = best_rate([result])
    idx = [i for i, m in enumerate(members) if m["rate"] == rate]
    sub = jax.tree_util.tree_map(lambda a: a[np.asarray(idx)], params)
    length = cfg.context * s["long_factor"]
    w = evaluation_windows(valid, s["long_windows"], length + 1)
    for rule in s["rules"]:
        f = np.asarray(rule_factors(rule, cfg.context, length))
        per_pos = evaluate(cfg, sub, scales[idx], w, factor=f, block=8) / LN2
        for j, i in enumerate(idx):
            bins = [(0, cfg.context), (cfg.context, 2 * cfg.context), (2 * cfg.context, length)]
            members[i].setdefault("longer", {})[rule] = [round(float(per_pos[j, a:b].mean()), 5) for a, b in bins]
    ecfg = Config(**{**cfg.as_dict(), "context": 2 * cfg.context})
    w2 = evaluation_windows(valid, s["row_windows"], 2 * cfg.context)
    lg = np.asarray(_logits_fn(ecfg)(sub, scales[idx], w2))
    for j, i in enumerate(idx):
        members[i]["rows_256"] = rows(lg[j], [2 * cfg.context])


#: one XLA thread per worker: on two busy cores two single-threaded workers did about
#: twice the work of one process with XLA's thread pool (measured 24,000 tokens per
#: CPU-second single-threaded), which spends its time handing work between threads
SINGLE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def _claim(name: str, data: Path) -> bool:
    """Claim a group for this process (a file created exclusively); a claim whose process
    is gone is taken over."""
    import os

    path = data / f"{name}.claim"
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                pid = int(path.read_text() or "0")
                os.kill(pid, 0)
                return False
            except (ValueError, ProcessLookupError, FileNotFoundError):
                path.unlink(missing_ok=True)
                continue
        with os.fdopen(fd, "w") as fh:
            fh.write(str(os.getpid()))
        return True
    return False


def _work(data: Path) -> None:
    """Run groups until none is left; wait while every group left is held by another
    worker (its result may add groups: the cosine arm, a slide)."""
    while True:
        plan = group_plan(data=data)
        if not plan:
            return
        spec = next((p for p in plan if _claim(p["name"], data)), None)
        if spec is None:
            time.sleep(10)
            continue
        t0 = time.time()
        try:
            r = run_group(spec, data=data, with_rows=spec.get("rows", True))
        finally:
            (data / f"{spec['name']}.claim").unlink(missing_ok=True)
        print(f"{spec['name']}: {len(r['members'])} runs in {time.time() - t0:.0f} s ({r['tokens_per_second']:.0f} tokens/s in training)", flush=True)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import os
    import subprocess
    import sys

    ap = argparse.ArgumentParser(prog="python -m attnscale.bytelm", description="Run (or resume) the byte-model sweep; results go to chapters/data/bytelm/.")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--workers", type=int, default=2, help="worker processes, one XLA thread each (default 2)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dry-run", action="store_true", help="print the next groups and stop")
    ap.add_argument("--throughput", action="store_true", help="time the training step on one core and write throughput.json")
    args = ap.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    if args.throughput:
        if SINGLE_THREAD not in os.environ.get("XLA_FLAGS", ""):
            env = {**os.environ, "XLA_FLAGS": (os.environ.get("XLA_FLAGS", "") + " " + SINGLE_THREAD).strip(), "JAX_PLATFORMS": "cpu"}
            return subprocess.run([sys.executable, "-m", "attnscale.bytelm", "--throughput", "--data", str(args.data)], env=env).returncode
        result = measure_throughput()
        result["ghz"] = _ghz()
        timing = args.data / "sweep_time.json"
        if timing.exists():
            result["sweep_wall_seconds"] = json.loads(timing.read_text())["wall_seconds"]
        (args.data / "throughput.json").write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result, indent=1))
        return 0
    if args.dry_run:
        for p in group_plan(data=args.data):
            print(p)
        return 0
    if args.worker:
        _work(args.data)
        return 0
    t_all = time.time()
    env = {**os.environ, "XLA_FLAGS": (os.environ.get("XLA_FLAGS", "") + " " + SINGLE_THREAD).strip(), "JAX_PLATFORMS": "cpu"}
    procs = []
    for i in range(max(1, args.workers)):
        procs.append(subprocess.Popen([sys.executable, "-m", "attnscale.bytelm", "--worker", "--data", str(args.data)], env=env))
    codes = [p.wait() for p in procs]
    left = group_plan(data=args.data)
    # the sweep's wall time is the sum over the invocations that built it (it resumes)
    timing = args.data / "sweep_time.json"
    before = json.loads(timing.read_text())["wall_seconds"] if timing.exists() else 0.0
    timing.write_text(json.dumps({"wall_seconds": round(before + time.time() - t_all, 1), "complete": not left}) + "\n")
    print(f"sweep {'complete' if not left else 'incomplete'}; wall time of this invocation {time.time() - t_all:.0f} s", flush=True)
    return max(codes)


def measure_throughput(members: int = 3, repeats: int = 3, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The compiled training step of the sweep's dot-score model with ``members`` runs, timed
    on this machine: XLA's count of floating-point operations per step (its cost analysis
    counts the loop body of a chunk, one step, once), the process's CPU
    time and the wall time per step (best of ``repeats`` chunks), and the tokens per
    CPU-second. Run it single-threaded (``SINGLE_THREAD`` in ``XLA_FLAGS``) to time one core."""
    import os
    import resource

    import jax
    import jax.numpy as jnp

    from .train import _init, _make_chunk

    s = SWEEP if settings is None else settings
    cfg, opt = model_config("dot", "fixed", s), optim(s)
    mem = Members(seeds=tuple(range(members)), rates=(0.01,) * members, scales=(1.0,) * members)
    chunk = _make_chunk(cfg, opt)
    params, state, keys = _init(cfg, opt, mem)
    train = jnp.asarray(corpus.split()[0])
    lrs, scales = jnp.full(members, 0.01, jnp.float32), jnp.ones(members, jnp.float32)
    compiled = chunk.lower(params, state, jnp.int32(0), train, keys, lrs, scales).compile()
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    # XLA counts the body of the chunk's loop (one step) once
    flops_step = float(cost.get("flops", float("nan")))
    flops_chunk = flops_step * opt.chunk
    out = compiled(params, state, jnp.int32(0), train, keys, lrs, scales)
    jax.block_until_ready(out)
    best_cpu, best_wall = math.inf, math.inf
    for i in range(repeats):
        r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        out = compiled(out[0], out[1], jnp.int32(opt.chunk * (i + 1)), train, keys, lrs, scales)
        jax.block_until_ready(out)
        r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        best_cpu = min(best_cpu, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime))
        best_wall = min(best_wall, w1 - w0)
    tokens = opt.chunk * opt.batch * cfg.context * members
    return {"members": members, "tokens_per_chunk": tokens, "flops_per_token": flops_chunk / tokens,
            "cpu_seconds": best_cpu, "wall_seconds": best_wall, "tokens_per_cpu_second": tokens / best_cpu,
            "tokens_per_second_wall": tokens / best_wall, "gflops_per_cpu_second": flops_chunk / best_cpu / 1e9,
            "xla_flags": os.environ.get("XLA_FLAGS", ""), "cpu": _cpu(), "jax": jax.__version__}
