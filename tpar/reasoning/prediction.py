"""Answering a user's question "(subject, relation, ?, time)" with a checkpoint on a data set."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch

from tpar.data.kg import TemporalKG
from tpar.errors import DataError
from tpar.graph.background import Background
from tpar.graph.index import TemporalGraphIndex
from tpar.graph.queries import OBJECT, SUBJECT, Direction, QueryBatch, Question, Setting, check_question_time
from tpar.model.checkpoint import Checkpoint
from tpar.model.device import resolve_device


@dataclass
class Answer:
    entity: str
    entity_id: int
    score: float
    probability: float  # softmax over all entities (Eq. 10's distribution)
    rank: int
    known: bool  # the fact (subject, relation, entity, time) is in the data


@dataclass(frozen=True)
class PreparedQuestion:
    """A :class:`~tpar.graph.queries.Question` resolved on a data set: ids, the time step, the setting
    it is answered in, a batch of one query and its background (the links it may use)."""

    question: Question
    subject_id: int
    relation_id: int          # in [0, 2R): a subject question asks relation + R
    time_step: int
    time_label: str
    setting: Setting
    batch: QueryBatch
    background: Background


@dataclass
class AnsweredQuestion:
    """A question as it was answered: the names asked, the resolved time and the setting used."""

    subject: str
    relation: str
    direction: str
    time: str                 # the time's label on the data's axis
    time_step: int
    setting: str              # extrapolation or interpolation (``auto`` resolved)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Prediction(AnsweredQuestion):
    answers: list[Answer]
    reached: int  # entities some temporal path reached
    warnings: list[str] = field(default_factory=list)


class Predictor:
    """Answers "(subject, relation, ?, time)" questions on a data set with a checkpoint.

    Backgrounds for a question (s, r, ?, t_q): extrapolation sees every known fact (all splits)
    with t < t_q; interpolation sees every known fact except the ones that answer the question
    itself -- (s, r, x, t_q) for any x (for a subject question (?, r, s, t_q): (x, r, s, t_q)) -- so a
    known answer is reasoned to from other facts, never read off its own fact (the evaluation
    rule, applied to every answer at once). ``setting="auto"`` picks extrapolation when t_q lies
    after the last known fact, else interpolation.
    """

    def __init__(self, checkpoint: Checkpoint, kg: TemporalKG, device: str | torch.device = "auto") -> None:
        self.warnings = checkpoint.check_fits(kg)
        self.checkpoint = checkpoint
        self.kg = kg
        self.device = resolve_device(device)
        self.model = checkpoint.build_model(self.device)
        facts = kg.all_facts()
        self._index = TemporalGraphIndex(facts, kg.num_entities, kg.num_relations).to(self.device)
        self._facts = facts
        self._known = {tuple(x) for x in facts.tolist()}
        self.last_time = int(facts[:, 3].max()) if len(facts) else 0
        self._hidden: tuple[tuple[int, int, int], Background] | None = None

    def background(self, setting: Setting, subject: int, relation: int, time: int) -> Background:
        """The links question (subject, relation, ?, time) may use (``relation`` ≥ R: a subject
        question about relation − R); see the class docstring."""
        if setting is Setting.EXTRAPOLATION:
            return Background(self._index, setting)
        key = (subject, relation, time)
        hidden = self._hidden  # one read: other threads (app sessions) may replace it meanwhile
        if hidden is None or hidden[0] != key:
            f, R = self._facts, self.kg.num_relations
            if relation < R:
                answers_it = (f[:, 0] == subject) & (f[:, 1] == relation) & (f[:, 3] == time)
            else:
                answers_it = (f[:, 2] == subject) & (f[:, 1] == relation - R) & (f[:, 3] == time)
            index = TemporalGraphIndex(f[~answers_it], self.kg.num_entities, R).to(self.device)
            hidden = self._hidden = (key, Background(index, setting))
        return hidden[1]

    def resolve_setting(self, t: int, setting: str = "auto") -> Setting:
        """``auto``: extrapolation when ``t`` lies after the last known fact, else interpolation."""
        if setting == "auto":
            return Setting.EXTRAPOLATION if t > self.last_time else Setting.INTERPOLATION
        return Setting.parse(setting)

    @property
    def time_span(self) -> int:
        """Number of time steps the known facts span (+2, as the index counts it)."""
        return self._index.time_span

    def prepare(self, question: Question) -> PreparedQuestion:
        """Everything one forward pass needs for ``question``: ids, the setting, a batch of one query
        (answer unknown: -1) on the model's device, and the question's background."""
        kg = self.kg
        subject, relation = kg.entities.resolve(question.subject, "entity"), kg.relations.resolve(question.relation, "relation")
        if (subject, relation) != (question.subject, question.relation):  # matched ignoring case: ask in the data's spelling
            question = Question(subject, relation, question.time, question.direction, question.setting)
        try:
            t = kg.time_axis.parse(question.time)
        except ValueError as e:
            raise DataError(f"{e} (times here look like {kg.time_axis.label(self.last_time)!r})") from None
        check_question_time(kg, t)
        s = kg.entities.id(question.subject)
        r = kg.relations.id(question.relation) + (0 if question.direction == "object" else kg.num_relations)
        setting = self.resolve_setting(t, question.setting)
        batch = QueryBatch(*(torch.tensor([x], device=self.device) for x in
                             (s, r, t, -1, OBJECT if question.direction == "object" else SUBJECT)))
        return PreparedQuestion(question, s, r, t, kg.time_axis.label(t), setting, batch,
                                self.background(setting, s, r, t))

    @torch.no_grad()
    def predict(self, subject: str, relation: str, time: str | int, *, direction: Direction = "object",
                setting: str = "auto", top_k: int | None = 10) -> Prediction:
        """The ranked answers of (subject, relation, ?, time) (or (?, relation, subject, time))."""
        return self.answer(Question(subject, relation, time, direction, setting), top_k)

    @torch.no_grad()
    def answer(self, question: Question, top_k: int | None = 10) -> Prediction:
        """:meth:`predict` for a :class:`~tpar.graph.queries.Question`."""
        prepared = self.prepare(question)
        scores = self.model(prepared.batch, prepared.background)[0].float().cpu()
        return self._answers(prepared, scores, top_k)

    def _answers(self, prepared: PreparedQuestion, scores: torch.Tensor, top_k: int | None) -> Prediction:
        kg, q = self.kg, prepared.question
        probs = torch.softmax(scores.double(), 0)
        order = torch.argsort(scores, descending=True, stable=True)
        k = len(order) if top_k is None else min(top_k, len(order))
        s_id, r_base, t = prepared.subject_id, prepared.relation_id % kg.num_relations, prepared.time_step
        answers = []
        for rank, e in enumerate(order[:k].tolist(), start=1):
            fact = (s_id, r_base, e, t) if q.direction == "object" else (e, r_base, s_id, t)
            answers.append(Answer(kg.entities.name(e), e, float(scores[e]), float(probs[e]), rank, fact in self._known))
        reached = int((scores != 0).sum())
        return Prediction(q.subject, q.relation, q.direction, prepared.time_label, t, prepared.setting.value, answers,
                          reached, list(self.warnings))
