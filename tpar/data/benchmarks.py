"""Benchmark folders: every layout in ``../shared/datasets`` (see its README) into one
:class:`~tpar.data.kg.TemporalKG`.

* id-based quadruples ``s r o t`` (4 columns) or ``s r o t 0`` (5 columns), fields possibly padded
  with spaces, times as day indices (ICEWS14, from 1), hours (ICEWS18) or year indices (YAGO, WIKI);
* name-based quadruples ``subject relation object YYYY-MM-DD`` (interpolation ICEWS14, ICEWS05-15),
  with a UTF-8 BOM and CRLF line ends in places;
* HyTE interval quintuples ``s r o start end`` with ``#`` placeholders and negative years
  (YAGO11k, WIKIDATA12k) -- see :data:`INTERVAL_POLICY`;
* ``entity2id.txt`` with 2 (``name id``) or 4 (``name id start end``) columns.

Every problem raises :class:`tpar.errors.DataError` naming the file, the row and the problem.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tpar.data.kg import SPLITS, TemporalKG, split_overlap_notes
from tpar.data.tables import MAX_FIELD, clean_name, rows_text
from tpar.data.textfile import BOM, memory_named, read_lines
from tpar.data.timeaxis import TimeAxis, beyond_max_int_time, whole_number
from tpar.data.vocab import Vocabulary
from tpar.errors import DataError, plural

#: How interval facts (HyTE format: YAGO11k, WIKIDATA12k) become time-stamped facts.
INTERVAL_POLICY = (
    "interval facts (s, r, o, [start, end]) become (s, 'r [since]', o, start year) and "
    "(s, 'r [until]', o, end year), each only where that bound's year is known (TeRo/ATiSE "
    "convention); month and day are dropped (year granularity, as in the paper); unknown digits of "
    "a partly known year ('19##') widen the interval: 1900 as a start, 1999 as an end"
)

#: Integer time columns of known benchmarks: folder name -> (granularity, origin, divisor, first index).
#: step = (t - first) // divisor. Unknown folders get plain integer steps.
KNOWN_INTEGER_TIMES: dict[str, tuple[str, str | None, int, int]] = {
    "ICEWS14": ("day", "2014-01-01", 1, 1),  # day index 1..365, 1 = 2014-01-01
    "ICEWS14S": ("day", "2014-01-01", 1, 1),
    "ICEWS18": ("day", "2018-01-01", 24, 0),  # hours 0, 24, ..., 7272 from 2018-01-01
    "YAGO": ("year", None, 1, 0),  # year index 0..188, calendar year not given by the data
    "WIKI": ("year", None, 1, 0),  # year index 0..231
}

DATA_DIR_ENV = "TPAR_DATA_DIR"


def find_data_dir(start: str | Path | None = None) -> Path | None:
    """The benchmark folder: ``$TPAR_DATA_DIR`` if set, else ``../shared/datasets`` seen from the
    repository root (or from ``start``); ``None`` if absent."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        p = Path(env)
        return p if p.is_dir() else None
    roots = [Path(start)] if start else []
    roots += [Path(__file__).resolve().parents[2], Path.cwd()]
    for root in roots:
        cand = (root / ".." / "shared" / "datasets").resolve()
        if cand.is_dir():
            return cand
    return None


def _fields(line: str) -> list[str]:
    return [f.strip().lstrip(BOM) for f in line.split("\t")]


@dataclass(frozen=True)
class VocabFile:
    """An ``entity2id.txt``/``relation2id.txt`` as read: ``names`` in the order of their declared ids (a name given
    twice -- a BOM artefact -- once), ``position`` each declared id's index in ``names`` (ids may have gaps; two
    ids of one name share it), and ``notes`` saying what was merged or skipped."""

    names: tuple[str, ...]
    position: dict[int, int]
    notes: tuple[str, ...] = ()

    def index(self, value: str, path: Path, row: int, what: str) -> int:
        """The position of the id written ``value`` on ``row`` of the facts file ``path`` (a :class:`DataError`
        naming the file, row and id when it is not declared)."""
        try:
            pos = self.position.get(whole_number(value, f"{what} id"))
        except ValueError as e:
            raise DataError(str(e), file=path, row=row) from None
        if pos is None:
            raise DataError(f"unknown {what} id {value[:40]} (not declared in {what}2id.txt, which has "
                            f"{len(self.position):,} ids)", file=path, row=row)
        return pos


#: what a note says was done to names :func:`_safe` changed
NAMES_CLEANED = ("names cleaned as a CSV's names are (invisible, control or text-direction characters removed, "
                 "accents composed, surrounding spaces stripped)")


def _safe(name: str) -> str:
    """A name of a benchmark's files as kept: as a CSV's names are (:func:`tpar.data.tables.clean_name`: Unicode NFC,
    without controls, invisible and direction-changing characters, surrounding space stripped), the same in the
    vocabulary files and in fact files that name their entities -- so that a data set read here saves as CSV and
    reads back as the same names (``tpar grow``). A printable ASCII name is kept as it is without a look (the
    shipped benchmarks' names: no fingerprint moves)."""
    return name if name.isascii() and name.isprintable() and name == name.strip() else clean_name(name)


def _name_problem(name: str, what: str, raw: str = "") -> str | None:
    """Why a benchmark's name (as kept, :func:`_safe`; ``raw`` as written) cannot be one -- empty, nothing but
    invisible characters, longer than a CSV cell may be -- or ``None``."""
    if not name:
        if raw.strip():
            return f"{what} {ascii(raw[:20])} holds only invisible or direction characters, no name"
        return f"empty {what}"
    if len(name) > MAX_FIELD:  # as a CSV's names: a data set read here must save and grow as one
        return f"{what} is {len(name):,} characters long (at most {MAX_FIELD:,})"
    return None


def _read_vocab_file(path: Path) -> VocabFile:
    """``name<TAB>id[<TAB>start<TAB>end]`` -> a :class:`VocabFile`: facts written with ids are mapped by the ids
    declared here, never by line position, so gaps in the ids and a name declared twice cannot shift them."""
    by_id: dict[int, str] = {}
    cleaned: list[int] = []
    for row, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        f = _fields(line)
        raw = f[0] if f else ""
        if f and f[0] != _safe(f[0]):
            f[0] = _safe(f[0])
            cleaned.append(row)
        if len(f) not in (2, 4):
            raise DataError(f"expected 2 or 4 tab-separated columns (name, id[, start, end]), found {len(f)}",
                            file=path, row=row)
        problem = _name_problem(f[0], "name", raw)
        if problem:
            raise DataError(problem, file=path, row=row)
        try:
            idx = whole_number(f[1], "id")
        except ValueError as e:
            raise DataError(str(e), file=path, row=row) from None
        if idx < 0:
            raise DataError(f"id {idx} is negative", file=path, row=row)
        if idx in by_id:
            raise DataError(f"id {idx} appears twice", file=path, row=row)
        by_id[idx] = f[0]
    if not by_id:
        raise DataError("file is empty", file=path)
    names: list[str] = []
    first_id: dict[str, int] = {}  # each name's lowest declared id
    position: dict[int, int] = {}
    merged: list[str] = []
    for idx in sorted(by_id):
        name = by_id[idx]
        if name in first_id:  # e.g. '\ufeffLawyer/Attorney (Germany)' == 'Lawyer/Attorney (Germany)'
            merged.append(f"{name[:60]!r} (ids {first_id[name]} and {idx})")
            position[idx] = position[first_id[name]]
        else:
            first_id[name] = idx
            position[idx] = len(names)
            names.append(name)
    notes = []
    if cleaned:
        notes.append(f"{path.name}, {rows_text(cleaned, len(cleaned), 5)}: {NAMES_CLEANED}")
    if merged:
        notes.append(f"{path.name}: {plural(len(merged), 'name')} declared under two ids, read as one: " + ", ".join(merged[:3])
                     + (" ..." if len(merged) > 3 else ""))
    gaps = max(by_id) + 1 - len(by_id)
    if gaps:
        notes.append(f"{path.name}: ids run 0..{max(by_id)} with {gaps:,} unused; facts are mapped by the declared ids")
    return VocabFile(tuple(names), position, tuple(notes))


def _dedup(arr: np.ndarray) -> tuple[np.ndarray, int]:
    """Drop repeated rows, keeping first occurrences in file order; returns (rows, number dropped)."""
    if len(arr) == 0:
        return arr, 0
    _, first = np.unique(arr, axis=0, return_index=True)
    first.sort()
    return arr[first], len(arr) - len(first)


_ISO_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_YEAR = re.compile(r"^(-?[0-9#]+)-")
#: a HyTE bound as the benchmarks write it: year, month and day of digits or '#' placeholders ("1990-##-##")
_HYTE_BOUND = re.compile(r"^-?[0-9#]+-[0-9#]+-[0-9#]+$")


def _hyte_year(text: str, fill: str) -> int | None:
    """Year of a HyTE bound ``YYYY-MM-DD`` with ``#`` placeholders; ``None`` if wholly unknown.
    Unknown digits of a partly known year ("19##") become ``fill`` ("0" for a start, "9" for an end),
    which widens the interval to every year the known digits allow."""
    if not _HYTE_BOUND.match(text):  # a typo ('199O-01-01') or a word ('present') is not an unknown year
        raise ValueError(f"time bound {text[:40]!r} is not a HyTE date (YYYY-MM-DD, '#' for each unknown digit, "
                         "'####-##-##' for an unknown bound)")
    m = _YEAR.match(text)
    if not m or not re.search(r"[0-9]", m.group(1)):
        return None
    if beyond_max_int_time(m.group(1).replace("#", fill)):
        raise ValueError(f"year {m.group(1)[:30]}{'...' if len(m.group(1)) > 30 else ''} is beyond ±2^53, "
                         "which no time step may be")
    return int(m.group(1).replace("#", fill))


@dataclass
class _RawSplit:
    rows: list[int] = field(default_factory=list)  # line numbers
    fields: list[list[str]] = field(default_factory=list)


class BenchmarkFileError(DataError):
    """A bad row of a benchmark folder's file: the folder is read whole or not at all (``--drop-bad-rows`` is the
    table readers'), so no hint offers to drop it."""


@memory_named
def load_benchmark(folder: str | Path) -> TemporalKG:
    """Load a benchmark folder (``train/valid/test.txt`` + ``entity2id.txt``/``relation2id.txt``); a bad row is a
    :class:`BenchmarkFileError`."""
    try:
        return _load_benchmark(Path(folder))
    except DataError as e:
        if type(e) is not DataError or e.row is None:  # a whole file's (an encoding ...), or already said so
            raise
        raise BenchmarkFileError(e.problem, e.file, e.row) from None


def _load_benchmark(folder: Path) -> TemporalKG:
    present = {s: folder / f"{s}.txt" for s in SPLITS if (folder / f"{s}.txt").exists()}
    if not present:
        raise DataError("folder has none of train.txt, valid.txt, test.txt (nor train/valid/test.csv)",
                        file=folder)
    raw: dict[str, _RawSplit] = {}
    for split, path in present.items():
        rs = _RawSplit()
        seen: dict[str, str] = {}  # each distinct field held once: names, ids and times repeat over many rows
        for row, line in enumerate(read_lines(path), start=1):
            if line.strip():
                rs.rows.append(row)
                rs.fields.append([seen.setdefault(f, f) for f in _fields(line)])
        raw[split] = rs

    # Decide the layout from the first line of the first split.
    first_split = next(iter(raw))
    if not raw[first_split].fields:
        raise DataError("file is empty", file=present[first_split])
    sample = raw[first_split].fields[0]
    interval = len(sample) == 5 and not _is_int(sample[3]) and "-" in sample[3]
    ids = _is_int(sample[0]) and _is_int(sample[1]) and _is_int(sample[2])

    ent_path, rel_path = folder / "entity2id.txt", folder / "relation2id.txt"
    if ids:
        for p in (ent_path, rel_path):
            if not p.exists():
                raise DataError("facts use integer ids but the vocabulary file is missing", file=p)
    entity_file = _read_vocab_file(ent_path) if ent_path.exists() else None
    relation_file = _read_vocab_file(rel_path) if rel_path.exists() else None

    notes: list[str] = []
    if interval:
        kg_parts, entities, relations, axis = _benchmark_intervals(raw, present, entity_file, relation_file, notes)
    else:
        kg_parts, entities, relations, axis = _benchmark_points(folder, raw, present, ids, entity_file,
                                                                relation_file, notes)
    splits: dict[str, np.ndarray] = {}
    for split, arr in kg_parts.items():
        arr, dups = _dedup(arr)
        if dups:
            notes.append(f"{split}: {dups} duplicate facts removed")
        splits[split] = arr
    missing = [s for s in SPLITS if s not in splits]
    if missing:
        notes.append(f"missing split file{'s' if len(missing) > 1 else ''}: {', '.join(m + '.txt' for m in missing)}")
    kg = TemporalKG(name=folder.name or folder.resolve().name, entities=entities, relations=relations, time_axis=axis,
                    splits=splits, source=str(folder), notes=notes)
    kg.notes = kg.notes + split_overlap_notes(kg)
    return kg


def _is_int(s: str) -> bool:
    return bool(re.fullmatch(r"[+-]?[0-9]+", s))


def _check_width(path: Path, rs: _RawSplit, widths: tuple[int, ...]) -> None:
    for row, f in zip(rs.rows, rs.fields):
        if len(f) not in widths:
            raise DataError(f"expected {' or '.join(map(str, widths))} tab-separated columns, found {len(f)}",
                            file=path, row=row)


def _benchmark_points(folder: Path, raw: dict[str, _RawSplit], present: dict[str, Path], ids: bool,
                      entity_file: VocabFile | None, relation_file: VocabFile | None, notes: list[str]):
    entity_names = entity_file.names if entity_file else None
    relation_names = relation_file.names if relation_file else None
    if ids:
        assert entity_file is not None and relation_file is not None
        entities, relations = Vocabulary(entity_file.names), Vocabulary(relation_file.names)
        notes.extend(entity_file.notes + relation_file.notes)
    else:
        entities = Vocabulary(entity_names) if entity_names else None
        relations = Vocabulary(relation_names) if relation_names else None
        if entities is None or relations is None:  # build from the facts, in order of appearance
            e_seen: dict[str, None] = {}
            r_seen: dict[str, None] = {}
            for rs in raw.values():
                for f in rs.fields:
                    if len(f) >= 3:
                        e_seen.setdefault(_safe(f[0])); r_seen.setdefault(_safe(f[1])); e_seen.setdefault(_safe(f[2]))
            entities = entities or Vocabulary(tuple(e_seen))
            relations = relations or Vocabulary(tuple(r_seen))

    times_raw: dict[str, list[str]] = {}
    parts: dict[str, np.ndarray] = {}
    checked: set[str] = set()  # names a row of named facts holds that passed _name_problem
    for split, rs in raw.items():
        path = present[split]
        _check_width(path, rs, (4, 5))
        arr = np.zeros((len(rs.fields), 3), dtype=np.int64)
        cleaned: list[int] = []  # rows of named facts whose names _safe changed
        for i, (row, f) in enumerate(zip(rs.rows, rs.fields)):
            if ids:
                s, r, o = (entity_file.index(f[0], path, row, "entity"), relation_file.index(f[1], path, row, "relation"),
                           entity_file.index(f[2], path, row, "entity"))
            else:
                kept = (_safe(f[0]), _safe(f[1]), _safe(f[2]))
                if kept != (f[0], f[1], f[2]):
                    cleaned.append(row)
                for name, raw_name, what in zip(kept, f, ("subject", "relation", "object")):
                    if name not in checked:  # each distinct name once (a split repeats each many times)
                        problem = _name_problem(name, what, raw_name)
                        if problem:
                            raise DataError(problem, file=path, row=row)
                        checked.add(name)
                s, r, o = entities.get(kept[0]), relations.get(kept[1]), entities.get(kept[2])
                for val, name, what in ((s, f[0], "entity"), (r, f[1], "relation"), (o, f[2], "entity")):
                    if val is None:
                        raise DataError(f"unknown {what} name {name!r} (not in {what}2id.txt)", file=path, row=row)
            arr[i] = (s, r, o)
        if cleaned:
            notes.append(f"{path.name}, {rows_text(cleaned, len(cleaned), 5)}: {NAMES_CLEANED}")
        parts[split] = arr
        times_raw[split] = [f[3] for f in rs.fields]

    all_times = [t for ts in times_raw.values() for t in ts]
    if all(_is_int(t) for t in all_times):
        gran, origin, div, first = KNOWN_INTEGER_TIMES.get(folder.name.upper(), ("step", None, 1, 0))
        axis = TimeAxis(gran, origin)
        conv = {}
        for split, ts in times_raw.items():
            big = next((i for i, t in enumerate(ts) if beyond_max_int_time(t)), None)
            if big is not None:
                raise DataError(f"time {ts[big][:30]} is beyond ±2^53, which no time step may be", file=present[split],
                                row=raw[split].rows[big])
            vals = np.array([int(t) for t in ts], dtype=np.int64) - first
            bad = np.nonzero(vals % div)[0]
            if len(bad):
                raise DataError(f"time {ts[bad[0]]} is not a multiple of {div}", file=present[split],
                                row=raw[split].rows[bad[0]])
            conv[split] = vals // div
        if folder.name.upper() in KNOWN_INTEGER_TIMES:
            notes.append(f"integer times read as {axis.describe()}")
    else:
        axis, conv = _calendar_times(times_raw, present, raw)
    out = {split: np.concatenate([parts[split], conv[split][:, None]], axis=1) for split in parts}
    return out, entities, relations, axis


def _calendar_times(times_raw: dict[str, list[str]], present: dict[str, Path], raw: dict[str, _RawSplit]):
    """ISO dates (YYYY-MM-DD) -> day steps from the earliest date."""
    parsed: dict[str, list[dt.date]] = {}
    for split, ts in times_raw.items():
        out = []
        for row, t in zip(raw[split].rows, ts):
            try:  # exactly YYYY-MM-DD: fromisoformat alone also takes 20240102 and 2024-W01-3, as no data file may
                if not _ISO_DATE.match(t):
                    raise ValueError(t)
                out.append(dt.date.fromisoformat(t))
            except ValueError:
                raise DataError(f"time {t!r} is neither an integer nor an ISO date (YYYY-MM-DD)",
                                file=present[split], row=row) from None
        parsed[split] = out
    origin = min(d for ds in parsed.values() for d in ds)
    axis = TimeAxis("day", origin.isoformat())
    conv = {s: np.array([(d - origin).days for d in ds], dtype=np.int64) for s, ds in parsed.items()}
    return axis, conv


def _benchmark_intervals(raw: dict[str, _RawSplit], present: dict[str, Path],
                         entity_file: VocabFile | None, relation_file: VocabFile | None, notes: list[str]):
    if entity_file is None or relation_file is None:
        raise DataError("interval facts need entity2id.txt and relation2id.txt", file=next(iter(present.values())))
    notes.extend(entity_file.notes + relation_file.notes)
    entities = Vocabulary(entity_file.names)
    relations = Vocabulary(tuple(f"{r} [{kind}]" for r in relation_file.names for kind in ("since", "until")))
    parts: dict[str, np.ndarray] = {}
    dropped = 0
    reversed_rows: list[tuple[str, int]] = []
    for split, rs in raw.items():
        path = present[split]
        _check_width(path, rs, (5,))
        rows: list[tuple[int, int, int, int]] = []
        for row, f in zip(rs.rows, rs.fields):
            s, r, o = (entity_file.index(f[0], path, row, "entity"), relation_file.index(f[1], path, row, "relation"),
                       entity_file.index(f[2], path, row, "entity"))
            try:
                start, end = _hyte_year(f[3], "0"), _hyte_year(f[4], "9")
            except ValueError as e:
                raise DataError(str(e), file=path, row=row) from None
            if start is None and end is None:
                dropped += 1
                continue
            if start is not None and end is not None and end < start:
                reversed_rows.append((path.name, row))
            if start is not None:
                rows.append((s, 2 * r, o, start))
            if end is not None:
                rows.append((s, 2 * r + 1, o, end))
        parts[split] = np.array(rows, dtype=np.int64).reshape(-1, 4)
    notes.append("policy: " + INTERVAL_POLICY)
    if dropped:
        notes.append(f"{dropped} interval facts with neither year known were dropped")
    if reversed_rows:  # kept as the benchmark gives them (published figures use them so); said, not hidden
        first = ", ".join(f"{f} row {r}" for f, r in reversed_rows[:3])
        notes.append(f"{len(reversed_rows)} interval facts end before they start ({first}"
                     + (" ..." if len(reversed_rows) > 3 else "") + "); their since/until facts are kept as given")
    return parts, entities, relations, TimeAxis("year", "0")
