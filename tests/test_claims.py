"""The claims register: complete, recomputed, consistent, and linked."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from attnscale.claims import RECOMPUTE, evaluate_register, load_register, numbers_of

ROOT = Path(__file__).resolve().parents[1]
REGISTER = ROOT / "chapters" / "claims.yml"
# The notes live in shared/ beside the repository (as in CI); ATTNSCALE_SEEDS overrides.
SEEDS = Path(os.environ.get("ATTNSCALE_SEEDS", ROOT.parent / "shared" / "seeds"))
RECORDS = load_register(REGISTER)


def test_every_checkable_record_names_a_recomputation():
    for rec in RECORDS:
        if rec["verdict"] != "not checkable" and not rec.get("checked_against"):
            assert rec["recompute"] in RECOMPUTE, rec["id"]


def test_every_recomputation_is_used_by_a_record():
    used = {r.get("recompute") for r in RECORDS}
    assert sorted(set(RECOMPUTE) - used) == []


def test_a_verdict_read_in_a_paper_carries_no_number():
    """Numbers from a paper go through published_values; only statements about a paper's
    content may be settled by reading it (checked_against), and those carry no number."""
    for rec in RECORDS:
        if rec.get("checked_against"):
            assert "recompute" not in rec and isinstance(rec["claimed"], str) and "claimed_value" not in rec, rec["id"]
            assert rec.get("note"), f"{rec['id']}: say what the paper says"
        if rec.get("recompute") == "published_values":
            assert rec["published"]["source"] and rec["published"]["values"], rec["id"]


@pytest.mark.parametrize("rec", RECORDS, ids=[r["id"] for r in RECORDS])
def test_the_verdict_follows_from_the_recomputation(rec):
    """One test per record, each recomputing only its own record: a failure names the
    record, and a mutation run sees which records reach a mutated function. A number
    compared with a claim also needs a stated rtol or atol (the default 1e-9 is for
    exact results only)."""
    (row,) = evaluate_register([rec])
    assert row["agrees"], (row["verdict"], row["computed"], row["value"])
    if row["value"] is not None and not isinstance(row["value"], bool):
        assert "rtol" in rec or "atol" in rec, "a numeric verdict needs a tolerance"


def labels_in(doc: str) -> set[str]:
    path = ROOT / f"{doc}.ipynb"
    if not path.is_file():
        path = ROOT / f"{doc}.md"
        text = path.read_text()
    else:
        text = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown")
    return set(re.findall(r"^\(([\w-]+)\)=", text, flags=re.M)) | set(re.findall(r":label: ([\w-]+)", text))


def test_every_where_points_to_an_existing_label():
    missing = [(r["id"], r["where"]) for r in RECORDS if r["where"]["label"] not in labels_in(r["where"]["doc"])]
    assert missing == []


def test_the_register_covers_all_five_notes():
    files = {r["source"]["file"] for r in RECORDS}
    expected = {"000_051da7c3837b8577.txt", "001_5feb997a08d9f295.txt", "002_0aefa05da3b15586.txt", "003_482530c1c121b366.txt", "004_58230cdbbd352fd2.txt"}
    assert files == expected


NUMERIC_CELL = re.compile(r"^-?\d+(\.\d+)?%?$")

# The tutorial chapter's comparison table lost its markdown in extraction; its cells, row by row:
# d_k | standard deviation | 3 sigma range | state | gradient
TUTORIAL_TABLE = [64, 1, -3, 3, 0.25, 64, 8, -24, 24, 0.0003, 512, 22.6, -68, 68, 0.0]


def table_cells(path: Path) -> list[float]:
    cells = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("|") and not set(line) <= set("|-: "):
            for cell in line.strip().strip("|").split("|"):
                cell = cell.strip()
                if NUMERIC_CELL.match(cell):
                    cells.append(float(cell.rstrip("%")))
    return cells


TABLE_NUMBERS = json.loads((ROOT / "chapters" / "data" / "note_table_numbers.json").read_text(encoding="utf-8"))["tables"]


def test_every_number_in_a_source_table_has_a_record():
    """Runs in every clone: the tables' numbers are stored beside the register."""
    assert set(TABLE_NUMBERS) == {r["source"]["file"] for r in RECORDS}
    missing = []
    for name, cells in TABLE_NUMBERS.items():
        known = set().union(*(numbers_of(r) for r in RECORDS if r["source"]["file"] == name))
        missing += [(name, c) for c in cells if float(f"{c:.6g}") not in known]
    assert missing == []
    assert len(TABLE_NUMBERS["000_051da7c3837b8577.txt"]) == 60  # tables 4.4, 7.2 and 7.3


def test_the_stored_table_numbers_are_the_notes():
    """Where the notes are at hand, the stored list is exactly what their tables hold."""
    if not SEEDS.is_dir():
        pytest.skip(f"the source notes are not at {SEEDS}: put shared/ beside the repository or set ATTNSCALE_SEEDS")
    found = {path.name: table_cells(path) + (TUTORIAL_TABLE if path.name.startswith("002_") else []) for path in sorted(SEEDS.glob("*.txt"))}
    assert found == TABLE_NUMBERS


def test_the_register_has_one_record_per_checkable_statement():
    """At least 130 records; records never share a place in a note (one claim, one record)."""
    assert len(RECORDS) >= 130
    places = [(r["source"]["file"], r["source"]["place"]) for r in RECORDS]
    shared = sorted({p for p in places if places.count(p) > 1})
    # the learning-rate rule of eq. (68) is tested once per optimiser: one claim, two experiments
    assert shared == [("000_051da7c3837b8577.txt", "appended notes, 8.3, eq. (68)")]


def test_a_wrong_verdict_is_caught():
    from attnscale.claims import verdict

    rec = next(r for r in RECORDS if r["id"] == "tut-softmax-1")
    assert verdict(rec, [0.506, 0.307, 0.187]) == "holds"  # had the source been right
    assert verdict(dict(rec, verdict="holds"), [0.5465, 0.3315, 0.122]) == "wrong"
    with pytest.raises(ValueError, match="names no known recomputation"):
        from attnscale.claims import recompute

        recompute({"id": "x", "recompute": "nope"})


def test_a_refutation_must_confirm_the_correction():
    """A check that finds a claim wrong must also accept the register's correction: a broken
    check rejects both, and then it says so instead of passing for a refutation."""
    from attnscale.claims._registry import refuted

    rec = {"id": "some-record"}
    assert refuted(False, True, rec) is False and refuted(True, True, rec) is True
    with pytest.raises(RuntimeError, match=r"^record 'some-record': the check rejects the register's correction too"):
        refuted(False, False, rec)


def test_one_bound_for_approximately(tmp_path):
    """Every record that can hold approximately uses the register's one bound, and a record
    with another bound is refused; the bound decides as documented: within it "approximate",
    beyond it "wrong", whatever the record's own rtol."""
    from attnscale.claims import APPROXIMATE_RTOL, load_register, verdict

    bounds = {r["id"]: r["approx_rtol"] for r in RECORDS if "approx_rtol" in r}
    assert bounds and set(bounds.values()) == {APPROXIMATE_RTOL}
    rec = next(r for r in RECORDS if r["id"] == "su23a-t73-conclusion")
    bad = tmp_path / "claims.yml"
    bad.write_text(yaml.safe_dump([dict(rec, approx_rtol=0.2)]))
    with pytest.raises(ValueError, match="one bound for 'approximate'"):
        load_register(bad)
    base = {"id": "x", "claimed": 1.0, "rtol": 0.01, "approx_rtol": APPROXIMATE_RTOL}
    assert verdict(base, 1.0 / (1 - 0.9 * APPROXIMATE_RTOL)) == "approximate"
    assert verdict(base, 1.0 / (1 - 1.1 * APPROXIMATE_RTOL)) == "wrong"
    assert verdict({k: v for k, v in base.items() if k != "approx_rtol"}, 1.0 / (1 - 0.5 * APPROXIMATE_RTOL)) == "wrong"
