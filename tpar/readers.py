"""Readers: benchmark folders (every layout in ``../shared/datasets``) and user CSV files, all into
one :class:`tpar.data.TemporalKG`.

Layouts handled (see ``../shared/datasets/README.md``):

* id-based quadruples ``s r o t`` (4 columns) or ``s r o t 0`` (5 columns), fields possibly padded
  with spaces, times as day indices (ICEWS14, from 1), hours (ICEWS18) or year indices (YAGO, WIKI);
* name-based quadruples ``subject relation object YYYY-MM-DD`` (interpolation ICEWS14, ICEWS05-15),
  with a UTF-8 BOM and CRLF line ends in places;
* HyTE interval quintuples ``s r o start end`` with ``#`` placeholders and negative years
  (YAGO11k, WIKIDATA12k) -- see :data:`INTERVAL_POLICY`;
* ``entity2id.txt`` with 2 (``name id``) or 4 (``name id start end``) columns;
* a user CSV/TSV file with a header ``subject, relation, object, time[, split]``, or a folder
  holding ``train.csv``, ``valid.csv`` and ``test.csv`` in that format.

Every problem raises :class:`tpar.errors.DataError` naming the file, the row and the problem.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tpar.data import SPLITS, TemporalKG
from tpar.errors import DataError
from tpar.timeaxis import TimeAxis
from tpar.vocab import Vocabulary

BOM = "\ufeff"

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
    roots += [Path(__file__).resolve().parent.parent, Path.cwd()]
    for root in roots:
        cand = (root / ".." / "shared" / "datasets").resolve()
        if cand.is_dir():
            return cand
    return None


# ---------------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------------
def load_dataset(path: str | Path, *, time_format: str = "auto", split_policy: str = "chronological",
                 seed: int = 0) -> TemporalKG:
    """Load a benchmark folder, a folder of ``train/valid/test.csv``, or one CSV/TSV file.

    ``time_format`` and ``split_policy``/``seed`` apply to CSV input only (see :func:`load_csv`).
    """
    p = Path(path)
    if not p.exists():
        raise DataError("no such file or directory", file=p)
    if p.is_dir():
        if any((p / f"{s}.csv").is_file() for s in SPLITS):
            return load_csv_folder(p, time_format=time_format)
        return load_benchmark(p)
    return load_csv(p, time_format=time_format, split_policy=split_policy, seed=seed)


# ---------------------------------------------------------------------------------------------------
# text helpers
# ---------------------------------------------------------------------------------------------------
def read_text(path: Path) -> str:
    """A UTF-8 text file without its BOM; unreadable or non-UTF-8 files raise :class:`DataError`
    naming the row of the first bad byte."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DataError(f"cannot read file ({e.strerror})", file=path) from None
    try:
        return raw.decode("utf-8").lstrip(BOM)
    except UnicodeDecodeError as e:
        row = raw[: e.start].count(b"\n") + 1
        raise DataError(f"not UTF-8 text (invalid byte 0x{raw[e.start]:02x}); save the file as UTF-8",
                        file=path, row=row) from None


def _read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 text file without BOM and line ends; empty lines kept (for row numbers)."""
    return read_text(path).replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _fields(line: str) -> list[str]:
    return [f.strip().lstrip(BOM) for f in line.split("\t")]


def _read_vocab_file(path: Path) -> tuple[str, ...]:
    """``name<TAB>id[<TAB>start<TAB>end]`` -> names ordered by id; BOM artefacts merged."""
    by_id: dict[int, str] = {}
    for row, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        f = _fields(line)
        if len(f) not in (2, 4):
            raise DataError(f"expected 2 or 4 tab-separated columns (name, id[, start, end]), found {len(f)}",
                            file=path, row=row)
        try:
            idx = int(f[1])
        except ValueError:
            raise DataError(f"id {f[1]!r} is not an integer", file=path, row=row) from None
        if idx in by_id:
            raise DataError(f"id {idx} appears twice", file=path, row=row)
        by_id[idx] = f[0]
    if not by_id:
        raise DataError("file is empty", file=path)
    names: list[str] = []
    seen: set[str] = set()
    for idx in sorted(by_id):
        name = by_id[idx]
        if name not in seen:  # e.g. '\ufeffLawyer/Attorney (Germany)' == 'Lawyer/Attorney (Germany)'
            seen.add(name)
            names.append(name)
    return tuple(names)


def _dedup(arr: np.ndarray) -> tuple[np.ndarray, int]:
    """Drop repeated rows, keeping first occurrences in file order; returns (rows, number dropped)."""
    if len(arr) == 0:
        return arr, 0
    _, first = np.unique(arr, axis=0, return_index=True)
    first.sort()
    return arr[first], len(arr) - len(first)


# ---------------------------------------------------------------------------------------------------
# benchmark folders
# ---------------------------------------------------------------------------------------------------
_YEAR = re.compile(r"^(-?[0-9#]+)-")


def _hyte_year(text: str, fill: str) -> int | None:
    """Year of a HyTE bound ``YYYY-MM-DD`` with ``#`` placeholders; ``None`` if wholly unknown.
    Unknown digits of a partly known year ("19##") become ``fill`` ("0" for a start, "9" for an end),
    which widens the interval to every year the known digits allow."""
    m = _YEAR.match(text)
    if not m or not re.search(r"\d", m.group(1)):
        return None
    return int(m.group(1).replace("#", fill))


@dataclass
class _RawSplit:
    rows: list[int] = field(default_factory=list)  # line numbers
    fields: list[list[str]] = field(default_factory=list)


def load_benchmark(folder: str | Path) -> TemporalKG:
    """Load a benchmark folder (``train/valid/test.txt`` + ``entity2id.txt``/``relation2id.txt``)."""
    folder = Path(folder)
    present = {s: folder / f"{s}.txt" for s in SPLITS if (folder / f"{s}.txt").is_file()}
    if not present:
        raise DataError("folder has none of train.txt, valid.txt, test.txt (nor train/valid/test.csv)",
                        file=folder)
    raw: dict[str, _RawSplit] = {}
    for split, path in present.items():
        rs = _RawSplit()
        for row, line in enumerate(_read_lines(path), start=1):
            if line.strip():
                rs.rows.append(row)
                rs.fields.append(_fields(line))
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
            if not p.is_file():
                raise DataError("facts use integer ids but the vocabulary file is missing", file=p)
    entity_names = _read_vocab_file(ent_path) if ent_path.is_file() else None
    relation_names = _read_vocab_file(rel_path) if rel_path.is_file() else None

    notes: list[str] = []
    if interval:
        kg_parts, entities, relations, axis = _benchmark_intervals(raw, present, entity_names, relation_names, notes)
    else:
        kg_parts, entities, relations, axis = _benchmark_points(folder, raw, present, ids, entity_names,
                                                                relation_names, notes)
    splits: dict[str, np.ndarray] = {}
    for split, arr in kg_parts.items():
        arr, dups = _dedup(arr)
        if dups:
            notes.append(f"{split}: {dups} duplicate facts removed")
        splits[split] = arr
    missing = [s for s in SPLITS if s not in splits]
    if missing:
        notes.append(f"missing split file(s): {', '.join(m + '.txt' for m in missing)}")
    return TemporalKG(name=folder.name, entities=entities, relations=relations, time_axis=axis, splits=splits,
                      source=str(folder), notes=notes)


def _is_int(s: str) -> bool:
    return bool(re.fullmatch(r"[+-]?\d+", s))


def _check_width(split: str, path: Path, rs: _RawSplit, widths: tuple[int, ...]) -> None:
    for row, f in zip(rs.rows, rs.fields):
        if len(f) not in widths:
            raise DataError(f"expected {' or '.join(map(str, widths))} tab-separated columns, found {len(f)}",
                            file=path, row=row)


def _benchmark_points(folder: Path, raw: dict[str, _RawSplit], present: dict[str, Path], ids: bool,
                      entity_names: tuple[str, ...] | None, relation_names: tuple[str, ...] | None,
                      notes: list[str]):
    if ids:
        assert entity_names is not None and relation_names is not None
        entities, relations = Vocabulary(entity_names), Vocabulary(relation_names)
    else:
        entities = Vocabulary(entity_names) if entity_names else None
        relations = Vocabulary(relation_names) if relation_names else None
        if entities is None or relations is None:  # build from the facts, in order of appearance
            e_seen: dict[str, None] = {}
            r_seen: dict[str, None] = {}
            for rs in raw.values():
                for f in rs.fields:
                    if len(f) >= 3:
                        e_seen.setdefault(f[0]); r_seen.setdefault(f[1]); e_seen.setdefault(f[2])
            entities = entities or Vocabulary(tuple(e_seen))
            relations = relations or Vocabulary(tuple(r_seen))

    times_raw: dict[str, list[str]] = {}
    parts: dict[str, np.ndarray] = {}
    for split, rs in raw.items():
        path = present[split]
        _check_width(split, path, rs, (4, 5))
        arr = np.zeros((len(rs.fields), 3), dtype=np.int64)
        for i, (row, f) in enumerate(zip(rs.rows, rs.fields)):
            if ids:
                try:
                    s, r, o = int(f[0]), int(f[1]), int(f[2])
                except ValueError:
                    raise DataError("subject, relation and object must be integer ids", file=path, row=row) from None
                for val, vocab, what in ((s, entities, "entity"), (r, relations, "relation"), (o, entities, "entity")):
                    if not 0 <= val < len(vocab):
                        raise DataError(f"unknown {what} id {val} (vocabulary has {len(vocab)})", file=path, row=row)
            else:
                s, r, o = entities.get(f[0]), relations.get(f[1]), entities.get(f[2])
                for val, name, what in ((s, f[0], "entity"), (r, f[1], "relation"), (o, f[2], "entity")):
                    if val is None:
                        raise DataError(f"unknown {what} name {name!r} (not in {what}2id.txt)", file=path, row=row)
            arr[i] = (s, r, o)
        parts[split] = arr
        times_raw[split] = [f[3] for f in rs.fields]

    all_times = [t for ts in times_raw.values() for t in ts]
    if all(_is_int(t) for t in all_times):
        gran, origin, div, first = KNOWN_INTEGER_TIMES.get(folder.name.upper(), ("step", None, 1, 0))
        axis = TimeAxis(gran, origin)
        conv = {}
        for split, ts in times_raw.items():
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
            try:
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
                         entity_names: tuple[str, ...] | None, relation_names: tuple[str, ...] | None,
                         notes: list[str]):
    if entity_names is None or relation_names is None:
        raise DataError("interval facts need entity2id.txt and relation2id.txt", file=next(iter(present.values())))
    entities = Vocabulary(entity_names)
    relations = Vocabulary(tuple(f"{r} [{kind}]" for r in relation_names for kind in ("since", "until")))
    parts: dict[str, np.ndarray] = {}
    dropped = 0
    for split, rs in raw.items():
        path = present[split]
        _check_width(split, path, rs, (5,))
        rows: list[tuple[int, int, int, int]] = []
        for row, f in zip(rs.rows, rs.fields):
            try:
                s, r, o = int(f[0]), int(f[1]), int(f[2])
            except ValueError:
                raise DataError("subject, relation and object must be integer ids", file=path, row=row) from None
            if not (0 <= s < len(entities) and 0 <= o < len(entities)):
                raise DataError(f"unknown entity id (vocabulary has {len(entities)})", file=path, row=row)
            if not 0 <= r < len(relation_names):
                raise DataError(f"unknown relation id {r} (vocabulary has {len(relation_names)})", file=path, row=row)
            start, end = _hyte_year(f[3], "0"), _hyte_year(f[4], "9")
            if start is None and end is None:
                dropped += 1
                continue
            if start is not None:
                rows.append((s, 2 * r, o, start))
            if end is not None:
                rows.append((s, 2 * r + 1, o, end))
        parts[split] = np.array(rows, dtype=np.int64).reshape(-1, 4)
    notes.append("policy: " + INTERVAL_POLICY)
    if dropped:
        notes.append(f"{dropped} interval facts with neither year known were dropped")
    return parts, entities, relations, TimeAxis("year", "0")


# ---------------------------------------------------------------------------------------------------
# user CSV files
# ---------------------------------------------------------------------------------------------------
REQUIRED_COLUMNS = ("subject", "relation", "object", "time")
OPTIONAL_COLUMNS = ("split",)
TIME_FORMATS = ("auto", "date", "datetime", "month", "year", "int")
SPLIT_POLICIES = ("chronological", "random")

_RE_INT = re.compile(r"^[+-]?\d+$")
_RE_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_RE_MONTH = re.compile(r"^\d{4}-\d{2}$")
_RE_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")


@dataclass
class CsvReport:
    """What reading a CSV did: kept rows, problems by row, duplicates (for the app's validation report)."""

    file: str
    rows_read: int = 0
    problems: list[tuple[int, str]] = field(default_factory=list)  # (row number, problem)
    duplicates: int = 0
    time_format: str = ""

    @property
    def rows_dropped(self) -> int:
        return len(self.problems)


@dataclass
class CsvQuadruples:
    """Parsed rows of a CSV file: names, parsed times (steps on ``time_axis``), optional split labels."""

    subjects: list[str]
    relations: list[str]
    objects: list[str]
    times: np.ndarray
    splits: list[str] | None
    time_axis: TimeAxis
    report: CsvReport
    rows: list[int]
    raw_times: list[str]


def _classify_time(s: str) -> str:
    if _RE_INT.match(s):
        return "int"
    if _RE_DATE.match(s):
        return "date"
    if _RE_MONTH.match(s):
        return "month"
    if _RE_DATETIME.match(s):
        return "datetime"
    return "bad"


_EXPECTED = {
    "int": "an integer", "year": "a year", "date": "an ISO date (YYYY-MM-DD)",
    "month": "a month (YYYY-MM)", "datetime": "an ISO date or date-time (YYYY-MM-DD[ HH:MM[:SS]])",
}


def read_quadruple_csv(path: str | Path, *, time_format: str = "auto", on_bad_rows: str = "raise",
                       text: str | None = None) -> CsvQuadruples:
    """Parse a CSV/TSV of quadruples.

    Header (case-insensitive, any order): ``subject, relation, object, time`` and optionally
    ``split`` (train/valid/test). Comma or tab separated (detected from the header line).
    ``time_format``: ``auto`` (detect), ``date``, ``datetime``, ``month``, ``year`` or ``int``.
    In ``auto``, integers are read as years when every one lies in 1000..2999, else as plain steps.

    ``on_bad_rows="raise"`` raises :class:`DataError` at the first bad row; ``"drop"`` drops bad rows
    and lists them in the report. Duplicate rows are always removed and counted.
    """
    path = Path(path)
    if time_format not in TIME_FORMATS:
        raise DataError(f"unknown time format {time_format!r} (expected one of {', '.join(TIME_FORMATS)})")
    text = read_text(path) if text is None else text.lstrip(BOM)
    if not text.strip():
        raise DataError("file is empty (expected a header: subject, relation, object, time)", file=path)
    header_line = text.split("\n", 1)[0]
    delim = "\t" if "\t" in header_line else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    report = CsvReport(file=str(path))

    header = next(reader)
    cols = [h.strip().lower().lstrip(BOM) for h in header]
    unknown = [header[i] for i, c in enumerate(cols) if c not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
    if unknown:
        raise DataError(f"unexpected column(s) {', '.join(map(repr, unknown))} in the header; expected "
                        f"subject, relation, object, time (and optionally split)", file=path, row=1)
    missing = [c for c in REQUIRED_COLUMNS if c not in cols]
    if missing:
        raise DataError(f"header lacks column(s) {', '.join(missing)}; found {', '.join(map(repr, header))} "
                        f"(separator {'tab' if delim == chr(9) else 'comma'})", file=path, row=1)
    dup_cols = {c for c in cols if cols.count(c) > 1}
    if dup_cols:
        raise DataError(f"column(s) {', '.join(sorted(dup_cols))} appear twice in the header", file=path, row=1)
    pos = {c: cols.index(c) for c in cols}
    width = len(cols)

    def bad(row: int, problem: str) -> None:
        if on_bad_rows == "raise":
            raise DataError(problem, file=path, row=row)
        report.problems.append((row, problem))

    recs: list[tuple[int, list[str]]] = []
    for rec in reader:
        row = reader.line_num
        if not rec or all(not x.strip() for x in rec):
            continue
        report.rows_read += 1
        if len(rec) != width:
            bad(row, f"expected {width} columns, found {len(rec)}")
            continue
        vals = [x.strip() for x in rec]
        empty = [c for c in cols if not vals[pos[c]]]
        if empty:
            bad(row, f"empty {', '.join(empty)}")
            continue
        if "split" in pos and vals[pos["split"]].lower() not in SPLITS:
            bad(row, f"split {vals[pos['split']]!r} is not one of train, valid, test")
            continue
        recs.append((row, vals))
    if not recs:
        raise DataError("no valid rows after the header" + (f" ({report.rows_dropped} bad rows; first: row "
                        f"{report.problems[0][0]}: {report.problems[0][1]})" if report.problems else ""),
                        file=path)

    # time format: detect the dominant kind
    kinds = [_classify_time(v[pos["time"]]) for _, v in recs]
    fmt = time_format
    if fmt == "auto":
        counts: dict[str, int] = {}
        for k in kinds:
            key = "datetime" if k == "date" else k  # dates and date-times mix
            counts[key] = counts.get(key, 0) + 1
        counts.pop("bad", None)
        if not counts:
            r0, v0 = recs[0]
            raise DataError(f"time {v0[pos['time']]!r} is not an ISO date, date-time, month, year or integer",
                            file=path, row=r0)
        fmt = max(counts, key=lambda k: counts[k])
        if fmt == "int":
            ints = [int(v[pos["time"]]) for (_, v), k in zip(recs, kinds) if k == "int"]
            fmt = "year" if all(1000 <= x <= 2999 for x in ints) else "int"
        elif fmt == "datetime" and all(k != "datetime" for k in kinds):
            fmt = "date"
    accepts = {"int": {"int"}, "year": {"int"}, "month": {"month"}, "date": {"date"},
               "datetime": {"date", "datetime"}}[fmt]
    kept: list[tuple[int, list[str]]] = []
    for (row, v), k in zip(recs, kinds):
        if k in accepts:
            kept.append((row, v))
        else:
            bad(row, f"time {v[pos['time']]!r} is not {_EXPECTED[fmt]} like the other rows")
    if not kept:
        raise DataError("no row has a valid time", file=path)
    raw_times = [v[pos["time"]] for _, v in kept]
    axis, steps = _times_to_steps(raw_times, fmt)

    # duplicates (same quadruple and split)
    seen: set[tuple] = set()
    final: list[int] = []
    for i, (row, v) in enumerate(kept):
        key = (v[pos["subject"]], v[pos["relation"]], v[pos["object"]], int(steps[i]),
               v[pos["split"]].lower() if "split" in pos else "")
        if key in seen:
            report.duplicates += 1
            continue
        seen.add(key)
        final.append(i)
    report.time_format = fmt
    return CsvQuadruples(
        subjects=[kept[i][1][pos["subject"]] for i in final],
        relations=[kept[i][1][pos["relation"]] for i in final],
        objects=[kept[i][1][pos["object"]] for i in final],
        times=steps[final],
        splits=[kept[i][1][pos["split"]].lower() for i in final] if "split" in pos else None,
        time_axis=axis,
        report=report,
        rows=[kept[i][0] for i in final],
        raw_times=[raw_times[i] for i in final],
    )


def _times_to_steps(raw: list[str], fmt: str) -> tuple[TimeAxis, np.ndarray]:
    if fmt == "int":
        return TimeAxis("step"), np.array([int(x) for x in raw], dtype=np.int64)
    if fmt == "year":
        return TimeAxis("year", "0"), np.array([int(x) for x in raw], dtype=np.int64)
    if fmt == "month":
        months = np.array([int(x[:4]) * 12 + int(x[5:7]) - 1 for x in raw], dtype=np.int64)
        m0 = int(months.min())
        return TimeAxis("month", f"{m0 // 12:04d}-{m0 % 12 + 1:02d}"), months - m0
    if fmt == "date":
        days = np.array([dt.date.fromisoformat(x).toordinal() for x in raw], dtype=np.int64)
        d0 = int(days.min())
        return TimeAxis("day", dt.date.fromordinal(d0).isoformat()), days - d0
    # date-times: the coarsest unit that every timestamp falls on
    stamps = []
    for x in raw:
        d = dt.datetime.fromisoformat(x.replace("Z", "+00:00"))
        if d.tzinfo is not None:
            d = d.astimezone(dt.timezone.utc).replace(tzinfo=None)
        stamps.append(d)
    t0 = min(stamps)
    secs = np.array([int((d - t0).total_seconds()) for d in stamps], dtype=np.int64)
    midnight = t0.replace(hour=0, minute=0, second=0, microsecond=0)
    off = int((t0 - midnight).total_seconds())
    for gran, unit in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if np.all((secs + off) % unit == 0):
            break
    if gran == "day":
        return TimeAxis("day", midnight.date().isoformat()), (secs + off) // unit
    return TimeAxis(gran, t0.isoformat(sep=" ")), secs // unit


def _build_kg(name: str, source: str, per_split: dict[str, CsvQuadruples | tuple[CsvQuadruples, np.ndarray]],
              notes: list[str]) -> TemporalKG:
    """Vocabularies in order of first appearance over the given parts; facts per split."""
    ent: dict[str, int] = {}
    rel: dict[str, int] = {}
    splits: dict[str, np.ndarray] = {}
    for split, (q, idx) in per_split.items():
        arr = np.zeros((len(idx), 4), dtype=np.int64)
        for j, i in enumerate(idx):
            s = ent.setdefault(q.subjects[i], len(ent))
            r = rel.setdefault(q.relations[i], len(rel))
            o = ent.setdefault(q.objects[i], len(ent))
            arr[j] = (s, r, o, q.times[i])
        splits[split] = arr
    first = next(iter(per_split.values()))[0]
    return TemporalKG(name=name, entities=Vocabulary(tuple(ent)), relations=Vocabulary(tuple(rel)),
                      time_axis=first.time_axis, splits=splits, source=source, notes=notes)


def load_csv(path: str | Path, *, time_format: str = "auto", split_policy: str = "chronological",
             seed: int = 0, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> TemporalKG:
    """Load one CSV/TSV file of quadruples.

    With a ``split`` column its labels are used. Without one the facts are split by
    ``split_policy``: ``chronological`` (the earliest time steps hold ~80% of facts -> train, the next
    ~10% -> valid, the rest -> test; a time step is never cut in two, as forecasting needs) or
    ``random`` (a seeded 80/10/10 shuffle, as completion benchmarks are made).
    """
    path = Path(path)
    if split_policy not in SPLIT_POLICIES:
        raise DataError(f"unknown split policy {split_policy!r} (expected chronological or random)")
    q = read_quadruple_csv(path, time_format=time_format)
    notes = [f"{path.name}: {len(q.subjects)} facts, time read as {q.report.time_format} ({q.time_axis.describe()})"]
    if q.report.duplicates:
        notes.append(f"{q.report.duplicates} duplicate rows removed")
    if q.splits is not None:
        labels = np.array(q.splits)
        parts = {s: np.nonzero(labels == s)[0] for s in SPLITS if np.any(labels == s)}
        notes.append("splits from the file's split column")
    else:
        assign = split_assignment(q.times, split_policy, seed=seed, fractions=fractions)
        parts = {s: np.nonzero(assign == k)[0] for k, s in enumerate(SPLITS) if np.any(assign == k)}
        notes.append(f"{split_policy} split " + "/".join(f"{len(parts.get(s, []))}" for s in SPLITS)
                     + " (train/valid/test)" + (f", seed {seed}" if split_policy == "random" else ""))
    return _build_kg(path.stem, str(path), {s: (q, idx) for s, idx in parts.items()}, notes)


def split_assignment(times: np.ndarray, policy: str, *, seed: int = 0,
                     fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> np.ndarray:
    """0/1/2 (train/valid/test) per fact. Chronological splits cut between time steps only."""
    n = len(times)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    cut1, cut2 = fractions[0], fractions[0] + fractions[1]
    if policy == "random":
        order = np.random.default_rng(seed).permutation(n)
        a, b = int(round(cut1 * n)), int(round(cut2 * n))
        out[order[a:b]] = 1
        out[order[b:]] = 2
        return out
    uniq, counts = np.unique(times, return_counts=True)
    cum = np.cumsum(counts) / n  # share of facts at or before each step
    # the train/valid boundary is the first step whose cumulative share passes the cut
    t_valid = uniq[min(np.searchsorted(cum, cut1, side="left") + 1, len(uniq) - 1)] if len(uniq) > 2 else None
    t_test = uniq[min(np.searchsorted(cum, cut2, side="left") + 1, len(uniq) - 1)] if len(uniq) > 2 else None
    if t_valid is None:
        return out
    if t_test <= t_valid:
        t_test = uniq[min(np.searchsorted(uniq, t_valid) + 1, len(uniq) - 1)]
    out[times >= t_valid] = 1
    out[times >= t_test] = 2
    return out


def load_csv_folder(folder: str | Path, *, time_format: str = "auto") -> TemporalKG:
    """A folder with ``train.csv``, ``valid.csv``, ``test.csv`` (user CSV format). The first file
    fixes the time format; all files share one time axis."""
    folder = Path(folder)
    files = {s: folder / f"{s}.csv" for s in SPLITS if (folder / f"{s}.csv").is_file()}
    qs: dict[str, CsvQuadruples] = {}
    fmt = time_format
    for split, p in files.items():
        qs[split] = read_quadruple_csv(p, time_format=fmt)
        fmt = qs[split].report.time_format
    raw = [t for q in qs.values() for t in q.raw_times]
    axis, steps = _times_to_steps(raw, fmt)
    at = 0
    notes = [f"{', '.join(p.name for p in files.values())}: time read as {fmt} ({axis.describe()})"]
    for split, q in qs.items():
        q.times, q.time_axis = steps[at: at + len(q.raw_times)], axis
        at += len(q.raw_times)
        if q.report.duplicates:
            notes.append(f"{split}: {q.report.duplicates} duplicate rows removed")
    return _build_kg(folder.name, str(folder), {s: (q, np.arange(len(q.subjects))) for s, q in qs.items()}, notes)
