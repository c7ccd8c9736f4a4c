"""attnscale.claims, the places index (chapters/data/note_places.yml) and the claims register agree.

The index lists every checkable statement of the five source notes, in reading
order, with the record that settles it, and the equation tags (\\tag{N}) of the two
appended derivation sections, which its places must name one by one. It lives in
the repository, so these tests need neither the notes nor anything outside the
clone; one test compares the stored tags with the notes where they are at hand.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from attnscale.claims import load_register

ROOT = Path(__file__).resolve().parents[2]
FULL_INDEX = yaml.load((ROOT / "chapters" / "data" / "note_places.yml").read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
#: note -> the \tag numbers of its appended section "公式推导与注释", in the order printed
TAGS: dict[str, list[int]] = FULL_INDEX["appended_tags"]
INDEX = {note: places for note, places in FULL_INDEX.items() if note != "appended_tags"}
# The notes live in shared/ beside the repository (as in CI); ATTNSCALE_SEEDS overrides.
SEEDS = Path(os.environ.get("ATTNSCALE_SEEDS", ROOT.parent / "shared" / "seeds"))
APPENDED_HEADING = "## 公式推导与注释"
RECORDS = load_register(ROOT / "chapters" / "claims.yml")
BY_ID = {r["id"]: r for r in RECORDS}
NOTES = ["000_051da7c3837b8577.txt", "001_5feb997a08d9f295.txt", "002_0aefa05da3b15586.txt", "003_482530c1c121b366.txt", "004_58230cdbbd352fd2.txt"]


def ids_of(entry: dict) -> list[str]:
    ids = entry.get("record")
    return [ids] if isinstance(ids, str) else list(ids or [])


def entries():
    for note, places in INDEX.items():
        for entry in places:
            yield note, entry


def test_the_index_covers_the_five_notes_and_nothing_else():
    assert sorted(INDEX) == NOTES
    assert all(isinstance(places, list) and places for places in INDEX.values())


def test_every_place_is_named_once_per_note():
    for note, places in INDEX.items():
        names = [e["place"] for e in places]
        assert sorted({p for p in names if names.count(p) > 1}) == [], note
        assert all(isinstance(p, str) and p.strip() for p in names), note


def test_every_indexed_place_has_a_record():
    assert [(note, e["place"]) for note, e in entries() if not ids_of(e)] == []


def test_every_record_named_in_the_index_exists():
    assert sorted({(note, i) for note, e in entries() for i in ids_of(e) if i not in BY_ID}) == []


def test_a_place_names_records_of_its_own_note():
    """A place maps to records of the same note (a claim one note repeats from another
    gets its own record, which may cite the other in its note)."""
    assert [(note, i) for note, e in entries() for i in ids_of(e) if BY_ID[i]["source"]["file"] != note] == []


def test_every_record_place_is_indexed():
    indexed = {(note, e["place"]): set(ids_of(e)) for note, e in entries()}
    missing = [(r["id"], r["source"]["file"], r["source"]["place"]) for r in RECORDS
               if r["id"] not in indexed.get((r["source"]["file"], r["source"]["place"]), set())]
    assert missing == []


def test_the_index_has_the_expected_size():
    """The issue's independent count found about 138 checkable statements."""
    assert sum(len(places) for places in INDEX.values()) >= 138


# ---- every tagged equation of the appended sections is named by a place ----------
# A place of the appended notes names equations as "eq. (N)" or a range "eq. (A)-(B)";
# a range is used only where its record checks every equation in it.

EQUATION = re.compile(r"eq\. \((\d+)\)(?:\s*[-–]\s*\((\d+)\))?")


def named_tags(place: str) -> set[int]:
    """The equation numbers an appended-notes place names (none for a main-text place)."""
    if not place.startswith("appended notes"):
        return set()
    found: set[int] = set()
    for first, last in EQUATION.findall(place):
        lo, hi = int(first), int(last or first)
        assert lo <= hi, f"a backwards range in {place!r}"
        found |= set(range(lo, hi + 1))
    return found


def unnamed(index: dict, tags: dict) -> dict[str, list[int]]:
    """Per note with an appended section: the tags no place of the index names."""
    out = {}
    for note, numbers in tags.items():
        named = set().union(*(named_tags(e["place"]) for e in index[note]))
        out[note] = [t for t in numbers if t not in named]
    return out


def test_the_stored_tags_are_two_sections_of_distinct_numbers():
    assert sorted(TAGS) == ["000_051da7c3837b8577.txt", "003_482530c1c121b366.txt"]
    for note, numbers in TAGS.items():
        assert all(isinstance(t, int) and t > 0 for t in numbers) and len(set(numbers)) == len(numbers), note
    assert [len(TAGS[n]) for n in sorted(TAGS)] == [70, 63]


def test_every_tagged_equation_of_the_appended_notes_is_named():
    """Each \\tag{N} of an appended section is named by a place of the index, and so
    settled by a record (every record's own place is in the index, above)."""
    assert unnamed(INDEX, TAGS) == {note: [] for note in TAGS}


def test_a_place_names_only_equations_the_notes_have():
    extra = {(note, e["place"]): sorted(named_tags(e["place"]) - set(TAGS.get(note, [])))
             for note, e in entries() if named_tags(e["place"]) - set(TAGS.get(note, []))}
    assert extra == {}


def test_a_removed_place_leaves_a_gap():
    """The coverage check sees a gap: without the record su22a-eq34's place, (34) is unnamed."""
    rec = BY_ID["su22a-eq34"]
    note = rec["source"]["file"]
    thinner = dict(INDEX, **{note: [e for e in INDEX[note] if e["place"] != rec["source"]["place"]]})
    assert unnamed(thinner, TAGS)[note] == sorted(unnamed(INDEX, TAGS)[note] + [34])
    assert named_tags("appended notes, 2.1, eq. (26)-(28)") == {26, 27, 28}
    assert named_tags("appended notes, eq. (58)–(60)") == {58, 59, 60}
    assert named_tags("main text, 已有结果, eq. (1) 'Var[q·k] = d'") == set()


def tags_in(text: str) -> list[int]:
    """The \\tag numbers after the appended section's heading, in the order printed."""
    start = text.find(APPENDED_HEADING)
    return [] if start < 0 else [int(t) for t in re.findall(r"\\tag\{(\d+)\}", text[start:])]


def test_the_stored_tags_are_the_notes():
    """Where the notes are at hand, the stored tags are exactly those of the appended sections
    (and no note has a tag outside them)."""
    if not SEEDS.is_dir():
        pytest.skip(f"the source notes are not at {SEEDS}: put shared/ beside the repository or set ATTNSCALE_SEEDS")
    found = {}
    for path in sorted(SEEDS.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        assert len(re.findall(r"\\tag\{", text)) == len(tags_in(text)), f"{path.name}: a tag outside the appended section"
        if tags_in(text):
            found[path.name] = tags_in(text)
    assert found == TAGS
