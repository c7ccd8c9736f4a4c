"""The command that produces every stored result of Part IV,
``python -m attnscale.training`` (``make sweep``): the sweep of both optimisers and
its three arms (learned scale, AdamW, lengths), cut into one job per cell and run
on a pool of worker processes, longest jobs first, so that two cores stay busy to
the end. Each result file is written when its last cell is done; a cell's result
does not depend on which worker ran it or when."""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .lengths import length_transfer
from .model import KINDS
from .sweep import DATA, SWEEP, _jsonable, run_config, sweep_scales

__all__ = ["ARMS", "Output", "outputs", "main"]

#: the arms of the experiment, in the order they are described in chapter 10
ARMS = ("main", "learned", "adamw", "lengths")
#: The weight decays of the AdamW arm (0.1 and the grid around it), with their files
DECAYS = {0.1: "training_adamw_dot.json", 0.01: "training_adamw_dot_wd0.01.json", 1.0: "training_adamw_dot_wd1.json"}


@dataclass
class Output:
    """One result file: its name, what it records, and its jobs (one per cell)."""

    name: str
    header: dict[str, Any]
    jobs: list[tuple[Callable[..., dict], dict[str, Any], float]] = field(default_factory=list)


def _cost(n: int, d: int, kind: str, scales: int, rates: int) -> float:
    """A rough relative cost of a cell, only to start the longest first: cosine scores form
    every model's keys (d^2 per key and model), dot scores share the batch's draw."""
    per_model = d * d if kind == "cosine" else 4 * d
    return float(n * (scales * rates * per_model + 40 * d))


def outputs(arms: list[str] | tuple[str, ...] = ARMS) -> list[Output]:
    """The result files of the given arms, each with its jobs."""
    unknown = [a for a in arms if a not in ARMS]
    if isinstance(arms, str) or unknown or not arms:
        raise ValueError(f"arms must be a non-empty list from {list(ARMS)}, got {arms!r}")
    cells = [(kind, n, d) for kind in KINDS for n in SWEEP["ns"] for d in SWEEP["ds"]]
    outs: list[Output] = []

    def cell_jobs(kinds: tuple[str, ...], **kwargs: Any) -> list:
        return [(run_config, {"n": n, "d": d, "kind": kind, **kwargs},
                 _cost(n, d, kind, len(sweep_scales(n, d, kind)[0]), SWEEP["rates"][kind]))
                for kind, n, d in cells if kind in kinds]

    if "main" in arms:
        for opt in SWEEP["lrs"]:
            outs.append(Output(f"training_{opt}.json", {"optimizer": opt, "learn_scale": False, "weight_decay": 0.0}, cell_jobs(KINDS, optimizer=opt)))
    if "learned" in arms:
        for kind in KINDS:
            outs.append(Output(f"training_learned_{kind}.json", {"optimizer": "adam", "learn_scale": True, "weight_decay": 0.0},
                               cell_jobs((kind,), optimizer="adam", learn_scale=True)))
    if "adamw" in arms:
        for decay, name in DECAYS.items():
            outs.append(Output(name, {"optimizer": "adam", "learn_scale": False, "weight_decay": decay}, cell_jobs(("dot",), optimizer="adam", weight_decay=decay)))
    if "lengths" in arms:
        jobs = [(length_transfer, {"n": n, "d": d, "factor": 4}, _cost(4 * n, d, "dot", 3, SWEEP["rates"]["dot"])) for n in SWEEP["ns"] for d in SWEEP["ds"]]
        outs.append(Output("training_lengths.json", {"factor": 4}, jobs))
    return outs


def _cpu() -> str:
    """The CPU's model name, where Linux says it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _run(job: tuple[Callable[..., dict], dict[str, Any]]) -> tuple[dict, float]:
    func, kwargs = job
    t0 = time.perf_counter()
    return func(**kwargs), time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnscale.training",
                                     description="Run the Part IV training experiment (the sweep and its arms) and store its results as JSON.")
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS), help="which arms to run (default: all)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: one per CPU)")
    parser.add_argument("--data", default=str(DATA), help="the directory the result files go to (default: the book's chapters/data)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    outs = outputs(args.arms)
    command = "python -m attnscale.training --arms " + " ".join(args.arms)
    machine = {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(), "cpu": _cpu(), "jobs": args.jobs,
               "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", "default")}
    order = sorted(((o, i) for o, out in enumerate(outs) for i in range(len(out.jobs))), key=lambda oi: -outs[oi[0]].jobs[oi[1]][2])
    results: list[list[Any]] = [[None] * len(out.jobs) for out in outs]
    seconds = [0.0] * len(outs)
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(_run, outs[o].jobs[i][:2]): (o, i) for o, i in order}
        for future in as_completed(futures):
            o, i = futures[future]
            cell, took = future.result()
            results[o][i] = cell
            seconds[o] += took
            kwargs = outs[o].jobs[i][1]
            print(f"{outs[o].name:32s} {kwargs.get('kind', 'dot'):6s} n={kwargs['n']:4d} d={kwargs['d']:3d} {took:7.1f} s"
                  f"   ({time.perf_counter() - started:6.0f} s in all)", flush=True)
            if all(r is not None for r in results[o]):
                record = {"command": command, **outs[o].header, "settings": SWEEP, "machine": machine, "seconds": round(seconds[o]), "cells": results[o]}
                (data / outs[o].name).write_text(json.dumps(_jsonable(record), separators=(",", ":")) + "\n")
                print(f"wrote {data / outs[o].name}", flush=True)
    print(f"done in {time.perf_counter() - started:.0f} s on {args.jobs} workers")
    return 0
