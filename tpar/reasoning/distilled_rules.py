"""What a trained model has learned, as temporal rules: the most important paths of many questions
(Eq. 14, :meth:`tpar.reasoning.explanation.Explainer.top_paths`), grouped into rule patterns.

For each head relation r, up to ``questions`` facts (s, r, o, t) of a split (valid by default, or
sampled training facts) are asked in both directions: the object question (s, r, ?, t) and the
subject question (?, r, o, t) (rules learned from the latter carry ``head_inverse``). The model's
``answers`` best answers of each question are explained; each answer's ``paths`` most important
paths (gradient importance of Eq. 14 with the marginal ranking the Evidence page and ``tpar
explain`` list; only paths that add evidence above :func:`~tpar.reasoning.explanation.evidence_floor`)
are the question's top paths. A path X → Z₁ → … → Y becomes a *pattern*: its links' relations in
order, each with its direction (walked backwards = inverse) and its time gap before the question,
bucketed (:class:`GapScale`): for data with a day length same day, 1-3 d, 4-10 d, 11-40 d and 41 d or
older; links after the question (interpolation) get the mirrored buckets; data in months, years or
plain steps use the same bounds in their own unit.

Per pattern of a head (and direction):

* ``support``: questions with the pattern among their top paths;
* ``confidence``: the share of those where the pattern's most important path ends at a true answer
  (any known answer of the question at its time: the time-aware filter's answers);
* ``importance``: the mean marginal importance of those paths (what the path adds to f(q, answer));
* ``examples``: two such questions, correct ones first.

Rules are ranked within a head and its direction by

    score = W⁻(correct, support) · support / questions,

W⁻ being the Wilson lower bound (z = 1.96) of the confidence and ``questions`` the head's questions
asked. ``correct / questions`` is the share of the head's questions that the rule answers right
through the model's own top paths: how much of what the model does right for this head the rule
accounts for. The Wilson bound (Wilson 1927; recommended over the normal approximation for small
counts by Brown, Cai and DasGupta 2001) shrinks it for rules seen a few times, so a rule seen twice
and right twice (W⁻ = 0.34) does not outrank one right in 40 of 50 questions (W⁻ = 0.67). Ranking
by confidence alone (TLogic's order) would put such rare rules first; ranking by support alone
would put rules the model uses but gets wrong first.
"""

from __future__ import annotations

import hashlib
import json
import math
import time as _time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from tpar.data.kg import TemporalKG
from tpar.data.timeaxis import TimeAxis
from tpar.errors import DataError, number_in, plural
from tpar.graph.queries import Question
from tpar.reasoning.explanation import Explainer, TemporalPath, evidence_floor

#: bucket bounds on the whole number of units between a link and the question: [0], [1, 3], [4, 10],
#: [11, 40], [41, ∞) before it (and mirrored after it)
BUCKET_EDGES = (0, 1, 4, 11, 41)
_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
#: z of the Wilson lower bound used by the score (95% two-sided)
WILSON_Z = 1.96
SCORE_TEXT = ("score = Wilson lower bound (z = 1.96) of the confidence × support / questions of the head "
              "(≤ the share of the head's questions the rule answers right)")


def wilson_lower(correct: int, n: int, z: float = WILSON_Z) -> float:
    """The Wilson score interval's lower bound of ``correct / n`` (0 when n = 0)."""
    if n <= 0:
        return 0.0
    p = correct / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z2 / n))


@dataclass(frozen=True)
class GapScale:
    """How a link's time gap before the question is bucketed: in days when the axis has a day length
    (seconds to days), else in the axis's own unit (months, years, steps)."""

    unit: str          # "d", or the axis's unit symbol ("mo", "y", "steps")
    per_step: float    # units per time step
    days: bool         # the unit is the day

    @classmethod
    def of(cls, axis: TimeAxis) -> "GapScale":
        if axis.granularity in _SECONDS:
            return cls("d", axis.step * _SECONDS[axis.granularity] / 86400, True)
        return cls(axis.unit, float(axis.step), False)

    def buckets(self, steps_before: np.ndarray) -> np.ndarray:
        """Signed bucket per gap (t_q − t_link in steps): 0 the same day (unit), 1..4 the bounds of
        :data:`BUCKET_EDGES` before the question, −1..−4 the same after it."""
        g = np.asarray(steps_before, dtype=np.float64) * self.per_step
        whole = np.floor(np.abs(g) + 1e-9)
        idx = np.searchsorted(np.asarray(BUCKET_EDGES, dtype=np.float64), whole, side="right") - 1
        return (np.sign(g) * idx).astype(np.int64)

    def bucket(self, steps_before: int) -> int:
        return int(self.buckets(np.array([steps_before]))[0])

    @staticmethod
    def bounds(bucket: int) -> tuple[int | None, int | None]:
        """[lo, hi] units before the question of a bucket (negative: after it; None: open)."""
        i = abs(bucket)
        lo, hi = BUCKET_EDGES[i], (BUCKET_EDGES[i + 1] - 1 if i + 1 < len(BUCKET_EDGES) else None)
        if bucket >= 0:
            return lo, hi
        return (None if hi is None else -hi), -lo

    def text(self, bucket: int) -> str:
        """The bucket as a time term: "t", "t-3..-1", "t-∞..-41", "t+1..+3" (a unit other than days is named)."""
        unit = "" if self.days else self.unit
        if bucket == 0:
            return "t" if self.days else f"t (same {unit})"
        lo, hi = self.bounds(bucket)
        if bucket > 0:
            return f"t-{'∞' if hi is None else hi}..-{lo}{unit}"
        return f"t+{-hi}..+{'∞' if lo is None else -lo}{unit}"

    def words(self, bucket: int) -> str:
        """The bucket in words: "at t", "1 to 3 days before t", "41 or more days before t", "1 to 3 days after t"
        (months and years by name, other units by their symbol)."""
        one, many = ("day", "days") if self.days else {"mo": ("month", "months"), "y": ("year", "years"),
                                                       "steps": ("step", "steps")}.get(self.unit, (self.unit, self.unit))
        if bucket == 0:
            return "at t" if self.days else f"in the same {one} as t"
        lo, hi = self.bounds(abs(bucket))  # the gap's size, either side
        side = "before" if bucket > 0 else "after"
        span = f"{lo} or more" if hi is None else f"{lo} to {hi}"
        return f"{span} {many} {side} t"


def bucket_from_bounds(lo: int | None, hi: int | None) -> int:
    """The signed bucket whose :meth:`GapScale.bounds` are (lo, hi); ``DataError`` for other bounds."""
    for b in range(-(len(BUCKET_EDGES) - 1), len(BUCKET_EDGES)):
        if GapScale.bounds(b) == (lo, hi):
            return b
    raise DataError(f"time gap [{lo}, {hi}] is not one of the rule buckets "
                    f"({', '.join(str(list(GapScale.bounds(b))) for b in range(len(BUCKET_EDGES)))} and mirrored)")


@dataclass(frozen=True)
class BodyAtom:
    """One link of a rule's body, in the order the path walks it."""

    relation: str
    inverse: bool           # walked from the fact's object to its subject
    bucket: int             # signed time bucket (:class:`GapScale`)

    def to_dict(self, scale: GapScale) -> dict:
        lo, hi = scale.bounds(self.bucket)
        return {"relation": self.relation, "inverse": self.inverse,
                "days_before": [lo, hi] if scale.days else None, "before": [lo, hi], "unit": scale.unit}


@dataclass
class RuleExample:
    """A question whose top paths hold the rule: the question as asked, the end of the rule's most
    important path there, whether that end is a true answer, and the path."""

    entity: str             # the question's entity (the known object of a subject question)
    relation: str
    time: str
    time_step: int
    direction: str          # object | subject
    setting: str
    answer: str             # where the path ends
    correct: bool
    true_answer: str        # the fact's own answer (others may be true as well)
    importance: float
    path: str               # the path as text (TemporalPath.describe)
    links: list[dict] = field(default_factory=list)  # per link: relation, inverse, time, time_step, delta (steps)

    def question_text(self) -> str:
        return Question(self.entity, self.relation, self.time, self.direction).text()

    def to_dict(self) -> dict:
        return asdict(self) | {"question": self.question_text()}

    @classmethod
    def from_dict(cls, d: dict) -> "RuleExample":
        """An example as ``to_dict`` wrote it, each field of its type (a ValueError naming the first that is not)."""
        texts = ("entity", "relation", "time", "direction", "setting", "answer", "true_answer", "path")
        for key in texts:
            if not isinstance(d.get(key), str):
                raise ValueError(f"an example's {key!r} must be text, not {repr(d.get(key))[:40]}")
        links = d.get("links", [])
        if not isinstance(links, list) or not all(isinstance(x, dict) for x in links):
            raise ValueError("an example's links must be a list of objects")
        return cls(**{k: d[k] for k in texts}, time_step=_typed(d, "time_step", int),
                   correct=_typed(d, "correct", bool), importance=_typed(d, "importance", float), links=links)


@dataclass
class DistilledRule:
    """A rule pattern of one head relation and direction with its statistics (module docstring)."""

    head: str
    head_inverse: bool      # learned from subject questions (?, head, X, t)
    rank: int               # 1 = best within (head, head_inverse)
    body: list[BodyAtom]
    support: int
    correct: int
    importance: float
    score: float
    questions: int          # the head's questions of this direction that were asked
    examples: list[RuleExample] = field(default_factory=list)

    @property
    def confidence(self) -> float:
        return self.correct / self.support if self.support else 0.0

    @property
    def confidence_low(self) -> float:
        return wilson_lower(self.correct, self.support)

    def _atoms(self) -> tuple[list[tuple[str, str, str, int]], tuple[str, str]]:
        """(subject, relation, object, bucket) of each body link, and the head's (subject, object): X the question's
        entity, Y the answer, Z1, Z2 the entities between, each link in the direction its fact reads."""
        nodes = ["X"] + [f"Z{i}" for i in range(1, len(self.body))] + ["Y"]
        atoms = [(nodes[i + 1], a.relation, nodes[i], a.bucket) if a.inverse else
                 (nodes[i], a.relation, nodes[i + 1], a.bucket) for i, a in enumerate(self.body)]
        return atoms, (("Y", "X") if self.head_inverse else ("X", "Y"))

    def text(self, scale: GapScale) -> str:
        """E.g. ``(X, Threaten, Y, t-3..-1) => (Y, Mobilize against, X, t)``: X the question's entity,
        Y the answer, Z1, Z2 the entities between."""
        atoms, (hs, ho) = self._atoms()
        return (" ∧ ".join(f"({u}, {r}, {v}, {scale.text(b)})" for u, r, v, b in atoms)
                + f" => ({hs}, {self.head}, {ho}, t)")

    def words(self, scale: GapScale) -> str:
        """The rule as a sentence, e.g. "if Y Threaten X 1 to 3 days before t, then X Mobilize against Y at t"."""
        atoms, (hs, ho) = self._atoms()
        return (f"if {', and '.join(f'{u} {r} {v} {scale.words(b)}' for u, r, v, b in atoms)}, "
                f"then {hs} {self.head} {ho} at t")

    def to_dict(self, scale: GapScale) -> dict:
        return {"head": self.head, "head_inverse": self.head_inverse, "rank": self.rank,
                "body": [a.to_dict(scale) for a in self.body], "support": self.support, "correct": self.correct,
                "confidence": self.confidence, "confidence_low": self.confidence_low, "importance": self.importance,
                "score": self.score, "questions": self.questions, "text": self.text(scale),
                "examples": [x.to_dict() for x in self.examples]}

    @classmethod
    def from_dict(cls, d: dict) -> "DistilledRule":
        """A rule as ``to_dict`` wrote it, every field of its type and range (a ValueError naming the first that is
        not: ``"inverse": "false"`` is not false, a rank of Infinity or a support below its correct count is no
        rule)."""
        if not isinstance(d, dict):
            raise ValueError("a rule must be an object")
        body = _typed(d, "body", list)
        if not 1 <= len(body) <= MAX_RULE_LENGTH:
            raise ValueError(f"a rule's body holds 1 to {MAX_RULE_LENGTH} links, not {len(body)}")
        atoms = []
        for a in body:
            if not isinstance(a, dict):
                raise ValueError("a body link must be an object")
            before = _typed(a, "before", list)
            if len(before) != 2 or not all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in before):
                raise ValueError(f"a link's 'before' is two whole numbers or nulls, not {str(before)[:60]}")
            atoms.append(BodyAtom(_typed(a, "relation", str), _typed(a, "inverse", bool), bucket_from_bounds(*before)))
        support = _typed(d, "support", int, 1)
        correct = _typed(d, "correct", int, 0)
        if correct > support:
            raise ValueError(f"a rule is correct {correct} times of {support}: more than its support")
        examples = d.get("examples", [])
        if not isinstance(examples, list) or not all(isinstance(x, dict) for x in examples):
            raise ValueError("a rule's examples must be a list of objects")
        return cls(_typed(d, "head", str), _typed(d, "head_inverse", bool, default=False), _typed(d, "rank", int, 1),
                   atoms, support, correct, _typed(d, "importance", float, 0.0), _typed(d, "score", float, 0.0, most=1.0),
                   _typed(d, "questions", int, 0), [RuleExample.from_dict(x) for x in examples])


#: the longest rule body read from a file (a model's paths are at most L = 64 links long)
MAX_RULE_LENGTH = 64


def _typed(d: dict, key: str, kind: type, least: float | None = None, *, most: float | None = None,
           default: object = ...) -> object:
    """``d[key]`` when it is a ``kind`` (a bool is no int or float; an int is taken as a float; a number must be
    finite) in ``least``..``most``, and for ``str`` not empty; a ValueError naming ``key`` and the value else."""
    if key not in d:
        if default is ...:
            raise ValueError(f"{key!r} is missing")
        return default
    value = d[key]
    shown = repr(value)[:40]
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{key!r} must be true or false, not {shown}")
        return value
    if kind is str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{key!r} must be a name, not {shown}")
        return value
    if kind in (int, float):
        if not (number_in(value, -2 ** 53, 2 ** 53, whole=True) if kind is int else number_in(value)):
            raise ValueError(f"{key!r} must be a finite {'whole ' if kind is int else ''}number, not {shown}")
        if least is not None and value < least:
            raise ValueError(f"{key!r} must be at least {least:g}, not {shown}")
        if most is not None and value > most:
            raise ValueError(f"{key!r} must be at most {most:g}, not {shown}")
        return float(value) if kind is float else value
    if not isinstance(value, kind):
        raise ValueError(f"{key!r} must be a {kind.__name__}, not {type(value).__name__}")
    return value


@dataclass
class HeadSummary:
    """One head relation and direction: how many questions were asked, how often the model's first
    answer was a true one, how many patterns its top paths showed."""

    head: str
    head_inverse: bool
    questions: int
    answered_first: float   # share of the questions whose top answer is a true answer
    patterns: int           # distinct patterns seen (rules kept: at most ``max_rules``)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RuleConfig:
    """What :func:`distill_rules` asks and keeps."""

    questions: int = 50           # facts per head relation (each asked in both directions)
    source: str = "valid"         # split the facts come from: valid, train or test
    setting: str = "auto"         # auto: the checkpoint's setting; a unified model: interpolation
    answers: int = 2              # the model's best answers explained per question
    paths: int = 3                # most important paths per answer
    relations: tuple[str, ...] = ()  # head relations (the data's names); () = every relation with facts
    max_rules: int = 50           # rules kept per head and direction (best by score)
    min_support: int = 2          # rules seen in fewer questions are dropped
    seed: int = 0

    def __post_init__(self) -> None:
        if self.source not in ("valid", "train", "test"):
            raise DataError(f"questions come from valid, train or test, not {self.source!r}")
        if self.setting not in ("auto", "extrapolation", "interpolation"):
            raise DataError(f"unknown setting {self.setting!r} (expected auto, extrapolation or interpolation)")
        for name in ("questions", "answers", "paths", "max_rules", "min_support"):
            if getattr(self, name) < 1:
                raise DataError(f"{name.replace('_', ' ')} must be at least 1, not {getattr(self, name)}")

    def to_dict(self) -> dict:
        return asdict(self) | {"relations": list(self.relations)}


@dataclass
class RuleSet:
    """Distilled rules of a checkpoint on a data set, ranked within each head and direction."""

    rules: list[DistilledRule]
    heads: list[HeadSummary]
    scale: GapScale
    meta: dict = field(default_factory=dict)

    def for_head(self, head: str, head_inverse: bool | None = None) -> list[DistilledRule]:
        return [r for r in self.rules if r.head == head and (head_inverse is None or r.head_inverse == head_inverse)]

    @property
    def head_names(self) -> list[str]:
        return list(dict.fromkeys(h.head for h in self.heads))

    def relation_names(self) -> list[str]:
        """Every relation the rules name, heads and bodies, first use first."""
        names = [r.head for r in self.rules] + [a.relation for r in self.rules for a in r.body]
        return list(dict.fromkeys(names + [h.head for h in self.heads]))

    def renamed(self, names: dict[str, str]) -> "RuleSet":
        """The same rules with relations renamed by ``names`` (others keep theirs); meta notes nothing."""
        if not names:
            return self
        n = lambda x: names.get(x, x)  # noqa: E731
        rules = [replace(r, head=n(r.head), body=[replace(a, relation=n(a.relation)) for a in r.body])
                 for r in self.rules]
        heads = [replace(h, head=n(h.head)) for h in self.heads]
        return RuleSet(rules, heads, self.scale, dict(self.meta))

    def fit(self, kg: TemporalKG, relation_map=None) -> "tuple[RuleSet, str | None]":
        """The rules in ``kg``'s relation names, and a note on how they were matched (``None`` when every name
        is ``kg``'s already and no ``relation_map`` is given): as a checkpoint's relations are matched
        (:func:`~tpar.data.relation_matching.match_relations`: the same name, the same normalised name, or a
        row of ``relation_map``, a data relation -> a rules relation). A relation no rule names is no problem
        (rules may cover a few heads); rules naming a relation ``kg`` lacks are left to the ranker, which sets
        them aside and says so. A bad map row is a :class:`DataError` naming the row."""
        from tpar.data.relation_matching import as_loaded, match_relations

        own = self.relation_names()
        if not relation_map and all(name in kg.relations for name in own):
            return self, None
        data = self.meta.get("data") or "another data set"
        m = match_relations(own, as_loaded(kg), model_name=data, mapping=relation_map,
                            model_label=f"the rules (distilled on {data})")
        renamed = {x.model_relation: x.data_relation for x in m.matched if x.model_relation != x.data_relation}
        used = {x.model_relation for x in m.matched}
        for name in own:  # unmatched, yet spelled like a data relation another rules relation now stands for:
            if name not in used and name in kg.relations:  # renamed out of the way, so the ranker sets it aside
                renamed[name] = f"{name} (not matched)"
        hows = {h: sum(x.how == h for x in m.matched) for h in ("exact", "normalised", "mapping")}
        missing = len(own) - len(m.matched)
        example = next(iter(renamed.items()), None)
        note = (f"the rules' {plural(len(own), 'relation')} read in {kg.name}'s names: "
                f"{hows['exact']} by the same name, "
                f"{hows['normalised']} by normalised name, {hows['mapping']} by the relation map"
                + (f" (e.g. {example[0][:60]!r} as {example[1][:60]!r})" if example else "")
                + (f"; {missing} not in {kg.name}" if missing else ""))
        return self.renamed(renamed), note

    def to_dict(self) -> dict:
        return {"rules": [r.to_dict(self.scale) for r in self.rules], "heads": [h.to_dict() for h in self.heads],
                "time_unit": self.scale.unit, "scale": asdict(self.scale), "meta": self.meta}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict, source: str = "rules JSON") -> "RuleSet":
        where = ""
        try:
            if not isinstance(d, dict):
                raise ValueError("a rules file is a JSON object")
            sc = _typed(d, "scale", dict)
            scale = GapScale(_typed(sc, "unit", str), _typed(sc, "per_step", float), _typed(sc, "days", bool))
            if scale.per_step <= 0:
                raise ValueError(f"the scale's per_step must be above 0, not {scale.per_step!r}")
            if scale.days != (scale.unit == "d"):  # GapScale.of: gaps are in days exactly when the unit is "d"
                raise ValueError(f"the scale's days is {scale.days} but its unit is {scale.unit[:20]!r} (days is "
                                 "true exactly when the unit is 'd')")
            rules = []
            for i, r in enumerate(_typed(d, "rules", list), start=1):
                where = f"rule {i}: "
                rules.append(DistilledRule.from_dict(r))
            where = ""
            heads = []
            for i, h in enumerate(_typed(d, "heads", list), start=1):
                where = f"head {i}: "
                if not isinstance(h, dict):
                    raise ValueError("a head summary must be an object")
                heads.append(HeadSummary(_typed(h, "head", str), _typed(h, "head_inverse", bool),
                                         _typed(h, "questions", int, 0), _typed(h, "answered_first", float, 0.0, most=1.0),
                                         _typed(h, "patterns", int, 0)))
            where = ""
            meta = d.get("meta", {})
            if not isinstance(meta, dict):
                raise ValueError("'meta' must be an object")
            where = "meta: "
            for key, kind in (("questions", int), ("seconds", float), ("config", dict)):
                if key in meta:
                    _typed(meta, key, kind, 0 if kind is not dict else None)
            for key in ("checkpoint", "data", "setting", "importance", "score", "data_fingerprint"):
                if key in meta and not isinstance(meta[key], str):
                    raise ValueError(f"{key!r} must be text, not {type(meta[key]).__name__}")
            return cls(rules, heads, scale, dict(meta))
        except DataError as e:  # a time gap that is no bucket
            raise DataError(f"not a rules file of `tpar rules --json` ({where}{e.problem})", file=source) from None
        except (KeyError, TypeError, ValueError) as e:
            raise DataError(f"not a rules file of `tpar rules --json` ({where}{type(e).__name__}: {e})",
                            file=source) from None

    @classmethod
    def read(cls, path: str | Path) -> "RuleSet":
        from tpar.data.textfile import read_small_json

        return cls.from_dict(read_small_json(path, "rules file"), str(path))

    def csv_rows(self) -> list[dict]:
        """One row per rule (written formula-safe by :func:`tpar.data.outputs.write_csv`)."""
        rows = []
        for r in self.rules:
            ex = [f"{x.question_text()} -> {x.answer} ({'right' if x.correct else 'wrong'}): {x.path}"
                  for x in r.examples]
            rows.append({"head": r.head, "head_inverse": r.head_inverse, "rank": r.rank, "rule": r.text(self.scale),
                         "body": "; ".join(f"{a.relation}{'^-1' if a.inverse else ''} {self.scale.text(a.bucket)}"
                                           for a in r.body),
                         "support": r.support, "correct": r.correct, "confidence": round(r.confidence, 4),
                         "confidence_low": round(r.confidence_low, 4), "importance": round(r.importance, 6),
                         "score": round(r.score, 6), "questions": r.questions,
                         "example_1": ex[0] if ex else "", "example_2": ex[1] if len(ex) > 1 else ""})
        return rows


# -- the questions -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RuleQuestion:
    entity: int
    relation: int           # base relation id
    time: int
    direction: str
    fact: tuple[int, int, int, int]


def resolve_setting(checkpoint_setting: str, setting: str = "auto") -> str:
    """``auto``: the checkpoint's setting; a unified model's rules are read in interpolation, which sees the
    links before and after the question (the before-links are the forecasting rules)."""
    if setting != "auto":
        return setting
    return "interpolation" if checkpoint_setting == "unified" else checkpoint_setting


def head_relations(kg: TemporalKG, config: RuleConfig) -> list[int]:
    """Relation ids of the heads asked about (names resolved in the data's spelling; unknown ones refused)."""
    facts = kg.facts(config.source)
    if len(facts) == 0:
        raise DataError(f"{kg.name}: the {config.source} split is missing or empty: no questions to ask "
                        "(--from train samples training facts)")
    if config.relations:
        ids = []
        for name in config.relations:
            rid = kg.relations.id(kg.relations.resolve(name, "relation"))
            if not (facts[:, 1] == rid).any():
                raise DataError(f"relation {kg.relations.name(rid)!r} has no facts in the {config.source} split of "
                                f"{kg.name}: no questions to ask about it")
            ids.append(rid)
        return list(dict.fromkeys(ids))
    return sorted(int(r) for r in np.unique(facts[:, 1]))


def rule_questions(kg: TemporalKG, config: RuleConfig) -> list[RuleQuestion]:
    """Up to ``config.questions`` facts per head relation (a sample seeded by the seed and the relation), each
    asked in both directions;
    questions asked twice (two facts with the same subject, relation and time) are kept once."""
    facts = kg.facts(config.source)
    out: dict[tuple, RuleQuestion] = {}
    for rid in head_relations(kg, config):
        rows = facts[facts[:, 1] == rid]
        if len(rows) > config.questions:  # seeded per relation: a head's questions do not depend on the others asked
            rng = np.random.default_rng([config.seed, rid])
            rows = rows[np.sort(rng.choice(len(rows), config.questions, replace=False))]
        for s, r, o, t in rows.tolist():
            for entity, direction in ((s, "object"), (o, "subject")):
                key = (entity, r, t, direction)
                out.setdefault(key, RuleQuestion(entity, r, t, direction, (s, r, o, t)))
    return list(out.values())


# -- distillation --------------------------------------------------------------------------------
@dataclass
class _Pattern:
    support: int = 0
    correct: int = 0
    importance: float = 0.0
    examples: list[tuple[bool, float, RuleExample]] = field(default_factory=list)


def _pattern(path: TemporalPath, scale: GapScale) -> tuple[tuple[str, bool, int], ...]:
    buckets = scale.buckets(np.array([-x.delta for x in path.links]))
    return tuple((x.relation, x.inverse, int(b)) for x, b in zip(path.links, buckets))


def distill_rules(explainer: Explainer, config: RuleConfig = RuleConfig(), *,
                  on_progress: Callable[[int, int], None] | None = None) -> RuleSet:
    """Rules of ``explainer``'s model on its data set (module docstring): every question of
    :func:`rule_questions` through :meth:`~tpar.reasoning.explanation.Explainer.top_paths`.
    ``on_progress(done, total)`` follows the questions."""
    t0 = _time.perf_counter()
    kg = explainer.kg
    ck = explainer.predictor.checkpoint
    setting = resolve_setting(ck.setting, config.setting)
    scale = GapScale.of(kg.time_axis)
    questions = rule_questions(kg, config)
    known: dict[tuple[int, int, int, str], set[int]] = {}
    for s, r, o, t in kg.all_facts().tolist():
        known.setdefault((s, r, t, "object"), set()).add(o)
        known.setdefault((o, r, t, "subject"), set()).add(s)
    patterns: dict[tuple[int, bool], dict[tuple, _Pattern]] = {}
    asked: dict[tuple[int, bool], list[int]] = {}  # head -> [questions, first answer right]
    names, rel_names = kg.entities.name, kg.relations.name
    for done, q in enumerate(questions, start=1):
        head = (q.relation, q.direction == "subject")
        truth = known.get((q.entity, q.relation, q.time, q.direction), set())
        question = Question(names(q.entity), rel_names(q.relation), kg.time_axis.label(q.time), q.direction, setting)
        top = explainer.top_paths(question, config.answers, num_paths=config.paths)
        stats = asked.setdefault(head, [0, 0])
        stats[0] += 1
        stats[1] += bool(top.answers) and top.answers[0].answer_id in truth and top.answers[0].rank == 1
        best: dict[tuple, tuple[float, object, TemporalPath]] = {}
        for ans in top.answers:
            floor = evidence_floor(ans.score)
            for path in ans.paths:
                if not path.meaningful or path.importance <= floor:
                    continue
                key = _pattern(path, scale)
                if key not in best or path.importance > best[key][0]:
                    best[key] = (path.importance, ans, path)
        by_pattern = patterns.setdefault(head, {})
        true_answer = q.fact[2] if q.direction == "object" else q.fact[0]
        for key, (imp, ans, path) in best.items():
            right = ans.answer_id in truth
            p = by_pattern.setdefault(key, _Pattern())
            p.support += 1
            p.correct += right
            p.importance += imp
            if len(p.examples) < 4:  # a few candidates; two are kept (right ones first)
                p.examples.append((right, imp, RuleExample(
                    top.subject, top.relation, top.time, top.time_step, top.direction, top.setting, ans.answer, right,
                    names(true_answer), imp, path.describe(),
                    [{"relation": x.relation, "inverse": x.inverse, "time": x.time, "time_step": x.time_step,
                      "delta": x.delta} for x in path.links])))
        if on_progress:
            on_progress(done, len(questions))
    rules: list[DistilledRule] = []
    heads: list[HeadSummary] = []
    for (rid, inv) in sorted(asked):
        n, first = asked[(rid, inv)]
        found = patterns.get((rid, inv), {})
        heads.append(HeadSummary(rel_names(rid), inv, n, first / n if n else 0.0, len(found)))
        kept = []
        for key, p in found.items():
            if p.support < config.min_support:
                continue
            ex = [x for _, _, x in sorted(p.examples, key=lambda e: (not e[0], -e[1]))[:2]]
            kept.append(DistilledRule(rel_names(rid), inv, 0, [BodyAtom(*a) for a in key], p.support, p.correct,
                                      p.importance / p.support, wilson_lower(p.correct, p.support) * p.support / n, n,
                                      ex))
        kept.sort(key=lambda r: (-r.score, -r.support, -r.importance, r.text(scale)))
        for i, r in enumerate(kept[:config.max_rules], start=1):
            r.rank = i
            rules.append(r)
    meta = {"checkpoint_setting": ck.setting, "trained_on": ck.data_name, "data": kg.name,
            "data_fingerprint": kg.fingerprint, "setting": setting, "config": config.to_dict(),
            "questions": len(questions), "importance": "gradient (Eq. 14), marginal ranking",
            "score": SCORE_TEXT, "buckets": [list(GapScale.bounds(b)) for b in range(len(BUCKET_EDGES))],
            "seconds": round(_time.perf_counter() - t0, 2)}
    return RuleSet(rules, heads, scale, meta)


# -- a cache of rule sets, one file per checkpoint, data set and configuration ---------------------
def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (a rewritten checkpoint gets a new cache entry)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cache_path(folder: str | Path, checkpoint_path: str | Path, kg: TemporalKG, config: RuleConfig) -> Path:
    """Where :func:`cached_rules` keeps the rules of this checkpoint (by content), data set (by fingerprint)
    and configuration."""
    key = json.dumps([file_digest(checkpoint_path), kg.fingerprint, config.to_dict()], sort_keys=True)
    return Path(folder) / f"rules-{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def cached_rules(folder: str | Path, checkpoint_path: str | Path, explainer: Explainer, config: RuleConfig, *,
                 on_progress: Callable[[int, int], None] | None = None) -> tuple[RuleSet, bool]:
    """(rules, read from the cache): the cached rule set of this checkpoint, data set and configuration, or
    one distilled now and written there (atomically; an unreadable cache file is recomputed)."""
    from tpar.data.outputs import write_text

    path = cache_path(folder, checkpoint_path, explainer.kg, config)
    if path.is_file():
        try:
            return RuleSet.read(path), True
        except DataError:
            pass
    rules = distill_rules(explainer, config, on_progress=on_progress)
    Path(folder).mkdir(parents=True, exist_ok=True)
    write_text(path, rules.to_json(), "rules cache")
    return rules, False


# -- planted rules (data with known generating rules: the sample world's rules.json) ---------------
#: an open bucket ("41 days or more") is searched this many units past its start for a fitting time
OPEN_BUCKET_SEARCH = 120


def follows_planted(rule: DistilledRule, planted: dict, scale: GapScale) -> bool:
    """Whether a distilled rule is the planted rule ``planted`` (a ``rules.json`` entry): the same head
    relation, a body that walks the planted body (relations and directions, from the question's entity:
    the head's subject for object questions, its object for ``head_inverse``;
    :func:`tpar.reasoning.rules.body_signature`), and time buckets that admit link times fitting the
    planted timing (:func:`tpar.reasoning.rules.timing_check`: some time in each atom's bucket, together,
    satisfies the rule's delays and bounds). Without a day length the timing is not checked."""
    from itertools import product

    from tpar.reasoning.rules import body_signature, parse_atom, timing_check

    direction = "subject" if rule.head_inverse else "object"
    if parse_atom(planted["head"])[1] != rule.head:
        return False
    try:
        want = body_signature(planted["body"], planted["head"], direction)
    except ValueError:
        return False
    if want != tuple((a.relation, a.inverse) for a in rule.body):
        return False
    if not scale.days or scale.per_step != 1.0:
        return True
    ranges = []
    for a in rule.body:
        lo, hi = scale.bounds(a.bucket)
        lo = -OPEN_BUCKET_SEARCH - (hi or 0) if lo is None else lo
        hi = lo + OPEN_BUCKET_SEARCH if hi is None else hi
        ranges.append(range(int(lo), int(hi) + 1))
    t_q = 10 * OPEN_BUCKET_SEARCH
    for gaps in product(*ranges):
        links = [{"time_step": t_q - g} for g in gaps]
        check = timing_check(links, planted, direction, t_q, 1.0)
        if check is None or check.fits:
            return True
    return False


def planted_ranks(rule_set: RuleSet, planted: list[dict], top: int = 3) -> list[dict]:
    """Per planted rule and question direction: the rank of the best distilled rule that is it
    (:func:`follows_planted`; None when none of the head's kept rules is), and whether it is among the ``top``."""
    from tpar.reasoning.rules import parse_atom

    out = []
    for p in planted:
        head = parse_atom(p["head"])[1]
        for inverse in (False, True):
            hit = next((r for r in rule_set.for_head(head, inverse) if follows_planted(r, p, rule_set.scale)), None)
            asked = next((h.questions for h in rule_set.heads if h.head == head and h.head_inverse == inverse), 0)
            out.append({"rule": p.get("id", ""), "head": head, "head_inverse": inverse, "questions": asked,
                        "rank": hit.rank if hit else None, "in_top": bool(hit and hit.rank <= top),
                        "learned": hit.text(rule_set.scale) if hit else "", "support": hit.support if hit else 0,
                        "confidence": hit.confidence if hit else None})
    return out
