"""Rule recovery: does the model's top explanation path follow the rule that produced the answer?

On data with known generating rules (the sample world's ``rules.json`` and ``provenance.csv``), take
the questions whose answer a rule produced, explain the true answer (:mod:`tpar.reasoning.explanation`), and
count how often the most important path walks exactly the rule's body: the same relations, each in
the same direction, from the query entity to the answer, at the rule's times (a weekly rule's link
must lie 7 days before the question, not 14). This measures interpretability directly
(no peer system reports it). Object questions (A, r, ?, t) walk the body from the head's subject;
subject questions (?, r, B, t) walk it backwards from the head's object (every hop inverted).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from tpar.errors import DataError
from tpar.reasoning.explanation import Explainer

_ATOM = re.compile(r"\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*,\s*([^,()]+?)\s*,\s*[^()]*\)")

Signature = tuple[tuple[str, bool], ...]


def parse_atom(text: str) -> tuple[str, str, str]:
    """'(A, Threaten, B, t + d)' -> ('A', 'Threaten', 'B')."""
    m = _ATOM.search(text)
    if not m:
        raise ValueError(f"not a rule atom: {text!r}")
    return m.group(1), m.group(2), m.group(3)


def _walk_body(body: Iterable[str], head: str, direction: str) -> list[tuple[int, bool]]:
    """(atom index, walked backwards) per hop, walking ``body`` from the head's subject to its
    object (``direction="object"``) or back (``"subject"``)."""
    hs, _, ho = parse_atom(head)
    atoms = [parse_atom(b) for b in body]
    start, goal = (hs, ho) if direction == "object" else (ho, hs)
    hops: list[tuple[int, bool]] = []
    cur, left = start, list(range(len(atoms)))
    while left:
        for j, i in enumerate(left):
            u, _, v = atoms[i]
            if u == cur:
                hops.append((i, False))
                cur = v
            elif v == cur:
                hops.append((i, True))
                cur = u
            else:
                continue
            left.pop(j)
            break
        else:
            raise ValueError(f"rule body {list(body)} does not chain from {start}")
    if cur != goal:
        raise ValueError(f"rule body {list(body)} does not end at {goal}")
    return hops


def body_signature(body: Iterable[str], head: str, direction: str = "object") -> Signature:
    """The (relation, inverse) hops that walk ``body`` from the head's subject to its object
    (``direction="object"``) or back (``"subject"``). Raises ``ValueError`` if the body atoms do not
    chain the head's two variables."""
    body = list(body)
    return tuple((parse_atom(body[i])[1], inv) for i, inv in _walk_body(body, head, direction))


# -- timing: "(A, Meet, B, t - 7)" => (A, Meet, B, t) is the rule's body only when the link lies 7 days
#    before the head; a path with the right relations at the wrong times does not follow the rule
_TIME_TERM = re.compile(r"^\s*([A-Za-z]\w*)\s*(?:([+-])\s*([0-9]+|d))?\s*$")
_ATOM_TIME = re.compile(r"\(\s*[^,()]+?\s*,\s*[^,()]+?\s*,\s*[^,()]+?\s*,\s*([^()]*)\)")
_BOUND = re.compile(r"([A-Za-z]\w*(?:\s*[+-]\s*[0-9]+)?)\s*(<=|<)\s*([A-Za-z]\w*)\s*(<=|<)\s*([A-Za-z]\w*(?:\s*[+-]\s*[0-9]+)?)")


def _term(text: str) -> tuple[str, int | str]:
    """'t - 7' -> ('t', -7); 't + d' -> ('t', 'd'); 't1' -> ('t1', 0)."""
    m = _TIME_TERM.match(text)
    if not m:
        raise ValueError(f"not a time term: {text!r}")
    var, sign, amount = m.groups()
    if amount is None:
        return var, 0
    if amount == "d":
        return var, "d"
    return var, int(amount) * (-1 if sign == "-" else 1)


@dataclass
class TimingCheck:
    """Whether a path's link times fit a rule's timing (delays in days)."""

    fits: bool
    reason: str


def timing_check(path_links: list, rule: dict, direction: str, question_time: int,
                 days_per_step: float | None = 1.0) -> TimingCheck | None:
    """Check the link times of a path that walks ``rule``'s body (structure already matched) against
    the rule's timing: each body atom's time term ("t", "t - 7", "t1" with a bound such as
    "t - 60 <= t1 < t"), the head's ("t + d" with d within ``delay_days``, or "t ± N").
    ``question_time`` and the links' ``time_step`` are steps; ``days_per_step`` converts them
    (``None``: the axis has no day length, the check is skipped and ``None`` returned)."""
    if days_per_step is None:
        return None
    body, head = list(rule["body"]), rule["head"]
    hops = _walk_body(body, head, direction)
    if len(hops) != len(path_links):
        return TimingCheck(False, "the path has a different number of links than the rule's body")
    lo, hi = (rule.get("delay_days") or [0, 0])[:2]
    head_var, head_off = _term(_ATOM_TIME.search(head).group(1))
    values: dict[str, float] = {}
    anchor_off: dict[str, int] = {}
    relation_of: dict[str, str] = {}
    bounds = []
    for i, link in zip((i for i, _ in hops), path_links):
        text = body[i]
        m = _ATOM_TIME.search(text)
        var, off = _term(m.group(1))
        t_link = (link["time_step"] if isinstance(link, dict) else link.time_step) * days_per_step
        value = t_link - (off if isinstance(off, int) else 0)
        if var in values and values[var] != value:
            return TimingCheck(False, f"links disagree on the rule's time {var}")
        values[var] = value
        anchor_off.setdefault(var, off if isinstance(off, int) else 0)
        relation_of.setdefault(var, parse_atom(text)[1])
        bounds += _BOUND.findall(text[m.end():])
    t_q = question_time * days_per_step
    if head_var not in values:
        return TimingCheck(False, f"no link fixes the rule's time {head_var}")
    anchor = anchor_off.get(head_var, 0)  # the anchor link lies (delay - anchor) days before the question
    gap = t_q - values[head_var] - anchor

    def days(x: float) -> str:
        return f"{x:g} day{'' if x == 1 else 's'}"

    if head_off == "d":
        want = (lo - anchor, hi - anchor)
    else:
        want = (head_off - anchor, head_off - anchor)
    said = days(want[0]) if want[0] == want[1] else f"{want[0]:g}-{days(want[1])}"
    if not want[0] <= gap <= want[1]:
        return TimingCheck(False, f"its {relation_of[head_var]} link lies {days(gap)} before the question; "
                                  f"the rule says {said}")

    def value_of(expr: str) -> float | None:
        var, off = _term(expr)
        return None if var not in values else values[var] + off

    for left, op1, mid, op2, right in bounds:
        a, b, c = value_of(left), value_of(mid), value_of(right)
        if None in (a, b, c):
            continue
        if not ((a <= b if op1 == "<=" else a < b) and (b <= c if op2 == "<=" else b < c)):
            return TimingCheck(False, f"its {relation_of.get(mid, mid)} link lies {days(t_q - b)} before the question, "
                                      f"outside the rule's bound {left} {op1} {mid} {op2} {right}")
    return TimingCheck(True, f"its {relation_of[head_var]} link lies {days(gap)} before the question "
                             f"({'as' if want[0] == want[1] else 'within what'} the rule says: {said})")


@dataclass
class RecoveryRow:
    rule: str
    setting: str
    questions: int
    answer_at_rank_1: float    # share of those questions the model answers correctly (Hits@1)
    top_path_follows_body: float  # relations, directions and timing (:func:`rule_followed`)
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
    per_day = days_per_step(explainer.kg.time_axis)
    for rule, (s, r, o, t, _) in todo:
        spec = rules[rule]
        for direction, ask, answer in (("object", s, o), ("subject", o, s)):
            e = explainer.explain(ask, r, t, answer, direction=direction, setting=setting, num_paths=num_paths)
            follows = [rule_followed(p.links, spec, direction, e.time_step, per_day).fits for p in e.paths]
            row = stats.setdefault(rule, [0, 0, 0, 0, []])
            row[0] += 1
            row[1] += e.rank == 1
            row[2] += bool(follows) and follows[0]
            row[3] += any(follows)
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
        import io

        from tpar.data.textfile import MAX_SMALL_BYTES, read_small_json, read_text

        for base in (Path(folder), Path(folder).parent):
            rj, pc = base / "rules.json", base / "provenance.csv"
            if rj.is_file() and pc.is_file():
                try:  # size-bounded reads: a data folder is anyone's
                    rules = {r["id"]: r for r in read_small_json(rj, "planted rules")["rules"]}
                    text = read_text(pc, MAX_SMALL_BYTES, "provenance file")
                    prov = {(r["subject"], r["relation"], r["object"], r["time"]): r["rule"]
                            for r in csv.DictReader(io.StringIO(text, newline=""))}
                    return cls(rules, prov)
                except (DataError, ValueError, KeyError, TypeError):
                    return None
        return None

    def rule_of(self, subject: str, relation: str, obj: str, time: str) -> dict | None:
        rid = self.provenance.get((subject, relation, obj, time))
        return self.rules.get(rid) if rid else None

    def answers_of(self, entity: str, relation: str, time: str, direction: str) -> list[tuple[str, dict]]:
        """(answer, rule) of every fact a planted rule made that answers the question (``entity``, ``relation``, ?,
        ``time``) (``direction`` "object"; "subject": (?, ``relation``, ``entity``, ``time``)), in name order."""
        out = []
        for (s, r, o, t), rid in self.provenance.items():
            if r == relation and t == time and rid in self.rules and (s if direction == "object" else o) == entity:
                out.append((o if direction == "object" else s, self.rules[rid]))
        return sorted(out, key=lambda ar: ar[0])


def path_follows(path_links: list[dict] | list, body: Iterable[str], head: str, direction: str) -> bool:
    """Whether a path (``TemporalPath.links`` or their dicts) walks the rule's body (relations and
    directions only; :func:`rule_followed` also checks the timing)."""
    got = tuple((x["relation"], bool(x["inverse"])) if isinstance(x, dict) else (x.relation, x.inverse)
                for x in path_links)
    return got == body_signature(body, head, direction)


def rule_followed(path_links: list, rule: dict, direction: str, question_time: int,
                  days_per_step: float | None = 1.0) -> TimingCheck:
    """Whether a path follows ``rule``: its relations walk the body (:func:`path_follows`) and its
    link times fit the rule's timing (:func:`timing_check`; skipped when the axis has no days)."""
    if not path_follows(path_links, rule["body"], rule["head"], direction):
        return TimingCheck(False, "its relations do not walk the rule's body")
    timing = timing_check(path_links, rule, direction, question_time, days_per_step)
    if timing is None:
        return TimingCheck(True, "its relations walk the rule's body (timing not checked: the time axis has no days)")
    return timing


def days_per_step(axis) -> float | None:
    """Days per time step of a :class:`~tpar.data.timeaxis.TimeAxis` (``None`` unless day-based)."""
    return float(axis.step) if axis.granularity == "day" else None
