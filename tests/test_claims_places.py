"""The places index (chapters/data/note_places.yml) and the claims register agree.

The index lists every checkable statement of the five source notes, in reading
order, with the record that settles it. It lives in the repository, so this test
needs neither the notes nor anything outside the clone.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from attnscale.claims import load_register

ROOT = Path(__file__).resolve().parents[1]
INDEX = yaml.safe_load((ROOT / "chapters" / "data" / "note_places.yml").read_text(encoding="utf-8"))
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
