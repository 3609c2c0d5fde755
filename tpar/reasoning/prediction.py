"""Answering a user's question "(subject, relation, ?, time)" with a checkpoint on a data set."""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from tpar.data.kg import TemporalKG
from tpar.data.lineage import grew_from, growth_text, training_range
from tpar.data.relation_matching import as_loaded
from tpar.errors import DataError, check_count, plural, probability_text  # noqa: F401 -- also imported from here
from tpar.graph.background import Background
from tpar.graph.index import TemporalGraphIndex
from tpar.evaluation.calibration import probabilities
from tpar.graph.queries import (OBJECT, SUBJECT, Direction, QueryBatch, Question, Setting, check_question_time,
                                resolve_setting)
from tpar.model.checkpoint import Checkpoint
from tpar.model.device import resolve_device


#: scores within TIE_ATOL + TIE_RTOL·|score| of each other tie: float32 summation order alone makes
#: entities with identical evidence differ in their last bits, a difference the model did not mean
TIE_ATOL, TIE_RTOL = 1e-6, 1e-5


@dataclass(kw_only=True)
class Answer:
    """One ranked entity. ``rank`` is its place in the list (ties listed by entity id); the model's
    own ranks are the range ``rank_low``..``rank_high``: 1 + the entities scoring higher, and the
    entities scoring higher or the same (the optimistic and pessimistic ranks; equal when nothing
    ties), "the same" meaning within float noise (:data:`TIE_ATOL`, :data:`TIE_RTOL`). Entities no path reaches score 0 and count in these ranks."""

    entity: str
    entity_id: int
    score: float
    probability: float  # softmax over all entities (Eq. 10's distribution), calibrated when T is known
    rank: int
    known: bool  # the fact (subject, relation, entity, time) is in the data
    rank_low: int = 0
    rank_high: int = 0
    reached: bool = True  # some temporal path leads to the entity (else h = 0 and score 0)

    @property
    def ties(self) -> int:
        """How many other entities share this answer's score."""
        return self.rank_high - self.rank_low

    def rank_text(self) -> str:
        return rank_range_text(self.rank_low, self.rank_high)


def rank_range_text(low: int, high: int) -> str:
    """A rank range as shown to a user: "3", or "5–6" when the entity ties with others."""
    return str(low) if high == low else f"{low}–{high}"


def rank_range(scores: torch.Tensor, value: float) -> tuple[int, int]:
    """(best, worst) rank of ``value`` among ``scores`` (E,), which include it, in any order: 1 + the scores clearly
    above it, and the scores above or the same up to float noise (:data:`TIE_ATOL`, :data:`TIE_RTOL`) -- the ranks
    :class:`Answer` shows, for one value."""
    scores = scores.detach().flatten()
    v = torch.tensor(value, dtype=scores.dtype)
    tol = tie_tolerance(v)  # the same bounds as rank_ranges, counted without sorting
    return 1 + int((scores > v + tol).sum()), int((scores >= v - tol).sum())


def tie_tolerance(values: torch.Tensor) -> torch.Tensor:
    """How far a score may lie from each of ``values`` and still tie with it (float noise)."""
    return TIE_ATOL + TIE_RTOL * values.abs()


def rank_ranges(sorted_scores: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per value, the (best, worst) rank it takes among ``sorted_scores`` (all entities' scores,
    ascending): 1 + the scores clearly above it, and the scores above or the same up to float noise
    (summation order alone makes symmetric entities differ in the last bits)."""
    n = len(sorted_scores)
    tol = tie_tolerance(values)
    above = torch.searchsorted(sorted_scores, values + tol, right=True)
    return n - above + 1, n - torch.searchsorted(sorted_scores, values - tol)


def unreached_tie(sorted_scores: torch.Tensor, probs: torch.Tensor, reached: torch.Tensor
                  ) -> tuple[tuple[int, int], float, int]:
    """(the unreached entities' tie at score 0 as a rank range, their probability together, the reached entities
    ranked after that tie), ((0, 0), 0, 0) when every entity is reached. Those after the tie are counted by
    position -- every one is reached, an unreached one scoring 0 -- as rank ranges within float tolerance need not
    nest (hostile 40: one entity at 87–88, beside a tie at 2–87, fell in no group)."""
    if bool(reached.all()):
        return (0, 0), 0.0, 0
    lo, hi = rank_ranges(sorted_scores, torch.zeros(1, dtype=sorted_scores.dtype))  # their common score 0
    return (int(lo[0]), int(hi[0])), float(probs[~reached].sum()), len(sorted_scores) - int(hi[0])


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


@dataclass(kw_only=True)
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


@dataclass(kw_only=True)
class Prediction(AnsweredQuestion):
    """The ranked answers and how sure they are.

    ``answers`` holds reached entities only (at most ``top_k``); the ``unreached`` ones all score 0
    and share one rank range (``unreached_rank``) and the probability ``unreached_probability``
    together. ``warnings`` says when the answers deserve less trust: a setting the model was not
    trained for, a time far from the data, nothing reached, a tie at the top. For a composite model
    (``combines`` not empty; :mod:`tpar.model.composite`) "reached" means that some member's temporal path reaches
    the entity or the history prior gives it something (ψ > 0): only entities with neither score 0."""

    answers: list[Answer]
    reached: int  # entities some temporal path reached
    warnings: list[str] = field(default_factory=list)
    num_entities: int = 0
    unreached_rank: tuple[int, int] = (0, 0)   # (best, worst) rank of the unreached entities' tie at score 0
    reached_below: int = 0                      # reached entities whose score is below 0: they rank after that tie
    unreached_probability: float = 0.0         # their probabilities summed
    model_setting: str = ""                     # what the checkpoint was trained for
    temperature: float | None = None            # the calibration's T (None: raw softmax, not calibrated)
    calibrator: str = ""                        # which calibrator the probabilities come from ("" : none)
    coverage: float | None = None               # the answer set's level, when one was asked for
    answer_set: list[str] = field(default_factory=list)  # the conformal set, best first (at most 100 names)
    answer_set_size: int = 0
    answer_set_probability: float | None = None  # the set's probabilities summed (None: no set asked for)
    answer_set_threshold: float | None = None   # the calibration's p threshold for the set's level (None: no set)
    answer_set_margin: tuple[float, float] | None = None  # (the set's lowest p, the highest p left out); None: none
    hypothetical: list[str] = field(default_factory=list)  # what-if changes to the data ("without (...)", "with (...)")
    unseen_changes: list[str] = field(default_factory=list)  # what-if changes the question cannot see, and why
    no_evidence: str = ""   # why the ranking carries no information ("" when it does): see NO_EVIDENCE_RATIO
    combines: str = ""      # a composite model: what the ranking combines ("2 models and the history prior"); "" else
    formula: str = ""       # a composite model: its score in symbols (CompositeModel.formula); "" else
    provenance: str = ""    # which data the model was trained on and answers over, and how far past its training facts
    calibrated_elsewhere: str = ""  # the data the calibration was fitted on when it is not this data ("" else)
    entity_self_linked: bool = False  # some fact links the question's entity to itself (a path may lead back to it)

    @property
    def unreached_rank_text(self) -> str:
        """Where the unreached entities' tie lies: "rank 11" for one, "ranks 11–280" for several, and the reached
        entities whose scores equal 0 up to float precision that share the tie, when any ("ranks 14–276, with 12
        reached entities whose scores are 0 to float precision": 251 unreached alone did not add up to 263 ranks)."""
        lo, hi = self.unreached_rank
        text = f"rank {lo}" if hi <= lo else f"ranks {lo}–{hi}"
        shared = (hi - lo + 1) - self.unreached
        if shared > 0:
            text += (f", with {plural(shared, 'reached entity', 'reached entities')} whose "
                     f"{'score is' if shared == 1 else 'scores are'} 0 to float precision")
        return text

    @property
    def reached_below_text(self) -> str:
        """The reached entities that score below 0, and so rank after the unreached entities' tie ("" when none):
        without it the tie's ranks and the count of reached entities did not add up (scale audit 40: 6,544 reached,
        the tie at 6543–7126)."""
        n = self.reached_below
        if not n:
            return ""
        return (f"{plural(n, 'reached entity', 'reached entities')} {'scores' if n == 1 else 'score'} below 0 "
                f"and {'ranks' if n == 1 else 'rank'} after {'it' if self.unreached == 1 else 'them'}")

    @property
    def calibrated(self) -> bool:
        """The probabilities are calibrated for this data: a calibration exists and was fitted on this data (or on
        data it grew from), not only on another data set the model was trained on."""
        return self.temperature is not None and not self.calibrated_elsewhere

    @property
    def has_evidence(self) -> bool:
        """Some answer is told apart from the others: a ranking worth showing."""
        return not self.no_evidence

    @property
    def unreached(self) -> int:
        return self.num_entities - self.reached

    def answer_set_note(self) -> str:
        """What the conformal answer set promises and what it holds for this question, in words ("" without a
        set): its level is an average over questions like the calibration's (split conformal), not a promise for
        this one, and the share of this question's probability the set holds says how sure the model is here
        -- a set that holds far less than its level is one the model is unsure of."""
        if self.coverage is None or self.answer_set_probability is None:
            return ""
        level, mass = f"{100 * self.coverage:g}%", probability_text(self.answer_set_probability)
        left = self.num_entities - self.answer_set_size
        text = (f"Sets built this way (p ≥ {probability_text(self.answer_set_threshold)}) hold the answer for {level} of questions "
                "like those the calibration was fitted on -- on average over questions, not for each one.")
        if not self.answer_set_size:
            return text + (f" For this question no entity reaches p ≥ {probability_text(self.answer_set_threshold)}: the set is "
                           "empty, and the model is unsure of every answer.")
        if not left:  # every entity: all of it (a float sum a hair under 1 read "> 99.9%")
            return text + " For this question the set holds every entity, so all of the model's probability: it " \
                          "cannot narrow the answer down here."
        text += f" For this question the model puts {mass} of its probability on the set"
        if self.answer_set_probability < self.coverage and left:
            text += (f", less than {level}: it is unsure here, and the {left:,} "
                     + ("entity left out has" if left == 1 else "entities left out share")
                     + f" the other {probability_text(1 - self.answer_set_probability)}")
            inside, outside = self.answer_set_margin or (0.0, 0.0)
            if outside > 0 and inside <= SET_MARGIN_RATIO * outside:  # in or out by a hair (walk-through 37)
                text += (f". Its last member ({probability_text(inside)}) and the likeliest entity left out "
                         f"({probability_text(outside)}) are about equally likely: which entities are in is close "
                         "to chance here")
        return text + "."

    def answer_set_lead(self, elsewhere: str = "") -> str:
        """"the 90% answer set: 3 of 280 entities" (the names follow it); ``elsewhere``: the data the set's level
        was calibrated on, named right after "answer set" ("the 90% answer set of ICEWS14: ...")."""
        if self.coverage is None:
            return ""
        n, of = self.answer_set_size, f" of {elsewhere}" if elsewhere else ""
        if not n:
            return f"the {100 * self.coverage:g}% answer set{of}: empty (no entity reaches its threshold)"
        return (f"the {100 * self.coverage:g}% answer set{of}: {n:,} of {self.num_entities:,} "
                f"entit{'y' if self.num_entities == 1 else 'ies'}")

    def to_dict(self) -> dict:
        d = asdict(self)
        for a, row in zip(self.answers, d["answers"]):
            row["rank_text"], row["ties"] = a.rank_text(), a.ties
        d["unreached"] = self.unreached
        d["has_evidence"] = self.has_evidence
        return d


#: an answer set's last member within this factor of the likeliest entity left out is in "by a hair"
SET_MARGIN_RATIO = 1.05

#: a question has no evidence when its most probable entity is at most this many times as probable as its least
#: probable one (every entity ≈ 1/E: nothing reached, every candidate tied, or scores that differ by a hair)
NO_EVIDENCE_RATIO = 1.01


#: why nothing is reached, for a single model and (format: what it combines) for a composite
NOTHING_REACHED = "no temporal path leads from the question's entity to any other entity"
NOTHING_REACHED_COMPOSITE = ("no temporal path of any of the {} leads from the question's entity to another entity, "
                             "and the history prior gives none of them anything")


def no_evidence_reason(scores: torch.Tensor, probs: torch.Tensor, reached: int, nothing: str = NOTHING_REACHED,
                       unreached_on_top: int = 0) -> str:
    """Why a question's ranking carries no information, in words ("" when it does): nothing but the question's
    own entity reached (``nothing`` says why); every entity's probability within 1% of the others'
    (:data:`NO_EVIDENCE_RATIO`); or the top score 0 shared by the ``unreached_on_top`` (at least 2) entities
    nothing reaches, every reached one scoring below them (the best answer is then any of those it knows nothing
    about: a ranking headed by the reached ones would list its least likely answers)."""
    if reached <= 1:
        return f"{nothing}: every answer ties at score 0"
    if unreached_on_top >= 2:
        return (f"every entity the model reaches scores below 0, the score of the {unreached_on_top:,} entities it "
                f"does not reach, so its best answer is a {unreached_on_top:,}-way tie of entities it has no "
                "evidence about")
    p_max, p_min = float(probs.max()), float(probs.min())
    if p_max <= NO_EVIDENCE_RATIO * p_min:
        lo, hi = float(scores.min()), float(scores.max())
        tie = "every entity scores the same" if hi - lo <= TIE_ATOL + TIE_RTOL * abs(hi) else (
            f"the scores differ by at most {hi - lo:.2g}")
        return (f"{tie}, so each of the {len(probs):,} entities gets about {probability_text(p_max)}: nothing the "
                "model saw tells them apart")
    return ""


class FactRows(list):
    """What-if facts read from a file: the (subject, relation, object, time) tuples, with the file and
    the row each came from, so that a problem with one names them (``tpar predict --with/--without``)."""

    def __init__(self, facts, file: str | None = None, rows: list[int] | None = None) -> None:
        super().__init__(facts)
        self.file = file
        self.rows = list(rows) if rows is not None else list(range(2, len(self) + 2))


def _origin(facts, i: int) -> tuple[str | None, int | None]:
    """(file, row) of the ``i``-th (1-based) fact of ``facts`` when it came from a file, else (None, None)."""
    if isinstance(facts, FactRows) and facts.file is not None:
        return facts.file, facts.rows[i - 1]
    return None, None


def _where(file: str | None, row: int | None, i: int) -> str:
    return f"{file}, row {row}" if file is not None else f"fact {i}"


def calibrated_elsewhere(checkpoint: Checkpoint, kg: TemporalKG, cal) -> str:
    """The name of the data calibration ``cal`` (of ``checkpoint``) was fitted on when that is neither ``kg`` nor data
    ``kg`` grew from ("" when it is, or when nothing is recorded to tell): its probabilities then describe that data,
    not this one, and are no more than a ranking here."""
    data = as_loaded(kg)
    fitted_on = cal.data_fingerprint or checkpoint.data_fingerprint
    if not fitted_on or grew_from(fitted_on, data):
        return ""
    return (checkpoint.data_name or "the model's training data") if fitted_on == checkpoint.data_fingerprint \
        else "other data"


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
        kg = checkpoint.fit(kg)  # data with other relations: matched by name (a MatchedKG), or refused
        self.warnings = checkpoint.check_fits(kg)
        self.checkpoint = checkpoint
        self.kg = kg
        self.device = resolve_device(device)
        self.model = checkpoint.build_model(self.device)
        facts = kg.all_facts()
        self._index = TemporalGraphIndex(facts, kg.num_entities, kg.num_relations).to(self.device)
        self._facts = facts
        self._known = {tuple(x) for x in facts.tolist()}
        #: entities some fact links to themselves (subject = object): a path (and a history prior) can lead there
        self.self_linked = kg.self_linked()
        self.last_time = int(facts[:, 3].max()) if len(facts) else 0
        self._hidden: tuple[tuple[int, int, int], Background] | None = None

    def own_entity_leads(self, top: int, question_entity: int) -> bool:
        """The top answer ``top`` is the question's own entity and no fact of the data links it to itself, so no
        path of links (nor a history prior) explains it: its score is its own state, kept by self-loops."""
        return top == question_entity and top not in self.self_linked

    @property
    def composite(self) -> bool:
        """The model combines several models and/or the history prior (:mod:`tpar.model.composite`)."""
        return self.checkpoint.kind == "composite"

    def member_view(self, i: int) -> "Predictor":
        """This predictor with member ``i`` of a composite as its model (same data, backgrounds and warnings):
        what explanations trace, member by member."""
        view = copy.copy(self)
        view.model = self.model.members[i]
        view.checkpoint = self.checkpoint.members[i]
        view._hidden = None
        return view

    def background(self, setting: Setting, subject: int, relation: int, time: int,
                   facts: np.ndarray | None = None) -> Background:
        """The links question (subject, relation, ?, time) may use (``relation`` ≥ R: a subject
        question about relation − R); see the class docstring. ``facts`` (n, 4): a what-if data set
        used instead of the known facts (same rules; nothing cached)."""
        R = self.kg.num_relations
        if facts is not None:
            if setting is not Setting.EXTRAPOLATION:
                facts = facts[~self._answers_it(facts, subject, relation, time)]
            return Background(TemporalGraphIndex(facts, self.kg.num_entities, R).to(self.device), setting)
        if setting is Setting.EXTRAPOLATION:
            return Background(self._index, setting)
        key = (subject, relation, time)
        hidden = self._hidden  # one read: other threads (app sessions) may replace it meanwhile
        if hidden is None or hidden[0] != key:
            f = self._facts
            index = TemporalGraphIndex(f[~self._answers_it(f, subject, relation, time)], self.kg.num_entities,
                                       R).to(self.device)
            hidden = self._hidden = (key, Background(index, setting))
        return hidden[1]

    def _answers_it(self, f: np.ndarray, subject: int, relation: int, time: int) -> np.ndarray:
        """Mask of the facts that answer (subject, relation, ?, time) (a subject question if relation ≥ R)."""
        R = self.kg.num_relations
        if relation < R:
            return (f[:, 0] == subject) & (f[:, 1] == relation) & (f[:, 3] == time)
        return (f[:, 2] == subject) & (f[:, 1] == relation - R) & (f[:, 3] == time)

    def resolve_facts(self, facts, what: str = "fact") -> np.ndarray:
        """(subject, relation, object, time) tuples of names and time labels -> (n, 4) ids; a
        :class:`DataError` naming the fact (and, for a :class:`FactRows` read from a file, the file
        and row) for an unknown name or time."""
        kg = self.kg
        out = []
        for i, fact in enumerate(facts, start=1):
            file, row = _origin(facts, i)
            label = f"{what} {i}" if file is None else what
            if len(fact) != 4:
                raise DataError(f"{label}: expected (subject, relation, object, time), got {tuple(fact)!r}",
                                file=file, row=row)
            s, r, o, t = fact
            try:
                step = kg.time_axis.parse(t)
                out.append((kg.entities.id(kg.entities.resolve(s, "entity")),
                            kg.relations.id(kg.relations.resolve(r, "relation")),
                            kg.entities.id(kg.entities.resolve(o, "entity")), step))
            except ValueError as e:
                raise DataError(f"{label} ({s}, {r}, {o}, {t}): {e}", file=file, row=row) from None
            except DataError as e:
                raise DataError(f"{label} ({s}, {r}, {o}, {t}): {e.problem}", file=file, row=row) from None
        return np.array(out, dtype=np.int64).reshape(-1, 4)

    def what_if_facts(self, without=(), extra=()) -> tuple[np.ndarray, list[str]]:
        """The known facts minus ``without`` plus ``extra`` (each a list of (s, r, o, time) name
        tuples, or :class:`FactRows` read from a file), and a line per change. A fact given twice
        (under any spelling that resolves to it) counts once, and says so; removing a fact that is not
        known is refused, as is adding one that is or one that is also removed (each would change
        nothing while seeming to). Problems name the file and row of a :class:`FactRows`."""
        return self._what_if(without, extra)[:2]

    def _what_if(self, without=(), extra=()) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
        """:meth:`what_if_facts` and the facts removed and added as id rows, (n, 4) each, each fact once."""
        f = self._facts
        gone = self.resolve_facts(without, "fact to remove")
        new = self.resolve_facts(extra, "fact to add")
        notes, seen, removed = [], {}, []
        keep = np.ones(len(f), dtype=bool)
        for i, (row, (s, r, o, t)) in enumerate(zip(gone, without), start=1):
            key, (file, line) = ("-", *row.tolist()), _origin(without, i)
            if key in seen:
                notes.append(f"{self._fact_text(row)} given twice ({seen[key]} and {_where(file, line, i)}): removed once")
                continue
            seen[key] = _where(file, line, i)
            hit = (f[:, 0] == row[0]) & (f[:, 1] == row[1]) & (f[:, 2] == row[2]) & (f[:, 3] == row[3])
            if not hit.any():
                raise DataError(f"fact to remove ({s}, {r}, {o}, {t}) is not in the data", file=file, row=line)
            keep &= ~hit
            removed.append(row)
            notes.append(f"without {self._fact_text(row)}")
        added = []
        for i, (row, (s, r, o, t)) in enumerate(zip(new, extra), start=1):
            key, (file, line) = ("+", *row.tolist()), _origin(extra, i)
            if key in seen:
                notes.append(f"{self._fact_text(row)} given twice ({seen[key]} and {_where(file, line, i)}): added once")
                continue
            if ("-", *row.tolist()) in seen:
                raise DataError(f"fact to add ({s}, {r}, {o}, {t}) is also among the facts to remove", file=file, row=line)
            seen[key] = _where(file, line, i)
            if tuple(row.tolist()) in self._known:
                raise DataError(f"fact to add ({s}, {r}, {o}, {t}) is already in the data", file=file, row=line)
            added.append(row)
            notes.append(f"with {self._fact_text(row)}")
        new = np.array(added, dtype=np.int64).reshape(-1, 4)
        return np.concatenate([f[keep], new]), notes, np.array(removed, dtype=np.int64).reshape(-1, 4), new

    def _unseen_changes(self, prepared: PreparedQuestion, removed: np.ndarray, added: np.ndarray) -> list[str]:
        """One line per what-if fact (``removed`` / ``added``: (n, 4) id rows) the question cannot see, so that
        removing or adding it changes nothing: in extrapolation a fact at or after t_q (a forecast sees only
        earlier facts), in interpolation a fact that answers the question itself (hidden); and per added fact
        dated outside the data's time range, that it is."""
        out = []
        t_q, first, last = prepared.time_step, *self.kg.time_range
        label = self.kg.time_axis.label
        for rows, verb in ((removed, "removing"), (added, "adding")):
            if not len(rows):
                continue
            if prepared.setting is Setting.EXTRAPOLATION:
                unseen = rows[:, 3] >= t_q
                why = f"a forecast (extrapolation) for {prepared.time_label} sees only facts before it"
            else:
                unseen = self._answers_it(rows, prepared.subject_id, prepared.relation_id, t_q)
                why = "interpolation hides the facts that answer the question itself"
            out += [f"{verb.capitalize()} {self._fact_text(row)} changes nothing: {why}." for row in rows[unseen]]
            if verb == "adding":
                out += [f"The added fact {self._fact_text(row)} lies outside the data's time range ({label(first)} to "
                        f"{label(last)}): its time gap to the question may be one the model never met in training." for row in rows[~unseen]
                        if not first <= row[3] <= last]
        return out

    def _fact_text(self, row) -> str:
        """A fact of ids as "(subject, relation, object, time)" in the data's spelling."""
        kg = self.kg
        s, r, o, t = (int(x) for x in row)
        return f"({kg.entities.name(s)}, {kg.relations.name(r)}, {kg.entities.name(o)}, {kg.time_axis.label(t)})"

    def resolve_setting(self, t: int, setting: str = "auto") -> Setting:
        """``auto``: extrapolation when ``t`` lies after the last known fact, else interpolation."""
        return resolve_setting(setting, t, self.last_time)

    @property
    def time_span(self) -> int:
        """Number of time steps the known facts span (+2, as the index counts it)."""
        return self._index.time_span

    def prepare(self, question: Question, facts: np.ndarray | None = None) -> PreparedQuestion:
        """Everything one forward pass needs for ``question``: ids, the setting, a batch of one query
        (answer unknown: -1) on the model's device, and the question's background (built from
        ``facts`` instead of the known facts for a what-if)."""
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
                                self.background(setting, s, r, t, facts))

    @torch.no_grad()
    def predict(self, subject: str, relation: str, time: str | int, *, direction: Direction = "object",
                setting: str = "auto", top_k: int | None = 10, coverage: float | None = None,
                without=(), extra=()) -> Prediction:
        """The ranked answers of (subject, relation, ?, time) (or (?, relation, subject, time));
        ``without`` / ``extra``: what-if facts removed from / added to the data (name tuples)."""
        return self.answer(Question(subject, relation, time, direction, setting), top_k, coverage,
                           without=without, extra=extra)

    @torch.no_grad()
    def answer(self, question: Question, top_k: int | None = 10, coverage: float | None = None, *,
               without=(), extra=()) -> Prediction:
        """:meth:`predict` for a :class:`~tpar.graph.queries.Question`. ``coverage`` (one of the
        calibrated levels, e.g. 0.9) adds the conformal answer set. ``without`` / ``extra`` answer
        a hypothetical: the same model on the data with those facts removed / added (the paths
        through a removed fact disappear; the question's own answers stay hidden in interpolation)."""
        check_count("top_k", top_k, 1)
        facts, notes, removed, added = self._what_if(without, extra) if (without or extra) else (None, [], None, None)
        prepared = self.prepare(question, facts)
        scores, reached = self.model.scores_and_reach(prepared.batch, prepared.background)
        pred = self._answers(prepared, scores[0].float().cpu(), reached[0].cpu(), top_k, coverage)
        if notes:
            pred.hypothetical, pred.unseen_changes = notes, self._unseen_changes(prepared, removed, added)
            pred.warnings[:0] = ["Hypothetical: answered on the data " + "; ".join(notes) + "."] + pred.unseen_changes
        pred.warnings += [n for n in self.checkpoint.load_notes if n not in pred.warnings]  # e.g. a calibration set aside
        return pred

    def calibration(self, setting: str):
        """The checkpoint's :class:`~tpar.evaluation.calibration.Calibration` for ``setting`` (or None)."""
        from tpar.evaluation.calibration import stored

        return stored(self.checkpoint.extra, setting)

    @property
    def training_steps(self) -> tuple[int | None, int | None]:
        """The steps (on this data's axis) of the first and last training facts the model was trained on, each
        None where not known (:func:`tpar.data.lineage.training_range`)."""
        ck = self.checkpoint
        labels = training_range(ck.data_fingerprint, ck.extra, self.kg, ck.time_axis.get("origin") is not None)
        steps = []
        for label in labels:
            try:
                steps.append(None if label is None else self.kg.time_axis.parse(label))
            except ValueError:
                steps.append(None)
        return steps[0], steps[1]

    @property
    def trained_until(self) -> int | None:
        """The step of the last training fact the model was trained on, when known (:attr:`training_steps`)."""
        return self.training_steps[1]

    def provenance_text(self, t: int) -> str:
        """Which data the model was trained on and which it answers over, and how far time ``t`` lies past the
        model's training facts, e.g. "model trained on ICEWS14 (training facts to 2014-10-31), answering over
        ICEWS14-grown (facts 2014-01-01 to 2014-12-30): 2014-12-31 lies 61 days past its training facts"."""
        kg, ck = self.kg, self.checkpoint
        data = as_loaded(kg)
        start, until = self.training_steps
        first, last = kg.time_range
        label, span = kg.time_axis.label, kg.time_axis.describe_span
        until_text = f"training facts to {label(until)}" if until is not None else ""
        if ck.data_fingerprint == data.fingerprint:  # short: the page already shows this data's time range
            trained_over = f"model trained on this data ({', '.join(x for x in (ck.data_name, until_text) if x)})"
        else:
            trained_over = (f"model trained on {ck.data_name}" + (f" ({until_text})" if until_text else "")
                            + f", answering over {data.name} (facts {label(first)} to {label(last)}"
                            + (f"; {growth_text(data.lineage, ck.data_fingerprint)}" if data.lineage else "") + ")")
        if until is None:
            where = (f"the checkpoint does not record when its training facts on {ck.data_name} end, and this data is "
                     f"not known to have grown from them, so how far {label(t)} lies past them cannot be said")
        elif t > until:
            where = f"{label(t)} lies {span(t - until)} past its training facts"
        elif start is None:
            where = f"{label(t)} does not lie past its training facts"
        elif t < start:
            where = f"{label(t)} lies {span(start - t)} before its training facts"
        else:
            where = f"{label(t)} lies inside its training period"
        return f"{trained_over}: {where}"

    def calibrated_elsewhere(self, cal) -> str:
        """The name of the data calibration ``cal`` was fitted on when that is neither this data nor data this one
        grew from ("" when it is, or when nothing is recorded to tell): its probabilities then describe that data,
        not this one, and are no more than a ranking here."""
        return calibrated_elsewhere(self.checkpoint, self.kg, cal)

    def baseline_warnings(self, setting: str) -> list[str]:
        """The training run's own test verdict for ``setting``, when it recorded one and the model lost: the
        frequency baseline (how often each answer answered the question before) ranked its test questions better
        (:func:`tpar.evaluation.baselines.frequency_comparison` of the figures stored in the checkpoint)."""
        from tpar.evaluation.baselines import frequency_comparison

        stored = self.checkpoint.extra.get("baseline_test")
        for s, model, base in frequency_comparison(self.checkpoint.metrics, stored if isinstance(stored, dict) else None):
            if s == setting and model < base:
                worse = "no better than" if f"{100 * model:.2f}" == f"{100 * base:.2f}" else "worse than"
                return [f"On its own test split this model ranks {setting} questions {worse} counting: MRR "
                        f"{100 * model:.2f}% against the frequency baseline's {100 * base:.2f}% (how often each answer "
                        "answered the question before). Read its answers with that in mind, or ask `tpar baseline`."]
        return []

    def setting_warnings(self, prepared: PreparedQuestion) -> list[str]:
        """Why this question's answers deserve less trust than the model's test figures suggest: a
        setting the checkpoint was not trained for, a time before or far after the known facts."""
        out = []
        trained, asked = self.checkpoint.setting, prepared.setting.value
        if trained not in (asked, "unified"):
            how = {"extrapolation": "forecasting from earlier facts only",
                   "interpolation": "filling gaps from facts before and after"}.get(trained, trained)
            out.append(f"This model was trained for {trained} only ({how}); it answers this {asked} question "
                       "outside its training setting, so expect lower accuracy than its test figures. "
                       + ("A unified or interpolation model fits this question better." if asked == "interpolation"
                          else "A unified or extrapolation model fits this question better.")
                       # a forecast can be asked at any time: the way to ask within the model's setting (walk 38)
                       + (" Or ask it as a forecast (`--setting extrapolation`; on the Ask page: Setting), the "
                          "setting this model knows." if trained == "extrapolation" else ""))
        out += self.baseline_warnings(asked)
        t_min, t_max = self.kg.time_range
        span = max(1, t_max - t_min)
        t = prepared.time_step
        window = self.checkpoint.history_window
        span_text = self.kg.time_axis.describe_span
        if t > t_max:
            gap = t - t_max
            if window and gap > window:
                out.append(f"{prepared.time_label} lies {span_text(gap)} after the last known fact, beyond the "
                           f"model's history window of {span_text(window)}: no fact is recent enough to be used.")
            elif gap > max(1, span // 10):
                out.append(f"{prepared.time_label} lies {span_text(gap)} after the last known fact (the data spans "
                           f"{span_text(span)}): " + ("a forecast" if asked == "extrapolation" else "an answer")
                           + " this far ahead rests on old evidence and is less reliable.")
        elif t < t_min:
            out.append(f"{prepared.time_label} lies {span_text(t_min - t)} before the first known fact: "
                       + ("a forecast uses only earlier facts, and there are none." if asked == "extrapolation"
                          else "only later facts can be used."))
        return out

    def _answers(self, prepared: PreparedQuestion, scores: torch.Tensor, reached: torch.Tensor,
                 top_k: int | None, coverage: float | None = None) -> Prediction:
        """Reached entities in score order with their rank ranges among all entities (unreached ones
        at score 0 included), the unreached entities as one group, and the warnings. Probabilities
        are calibrated (softmax(f / T), T fitted on valid for this setting) when the checkpoint has
        a calibration; ``coverage`` adds the conformal set {e : p_e ≥ threshold}."""
        kg, q = self.kg, prepared.question
        E = kg.num_entities
        cal = self.calibration(prepared.setting.value)
        temperature = cal.temperature if cal else None
        probs = cal.probabilities(scores) if cal is not None else probabilities(scores, None)
        answer_set: list[str] = []
        set_size, set_probability, set_threshold = 0, None, None
        set_margin: tuple[float, float] | None = None
        if coverage is not None:
            if cal is None:
                trained = self.checkpoint.setting
                within = (f"ask it as {trained} (`--setting {trained}`), the setting it was trained and calibrated "
                          "for, or " if trained not in (prepared.setting.value, "unified") and
                          self.calibration(trained) is not None else "")
                raise DataError(f"this checkpoint has no calibration for {prepared.setting.value} questions: {within}run "
                                f"`tpar calibrate --setting {prepared.setting.value}` to add answer sets")
            try:
                threshold = cal.threshold(coverage)
            except KeyError as e:
                raise DataError(str(e.args[0])) from None
            members = torch.nonzero(probs >= threshold).squeeze(1)
            members = members[torch.argsort(probs[members], descending=True, stable=True)]
            set_size = len(members)
            answer_set = [kg.entities.name(int(e)) for e in members[:100]]
            set_probability, set_threshold = float(probs[members].sum()), float(threshold)
            outside = probs[probs < threshold]
            if set_size and len(outside):
                set_margin = (float(probs[members].min()), float(outside.max()))
        sorted_scores = torch.sort(scores).values
        rank_lo, rank_hi = rank_ranges(sorted_scores, scores)
        reached_ids = torch.nonzero(reached).squeeze(1)
        order = reached_ids[torch.argsort(scores[reached_ids], descending=True, stable=True)]
        k = len(order) if top_k is None else min(top_k, len(order))
        s_id, r_base, t = prepared.subject_id, prepared.relation_id % kg.num_relations, prepared.time_step
        answers = []
        for pos, e in enumerate(order[:k].tolist(), start=1):
            fact = (s_id, r_base, e, t) if q.direction == "object" else (e, r_base, s_id, t)
            answers.append(Answer(entity=kg.entities.name(e), entity_id=e, score=float(scores[e]),
                                  probability=float(probs[e]), rank=pos, known=fact in self._known,
                                  rank_low=int(rank_lo[e]), rank_high=int(rank_hi[e]), reached=True))
        n_reached = int(reached.sum())
        unreached_rank, unreached_p, reached_below = unreached_tie(sorted_scores, probs, reached)
        warnings = list(self.warnings) + self.setting_warnings(prepared)
        only_subject = n_reached <= 1
        nothing = (NOTHING_REACHED_COMPOSITE.format(self.checkpoint.combination_text().split(" and ")[0])
                   if self.composite else NOTHING_REACHED)
        if only_subject:  # said once, as the reason there is no evidence (a warning beside it said it twice)
            nothing += " within the model's history window" if self.checkpoint.history_window else ""
        elif answers and answers[0].ties:
            warnings.append(f"The top answer ties with {answers[0].ties} other entit{'y' if answers[0].ties == 1 else 'ies'} "
                            f"(ranks {answers[0].rank_text()}): the model cannot tell them apart.")
        on_top = E - n_reached if n_reached < E and unreached_rank[0] == 1 else 0
        no_evidence = no_evidence_reason(scores, probs, n_reached, nothing, on_top)
        own = next((a for a in answers if a.entity_id == s_id), None)
        lead = own is not None and own is answers[0]
        # said beside it where a reader might take it for an answer: on top, or likelier than a uniform guess (at
        # 0.003% in seventh place it was a warning box about noise: walk-through 38 #11)
        if own is not None and not no_evidence and s_id not in self.self_linked and (lead or own.probability > 1 / E):
            role = "subject" if q.direction == "object" else "object"
            warnings.append((f"The top answer {own.entity!r}" if lead else f"Answer {own.rank_text()}, {own.entity!r},")
                            + f" is the question's own {role}, and no fact of the data links it to itself: its score "
                            "comes from staying there (self-loops) and from walks that leave and come back, "
                            + ("so read it as the model finding nothing more likely, not as evidence for such a fact."
                               if lead else "not from evidence for such a fact."))
        elsewhere = self.calibrated_elsewhere(cal) if cal is not None else ""
        if elsewhere:
            warnings.append(f"Probabilities are calibrated on {elsewhere}, the data the calibration was fitted on, not "
                            f"on {as_loaded(kg).name}: read them as a ranking, not as how often an answer is right"
                            + (", and the answer set's level as a guide, not a guarantee" if coverage is not None
                               else "") + ".")
        elif cal is not None:
            warnings.extend(cal.caveats())
        else:
            warnings.append("Probabilities are the raw softmax of the scores, not calibrated for this setting: run "
                            f"`tpar calibrate --setting {prepared.setting.value}` to know how often they are right.")
        return Prediction(subject=q.subject, relation=q.relation, direction=q.direction, time=prepared.time_label,
                          time_step=t, setting=prepared.setting.value, answers=answers, reached=n_reached,
                          warnings=warnings, num_entities=E, unreached_rank=unreached_rank,
                          reached_below=reached_below, unreached_probability=unreached_p,
                          model_setting=self.checkpoint.setting,
                          temperature=temperature, calibrator=cal.method if cal is not None else "",
                          coverage=coverage, answer_set=answer_set, answer_set_size=set_size,
                          answer_set_probability=set_probability, answer_set_threshold=set_threshold,
                          answer_set_margin=set_margin,
                          no_evidence=no_evidence,
                          combines=self.checkpoint.combination_text() if self.composite else "",
                          formula=self.model.formula() if self.composite else "",
                          provenance=self.provenance_text(t), calibrated_elsewhere=elsewhere,
                          entity_self_linked=s_id in self.self_linked)
