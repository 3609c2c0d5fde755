"""Queries of the link-prediction task and the two reasoning settings."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

import numpy as np
import torch

from tpar.data.kg import TemporalKG
from tpar.errors import DataError


class Setting(str, Enum):
    """Which facts a query may see (its *background*), see :mod:`tpar.graph.background`.

    * ``extrapolation``: all known facts (train, valid and test) with t < t_q -- single-step
      forecasting with ground-truth history, as in the paper (Appendix E.1).
    * ``interpolation``: the training facts, before or after t_q, never the query's own fact
      nor its inverse (paper Section 4.1, Appendix D.1).
    """

    EXTRAPOLATION = "extrapolation"
    INTERPOLATION = "interpolation"

    @classmethod
    def parse(cls, value: "str | Setting") -> "Setting":
        try:
            return cls(value)
        except ValueError:
            raise DataError(f"unknown setting {value!r} (expected extrapolation or interpolation)") from None


#: direction codes of :attr:`QueryBatch.direction`
OBJECT, SUBJECT = 0, 1
Direction = Literal["object", "subject"]
DIRECTION_NAMES: tuple[Direction, Direction] = ("object", "subject")
SETTING_CHOICES = ("auto", "extrapolation", "interpolation")


def resolve_setting(setting: "str | Setting", time_step: int, last_time: int) -> Setting:
    """The setting of a question at ``time_step``: ``auto`` is extrapolation for a time after every
    known fact (``last_time``), else interpolation; otherwise the one named."""
    if setting == "auto":
        return Setting.EXTRAPOLATION if time_step > last_time else Setting.INTERPOLATION
    return Setting.parse(setting)


def settings_of(setting: "str | Setting") -> list[str]:
    """The settings a model trained for ``setting`` serves: both for ``unified`` (one model for
    interpolation and extrapolation, the paper's point), else the one named."""
    value = setting.value if isinstance(setting, Setting) else str(setting)
    return ["extrapolation", "interpolation"] if value == "unified" else [value]


@dataclass(frozen=True)
class Question:
    """A user's question in the data's own names and time labels.

    ``direction="object"`` asks (subject, relation, ?, time); ``"subject"`` asks (?, relation, subject,
    time), i.e. ``subject`` is then the known object. ``setting``: ``auto`` (extrapolation when the time
    lies after the last known fact, else interpolation), ``extrapolation`` or ``interpolation``.
    """

    subject: str
    relation: str
    time: str | int
    direction: Direction = "object"
    setting: str = "auto"

    def __post_init__(self) -> None:
        if self.direction not in DIRECTION_NAMES:
            raise DataError(f"direction must be object or subject, not {self.direction!r}")
        if self.setting not in SETTING_CHOICES:
            raise DataError(f"unknown setting {self.setting!r} (expected auto, extrapolation or interpolation)")

    def text(self, time_label: str | None = None) -> str:
        """"(subject, relation, ?, time)" or "(?, relation, subject, time)"."""
        t = self.time if time_label is None else time_label
        if self.direction == "object":
            return f"({self.subject}, {self.relation}, ?, {t})"
        return f"(?, {self.relation}, {self.subject}, {t})"


@dataclass
class QueryBatch:
    """B queries ``(subject, relation, ?, time) -> answer``.

    Relations are in ``[0, 2R)``: a subject query ``(?, r, o, t)`` is asked as ``(o, r + R, ?, t)``.
    ``answer`` is the true entity: the evaluator ranks it, and backgrounds use it only to keep
    the query's own fact (and its inverse) out of reach. All tensors are int64 of shape (B,).
    """

    subject: torch.Tensor
    relation: torch.Tensor
    time: torch.Tensor
    answer: torch.Tensor
    direction: torch.Tensor

    def __len__(self) -> int:
        return int(self.subject.shape[0])

    def __getitem__(self, idx) -> "QueryBatch":
        return QueryBatch(self.subject[idx], self.relation[idx], self.time[idx], self.answer[idx], self.direction[idx])

    def to(self, device) -> "QueryBatch":
        return QueryBatch(*(x.to(device) for x in (self.subject, self.relation, self.time, self.answer, self.direction)))


def make_queries(facts: np.ndarray, num_relations: int, directions: str = "both") -> QueryBatch:
    """Each fact (s, r, o, t) gives an object query (s, r, ?, t) -> o and a subject query
    (o, r + R, ?, t) -> s. ``directions``: ``both`` (default), ``object`` or ``subject``."""
    f = torch.as_tensor(np.asarray(facts, dtype=np.int64).reshape(-1, 4))
    s, r, o, t = f.unbind(1)
    n = f.shape[0]
    obj = QueryBatch(s, r, t, o, torch.full((n,), OBJECT, dtype=torch.int64))
    sub = QueryBatch(o, r + num_relations, t, s, torch.full((n,), SUBJECT, dtype=torch.int64))
    if directions == "object":
        return obj
    if directions == "subject":
        return sub
    if directions != "both":
        raise ValueError(f"unknown directions {directions!r}")
    return QueryBatch(*(torch.cat([a, b]) for a, b in zip(
        (obj.subject, obj.relation, obj.time, obj.answer, obj.direction),
        (sub.subject, sub.relation, sub.time, sub.answer, sub.direction))))


def default_question(kg: TemporalKG, setting: str = "extrapolation") -> Question:
    """A question to open on, one the data has evidence for (scale audit 40: the first fact at the last time opened
    YAGO on a question without evidence, and interpolation-only models on a forecast, outside their setting).

    ``extrapolation`` (and ``unified``): a forecast one step after the data (at the last time itself when the
    calendar ends there) about the subject and relation of the latest facts that repeat an earlier fact (a pattern
    that recurs; the last time's facts when none does), the one whose subject takes part in the most facts.
    ``interpolation``: a gap inside the data, as such a model is asked: the time of the middle of the test split's
    facts (valid's, else all), about the subject and relation of that time's fact chosen as above."""
    every = kg.all_facts()
    if not len(every):
        raise DataError(f"{kg.name}: no facts to ask about")
    _, t_max = kg.time_range
    degree = np.bincount(np.concatenate([every[:, 0], every[:, 2]]), minlength=kg.num_entities)

    def busiest(facts: np.ndarray) -> tuple[int, int]:
        """(subject, relation) of the fact among ``facts`` whose subject takes part in the most facts (first wins)."""
        s, r, _, _ = facts[int(np.argmax(degree[facts[:, 0]]))].tolist()
        return s, r

    if setting == "interpolation":
        pool = next((kg.facts(x) for x in ("test", "valid") if len(kg.facts(x))), every)
        times = np.sort(pool[:, 3])
        t = int(times[len(times) // 2])
        s, r = busiest(pool[pool[:, 3] == t])
        return Question(kg.entities.name(s), kg.relations.name(r), kg.time_axis.label(t))
    key = (every[:, 0] * kg.num_relations + every[:, 1]) * kg.num_entities + every[:, 2]  # (s, r, o) as one int64
    _, fact_id = np.unique(key, return_inverse=True)  # the same (s, r, o), any time
    first = np.full(int(fact_id.max()) + 1, np.iinfo(np.int64).max)
    np.minimum.at(first, fact_id, every[:, 3])  # when each (s, r, o) first holds
    again = every[every[:, 3] > first[fact_id]]  # facts met before: patterns that recur, which a forecast builds on
    pool = again[again[:, 3] == again[:, 3].max()] if len(again) else every[every[:, 3] == t_max]
    s, r = busiest(pool)
    return Question(kg.entities.name(s), kg.relations.name(r), kg.time_axis.label(min(t_max + 1, kg.time_axis.last_step)))


def check_question_time(kg: TemporalKG, t: int) -> None:
    """Refuse a question time farther outside the known facts than the data's own span (at least one
    step): the model has never met such relative times, and what it would say would mean nothing."""
    t_min, t_max = kg.time_range
    margin = max(t_max - t_min, 1)
    axis = kg.time_axis
    if t > t_max + margin or t < t_min - margin:
        span = axis.describe_span  # "35 years", "12,784 days": words, as every other message says a span
        where = (f"{span(t - t_max)} after the last known fact ({axis.label(t_max)})"
                 if t > t_max else f"{span(t_min - t)} before the first known fact ({axis.label(t_min)})")
        raise DataError(f"time {axis.label(t)!r} lies {where}; questions more than {span(margin)} (the data's span) "
                        "outside the known time range are refused")
