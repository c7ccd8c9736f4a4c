"""Length generalisation, the arm that ties Part III to Part IV: train at ``n``
keys, evaluate at ``factor * n`` with the scale a length rule gives there.

Three models per seed are trained at ``n`` (Adam, each at its best rate, chosen on
the validation set as in the sweep (:func:`attnscale.training.tune`), from the dot cell's seed, so they share initial weights and
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

``python -m attnscale.training --arms lengths`` runs every (n, d) of the sweep and
stores the results (``make sweep-lengths``); :func:`load_lengths` reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from .. import _validate as v
from .. import lengthrules
from ..entropy import alpha_for_mean_field_entropy
from .loop import _held_out_rows
from .model import _accuracy, _forward
from .sweep import _read_results, _settings, tune

__all__ = ["TRAINED", "RELATIVE", "MEASURES", "held_out_sets", "length_transfer", "load_lengths"]

#: the scales the three models are trained at, as functions of the training length
#: (Part III's rules from :mod:`attnscale.lengthrules`)
TRAINED = {"1": lambda n: float(lengthrules.fixed(n)), "log512 n": lambda n: float(lengthrules.log512(n)),
           "ln n": lambda n: float(lengthrules.chiang_cholak(n))}
#: the relative rules applied to the model trained at 1, each giving the scale at ``r`` times the training length ``n``
RELATIVE = {"fixed": lambda n, r: float(lengthrules.fixed(r * n)), "log ratio": lambda n, r: float(lengthrules.log512(r * n, base=n)),
            "YaRN": lambda n, r: float(lengthrules.yarn(r * n, n_train=n)),
            "mean-field invariant": lambda n, r: float(alpha_for_mean_field_entropy(r * n, n_train=n))}  # ch. 8's sqrt(1 + 2 ln r)


def _held_out(rng: np.random.Generator, seeds: int, size: int, n: int, d: int, cfg: dict) -> list[dict]:
    return _held_out_rows(rng, seeds, size, cfg["batch"], n, d, cfg["c"], cfg["noise"])


def held_out_sets(seed: int, n: int, d: int, factor: int, eval_size: int, cfg: dict) -> dict[str, list[dict]]:
    """The four held-out sets of a cell, drawn in this order from ``default_rng([seed, 2])``:
    ``short`` and ``long`` report every rule and the oracle, ``choose_long`` and
    ``choose_short`` choose the oracle's scale (never the rows that report it)."""
    rng = np.random.default_rng([v.integer_at_least(seed, "seed", 0), 2])
    n, d = v.integer_at_least(n, "n", 2), v.integer_at_least(d, "d", 2)
    factor, eval_size = v.integer_at_least(factor, "factor", 2), v.integer_at_least(eval_size, "eval_size", 1)
    cfg = v.mapping(cfg, "cfg", ("seeds", "batch", "c", "noise"))
    short = _held_out(rng, cfg["seeds"], eval_size, n, d, cfg)
    long = _held_out(rng, cfg["seeds"], eval_size, factor * n, d, cfg)
    choose_long = _held_out(rng, cfg["seeds"], eval_size, factor * n, d, cfg)
    choose_short = _held_out(rng, cfg["seeds"], eval_size, n, d, cfg)
    return {"short": short, "long": long, "choose_long": choose_long, "choose_short": choose_short}


#: what the evaluation of :func:`length_transfer` reports per seed and scale
MEASURES = ("loss", "accuracy", "weight", "concentration", "spread")


def _measure(weights: dict, model: int, scales: NDArray, rows: list[dict]) -> dict[str, NDArray]:
    """One trained model at several scales, (seeds, scales) each: the held-out ``loss``, the
    ``accuracy`` (queried key on top), the mean ``weight`` on the queried key, the mean
    ``concentration`` sum_i p_i^2 (averaged over values, the loss is 1 - 2 weight +
    concentration), and the ``spread``, the mean over rows of the logits' standard deviation."""
    copies = {key: np.repeat(w[:, model : model + 1], scales.size, axis=1) for key, w in weights.items() if key in ("Wq", "Wk")}
    parts: dict[str, list] = {key: [] for key in MEASURES}
    for chunk in rows:
        f = _forward(copies, chunk, scales, "dot")
        p = f["p"]  # (seeds, batch, scales, n)
        on_key = np.take_along_axis(p, np.broadcast_to(chunk["j"][:, :, None, None], p.shape[:-1] + (1,)), axis=-1)[..., 0]
        parts["loss"].append(f["loss"])
        parts["accuracy"].append(_accuracy(p, chunk["j"]))
        parts["weight"].append(on_key.mean(axis=1))
        parts["concentration"].append(np.sum(p * p, axis=-1).mean(axis=1))
        parts["spread"].append((f["s"] * scales[None, None, :, None]).std(axis=-1).mean(axis=1))
    return {key: np.mean(val, axis=0) for key, val in parts.items()}


def length_transfer(n: int, d: int, *, factor: int = 4, seed: int | None = None, eval_size: int = 256,
                    grid: int = 61, **overrides: Any) -> dict[str, Any]:
    """Train the three models of the module's description at length ``n``, width
    ``d`` (the sweep's settings, any overridable) and evaluate them at ``n`` and at
    ``factor * n`` on fresh held-out rows.

    Returns ``trained`` (labels), ``alphas`` (their training scales), ``best_lr``
    (one index per model into ``lrs``), ``final_loss`` (seeds,) per model from the
    training run's own held-out set (the sweep's ``final_loss``), and per model
    ``final_loss_again`` the same losses recomputed from the chosen models' weights, and per model
    ``short`` and ``long``: dicts of the :data:`~attnscale.training.lengths.MEASURES` (seeds,) under each rule
    (each model's own absolute rule and its training scale kept, ``fixed``; for the model
    at 1 the relative rules, of which ``fixed`` is one);
    ``oracle``: per model, at each length (``short``, ``long``), per seed, the best
    ``scale`` on a grid of ``grid`` values from 0.05 to 20 (chosen on one held-out
    set) and its ``loss`` on another (the set that reports the rules), and ``grid`` itself;
    ``calibrated``: for the model at 1, the loss at the long length when each relative rule
    multiplies that seed's best scale at the short length instead of 1."""
    n = v.integer_at_least(n, "n", 2)
    d = v.integer_at_least(d, "d", 2)
    factor = v.integer_at_least(factor, "factor", 2)
    eval_size = v.integer_at_least(eval_size, "eval_size", 1)
    grid = v.integer_at_least(grid, "grid", 2)
    cfg = _settings(overrides)
    if seed is None:
        seed = 1000 * n + d  # the dot cell's seed in the sweep
    seed = v.integer_at_least(seed, "seed", 0)
    labels = list(TRAINED)
    alphas = [TRAINED[label](n) for label in labels]
    out = tune(seed, n=n, d=d, kind="dot", alphas=alphas, optimizer="adam", return_params=True, **overrides)
    best, lrs = out["best_lr"], out["lrs"]
    rates = lrs.shape[1]
    models = [a * rates + int(best[a]) for a in range(len(labels))]
    rows = held_out_sets(seed, n, d, factor, eval_size, cfg)
    # the training run's own held-out set, drawn again: the chosen weights must give its final losses
    train_rows = _held_out(np.random.default_rng([seed, 1]), cfg["seeds"], cfg["eval_size"], n, d, cfg)
    candidates = np.geomspace(0.05, 20.0, grid)
    weights = {key: w.reshape(w.shape[:1] + (len(labels) * rates,) + w.shape[3:]) for key, w in cast(dict, out["params"]).items()}
    short: dict[str, Any] = {}
    long: dict[str, Any] = {}
    oracle: dict[str, Any] = {}
    final_again = np.empty((len(labels), cfg["seeds"]))
    calibrated: dict[str, Any] = {}
    for a, label in enumerate(labels):
        final_again[a] = _measure(weights, models[a], np.array([alphas[a]]), train_rows)["loss"][:, 0]
        rules = {label: TRAINED[label](factor * n), "fixed": alphas[a]}  # its rule, and its training scale kept
        if label == "1":
            rules = {rule: f(n, factor) for rule, f in RELATIVE.items()}
        scales = np.array(list(rules.values()))
        short[label] = {key: val[:, 0] for key, val in _measure(weights, models[a], np.array([alphas[a]]), rows["short"]).items()}
        at_long = _measure(weights, models[a], scales, rows["long"])
        long[label] = {rule: {key: val[:, i] for key, val in at_long.items()} for i, rule in enumerate(rules)}
        oracle[label] = {}
        for length, choose, report in (("short", rows["choose_short"], rows["short"]), ("long", rows["choose_long"], rows["long"])):
            chosen = candidates[np.argmin(_measure(weights, models[a], candidates, choose)["loss"], axis=1)]  # (seeds,)
            oracle[label][length] = {"scale": chosen, "loss": _loss_per_seed(weights, models[a], chosen, report)}
        if label == "1":
            # each seed's best scale at n, carried to factor * n by each relative rule (a calibrated start)
            base = oracle[label]["short"]["scale"]
            calibrated = {rule: _loss_per_seed(weights, models[a], base * f(n, factor), rows["long"]) for rule, f in RELATIVE.items()}
    return {"n": n, "d": d, "factor": factor, "seed": seed, "trained": labels, "alphas": alphas, "lrs": lrs, "slides": out["slides"], "best_lr": best,
            "final_loss": out["loss"][np.arange(len(labels)), best, :, -1], "final_loss_again": final_again,
            "short": short, "long": long, "oracle": oracle, "calibrated": calibrated, "grid": candidates}


def _loss_per_seed(weights: dict, model: int, scales: NDArray, rows: list[dict]) -> NDArray:
    """The held-out loss of one trained model, seed ``s`` evaluated at ``scales[s]`` on its own rows."""
    return np.array([_measure(_one_seed(weights, s), model, scales[s : s + 1], [_one_seed(chunk, s) for chunk in rows])["loss"][0, 0]
                     for s in range(len(scales))])


def _one_seed(part: dict, s: int) -> dict:
    """Seed ``s`` of a dict of per-seed arrays (weights or a chunk of rows), its seed axis kept."""
    return {key: val[s : s + 1] for key, val in part.items()}


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _arrays(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _arrays(val) for k, val in x.items()}
    if isinstance(x, list) and x and (all(_number(e) for e in x) or all(isinstance(e, list) and e and all(_number(f) for f in e) for e in x)):
        return np.array(x, dtype=float)
    return x


def load_lengths(path: str | Path) -> dict[str, Any]:
    """Read stored length-generalisation results (lists of numbers come back as arrays)."""
    data = _read_results(path, "sweep-lengths")
    data["cells"] = [_arrays(c) for c in data["cells"]]
    for c in data["cells"]:
        c["best_lr"] = c["best_lr"].astype(int)
        if "slides" in c:
            c["slides"] = c["slides"].astype(int)
        c["trained"] = list(c["trained"])
    return data
