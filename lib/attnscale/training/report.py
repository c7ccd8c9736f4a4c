"""How chapter 10 prints the sweep: number formats (for tables, and for prose: p-values and
small numbers as ``8.7 × 10⁻⁷``), the per-cell results table, the loss-curve figure, the
ranking figure (steps to the target and final loss, the quantities the chapter ranks scales
by) and the tables of paired comparisons. Display only: every number comes from
:mod:`attnscale.training.stats` and :mod:`attnscale.training.analysis`. Matplotlib is
imported only when a figure is drawn."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate as v
from ..page import scientific
from .loop import _optimizer
from .model import _kind
from .analysis import _steps
from .stats import PairedComparison, best_rates, final_loss_summary
from .sweep import SWEEP

__all__ = ["COLORS", "p_text", "steps_text", "loss_text", "sci_words", "p_words", "scale_name", "summary_rows", "results_table", "loss_curves",
           "ranking_figure", "speed_table", "loss_table"]

#: one colour per scale of a cell, in the cell's order
COLORS = ("tab:blue", "tab:green", "tab:orange", "tab:red", "tab:purple")

_CELL = ("labels", "alphas", "lrs", "best_lr", "steps_to_target", "final_loss")


def p_text(p: float) -> str:
    """A p-value: ``1.2e-05`` below 0.001, else two significant digits."""
    p = v.real_number(p, "p")
    if not 0 <= p <= 1:
        raise ValueError(f"p must lie in [0, 1], got {p!r}")
    return f"{p:.1e}" if p < 0.001 else f"{p:.2g}"


def steps_text(x: float) -> str:
    """A difference in steps (arm minus reference): signed whole steps, ``0``, ``never`` when
    the arm never reached the target (``+inf``), ``ref. never`` when only the reference did not
    (``-inf``)."""
    if isinstance(x, (bool, str)) or x is None or not isinstance(x, (int, float, np.number)) or math.isnan(x):
        raise TypeError(f"x must be a real number or an infinity, got {x!r}")
    if math.isinf(x):
        return "never" if x > 0 else "ref. never"
    return "0" if x == 0 else f"{x:+.0f}"


def loss_text(x: float) -> str:
    """A difference in loss: three decimals, or two significant digits below 5e-4."""
    x = v.real_number(x, "x")
    return f"{x:+.3f}" if abs(x) >= 0.0005 or x == 0 else f"{x:+.1e}"




def sci_words(x: float, digits: int = 2) -> str:
    """A positive number for prose: ``1.4 × 10⁻⁴`` (``digits`` significant digits, Unicode
    superscripts, so the text needs no maths), or the plain ``digits``-significant form
    (``0.0059``, ``12``) from 0.001 up to ``10**digits``."""
    x = v.real_number(x, "x")
    digits = v.integer_at_least(digits, "digits", 1)
    if x <= 0:
        raise ValueError(f"x must be > 0, got {x!r}")
    if 1e-3 <= x < 10**digits:
        return f"{x:.{digits}g}"
    return scientific(x, digits, plain=False, spaced=True)


def p_words(p: float) -> str:
    """A p-value for prose: as :func:`p_text` (two significant digits; 1 when it is 1), but
    below 0.001 written ``8.7 × 10⁻⁷`` rather than ``8.7e-07``."""
    p = v.real_number(p, "p")
    if not 0 < p <= 1:
        raise ValueError(f"p must lie in (0, 1], got {p!r}")
    return sci_words(p) if p < 0.001 else p_text(p)


def scale_name(cell: dict[str, Any], a: int) -> str:
    """The legend name of scale ``a`` of a cell: ``α = 2.5`` for a number, ``α*(n) = 1.79`` for a rule."""
    cell = v.mapping(cell, "cell", ("labels", "alphas"))
    a = v.integer_at_least(a, "a", 0)
    if a >= len(cell["labels"]):
        raise ValueError(f"a must index one of the cell's {len(cell['labels'])} scales, got {a}")
    label = cell["labels"][a]
    return f"α = {label}" if label.replace(".", "").isdigit() else f"{label} = {cell['alphas'][a]:.3g}"


def summary_rows(cell: dict[str, Any]) -> list[tuple]:
    """One row per scale of a cell: label, alpha, best rate (``†`` at an edge of the grid),
    seeds that reached the target, median and range of steps to it, final loss and (where
    the cell has its accuracy curves) final accuracy, mean ± s.d. over seeds."""
    cell = v.mapping(cell, "cell", _CELL)
    rows = []
    last = np.shape(cell["lrs"])[-1] - 1
    summary = final_loss_summary(cell["final_loss"])
    all_steps = _steps(cell["steps_to_target"], "cell['steps_to_target']")
    best_lr = np.asarray(cell["best_lr"])
    if best_lr.shape != (len(cell["labels"]),):
        raise ValueError(f"cell['best_lr'] must hold one index into lrs (0 to {last}) per scale, got {best_lr.tolist()}")
    rates = best_rates(cell)
    accuracy = final_loss_summary(np.asarray(cell["accuracy"], dtype=float)[..., -1]) if "accuracy" in cell else None
    for a, label in enumerate(cell["labels"]):
        best = int(best_lr[a])
        steps = all_steps[a]
        reached = int(np.isfinite(steps).sum())
        med = np.median(steps)
        span = f"{steps.min():.0f}–{steps.max():.0f}" if reached == steps.size else (f"{steps.min():.0f}–never" if reached else "never")
        rows.append((label, cell["alphas"][a], f"{rates[a]:g}" + (" †" if best in (0, last) else ""), f"{reached}/{steps.size}",
                     f"{med:.0f}" if np.isfinite(med) else "—", span, f"{summary['mean'][a]:.3f} ± {summary['std'][a]:.3f}",
                     "—" if accuracy is None else f"{accuracy['mean'][a]:.3f} ± {accuracy['std'][a]:.3f}"))
    return rows


def _cells(cells: object) -> dict:
    if not isinstance(cells, dict):
        raise TypeError(f"cells must be a dict keyed by (optimizer, kind, n, d), got {type(cells).__name__}")
    return cells


def _cell(cells: dict, opt: str, kind: str, n: int, d: int) -> dict:
    opt, kind = _optimizer(opt), _kind(kind)
    if (opt, kind, n, d) not in cells:
        raise ValueError(f"cells has no cell (optimizer {opt!r}, kind {kind!r}, n = {n}, d = {d})")
    return cells[(opt, kind, n, d)]


def results_table(cells: dict, opt: str, kind: str) -> str:
    """A Markdown table of :func:`summary_rows` for every (n, d) cell of one optimiser and kind."""
    cells = _cells(cells)
    lines = ["| n | d | scale | α | best lr | reached | steps to 80% (median) | range | final loss | final accuracy |", "|---|---|---|---|---|---|---|---|---|---|"]
    for n in SWEEP["ns"]:
        for d in SWEEP["ds"]:
            for label, a, lr, reached, med, span, final, acc in summary_rows(_cell(cells, opt, kind, n, d)):
                lines.append(f"| {n} | {d} | {label} | {a:.3g} | {lr} | {reached} | {med} | {span} | {final} | {acc} |")
    return "\n".join(lines)


def loss_curves(cells: dict, opt: str, kind: str, title: str):
    """The held-out loss curves of one optimiser and kind: one panel per (n, d), per scale
    the median over seeds at its best rate and a min-to-max band. Returns the figure."""
    from ..plotting import figure

    cells = _cells(cells)
    title = v.text(title, "title")
    fig, axes = figure(ncols=2, nrows=3, width=6.9, height=8.2)
    for row, n in enumerate(SWEEP["ns"]):
        for col, d in enumerate(SWEEP["ds"]):
            ax = axes[row * 2 + col]
            c = _cell(cells, opt, kind, n, d)
            for a in range(len(c["labels"])):
                curves = np.asarray(c["loss"][a])
                ax.fill_between(c["step"], curves.min(axis=0), curves.max(axis=0), color=COLORS[a], alpha=0.2, lw=0)
                ax.plot(c["step"], np.median(curves, axis=0), color=COLORS[a], lw=1.5, label=f"{scale_name(c, a)}, lr {best_rates(c)[a]:g}")
            ax.set_yscale("log")
            ax.set_ylim(2e-3, 2.5)
            ax.set_title(f"n = {n}, d = {d}", fontsize=9)
            ax.legend(fontsize=8, loc="lower left")
            if row == 2:
                ax.set_xlabel("step")
            if col == 0:
                ax.set_ylabel("held-out loss")
    fig.suptitle(title + " (median over 5 seeds; band: min to max)", fontsize=10)
    return fig


def ranking_figure(cells: dict, kind: str):
    """The two quantities chapter 10 ranks the scales of one kind by, for both optimisers:
    the steps to the target accuracy (top row) and the final held-out (test) loss (bottom
    row) of each scale at its best rate, median over seeds, both on log axes, one line per
    (n, d) cell (colour: n; solid d = 32, dashed d = 64); Adam left, SGD right. A median run
    that never reached the target is drawn on the dotted line "never", above the last step.
    One legend, below the panels. Returns the figure."""
    from ..plotting import figure

    cells = _cells(cells)
    kind = _kind(kind)
    fig, axes = figure(ncols=2, nrows=2, width=6.9, height=6.8)
    never = 1.6 * SWEEP["steps"]
    shades = ("tab:blue", "tab:orange", "tab:green")
    handles = []
    for col, opt in enumerate(("adam", "sgd")):
        top, bottom = axes[col], axes[2 + col]
        labels: list[str] = []
        for i, n in enumerate(SWEEP["ns"]):
            for d in SWEEP["ds"]:
                c = _cell(cells, opt, kind, n, d)
                labels = list(c["labels"])
                steps = np.median(_steps(c["steps_to_target"], "cell['steps_to_target']"), axis=-1)
                loss = np.median(np.asarray(c["final_loss"], dtype=float), axis=-1)
                x = np.arange(len(labels))
                style = {"color": shades[i % len(shades)], "ls": "-" if d == SWEEP["ds"][0] else "--", "marker": "o", "ms": 4, "lw": 1.3}
                line, = top.plot(x, np.where(np.isfinite(steps), steps, never), label=f"n = {n}, d = {d}", **style)
                bottom.plot(x, loss, **style)
                if col == 0:
                    handles.append(line)
        for ax in (top, bottom):
            ax.set_yscale("log")
            ax.set_xticks(range(len(labels)), labels)
            ax.set_xlabel("scale α")
        top.axhline(never, color="gray", lw=0.8, ls=":")
        top.text(0.98, never * 1.08, "never", fontsize=8, ha="right", va="bottom", color="0.3", transform=top.get_yaxis_transform())
        top.set_ylim(top=2.4 * SWEEP["steps"])
        top.set_title(f"{opt}: steps to {SWEEP['target']:.0%} accuracy", fontsize=9)
        bottom.set_title(f"{opt}: final test loss", fontsize=9)
        if col == 0:
            top.set_ylabel("steps (median over seeds)")
            bottom.set_ylabel("loss (median over seeds)")
    fig.legend(handles=handles, fontsize=8, loc="outside lower center", ncol=3, frameon=False)
    return fig


def _family(tests: object, holm_p: object) -> tuple[dict, dict]:
    def whole(t: object) -> bool:
        return (isinstance(t, dict) and isinstance(t.get("speed"), PairedComparison) and isinstance(t.get("loss"), PairedComparison)
                and "inside" in t and (t["inside"] is None or isinstance(t["inside"], PairedComparison)))

    if not isinstance(tests, dict) or not tests or not all(whole(t) for t in tests.values()):
        raise TypeError("tests must map (optimizer, arm, reference) to compare_arms' dict of PairedComparison (speed, loss, inside)")
    if not isinstance(holm_p, dict) or set(holm_p) != set(tests):
        raise ValueError("holm_p must hold one adjusted p-value per comparison in tests")
    return tests, holm_p


def _same_pairs(t: dict) -> bool:
    """True when the comparison without edge cells kept every pair (it is then the full test)."""
    inner, r = t.get("inside"), t["speed"]
    return inner is not None and inner.pairs == r.pairs


def speed_table(tests: dict, holm_p: dict) -> str:
    """Markdown table of the paired comparisons of steps to the target, with Holm-adjusted
    p-values, and, when some best rate of the family sits at an edge of its window, the
    comparison over the pairs whose best rates both lie inside (the column is left out when
    no pair is dropped: it would repeat the test)."""
    tests, holm_p = _family(tests, holm_p)
    edges = not all(_same_pairs(t) for t in tests.values())
    rows = ["| optimiser | arm − reference | later / earlier / tied | sign test p (Holm) | median difference, steps [95% interval] | P(later) [95% interval] "
            + ("| edge cells left out: later / earlier / tied of pairs, p |" if edges else "|"), "|---|---|---|---|---|---|" + ("---|" if edges else "")]
    for k, t in tests.items():
        r, inner = t["speed"], t["inside"]
        rest = "no pairs left" if inner is None else f"{inner.later} / {inner.earlier} / {inner.tied} of {inner.pairs}, {p_text(inner.p_value)}"
        rows.append(f"| {k[0]} | {k[1]} − {k[2]} | {r.later} / {r.earlier} / {r.tied} | {p_text(r.p_value)} ({p_text(holm_p[k])}) "
                    f"| {steps_text(r.median_difference)} [{steps_text(r.ci[0])}, {steps_text(r.ci[1])}] | {r.prob_later:.2f} [{r.prob_later_ci[0]:.2f}, {r.prob_later_ci[1]:.2f}] |"
                    + (f" {rest} |" if edges else ""))
    return "\n".join(rows)


def loss_table(tests: dict, holm_p: dict) -> str:
    """Markdown table of the paired comparisons of final held-out loss, with Holm-adjusted p-values."""
    tests, holm_p = _family(tests, holm_p)
    rows = ["| optimiser | arm − reference | higher / lower / tied | sign test p (Holm) | median difference [95% interval] | P(higher) [95% interval] |", "|---|---|---|---|---|---|"]
    for k, t in tests.items():
        r = t["loss"]
        rows.append(f"| {k[0]} | {k[1]} − {k[2]} | {r.later} / {r.earlier} / {r.tied} | {p_text(r.p_value)} ({p_text(holm_p[k])}) "
                    f"| {loss_text(r.median_difference)} [{loss_text(r.ci[0])}, {loss_text(r.ci[1])}] | {r.prob_later:.2f} [{r.prob_later_ci[0]:.2f}, {r.prob_later_ci[1]:.2f}] |")
    return "\n".join(rows)
