"""The claims register (``chapters/claims.yml``): loading, dispatch and the verdict rule.

Every checkable record names a recomputation (its ``recompute`` field), a
function in one of this package's modules (``_jacobian``, ``_scores``,
``_normal``, ``_cosine``, ``_entropy``, ``_other``). The function recomputes the
claimed quantity through the library (never from a value typed into the
register) and returns either a number or array, compared with the claimed
value by :func:`verdict`, or a boolean that says whether a statement holds.

**The verdict rule.** A number is compared with the recomputed value relative to the
recomputed value: it **holds** within the record's ``rtol`` (plus ``atol``), set by how the
source rounds it or by the recomputation's own error (a Monte Carlo standard error); it
holds **approximately** within :data:`APPROXIMATE_RTOL` (15%), the register's one bound,
at every point of the range the claim covers; beyond that it is **wrong**. Only a claim the
source states as approximate (an "about", a fitted formula, a range) can hold
approximately, and its record says so with ``approx_rtol: 0.15``; a number or identity
stated as exact carries no ``approx_rtol`` and is right or wrong. A fit's coefficient is a
number the source computed, judged as a number; how well the fitted formula follows the
optimum is a separate claim, judged by the 15% bound.

A record about the content of another paper may instead name the paper in
``checked_against``: its verdict then comes from reading that paper, and such a
record may not carry a number (a number from a paper goes through the
``published_values`` recomputation, which compares it with the record's
``published`` values).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate as v
from .._paths import in_book
from . import _cosine as _cosine, _entropy as _entropy, _jacobian as _jacobian  # noqa: F401  (they fill RECOMPUTE)
from . import _normal as _normal, _other as _other, _scores as _scores  # noqa: F401
from ._registry import RECOMPUTE
from ._page import register_page, show_value
from ._tables import chapter_table

__all__ = ["RECOMPUTE", "recompute", "verdict", "VERDICTS", "APPROXIMATE_RTOL", "load_register", "evaluate_register", "numbers_of", "chapter_table", "register_page", "show_value"]

VERDICTS = ("holds", "approximate", "wrong", "not checkable")
#: the register's one bound for an approximate claim, the relative error allowed at every point of the claimed range
APPROXIMATE_RTOL = 0.15
#: the register in this repository
REGISTER = in_book("chapters/claims.yml")


def recompute(record: dict) -> Any:
    """Run the recomputation a record names (its ``recompute`` field)."""
    record = v.mapping(record, "record", ("id",))
    name = record.get("recompute")
    if name not in RECOMPUTE:
        raise ValueError(f"record {record['id']!r} names no known recomputation: {name!r}")
    return RECOMPUTE[name](record)


def verdict(record: dict, value: Any) -> str:
    """The verdict that follows from a recomputed ``value``: booleans decide
    directly (a record with ``negate: true`` states the opposite of what the
    recomputation tests); numbers are compared with ``claimed`` (or
    ``claimed_value`` where the claim is stated in words) using the record's
    ``atol`` (absolute slack, for values rounded by the source) plus ``rtol``
    (holds) or ``approx_rtol`` (approximate; in the register always :data:`APPROXIMATE_RTOL`,
    which :func:`load_register` enforces)."""
    record = v.mapping(record, "record", ("id",))
    if "claimed" not in record and "claimed_value" not in record:
        raise ValueError(f"record {record['id']!r} lacks the entries ['claimed'] to compare with")
    if isinstance(value, (bool, np.bool_)):
        holds = bool(value) != bool(record.get("negate", False))
        return "holds" if holds else "wrong"
    stated: Any = record.get("claimed_value", record.get("claimed"))
    claimed = v.finite(stated, "record claimed value")
    got = v.finite(value, "value")
    slack = np.abs(got - claimed) - float(record.get("atol", 0.0))
    rel = np.maximum(slack, 0.0) / np.maximum(np.abs(got), 1e-300)
    if np.all(rel <= float(record.get("rtol", 1e-9))):
        return "holds"
    if "approx_rtol" in record and np.all(rel <= float(record["approx_rtol"])):
        return "approximate"
    return "wrong"


REQUIRED = ("id", "source", "statement", "claimed", "verdict", "where")


def _check_record(rec: dict) -> None:
    missing = [f for f in REQUIRED if f not in rec]
    if missing:
        raise ValueError(f"record {rec.get('id')!r} lacks {missing}")
    if rec["verdict"] not in VERDICTS:
        raise ValueError(f"record {rec['id']!r}: verdict must be one of {VERDICTS}, got {rec['verdict']!r}")
    if rec["verdict"] == "not checkable" and not rec.get("why"):
        raise ValueError(f"record {rec['id']!r} is not checkable but says not why")
    if rec["verdict"] != "not checkable" and "recompute" not in rec and not rec.get("checked_against"):
        raise ValueError(f"record {rec['id']!r} has a verdict but no recomputation")
    if "approx_rtol" in rec and rec["approx_rtol"] != APPROXIMATE_RTOL:
        raise ValueError(f"record {rec['id']!r}: approx_rtol is the register's one bound for 'approximate', "
                         f"{APPROXIMATE_RTOL}, or absent (a claim stated as exact), got {rec['approx_rtol']!r}")
    if rec.get("checked_against") and ("recompute" in rec or "claimed_value" in rec or not isinstance(rec["claimed"], str)):
        raise ValueError(f"record {rec['id']!r} is read in a paper, so it can carry neither a number nor a recomputation")


def load_register(path) -> list[dict]:
    """Read the register and check its shape (fields, unique ids, verdict words,
    a recomputation or a cited paper behind every verdict)."""
    import yaml

    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    if not Path(path).is_file():
        raise FileNotFoundError(f"path: no claims register at {path}")
    # libyaml's parser where PyYAML has it (the same records, seven times faster than the pure-Python one)
    records = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(records, list):
        raise ValueError(f"{path} must hold a list of records")
    seen = set()
    for rec in records:
        _check_record(rec)
        if rec["id"] in seen:
            raise ValueError(f"duplicate record id {rec['id']!r}")
        seen.add(rec["id"])
    return records


def evaluate_register(records: list[dict]) -> list[dict]:
    """Recompute every checkable record; each result carries the recomputed
    value, the verdict that follows, and whether it agrees with the register.
    A record read in a paper (``checked_against``) keeps its verdict, with
    ``computed`` naming the paper."""
    if not isinstance(records, list):
        raise TypeError(f"records must be a list of records (dicts), got {type(records).__name__}")
    out = []
    for rec in records:
        rec = v.mapping(rec, "records entry", ("id", "verdict"))
        row = dict(rec)
        if rec["verdict"] == "not checkable":
            row.update(value=None, computed="not checkable", agrees=True)
        elif rec.get("checked_against") and "recompute" not in rec:
            row.update(value=None, computed=f"read in {rec['checked_against']}", agrees=True)
        else:
            value = recompute(rec)
            computed = verdict(rec, value)
            row.update(value=value, computed=computed, agrees=computed == rec["verdict"])
        out.append(row)
    return out


def numbers_of(rec: dict) -> set[float]:
    """Every number a record mentions (claimed, claimed_value, inputs, cells),
    rounded to 6 significant digits, for the table-coverage test."""
    rec = v.mapping(rec, "rec")
    found: set[float] = set()

    def walk(x):
        if isinstance(x, bool):
            return
        if isinstance(x, (int, float)):
            found.add(float(f"{x:.6g}"))
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)

    for key in ("claimed", "claimed_value", "inputs", "cells"):
        walk(rec.get(key))
    return found
