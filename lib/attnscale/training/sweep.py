"""The Part IV sweep: its configurations, one cell's run and summary, the
stored results, and the command that produces them
(``python -m attnscale.training --optimizer adam --out FILE``)."""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate as v
from .loop import _optimizer, train
from .model import KINDS, _kind
from .stats import best_lr_index, steps_to_target

__all__ = ["DATA", "DOT_ALPHAS", "SWEEP", "sweep_scales", "run_config", "select_scales", "load_sweep", "main"]

#: where the book keeps the stored sweep (the default; every function takes a path)
DATA = Path(__file__).resolve().parents[3] / "chapters" / "data"

DOT_ALPHAS = (0.25, 1.0, 2.5, 8.0)


def sweep_scales(n: int, d: int, kind: str) -> tuple[list[str], list[float]]:
    """The scales compared, as (labels, alpha) with ``p = softmax(alpha s)``.

    Dot scores ``s = q.k/sqrt(d)``: alpha in {0.25, 1, 2.5, alpha*(n), 8}.
    Cosine scores: ``sqrt(d)`` (unit-variance logits at initialisation, the
    analogue of alpha = 1), the mean-field optimum ``alpha*_cos(n, d)`` and
    ArcFace's 64."""
    from ..optimum import alpha_star_cosine, alpha_star_normal

    n, d = v.integer_at_least(n, "n", 2), v.integer_at_least(d, "d", 2)
    kind = _kind(kind)
    if kind == "dot":
        star = float(alpha_star_normal(n))
        pairs = sorted([(f"{a:g}", a) for a in DOT_ALPHAS] + [("α*(n)", star)], key=lambda t: t[1])
    else:
        pairs = [("√d", math.sqrt(d)), ("α*cos(n,d)", float(alpha_star_cosine(n, d))), ("64", 64.0)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


SWEEP: dict[str, Any] = {
    "ns": [16, 64, 256],
    "ds": [32, 64],
    # learning rates: one grid per optimiser, shared by every scale
    "lrs": {"adam": [0.003, 0.01, 0.03, 0.1], "sgd": [0.1, 0.3, 1.0, 3.0, 10.0]},
    "seeds": 5,
    "steps": 1000,
    "batch": 32,
    "noise": 1.0,
    "c": 8,
    "eval_every": 20,
    "eval_size": 256,
    "target": 0.8,
}


def _scale_indices(labels: list[str], scales: object) -> list[int]:
    if isinstance(scales, str) or not isinstance(scales, (list, tuple)) or not scales:
        raise TypeError(f"scales must be a non-empty list of scale labels from {labels}, got {scales!r}")
    unknown = [s for s in scales if s not in labels]
    if unknown:
        raise ValueError(f"scales: {unknown} are not scales of this cell; its scales are {labels}")
    return [i for i, label in enumerate(labels) if label in scales]


def run_config(n: int, d: int, kind: str, optimizer: str = "adam", *, seed: int | None = None, scales: list[str] | None = None,
               learn_scale: bool = False, weight_decay: float = 0.0, **overrides: Any) -> dict[str, Any]:
    """Train one (n, d, kind) cell of the sweep with the stored settings
    (any of them overridable) and summarise it: per scale and learning rate,
    the curves; per scale, the best learning rate, steps to the target
    accuracy and the final held-out loss, per seed.

    ``scales`` (labels from :func:`sweep_scales`) trains only those scales.
    The models of a seed share their initial weights and batches whatever
    the scales, so the result is the full cell's, restricted to those scales
    (see :func:`select_scales`), up to the last bits of the matrix products.

    With ``learn_scale`` the scales are trained too (see :func:`train`), starting
    from the cell's scales; the seed is the fixed-scale cell's, so the two share
    their initial weights and batches, and the cell adds the learned scale at
    every rate (``final_scale_all``, (alphas, lrs, seeds)) and its path at the best
    rate (``scale``, (alphas, seeds, evals)).

    ``weight_decay`` trains with AdamW (see :func:`train`), again from the fixed
    cell's seed, so each AdamW run pairs with the Adam run of the same seed."""
    optimizer = _optimizer(optimizer)
    cfg = {**SWEEP, **overrides}
    labels, alphas = sweep_scales(n, d, kind)
    if scales is not None:
        keep = _scale_indices(labels, scales)
        labels, alphas = [labels[i] for i in keep], [alphas[i] for i in keep]
    lrs = cfg["lrs"][optimizer] if isinstance(cfg["lrs"], dict) else cfg["lrs"]
    if seed is None:
        seed = 1000 * n + d + (0 if kind == "dot" else 1)
    seed = v.integer_at_least(seed, "seed", 0)
    out = train(seed, n=n, d=d, kind=kind, alphas=alphas, lrs=lrs, seeds=cfg["seeds"], steps=cfg["steps"], batch=cfg["batch"],
                noise=cfg["noise"], c=cfg["c"], optimizer=optimizer, eval_every=cfg["eval_every"], eval_size=cfg["eval_size"],
                learn_scale=learn_scale, weight_decay=weight_decay)
    best = best_lr_index(out["loss"])
    pick = np.arange(len(alphas))
    reach = steps_to_target(out["step"], out["accuracy"], cfg["target"])
    learned = {"final_scale_all": out["scale"][..., -1], "scale": out["scale"][pick, best]} if learn_scale else {}
    return {
        "n": n, "d": d, "kind": kind, "optimizer": optimizer, "weight_decay": float(weight_decay), "seed": seed, "labels": labels, "alphas": alphas, "lrs": list(lrs),
        "step": out["step"],
        # every learning rate: (alphas, lrs, seeds)
        "loss_area": out["loss"].mean(axis=-1), "final_loss_all": out["loss"][..., -1],
        "steps_to_target_all": reach, "diverged_at": out["diverged_at"],
        # each scale at its best learning rate: (alphas, seeds) and curves (alphas, seeds, evals)
        "best_lr": best, "steps_to_target": reach[pick, best], "final_loss": out["loss"][pick, best, :, -1],
        "loss": out["loss"][pick, best], "accuracy": out["accuracy"][pick, best], "half_l1": out["half_l1"][pick, best],
        **learned,
    }


#: the entries of a cell indexed by scale first
_PER_SCALE = ("labels", "alphas", "loss_area", "final_loss_all", "steps_to_target_all", "diverged_at", "best_lr",
              "steps_to_target", "final_loss", "loss", "accuracy", "half_l1")
#: and those of a cell whose scales were learned
_LEARNED = ("final_scale_all", "scale")


def select_scales(cell: dict[str, Any], scales: list[str]) -> dict[str, Any]:
    """A cell (from :func:`run_config` or :func:`load_sweep`) restricted to the
    scales with the given labels, in the cell's order."""
    cell = v.mapping(cell, "cell", _PER_SCALE)
    keep = _scale_indices(list(cell["labels"]), scales)
    out = dict(cell)
    for key in _PER_SCALE + tuple(k for k in _LEARNED if k in cell):
        val = cell[key]
        out[key] = [val[i] for i in keep] if isinstance(val, list) else np.asarray(val)[keep]
    return out


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _jsonable(val) for k, val in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(val) for val in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (float, np.floating)):
        return None if math.isinf(x) else float(f"{float(x):.6g}")
    if isinstance(x, np.integer):
        return int(x)
    return x


def _arrays(cell: dict) -> dict:
    out = {}
    for key, val in cell.items():
        if key in ("labels", "lrs", "kind", "optimizer") or not isinstance(val, list):
            out[key] = val
        else:
            numeric = key.startswith(("steps_to_target", "loss", "final", "accuracy", "half", "alphas", "diverged", "scale"))
            out[key] = np.array(val, dtype=float) if numeric else np.array(val)
    for key in ("steps_to_target", "steps_to_target_all"):
        out[key] = np.array([np.inf if x is None else x for x in np.ravel(np.array(cell[key], dtype=object))], dtype=float).reshape(np.shape(cell[key]))
    out["best_lr"] = out["best_lr"].astype(int)
    return out


def load_sweep(path: str | Path) -> dict[str, Any]:
    """Read stored sweep results; arrays come back as NumPy arrays and a
    target never reached as ``inf``."""
    data = _read_results(path, "sweep")
    data["cells"] = [_arrays(c) for c in data["cells"]]
    return data


def _read_results(path: object, target: str) -> dict[str, Any]:
    """The JSON a ``make <target>`` wrote, with clear errors for a bad or missing path."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no stored results at {path}; run `make {target}` to produce them")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnscale.training", description="Run the Part IV training sweep for one optimiser and store its results as JSON.")
    parser.add_argument("--optimizer", required=True, choices=list(SWEEP["lrs"]))
    parser.add_argument("--out", required=True, help="where to write the JSON results")
    parser.add_argument("--ns", type=int, nargs="+", default=SWEEP["ns"])
    parser.add_argument("--ds", type=int, nargs="+", default=SWEEP["ds"])
    parser.add_argument("--kinds", nargs="+", choices=list(KINDS), default=list(KINDS))
    parser.add_argument("--learn-scale", action="store_true", help="train the scale too, starting from each of the cell's scales")
    parser.add_argument("--weight-decay", type=float, default=0.0, help="AdamW's decoupled weight decay (Adam only; default 0)")
    args = parser.parse_args(argv)
    command = f"python -m attnscale.training --optimizer {args.optimizer} --out {args.out}"
    if (args.ns, args.ds) != (SWEEP["ns"], SWEEP["ds"]):
        command += f" --ns {' '.join(map(str, args.ns))} --ds {' '.join(map(str, args.ds))}"
    if args.kinds != list(KINDS):
        command += f" --kinds {' '.join(args.kinds)}"
    if args.learn_scale:
        command += " --learn-scale"
    if args.weight_decay:
        command += f" --weight-decay {args.weight_decay:g}"
    result: dict[str, Any] = {
        "command": command,
        "optimizer": args.optimizer,
        "learn_scale": args.learn_scale,
        "weight_decay": args.weight_decay,
        "settings": SWEEP,
        "machine": {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count()},
        "seconds": 0,
        "cells": [],
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    for kind in args.kinds:
        for n in args.ns:
            for d in args.ds:
                t0 = time.perf_counter()
                result["cells"].append(run_config(n, d, kind, args.optimizer, learn_scale=args.learn_scale, weight_decay=args.weight_decay))
                result["seconds"] = round(time.perf_counter() - started)
                # written after every cell, so an interrupted sweep keeps what it has
                out.write_text(json.dumps(_jsonable(result), separators=(",", ":")) + "\n")
                print(f"{args.optimizer:4s} {kind:6s} n={n:4d} d={d:3d} {time.perf_counter() - t0:7.1f} s", flush=True)
    print(f"wrote {out} ({result['seconds']} s)")
    return 0
