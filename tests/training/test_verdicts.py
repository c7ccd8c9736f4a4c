"""attnscale.training.verdicts: the verdicts read from the stored sweeps, and how edited
results change them.
"""

from __future__ import annotations

import gzip
import json
import shutil

from scipy.stats import binomtest
import numpy as np
import pytest

from attnscale.training import DATA, conclusions
from expect import named


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
    """The stored result files (the eight that make sweep writes) copied into ``directory``."""
    for path in DATA.glob("training_*.json"):
        shutil.copy(path, directory / path.name)
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


def test_adamw_cells_with_other_windows_of_rates_are_refused_with_the_decay_named(tmp_path):
    directory = _copy(tmp_path)
    raw = _raw("training_adamw_dot_wd0.01.json")
    cell = _dots(raw)[(16, 32)]
    cell["lrs"][0] = [2 * x for x in cell["lrs"][0]]
    _write(directory, "training_adamw_dot_wd0.01.json", raw)
    with pytest.raises(ValueError, match=r"^directory: .*decay 0\.01"):
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
    with pytest.raises(ValueError, match=named('directory')):
        conclusions(directory)


@pytest.fixture(scope="module")
def stored():
    return conclusions(DATA)


def test_verdicts_of_the_stored_results(stored):
    verdicts, counts = stored
    assert verdicts["sweep: adam 2.5 - 1, speed"] == "later" and verdicts["sweep: sgd 2.5 - 1, speed"] == "later"
    assert verdicts["sweep: adam α*(n) - 1, speed"] == "later" and verdicts["sweep: sgd α*(n) - 1, speed"] == "earlier"
    assert verdicts["rate rule: sgd, exponent -1"] == "inside" and verdicts["rate rule: adam, exponent -1"] == "outside"
    assert verdicts["lengths: model at 1, YaRN at 4n, loss"] == "higher"
    assert set(verdicts.values()) <= {"later", "earlier", "higher", "lower", "no difference", "inside", "outside", "larger", "smaller"}
    # counts are kept only where both arms are stable scales (neither 8 nor 64)
    assert counts["sweep: adam 2.5 - 1, speed"] == (28, 2, 0)
    assert not any(" 8 " in k or "- 8" in k or "from 8" in k or "64" in k or ": 8," in k for k in counts)


def test_a_changed_result_changes_its_verdict_and_compressed_files_read_the_same(tmp_path, stored):
    """Swap the steps of 2.5 and 1 in the stored Adam sweep (compressed, to read it as .gz):
    that comparison turns to 'earlier' and its counts mirror; the only other verdicts that
    move are speed verdicts that read Adam's dot-score steps at 1 or 2.5 (other scales
    against 1, the learned and AdamW arms against those two fixed scales), and no loss
    verdict moves."""
    _copy(tmp_path)
    raw = _raw("training_adam.json")
    for c in raw["cells"]:
        if c["kind"] == "dot":
            i, j = c["labels"].index("2.5"), c["labels"].index("1")
            c["steps_to_target"][i], c["steps_to_target"][j] = c["steps_to_target"][j], c["steps_to_target"][i]
    (tmp_path / "training_adam.json").unlink()
    (tmp_path / "training_adam.json.gz").write_bytes(gzip.compress(json.dumps(raw).encode()))
    verdicts, counts = conclusions(tmp_path)
    changed = {k for k in verdicts if verdicts[k] != stored[0][k]}
    assert verdicts["sweep: adam 2.5 - 1, speed"] == "earlier"
    assert counts["sweep: adam 2.5 - 1, speed"] == (2, 28, 0)
    readers = {f"sweep: adam {x} - 1, speed" for x in ("0.25", "α*(n)", "2.5", "8")} | {f"learned: dot from {x}, speed" for x in ("1", "2.5")} | {
        f"AdamW at {how}: {x}, speed" for how in ("Adam's rate", "its rate") for x in ("1", "2.5")}
    assert "sweep: adam 2.5 - 1, speed" in changed and changed <= readers, changed - readers


LENGTH_KEYS = {
    "lengths: model at 1, log ratio at 4n, loss",
    "lengths: model at 1, YaRN at 4n, loss",
    "lengths: model at 1, mean-field invariant at 4n, loss",
    "lengths: model at log512 n, log512 n at 4n, loss",
    "lengths: model at ln n, ln n at 4n, loss",
    "lengths: model at 1 from its best scale, log ratio, loss",
    "lengths: model at 1 from its best scale, YaRN, loss",
    "lengths: model at 1 from its best scale, mean-field invariant, loss",
    "lengths: best scale at 4n against n, model at 1",
    "lengths: best scale at 4n against n, model at log512 n",
    "lengths: best scale at 4n against n, model at ln n",
}


def _edit_sgd(raw: dict) -> None:
    """Best rate alpha**b in every SGD dot cell (b = -0.4, -0.6 alternately), the rate lattice
    of each scale shifted so that its best rate takes that value."""
    dots = [c for c in raw["cells"] if c["kind"] == "dot"]
    assert len(dots) == 6
    for i, c in enumerate(dots):
        b = -0.4 if i % 2 == 0 else -0.6
        for a, alpha in enumerate(c["alphas"]):
            row = c["lrs"][a]
            factor = alpha**b / row[c["best_lr"][a]]
            c["lrs"][a] = [x * factor for x in row]


def _edit_adamw(raw: dict, adam: dict) -> None:
    """AdamW (decay 1), scale 0.25: Adam's loss + 0.1 at Adam's best rate, Adam's loss - 0.1 at
    another rate, which becomes AdamW's own best."""
    adam_cells = {(c["n"], c["d"]): c for c in adam["cells"] if c["kind"] == "dot"}
    for c in raw["cells"]:
        ref = adam_cells[(c["n"], c["d"])]
        a, r = c["labels"].index("0.25"), ref["best_lr"][ref["labels"].index("0.25")]
        base = ref["final_loss"][ref["labels"].index("0.25")]
        own = r + 1 if r + 1 < len(c["lrs"][a]) else r - 1
        c["final_loss_all"][a][r] = [x + 0.1 for x in base]
        c["final_loss_all"][a][own] = [x - 0.1 for x in base]
        c["best_lr"][a] = own
        c["final_loss"][a] = list(c["final_loss_all"][a][own])


def _edit_lengths(raw: dict) -> None:
    """Best scale at 4n: half that at n for the model at ln n, twice it for the model at 1."""
    for c in raw["cells"]:
        for label, factor in (("ln n", 0.5), ("1", 2.0)):
            oracle = c["oracle"][label]
            oracle["long"]["scale"] = [factor * s for s in oracle["short"]["scale"]]


@pytest.fixture(scope="module")
def edited_verdicts(tmp_path_factory):
    """The stored results with the three edits above, and their verdicts."""
    directory = _copy(tmp_path_factory.mktemp("edited"))
    edits = {
        "training_sgd.json": _edit_sgd,
        "training_adamw_dot_wd1.json": lambda raw: _edit_adamw(raw, _raw("training_adam.json")),
        "training_lengths.json": _edit_lengths,
    }
    for name, edit in edits.items():
        raw = _raw(name)
        edit(raw)
        _write(directory, name, raw)
    return conclusions(directory)[0]


def test_the_length_arm_has_its_eleven_verdicts_and_ninety_five_in_all(stored):
    assert len(stored[0]) == 95
    assert {k for k in stored[0] if k.startswith("lengths: ")} == LENGTH_KEYS


def test_from_the_best_scale_at_n_every_rule_still_costs_loss_as_the_chapter_says(stored):
    for rule in ("log ratio", "YaRN", "mean-field invariant"):
        assert stored[0][f"lengths: model at 1 from its best scale, {rule}, loss"] == "higher", rule


def test_the_best_scale_at_4n_is_not_larger_for_the_models_at_1_and_log512(stored):
    assert stored[0]["lengths: best scale at 4n against n, model at 1"] == "no difference"
    assert stored[0]["lengths: best scale at 4n against n, model at log512 n"] == "no difference"


def test_an_exponent_near_one_half_puts_that_rule_inside_and_minus_one_outside(edited_verdicts):
    assert edited_verdicts["rate rule: sgd, exponent -1/2"] == "inside"
    assert edited_verdicts["rate rule: sgd, exponent -1"] == "outside"


def test_the_decay_grid_compares_0_25_at_adams_rate_not_at_its_own(edited_verdicts):
    assert edited_verdicts["decay 1: 0.25 at Adam's rate, loss"] == "higher"


def test_a_best_scale_smaller_or_larger_at_4n_in_every_seed_is_named_so(edited_verdicts):
    assert edited_verdicts["lengths: best scale at 4n against n, model at ln n"] == "smaller"
    assert edited_verdicts["lengths: best scale at 4n against n, model at 1"] == "larger"
