"""Chapter 10's verdicts (attnscale.training.verdicts.conclusions): the names of the AdamW
families' verdicts, the counts kept for the learned and AdamW comparisons, the closed ends
of the rate rule's interval, the decay grid's comparison at Adam's rate, and the refusals
(survivors of the mutation run over attnscale.training.verdicts not examined before; see
tests/MUTANTS.md).

The independent references:

- the names, written out by hand from the chapter's families: "within AdamW: x - 1" for the
  four scales other than 1, and the decay grid "decay 0.1 / 0.01 / 1: ..." (four each);
- the counts of (later, earlier, tied) pairs, counted here from the stored JSON without the
  library: each seed's value of one arm against the other's, ``None`` (never reached) as
  infinity, per cell looking the scale up by its label; the learned scale against the same
  scale fixed (Adam's sweep), AdamW (decay 0.1) at Adam's best rate against Adam (its
  ``*_all`` entry at Adam's ``best_lr``), and within AdamW each scale against 1. Counts are
  kept only between stable scales, i.e. neither 8 nor 64 (the module's description). Where a
  verdict is pinned, its sign test p is scipy's ``binomtest`` on those counts, and Holm's
  adjusted p is at most (family size) x p;
- the rate rule on sweeps edited so that each dot cell's least-squares exponent is exactly
  -1 (SGD: alphas 2**k, k = -2..2, best rate 2**-k, so log(rate) = -log(alpha) to the last
  bit) or exactly -1/2 (Adam: alphas 4**k, best rate 2**-k): the six exponents are equal, the
  Student-t interval is the single point -1 (or -1/2), and "inside" means low <= x <= high,
  so that point is inside. Both sides of each cell's slope are the same dot products up to
  an exact sign and power of two, so this holds under any BLAS kernel (the test checks the
  logarithms' exactness first);
- the decay grid at decay 0.01, scale 8, edited so that at Adam's best rate AdamW never
  reaches the target and at another rate (made its own best) reaches it at step 1: at
  Adam's rate it is later wherever Adam reached the target (26 of 30 seeds, the others tie),
  sign test p = 2**-25;
- the type check's message, and the refusal of AdamW cells whose windows of rates are not
  Adam's, as the module writes them (argument name first, the decay named).

The last two tests pin a fault this work found and mended (tests/MUTANTS.md): the Adam best
rates the AdamW comparisons reuse were looked up at the position of each scale in the first
cell, not in each cell, so a sweep whose cells list their scales in different orders got
other scales' rates. Reversing one cell's scales in every file (the same data) must now give
the hand counts, and a cell that lacks one of the scales is refused by name.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from expect import whole
from scipy.stats import binomtest

from attnscale.training import DATA, conclusions
from attnscale.training.verdicts import _FILES

CHAOTIC = {"8", "64"}
MEASURES = (("speed", "steps_to_target"), ("loss", "final_loss"))
NAMES = ("training_adam.json", "training_adamw_dot.json", "training_adamw_dot_wd0.01.json", "training_adamw_dot_wd1.json")
#: the entries of a stored cell indexed by scale first (the sweep's format)
PER_SCALE = ("labels", "alphas", "lrs", "slides", "val_area", "loss_area", "final_loss_all", "steps_to_target_all", "diverged_at",
             "best_lr", "steps_to_target", "final_loss", "loss", "accuracy", "half_l1")


def _raw(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def _dots(raw: dict, kind: str = "dot") -> dict:
    return {(c["n"], c["d"]): c for c in raw["cells"] if c["kind"] == kind}


def _values(xs: list) -> list[float]:
    return [float("inf") if x is None else float(x) for x in xs]


def _count(a: list[float], b: list[float]) -> tuple[int, int, int]:
    later = sum(x > y for x, y in zip(a, b))
    earlier = sum(x < y for x, y in zip(a, b))
    return later, earlier, len(a) - later - earlier


def _arm(cells: dict, label: str, key: str, rates: dict | None = None) -> list[float]:
    """One scale's values over the cells (looked up by label in each), at ``rates[(n, d)]`` if given."""
    out = []
    for k, c in sorted(cells.items()):
        a = c["labels"].index(label)
        out += _values(c[key][a] if rates is None else c[f"{key}_all"][a][rates[k]])
    return out


def _adam_rates(label: str) -> dict:
    return {k: c["best_lr"][c["labels"].index(label)] for k, c in _dots(_raw("training_adam.json")).items()}


def _copy(directory):
    for name in _FILES:
        shutil.copy(DATA / name, directory / name)
    return directory


def _write(directory, name: str, raw: dict) -> None:
    (directory / name).write_text(json.dumps(raw, ensure_ascii=False))


def _exact_exponent(raw: dict, base: float) -> None:
    """Every dot cell: alphas base**k (k = -2..2), best rate 2**-k (the rest of each row scaled along)."""
    for c in _dots(raw).values():
        assert len(c["labels"]) == 5
        c["alphas"] = [base**k for k in range(-2, 3)]
        for a, k in enumerate(range(-2, 3)):
            row, best = c["lrs"][a], c["best_lr"][a]
            c["lrs"][a] = [x * 2.0**-k / row[best] for x in row]
            c["lrs"][a][best] = 2.0**-k


@pytest.fixture(scope="module")
def edited(tmp_path_factory):
    """The stored results with SGD's exponents exactly -1, Adam's exactly -1/2 (the AdamW
    files given Adam's edited rates, so that they still share its windows) and, at decay 0.01,
    scale 8 never reaching the target at Adam's best rate and reaching it at step 1 at its own."""
    ks = np.arange(-2.0, 3.0)
    assert np.array_equal(np.log(2.0**-ks), -np.log(2.0**ks)) and np.array_equal(np.log(4.0**ks), 2 * np.log(2.0**ks))
    directory = _copy(tmp_path_factory.mktemp("edited"))
    sgd, adam = _raw("training_sgd.json"), _raw("training_adam.json")
    _exact_exponent(sgd, 2.0)
    _exact_exponent(adam, 4.0)
    _write(directory, "training_sgd.json", sgd)
    _write(directory, "training_adam.json", adam)
    adam_dots = _dots(adam)
    for name in NAMES[1:]:
        raw = _raw(name)
        for k, c in _dots(raw).items():
            c["lrs"] = adam_dots[k]["lrs"]
            if name == "training_adamw_dot_wd0.01.json":
                a, ref = c["labels"].index("8"), adam_dots[k]
                r = ref["best_lr"][ref["labels"].index("8")]
                own = r + 1 if r + 1 < len(c["lrs"][a]) else r - 1
                seeds = len(c["steps_to_target"][a])
                c["steps_to_target_all"][a][r] = [None] * seeds
                c["steps_to_target_all"][a][own] = [1.0] * seeds
                c["best_lr"][a] = own
                c["steps_to_target"][a] = [1.0] * seeds
        _write(directory, name, raw)
    return conclusions(directory)


def test_an_exponent_of_exactly_minus_one_in_every_cell_is_inside_the_interval_at_minus_one(edited):
    verdicts = edited[0]
    assert verdicts["rate rule: sgd, exponent -1"] == "inside"
    assert verdicts["rate rule: sgd, exponent -1/2"] == "outside"


def test_an_exponent_of_exactly_minus_one_half_in_every_cell_is_inside_the_interval_at_minus_one_half(edited):
    verdicts = edited[0]
    assert verdicts["rate rule: adam, exponent -1/2"] == "inside"
    assert verdicts["rate rule: adam, exponent -1"] == "outside"


def test_the_decay_grid_compares_scale_8_at_adams_rate_not_at_its_own(edited):
    adam = _dots(_raw("training_adam.json"))
    reached = sum(np.isfinite(_values(c["steps_to_target"][c["labels"].index("8")])).sum() for c in adam.values())
    assert reached == 26 and binomtest(26, 26).pvalue < 0.05
    assert edited[0]["decay 0.01: 8 at Adam's rate, speed"] == "later"


def test_the_decay_grid_and_within_adamw_verdicts_have_their_names(edited):
    verdicts = edited[0]
    grid = {f"decay {lam}: {x} - 1, speed" for lam in ("0.1", "0.01", "1") for x in ("2.5", "α*(n)")}
    grid |= {f"decay {lam}: 8 at Adam's rate, speed" for lam in ("0.1", "0.01", "1")}
    grid |= {f"decay {lam}: 0.25 at Adam's rate, loss" for lam in ("0.1", "0.01", "1")}
    assert {k for k in verdicts if k.startswith("decay ")} == grid
    within = {f"within AdamW: {x} - 1, {what}" for x in ("0.25", "α*(n)", "2.5", "8") for what in ("speed", "loss")}
    assert {k for k in verdicts if "within" in k.lower()} == within


def test_within_adamw_counts_each_scale_against_1_at_their_own_rates(edited):
    verdicts, counts = edited
    adamw = _dots(_raw("training_adamw_dot.json"))
    for x in ("0.25", "α*(n)", "2.5"):
        for what, key in MEASURES:
            assert counts[f"within AdamW: {x} - 1, {what}"] == _count(_arm(adamw, x, key), _arm(adamw, "1", key)), (x, what)
    later, earlier, _ = _count(_arm(adamw, "2.5", "steps_to_target"), _arm(adamw, "1", "steps_to_target"))
    assert later > earlier and 4 * binomtest(later, later + earlier).pvalue < 0.05
    assert verdicts["within AdamW: 2.5 - 1, speed"] == "later"
    assert not any(k.startswith("within AdamW: 8") for k in counts)


def test_the_learned_scales_keep_their_counts_against_the_same_scale_fixed(edited):
    counts = edited[1]
    adam = _raw("training_adam.json")
    for kind in ("dot", "cosine"):
        learned, fixed = _dots(_raw(f"training_learned_{kind}.json"), kind), _dots(adam, kind)
        labels = next(iter(fixed.values()))["labels"]
        for label in labels:
            for what, key in MEASURES:
                name = f"learned: {kind} from {label}, {what}"
                if label in CHAOTIC:
                    assert name not in counts
                else:
                    assert counts[name] == _count(_arm(learned, label, key), _arm(fixed, label, key)), name


def test_adamw_at_adams_rate_is_read_at_adams_best_rate(edited):
    verdicts, counts = edited
    adam, adamw = _dots(_raw("training_adam.json")), _dots(_raw("training_adamw_dot.json"))
    for x in ("0.25", "1", "α*(n)", "2.5"):
        for what, key in MEASURES:
            expected = _count(_arm(adamw, x, key, _adam_rates(x)), _arm(adam, x, key))
            assert counts[f"AdamW at Adam's rate: {x}, {what}"] == expected, (x, what)
    later, earlier, _ = _count(_arm(adamw, "2.5", "steps_to_target", _adam_rates("2.5")), _arm(adam, "2.5", "steps_to_target"))
    assert earlier > later and 5 * binomtest(later, later + earlier).pvalue < 0.05
    assert verdicts["AdamW at Adam's rate: 2.5, speed"] == "earlier"


def test_a_directory_of_another_type_is_refused_with_its_type_named():
    with pytest.raises(TypeError, match=r"^directory must be a str or Path, got float$"):
        conclusions(3.0)


def test_adamw_cells_with_other_windows_of_rates_are_refused_with_the_decay_named(tmp_path):
    directory = _copy(tmp_path)
    raw = _raw("training_adamw_dot_wd0.01.json")
    cell = _dots(raw)[(16, 32)]
    cell["lrs"][0] = [2 * x for x in cell["lrs"][0]]
    _write(directory, "training_adamw_dot_wd0.01.json", raw)
    message = "directory: the AdamW cells at decay 0.01 do not share Adam's windows of rates"
    with pytest.raises(ValueError, match=whole(message)):
        conclusions(directory)


def test_the_order_in_which_a_cell_lists_its_scales_does_not_change_the_adamw_counts(tmp_path):
    directory = _copy(tmp_path)
    for name in NAMES:
        raw = _raw(name)
        cell = _dots(raw)[(16, 64)]
        for key in PER_SCALE:
            cell[key] = cell[key][::-1]
        _write(directory, name, raw)
    counts = conclusions(directory)[1]
    adam, adamw = _dots(_raw("training_adam.json")), _dots(_raw("training_adamw_dot.json"))
    for x in ("0.25", "1", "α*(n)", "2.5"):
        for what, key in MEASURES:
            expected = _count(_arm(adamw, x, key, _adam_rates(x)), _arm(adam, x, key))
            assert counts[f"AdamW at Adam's rate: {x}, {what}"] == expected, (x, what)


def test_an_adamw_cell_without_one_of_adams_scales_is_refused_by_name(tmp_path):
    directory = _copy(tmp_path)
    raw = _raw("training_adamw_dot_wd0.01.json")
    cell = _dots(raw)[(64, 32)]
    cell["labels"] = [("9" if x == "8" else x) for x in cell["labels"]]
    _write(directory, "training_adamw_dot_wd0.01.json", raw)
    with pytest.raises(ValueError, match=r"^directory: the Adam and AdamW dot cells must hold the same scales .*"
                                         r"cell \(n, d\) = \(64, 32\) holds \['0\.25', '1', .*'9'\]$"):
        conclusions(directory)
