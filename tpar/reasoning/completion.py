"""Completing facts that lack their subject or object: the first half of the paper's pipeline
(Sec. 5.3, Tables 3 and 5: interpolate the missing past facts, then forecast from the completed data).

A row ``(s, r, ?, t)`` (or ``(?, r, o, t)``, asked as ``(o, r⁻¹, ?, t)``) is a query like any
other: the ranker scores every entity (for TPAR the Eq. 9 score f(q, e)) from a background of the
data set's known facts — the incomplete rows are not facts, so their hidden entity can never leak
into it. ``interpolation`` sees known facts before and after t; ``extrapolation`` only t' < t.
Entities already known to answer the same question (the time-aware filter) are not proposed: the
row would be a duplicate otherwise. The probability of a proposal is the softmax over the remaining
entities of f / T (T: the checkpoint's temperature for the setting, fitted on valid with the same
filter, :mod:`tpar.evaluation.calibration`; T = 1 and ``calibrated=False`` without one).

Only confident proposals are filled by default (``tpar complete``, the Upload page): a probability
threshold is fitted on the data's valid questions for the precision the user picks
(:func:`fit_thresholds`, :func:`tpar.evaluation.calibration.precision_threshold`); a row whose best
proposal is below it stays empty, its best guesses listed. Any model whose relations cover the rows
completes them: the data is read in the model's relation vocabulary (:func:`relation_view`; facts of
relations the model does not know are no evidence to it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from tpar.data.kg import SPLITS, TemporalKG
from tpar.data.tables import IncompleteRow
from tpar.data.vocab import Vocabulary
from tpar.errors import DataError, plural
from tpar.evaluation.filtering import TimeAwareFilter
from tpar.graph.background import Background
from tpar.evaluation.calibration import Calibration, mask_own_entities, probabilities
from tpar.graph.queries import OBJECT, SUBJECT, QueryBatch, Setting, check_question_time, resolve_setting
from tpar.reasoning.prediction import TIE_ATOL, TIE_RTOL, probability_text

#: how many runner-up proposals a completion lists
ALTERNATIVES = 3
#: the most incomplete rows one call completes (about a minute per 10,000 on a laptop CPU with the
#: sample world's model; a larger file is refused with this number, to be split)
MAX_ROWS = 20_000


@dataclass(frozen=True)
class Proposal:
    entity: str
    probability: float


@dataclass
class Completion:
    """The proposal for one incomplete row (``entity`` None: nothing to propose, ``problem`` says why)."""

    row: IncompleteRow
    entity: str | None = None
    probability: float | None = None
    setting: str = ""
    ties: int = 0                    # other entities whose score equals the proposal's (float noise)
    alternatives: list[Proposal] = field(default_factory=list)
    known_answers: int = 0           # entities known to answer the same question: not proposed
    own_left_out: bool = False       # the row's own entity, which no fact of the data links to itself: not proposed
    calibrated: bool = False
    problem: str = ""
    threshold: float = 0.0           # the probability a proposal needs to be filled in (fitted: apply_thresholds)

    @property
    def fact(self) -> tuple[str, str, str, str] | None:
        """(subject, relation, object, time) with the proposal filled in; None without a proposal."""
        if self.entity is None:
            return None
        r = self.row
        return (r.subject or self.entity, r.relation, r.object or self.entity, r.time)

    def accepted(self, min_probability: float | None = None) -> bool:
        """A proposal at least ``min_probability`` likely, or (``None``) at least its :attr:`threshold` (what a
        completed CSV fills in, what joins train)."""
        need = self.threshold if min_probability is None else min_probability
        return self.entity is not None and (self.probability or 0.0) >= need

    def note(self) -> str:
        """How sure the proposal is, in words (ties, calibration, what was left out)."""
        if self.entity is None:
            return self.problem
        parts = [f"{self.row.missing} = {self.entity}"
                 + (f" ({probability_text(self.probability)}{'' if self.calibrated else ', uncalibrated'})"
                    if self.probability is not None else "")]
        if self.ties:
            parts.append(f"ties with {self.ties} other entit{'y' if self.ties == 1 else 'ies'}")
        left = ([f"{plural(self.known_answers, 'known answer')} of the same question"] if self.known_answers else []) \
            + (["the row's own entity"] if self.own_left_out else [])
        if left:  # the probability is over the others: said, so a lifted runner-up is not read as the model's first
            parts.append(f"{' and '.join(left)} not proposed (the probability is over the other entities)")
        return "; ".join(parts)


def complete(kg: TemporalKG, ranker, rows: Sequence[IncompleteRow], *, setting: str = "auto",
             calibration: Callable[[str], Calibration | None] = lambda setting: None, batch_size: int = 64,
             alternatives: int = ALTERNATIVES, evidence: str = "all",
             on_progress: Callable[[int, int], None] | None = None) -> list[Completion]:
    """Propose the missing entity of each row with ``ranker`` (anything with ``score(batch,
    background) -> (B, E)``: a :class:`~tpar.model.ranker.ModelRanker` or a baseline) on the known
    facts of ``kg``. ``calibration(setting)``: the stored calibration (temperature, top-answer map) or None. One
    :class:`Completion` per row, in order (its row spelled as the data spells the names); rows naming
    an unknown entity, relation or time get a ``problem`` instead of a proposal.

    ``evidence``: ``"all"`` reasons from every known fact; ``"train"`` from the training facts only
    -- required when the completions will join ``kg``'s own training facts (the Upload page), or
    valid and test facts would leak into training through them. Known answers of the same question
    are never proposed either way.

    At most :data:`MAX_ROWS` rows (a :class:`DataError` says so before any work);
    ``on_progress(done, total)`` follows the questions answered."""
    if evidence not in ("all", "train"):
        raise ValueError(f"evidence must be 'all' or 'train', not {evidence!r}")
    check_row_limit(len(rows))
    out = [Completion(r) for r in rows]
    facts = kg.all_facts() if evidence == "all" else kg.facts("train")
    last = int(facts[:, 3].max()) if len(facts) else 0
    R = kg.num_relations
    todo: dict[Setting, list[tuple[int, int, int, int, int]]] = {}
    for i, (c, r) in enumerate(zip(out, rows)):
        try:
            known_name, relation_name = kg.entities.resolve(r.known, "entity"), kg.relations.resolve(r.relation, "relation")
            entity, relation = kg.entities.id(known_name), kg.relations.id(relation_name)
            t = kg.time_axis.parse(r.time)
            check_question_time(kg, t)  # far outside the known times: refused, as for any question
        except (DataError, ValueError) as e:  # an unknown name (with close matches) or a time off the axis
            c.problem = f"row {r.row}: {e}"
            continue
        s = resolve_setting(setting, t, last)
        c.setting = s.value
        c.row = replace(r, relation=relation_name, **{"object" if r.missing == "subject" else "subject": known_name})
        rel = relation if r.missing == "object" else relation + R
        todo.setdefault(s, []).append((i, entity, rel, t, OBJECT if r.missing == "object" else SUBJECT))
    known = TimeAwareFilter(kg.all_facts(), kg.num_entities, R)
    self_linked = kg.self_linked()
    total, done = sum(len(v) for v in todo.values()), 0
    for s, items in todo.items():
        background = Background.from_facts(facts, kg.num_entities, R, s)
        cal = calibration(s.value)
        for a in range(0, len(items), batch_size):
            part = items[a: a + batch_size]
            cols = torch.tensor([x[1:] for x in part], dtype=torch.int64).T.contiguous()
            batch = QueryBatch(cols[0], cols[1], cols[2], torch.full((len(part),), -1), cols[3])
            scores = ranker.score(batch, background).double()
            # the row's own entity is left out where no fact links an entity to itself (a self-fact was filled at
            # 99.9998% from a runner-up at < 0.0001%: new-user walk 38)
            _fill(kg, [out[x[0]] for x in part], scores, known.pairs(batch), cal, alternatives,
                  own=(batch.subject, self_linked))
            done += len(part)
            if on_progress:
                on_progress(done, total)
    return out


def check_row_limit(n: int, file: str | None = None) -> None:
    """Refuse more than :data:`MAX_ROWS` incomplete rows at once, saying how many and what to do."""
    if n > MAX_ROWS:
        raise DataError(f"{n:,} incomplete rows; at most {MAX_ROWS:,} are completed at once (about a minute "
                        f"per 10,000 on a laptop CPU): split the file and complete the parts", file=file)


def relation_view(kg: TemporalKG, relations: Sequence[str]) -> TemporalKG:
    """``kg`` in another relation vocabulary (a model's): each fact's relation renumbered to its place in
    ``relations``; facts of relations not among them are left out (a model that never learned a relation
    cannot use its facts as evidence), and the notes say how many. Entities and times are unchanged."""
    if list(kg.relations.names) == list(relations):
        return kg
    where = {n: i for i, n in enumerate(relations)}
    to_new = np.array([where.get(n, -1) for n in kg.relations.names] or [-1], dtype=np.int64)
    splits, left_out = {}, 0
    for split in SPLITS:
        if split not in kg.splits:
            continue
        arr = kg.splits[split]
        new = to_new[arr[:, 1]] if len(arr) else np.zeros(0, dtype=np.int64)
        keep = new >= 0
        left_out += int((~keep).sum())
        out = arr[keep].copy()
        out[:, 1] = new[keep]
        splits[split] = out
    inferred = {(s, int(to_new[r]), o, t): p for (s, r, o, t), p in kg.inferred.items() if to_new[r] >= 0}
    unknown = [n for n in kg.relations.names if n not in where]
    note = (f"{plural(left_out, 'fact')} of {plural(len(unknown), 'relation')} the model does not know (e.g. "
            f"{unknown[0]!r}) {'is' if left_out == 1 else 'are'} no evidence to it" if left_out else "")
    return replace(kg, relations=Vocabulary(tuple(relations)), splits=splits, inferred=inferred,
                   notes=list(kg.notes) + ([note] if note else []))


def model_view(kg: TemporalKG, checkpoint) -> tuple[TemporalKG, bool]:
    """(``kg`` in ``checkpoint``'s relation ids, whether it was matched by name): data already matched to
    this checkpoint by :meth:`~tpar.model.checkpoint.Checkpoint.fit` (a ``MatchedKG``) as it is, else
    :func:`relation_view` (exact names)."""
    m = getattr(kg, "match", None)
    if m is not None and m.model_relations == tuple(checkpoint.relations):
        return kg, True
    return relation_view(kg, checkpoint.relations), False


def covers(checkpoint, relations: Sequence[str]) -> bool:
    """Whether ``checkpoint`` knows every one of ``relations`` (names as the data spells them)."""
    known = set(checkpoint.relations)
    return all(r in known for r in relations)


def complete_with_checkpoint(checkpoint, kg: TemporalKG, rows: Sequence[IncompleteRow], *, setting: str = "auto",
                             device: str = "auto", evidence: str = "all",
                             on_progress: Callable[[int, int], None] | None = None) -> list[Completion]:
    """:func:`complete` with a TPAR checkpoint whose relations cover the rows' (``kg`` is read in the
    checkpoint's relation vocabulary, :func:`relation_view`; a row of a relation it does not know gets a
    ``problem``; a different time unit is refused by ``check_fits``), its probabilities calibrated with the
    checkpoint's stored temperature per setting. Each completion's ``threshold`` is 0 (every proposal is
    accepted) until :func:`apply_thresholds` sets the fitted one. ``on_progress(done, total)``: as
    :func:`complete` reports it."""
    from tpar.evaluation.calibration import stored

    view, matched = model_view(kg, checkpoint)
    checkpoint.check_fits(view)
    known = set(checkpoint.relations)

    def foreign(r: IncompleteRow) -> bool:  # a relation of the data (in any spelling) the model lacks
        if matched:  # relations matched by name: an unmatched one is named by the vocabulary in complete()
            return False
        try:
            return kg.relations.resolve(r.relation, "relation") not in known
        except DataError:
            return False  # not the data's either: complete() says so, with the closest names

    out = {id(r): Completion(r, problem=f"row {r.row}: the model does not know relation {r.relation!r} (it was "
                                        "trained without it): choose a model that does")
           for r in rows if foreign(r)}
    progress = (lambda done, total: on_progress(done + len(out), len(rows))) if on_progress else None
    done = iter(complete(view, _ranker(checkpoint, device), [r for r in rows if id(r) not in out], setting=setting,
                         evidence=evidence, on_progress=progress,
                         calibration=lambda s: stored(checkpoint.extra, s)))
    return [out[id(r)] if id(r) in out else next(done) for r in rows]


def _ranker(checkpoint, device: str):
    from tpar.model.device import resolve_device
    from tpar.model.ranker import ModelRanker

    dev = resolve_device(device)
    return ModelRanker(checkpoint.build_model(dev), dev)


#: valid questions a completion threshold is fitted on (a seeded subset of larger valid splits)
THRESHOLD_QUERIES = 2000


def fit_thresholds(checkpoint, kg: TemporalKG, settings: Sequence[str], precision: float, *, device: str = "auto",
                   max_queries: int = THRESHOLD_QUERIES, seed: int = 0) -> dict:
    """Per setting, the calibrated probability a proposal needs so that, on ``kg``'s valid questions (the
    evaluation protocol's, a seeded subset of ``max_queries``), the model's first proposals at or above it
    were right at least ``precision`` of the time (:class:`~tpar.evaluation.calibration.PrecisionThreshold`;
    ``inf`` where none reaches it, or ``kg`` has no valid facts)."""
    from tpar.evaluation.calibration import PrecisionThreshold, collect, precision_threshold, stored

    view, _ = model_view(kg, checkpoint)
    checkpoint.check_fits(view)
    ranker = None
    out = {}
    for s in dict.fromkeys(settings):
        if not len(view.facts("valid")):
            out[s] = PrecisionThreshold(s, precision, float("inf"), float("nan"), 0, 0)
            continue
        ranker = ranker or _ranker(checkpoint, device)
        # the row's own entity out, as complete() leaves it out: the threshold holds for the proposals made (review)
        logits, answers = collect(view, ranker, s, "valid", max_queries=max_queries, seed=seed,
                                  self_linked=view.self_linked())
        cal = stored(checkpoint.extra, s)
        out[s] = precision_threshold(logits, answers, cal.temperature if cal else 1.0, precision, setting=s,
                                     top_map=cal.top_map if cal else None)
    return out


def apply_thresholds(completions: Sequence[Completion], thresholds: dict) -> None:
    """Set each completion's :attr:`Completion.threshold` to its setting's fitted one (``thresholds``: setting
    -> :class:`~tpar.evaluation.calibration.PrecisionThreshold`); a row asked in no fitted setting is never
    accepted by default."""
    for c in completions:
        fit = thresholds.get(c.setting)
        c.threshold = fit.threshold if fit is not None else float("inf")


def _fill(kg: TemporalKG, comps: list[Completion], scores: torch.Tensor, known: tuple[torch.Tensor, torch.Tensor],
          cal: Calibration | None, alternatives: int, own: tuple[torch.Tensor, frozenset[int]]) -> None:
    """Proposals from (B, E) scores: known answers out, and each row's own entity (``own``: the rows' entities (B,)
    and :meth:`~tpar.data.kg.TemporalKG.self_linked`, :func:`~tpar.evaluation.calibration.mask_own_entities`), the
    calibrated probabilities over the rest (raw softmax without a calibration), ties counted."""
    rows, ents = known
    masked = scores.clone()
    masked[rows, ents] = float("-inf")
    for b in mask_own_entities(masked, *own):
        comps[b].own_left_out = True
    probs = cal.probabilities(masked) if cal is not None else probabilities(masked, None)
    for b, c in enumerate(comps):
        c.known_answers = int((rows == b).sum())
        c.calibrated = cal is not None
        candidates = torch.isfinite(masked[b])
        if not candidates.any():
            c.problem = (f"row {c.row.row}: every entity already answers this question"
                         + (" or is the row's own" if c.own_left_out else ""))
            continue
        order = torch.argsort(masked[b], descending=True, stable=True)
        top = float(masked[b, order[0]])
        tied = (masked[b] - top).abs() <= TIE_ATOL + TIE_RTOL * abs(top)
        c.ties = int(tied.sum()) - 1
        if c.ties + 1 == int(candidates.sum()):
            c.problem = (f"row {c.row.row}: no evidence — every candidate scores the same "
                         f"({'no temporal path reaches any' if top == 0 else 'the ranking carries no information'})")
            continue
        e = int(order[0])
        c.entity, c.probability = kg.entities.name(e), float(probs[b, e])
        c.alternatives = [Proposal(kg.entities.name(int(x)), float(probs[b, x]))
                          for x in order[1: 1 + alternatives] if torch.isfinite(masked[b, x])]


def masked_rows(kg: TemporalKG, facts: np.ndarray, subject_masked: np.ndarray) -> list[IncompleteRow]:
    """Known facts (n, 4) as rows to complete, the subject (where ``subject_masked``) or else the object
    left out (kept nowhere in the rows); row numbers are the positions in ``facts``."""
    name, rel, label = kg.entities.name, kg.relations.name, kg.time_axis.label
    return [IncompleteRow(i, None if m else name(s), rel(r), name(o) if m else None, label(t))
            for i, ((s, r, o, t), m) in enumerate(zip(facts.tolist(), np.asarray(subject_masked).tolist()))]


def add_inferred(kg: TemporalKG, facts: np.ndarray, probabilities, *, name: str | None = None,
                 note: str = "") -> TemporalKG:
    """``kg`` with ``facts`` (n, 4 ids, in order) added to its *training* facts, each marked as inferred
    with its probability (nan: not recorded); a fact already known, or given twice, is added once or
    not at all. Inferred facts never join valid or test: those splits measure a model against
    observed facts only."""
    known = {tuple(x) for x in kg.all_facts().tolist()}
    inferred = dict(kg.inferred)
    new = []
    for f, p in zip(np.asarray(facts, dtype=np.int64).reshape(-1, 4).tolist(), probabilities):
        if tuple(f) not in known and tuple(f) not in inferred:
            inferred[tuple(f)] = float("nan") if p is None else float(p)
            new.append(f)
    splits = dict(kg.splits)
    splits["train"] = np.concatenate([kg.facts("train"), np.array(new, dtype=np.int64).reshape(-1, 4)])
    return replace(kg, splits=splits, inferred=inferred, name=name or kg.name,
                   notes=list(kg.notes) + [f"{plural(len(new), 'completed fact')} added to train, marked as inferred{note}"])


def with_completions(kg: TemporalKG, completions: Sequence[Completion],
                     min_probability: float | None = None) -> TemporalKG:
    """:func:`add_inferred` with the proposals of probability ≥ ``min_probability`` (``None``: each at least
    its own :attr:`Completion.threshold`; completions of ``kg``: their rows are in its spelling), in fact
    order."""
    chosen: dict[tuple[int, int, int, int], float | None] = {}
    for c in completions:
        if c.accepted(min_probability):
            s, r, o, t = c.fact  # type: ignore[misc]
            chosen[(kg.entities.id(s), kg.relations.id(r), kg.entities.id(o), kg.time_axis.parse(t))] = c.probability
    facts = sorted(chosen)
    return add_inferred(kg, np.array(facts, dtype=np.int64), [chosen[f] for f in facts],
                        note=f" (p ≥ {min_probability:g})" if min_probability else
                        " (confident proposals: p at or above the fitted threshold)" if min_probability is None and any(
                            c.threshold > 0 for c in completions) else "")


#: the columns of a completed CSV (``split`` only when the input had one)
COMPLETED_COLUMNS = ("subject", "relation", "object", "time", "probability", "completed", "alternatives")


def completed_rows(q, completions: Sequence[Completion], min_probability: float | None = None) -> list[dict]:
    """The rows of a completed CSV, in the input's row order: its complete facts as they were, each
    incomplete row with the proposal filled in when its probability is ≥ ``min_probability`` (``None``: its
    own fitted :attr:`Completion.threshold`; else left incomplete, the field empty, its best guesses in
    ``alternatives``: nothing is lost). ``q``: the input's
    :class:`~tpar.data.tables.CsvQuadruples` read with ``incomplete="keep"``."""
    rows = []
    for i, row in enumerate(q.rows):
        p = q.probabilities[i] if q.probabilities is not None else float("nan")
        rows.append((row, {"subject": q.subjects[i], "relation": q.relations[i], "object": q.objects[i],
                           "time": q.raw_times[i], **({"split": q.splits[i]} if q.splits is not None else {}),
                           "probability": "" if p != p else f"{p:.6g}",
                           "completed": "true" if q.inferred is not None and q.inferred[i] else "false",
                           "alternatives": ""}))
    for c in completions:
        r = c.row
        accepted = c.accepted(min_probability)
        rows.append((r.row, {"subject": r.subject or (c.entity if accepted else ""), "relation": r.relation,
                             "object": r.object or (c.entity if accepted else ""), "time": r.time,
                             **({"split": r.split or ""} if q.splits is not None else {}),
                             "probability": f"{c.probability:.6g}" if accepted else "",
                             "completed": "true" if accepted else "false",
                             # a proposal below the threshold is listed first among the alternatives
                             "alternatives": "; ".join(f"{a.entity} ({a.probability:.3g})" for a in
                                                       ([] if accepted or c.entity is None else
                                                        [Proposal(c.entity, c.probability or 0.0)]) + c.alternatives)}))
    return [d for _, d in sorted(rows, key=lambda x: x[0])]


def write_completed_csv(path, q, completions: Sequence[Completion], min_probability: float | None = None) -> int:
    """Write :func:`completed_rows` as CSV through the one formula-safe writer
    (:func:`tpar.data.outputs.write_csv`: a cell that would start a spreadsheet formula gets a leading
    apostrophe, which the table reader takes off again, so the file reads back as data with its
    inferred flags); atomic. Returns the number of rows."""
    from tpar.data.outputs import write_csv

    rows = completed_rows(q, completions, min_probability)
    header = list(COMPLETED_COLUMNS[:4]) + (["split"] if q.splits is not None else []) + list(COMPLETED_COLUMNS[4:])
    write_csv(path, rows, header, "completed CSV")
    return len(rows)
