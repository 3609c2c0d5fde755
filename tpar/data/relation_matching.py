"""A model's relations matched to another data set's, so a checkpoint answers over data it was not trained on.

TPAR embeds relations, not entities: a checkpoint serves any data set whose relations can be put in
its own relation vocabulary. :func:`match_relations` pairs each of the data's relations with one of
the model's: the same name, else the same :func:`normalise_relation` key (case, underscores, spaces
and punctuation ignored: ICEWS14's ``Make_statement`` is ICEWS18's ``Make statement``), else an
explicit row of a mapping CSV (:func:`read_relation_map`). The :class:`RelationMatch` says what
matched, which relations did not (with their fact counts) and the share of facts and of questions
covered; :meth:`RelationMatch.check` refuses coverage below a threshold (default 95% of the facts).

:meth:`RelationMatch.apply` gives the data in the model's relation ids (a :class:`MatchedKG`):
matched relations keep the data's names, facts with an unmatched relation leave every split
(counted in the notes), entities are untouched (they may differ freely from the training data's),
and asking about an unmatched relation is answered by a message that names it.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tpar.data.kg import SPLITS, TemporalKG
from tpar.data.vocab import Vocabulary, _loose
from tpar.errors import DataError, plural

#: the default least share of the data's facts whose relation the model must know
DEFAULT_MIN_COVERAGE = 0.95


def normalise_relation(name: str) -> str:
    """The key relations are matched by: Unicode-normalised (NFKC), case-folded, every run of
    characters that are not letters or digits (underscores, spaces, punctuation) one space, trimmed.
    ``"Make_statement"``, ``"make statement"`` and ``"Make-Statement."`` share the key ``"make statement"``."""
    text = unicodedata.normalize("NFKC", str(name)).casefold()
    return " ".join(re.findall(r"[^\W_]+", text))


@dataclass(frozen=True)
class RelationMap:
    """Explicit pairs data relation -> model relation, with the file and row each came from."""

    pairs: dict[str, str]
    file: str | None = None
    rows: dict[str, int] = field(default_factory=dict)

    def where(self, data_relation: str) -> str:
        row = self.rows.get(data_relation)
        return f"row {row}" if row is not None else f"entry {data_relation!r}"


def _cut(row: list[str]) -> str:
    """A map row for a message: at most 4 cells of at most 80 characters."""
    return repr([c[:80] for c in row[:4]] + (["…"] if len(row) > 4 else []))


def read_relation_map(path: str | Path) -> RelationMap:
    """A mapping CSV: rows ``data relation, model relation`` (a header row ``data_relation,model_relation``
    is optional; blank rows and rows starting with ``#`` are skipped). Every bad row (not two fields,
    an empty field, a data relation mapped twice to different model relations) is reported in one
    :class:`DataError` naming the file, the rows and their values."""
    from tpar.data.textfile import MAX_SMALL_BYTES, read_text

    p = Path(path)
    text = read_text(p, MAX_SMALL_BYTES, "relation map")
    mapping: dict[str, str] = {}
    first_row: dict[str, int] = {}
    problems: list[str] = []
    from tpar.data.tables import allow_fields_up_to, line_ends_to_newlines
    from tpar.data.textfile import Marks

    allow_fields_up_to(len(text))
    # rows end at the file's line ends only (str.splitlines would also end one at a form feed, U+2028 or U+0085
    # inside a relation's name, and shift every later row number)
    for i, row in enumerate(csv.reader(line_ends_to_newlines(text, Marks(), p).split("\n")), start=1):
        cells = [c.strip() for c in row]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if i == 1 and [normalise_relation(c) for c in cells] == ["data relation", "model relation"]:
            continue
        if len(cells) != 2:
            problems.append(f"row {i}: expected 2 fields (data relation, model relation), got {len(cells)}: {_cut(row)}")
            continue
        data_rel, model_rel = cells
        if not data_rel or not model_rel:
            problems.append(f"row {i}: empty {'data' if not data_rel else 'model'} relation: {_cut(row)}")
            continue
        if data_rel in mapping and mapping[data_rel] != model_rel:
            problems.append(f"row {i}: {data_rel[:80]!r} is mapped again, to {model_rel[:80]!r} "
                            f"(row {first_row[data_rel]} maps it to {mapping[data_rel][:80]!r})")
            continue
        mapping[data_rel] = model_rel
        first_row.setdefault(data_rel, i)
    if problems:
        raise DataError(f"{plural(len(problems), 'bad row')} in the relation map: " + "; ".join(problems[:10])
                        + (f"; … {len(problems) - 10} more" if len(problems) > 10 else ""), file=p)
    return RelationMap(mapping, str(p), first_row)


@dataclass(frozen=True)
class MatchedRelation:
    """One data relation and the model relation it is read as; ``how``: exact, normalised or mapping."""

    data_relation: str
    model_relation: str
    how: str
    facts: int


@dataclass(frozen=True)
class UnmatchedRelation:
    """A data relation the model does not know, its fact count (all splits) and why it is unmatched."""

    data_relation: str
    facts: int
    reason: str


@dataclass
class RelationMatch:
    """How a data set's relations map to a model's, and how much of the data that covers.

    ``data_to_model[i]``: the model relation id of data relation i, or -1. Questions are the facts of
    a split asked in both directions, so a split's question coverage is its fact coverage."""

    model_name: str
    data_name: str
    model_relations: tuple[str, ...]
    data_relations: tuple[str, ...]
    data_to_model: np.ndarray
    matched: list[MatchedRelation]
    unmatched: list[UnmatchedRelation]
    facts_total: int
    facts_covered: int
    split_facts: dict[str, tuple[int, int]] = field(default_factory=dict)  # split -> (covered, total)
    min_coverage: float = DEFAULT_MIN_COVERAGE

    @property
    def identical(self) -> bool:
        """The data uses the model's very relation vocabulary (same names, same order)."""
        return self.data_relations == self.model_relations

    @property
    def fact_coverage(self) -> float:
        """Share of the data's facts (all splits) whose relation the model knows."""
        return self.facts_covered / self.facts_total if self.facts_total else 1.0

    def question_coverage(self, split: str = "test") -> float:
        """Share of ``split``'s questions (both directions of each fact) the model can be asked."""
        covered, total = self.split_facts.get(split, (0, 0))
        return covered / total if total else 1.0

    def questions(self, split: str = "test") -> tuple[int, int]:
        """(answerable, all) questions of ``split``: two per fact."""
        covered, total = self.split_facts.get(split, (0, 0))
        return 2 * covered, 2 * total

    def describe(self) -> str:
        """One line: "trained on ICEWS14, applied to ICEWS18: 223 of 256 relations matched, 99.9% of facts"."""
        return (f"trained on {self.model_name}, applied to {self.data_name}: {len(self.matched)} of "
                f"{len(self.data_relations)} relations matched, {share_text(self.fact_coverage)} of facts")

    def report(self, split: str = "test", top: int = 10) -> str:
        """Several lines: the summary, how the matches were made, test question coverage, the unmatched."""
        hows = {h: sum(m.how == h for m in self.matched) for h in ("exact", "normalised", "mapping")}
        ans, total = self.questions(split)
        lines = [self.describe(),
                 f"  matched: {hows['exact']} by the same name, {hows['normalised']} by normalised name, "
                 f"{hows['mapping']} by the relation map; {len(self.model_relations) - len(self.matched)} of the "
                 f"model's {len(self.model_relations)} relations unused",
                 f"  facts: {self.facts_covered:,} of {self.facts_total:,} kept ({share_text(self.fact_coverage)}); "
                 f"{self.facts_total - self.facts_covered:,} with an unmatched relation left out of the background"]
        if total:
            lines.append(f"  {split} questions: {ans:,} of {total:,} answerable ({share_text(ans / total)})")
        if self.unmatched:
            shown = ", ".join(f"{u.data_relation!r} ({plural(u.facts, 'fact')})" for u in self.unmatched[:top])
            more = f", … {len(self.unmatched) - top} more" if len(self.unmatched) > top else ""
            lines.append(f"  unmatched: {shown}{more}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        ans, total = self.questions("test")
        return {"trained_on": self.model_name, "applied_to": self.data_name, "summary": self.describe(),
                "relations": {"data": len(self.data_relations), "model": len(self.model_relations),
                              "matched": len(self.matched)},
                "facts": {"covered": self.facts_covered, "total": self.facts_total, "share": self.fact_coverage},
                "test_questions": {"answerable": ans, "total": total},
                "matched": [vars(m) for m in self.matched if m.how != "exact"],
                "unmatched": [vars(u) for u in self.unmatched], "min_coverage": self.min_coverage}

    def all_question_metrics(self, result, split: str = "test", mode: str = "realistic") -> dict:
        """Metrics of an evaluation on the matched data (``result``: an EvaluationResult, which ranks
        answerable questions only) both ways: over the answerable questions, and over all of the
        split's questions with each unanswerable one (unmatched relation) counted as a miss (reciprocal
        rank 0, no hit). On a seeded subset of the answerable questions the second is the subset's
        figure scaled by the whole split's answerable share (its expected value), and says so."""
        ans, total = self.questions(split)
        share = ans / total if total else 1.0
        m = result.metrics(mode)
        sub = "subset" in getattr(result, "params", {})
        scaled = {"mrr": m.mrr * share, **{f"hits@{k}": v * share for k, v in m.hits.items()}}
        if ans == total:  # nothing to count as a miss: the figures above are over all of them (walk-through 38 #7)
            text = (f"relations: {self.describe()}; every one of the {total:,} {split} questions is about a matched "
                    "relation: none is counted as a miss, and the metrics above are over "
                    + (f"a sample of {m.count:,} of them" if sub else "all of them"))
        else:
            text = (f"relations: {self.describe()}; metrics above are over the {m.count:,} "
                    f"{'sampled ' if sub else ''}answerable questions; over all {total:,} {split} questions, "
                    f"the {total - ans:,} with an unmatched relation counted as misses"
                    + (" (scaled by the split's answerable share)" if sub else "")
                    + f": MRR {100 * scaled['mrr']:.2f}, H@1 {100 * scaled['hits@1']:.2f}, "
                      f"H@3 {100 * scaled['hits@3']:.2f}, H@10 {100 * scaled['hits@10']:.2f} ({mode})")
        return {"answerable_questions": ans, "all_questions": total, "answerable_share": share,
                "ranked": m.count, "sampled": sub, "mode": mode,
                "answerable": {"mrr": m.mrr, **{f"hits@{k}": v for k, v in m.hits.items()}},
                "unanswerable_as_misses": scaled, "text": text}

    def check(self, min_coverage: float | None = None) -> None:
        """Refuse (:class:`DataError`) when fewer than ``min_coverage`` of the facts are covered."""
        need = self.min_coverage if min_coverage is None else min_coverage
        if not 0.0 <= need <= 1.0:
            raise DataError(f"minimum coverage {need!r} is not between 0 and 1")
        if self.fact_coverage < need:
            worst = ", ".join(f"{u.data_relation!r} ({plural(u.facts, 'fact')})" for u in self.unmatched[:5])
            raise DataError(
                f"the model trained on {self.model_name} does not cover {self.data_name}: its relations match "
                f"{len(self.matched)} of {len(self.data_relations)} relations, {share_text(self.fact_coverage)} of the "
                f"facts, below the required {share_text(need)}" + (f"; unmatched: {worst}" if worst else "")
                + ". Map the rest with a relation map CSV (data relation, model relation) or lower the minimum coverage")

    def apply(self, kg: TemporalKG) -> "MatchedKG":
        """``kg`` in the model's relation ids (see the module docstring)."""
        if tuple(kg.relations.names) != self.data_relations:
            raise ValueError("this match was made for another data set's relations")
        m2d = {int(m): d for d, m in enumerate(self.data_to_model.tolist()) if m >= 0}
        used = {kg.relations.name(d) for d in m2d.values()}
        names = []
        for m, model_name in enumerate(self.model_relations):
            if m in m2d:
                names.append(kg.relations.name(m2d[m]))
            else:  # a model relation without data: its own name marked, kept apart from the data's names
                name = f"{model_name} (model only)"
                while name in used or name in names:
                    name = f"{name} (model only)"
                names.append(name)
        unknown = {u.data_relation: (f"relation {u.data_relation!r} of {self.data_name} has no counterpart among the "
                                     f"relations of the model trained on {self.model_name} ({u.reason}; its "
                                     f"{plural(u.facts, 'fact')} {'is' if u.facts == 1 else 'are'} left out), so the model cannot be asked about it; "
                                     "map it with a relation map CSV (data relation, model relation)")
                   for u in self.unmatched}
        lut = np.asarray(self.data_to_model, dtype=np.int64)
        splits = {}
        for split, arr in kg.splits.items():
            new = lut[arr[:, 1]] if len(arr) else np.zeros(0, dtype=np.int64)
            keep = new >= 0
            out = arr[keep].copy()
            out[:, 1] = new[keep]
            splits[split] = out
        inferred = {(s, int(lut[r]), o, t): p for (s, r, o, t), p in kg.inferred.items() if lut[r] >= 0}
        notes = list(kg.notes) + [self.describe() + f"; {plural(self.facts_total - self.facts_covered, 'fact')} with an "
                                  "unmatched relation left out"]
        return MatchedKG(name=kg.name, entities=kg.entities, relations=MatchedVocabulary(tuple(names), unknown),
                         time_axis=kg.time_axis, splits=splits, source=kg.source, notes=notes, inferred=inferred,
                         lineage=list(kg.lineage), match=self, original=kg)


@dataclass(frozen=True)
class MatchedVocabulary(Vocabulary):
    """The relation vocabulary of a :class:`MatchedKG`: resolving an unmatched data relation raises a
    :class:`DataError` that names it and says why the model cannot be asked about it."""

    unknown: dict[str, str] = field(default_factory=dict, compare=False)

    def resolve(self, name: str, kind: str = "name") -> str:
        if name not in self and self.unknown:
            if name in self.unknown:  # the exact name first: 'accuse' is not reported as its look-alike 'ACCUSE'
                raise DataError(self.unknown[name])
            key = _loose(name)
            for rel, message in self.unknown.items():
                if _loose(rel) == key:
                    raise DataError(message)
        return super().resolve(name, kind)


@dataclass
class MatchedKG(TemporalKG):
    """A data set put in a model's relation vocabulary by a :class:`RelationMatch` (``match``);
    ``original`` is the data as loaded."""

    match: RelationMatch | None = None
    original: TemporalKG | None = None


def as_loaded(kg: TemporalKG) -> TemporalKG:
    """The data set as loaded: ``kg`` itself, or the original behind a relation-matched view."""
    original = getattr(kg, "original", None)
    return original if original is not None else kg


def match_relations(model_relations: list[str] | tuple[str, ...], kg: TemporalKG, *, model_name: str = "the model",
                    mapping: RelationMap | dict[str, str] | None = None, min_coverage: float = DEFAULT_MIN_COVERAGE,
                    model_label: str | None = None) -> RelationMatch:
    """Pair ``kg``'s relations with ``model_relations`` (see the module docstring); one data relation per
    model relation. A mapping row wins over name matching; a mapping row naming a relation that neither
    side has is a :class:`DataError` naming the map's file and row (the model side called ``model_label``,
    by default "the model trained on <model_name>"). Does not refuse: see :meth:`RelationMatch.check`."""
    model_relations = tuple(model_relations)
    data_relations = tuple(kg.relations.names)
    model_ids = {n: i for i, n in enumerate(model_relations)}
    by_key: dict[str, list[int]] = {}
    for i, n in enumerate(model_relations):
        by_key.setdefault(normalise_relation(n), []).append(i)
    counts = np.zeros(len(data_relations), dtype=np.int64)
    split_counts = {}
    for split in SPLITS:
        if split in kg.splits:
            c = np.bincount(kg.splits[split][:, 1], minlength=len(data_relations)).astype(np.int64)
            split_counts[split] = c
            counts += c
    lut = np.full(len(data_relations), -1, dtype=np.int64)
    how: dict[int, str] = {}
    reason: dict[int, str] = {}
    taken: dict[int, int] = {}  # model id -> data id

    if not isinstance(mapping, RelationMap):
        mapping = RelationMap(dict(mapping or {}))
    bad = []
    data_ids = {n: i for i, n in enumerate(data_relations)}
    for d_name, m_name in mapping.pairs.items():
        where = mapping.where(d_name)
        d = data_ids.get(d_name)
        if d is None:
            hits = [i for i, n in enumerate(data_relations) if normalise_relation(n) == normalise_relation(d_name)]
            d = hits[0] if len(hits) == 1 else None
        m = model_ids.get(m_name)
        if m is None:
            hits = by_key.get(normalise_relation(m_name), [])
            m = hits[0] if len(hits) == 1 else None
        if d is None:
            bad.append(f"{where}: {d_name!r} is not a relation of {kg.name}")
        elif m is None:
            bad.append(f"{where}: {m_name!r} is not a relation of {model_label or f'the model trained on {model_name}'}")
        elif m in taken:
            bad.append(f"{where}: {m_name!r} is already the model relation of {data_relations[taken[m]]!r} "
                       "(one data relation per model relation)")
        else:
            lut[d], how[d], taken[m] = m, "mapping", d
    if bad:
        raise DataError(f"{plural(len(bad), 'bad row')} in the relation map: " + "; ".join(bad[:10])
                        + (f"; … {len(bad) - 10} more" if len(bad) > 10 else ""), file=mapping.file)

    for d, name in enumerate(data_relations):  # exact names first, so they win over normalised ones
        if d not in how and name in model_ids and model_ids[name] not in taken:
            lut[d], how[d], taken[model_ids[name]] = model_ids[name], "exact", d
    for d, name in enumerate(data_relations):
        if d in how:
            continue
        cands = by_key.get(normalise_relation(name), [])
        free = [m for m in cands if m not in taken]
        if len(cands) > 1:
            reason[d] = f"its normalised name fits {len(cands)} model relations: {[model_relations[m] for m in cands]}"
        elif not cands:
            reason[d] = "no model relation has its normalised name"
        elif not free:
            reason[d] = f"its model relation {model_relations[cands[0]]!r} is already matched to {data_relations[taken[cands[0]]]!r}"
        else:
            lut[d], how[d], taken[free[0]] = free[0], "normalised", d
    matched = [MatchedRelation(data_relations[d], model_relations[int(lut[d])], how[d], int(counts[d]))
               for d in range(len(data_relations)) if lut[d] >= 0]
    unmatched = sorted((UnmatchedRelation(data_relations[d], int(counts[d]), reason[d])
                        for d in range(len(data_relations)) if lut[d] < 0), key=lambda u: (-u.facts, u.data_relation))
    ok = lut >= 0
    split_facts = {s: (int(c[ok].sum()), int(c.sum())) for s, c in split_counts.items()}
    return RelationMatch(model_name=model_name, data_name=kg.name, model_relations=model_relations,
                         data_relations=data_relations, data_to_model=lut, matched=matched, unmatched=unmatched,
                         facts_total=int(counts.sum()), facts_covered=int(counts[ok].sum()), split_facts=split_facts,
                         min_coverage=min_coverage)


def share_text(x: float) -> str:
    """A share as a percentage that never rounds a shortfall up to 100%."""
    pct = 100 * x
    if pct < 100 and round(pct, 1) >= 100:
        return "99.9%"
    return f"{pct:.1f}%" if pct >= 1 else f"{pct:.2g}%"
