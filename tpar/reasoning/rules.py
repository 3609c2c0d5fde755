"""Rule recovery: does the model's top explanation path follow the rule that produced the answer?

On data with known generating rules (the sample world's ``rules.json`` and ``provenance.csv``), take
the questions whose answer a rule produced, explain the true answer (:mod:`tpar.reasoning.explanation`), and
count how often the most important path walks exactly the rule's body: the same relations, each in
the same direction, from the query entity to the answer. This measures interpretability directly
(no peer system reports it). Object questions (A, r, ?, t) walk the body from the head's subject;
subject questions (?, r, B, t) walk it backwards from the head's object (every hop inverted).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from tpar.reasoning.explanation import Explainer

_ATOM = re.compile(r"\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*,\s*([^,()]+?)\s*,\s*[^()]*\)")

Signature = tuple[tuple[str, bool], ...]


def parse_atom(text: str) -> tuple[str, str, str]:
    """'(A, Threaten, B, t + d)' -> ('A', 'Threaten', 'B')."""
    m = _ATOM.search(text)
    if not m:
        raise ValueError(f"not a rule atom: {text!r}")
    return m.group(1), m.group(2), m.group(3)


def body_signature(body: Iterable[str], head: str, direction: str = "object") -> Signature:
    """The (relation, inverse) hops that walk ``body`` from the head's subject to its object
    (``direction="object"``) or back (``"subject"``). Raises ``ValueError`` if the body atoms do not
    chain the head's two variables."""
    hs, _, ho = parse_atom(head)
    atoms = [parse_atom(b) for b in body]
    start, goal = (hs, ho) if direction == "object" else (ho, hs)
    hops: list[tuple[str, bool]] = []
    cur, left = start, list(atoms)
    while left:
        for i, (u, rel, v) in enumerate(left):
            if u == cur:
                hops.append((rel, False))
                cur = v
            elif v == cur:
                hops.append((rel, True))
                cur = u
            else:
                continue
            left.pop(i)
            break
        else:
            raise ValueError(f"rule body {list(body)} does not chain from {start}")
    if cur != goal:
        raise ValueError(f"rule body {list(body)} does not end at {goal}")
    return tuple(hops)


@dataclass
class RecoveryRow:
    rule: str
    setting: str
    questions: int
    answer_at_rank_1: float    # share of those questions the model answers correctly (Hits@1)
    top_path_follows_body: float
    any_path_follows_body: float  # among the top ``num_paths``
    examples: list[str] = field(default_factory=list)  # a few top paths, as text

    def to_dict(self) -> dict:
        return asdict(self)


def rule_recovery(explainer: Explainer, questions: list[tuple[str, str, str, str, str]],
                  rules: dict[str, dict], *, setting: str, num_paths: int = 5, max_per_rule: int = 0,
                  seed: int = 0, on_progress: Callable[[int, int], None] | None = None) -> list[RecoveryRow]:
    """``questions``: (subject, relation, object, time label, rule id) facts produced by rules;
    each is asked in both directions. ``rules``: rule id -> {"body": [...], "head": "..."} (the
    ``rules.json`` entries). ``max_per_rule`` > 0 keeps a seeded sample of that many facts per rule.
    """
    by_rule: dict[str, list] = {}
    for q in questions:
        if q[4] in rules:
            by_rule.setdefault(q[4], []).append(q)
    rng = np.random.default_rng(seed)
    todo = []
    for rule, qs in sorted(by_rule.items()):
        if 0 < max_per_rule < len(qs):
            qs = [qs[i] for i in sorted(rng.choice(len(qs), max_per_rule, replace=False))]
        todo += [(rule, q) for q in qs]
    stats: dict[str, list] = {}
    done = 0
    for rule, (s, r, o, t, _) in todo:
        spec = rules[rule]
        for direction, ask, answer in (("object", s, o), ("subject", o, s)):
            want = body_signature(spec["body"], spec["head"], direction)
            e = explainer.explain(ask, r, t, answer, direction=direction, setting=setting, num_paths=num_paths)
            sigs = [p.signature for p in e.paths]
            row = stats.setdefault(rule, [0, 0, 0, 0, []])
            row[0] += 1
            row[1] += e.rank == 1
            row[2] += bool(sigs) and sigs[0] == want
            row[3] += want in sigs
            if e.paths and len(row[4]) < 2:
                row[4].append(f"{direction} question: {e.paths[0].describe()}")
        done += 1
        if on_progress:
            on_progress(done, len(todo))
    return [RecoveryRow(rule, setting, n, h / n, top / n, any_ / n, ex)
            for rule, (n, h, top, any_, ex) in sorted(stats.items())]


@dataclass
class PlantedRules:
    """The generating rules of a data set (``rules.json``) and the rule behind each fact
    (``provenance.csv``: subject, relation, object, time label, rule)."""

    rules: dict[str, dict]
    provenance: dict[tuple[str, str, str, str], str]

    @classmethod
    def find(cls, folder: str | Path) -> "PlantedRules | None":
        """From ``folder`` or its parent (the sample world keeps them beside its split folders);
        ``None`` when absent or unreadable."""
        import csv
        import json

        for base in (Path(folder), Path(folder).parent):
            rj, pc = base / "rules.json", base / "provenance.csv"
            if rj.is_file() and pc.is_file():
                try:
                    rules = {r["id"]: r for r in json.loads(rj.read_text(encoding="utf-8"))["rules"]}
                    with open(pc, encoding="utf-8", newline="") as f:
                        prov = {(r["subject"], r["relation"], r["object"], r["time"]): r["rule"]
                                for r in csv.DictReader(f)}
                    return cls(rules, prov)
                except (OSError, ValueError, KeyError, TypeError):
                    return None
        return None

    def rule_of(self, subject: str, relation: str, obj: str, time: str) -> dict | None:
        rid = self.provenance.get((subject, relation, obj, time))
        return self.rules.get(rid) if rid else None


def path_follows(path_links: list[dict] | list, body: Iterable[str], head: str, direction: str) -> bool:
    """Whether a path (``TemporalPath.links`` or their dicts) walks the rule's body."""
    got = tuple((x["relation"], bool(x["inverse"])) if isinstance(x, dict) else (x.relation, x.inverse)
                for x in path_links)
    return got == body_signature(body, head, direction)
