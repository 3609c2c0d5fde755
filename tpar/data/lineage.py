"""How a data set grew (:mod:`tpar.data.growth`), recorded beside its split files, and what that tells an answer.

A grown data set's folder holds ``lineage.json``: one entry per growth step with the data it grew from (its
name, fingerprint and last training time). A model trained on that earlier data can then say how far a question
lies past the facts it was trained on (:func:`trained_until`), even though the data it answers over has grown.
"""

from __future__ import annotations

import datetime as dt
import json
import unicodedata
from pathlib import Path

from tpar.data.kg import SPLITS, TemporalKG
from tpar.data.relation_matching import as_loaded
from tpar.data.textfile import strict_json

#: the file beside a grown data set's split files that records how it grew (JSON; read, never executed)
LINEAGE_FILE = "lineage.json"
#: a lineage file larger than this is not read (it is a few hundred bytes per growth)
LINEAGE_MAX_BYTES = 1_000_000
_KEYS = ("file", "added", "new_entities", "date", "base_name", "base_fingerprint", "base_train_last", "base_last")


def lineage_entry(before: TemporalKG, report) -> dict:
    """One growth step (``report``: a :class:`~tpar.data.growth.GrowthReport`): what was added to which data (its
    fingerprint and last times before growing)."""
    train = before.facts("train")
    return {"file": report.file, "added": report.added, "new_entities": len(report.new_entities),
            "date": dt.date.today().isoformat(), "base_name": before.name, "base_fingerprint": before.fingerprint,
            "base_train_last": before.time_axis.label(int(train[:, 3].max())) if len(train) else None,
            "base_last": report.data_last}


def lineage_of(folder: str | Path) -> list[dict]:
    """The growth steps recorded beside a data set (oldest first); [] when none, too large or unreadable."""
    p = Path(folder) / LINEAGE_FILE
    try:
        if not p.is_file() or p.stat().st_size > LINEAGE_MAX_BYTES:
            return []
        steps = strict_json(p.read_text(encoding="utf-8"), numbers_checked_later=True).get("steps", [])  # _clean checks
    except (OSError, ValueError, AttributeError, RecursionError):  # RecursionError: brackets nested too deep
        return []
    if not isinstance(steps, list):
        return []
    return [{k: _clean(k, x.get(k)) for k in _KEYS} for x in steps if isinstance(x, dict)]


def _clean(key: str, value):
    """A lineage value as its kind allows (the file may have been edited by anyone): text without control
    characters and at most 200 characters, counts as non-negative integers; anything else None."""
    if key == "added":
        return {str(s): v for s, v in value.items() if s in SPLITS and isinstance(v, int) and v >= 0} \
            if isinstance(value, dict) else {}
    if key == "new_entities":
        return value if isinstance(value, int) and value >= 0 else None
    if not isinstance(value, str):
        return None
    return "".join(ch for ch in value if unicodedata.category(ch)[0] != "C")[:200]


def growth_text(lineage: list[dict], since: str | None = None) -> str:
    """The lineage in a few words, e.g. "grown from ICEWS14 by 1,204 facts in 3 steps"; ``since``: a data
    fingerprint, the growth since the last step that grew from that data (a model trained on it)."""
    starts = [i for i, x in enumerate(lineage) if since is not None and x.get("base_fingerprint") == since]
    lineage = lineage[starts[-1]:] if starts else lineage
    if not lineage:
        return ""
    facts = sum(sum(v for v in (x.get("added") or {}).values() if isinstance(v, int)) for x in lineage)
    steps = f" in {len(lineage)} steps" if len(lineage) > 1 else ""
    base = lineage[0].get("base_name") or "an earlier version"
    return f"grown from {base} by {facts:,} fact{'' if facts == 1 else 's'}{steps}"


def grew_from(data_fingerprint: str, kg: TemporalKG) -> bool:
    """Whether ``kg`` is the data of ``data_fingerprint`` or grew from it (a step of its lineage started there)."""
    return data_fingerprint == kg.fingerprint or any(x.get("base_fingerprint") == data_fingerprint for x in kg.lineage)


def _comparable(data_fingerprint: str, kg: TemporalKG, calendar: bool) -> bool:
    """Whether a time label recorded with a model means the same time on ``kg``'s axis: both axes are calendars,
    or ``kg`` is the model's training data or grew from it (step numbers of unrelated data are not comparable)."""
    return (calendar and kg.time_axis.origin is not None) or grew_from(data_fingerprint, kg)


def training_range(data_fingerprint: str, extra: dict, kg: TemporalKG,
                   calendar: bool = True) -> tuple[str | None, str | None]:
    """(first, last) time of the training facts a model (its data fingerprint and ``extra``) was trained on, as
    labels, each None where it cannot be known: recorded in the checkpoint (``calendar``: on a calendar axis; else
    only for its own data or data grown from it), or ``kg`` is the training data, or ``kg`` grew from it (its
    :attr:`~tpar.data.kg.TemporalKG.lineage`, which records only where they ended)."""
    kg = as_loaded(kg)  # a relation-matched view: the data as loaded
    rng = extra.get("train_time_range")
    if isinstance(rng, (list, tuple)) and len(rng) == 2 and all(isinstance(x, str) for x in rng) and \
            _comparable(data_fingerprint, kg, calendar):
        return rng[0], rng[1]
    if data_fingerprint == kg.fingerprint:
        train = kg.facts("train")
        if not len(train):
            return None, None
        return kg.time_axis.label(int(train[:, 3].min())), kg.time_axis.label(int(train[:, 3].max()))
    for step in kg.lineage:
        if step.get("base_fingerprint") == data_fingerprint and isinstance(step.get("base_train_last"), str):
            return None, step["base_train_last"]
    return None, None


def trained_until(data_fingerprint: str, extra: dict, kg: TemporalKG, calendar: bool = True) -> str | None:
    """The last time of the training facts (:func:`training_range`), or None."""
    return training_range(data_fingerprint, extra, kg, calendar)[1]
