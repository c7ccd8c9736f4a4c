"""Chapter 10's conclusions as verdicts (attnscale.training.verdicts): what they say on
the stored results, that they see a changed result, and that compressed files read
the same."""

import gzip
import json
import shutil

import numpy as np
import pytest

from attnscale.training import DATA, conclusions, load_sweep, paired_comparison
from attnscale.training.verdicts import _FILES


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


def test_a_verdict_by_hand(stored):
    """One verdict recomputed without the module: 2.5 against 1 with Adam, pooled over the six
    dot cells, is later in most pairs and its sign test, after Holm over the twelve speed
    comparisons, stays below 0.05 (its raw p times 12 already does)."""
    cells = [c for c in load_sweep(DATA / "training_adam.json")["cells"] if c["kind"] == "dot"]
    labels = cells[0]["labels"]
    a = np.concatenate([c["steps_to_target"][labels.index("2.5")] for c in cells])
    b = np.concatenate([c["steps_to_target"][labels.index("1")] for c in cells])
    r = paired_comparison(a, b, resamples=100)
    assert r.later > r.earlier and 12 * r.p_value < 0.05
    assert stored[0]["sweep: adam 2.5 - 1, speed"] == "later"


def test_a_changed_result_changes_its_verdict_and_compressed_files_read_the_same(tmp_path, stored):
    """Swap the steps of 2.5 and 1 in the stored Adam sweep (compressed, to read it as .gz):
    that comparison turns to 'earlier' and its counts mirror; the only other verdicts that
    move are speed verdicts that read Adam's dot-score steps at 1 or 2.5 (other scales
    against 1, the learned and AdamW arms against those two fixed scales), and no loss
    verdict moves."""
    for name in _FILES:
        shutil.copy(DATA / name, tmp_path / name)
    raw = json.loads((DATA / "training_adam.json").read_text())
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


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="directory"):
        conclusions(tmp_path)
