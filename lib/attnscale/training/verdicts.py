"""The conclusions of chapter 10 as data: for one directory of stored results (the
eight files ``make sweep`` writes), every paired comparison the chapter tests, reduced
to its verdict, so that two runs of the sweep (for example under two BLAS kernels) can
be compared conclusion by conclusion rather than digit by digit.

A *verdict* is ``"later"`` / ``"earlier"`` (speed) or ``"higher"`` / ``"lower"`` (final
loss) when the exact sign test rejects "no difference" at 5% after Holm's correction
within the comparison's family, and ``"no difference"`` otherwise. Where both arms of a
comparison are stable scales (no label in
:data:`attnscale.reproducibility.CHAOTIC_LABELS`), the counts of later, earlier and tied
pairs are kept as well: on the smallest cells those runs reproduced under every kernel
tried, but a full rerun under another kernel moved three of fifty such counts (see
:mod:`attnscale.reproducibility`), so compare the verdicts and read the counts as evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..reproducibility import CHAOTIC_LABELS
from .analysis import compare_arms
from .lengths import RELATIVE, load_lengths
from .model import KINDS
from .stats import PairedComparison, holm, lr_exponent, mean_interval, paired_comparison
from .sweep import SWEEP, load_sweep

__all__ = ["COMPARISONS", "conclusions"]

#: the main sweep's comparisons (kind, arm, reference), for each optimiser
COMPARISONS = (("dot", "0.25", "1"), ("dot", "α*(n)", "1"), ("dot", "2.5", "1"), ("dot", "8", "1"),
               ("cosine", "α*cos(n,d)", "√d"), ("cosine", "64", "α*cos(n,d)"))
_FILES = ("training_adam.json", "training_sgd.json", "training_learned_dot.json", "training_learned_cosine.json",
          "training_adamw_dot.json", "training_adamw_dot_wd0.01.json", "training_adamw_dot_wd1.json", "training_lengths.json")


def _file(directory: Path, name: str) -> Path:
    """A stored result file of ``directory``, as written (``.json``) or compressed (``.json.gz``)."""
    plain = directory / name
    return plain if plain.is_file() else directory / (name + ".gz")
_WORDS = {"speed": ("later", "earlier"), "loss": ("higher", "lower")}


def _verdict(r: PairedComparison, p: float, what: str) -> str:
    if p >= 0.05 or r.later == r.earlier:
        return "no difference"
    return _WORDS[what][0] if r.later > r.earlier else _WORDS[what][1]


def _family(out: dict, counts: dict, name: str, tests: dict[str, dict[str, Any]], stable: dict[str, bool]) -> None:
    """Add a family of comparisons (name -> {"speed": ..., "loss": ...}) with Holm within each measure."""
    for what in ("speed", "loss"):
        keys = list(tests)
        adjusted = holm([tests[k][what].p_value for k in keys])
        for k, p in zip(keys, adjusted):
            r = tests[k][what]
            out[f"{name}: {k}, {what}"] = _verdict(r, float(p), what)
            if stable[k]:
                counts[f"{name}: {k}, {what}"] = (r.later, r.earlier, r.tied)


def _pooled(cells: list[dict], label: str, key: str, rate: list[int] | None = None) -> np.ndarray:
    """One scale's values over the cells (seeds concatenated), at its best rate or at ``rate[i]`` in cell i."""
    parts = []
    for i, c in enumerate(cells):
        a = list(c["labels"]).index(label)
        parts.append(np.asarray(c[key][a]) if rate is None else np.asarray(c[f"{key}_all"][a, rate[i]]))
    return np.concatenate(parts)


Cells = dict[tuple[str, str, int, int], dict]
Verdicts = dict[str, str]
Counts = dict[str, tuple[int, int, int]]


def conclusions(directory: str | Path) -> tuple[dict[str, str], dict[str, tuple[int, int, int]]]:
    """Every verdict chapter 10 states, from the stored results in ``directory``.

    Returns ``(verdicts, counts)``: ``verdicts`` maps a comparison's name to its verdict
    (see the module's description) and, for the learning-rate rule, ``"inside"`` or
    ``"outside"`` (whether the rule's exponent lies in the 95% interval of the six dot
    cells' exponents); ``counts`` maps the comparisons between stable scales to their
    (later, earlier, tied) counts."""
    directory = _results_directory(directory)
    sweeps = {opt: load_sweep(_file(directory, f"training_{opt}.json")) for opt in SWEEP["lrs"]}
    cells = {(c["optimizer"], c["kind"], c["n"], c["d"]): c for s in sweeps.values() for c in s["cells"]}
    calm = {label: label not in CHAOTIC_LABELS for c in cells.values() for label in c["labels"]}
    out: Verdicts = {}
    counts: Counts = {}
    _main_sweep(out, counts, cells, calm)
    _rate_rule(out, cells)
    _learned_scale(out, counts, directory, cells, calm)
    _adamw(out, counts, directory, cells, calm)
    _lengths(out, directory)
    return out, counts


def _results_directory(directory: object) -> Path:
    """``directory`` as a path, holding every file of :data:`_FILES` (or its ``.gz``)."""
    if not isinstance(directory, (str, Path)):
        raise TypeError(f"directory must be a str or Path, got {type(directory).__name__}")
    path = Path(directory)
    missing = [f for f in _FILES if not _file(path, f).is_file()]
    if missing:
        raise FileNotFoundError(f"directory: {path} lacks {missing}; run `make sweep` to produce them")
    return path


def _grid() -> list[tuple[int, int]]:
    """The sweep's cells ``(n, d)``, in the order of :data:`attnscale.training.sweep.SWEEP`."""
    return [(n, d) for n in SWEEP["ns"] for d in SWEEP["ds"]]


def _main_sweep(out: Verdicts, counts: Counts, cells: Cells, calm: dict[str, bool]) -> None:
    """The main sweep: twelve comparisons of speed and twelve of final loss, Holm within each."""
    main = {f"{opt} {arm} - {ref}": compare_arms(cells, opt, kind, arm, ref)[0] for opt in SWEEP["lrs"] for kind, arm, ref in COMPARISONS}
    _family(out, counts, "sweep", main, {f"{opt} {arm} - {ref}": calm[arm] and calm[ref] for opt in SWEEP["lrs"] for _, arm, ref in COMPARISONS})


def _rate_rule(out: Verdicts, cells: Cells) -> None:
    """The learning-rate rule: is -1 (the notes' eq. 68), or -1/2, inside the interval of the
    six dot cells' exponents?"""
    for opt in SWEEP["lrs"]:
        _, low, high = mean_interval(lr_exponent([cells[(opt, "dot", n, d)] for n, d in _grid()])[1])
        out[f"rate rule: {opt}, exponent -1"] = "inside" if low <= -1 <= high else "outside"
        out[f"rate rule: {opt}, exponent -1/2"] = "inside" if low <= -0.5 <= high else "outside"


def _both_measures(arm: list[dict], reference: list[dict], label: str, rate: list[int] | None = None) -> dict[str, PairedComparison]:
    """Speed (steps to the target) and final loss of scale ``label``, ``arm`` against
    ``reference`` cell by cell, the arm at its best rate or at ``rate[i]`` in cell i."""
    return {what: paired_comparison(_pooled(arm, label, key, rate), _pooled(reference, label, key))
            for what, key in (("speed", "steps_to_target"), ("loss", "final_loss"))}


def _learned_scale(out: Verdicts, counts: Counts, directory: Path, cells: Cells, calm: dict[str, bool]) -> None:
    """The learned scale against the same scale fixed, Holm within the family of eight."""
    nd = _grid()
    learned = {kind: {(c["n"], c["d"]): c for c in load_sweep(_file(directory, f"training_learned_{kind}.json"))["cells"]} for kind in KINDS}
    tests, stable = {}, {}
    for kind in KINDS:
        arms = [learned[kind][k] for k in nd]
        fixed = [cells[("adam", kind, *k)] for k in nd]
        for label in fixed[0]["labels"]:
            tests[f"{kind} from {label}"] = _both_measures(arms, fixed, label)
            stable[f"{kind} from {label}"] = calm[label]
    _family(out, counts, "learned", tests, stable)


def _adamw(out: Verdicts, counts: Counts, directory: Path, cells: Cells, calm: dict[str, bool]) -> None:
    """AdamW (decay 0.1) against Adam: at Adam's rate, at its own; within AdamW against 1;
    then the grid of decays."""
    nd = _grid()
    adam = [cells[("adam", "dot", *k)] for k in nd]
    labels = list(adam[0]["labels"])
    adamw = _adamw_cells(directory, adam, labels)
    rates = {x: [int(f["best_lr"][list(f["labels"]).index(x)]) for f in adam] for x in labels}
    same = {x: _both_measures(adamw[0.1], adam, x, rates[x]) for x in labels}
    own = {x: _both_measures(adamw[0.1], adam, x) for x in labels}
    _family(out, counts, "AdamW at Adam's rate", same, {x: calm[x] for x in labels})
    _family(out, counts, "AdamW at its rate", own, {x: calm[x] for x in labels})
    within: dict[str, dict[str, Any]] = {x: compare_arms({("adam", "dot", *k): c for k, c in zip(nd, adamw[0.1])}, "adam", "dot", x, "1")[0] for x in labels if x != "1"}
    _family(out, counts, "within AdamW", {f"{x} - 1": t for x, t in within.items()}, {f"{x} - 1": calm[x] for x in within})
    _decay_grid(out, adam, adamw, rates)


def _adamw_cells(directory: Path, adam: list[dict], labels: list[str]) -> dict[float, list[dict]]:
    """The AdamW dot cells of each decay, in the order of ``adam``; each must share Adam's
    windows of rates and hold the same scales (found by label: a cell may list its scales
    in another order)."""
    decay_files = {0.1: "training_adamw_dot.json", 0.01: "training_adamw_dot_wd0.01.json", 1.0: "training_adamw_dot_wd1.json"}
    adamw = {lam: [{(c["n"], c["d"]): c for c in load_sweep(_file(directory, f))["cells"]}[k] for k in _grid()] for lam, f in decay_files.items()}
    for lam, arm in adamw.items():
        if any(not np.array_equal(a["lrs"], f["lrs"]) for a, f in zip(arm, adam)):
            raise ValueError(f"directory: the AdamW cells at decay {lam} do not share Adam's windows of rates")
    for c in adam + [c for arm in adamw.values() for c in arm]:
        if sorted(c["labels"]) != sorted(labels):
            raise ValueError(f"directory: the Adam and AdamW dot cells must hold the same scales {labels}; "
                             f"cell (n, d) = ({c['n']}, {c['d']}) holds {list(c['labels'])}")
    return adamw


def _decay_grid(out: Verdicts, adam: list[dict], adamw: dict[float, list[dict]], rates: dict[str, list[int]]) -> None:
    """The grid of decays: raw p-values, as the chapter's table gives them."""
    for lam, arm in adamw.items():
        for x in ("2.5", "α*(n)"):
            r = paired_comparison(_pooled(arm, x, "steps_to_target"), _pooled(arm, "1", "steps_to_target"))
            out[f"decay {lam:g}: {x} - 1, speed"] = _verdict(r, r.p_value, "speed")
        r = paired_comparison(_pooled(arm, "8", "steps_to_target", rates["8"]), _pooled(adam, "8", "steps_to_target"))
        out[f"decay {lam:g}: 8 at Adam's rate, speed"] = _verdict(r, r.p_value, "speed")
        r = paired_comparison(_pooled(arm, "0.25", "final_loss", rates["0.25"]), _pooled(adam, "0.25", "final_loss"))
        out[f"decay {lam:g}: 0.25 at Adam's rate, loss"] = _verdict(r, r.p_value, "loss")


def _lengths(out: Verdicts, directory: Path) -> None:
    """The length arm: each rule that raises the scale at 4n against the training scale kept
    (Holm within five), from each seed's best scale at n (Holm within three), and the best
    scale at 4n against n (Holm within three)."""
    nd = _grid()
    lengths = {(c["n"], c["d"]): c for c in load_lengths(_file(directory, "training_lengths.json"))["cells"]}

    def loss(label: str, rule: str) -> np.ndarray:
        return np.concatenate([lengths[k]["long"][label][rule]["loss"] for k in nd])

    rules = {("1", r): r for r in RELATIVE if r != "fixed"} | {(label, label): label for label in ("log512 n", "ln n")}
    raised = [paired_comparison(loss(label, rule), loss(label, "fixed")) for label, rule in rules]
    for (label, rule), r, p in zip(rules, raised, holm([r.p_value for r in raised])):
        out[f"lengths: model at {label}, {rule} at 4n, loss"] = _verdict(r, float(p), "loss")
    calibrated = [paired_comparison(np.concatenate([lengths[k]["calibrated"][r] for k in nd]), np.concatenate([lengths[k]["calibrated"]["fixed"] for k in nd]))
                  for r in RELATIVE if r != "fixed"]
    for r_name, r, p in zip([r for r in RELATIVE if r != "fixed"], calibrated, holm([r.p_value for r in calibrated])):
        out[f"lengths: model at 1 from its best scale, {r_name}, loss"] = _verdict(r, float(p), "loss")
    best = [paired_comparison(*(np.concatenate([lengths[k]["oracle"][label][length]["scale"] for k in nd]) for length in ("long", "short")))
            for label in ("1", "log512 n", "ln n")]
    for label, r, p in zip(("1", "log512 n", "ln n"), best, holm([r.p_value for r in best])):
        out[f"lengths: best scale at 4n against n, model at {label}"] = {"later": "larger", "earlier": "smaller"}.get(_verdict(r, float(p), "speed"), "no difference")
