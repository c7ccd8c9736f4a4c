"""The Part IV sweep: its settings, the learning-rate windows and their tuning, one
cell's run and summary, and the stored results (made by ``python -m attnscale.training``,
see :mod:`attnscale.training.runner`)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate as v
from .._paths import in_book
from .loop import TrainSettings, _optimizer, evaluation_steps, train
from .model import _kind
from .stats import best_lr_index, steps_to_target

__all__ = ["DATA", "DOT_ALPHAS", "SWEEP", "lattice_rate", "rate_window", "tune", "sweep_scales", "run_config", "select_scales", "load_sweep"]

#: where the book keeps the stored sweep (the default; every function takes a path)
DATA = in_book("chapters/data")

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
    # learning rates: per optimiser and kind, each scale alpha gets a window of rates on
    # the 1-3-10 lattice centred on centre * alpha**-exponent (SGD's best rate falls like
    # 1/alpha, Adam's hardly moves), which slides where the best rate sits at its edge
    "lrs": {"adam": {"dot": [0.01, 0], "cosine": [0.01, 0]}, "sgd": {"dot": [1.0, 1], "cosine": [20.0, 1]}},
    "rates": {"dot": 5, "cosine": 4},
    "slides": 3,
    "seeds": 5,
    "steps": 1000,
    "batch": 32,
    "noise": 1.0,
    "c": 8,
    # the test set: reports steps to the target, curves and final losses, evaluated at
    # every step to `dense`, then within `resolution` of the current step
    "eval_size": 256,
    "dense": 20,
    "resolution": 0.05,
    # the validation set: chooses the rate (smallest mean validation loss), never reported
    "validation_size": 256,
    "validation_every": 20,
    "target": 0.8,
}


def lattice_rate(k: int) -> float:
    """Rate ``k`` of the 1-3-10 lattice: ..., 0.1, 0.3, 1 (k = 0), 3, 10, ..."""
    k = v.integer_at_least(k, "k", -60)
    return float(f"{3 if k % 2 else 1}e{k // 2}")


def _lattice_index(x: float) -> int:
    """The lattice point nearest ``x`` on a log scale."""
    k0 = math.floor(2 * math.log10(x))
    # the candidates k0 - 1 .. k0 + 2, cut at the lattice's floor (k >= -60, 1e-30)
    return min(range(max(k0 - 1, -60), max(k0 + 3, -59)), key=lambda k: abs(math.log(x / lattice_rate(k))))


def rate_window(optimizer: str, kind: str, alpha: float, cfg: dict[str, Any] | None = None) -> list[int]:
    """The lattice indices (see :func:`lattice_rate`) of the first window of rates tried at
    scale ``alpha``: ``cfg["rates"][kind]`` consecutive points around the one nearest
    ``centre * alpha**-exponent`` (``cfg["lrs"][optimizer][kind]``), one more above than
    below when their number is even."""
    optimizer, kind = _optimizer(optimizer), _kind(kind)
    alpha = float(v.real_above(alpha, "alpha"))
    cfg = SWEEP if cfg is None else v.mapping(cfg, "cfg", ("lrs", "rates"))
    centre, exponent = cfg["lrs"][optimizer][kind]
    rates = v.integer_at_least(cfg["rates"][kind], "rates", 2)
    k = _lattice_index(centre * alpha**-exponent)
    return list(range(k - (rates - 1) // 2, k - (rates - 1) // 2 + rates))


#: the entries of train()'s result (TrainResult.as_dict()) laid out (alphas, lrs, ...)
_BY_RATE = ("loss", "accuracy", "half_l1", "scale", "diverged_at", "val_loss")


def _settings(overrides: dict[str, Any]) -> dict[str, Any]:
    """The sweep's settings with ``overrides`` in place of the stored values; a name that is
    not a setting (a misspelt one would otherwise be ignored) is a ``TypeError`` naming it."""
    unknown = sorted(set(overrides) - set(SWEEP))
    if unknown:
        raise TypeError(f"unknown setting(s) {unknown}: the overridable settings are {sorted(SWEEP)}")
    return {**SWEEP, **overrides}


def tune(seed: int, *, n: int, d: int, kind: str, alphas: list[float], optimizer: str = "adam", learn_scale: bool = False,
         weight_decay: float = 0.0, return_params: bool = False, **overrides: Any) -> dict[str, Any]:
    """Train every scale of ``alphas`` at a window of learning rates (:func:`rate_window`)
    with the sweep's settings (any overridable) and slide each window until the scale's best
    rate, the one with the smallest mean validation loss, lies inside it: where the best is
    the window's lowest (highest) rate, the next lower (higher) lattice rate is trained and
    the window's other end dropped, up to ``cfg["slides"]`` times. Every run of a seed shares
    its initial weights and batches, whichever call trains it.

    Returns :func:`train`'s result over the final windows as a dict of its entries (``params``, with ``return_params``,
    of shape (seeds, alphas, rates, ...)), plus ``lrs`` (alphas, rates), ``best_lr`` (alphas,)
    indices into them, and ``slides`` (alphas,): how far each window moved (negative: down)."""
    optimizer, kind = _optimizer(optimizer), _kind(kind)
    cfg = _settings(overrides)
    alphas = [float(a) for a in v.at_least_1d(v.positive(alphas, "alphas"), "alphas")]
    windows = [rate_window(optimizer, kind, a, cfg) for a in alphas]
    v.integer_at_least(cfg["validation_size"], "validation_size", 1)
    slides_left = v.integer_at_least(cfg["slides"], "slides", 0)

    def run(scales: list[float], idx: list[list[int]]) -> dict[str, Any]:
        settings = TrainSettings(n=n, d=d, kind=kind, alphas=scales, lrs=[[lattice_rate(k) for k in row] for row in idx], seeds=cfg["seeds"],
                                 steps=cfg["steps"], batch=cfg["batch"], noise=cfg["noise"], c=cfg["c"], optimizer=optimizer,
                                 eval_steps=evaluation_steps(cfg["steps"], cfg["resolution"], cfg["dense"]), eval_size=cfg["eval_size"],
                                 validation_size=cfg["validation_size"], validation_every=cfg["validation_every"], learn_scale=learn_scale,
                                 weight_decay=weight_decay, return_params=return_params)
        out = train(seed, settings).as_dict()
        if return_params:
            out["params"] = {key: w.reshape(w.shape[:1] + (len(scales), len(idx[0])) + w.shape[2:]) for key, w in out["params"].items()}
        return out

    out = run(alphas, windows)
    slides = np.zeros(len(alphas), dtype=int)
    while True:
        best = best_lr_index(out["val_loss"])
        last = len(windows[0]) - 1
        edge = [a for a in range(len(alphas)) if best[a] in (0, last)]
        if not edge or slides_left == 0:
            break
        slides_left -= 1
        step = {a: (-1 if best[a] == 0 else 1) for a in edge}
        new = run([alphas[a] for a in edge], [[windows[a][0] - 1 if step[a] < 0 else windows[a][-1] + 1] for a in edge])
        for i, a in enumerate(edge):
            down = step[a] < 0
            windows[a] = [windows[a][0] - 1] + windows[a][:-1] if down else windows[a][1:] + [windows[a][-1] + 1]
            slides[a] += step[a]
            for key in _BY_RATE:
                if key in out:
                    row = [new[key][i, 0], *out[key][a][:-1]] if down else [*out[key][a][1:], new[key][i, 0]]
                    out[key][a] = np.stack(row)
            if return_params:
                for key, w in out["params"].items():
                    row = [new["params"][key][:, i, 0], *np.moveaxis(w[:, a, :-1], 1, 0)] if down else [*np.moveaxis(w[:, a, 1:], 1, 0), new["params"][key][:, i, 0]]
                    w[:, a] = np.stack(row, axis=1)
    out["lrs"] = np.array([[lattice_rate(k) for k in row] for row in windows])
    out["best_lr"] = best
    out["slides"] = slides
    return out


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
    cfg = _settings(overrides)
    labels, alphas = sweep_scales(n, d, kind)
    if scales is not None:
        keep = _scale_indices(labels, scales)
        labels, alphas = [labels[i] for i in keep], [alphas[i] for i in keep]
    if seed is None:
        seed = 1000 * n + d + (0 if kind == "dot" else 1)
    seed = v.integer_at_least(seed, "seed", 0)
    out = tune(seed, n=n, d=d, kind=kind, alphas=alphas, optimizer=optimizer, learn_scale=learn_scale, weight_decay=weight_decay, **overrides)
    best = out["best_lr"]
    pick = np.arange(len(alphas))
    reach = steps_to_target(out["step"], out["accuracy"], cfg["target"])
    learned = {"final_scale_all": out["scale"][..., -1], "scale": out["scale"][pick, best]} if learn_scale else {}
    return {
        "n": n, "d": d, "kind": kind, "optimizer": optimizer, "weight_decay": float(weight_decay), "seed": seed, "labels": labels, "alphas": alphas,
        "lrs": out["lrs"], "slides": out["slides"], "step": out["step"], "val_step": out["val_step"],
        # every learning rate: (alphas, lrs, seeds); the rate is chosen by val_area, the validation loss
        "val_area": out["val_loss"].mean(axis=-1), "loss_area": out["loss"].mean(axis=-1), "final_loss_all": out["loss"][..., -1],
        "steps_to_target_all": reach, "diverged_at": out["diverged_at"],
        # each scale at its best learning rate: (alphas, seeds) and curves (alphas, seeds, evals), all on the test set
        "best_lr": best, "steps_to_target": reach[pick, best], "final_loss": out["loss"][pick, best, :, -1],
        "loss": out["loss"][pick, best], "accuracy": out["accuracy"][pick, best], "half_l1": out["half_l1"][pick, best],
        **learned,
    }


#: the entries of a cell indexed by scale first
_PER_SCALE = ("labels", "alphas", "lrs", "slides", "val_area", "loss_area", "final_loss_all", "steps_to_target_all", "diverged_at", "best_lr",
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
        if key in ("labels", "kind", "optimizer") or not isinstance(val, list):
            out[key] = val
        else:
            numeric = key.startswith(("steps_to_target", "loss", "final", "accuracy", "half", "alphas", "diverged", "scale", "val", "lrs"))
            out[key] = np.array(val, dtype=float) if numeric else np.array(val)
    for key in ("steps_to_target", "steps_to_target_all"):
        out[key] = np.array([np.inf if x is None else x for x in np.ravel(np.array(cell[key], dtype=object))], dtype=float).reshape(np.shape(cell[key]))
    out["best_lr"] = out["best_lr"].astype(int)
    if "slides" in out:
        out["slides"] = out["slides"].astype(int)
    return out


def load_sweep(path: str | Path) -> dict[str, Any]:
    """Read stored sweep results; arrays come back as NumPy arrays and a
    target never reached as ``inf``."""
    data = _read_results(path, "sweep")
    data["cells"] = [_arrays(c) for c in data["cells"]]
    return data


def _read_results(path: object, target: str) -> dict[str, Any]:
    """The JSON a ``make <target>`` wrote (gzip-compressed where the name ends in ``.gz``),
    with clear errors for a bad or missing path."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no stored results at {path}; run `make {target}` to produce them")
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    data: dict[str, Any] = json.loads(text)
    return data
