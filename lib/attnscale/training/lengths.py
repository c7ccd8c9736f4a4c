"""Length generalisation, the arm that ties Part III to Part IV: train at ``n``
keys, evaluate at ``factor * n`` with the scale a length rule gives there.

Three models per seed are trained at ``n`` (Adam, each at its best rate of the
sweep's grid, from the dot cell's seed, so they share initial weights and
batches with that cell): at the fixed scale 1, at Su's absolute rule
``log_512 n`` and at ``ln n`` (Chiang and Cholak's). Each is then evaluated on
fresh rows of both lengths. The model trained at 1 is also evaluated at the
long length under the relative rules of Part III, which set the scale from the
ratio of lengths alone: the logarithmic ratio ``ln(factor n) / ln n`` (Su's
``log_n0``, Qwen's ``logn``, and Scalable-Softmax's and Chiang and Cholak's rules
relative to their training length, which all coincide here), YaRN's
``(0.1 ln factor + 1)^2`` and the mean-field entropy-invariant
``sqrt(1 + 2 ln factor)``; and every model at the scale that would have been best
at the long length (the smallest held-out loss over a grid, chosen per seed on
a separate set of rows from the one that reports it).

``python -m attnscale.training.lengths --out FILE`` runs every (n, d) of the
sweep and stores the results (``make sweep-lengths``); :func:`load_lengths` reads them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from .. import _validate as v
from .. import lengthrules
from .loop import _evaluate, train
from .model import sample_batch
from .stats import best_lr_index
from .sweep import SWEEP, _jsonable, _read_results

__all__ = ["TRAINED", "RELATIVE", "length_transfer", "load_lengths", "main"]

#: the scales the three models are trained at, as functions of the training length
#: (Part III's rules from :mod:`attnscale.lengthrules`)
TRAINED = {"1": lambda n: float(lengthrules.fixed(n)), "log512 n": lambda n: float(lengthrules.log512(n)),
           "ln n": lambda n: float(lengthrules.chiang_cholak(n))}
#: the relative rules applied to the model trained at 1: the scale at ``r`` times the training length ``n``
RELATIVE = {"fixed": lambda n, r: float(lengthrules.fixed(r * n)), "log ratio": lambda n, r: float(lengthrules.log512(r * n, base=n)),
            "YaRN": lambda n, r: float(lengthrules.yarn(r * n, n_train=n)),
            "mean-field invariant": lambda n, r: math.sqrt(1.0 + 2.0 * math.log(r))}  # ch. 8's sqrt(alpha_0^2 + 2 ln(n / n_0)), alpha_0 = 1


def _held_out(rng: np.random.Generator, seeds: int, size: int, n: int, d: int, cfg: dict) -> list[dict]:
    return [sample_batch(rng, seeds, min(cfg["batch"], size - i), n, d, cfg["c"], cfg["noise"]) for i in range(0, size, cfg["batch"])]


def _at_scales(weights: dict, model: int, scales: NDArray, rows: list[dict]) -> tuple[NDArray, NDArray]:
    """Held-out loss and accuracy (seeds, scales) of one trained model evaluated at several scales."""
    copies = {key: np.repeat(w[:, model : model + 1], scales.size, axis=1) for key, w in weights.items() if key in ("Wq", "Wk")}
    loss, accuracy, _ = _evaluate(copies, rows, scales, "dot")
    return loss, accuracy


def length_transfer(n: int, d: int, *, factor: int = 4, seed: int | None = None, eval_size: int = 256,
                    grid: int = 61, **overrides: Any) -> dict[str, Any]:
    """Train the three models of the module's description at length ``n``, width
    ``d`` (the sweep's settings, any overridable) and evaluate them at ``n`` and at
    ``factor * n`` on fresh held-out rows.

    Returns ``trained`` (labels), ``alphas`` (their training scales), ``best_lr``
    (one index per model into ``lrs``), ``final_loss`` (seeds,) per model from the
    training run's own held-out set (the sweep's ``final_loss``), and per model
    ``short`` and ``long``: dicts of ``loss`` and ``accuracy`` (seeds,) under each rule
    (each model's own absolute rule and its training scale kept, ``fixed``; for the model
    at 1 the relative rules, of which ``fixed`` is one);
    ``oracle``: per model, at each length (``short``, ``long``), per seed, the best
    ``scale`` on a grid of ``grid`` values from 0.05 to 20 (chosen on one held-out
    set) and its ``loss`` on another (the set that reports the rules), and ``grid`` itself."""
    n = v.integer_at_least(n, "n", 2)
    d = v.integer_at_least(d, "d", 2)
    factor = v.integer_at_least(factor, "factor", 2)
    eval_size = v.integer_at_least(eval_size, "eval_size", 1)
    grid = v.integer_at_least(grid, "grid", 2)
    cfg = {**SWEEP, **overrides}
    if seed is None:
        seed = 1000 * n + d  # the dot cell's seed in the sweep
    seed = v.integer_at_least(seed, "seed", 0)
    labels = list(TRAINED)
    alphas = [TRAINED[label](n) for label in labels]
    lrs = cfg["lrs"]["adam"] if isinstance(cfg["lrs"], dict) else cfg["lrs"]
    out = train(seed, n=n, d=d, kind="dot", alphas=alphas, lrs=lrs, seeds=cfg["seeds"], steps=cfg["steps"], batch=cfg["batch"],
                noise=cfg["noise"], c=cfg["c"], optimizer="adam", eval_every=cfg["eval_every"], eval_size=cfg["eval_size"],
                return_params=True)
    best = best_lr_index(out["loss"])
    models = [a * len(lrs) + int(best[a]) for a in range(len(labels))]
    rng = np.random.default_rng([seed, 2])
    short_rows = _held_out(rng, cfg["seeds"], eval_size, n, d, cfg)
    long_rows = _held_out(rng, cfg["seeds"], eval_size, factor * n, d, cfg)
    choose_rows = _held_out(rng, cfg["seeds"], eval_size, factor * n, d, cfg)
    choose_short = _held_out(rng, cfg["seeds"], eval_size, n, d, cfg)
    candidates = np.geomspace(0.05, 20.0, grid)
    weights = cast(dict, out["params"])
    short: dict[str, Any] = {}
    long: dict[str, Any] = {}
    oracle: dict[str, Any] = {}
    for a, label in enumerate(labels):
        rules = {label: TRAINED[label](factor * n), "fixed": alphas[a]}  # its rule, and its training scale kept
        if label == "1":
            rules = {rule: f(n, factor) for rule, f in RELATIVE.items()}
        scales = np.array(list(rules.values()))
        loss, accuracy = _at_scales(weights, models[a], np.array([alphas[a]]), short_rows)
        short[label] = {"loss": loss[:, 0], "accuracy": accuracy[:, 0]}
        loss, accuracy = _at_scales(weights, models[a], scales, long_rows)
        long[label] = {rule: {"loss": loss[:, i], "accuracy": accuracy[:, i]} for i, rule in enumerate(rules)}
        oracle[label] = {}
        for length, choose, report in (("short", choose_short, short_rows), ("long", choose_rows, long_rows)):
            chosen = candidates[np.argmin(_at_scales(weights, models[a], candidates, choose)[0], axis=1)]  # (seeds,)
            loss = np.array([_at_scales({k: w[s : s + 1] for k, w in weights.items()}, models[a], chosen[s : s + 1], rows)[0][0, 0]
                             for s, rows in enumerate(_per_seed(report, cfg["seeds"]))])
            oracle[label][length] = {"scale": chosen, "loss": loss}
    return {"n": n, "d": d, "factor": factor, "seed": seed, "trained": labels, "alphas": alphas, "lrs": list(lrs), "best_lr": best,
            "final_loss": out["loss"][np.arange(len(labels)), best, :, -1], "short": short, "long": long, "oracle": oracle,
            "grid": candidates}


def _per_seed(rows: list[dict], seeds: int) -> list[list[dict]]:
    return [[{key: val[s : s + 1] for key, val in chunk.items()} for chunk in rows] for s in range(seeds)]


def _arrays(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _arrays(val) for k, val in x.items()}
    if isinstance(x, list) and x and all(isinstance(e, (int, float)) and not isinstance(e, bool) for e in x):
        return np.array(x, dtype=float)
    return x


def load_lengths(path: str | Path) -> dict[str, Any]:
    """Read stored length-generalisation results (lists of numbers come back as arrays)."""
    data = _read_results(path, "sweep-lengths")
    data["cells"] = [_arrays(c) for c in data["cells"]]
    for c in data["cells"]:
        c["best_lr"] = c["best_lr"].astype(int)
        c["trained"] = list(c["trained"])
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnscale.training.lengths",
                                     description="Train at n, evaluate at factor * n under length rules; store the results as JSON.")
    parser.add_argument("--out", required=True, help="where to write the JSON results")
    parser.add_argument("--factor", type=int, default=4)
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"command": f"python -m attnscale.training.lengths --out {args.out}" + (f" --factor {args.factor}" if args.factor != 4 else ""),
                              "settings": SWEEP, "factor": args.factor,
                              "machine": {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count()},
                              "seconds": 0, "cells": []}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for n in SWEEP["ns"]:
        for d in SWEEP["ds"]:
            t0 = time.perf_counter()
            result["cells"].append(length_transfer(n, d, factor=args.factor))
            result["seconds"] = round(time.perf_counter() - started)
            out.write_text(json.dumps(_jsonable(result), separators=(",", ":")) + "\n")
            print(f"lengths n={n:4d} -> {args.factor * n:5d} d={d:3d} {time.perf_counter() - t0:7.1f} s", flush=True)
    print(f"wrote {out} ({result['seconds']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
