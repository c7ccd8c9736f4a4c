"""What a re-run of a stored training cell can be expected to reproduce on
another CPU, and the comparison that the training chapter and the tests share.

OpenBLAS picks a kernel per CPU, so the last bits of every matrix product
change from one machine to another, and training amplifies them. Measured on
the smallest cells of the stored sweep (n = 16, d = 32: dot scores with Adam,
SGD, AdamW and a learned scale, cosine scores with Adam and a learned scale;
stored values made under this machine's default kernel, SkylakeX), re-run under
``OPENBLAS_CORETYPE`` = Prescott, Haswell and SkylakeX, each with one and two
threads:

* the windows of rates, the best rate of every scale and the steps to the target
  accuracy at it came out identical every time;
* *stable runs*, every scale except the largest at rates up to its best one,
  reproduced their loss areas (test and validation sets) and curves to at most
  4.9e-6 relative, which is the rounding of the six significant digits the sweep
  stores (under SkylakeX everything reproduced to that rounding);
* *chaotic runs*, the largest scale of each kind (8 for dot scores, 64 for cosine
  scores) at every rate and every scale at rates above its best, differed by up
  to 14% (loss area) and 113% (final loss) per seed, and their median over seeds by
  up to 14.5%; a learned scale tames them (the learned cells' runs at 8 and 64
  agreed to 2% in final loss).

The whole sweep rerun under Haswell (the training appendix, ``sec-training-kernels``) shows that the
classification, made on the smallest cells, is not perfect on the larger ones: of 534 runs
(a cell, scale and rate, five seeds each) both sweeps call stable, 531 agreed in loss area
to 1.6e-5 (530 exactly, to the digits stored) and three differed by 1.4e-4 to 4.7e-3 (their
final losses by more); and in one cell (SGD, n = 16, d = 64) the best rate of the
scale 0.25 changed (10 under SkylakeX, 3 under Haswell), its runs at 10, next to a rate at
which training fails, being chaotic. The tests re-run only the smallest cells, where the
classification held; for the full sweep, compare verdicts
(:func:`attnscale.training.verdicts.conclusions`), not runs.

The tolerances below are set from those measurements: :data:`STABLE_RTOL` is
about twenty times the stable spread, :data:`CHAOTIC_MEDIAN_RTOL` about twice
the largest median spread. Chaotic runs are compared through the median over
seeds, never seed by seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import _validate as v

__all__ = ["STABLE_RTOL", "CHAOTIC_MEDIAN_RTOL", "CHAOTIC_LABELS", "stable_runs", "Comparison", "compare_cells"]

#: relative tolerance for stable runs (measured spread 4.9e-6, storage rounding included)
STABLE_RTOL = 1e-4
#: relative tolerance for the median over seeds of a chaotic run (measured spread up to 0.145)
CHAOTIC_MEDIAN_RTOL = 0.3
#: the scale labels whose runs are chaotic at every learning rate (the largest scale of each kind)
CHAOTIC_LABELS = ("8", "64")

_KEYS = ("labels", "best_lr", "steps_to_target", "loss_area", "loss")


def _cell(cell: object, name: str) -> dict:
    """A training cell as returned by run_config or load_sweep."""
    return v.mapping(cell, name, _KEYS)


def stable_runs(cell: dict) -> NDArray[np.bool_]:
    """Mask of shape (scales, learning rates): True for the runs expected to
    reproduce to rounding error on another CPU (a scale not in :data:`CHAOTIC_LABELS`,
    at a rate no larger than its best one), False for the chaotic ones. The
    classification held on the smallest cells; on the full sweep a few runs it calls
    stable are not (see the module's description)."""
    cell = _cell(cell, "cell")
    scales, rates = np.shape(cell["loss_area"])[:2]
    best = np.asarray(cell["best_lr"], dtype=int)
    mask = np.arange(rates)[None, :] <= best[:, None]
    calm = np.array([label not in CHAOTIC_LABELS for label in cell["labels"]])
    if calm.size != scales:
        raise ValueError(f"cell has {calm.size} labels for {scales} scales")
    return mask & calm[:, None]


@dataclass(frozen=True)
class Comparison:
    """A fresh run of a cell against its stored results (see :func:`compare_cells`)."""

    same_best_rates: bool
    same_steps_to_target: bool
    stable_area_error: float
    stable_curve_error: float
    chaotic_median_error: float
    stable_count: int
    chaotic_count: int

    @property
    def reproduces(self) -> bool:
        return (self.same_best_rates and self.same_steps_to_target and self.stable_area_error <= STABLE_RTOL
                and self.stable_curve_error <= STABLE_RTOL and self.chaotic_median_error <= CHAOTIC_MEDIAN_RTOL)


def _largest_relative(a: NDArray, b: NDArray) -> float:
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b) / np.abs(b)))


def compare_cells(fresh: dict, stored: dict) -> Comparison:
    """Compare a fresh run of a training cell with the stored one, in the
    quantities that survive a change of BLAS kernel: the windows of rates, the best
    rates and the steps to target (exactly), the stable runs' loss areas (test
    and validation sets) and best-rate curves (relative error), and the chaotic
    runs' medians over seeds."""
    fresh, stored = _cell(fresh, "fresh"), _cell(stored, "stored")
    if list(fresh["labels"]) != list(stored["labels"]) or np.shape(fresh["loss_area"]) != np.shape(stored["loss_area"]):
        raise ValueError("fresh and stored must be the same cell (same scales, rates and seeds)")
    mask = stable_runs(stored)
    area_f, area_s = np.asarray(fresh["loss_area"], float), np.asarray(stored["loss_area"], float)
    if "val_area" in stored:  # the validation set's areas, which choose the rate, as well as the test set's
        area_f = np.concatenate([area_f, np.asarray(fresh["val_area"], float)], axis=-1)
        area_s = np.concatenate([area_s, np.asarray(stored["val_area"], float)], axis=-1)
    same_rates = "lrs" not in stored or bool(np.allclose(np.asarray(fresh["lrs"], float), np.asarray(stored["lrs"], float), rtol=1e-12, atol=0))
    calm = np.array([label not in CHAOTIC_LABELS for label in stored["labels"]])
    curves_f, curves_s = np.asarray(fresh["loss"], float)[calm], np.asarray(stored["loss"], float)[calm]
    med_f, med_s = np.median(area_f, axis=-1), np.median(area_s, axis=-1)
    return Comparison(
        same_best_rates=same_rates and bool(np.array_equal(fresh["best_lr"], stored["best_lr"])),
        same_steps_to_target=bool(np.array_equal(fresh["steps_to_target"], stored["steps_to_target"])),
        stable_area_error=_largest_relative(area_f[mask], area_s[mask]),
        stable_curve_error=_largest_relative(curves_f, curves_s),
        chaotic_median_error=_largest_relative(med_f[~mask], med_s[~mask]),
        stable_count=int(mask.sum()),
        chaotic_count=int((~mask).sum()),
    )
