"""A data set that grows: new rows added to an existing data set, checked as an upload is, on its time axis.

An analyst's event table grows every day, and TPAR embeds no entities, so a trained model answers over the
grown history at once (issue #31). :func:`grow` reads the new rows (the upload format: a header with subject,
relation, object, time and optionally split), keeps the data set's entity and relation ids (new names are
appended), places each time on the data set's own time axis (a row whose time does not fall on it is
dropped and named), skips the rows the data set already holds, and returns a :class:`GrowthReport` with the
grown :class:`~tpar.data.kg.TemporalKG`. Nothing is written: :func:`save_grown` saves the result as a data set
folder (atomically, :func:`tpar.data.upload.save_dataset`) with its lineage, so that an answer can say how far
its question lies past the facts a model was trained on (:mod:`tpar.data.lineage`).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tpar.data.kg import SPLITS, TemporalKG
from tpar.data.lineage import LINEAGE_FILE, lineage_entry
from tpar.data.relation_matching import normalise_relation
from tpar.data.vocab import _loose
from tpar.data.tables import AUTO_YEARS, map_header, read_quadruple_csv, reading_notes, sniff_separator
from tpar.data.textfile import read_text
from tpar.data.timeaxis import TimeAxis
from tpar.data.upload import save_dataset, unsaved_entries
from tpar.data.vocab import Vocabulary
from tpar.errors import DataError, plural

#: where the new rows go: the data set's training facts (the history every model reads), valid, test, or the
#: file's own ``split`` column
GROW_SPLITS = ("train", "valid", "test", "column")
#: the time format each kind of axis is read with (the format the data set's own files are written in)
_FORMAT_OF_AXIS = {"step": "int", "year": "year", "month": "month", "day": "date"}


@dataclass(kw_only=True)
class GrowthReport:
    """What adding a file's rows to a data set did, before anything is saved."""

    file: str
    data: str                                   # the data set grown
    rows_read: int
    added: dict[str, int]                       # facts added per split
    known: int                                  # rows the data set already held (skipped)
    duplicates: int                             # rows repeated inside the file (skipped)
    dropped: list[tuple[int, str]]              # (row in the file, problem): unreadable, or off the time axis
    new_entities: list[str]
    new_relations: list[tuple[str, int]]        # (relation, facts) the data set did not have
    time_range: tuple[str, str] | None          # of the added facts (None: nothing added)
    data_last: str                              # the data set's last time before growing
    extends_by: str                             # how far the added facts reach past it ("" when they do not)
    notes: list[str] = field(default_factory=list)   # what may need the user's action
    info: list[str] = field(default_factory=list)    # how the file was read (separator, dates, names trimmed ...)
    #: (new name, existing name) equal but for case, spaces or underscores (as the name lookup compares them)
    lookalikes: list[tuple[str, str]] = field(default_factory=list)
    #: (new relation, existing relation) equal but for case, spaces, underscores or punctuation
    relation_lookalikes: list[tuple[str, str]] = field(default_factory=list)
    #: (new name, existing names that hold it as a word): "Germany" new in ICEWS14, whose names are
    #: "Government_(Germany)", "Naval_(Germany)"... -- perhaps meant as one of them (scale audit 40); at most 10
    relatives: list[tuple[str, list[str]]] = field(default_factory=list)
    #: facts a model had inferred that the new rows observe: no longer marked inferred
    confirmed: int = 0

    @property
    def facts_added(self) -> int:
        return sum(self.added.values())

    @property
    def changes(self) -> bool:
        """Whether saving changes the data set: facts added, or inferred facts now observed."""
        return bool(self.facts_added or self.confirmed)

    def lines(self) -> list[str]:
        """The report as text lines (the CLI prints them; the app shows the same figures)."""
        out = [f"{self.file} -> {self.data}: {plural(self.rows_read, 'row')} read, {plural(self.facts_added, 'fact')} "
               f"added ("
               + ", ".join(f"{s} {n:,}" for s, n in self.added.items() if n) + ")" if self.facts_added else
               f"{self.file} -> {self.data}: {plural(self.rows_read, 'row')} read, no new facts"]
        out.append(f"  skipped: {self.known:,} already in the data set, {self.duplicates:,} repeated in the file; "
                   f"{plural(len(self.dropped), 'row')} dropped")
        for row, problem in self.dropped[:10]:
            out.append(f"    row {row}: {problem}")
        if len(self.dropped) > 10:
            out.append(f"    ... {len(self.dropped) - 10:,} more dropped rows")
        if self.time_range:
            reach = f", {self.extends_by} past its last time {self.data_last}" if self.extends_by else \
                f" (its last time stays {self.data_last})"
            out.append(f"  new facts from {self.time_range[0]} to {self.time_range[1]}{reach}")
        if self.new_entities:
            shown = ", ".join(repr(e) for e in self.new_entities[:5])
            out.append(f"  {plural(len(self.new_entities), 'new entity', 'new entities')}: {shown}" + (" ..." if len(self.new_entities) > 5
                                                                                 else ""))
        for new, old in self.lookalikes[:5]:
            out.append(f"  new entity {new!r} differs from the existing {old!r} only in case, spaces or underscores: "
                       "check the spelling")
        for new, names in self.relatives[:5]:
            out.append(f"  {relatives_text(new, names)}")
        for rel, n in self.new_relations:
            out.append(f"  new relation {rel!r} ({plural(n, 'fact')}): a model trained before it does not know it, and "
                       "leaves its facts out of what it reads")
        for new, old in self.relation_lookalikes[:5]:
            out.append(f"  new relation {new!r} is spelled like the existing {old!r} but for case, spaces, "
                       "underscores or punctuation: two relations now; check the spelling")
        out += [f"  note: {n}" for n in self.info + self.notes]
        return out


def grow(kg: TemporalKG, text: str, file_name: str, *, split: str = "train",
         day_first: bool | None = None) -> tuple[GrowthReport, TemporalKG]:
    """``kg`` with the facts of the quadruple file ``text`` added to ``split`` (``column``: the file's own split
    column). Existing ids stay; times are read as the data set's own (a date-time row for a data set of days is
    dropped, naming its row). Raises :class:`DataError` only when the file cannot be read at all or the split
    choice is impossible; bad rows are dropped and listed in the report."""
    if split not in GROW_SPLITS:
        raise DataError(f"unknown split {split!r} for the new rows (expected {', '.join(GROW_SPLITS)})")
    axis = kg.time_axis
    problem = unsaved_axis_problem(axis) or _unsaved_years_problem(kg)
    if problem:
        raise DataError(f"data set {kg.name!r} cannot be grown: {problem}")
    fmt = "int" if axis.origin is None else _FORMAT_OF_AXIS.get(axis.granularity, "datetime")
    q = read_quadruple_csv(file_name, time_format=fmt, on_bad_rows="drop", text=text, day_first=day_first)
    if split == "column" and q.splits is None:
        raise DataError("no 'split' column in the file: choose train, valid or test for the new rows", file=file_name)
    theirs = f" as the data set's times are ({axis.describe()})"  # the reader compares with the file's other rows
    dropped = [(row, p.replace(" like the other rows", theirs)) for row, p in q.report.problems]
    steps: list[int | None] = []
    for i, raw in enumerate(q.raw_times):
        try:
            steps.append(axis.parse(q.time_axis.label(int(q.times[i]))))
        except ValueError as e:
            steps.append(None)
            dropped.append((q.rows[i], f"time {raw!r} does not fit the data set's time axis "
                                       f"({axis.describe()}): {e}"))
    if axis.granularity == "year" and axis.origin is not None:  # CSV files read other integers as plain steps
        lo, hi = AUTO_YEARS
        for i, t in enumerate(steps):
            if t is not None and not lo <= int(axis.label(t)) <= hi:
                steps[i] = None
                dropped.append((q.rows[i], f"year {q.raw_times[i]!r} lies outside {lo}..{hi}: saved, the data set's "
                                           "times would read back as plain integer steps, not years"))
    if axis.origin is None:  # an index-only axis has no time before its first step: 0, or the data's own first one
        first = min(0, kg.time_range[0]) if len(kg.all_facts()) else 0  # (hostile 40: data at -100..-5 refused -60)
        for i, t in enumerate(steps):
            if t is not None and t < first:
                steps[i] = None
                dropped.append((q.rows[i], f"time {q.raw_times[i]!r} lies before the data set's first step {first}"))
    ents, rels = list(kg.entities.names), list(kg.relations.names)
    ent_id = {n: i for i, n in enumerate(ents)}
    rel_id = {n: i for i, n in enumerate(rels)}
    known = {tuple(f) for f in kg.all_facts().tolist()}
    rows: dict[str, list[tuple[int, int, int, int]]] = {s: [] for s in SPLITS}
    inferred: dict[tuple[int, int, int, int], float] = {}  # rows marked completed: a model's, never test facts
    new_rel_facts: dict[str, int] = {}
    seen, n_known, n_dup = set(), 0, q.report.duplicates
    confirmed: set[tuple[int, int, int, int]] = set()
    for i, t in enumerate(steps):
        if t is None:
            continue
        s, r, o = (ent_id.setdefault(q.subjects[i], len(ent_id)), rel_id.setdefault(q.relations[i], len(rel_id)),
                   ent_id.setdefault(q.objects[i], len(ent_id)))
        fact = (s, r, o, t)
        if fact in known:
            n_known += 1
            if fact in kg.inferred and not (q.inferred is not None and q.inferred[i]):
                confirmed.add(fact)  # a model's proposal, now observed
            continue
        if fact in seen:  # the same fact under two split labels
            n_dup += 1
            continue
        seen.add(fact)
        if r >= len(rels):
            new_rel_facts[q.relations[i]] = new_rel_facts.get(q.relations[i], 0) + 1
        if q.inferred is not None and q.inferred[i]:
            inferred[fact] = q.probabilities[i] if q.probabilities is not None else float("nan")
            rows["train"].append(fact)
            continue
        rows[q.splits[i] if split == "column" else split].append(fact)
    new_ents = list(ent_id)[len(ents):]
    used = {e for f in seen for e in (f[0], f[2])}
    new_ents = [n for j, n in enumerate(new_ents) if len(ents) + j in used]
    grown = _grown_kg(kg, ent_id, rel_id, rows, inferred, confirmed)
    added = {s: len(v) for s, v in rows.items() if v}
    last = kg.time_range[1] if len(kg.all_facts()) else None
    t_new = [f[3] for f in seen]
    extends = ""
    if t_new and last is not None and max(t_new) > last:
        extends = axis.describe_span(max(t_new) - last)
    lower = {_loose(n): n for n in ents}  # equal but for case, spaces or underscores: the name lookup's own rule
    spelled = {normalise_relation(r): r for r in rels}
    report = GrowthReport(
        file=file_name, data=kg.name, rows_read=q.report.rows_read, added=added, known=n_known, duplicates=n_dup,
        dropped=sorted(dropped), new_entities=new_ents, new_relations=sorted(new_rel_facts.items()),
        time_range=(axis.label(min(t_new)), axis.label(max(t_new))) if t_new else None,
        data_last=axis.label(last) if last is not None else "–", extends_by=extends,
        confirmed=len(confirmed),
        notes=(_inferred_notes(inferred, len(confirmed)) + _order_notes(kg, rows) + _range_notes(kg, t_new)
               + _vocabulary_notes(grown)),
        info=reading_notes(q.report),
        lookalikes=[(n, lower[_loose(n)]) for n in new_ents if _loose(n) in lower],
        relatives=relatives([n for n in new_ents if _loose(n) not in lower], ents),
        relation_lookalikes=[(r, spelled[normalise_relation(r)]) for r, _ in sorted(new_rel_facts.items())
                             if normalise_relation(r) in spelled])
    return report, grown


def relatives(new: list[str], known: list[str], most: int = 10, shown: int = 3,
              looked: int = 50) -> list[tuple[str, list[str]]]:
    """(new name, up to ``shown`` known names that contain it as a whole word -- one more when there are more --,
    compared loosely: case, spaces and underscores aside) for the first ``most`` of ``new`` that have any, among its first ``looked`` (a file of
    thousands of new names is not matched against every known one): a new "Germany" where the data says
    "Government_(Germany)" may be meant as one of them. Names of one or two characters are not looked for."""
    import re

    loose = [(_loose(k), k) for k in known]
    out = []
    for name in new[:looked]:
        key = _loose(name)
        if len(key) < 3:
            continue
        word = re.compile(r"(?<![^\W_])" + re.escape(key) + r"(?![^\W_])")
        hits = [k for lk, k in loose if key in lk and word.search(lk)][:shown + 1]  # a substring first: cheap
        if hits:
            out.append((name, hits))
            if len(out) >= most:
                break
    return out


def relatives_text(new: str, names: list[str], shown: int = 3) -> str:
    """The note on a new name that known names hold as a word (:func:`relatives`, which gives one name more than
    ``shown`` when there are more)."""
    return (f"new entity {new!r} is part of existing names ({', '.join(repr(n) for n in names[:shown])}"
            f"{', …' if len(names) > shown else ''}): check it is meant as a new entity, not one of them")


def completions_growth(before: TemporalKG, completed: TemporalKG, file_name: str) -> GrowthReport:
    """What adding the accepted proposals of ``completed`` (``before``'s facts plus inferred training facts, as
    :func:`tpar.reasoning.completion.with_completions` makes them) to the saved data set ``before`` does: a growth
    step of its own, so the lineage records it and the models trained on ``before`` keep serving the data set
    (the upload round trip: save the complete rows, train, upload the file again, accept the proposals)."""
    if completed.entities.names[:before.num_entities] != before.entities.names or \
            completed.relations.names[:before.num_relations] != before.relations.names:
        raise DataError(f"the proposals were made against other names than data set {before.name!r} holds: check "
                        "the file again", file=file_name)
    known = {tuple(f) for f in before.all_facts().tolist()}
    new = [f for f in completed.facts("train").tolist() if tuple(f) not in known]
    axis = before.time_axis
    t_new = [f[3] for f in new]
    last = before.time_range[1] if len(before.all_facts()) else None
    return GrowthReport(
        file=file_name, data=before.name, rows_read=len(new), added={"train": len(new)} if new else {}, known=0,
        duplicates=0, dropped=[], new_entities=[], new_relations=[],
        time_range=(axis.label(min(t_new)), axis.label(max(t_new))) if t_new else None,
        data_last=axis.label(last) if last is not None else "–",
        extends_by=axis.describe_span(max(t_new) - last) if t_new and last is not None and max(t_new) > last else "",
        notes=_inferred_notes({tuple(f): completed.inferred.get(tuple(f), float("nan")) for f in new}))


def unsaved_axis_problem(axis: TimeAxis) -> str | None:
    """Why a data set on ``axis`` cannot be saved as CSV files that read back on the same time unit (None when it
    can): their times are dates, date-times or plain integers, read back one unit per step, and integers as plain
    steps (years only when they look like years), so a model of the data would no longer fit the saved copy."""
    if axis.origin is None and axis.granularity != "step":
        return (f"its times are {axis.describe()}; saved as CSV files they would read back as plain integer steps, "
                f"and a model trained on its {axis.granularity} steps would no longer fit the grown data set")
    if axis.step != 1:
        return (f"its times are {axis.describe()}; saved as CSV files they would read back one {axis.granularity} "
                "per step, and a model trained on its steps would no longer fit the grown data set")
    return None


def _unsaved_years_problem(kg: TemporalKG) -> str | None:
    """Why a data set of calendar years cannot be saved as CSV files that read back as years (None when it can):
    they read integers as years only when all lie in :data:`~tpar.data.tables.AUTO_YEARS`."""
    axis, facts = kg.time_axis, kg.all_facts()
    if axis.granularity != "year" or axis.origin is None or not len(facts):
        return None
    first, last = (int(axis.label(int(f(facts[:, 3])))) for f in (np.min, np.max))
    if AUTO_YEARS[0] <= first and last <= AUTO_YEARS[1]:
        return None
    return (f"its years run from {first} to {last}; saved as CSV files, integers outside "
            f"{AUTO_YEARS[0]}..{AUTO_YEARS[1]} read back as plain steps, and a model trained on its years would no "
            "longer fit the grown data set")


def _vocabulary_notes(grown: TemporalKG) -> list[str]:
    """Say when the vocabulary lists entities or relations of no fact (a benchmark's entity2id and relation2id
    may): the saved CSV files, which hold facts, do not keep them."""
    facts = grown.all_facts()
    n = grown.num_entities - (len(np.unique(facts[:, [0, 2]])) if len(facts) else 0)
    m = grown.num_relations - (len(np.unique(facts[:, 1])) if len(facts) else 0)
    if not n and not m:
        return []
    what = " and ".join(x for x in (f"{n:,} entit{'y' if n == 1 else 'ies'}" if n else "",
                                     f"{m:,} relation{'' if m == 1 else 's'}" if m else "") if x)
    return [f"{what} of the vocabulary occur in no fact: the saved data set (CSV files of facts) does not keep "
            "them; no model needs them (TPAR embeds no entities, and a relation without facts is no evidence)"]


def _grown_kg(kg: TemporalKG, ent_id: dict[str, int], rel_id: dict[str, int],
              rows: dict[str, list[tuple[int, int, int, int]]],
              new_inferred: dict[tuple[int, int, int, int], float],
              confirmed: set[tuple[int, int, int, int]] = frozenset()) -> TemporalKG:
    """``kg`` with ``rows`` appended to their splits (``new_inferred``: those a model inferred; ``confirmed``:
    inferred facts now observed, no longer marked); a calendar axis is
    re-based when a new time precedes its origin (every step shifted alike: only differences of times reach the
    model)."""
    splits = {s: kg.facts(s) for s in kg.splits}
    for s, new in rows.items():
        if new:
            splits[s] = np.concatenate([kg.facts(s), np.asarray(new, dtype=np.int64).reshape(-1, 4)])
    axis = kg.time_axis
    inferred = {k: p for k, p in {**kg.inferred, **new_inferred}.items() if k not in confirmed}
    low = min((int(a[:, 3].min()) for a in splits.values() if len(a)), default=0)
    if low < 0 and axis.origin is not None:
        axis = TimeAxis(axis.granularity, axis.label(low), axis.step)
        splits = {s: a - np.array([0, 0, 0, low], dtype=np.int64) for s, a in splits.items()}
        inferred = {(s, r, o, t - low): p for (s, r, o, t), p in inferred.items()}
    return TemporalKG(name=kg.name, entities=Vocabulary(tuple(ent_id)), relations=Vocabulary(tuple(rel_id)),
                      time_axis=axis, splits=splits, source=kg.source, notes=list(kg.notes), inferred=inferred,
                      lineage=list(kg.lineage))


def _inferred_notes(inferred: dict, confirmed: int = 0) -> list[str]:
    """Say how many new rows are marked completed (a model's proposals: kept marked, in train), and how many
    facts a model had inferred the new rows now observe."""
    out = []
    if inferred:
        out.append(f"{plural(len(inferred), 'new fact')} marked completed (inferred by a model, not observed): kept marked "
                   "as inferred and added to train whatever the chosen split (inferred facts are never evaluated on)")
    if confirmed:
        out.append(f"{plural(confirmed, 'fact')} a model had inferred {'is' if confirmed == 1 else 'are'} observed in "
                   "the new rows: no longer marked "
                   "inferred (they stay in their split)")
    return out


def _range_notes(kg: TemporalKG, t_new: list[int]) -> list[str]:
    """Say when new facts lie before the data set's first time, or further after its last one than it spans (a
    typed year, say)."""
    if not t_new or not len(kg.all_facts()):
        return []
    first, last = kg.time_range
    t = np.asarray(t_new)
    out, label, span = [], kg.time_axis.label, kg.time_axis.describe_span
    if (t < first).any():
        n = int((t < first).sum())
        out.append(f"{plural(n, 'new fact')} {'lies' if n == 1 else 'lie'} before the data set's first time {label(first)} (the "
                   f"earliest {label(int(t.min()))}): check their dates")
    far = t > last + max(1, last - first)
    if far.any():
        n = int(far.sum())
        out.append(f"{plural(n, 'new fact')} {'lies' if n == 1 else 'lie'} more than {span(max(1, last - first))} (the data set's whole "
                   f"span) after its last time {label(last)} (the latest {label(int(t.max()))}): check their dates")
    return out


def _order_notes(kg: TemporalKG, rows: dict[str, list[tuple[int, int, int, int]]]) -> list[str]:
    """Say when the new facts break a chronological split (training facts after valid/test ones)."""
    new_train = [f[3] for f in rows.get("train", [])]
    later = [kg.facts(s) for s in ("valid", "test") if len(kg.facts(s))]
    if not new_train or not later:
        return []
    first_eval = min(int(a[:, 3].min()) for a in later)
    n = sum(t >= first_eval for t in new_train)
    if not n:
        return []
    one = n == 1
    return [f"{plural(n, 'new training fact')} {'lies' if one else 'lie'} at or after the first valid/test time "
            f"({kg.time_axis.label(first_eval)}): {'it is' if one else 'they are'} history for questions after "
            f"{'it' if one else 'them'}; an extrapolation evaluation still reads only facts before each question, but a "
            f"model trained before {'it' if one else 'them'} was selected on a split {'it' if one else 'they'} now "
            f"precede{'s' if one else ''}"]


def in_place_losses(folder: str | Path) -> list[str]:
    """What rewriting the data set folder ``folder`` in place (as :func:`save_grown` saves: the split CSVs and
    the lineage only) would lose: every other entry of the folder, and the columns of its split files that are
    not read (a source, a weight ...), e.g. ``["NOTES.md", "train.csv column 'source'"]``."""
    folder = Path(folder)
    lost = unsaved_entries(folder)
    for s in SPLITS:
        p = folder / f"{s}.csv"
        if p.is_file():
            header_line = read_text(p).lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
            header = next(csv.reader([header_line], delimiter=sniff_separator(header_line)), [])
            used = set(map_header(header).values())
            lost += [f"{p.name} column {h.strip()[:40]!r}" for i, h in enumerate(header) if i not in used]
    return lost


def save_grown(before: TemporalKG, report: GrowthReport, grown: TemporalKG, folder: str | Path, name: str, *,
               overwrite: bool = False) -> Path:
    """Save ``grown`` as data set ``folder/name`` with its lineage (the steps ``before`` already had, then this
    one). Atomic: a failed save leaves any existing data set as it was."""
    steps = list(before.lineage) + [lineage_entry(before, report)]
    text = json.dumps({"steps": steps}, indent=1, ensure_ascii=False)
    return save_dataset(grown, folder, name, overwrite=overwrite, extra_files={LINEAGE_FILE: text},
                        unchanged=lambda dest: _still_as_read(before, dest))


def _still_as_read(before: TemporalKG, dest: Path) -> None:
    """Growing in place: the data set on disk must still be the one the rows were checked against (another
    process may have grown it meanwhile; replacing that would lose its rows). Checked under the save's lock."""
    from tpar.data.loading import load_dataset

    try:
        same_folder = dest.resolve() == Path(before.source).resolve()
    except (OSError, ValueError):
        same_folder = False
    if not same_folder or not dest.is_dir():
        return
    if load_dataset(dest).fingerprint != before.fingerprint:
        raise DataError(f"data set {dest.name!r} changed since the new rows were checked against it (grown or "
                        "replaced meanwhile): nothing was written; check the rows again", file=dest)
