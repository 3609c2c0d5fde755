"""The one in-memory representation of a temporal knowledge graph."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np

from tpar.data.timeaxis import TimeAxis
from tpar.data.vocab import Vocabulary
from tpar.errors import probability_text

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class EntityFact:
    """One known fact seen from an entity: when, which relation, the entity's role and the other one."""

    time_step: int
    time: str
    relation: str
    role: Literal["subject", "object"]
    other: str
    inferred: bool = False     # completed by a model, not observed (see TemporalKG.inferred)


def empty_facts() -> np.ndarray:
    return np.zeros((0, 4), dtype=np.int64)


def repeated_in(facts: np.ndarray, other: np.ndarray) -> np.ndarray:
    """(N,) bool: ``facts[i]`` (s, r, o, t) is also a row of ``other``: one int64 key per fact where the ids and
    times fit in 63 bits, else a row-wise comparison of the raw bytes."""
    if not len(facts) or not len(other):
        return np.zeros(len(facts), dtype=bool)
    both = np.concatenate([facts, other]).astype(np.int64)
    low = both.min(0)
    span = both.max(0) - low + 1
    if all(int(x) > 0 for x in span) and float(np.prod(span.astype(np.float64))) < 2.0 ** 62:
        weights = np.array([int(np.prod(span[i + 1:])) for i in range(4)], dtype=np.int64)
        keys = (both - low) @ weights
        return np.isin(keys[:len(facts)], keys[len(facts):])
    rows = np.ascontiguousarray(both).view(np.dtype((np.void, 32))).ravel()
    return np.isin(rows[:len(facts)], rows[len(facts):])


def split_overlap_notes(kg: "TemporalKG") -> list[str]:
    """A note for each evaluation split holding facts that are training facts too (the same subject, relation,
    object and time): a model trains on them and is then asked them. The protocol hides a question's own fact from
    what the question reads (:class:`tpar.graph.background.Background`), but not from training, so the figures on
    these questions are higher than on facts the model never saw (WIKIDATA12k's test split repeats 132 training
    facts, its intervals' bounds repeating: their 264 questions score MRR 99.1 with the shipped model)."""
    train = kg.splits.get("train")
    if train is None or not len(train):
        return []
    out = []
    for split in ("valid", "test"):
        facts = kg.splits.get(split)
        if facts is None or not len(facts):
            continue
        hit = repeated_in(facts, train)
        n = int(hit.sum())
        if n:
            s, r, o, t = (int(x) for x in facts[int(np.argmax(hit))])
            out.append(f"{n:,} of the {len(facts):,} {split} facts {'is a training fact' if n == 1 else 'are training facts'} "
                       f"too (e.g. ({kg.entities.name(s)}, {kg.relations.name(r)}, {kg.entities.name(o)}, "
                       f"{kg.time_axis.label(t)})): a model trains on {'it' if n == 1 else 'them'} before it is asked "
                       f"{'it' if n == 1 else 'them'}, so its {split} figures count facts it has seen (a question never "
                       "reads its own fact, but training did)")
    return out


@dataclass
class TemporalKG:
    """Facts ``(subject, relation, object, time step)`` per split, with vocabularies and a time axis.

    Attributes:
        name: short name (the benchmark folder or CSV file name).
        entities, relations: id <-> name. Relations are the *base* relations as in the files;
            inverse relations ``r + num_relations`` are added by :class:`tpar.graph.index.TemporalGraphIndex`,
            never stored here.
        time_axis: integer step <-> label.
        splits: ``{"train"|"valid"|"test": int64 array (N, 4)}`` with columns s, r, o, t;
            de-duplicated within each split. A split that the files lack is absent (see
            :attr:`missing_splits`).
        source: where the data was read from.
        notes: what the loader did that a user should know (duplicates dropped, policies applied).
        inferred: facts ``(s, r, o, t)`` (ids, members of the splits) that a model proposed rather
            than anyone observed (``tpar complete``, the Upload page's completion), with the
            model's probability (nan when not recorded). Shown as inferred wherever facts are shown.
        lineage: how the data set grew (:mod:`tpar.data.lineage`): one dict per step, oldest first, with the
            fingerprint of the data it grew from. Not part of the fingerprint.
    """

    name: str
    entities: Vocabulary
    relations: Vocabulary
    time_axis: TimeAxis
    splits: dict[str, np.ndarray]
    source: str = ""
    notes: list[str] = field(default_factory=list)
    inferred: dict[tuple[int, int, int, int], float] = field(default_factory=dict)
    lineage: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        for split, arr in self.splits.items():
            if split not in SPLITS:
                raise ValueError(f"unknown split {split!r}")
            arr = np.ascontiguousarray(arr, dtype=np.int64).reshape(-1, 4)
            self.splits[split] = arr
            if len(arr):
                if arr[:, [0, 2]].min() < 0 or arr[:, [0, 2]].max() >= len(self.entities):
                    raise ValueError(f"{split}: entity id out of range")
                if arr[:, 1].min() < 0 or arr[:, 1].max() >= len(self.relations):
                    raise ValueError(f"{split}: relation id out of range")

    # -- sizes ----------------------------------------------------------------------------------
    @property
    def num_entities(self) -> int:
        return len(self.entities)

    @property
    def num_relations(self) -> int:
        """Number of base relations R (inverse relations are R..2R-1 in the index)."""
        return len(self.relations)

    @property
    def missing_splits(self) -> tuple[str, ...]:
        return tuple(s for s in SPLITS if s not in self.splits)

    def facts(self, split: str) -> np.ndarray:
        """int64 (N, 4) facts of ``split``; an empty array if the split is missing."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r} (expected one of {', '.join(SPLITS)})")
        return self.splits.get(split, empty_facts())

    def all_facts(self) -> np.ndarray:
        """train ∪ valid ∪ test as one (N, 4) array, duplicates across splits removed."""
        parts = [self.facts(s) for s in SPLITS]
        return np.unique(np.concatenate(parts), axis=0) if sum(map(len, parts)) else empty_facts()

    def self_linked(self) -> frozenset[int]:
        """The entities some known fact links to themselves (subject = object): a path (and a history prior) can
        lead back there, and only these are proposed as their own question's answer."""
        every = self.all_facts()
        return frozenset(every[every[:, 0] == every[:, 2], 0].tolist())

    @cached_property
    def time_range(self) -> tuple[int, int]:
        """(first, last) time step over all known facts; (0, 0) for a graph without facts."""
        every = self.all_facts()
        return (int(every[:, 3].min()), int(every[:, 3].max())) if len(every) else (0, 0)

    def entity_facts(self, entity: str) -> list[EntityFact]:
        """Every known fact (train ∪ valid ∪ test) with ``entity`` as subject or object, by time."""
        e = self.entities.id(entity)
        every = self.all_facts()
        mine = every[(every[:, 0] == e) | (every[:, 2] == e)]
        mine = mine[np.argsort(mine[:, 3], kind="stable")]
        return [EntityFact(int(t), self.time_axis.label(int(t)), self.relations.name(int(r)),
                           "subject" if s == e else "object", self.entities.name(int(o if s == e else s)),
                           (s, r, o, t) in self.inferred)
                for s, r, o, t in mine.tolist()]

    def is_inferred(self, s: int, r: int, o: int, t: int) -> bool:
        """Whether fact (s, r, o, t) (ids, base relation) was inferred by a model, not observed."""
        return (int(s), int(r), int(o), int(t)) in self.inferred

    def inferred_text(self, s: int, r: int, o: int, t: int) -> str:
        """"" for an observed fact, else e.g. "inferred by a model (p = 93%), not observed"."""
        key = (int(s), int(r), int(o), int(t))
        if key not in self.inferred:
            return ""
        p = self.inferred[key]
        return "inferred by a model" + ("" if p != p else f" (p = {probability_text(p)})") + ", not observed"

    # -- identity -------------------------------------------------------------------------------
    @cached_property
    def fingerprint(self) -> str:
        """sha256 over vocabularies, time axis and every split's facts: equal data <=> equal hash."""
        h = hashlib.sha256()
        h.update(b"tpar-kg-v1\n")
        h.update("\n".join(self.entities.names).encode("utf-8") + b"\x00")
        h.update("\n".join(self.relations.names).encode("utf-8") + b"\x00")
        h.update(json.dumps(self.time_axis.to_dict(), sort_keys=True).encode() + b"\x00")
        for split in SPLITS:
            arr = self.facts(split).astype("<i8", copy=False)
            h.update(f"{split}:{len(arr)}\n".encode())
            h.update(np.ascontiguousarray(arr).tobytes())
        if self.inferred:  # only then: the hash of data without inferred facts is unchanged
            h.update(b"inferred\n" + json.dumps(sorted([*k, None if p != p else round(p, 6)]
                                                       for k, p in self.inferred.items())).encode())
        return h.hexdigest()

    # -- statistics -----------------------------------------------------------------------------
    def _id_notes(self) -> list[str]:
        """A note when nine in ten names of entities or relations are bare Wikidata ids (Q42, P54 [since]), as in
        WIKIDATA12k, which has no labels: a search finds them by id only (scale audit 40)."""
        import re

        out = []
        for what, names, pattern in (("entities", self.entities.names, r"Q\d+"),
                                     ("relations", self.relations.names, r"P\d+(?: \[[^\]]+\])?")):
            # ten names at least: three relations P1..P3 may be priority levels (hostile 40)
            if len(names) >= 10 and sum(1 for n in names if re.fullmatch(pattern, n)) >= 0.9 * len(names):
                out.append(f"the {what} are named by bare Wikidata ids ({pattern[0]}…, no labels in the data): search "
                           "for them by id")
        return out

    def stats(self) -> dict:
        """Counts for `tpar info` and the app: per split facts, entities, time range."""
        out: dict = {
            "name": self.name,
            "source": self.source,
            "fingerprint": self.fingerprint,
            "num_entities": self.num_entities,
            "num_relations": self.num_relations,
            "time_axis": self.time_axis.describe(),
            "missing_splits": list(self.missing_splits),
            "splits": {},
            "notes": list(self.notes) + self._id_notes(),
            "inferred_facts": len(self.inferred),
        }
        for split in SPLITS:
            if split not in self.splits:
                continue
            arr = self.splits[split]
            info: dict = {"facts": int(len(arr))}
            if len(arr):
                tmin, tmax = int(arr[:, 3].min()), int(arr[:, 3].max())
                info.update(
                    entities=int(len(np.unique(arr[:, [0, 2]]))),
                    relations=int(len(np.unique(arr[:, 1]))),
                    time_steps=int(len(np.unique(arr[:, 3]))),
                    time_range=[self.time_axis.label(tmin), self.time_axis.label(tmax)],
                )
            out["splits"][split] = info
        every = self.all_facts()
        out["entities_in_facts"] = int(len(np.unique(every[:, [0, 2]]))) if len(every) else 0
        return out
