"""A user's quadruple table: a CSV/TSV file with a header ``subject, relation, object, time[, split]``,
or a folder holding ``train.csv``, ``valid.csv`` and ``test.csv`` in that format, into one
:class:`~tpar.data.kg.TemporalKG`. Problems raise :class:`tpar.errors.DataError` naming the file and
row (or, with ``on_bad_rows="drop"``, are listed in the :class:`CsvReport`).

Two optional columns mark facts a model inferred (``tpar complete`` writes them): ``completed``
(true/false) and ``probability`` (the model's probability of the filled-in entity); an
``alternatives`` column (the runner-up proposals) is read past. A cell that the formula-safe CSV
writer neutralised (a leading apostrophe before ``=``, ``+``, ``-``, ``@``: :mod:`tpar.data.outputs`)
reads back without the apostrophe, so files this project writes round-trip. A row that lacks exactly its subject
or its object is an *incomplete* fact: kept aside (``incomplete="keep"``) for completion, otherwise a
bad row that says how to complete it.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tpar.data.kg import SPLITS, TemporalKG, split_overlap_notes
from tpar.data.lineage import lineage_of
from tpar.data.outputs import FORMULA_START
from tpar.data.textfile import (BOM, MAX_LINE_CHARS, Marks, bounded_lines, marks_of, memory_named, newline_ends,
                               read_text)
from tpar.data.timeaxis import TimeAxis, in_utc, whole_number
from tpar.data.vocab import Vocabulary
from tpar.errors import DataError, plural, quoted

REQUIRED_COLUMNS = ("subject", "relation", "object", "time")
OPTIONAL_COLUMNS = ("split", "completed", "probability", "alternatives")
#: the values a ``completed`` cell may hold (case-insensitive; empty = false)
TRUE_VALUES, FALSE_VALUES = ("true", "1", "yes"), ("false", "0", "no", "")
TIME_FORMATS = ("auto", "date", "datetime", "month", "year", "int")
SPLIT_POLICIES = ("chronological", "random")

#: characters that are invisible or reorder text: removed from names (zero-width, joiners, BOM, bidi
#: embeddings / overrides / isolates, and C0/C1 controls)
_INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069\u0000-\u001f\u007f-\u009f]")


#: a date-time's UTC offset: "Z", "+02:00", "-0500" after a time of day
_UTC_OFFSET = re.compile(r"[T ][0-9][0-9:.]*(Z|[+-][0-9][0-9]:?[0-9][0-9])$", re.IGNORECASE)


def clean_name(name: str) -> str:
    """A name as kept: Unicode NFC (one form for the same characters), invisible and direction-changing
    characters removed, surrounding space stripped."""
    return _INVISIBLE.sub("", unicodedata.normalize("NFC", name)).strip()


def show_invisible(name: str) -> str:
    """``name`` with each character :func:`clean_name` removes (invisible, direction-changing, control) written as
    its escape, e.g. 'Ωmega\\u200bCorp': what was in the file, readable (``ascii()`` escaped 'Ω' as well)."""
    shown = _INVISIBLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), name)
    if unicodedata.normalize("NFC", name) != name:  # a decomposed spelling ('e' + combining accent): said so
        shown += " (decomposed: " + name.encode("ascii", "backslashreplace").decode("ascii") + ")"
    return shown


def unescape_cell(value: str) -> str:
    """A cell as written before :func:`tpar.data.outputs.spreadsheet_safe` neutralised it ("'=x" -> "=x")."""
    return value[1:] if value.startswith("'") and value.lstrip("'").startswith(FORMULA_START) else value


#: rows a report lists by number for one kind of note (duplicates, empty rows); the rest are counted
MAX_LISTED_ROWS = 1000


def rows_text(rows: list[int], total: int, most: int = 10) -> str:
    """ "row 5" / "rows 5, 9 and 12" / "rows 5, 9, … (and 30 more)": the first ``most`` of ``rows``, ``total`` in all."""
    shown = [f"{r:,}" for r in rows[:most]]
    if total == 1:
        return f"row {shown[0]}"
    if total <= len(shown):
        return f"rows {', '.join(shown[:-1])} and {shown[-1]}"
    return f"rows {', '.join(shown)} (and {total - len(shown):,} more)"


def duplicates_note(report: CsvReport) -> str:
    """Which rows repeated an earlier row and were removed ("" when none), e.g. "2 duplicate rows removed: row 12
    repeats row 3, row 40 repeats row 7"."""
    if not report.duplicates:
        return ""
    pairs = ", ".join(f"row {r:,} repeats row {first:,}" for r, first, _ in report.duplicate_rows[:5])
    more = report.duplicates - min(len(report.duplicate_rows), 5)
    return (f"{plural(report.duplicates, 'duplicate row')} removed (the fact of an earlier row again): {pairs}"
            + (f" and {more:,} more" if more else ""))


def time_of_day_note(report: CsvReport, option: str = "--time-format date") -> str:
    """Why a file of mostly plain dates was read as date-times ("" when it was not): the rows with a time of day,
    which make the data's time step hours (or finer) for every fact; ``option``: how to read the times as dates
    where the note is shown."""
    if not report.time_of_day_count:
        return ""
    shown = ", ".join(f"row {r:,}: {t!r}" for r, t in report.time_of_day[:3])
    n = report.time_of_day_count
    return (f"{plural(n, 'row')} {'carries' if n == 1 else 'carry'} a time of day ({shown}"
            f"{', …' if n > 3 else ''}) beside {report.dates_beside:,} plain dates, so every time is read as a "
            f"date-time and the time step is finer than a day; if the times of day are a slip, read times as dates "
            f"({option}): those rows are then named among the dropped ones")


def reading_notes(report: CsvReport, lookalikes: bool = True, time_of_day: bool = True) -> list[str]:
    """One line each for rows of only separators, columns not read, names trimmed or normalised and (``lookalikes``)
    look-alike groups (the CLI's notes, the upload report's)."""
    out = []
    if report.empty_count:
        one = report.empty_count == 1
        out.append(f"{rows_text(report.empty_rows, report.empty_count)} {'holds' if one else 'hold'} nothing but "
                   f"separators (an empty row, e.g. ',,,'): skipped")
    if report.separator not in ("comma", "tab"):
        out.append(f"columns separated by a {report.separator} (sniffed from the header)")
    if report.columns_renamed:
        out.append(f"column{'s' if len(report.columns_renamed) > 1 else ''} "
                   + ", ".join(f"{a[:40]!r} read as {c}" for a, c in report.columns_renamed))
    if report.ignored_columns:
        shown = ", ".join(repr(c[:40]) for c in report.ignored_columns[:10])
        more = f" and {len(report.ignored_columns) - 10} more" if len(report.ignored_columns) > 10 else ""
        out.append(f"column{'s' if len(report.ignored_columns) > 1 else ''} {shown}{more} not read (only subject, "
                   "relation, object, time or their synonyms, and "
                   f"the optional {', '.join(OPTIONAL_COLUMNS)} are)")
    if time_of_day and report.time_of_day_count:
        out.append(time_of_day_note(report))
    if report.date_order:
        out.append(f"dates with slashes or dashes read {report.date_order}")
    if report.dates_rewritten:
        row, before, after = report.dates_rewritten[0]
        out.append(f"dates read into ISO form, e.g. row {row}: {before!r} -> {after!r}")
    if report.utc_converted:
        row, raw = report.utc_converted[0]
        one = len(report.utc_converted) == 1
        out.append(f"{plural(len(report.utc_converted), 'time')} {'carries' if one else 'carry'} a UTC offset and "
                   f"{'was' if one else 'were'} read as UTC (the data's one "
                   f"clock), e.g. row {row}: {raw!r}; times and the time step are in UTC")
    if report.normalised:
        row, before, after = report.normalised[0]
        out.append(f"{plural(len(report.normalised), 'name')} normalised (Unicode NFC, invisible or direction-changing "
                   f"characters removed), e.g. row {row}: '{show_invisible(before)[:80]}' -> {after[:80]!r}")  # as written: the
        # two spellings often look the same ('Café' written e + combining accent)
    if report.trimmed_count:
        row, spaced = report.trimmed[0]
        out.append(f"spaces around names trimmed in {plural(report.trimmed_count, 'row')} (a name is the same with or "
                   f"without them), e.g. row {row}: {spaced[:80]!r} -> {spaced.strip()[:80]!r}")
    if report.lookalikes and lookalikes:
        out.append(f"{plural(len(report.lookalikes), 'group')} of distinct names that look alike (they differ only in "
                   "case, accents, spaces or letters of another script drawn alike), kept apart as distinct names: if "
                   "they name one thing, write them alike, e.g. "
                   + " / ".join(repr(n) for n in report.lookalikes[0]))
    return out


#: Cyrillic and Greek letters (case-folded) drawn like a Latin letter in common fonts: 'Kirа' with a Cyrillic 'а'
#: reads as 'Kira' (walk-through 37: such a pair went unflagged while a fullwidth one was flagged)
HOMOGLYPHS = str.maketrans({
    **dict(zip("авеѕіјорсухһԁԛԝӏүкмнт", "abesijopcyxhdqwlykmht")),   # Cyrillic
    **dict(zip("αβεζηικμνορτυχ", "abezhikmnoptux")),                  # Greek
})


def lookalike_key(name: str) -> str:
    """What :func:`lookalike_groups` compares: compatibility forms folded and accents dropped (NFKD without its
    combining marks), case folded, spaces left out, and letters of another script drawn like Latin ones read as
    those (:data:`HOMOGLYPHS`)."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join("".join(c for c in decomposed if not unicodedata.combining(c)).casefold().split()).translate(HOMOGLYPHS)


def lookalike_groups(names: Iterable[str]) -> list[list[str]]:
    """Distinct names that read the same once compatibility forms, accents and case are folded and spaces are left
    out, e.g. 'Iran' / 'ＩＲＡＮ' / 'iran', 'Omega Corp' / 'OmegaCorp' (an invisible space removed from one spelling),
    'Zoë Halvorsen' / 'Zoe Halvorsen' (an accent typed in some rows only): each group sorted, groups sorted. Said,
    never merged: in some languages an accent tells two names apart."""
    by_key: dict[str, set[str]] = {}
    for n in names:
        by_key.setdefault(lookalike_key(n), set()).add(n)
    return sorted(sorted(g) for g in by_key.values() if len(g) > 1)


#: longest name (subject, relation, object) a row may hold; longer fields are row problems
MAX_FIELD = 1000
#: integer times are read as years (``auto``) only when every one lies in this range, else as plain steps
AUTO_YEARS = (1000, 2999)
#: other bad rows named by number in a ``raise``-mode error
MORE_BAD_ROWS_NAMED = 10
_RE_INT = re.compile(r"^[+-]?[0-9]+$")
_RE_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_RE_MONTH = re.compile(r"^[0-9]{4}-[0-9]{2}$")
_RE_DATETIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?$",
                          re.IGNORECASE)  # RFC 3339 allows a lower-case 't' and 'z'; a question's time reads the same

#: header names read as each column (compared lower-cased, with spaces, dashes and dots as ``_``); the
#: column's own name wins over a synonym, and an earlier synonym over a later one (others are not read)
HEADER_SYNONYMS: dict[str, tuple[str, ...]] = {
    "subject": ("subject", "head", "actor", "actor1", "actor_1", "actor1name", "actor_1_name", "subject_entity",
                "head_entity", "source", "source_name", "source_entity", "sub"),
    "relation": ("relation", "predicate", "event", "event_type", "eventtype", "event_text", "relation_type", "rel",
                 "action", "verb", "property"),
    "object": ("object", "tail", "target", "actor2", "actor_2", "actor2name", "actor_2_name", "object_entity",
               "tail_entity", "target_entity", "target_name", "obj"),
    "time": ("time", "date", "timestamp", "day", "datetime", "date_time", "time_stamp", "event_date", "when", "ts"),
    "split": ("split",), "completed": ("completed",), "probability": ("probability",),
    "alternatives": ("alternatives",),
}
#: subject synonyms read as the subject only beside their object column (else a "source" is where a row came from)
PAIRED = {"source": "target", "source_name": "target_name", "source_entity": "target_entity"}
#: separators a header may use, sniffed from the header line
SEPARATORS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}

#: a day and a month in either order, then a four-digit year: 25/03/2024, 03-25-2024, 25.03.2024 (dots: day
#: first, as written where that form is used), with an optional time of day (14:05[:30][ PM])
_RE_DMY = re.compile(r"^([0-9]{1,2})([/.-])([0-9]{1,2})\2([0-9]{4})(?:[ T]+([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?\s*([AaPp][Mm])?)?$")
#: year first with slashes or dots: 2024/03/25, 2024.03.25 (always year, month, day)
_RE_YMD = re.compile(r"^([0-9]{4})([/.])([0-9]{1,2})\2([0-9]{1,2})(?:[ T]+([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?\s*([AaPp][Mm])?)?$")
DATE_ORDERS = {True: "day first (DD/MM/YYYY)", False: "month first (MM/DD/YYYY)"}


class AmbiguousDates(DataError):
    """Dates such as 03/04/2024 whose order (day or month first) the file does not show: the caller chooses."""


def _header_key(name: str) -> str:
    return re.sub(r"[\s.\-]+", "_", name.strip().lstrip(BOM).lower()).strip("_")


def map_header(header: list[str]) -> dict[str, int]:
    """Column -> index in ``header`` for every column of :data:`HEADER_SYNONYMS` found (the column's own
    name first, then its synonyms in order; a ``source`` only beside a ``target``, :data:`PAIRED`)."""
    keys = [_header_key(h) for h in header]
    pos: dict[str, int] = {}
    for col, names in HEADER_SYNONYMS.items():
        for n in names:
            if n in PAIRED and PAIRED[n] not in keys:
                continue
            if n in keys and keys.index(n) not in pos.values():
                pos[col] = keys.index(n)
                break
    return pos


#: the part of a first line :func:`sniff_separator` looks at (the columns a table needs are named in it)
MAX_HEADER_CHARS = 1_000_000


#: how a carriage return inside a row (one that ends no line, :func:`line_ends_to_newlines`) is shown to a user
SHOWN_CR = "\u240d"


def line_ends_to_newlines(text: str, marks: Marks, path: str | Path = "") -> str:
    """``text`` with every line ending a newline (:func:`~tpar.data.textfile.newline_ends`); a lone CR in a file whose
    lines end in LF is no line break: it becomes :attr:`~tpar.data.textfile.Marks.stray_cr` (a private-use character
    ``text`` does not hold, chosen here), so that the row holding it is reported whole, under its line's number
    (Python's csv reader would break the row there, keep its tail as a row of its own and shift every later row
    number off the file's lines)."""
    if "\r" not in text:
        return text
    if marks.stray_cr is None:
        marks.stray_cr = marks.free_character(text, path, "a carriage return inside a row")
    return newline_ends(text, marks.stray_cr)


def allow_fields_up_to(length: int) -> None:
    """Let Python's csv reader take fields of ``length`` characters (its default stops at 131,072 with an error
    naming no file or row): a long field is then a row problem this module names (:data:`MAX_FIELD`)."""
    csv.field_size_limit(max(csv.field_size_limit(), length + 1))


def sniff_separator(header_line: str) -> str:
    """The separator of :data:`SEPARATORS` under which the header names the most required columns (then
    splits into the most fields; a comma when none splits it)."""
    header_line = header_line[:MAX_HEADER_CHARS]  # a header is a few names; a file that is no table stops here
    allow_fields_up_to(len(header_line))
    best, score = ",", (-1, -1)
    for sep in SEPARATORS:
        fields = next(csv.reader([header_line], delimiter=sep), [])
        found = sum(c in map_header(fields) for c in REQUIRED_COLUMNS)
        if (found, len(fields)) > score:
            best, score = sep, (found, len(fields))
    return best


def _date_parts(text: str) -> tuple[int, int, int, str, str] | None:
    """A non-ISO date ``text`` as (first, second, year, separator, ISO time-of-day suffix) when it is day/month
    (either order) before the year, or (month, day, year, 'ymd', suffix) when year first; else ``None``.
    The suffix is ``""`` or `` HH:MM[:SS]`` (12-hour times with AM/PM turned into 24-hour ones); a time that
    cannot be one gives ``None`` so the value is reported as it is."""
    m = _RE_DMY.match(text)
    ymd = m is None
    if ymd:
        m = _RE_YMD.match(text)
        if m is None:
            return None
    suffix = ""
    if m.group(5) is not None:
        hour, minute, second, ampm = int(m.group(5)), int(m.group(6)), m.group(7), m.group(8)
        if ampm:
            if not 1 <= hour <= 12:
                return None
            hour = hour % 12 + (12 if ampm.lower() == "pm" else 0)
        suffix = f" {hour:02d}:{minute:02d}" + (f":{int(second):02d}" if second is not None else "")
    if ymd:
        return int(m.group(3)), int(m.group(4)), int(m.group(1)), "ymd", suffix
    return int(m.group(1)), int(m.group(3)), int(m.group(4)), m.group(2), suffix


def date_order_evidence(values: Iterable[tuple[int, str]]) -> tuple[tuple[int, str] | None, tuple[int, str] | None,
                                                                    tuple[int, str] | None]:
    """Over (row, time as written): the first value that shows day-first order (its first number is over 12),
    the first that shows month-first (its second is), and the first whose order matters but is not shown
    (both numbers 1..12 and different). Dotted dates (25.03.2024) and year-first ones are left out: their
    order is fixed."""
    day = month = open_ = None
    for row, text in values:
        parts = _date_parts(text)
        if parts is None or parts[3] in (".", "ymd"):
            continue
        a, b = parts[0], parts[1]
        if a > 12 >= b and day is None:
            day = (row, text)
        elif b > 12 >= a and month is None:
            month = (row, text)
        elif a <= 12 and b <= 12 and a != b and open_ is None:
            open_ = (row, text)
    return day, month, open_


def iso_date(text: str, day_first: bool) -> str | None:
    """``text`` in one of the spreadsheet forms (:func:`_date_parts`) as an ISO date (or date-time), reading
    slashes and dashes ``day_first`` or month first; ``None`` when it is in none of those forms. ``ValueError``
    naming the value when it is not a real date in that order."""
    parts = _date_parts(text)
    if parts is None:
        return None
    a, b, year, sep, suffix = parts
    if sep == "ymd":
        month, day, how = a, b, "year, month, day"
    elif sep == "." or day_first:
        day, month, how = a, b, "day, month, year"
    else:
        month, day, how = a, b, "month, day, year"
    try:
        d = dt.date(year, month, day)
    except ValueError as e:
        raise ValueError(f"time {text!r} is not a real date read as {how} ({e})") from None
    return d.isoformat() + suffix


@dataclass
class CsvReport:
    """What reading a CSV did: kept rows, problems by row, duplicates (for the app's validation report)."""

    file: str
    rows_read: int = 0
    problems: list[tuple[int, str]] = field(default_factory=list)  # (row number, problem)
    duplicates: int = 0
    duplicate_rows: list[tuple[int, int, str]] = field(default_factory=list)  # (row, the earlier row it repeats,
    # the fact as kept: "subject, relation, object, time"), first few
    empty_rows: list[int] = field(default_factory=list)  # rows of nothing but separators (",,,"), skipped; first few
    empty_count: int = 0                                  # all of them
    time_format: str = ""
    normalised: list[tuple[int, str, str]] = field(default_factory=list)  # (row, name as written, as kept)
    trimmed: list[tuple[int, str]] = field(default_factory=list)  # (row, a name with the spaces around it), first few
    trimmed_count: int = 0                                        # rows with a name whose surrounding spaces went
    lookalikes: list[list[str]] = field(default_factory=list)  # distinct names that look the same
    ignored_columns: list[str] = field(default_factory=list)  # header names not read (as written)
    utc_converted: list[tuple[int, str]] = field(default_factory=list)  # (row, time as written) given with an offset
    separator: str = "comma"                                         # as sniffed from the header (SEPARATORS)
    columns_renamed: list[tuple[str, str]] = field(default_factory=list)  # (header name as written, column read)
    date_order: str = ""                      # how DD/MM vs MM/DD dates were read, and why ("" when none occur)
    dates_rewritten: list[tuple[int, str, str]] = field(default_factory=list)  # (row, as written, ISO) first few
    day_first: bool | None = None             # the order DD/MM vs MM/DD dates were read in (None: none occur)
    time_of_day: list[tuple[int, str]] = field(default_factory=list)  # (row, time) of the few rows with a time of
    time_of_day_count: int = 0                # day among more plain dates (all rows then read as date-times)
    dates_beside: int = 0                     # the plain dates beside them

    @property
    def rows_dropped(self) -> int:
        return len(self.problems)


@dataclass(frozen=True)
class IncompleteRow:
    """A row that lacks its subject or its object (``None``): a fact to complete, not a fact."""

    row: int
    subject: str | None
    relation: str
    object: str | None
    time: str                  # as written in the file (read in the file's time format)
    split: str | None = None

    @property
    def missing(self) -> str:
        """``"subject"`` or ``"object"``: the field to fill."""
        return "subject" if self.subject is None else "object"

    @property
    def known(self) -> str:
        """The entity the row names (the question's entity)."""
        return self.object if self.subject is None else self.subject  # type: ignore[return-value]


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
    inferred: list[bool] | None = None          # per fact: the ``completed`` column (None: no such column)
    probabilities: list[float] | None = None    # per fact: the ``probability`` column (nan where empty)
    incomplete: list[IncompleteRow] = field(default_factory=list)


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
    "int": "an integer", "year": "a year",
    "date": "an ISO date (YYYY-MM-DD) or a date like 25/03/2024, 03/25/2024, 2024/03/25 or 25.03.2024",
    "month": "a month (YYYY-MM)", "datetime": "an ISO date or date-time (YYYY-MM-DD[ HH:MM[:SS]])",
}


@memory_named
def read_quadruple_csv(path: str | Path, *, time_format: str = "auto", on_bad_rows: str = "raise",
                       text: str | None = None, incomplete: str = "bad", day_first: bool | None = None) -> CsvQuadruples:
    """Parse a CSV/TSV of quadruples, as spreadsheets and news feeds export them.

    Header (case-insensitive, any order): ``subject, relation, object, time`` or their synonyms
    (:data:`HEADER_SYNONYMS`: date, timestamp, head, source, actor, tail, target, predicate, event …) and
    optionally ``split`` (train/valid/test); other columns are named in the report and skipped. Separated by
    commas, semicolons, tabs or pipes (sniffed from the header line); UTF-8 with or without a BOM, or UTF-16.
    ``time_format``: ``auto`` (detect), ``date``, ``datetime``, ``month``, ``year`` or ``int``.
    In ``auto``, integers are read as years when every one lies in 1000..2999, else as plain steps.
    Dates may be ISO (with or without a time of day), DD/MM/YYYY, MM/DD/YYYY, YYYY/MM/DD or DD.MM.YYYY (dashes
    for slashes too); they are kept as ISO. Whether slashes read day first is ``day_first``; ``None`` infers it
    from the file (a value whose first number is over 12 shows day first, its second month first) and raises
    :class:`AmbiguousDates` when no value shows it and the order matters.

    ``on_bad_rows="raise"`` raises :class:`DataError` naming the first bad row and counting (and numbering)
    the others; ``"drop"`` drops bad rows and lists them in the report. Duplicate rows are always removed and counted.
    ``incomplete="keep"`` puts rows that lack exactly their subject or their object (time and
    relation given and valid) in :attr:`CsvQuadruples.incomplete`; ``"bad"`` treats them as bad rows.
    """
    path = Path(path)
    if time_format not in TIME_FORMATS:
        raise DataError(f"unknown time format {time_format!r} (expected one of {', '.join(TIME_FORMATS)})")
    if text is None:  # dropping bad rows drops those holding a byte that is not UTF-8 too (each reported)
        text = read_text(path, mark_bad_bytes=on_bad_rows == "drop")
    marks = marks_of(text)  # bytes that are not UTF-8 may have been marked: their rows are bad
    text = line_ends_to_newlines(text.lstrip(BOM), marks, path)
    if not text or text.isspace():  # not text.strip(): a copy of the whole text (4 bytes a character with an emoji)
        raise DataError("file is empty (expected a header: subject, relation, object, time)", file=path)
    header_line = text[:MAX_HEADER_CHARS].split("\n", 1)[0].rstrip("\r")  # never a copy of the whole text
    delim = sniff_separator(header_line)
    # a quoted field may join many lines (an unclosed quote swallows the rest of the file, every row of it reported
    # below); one line longer than MAX_LINE_CHARS never reaches the csv reader (bounded_lines)
    allow_fields_up_to(len(text))
    lines = _LastLine(bounded_lines(text, path, marks))
    # a quoted cell that goes on after its closing quote ('"The Rock" Johnson') is a bad row, not silently rewritten
    # ('The Rock Johnson'; audit 37): _QuoteReader checks each one-line row holding a quote strictly
    reader = _QuoteReader(csv.reader(lines, delimiter=delim), lines, delim)
    rp = _RowProblems(path, CsvReport(file=str(path), separator=SEPARATORS[delim]), on_bad_rows)
    try:
        header = next(reader)
    except csv.Error as e:
        raise DataError(f"the header cannot be read: {e}", file=path, row=1) from None
    pos, width = _read_header(path, header, rp.report, marks)
    recs = _read_rows(reader, pos, width, incomplete, rp, marks)
    if time_format not in ("int", "year", "month") and recs:
        recs = _dates_to_iso(path, recs, pos["time"], day_first, rp.report, rp.bad)
    if not recs:
        rp.raise_on_problems()
        report = rp.report
        raise DataError("no valid rows after the header" + (f" ({plural(report.rows_dropped, 'bad row')}; first: row "
                        f"{report.problems[0][0]}: {report.problems[0][1]})" if report.problems else ""),
                        file=path)
    kinds = [_classify_time(v[pos["time"]]) for _, v in recs]
    fmt = time_format if time_format != "auto" else _dominant_time_format(path, recs, kinds, pos["time"], rp)
    kept, parsed = _parse_times(recs, kinds, pos["time"], fmt, rp)
    rp.raise_on_problems()
    return _assemble(path, kept, parsed, pos, fmt, rp.report)


@dataclass
class _RowProblems:
    """The bad rows of one file: collected in a pass, raised together in ``raise`` mode."""

    path: Path
    report: CsvReport
    on_bad_rows: str

    def bad(self, row: int, problem: str) -> None:
        self.report.problems.append((row, problem))

    def raise_on_problems(self) -> None:
        """``raise`` mode: after a whole pass, one error naming the first bad row, its problem, and how many
        other rows are bad (with their numbers), so a user mends the file once, not once per row."""
        if self.on_bad_rows != "raise" or not self.report.problems:
            return
        problems = sorted(self.report.problems)
        (row, problem), rest = problems[0], problems[1:]
        if rest:
            shown = ", ".join(str(r) for r, _ in rest[:MORE_BAD_ROWS_NAMED])
            more = " …" if len(rest) > MORE_BAD_ROWS_NAMED else ""
            problem += f" (and {plural(len(rest), 'more bad row')}: {shown}{more})"
        raise DataError(problem, file=self.path, row=row)


def _shown_header(header: list[str], most: int = 8) -> str:
    """A header's columns for a message: the first ``most``, each cut to 40 characters (a file that is no table
    -- a minified JSON, a binary -- would otherwise be echoed whole)."""
    shown = ", ".join(repr(h[:40] + ("…" if len(h) > 40 else "")) for h in header[:most])
    return shown + (f" and {len(header) - most:,} more" if len(header) > most else "") if header else "nothing"


def _read_header(path: Path, header: list[str], report: CsvReport, marks: Marks) -> tuple[dict[str, int], int]:
    """(column -> position, number of columns) of the header row; the report names the columns renamed and
    those not read (an export's source, weight, id …)."""
    encoding = marks.bad_byte_problem(header)
    if encoding:
        raise DataError(encoding + "; save the file as UTF-8", file=path, row=1)
    if len(header) == 1 and marks.long_line_length(header[0]) is not None:
        raise DataError(f"the header line is {marks.long_line_length(header[0]):,} characters long (at most {MAX_LINE_CHARS:,} are "
                        "read): a table's header is a few column names (subject, relation, object, time)", file=path, row=1)
    pos = map_header(header)
    missing = [c for c in REQUIRED_COLUMNS if c not in pos]
    if missing:
        also = "; ".join(f"{c}: {', '.join(HEADER_SYNONYMS[c][1:5])}" for c in missing)
        raise DataError(f"header lacks column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; found {_shown_header(header)} "
                        f"(separator {report.separator}); other names read as them: {also} …", file=path, row=1)
    keys = [_header_key(h) for h in header]
    dup_cols = {c for c, i in pos.items() if keys.count(keys[i]) > 1}
    if dup_cols:
        many = len(dup_cols) > 1
        raise DataError(f"column{'s' if many else ''} {', '.join(sorted(dup_cols))} appear{'' if many else 's'} twice in "
                        "the header", file=path, row=1)
    report.ignored_columns = [h.strip().lstrip(BOM) for i, h in enumerate(header) if i not in pos.values()]
    report.columns_renamed = [(header[i].strip().lstrip(BOM), c) for c, i in pos.items() if keys[i] != c]
    return pos, len(header)


def wrong_width(rec: list[str], width: int, delimiter: str) -> str:
    """A row's problem when it has too few or too many cells: the counts, the row (shortened), and the separator
    it seems written with when another one splits it into ``width`` cells (a tab-separated row in a comma file)."""
    text = delimiter.join(rec)
    shown = text if len(text) <= 80 else text[:80] + "…"
    other = next((name for sep, name in SEPARATORS.items() if sep != delimiter and len(text.split(sep)) == width), "")
    return (f"expected {width} columns, found {len(rec)}: {shown!r}"
            + (f" (the row seems {other}-separated; the header is {SEPARATORS.get(delimiter, delimiter)}-separated)"
               if other else ""))


class _LastLine:
    """The lines fed to the csv reader, remembering the last one (:class:`_QuoteReader` reads it again strictly)."""

    def __init__(self, lines) -> None:
        self._lines, self.last = iter(lines), ""

    def __iter__(self):
        return self

    def __next__(self) -> str:
        self.last = next(self._lines)
        return self.last


#: text after a quoted cell's closing quote, up to the separator: ("cell", what follows) -- '"The Rock" Johnson'
_AFTER_QUOTE = {d: re.compile(r'(?:^|%s)\s*"((?:[^"]|"")*)"([^%s\r\n]*)' % (re.escape(d), re.escape(d)))
                for d in SEPARATORS}


class QuotedCellError(csv.Error):
    """A quoted cell goes on after its closing quote: the csv module would drop its quotes."""


class _QuoteReader:
    """The csv reader, each one-line record holding a quote read again strictly: a cell that goes on after its
    closing quote with more than spaces is a :class:`QuotedCellError` quoting the cell (the lenient reader drops
    its quotes); spaces after a quote read as before (they are trimmed)."""

    def __init__(self, reader, lines: _LastLine, delimiter: str) -> None:
        self._reader, self._lines, self._delim = reader, lines, delimiter

    @property
    def line_num(self) -> int:
        return self._reader.line_num

    @property
    def dialect(self):
        return self._reader.dialect

    def __iter__(self):
        return self

    def __next__(self) -> list[str]:
        before = self._reader.line_num
        rec = next(self._reader)
        line = self._lines.last
        if '"' in line and self._reader.line_num == before + 1:
            try:
                next(csv.reader([line], delimiter=self._delim, strict=True), None)
            except csv.Error as e:
                junk = [(cell, after) for cell, after in _AFTER_QUOTE[self._delim].findall(line) if after.strip()] \
                    if "expected after" in str(e) else []
                if junk:
                    shown = f'"{junk[0][0]}"{junk[0][1]}'
                    raise QuotedCellError(f"the cell {shown[:80]!r} goes on after its closing quote, so its quotes "
                                          "would be lost: quote the whole cell and double each quote inside it, e.g. "
                                          "'\"\"\"The Rock\"\" Johnson\"'") from None
        return rec


def _read_rows(reader, pos: dict[str, int], width: int, incomplete: str,
               rp: _RowProblems, marks: Marks) -> list[tuple[int, list[str]]]:
    """(row number, cleaned cells) of every row whose cells are well formed (times are checked later);
    each other row becomes a problem naming its row (an unclosed quote names every line it swallowed; ``marks``:
    the characters that stand for a byte that is not UTF-8, a carriage return inside a row and a line too long to
    read, :class:`~tpar.data.textfile.Marks`: such rows are bad)."""
    report, bad = rp.report, rp.bad
    recs: list[tuple[int, list[str]]] = []
    seen: dict[str, str] = {}  # each distinct cell text held once: names and times repeat over many rows
    last = reader.line_num  # the header's last line
    while True:
        try:
            rec = next(reader)
        except StopIteration:
            break
        except csv.Error as e:  # e.g. a NUL byte: the row cannot be read at all
            report.rows_read += 1
            bad(reader.line_num, str(e) if isinstance(e, QuotedCellError) else f"unreadable row ({e})")
            last = reader.line_num
            continue
        first, row = last + 1, reader.line_num
        last = row
        if not rec:  # a blank line
            continue
        if all(not x.strip() for x in rec):  # only separators (a spreadsheet's empty row): skipped, and said so
            report.rows_read += 1
            report.empty_count += 1
            if len(report.empty_rows) < MAX_LISTED_ROWS:
                report.empty_rows.append(row)
            continue
        if row > first and any("\n" in x or "\r" in x for x in rec):
            # a quote opened on row `first` swallowed every line up to `row`: each is a dropped row
            report.rows_read += row - first + 1
            bad(first, f"a quote opened on this row is not closed before row {row} (or a field holds a line "
                       f"break): rows {first}-{row} dropped")
            for swallowed in range(first + 1, row + 1):
                bad(swallowed, f"swallowed by the unclosed quote opened on row {first}")
            continue
        report.rows_read += 1
        encoding = marks.bad_byte_problem(rec)
        if encoding:
            bad(row, encoding)
            continue
        if len(rec) == 1 and marks.long_line_length(rec[0]) is not None:
            bad(row, f"the row is {marks.long_line_length(rec[0]):,} characters long (at most {MAX_LINE_CHARS:,} are read)")
            continue
        if marks.holds_stray_cr(rec):
            bad(row, "a carriage return (shown ␍) inside the row, where only a line break may end it: the row is "
                     "dropped whole, not split")
            continue
        if len(rec) > width and not any(x.strip() for x in rec[width:]):
            rec = rec[:width]  # a trailing separator (spreadsheets write one after an empty last cell)
        if len(rec) != width:
            bad(row, wrong_width(rec, width, reader.dialect.delimiter))
            continue
        vals = [seen.setdefault(v, v) for v in (unescape_cell(x.strip()) for x in rec)]  # one object per name
        spaced = [rec[pos[c]] for c in ("subject", "relation", "object") if rec[pos[c]] != vals[pos[c]]
                  and rec[pos[c]].strip() != rec[pos[c]]]  # ' Alpha ' and 'Alpha' name one entity: said so
        if spaced:
            report.trimmed_count += 1
            if len(report.trimmed) < MAX_LISTED_ROWS:
                report.trimmed.append((row, spaced[0]))
        problem = _row_problem(row, vals, pos, incomplete, report)
        if problem:
            bad(row, problem)
            continue
        recs.append((row, vals))
    return recs


def _row_problem(row: int, vals: list[str], pos: dict[str, int], incomplete: str, report: CsvReport) -> str | None:
    """What is wrong with one row's cells (names are normalised in place first), or None."""
    invisible = []
    for c in ("subject", "relation", "object"):
        kept = clean_name(vals[pos[c]])
        if kept != vals[pos[c]]:
            if not kept and vals[pos[c]].strip():  # a name of nothing but invisible characters is no missing name
                invisible.append(f"{c} {ascii(vals[pos[c]][:20])}")
                continue
            report.normalised.append((row, vals[pos[c]], kept))
            vals[pos[c]] = kept
    if invisible:
        return f"{' and '.join(invisible)} holds only invisible or direction characters, no name"
    long = [c for c in pos if len(vals[pos[c]]) > MAX_FIELD]
    if long:
        return (", ".join(f"{c} is {len(vals[pos[c]]):,} characters long" for c in long)
                + f" (at most {MAX_FIELD:,})")
    empty = [c for c in pos if not vals[pos[c]] and c not in ("completed", "probability", "alternatives")]
    lacks_one = empty in (["subject"], ["object"])
    if empty and not (lacks_one and incomplete == "keep"):
        return f"empty {', '.join(empty)}" + (" (an incomplete fact: `tpar complete` or the Upload page can "
                                              "propose the missing entity)" if lacks_one else "")
    if "split" in pos and vals[pos["split"]].lower() not in SPLITS:
        return f"split {vals[pos['split']]!r} is not one of train, valid, test"
    if "completed" in pos and vals[pos["completed"]].lower() not in TRUE_VALUES + FALSE_VALUES:
        return f"completed {vals[pos['completed']]!r} is not true or false"
    if "probability" in pos and vals[pos["probability"]]:
        try:
            p = float(vals[pos["probability"]])
        except ValueError:
            p = float("nan")
        if not 0.0 <= p <= 1.0:  # also NaN
            return f"probability {vals[pos['probability']]!r} is not a number from 0 to 1"
    return None


def _dominant_time_format(path: Path, recs, kinds: list[str], tpos: int, rp: _RowProblems) -> str:
    """``auto``: the kind of time most rows have (dates and date-times mix; integers all in 1000..2999
    are years)."""
    counts: dict[str, int] = {}
    for k in kinds:
        key = "datetime" if k == "date" else k
        counts[key] = counts.get(key, 0) + 1
    counts.pop("bad", None)
    if not counts:
        rp.raise_on_problems()
        r0, v0 = recs[0]
        raise DataError(f"time {v0[tpos]!r} is not an ISO date, date-time, month, year or integer, nor a "
                        "date like 25/03/2024, 03/25/2024, 2024/03/25 or 25.03.2024", file=path, row=r0)
    fmt = max(counts, key=lambda k: counts[k])
    if fmt == "int":
        ints = [int(v[tpos]) for (_, v), k in zip(recs, kinds) if k == "int"]
        fmt = "year" if all(AUTO_YEARS[0] <= x <= AUTO_YEARS[1] for x in ints) else "int"
    elif fmt == "datetime" and all(k != "datetime" for k in kinds):
        fmt = "date"
    elif fmt == "datetime":  # which rows made it date-times (one '…T10:00' row makes a file of days hourly)
        timed = [(row, v[tpos]) for (row, v), k in zip(recs, kinds) if k == "datetime"]
        dates = sum(k == "date" for k in kinds)
        if dates > len(timed):
            rp.report.time_of_day = timed[:MAX_LISTED_ROWS]
            rp.report.time_of_day_count, rp.report.dates_beside = len(timed), dates
    return fmt


def _parse_times(recs, kinds: list[str], tpos: int, fmt: str, rp: _RowProblems) -> tuple[list, list]:
    """(rows kept, their parsed times): a row whose time is not of ``fmt`` or does not parse is a problem."""
    accepts = {"int": {"int"}, "year": {"int"}, "month": {"month"}, "date": {"date"},
               "datetime": {"date", "datetime"}}[fmt]
    kept: list[tuple[int, list[str]]] = []
    parsed: list = []
    for (row, v), k in zip(recs, kinds):
        if k not in accepts:
            rp.bad(row, f"time {v[tpos]!r} is not {_EXPECTED[fmt]} like the other rows")
            continue
        try:
            parsed.append(parse_time(v[tpos], fmt))
        except ValueError as e:
            rp.bad(row, str(e))
            continue
        kept.append((row, v))
    return kept, parsed


def _assemble(path: Path, kept, parsed: list, pos: dict[str, int], fmt: str, report: CsvReport) -> CsvQuadruples:
    """The facts of the rows kept: incomplete rows set apart, times as steps, duplicates removed and counted."""
    whole = [bool(v[pos["subject"]] and v[pos["object"]]) for _, v in kept]  # else a row to complete
    held = [IncompleteRow(row, v[pos["subject"]] or None, v[pos["relation"]], v[pos["object"]] or None,
                          v[pos["time"]], v[pos["split"]].lower() if "split" in pos else None)
            for (row, v), ok in zip(kept, whole) if not ok]
    parsed = [x for x, ok in zip(parsed, whole) if ok]
    kept = [rv for rv, ok in zip(kept, whole) if ok]
    if not kept and not held:  # every row was bad: the first one's problem says why
        first = sorted(report.problems)[0] if report.problems else None
        raise DataError("no row has a valid time" + (f" (first: row {first[0]}: {first[1]})" if first else ""),
                        file=path)
    raw_times = [v[pos["time"]] for _, v in kept]
    axis, steps = _times_to_steps(parsed, fmt) if kept else (TimeAxis("step"), np.zeros(0, dtype=np.int64))
    seen: dict[tuple, int] = {}  # quadruple and split -> the row that first holds it
    final: list[int] = []
    for i, (row, v) in enumerate(kept):  # duplicates: the same quadruple and split
        key = (v[pos["subject"]], v[pos["relation"]], v[pos["object"]], int(steps[i]),
               v[pos["split"]].lower() if "split" in pos else "")
        if key in seen:
            report.duplicates += 1
            if len(report.duplicate_rows) < MAX_LISTED_ROWS:
                report.duplicate_rows.append((row, seen[key], ", ".join(
                    (v[pos["subject"]], v[pos["relation"]], v[pos["object"]], raw_times[i]))))
            continue
        seen[key] = row
        final.append(i)
    report.time_format = fmt
    report.utc_converted = [(kept[i][0], raw_times[i]) for i in final if _UTC_OFFSET.search(raw_times[i])]
    names = {kept[i][1][pos[c]] for i in final for c in ("subject", "object")}
    report.lookalikes = lookalike_groups(names) + lookalike_groups({kept[i][1][pos["relation"]] for i in final})
    cell = [kept[i][1] for i in final]
    return CsvQuadruples(
        subjects=[v[pos["subject"]] for v in cell],
        relations=[v[pos["relation"]] for v in cell],
        objects=[v[pos["object"]] for v in cell],
        times=steps[final],
        splits=[v[pos["split"]].lower() for v in cell] if "split" in pos else None,
        time_axis=axis,
        report=report,
        rows=[kept[i][0] for i in final],
        raw_times=[raw_times[i] for i in final],
        inferred=[v[pos["completed"]].lower() in TRUE_VALUES for v in cell] if "completed" in pos else None,
        probabilities=[float(v[pos["probability"]]) if v[pos["probability"]] else float("nan")
                       for v in cell] if "probability" in pos else None,
        incomplete=held,
    )


#: how to choose the order of dates such as 03/04/2024, in an error message
CHOOSE_ORDER = "on the command line --day-first or --month-first, on the Upload page 'Dates like 03/04/2024'"


def _dates_to_iso(path: Path, recs: list[tuple[int, list[str]]], tpos: int, day_first: bool | None,
                  report: CsvReport, bad) -> list[tuple[int, list[str]]]:
    """Rows with their spreadsheet-form dates rewritten as ISO (:func:`iso_date`), in the order ``day_first`` or,
    when ``None``, the file shows (:func:`date_order_evidence`); a date that is not real in that order is a bad
    row. Raises :class:`AmbiguousDates` when the order matters and neither the caller nor the file says it."""
    day, month, open_ = date_order_evidence((row, v[tpos]) for row, v in recs)
    if day_first is not None:
        report.date_order = f"{DATE_ORDERS[day_first]}, as chosen" if day or month or open_ else ""
        report.day_first = day_first if day or month or open_ else None
    elif day and month:
        raise AmbiguousDates(f"the dates are in both orders: row {day[0]} ({day[1]!r}) has its day first, row "
                             f"{month[0]} ({month[1]!r}) its month first; choose the order ({CHOOSE_ORDER}): rows "
                             "in the other order are then dropped, each reported", file=path)
    elif day or month:
        day_first = report.day_first = day is not None
        row, text = day or month
        report.date_order = f"{DATE_ORDERS[day_first]}, as row {row} shows ({text!r})"
    elif open_:
        raise AmbiguousDates(f"dates such as {open_[1]!r} read as either day/month or month/day, and no date in the "
                             f"file has a day over 12 to tell which: choose the order ({CHOOSE_ORDER})",
                             file=path, row=open_[0])
    out = []
    for row, v in recs:
        try:
            iso = iso_date(v[tpos], bool(day_first))
        except ValueError as e:
            bad(row, str(e))
            continue
        if iso is not None:
            if len(report.dates_rewritten) < 3:
                report.dates_rewritten.append((row, v[tpos], iso))
            v[tpos] = iso
        out.append((row, v))
    return out


_FRACTION = re.compile(r"[0-9]{2}:[0-9]{2}:[0-9]{2}\.([0-9]+)")


def parse_time(text: str, fmt: str):
    """One time value read as ``fmt``: an int (``int``, ``year``), a month index y·12 + m − 1 (``month``),
    a day ordinal (``date``) or a naive UTC datetime (``datetime``; an offset or ``Z`` is converted to
    UTC, a time without one is taken as UTC). ``ValueError`` naming the value when it is not a real
    time (``2025-02-30``, ``2024-13``, ``T25:00``, an integer beyond ±2^53)."""
    s = text.strip()
    if fmt in ("int", "year"):
        return whole_number(s)  # its digits judged before int(), whose own limit speaks of sys.set_int_max_str_digits
    if fmt == "month":
        year, month = int(s[:4]), int(s[5:7])
        if not 1 <= month <= 12:
            raise ValueError(f"time {quoted(s)} is not a real month (month {month:02d})")
        return year * 12 + month - 1
    try:
        if fmt == "date":
            return dt.date.fromisoformat(s).toordinal()
        when = dt.datetime.fromisoformat(s.upper().replace("Z", "+00:00"))
    except ValueError as e:
        raise ValueError(f"time {quoted(s)} is not a real {'date' if fmt == 'date' else 'date or date-time'} ({e})") from None
    fraction = _FRACTION.search(s)  # read to the whole second: a fraction is never dropped without a word (not even
    if fraction and fraction.group(1).strip("0"):  # one below the microsecond, where fromisoformat stops reading)
        raise ValueError(f"time {quoted(s)} has a fraction of a second (times are read to the whole second)")
    return in_utc(when, s)


def _times_to_steps(values: list, fmt: str) -> tuple[TimeAxis, np.ndarray]:
    """Values of :func:`parse_time` -> the time axis and integer steps (the earliest value is step 0
    for calendar axes; integers are kept as they are)."""
    if fmt in ("int", "year"):
        return (TimeAxis("step") if fmt == "int" else TimeAxis("year", "0")), np.array(values, dtype=np.int64)
    if fmt == "month":
        months = np.array(values, dtype=np.int64)
        m0 = int(months.min())
        return TimeAxis("month", f"{m0 // 12:04d}-{m0 % 12 + 1:02d}"), months - m0
    if fmt == "date":
        days = np.array(values, dtype=np.int64)
        d0 = int(days.min())
        return TimeAxis("day", dt.date.fromordinal(d0).isoformat()), days - d0
    # date-times: the coarsest unit that every timestamp falls on
    t0 = min(values)
    secs = np.array([int((d - t0).total_seconds()) for d in values], dtype=np.int64)
    midnight = t0.replace(hour=0, minute=0, second=0, microsecond=0)
    off = int((t0 - midnight).total_seconds())
    for gran, unit in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if np.all((secs + off) % unit == 0):
            break
    if gran == "day":
        return TimeAxis("day", midnight.date().isoformat()), (secs + off) // unit
    return TimeAxis(gran, t0.isoformat(sep=" ")), secs // unit


def build_kg(name: str, source: str, per_split: dict[str, CsvQuadruples | tuple[CsvQuadruples, np.ndarray]],
              notes: list[str]) -> TemporalKG:
    """Vocabularies in order of first appearance over the given parts; facts per split."""
    ent: dict[str, int] = {}
    rel: dict[str, int] = {}
    splits: dict[str, np.ndarray] = {}
    inferred: dict[tuple[int, int, int, int], float] = {}
    for split, (q, idx) in per_split.items():
        arr = np.zeros((len(idx), 4), dtype=np.int64)
        for j, i in enumerate(idx):
            s = ent.setdefault(q.subjects[i], len(ent))
            r = rel.setdefault(q.relations[i], len(rel))
            o = ent.setdefault(q.objects[i], len(ent))
            arr[j] = (s, r, o, q.times[i])
            if q.inferred is not None and q.inferred[i]:
                inferred[(s, r, o, int(q.times[i]))] = q.probabilities[i] if q.probabilities is not None else float("nan")
        splits[split] = arr
    first = next(iter(per_split.values()))[0]
    moved = 0
    if inferred:  # inferred facts are never valid or test facts: a model is measured against observed facts only
        for split in ("valid", "test"):
            arr = splits.get(split)
            if arr is None or not len(arr):
                continue
            hit = np.array([tuple(f) in inferred for f in arr.tolist()], dtype=bool)
            if hit.any():
                train = splits.get("train", np.zeros((0, 4), np.int64))
                there = {tuple(f) for f in train.tolist()}
                extra = np.array([f for f in arr[hit].tolist() if tuple(f) not in there], dtype=np.int64).reshape(-1, 4)
                splits["train"] = np.concatenate([train, extra])
                splits[split] = arr[~hit]
                moved += int(hit.sum())
        notes = notes + [f"{plural(len(inferred), 'fact')} marked as inferred (completed by a model, not observed)"
                         + (f"; {moved} of them moved from valid/test to train (inferred facts are never evaluated "
                            "on)" if moved else "")]
    kg = TemporalKG(name=name, entities=Vocabulary(tuple(ent)), relations=Vocabulary(tuple(rel)),
                    time_axis=first.time_axis, splits=splits, source=source, notes=notes, inferred=inferred)
    kg.notes = kg.notes + split_overlap_notes(kg)
    return kg


def incomplete_rows_notes(file: str, q: CsvQuadruples) -> list[str]:
    """The note on the rows of ``q`` that lack exactly their subject or their object, set aside as facts to
    complete (not facts, not bad rows: as the Upload page sets them aside), e.g. "x.csv, rows 47, 167 and 262: 3
    incomplete rows (subject or object empty) set aside, not read as facts; `tpar complete` proposes the missing
    entities"."""
    if not q.incomplete:
        return []
    rows = [r.row for r in q.incomplete]
    return [f"{file}, {rows_text(rows, len(rows))}: {plural(len(rows), 'incomplete row')} (subject or object empty) set "
            f"aside, not read as facts; `tpar complete --input {file} --checkpoint MODEL --out FILLED.csv` proposes the "
            "missing entities"]


def dropped_rows_notes(file: str, report: CsvReport, limit: int = 20) -> list[str]:
    """One note per dropped row (the first ``limit``, then a count), e.g. "x.csv, row 5 dropped:
    expected 4 columns, found 2"."""
    problems = sorted(report.problems)  # in the file's order (a column problem is found before a time problem)
    out = [f"{file}, row {r} dropped: {p}" for r, p in problems[:limit]]
    if len(report.problems) > limit:
        out.append(f"{file}: {plural(len(report.problems) - limit, 'more row')} dropped")
    return out


def load_csv(path: str | Path, *, time_format: str = "auto", split_policy: str = "chronological",
             seed: int = 0, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
             on_bad_rows: str = "raise", day_first: bool | None = None) -> TemporalKG:
    """Load one CSV/TSV file of quadruples.

    With a ``split`` column its labels are used. Without one the facts are split by
    ``split_policy``: ``chronological`` (the earliest time steps hold ~80% of facts -> train, the next
    ~10% -> valid, the rest -> test; a time step is never cut in two, as forecasting needs) or
    ``random`` (a seeded 80/10/10 shuffle, as completion benchmarks are made). ``on_bad_rows``:
    ``raise`` at the first bad row, or ``drop`` bad rows and list them in the notes. ``day_first``: the
    order of dates like 03/04/2024 (``None``: from the file, :func:`read_quadruple_csv`).
    """
    path = Path(path)
    if split_policy not in SPLIT_POLICIES:
        raise DataError(f"unknown split policy {split_policy!r} (expected chronological or random)")
    q = read_quadruple_csv(path, time_format=time_format, on_bad_rows=on_bad_rows, day_first=day_first,
                           incomplete="keep")
    notes = [f"{path.name}: {plural(len(q.subjects), 'fact')}, time read as {q.report.time_format} ({q.time_axis.describe()})"]
    notes += dropped_rows_notes(path.name, q.report) + incomplete_rows_notes(path.name, q)
    if q.report.duplicates:
        notes.append(duplicates_note(q.report))
    notes += reading_notes(q.report)
    if q.splits is not None:
        labels = np.array(q.splits)
        parts = {s: np.nonzero(labels == s)[0] for s in SPLITS if np.any(labels == s)}
        notes.append("splits from the file's split column")
    else:
        assign = split_assignment(q.times, split_policy, seed=seed, fractions=fractions)
        parts = {s: np.nonzero(assign == k)[0] for k, s in enumerate(SPLITS) if np.any(assign == k)}
        notes.append(f"{split_policy} split " + "/".join(f"{len(parts.get(s, [])):,}" for s in SPLITS)
                     + " (train/valid/test)" + (f", seed {seed}" if split_policy == "random" else ""))
    return build_kg(path.stem, str(path), {s: (q, idx) for s, idx in parts.items()}, notes)


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


def load_csv_folder(folder: str | Path, *, time_format: str = "auto", on_bad_rows: str = "raise",
                    day_first: bool | None = None) -> TemporalKG:
    """A folder with ``train.csv``, ``valid.csv``, ``test.csv`` (user CSV format). The first file
    fixes the time format; all files share one time axis, and one date order (``day_first``, else the
    first file that shows it)."""
    folder = Path(folder)
    files = {s: folder / f"{s}.csv" for s in SPLITS if (folder / f"{s}.csv").exists()}
    read: dict[str, CsvQuadruples] = {}
    fmt, order, pending = time_format, day_first, []
    for split, p in files.items():
        try:
            read[split] = read_quadruple_csv(p, time_format=fmt, on_bad_rows=on_bad_rows, day_first=order,
                                             incomplete="keep")
        except AmbiguousDates:
            if order is not None:
                raise
            pending.append(split)  # another file may show the order
            continue
        fmt = read[split].report.time_format
        order = read[split].report.day_first if order is None else order
    for split in pending:
        read[split] = read_quadruple_csv(files[split], time_format=fmt, on_bad_rows=on_bad_rows, day_first=order,
                                         incomplete="keep")
        fmt = read[split].report.time_format
    qs = {s: read[s] for s in files}
    raw = [t for q in qs.values() for t in q.raw_times]
    axis, steps = _times_to_steps([parse_time(t, fmt) for t in raw], fmt)
    at = 0
    notes = [f"{', '.join(p.name for p in files.values())}: time read as {fmt} ({axis.describe()})"]
    for split, q in qs.items():
        q.times, q.time_axis = steps[at: at + len(q.raw_times)], axis
        at += len(q.raw_times)
        if q.report.duplicates:
            notes.append(f"{split}: {duplicates_note(q.report)}")
        notes += dropped_rows_notes(f"{split}.csv", q.report) + incomplete_rows_notes(f"{split}.csv", q)
        notes += [f"{split}.csv: {n}" for n in reading_notes(q.report)]
    kg = build_kg(folder.name or folder.resolve().name, str(folder), {s: (q, np.arange(len(q.subjects))) for s, q in qs.items()}, notes)
    kg.lineage = lineage_of(folder)
    if kg.lineage:
        times = "once" if len(kg.lineage) == 1 else f"{len(kg.lineage)} times"
        kg.notes.append(f"grown {times} since {kg.lineage[0]['base_name'] or 'an earlier version'} "
                        "(rows added from "
                        + ", ".join(str(x.get('file')) for x in kg.lineage[-3:]) + ")")
    return kg
