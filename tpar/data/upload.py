"""A user's quadruple file: a validation report before anything is used, then a saved data set.

:func:`inspect_upload` parses the text (bad rows are dropped and listed, never fatal unless
nothing is left), applies the chosen time reading and split, and returns the report with the
resulting :class:`~tpar.data.kg.TemporalKG`. :func:`save_dataset` writes that graph as a folder of
``train/valid/test.csv`` (the upload format) atomically: a failed or refused save leaves any
existing data set untouched.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable, Iterable
from glob import escape as glob_escape
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tpar.data.kg import SPLITS, TemporalKG, split_overlap_notes
from tpar.data.locks import exclusive
from tpar.data.outputs import csv_text
from tpar.data.names import check_name
from tpar.data.textfile import marks_of, newline_ends
from tpar.data.tables import (SHOWN_CR, IncompleteRow, build_kg, load_csv_folder, show_invisible,
                              reading_notes, read_quadruple_csv, split_assignment,
                              time_of_day_note)
from tpar.errors import DataError, plural

SPLIT_CHOICES = ("chronological", "random", "column")
#: a file whose dropped rows pass this share of the rows read is saved only once the user confirms the loss
DROP_CONFIRM_SHARE = 0.05
#: quoted values and row numbers in a row's problem: elided to group problems by kind
_PROBLEM_VALUE = re.compile(r"'[^']*'|\"[^\"]*\"|(?<=row )\d+|(?<=rows )\d+-\d+")


@dataclass
class UploadReport:
    file: str
    rows_read: int
    rows_kept: int
    dropped: list[tuple[int, str]]      # (row number in the file, problem)
    duplicates: int
    time_format: str                    # how times were read: date, datetime, month, year, int
    granularity: str                    # the time step: day, hour, ..., year, step
    time_range: tuple[str, str]
    entities: int
    relations: int
    split_policy: str
    split_counts: dict[str, int]
    notes: list[str] = field(default_factory=list)      # what may need the user's action (shown as warnings)
    info: list[str] = field(default_factory=list)       # how the file was read (separator, dates, names trimmed ...)
    normalised: list[tuple[int, str, str]] = field(default_factory=list)  # (row, name as written, as kept)
    lookalikes: list[list[str]] = field(default_factory=list)            # distinct names that look the same
    dropped_text: dict[int, str] = field(default_factory=dict)           # row -> its text (shortened)
    outliers: list[tuple[int, str]] = field(default_factory=list)        # (row, time) far from all other times
    outliers_excluded: bool = False
    self_loops: list[int] = field(default_factory=list)                  # rows with subject = object (kept)
    preview: list[dict] = field(default_factory=list)                    # the first facts as read
    incomplete: list[IncompleteRow] = field(default_factory=list)        # rows lacking subject or object
    duplicate_rows: list[tuple[int, int, str]] = field(default_factory=list)  # (row, the earlier row it repeats, the
    # fact), first few
    empty_rows: int = 0                                                  # rows of only separators, skipped
    lookalike_rows: dict[str, int] = field(default_factory=dict)         # each look-alike name -> rows naming it

    def lookalike_text(self, group: list[str]) -> str:
        """E.g. "'Zoe Halvorsen' (13 rows) and 'Zoë Halvorsen' (29 rows)"."""
        said = [f"{n!r} ({plural(self.lookalike_rows[n], 'row')})" if n in self.lookalike_rows else repr(n) for n in group]
        return ", ".join(said[:-1]) + " and " + said[-1]

    def accounting(self) -> str:
        """Where the rows read went, e.g. "218 rows read = 213 facts kept + 2 dropped + 2 duplicates + 1 empty row"
        (the report's tiles alone did not add up)."""
        parts = [(self.rows_kept, plural(self.rows_kept, "fact") + " kept"),
                 (len(self.dropped), f"{len(self.dropped):,} dropped"),
                 (self.duplicates, plural(self.duplicates, "duplicate")),
                 (self.empty_rows, plural(self.empty_rows, "empty row")),
                 (len(self.incomplete), plural(len(self.incomplete), "incomplete row") + " set aside"),
                 (len(self.outliers) if self.outliers_excluded else 0,
                  plural(len(self.outliers), "outlier time") + " left out")]
        shown = [text for n, text in parts if n or text.endswith("kept")]
        total = sum(n for n, _ in parts)
        return f"{plural(self.rows_read, 'row')} read {'=' if total == self.rows_read else ':'} " + " + ".join(shown)

    @property
    def dropped_share(self) -> float:
        """Dropped rows as a share of the rows read (0 when none were read)."""
        return len(self.dropped) / self.rows_read if self.rows_read else 0.0

    @property
    def needs_confirmation(self) -> bool:
        """More than :data:`DROP_CONFIRM_SHARE` of the rows are dropped: saving asks first."""
        return self.dropped_share > DROP_CONFIRM_SHARE

    def dropped_reasons(self) -> list[tuple[str, int, int]]:
        """Every kind of problem among the dropped rows, most rows first: (problem, rows, first row) -- the problem with its values elided when several rows share it, as written
        (its value shown) for a kind of one row."""
        kinds: dict[str, list[tuple[int, str]]] = {}
        for row, problem in self.dropped:
            kind = _PROBLEM_VALUE.sub(lambda m: "'…'" if m.group(0)[0] in "'\"" else "…", problem)
            kinds.setdefault(kind, []).append((row, problem))
        ranked = sorted(kinds.items(), key=lambda kv: (-len(kv[1]), kv[1][0][0]))
        return [(k if len(rows) > 1 else rows[0][1], len(rows), rows[0][0]) for k, rows in ranked]

    def loss_text(self, kinds: int = 3) -> str:
        """How many rows are lost and why, in one sentence (the save confirmation): the ``kinds`` commonest
        problems, and how many rows the others hold, so the counts add up to the rows lost."""
        reasons = self.dropped_reasons()
        shown = reasons if len(reasons) <= kinds + 1 else reasons[:kinds]  # "1 other kind" would say less than it
        why = "; ".join(f"{n:,} × {k} (first row {r})" if n > 1 else f"{k} (row {r})" for k, n, r in shown)
        rest = reasons[len(shown):]
        if rest:
            n_rest = sum(n for _, n, _ in rest)
            why += (f"; and {plural(n_rest, 'row')} of {len(rest):,} other kind"
                    f"{'s' if len(rest) != 1 else ''} of problem (the table lists every row)")
        verb = "is" if len(self.dropped) == 1 else "are"
        return (f"{len(self.dropped):,} of {self.rows_read:,} rows ({100 * self.dropped_share:.1f}%) {verb} not in the "
                f"data set: {why}")

    def problems_table(self, limit: int = 1000) -> list[dict]:
        return [{"row": r, "problem": p, "content": self.dropped_text.get(r, "")} for r, p in self.dropped[:limit]]


#: a time is an outlier when a gap longer than the rest of the data's whole span separates it (and
#: the few facts with it: at most 1% of them) from every other time, e.g. one 2031 row in 2023 data
OUTLIER_SHARE = 0.01
#: characters of a dropped row shown in the report
ROW_TEXT_CHARS = 200


def outlier_times(times: np.ndarray) -> np.ndarray:
    """A mask over ``times`` (steps) of the outliers: peeled from either end while a group of at
    most max(1, 1%) of the facts lies farther from the next time than the remaining data spans."""
    times = np.asarray(times)
    mask = np.zeros(len(times), dtype=bool)
    values, counts = np.unique(times, return_counts=True)
    if len(values) < 4:
        return mask
    limit = max(1, int(OUTLIER_SHARE * len(times)))
    lo, hi = 0, len(values) - 1
    changed = True
    while changed and hi - lo >= 3:
        changed = False
        for side in ("high", "low"):
            best = None
            group = 0
            idx = range(hi, lo + 2, -1) if side == "high" else range(lo, hi - 2)
            for j in idx:  # the group values[j..hi] (high) or values[lo..j] (low)
                group += counts[j]
                if group > limit:
                    break
                if side == "high":
                    gap, rest = values[j] - values[j - 1], values[j - 1] - values[lo]
                else:
                    gap, rest = values[j + 1] - values[j], values[hi] - values[j + 1]
                if rest > 0 and gap > rest:
                    best = j
            if best is not None:
                if side == "high":
                    mask |= times >= values[best]
                    hi = best - 1
                else:
                    mask |= times <= values[best]
                    lo = best + 1
                changed = True
    return mask


#: a valid or test split with fewer facts than this gets a note: figures on a handful of questions say little
FEW_SPLIT_FACTS = 10


def inspect_upload(text: str, file_name: str, *, time_format: str = "auto", split_policy: str = "chronological",
                   seed: int = 0, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
                   exclude_outliers: bool = False, day_first: bool | None = None) -> tuple[UploadReport, TemporalKG]:
    """Parse and split an uploaded CSV/TSV text. ``split_policy``: ``chronological`` (earliest
    ~80% of facts train, then valid, then test; a time step is never cut), ``random`` (seeded),
    or ``column`` (the file's own ``split`` column). Outlier times (:func:`outlier_times`) are
    reported with their rows, and left out when ``exclude_outliers``. Rows lacking exactly their
    subject or their object are kept aside in :attr:`UploadReport.incomplete` (to complete with a
    model, :mod:`tpar.reasoning.completion`). ``day_first``: the order of dates like 03/04/2024 (``None``: as
    the file shows it). Raises :class:`DataError` only when nothing usable is left (no header, no complete
    row, ...) or the file's date order must be chosen (:class:`~tpar.data.tables.AmbiguousDates`)."""
    if split_policy not in SPLIT_CHOICES:
        raise DataError(f"unknown split choice {split_policy!r} (expected {', '.join(SPLIT_CHOICES)})")
    if not 0 < fractions[0] < 1 or min(fractions) < 0 or abs(sum(fractions) - 1) > 1e-6:
        raise DataError(f"split fractions {fractions} must be ≥ 0, sum to 1, with some training facts")
    q = read_quadruple_csv(file_name, time_format=time_format, on_bad_rows="drop", text=text, incomplete="keep",
                           day_first=day_first)
    if not q.subjects:
        raise DataError(f"every row lacks its subject or its object ({len(q.incomplete)} incomplete rows): there "
                        "are no facts to learn from or to complete them with", file=file_name)
    flagged = outlier_times(q.times)
    outliers = [(q.rows[i], q.raw_times[i]) for i in np.nonzero(flagged)[0]]
    if exclude_outliers and flagged.any():
        q = keep_rows(q, np.nonzero(~flagged)[0])
    n = len(q.subjects)
    notes = []
    if split_policy == "column":
        if q.splits is None:
            raise DataError("no 'split' column in the file: choose a chronological or random split", file=file_name)
        labels = np.array(q.splits)
        parts = {s: np.nonzero(labels == s)[0] for s in SPLITS if np.any(labels == s)}
    else:
        if q.splits is not None:
            notes.append(f"the file's split column is not used: the {split_policy} split chosen here is (choose "
                         "\"the file's split column\" as the split to keep the file's own)")
        assign = split_assignment(q.times, split_policy, seed=seed, fractions=fractions)
        parts = {s: np.nonzero(assign == k)[0] for k, s in enumerate(SPLITS) if np.any(assign == k)}
    if "train" not in parts:
        raise DataError("the split leaves no training facts", file=file_name)
    for s in ("valid", "test"):
        if s not in parts:
            notes.append(f"no {s} facts: " + ("training needs a valid split for early stopping"
                                                if s == "valid" else "evaluation needs a test split"))
        elif len(parts[s]) < FEW_SPLIT_FACTS:  # a chronological split never cuts a time step: a share can end tiny
            few = len(parts[s])
            notes.append(f"the {s} split holds only {plural(few, 'fact')} ({plural(2 * few, 'question')}): "
                         + ("a model chosen on so few is chosen largely by chance" if s == "valid" else
                            "test figures on so few say little") + "; more data, or other split shares, give it more")
    info = reading_notes(q.report, lookalikes=False, time_of_day=False)  # look-alikes: a warning of their own
    if q.report.time_of_day_count:  # a few times of day made every time a date-time: to act on, not information
        notes.append(time_of_day_note(q.report, "'Read times as: date' above"))
    if split_policy == "chronological" and len(np.unique(q.times)) < 3:
        notes.append("fewer than 3 distinct times: a chronological split cannot separate train, valid and test")
    stem = Path(file_name).stem or "upload"
    kg = build_kg(stem, file_name, {s: (q, idx) for s, idx in parts.items()},
                   [f"{file_name}: {plural(n, 'fact')}, time read as {q.report.time_format}"] + notes
                   + reading_notes(q.report, time_of_day=False))  # ``notes`` holds the time-of-day note already
    t = kg.all_facts()[:, 3]
    report = UploadReport(file=file_name, rows_read=q.report.rows_read, rows_kept=n, dropped=sorted(q.report.problems),
                          duplicates=q.report.duplicates, duplicate_rows=list(q.report.duplicate_rows),
                          empty_rows=q.report.empty_count,
                          time_format=q.report.time_format,
                          granularity=kg.time_axis.granularity,
                          time_range=(kg.time_axis.label(int(t.min())), kg.time_axis.label(int(t.max()))),
                          entities=kg.num_entities, relations=kg.num_relations, split_policy=split_policy,
                          split_counts={s: int(len(idx)) for s, idx in parts.items()},
                          notes=notes + split_overlap_notes(kg),  # the file's own split column can repeat a fact
                          info=info,
                          normalised=q.report.normalised, lookalikes=q.report.lookalikes,
                          lookalike_rows=_rows_naming(q, {n for g in q.report.lookalikes[:1000] for n in g}),
                          dropped_text=row_texts(text, [r for r, _ in q.report.problems[:1000]]),
                          outliers=outliers, outliers_excluded=exclude_outliers and bool(outliers),
                          self_loops=[r for r, a, b in zip(q.rows, q.subjects, q.objects) if a == b],
                          preview=[{"row": q.rows[i], "subject": q.subjects[i], "relation": q.relations[i],
                                    "object": q.objects[i], "time": q.raw_times[i],
                                    **({"split": q.splits[i]} if q.splits is not None else {})}
                                   for i in range(min(10, n))],
                          incomplete=q.incomplete)
    if q.incomplete:
        report.notes.append(f"{plural(len(q.incomplete), 'incomplete row')} (subject or object empty) kept aside: a model "
                            "can propose the missing entity before the data set is saved")
    return report, kg


def _rows_naming(q, names: set[str]) -> dict[str, int]:
    """How many of ``q``'s rows name each of ``names`` (as subject, relation or object; a row naming one twice
    counts once)."""
    counts = dict.fromkeys(names, 0)
    if names:
        for row in zip(q.subjects, q.relations, q.objects):
            for n in set(row) & names:
                counts[n] += 1
    return counts


def _new_folder(root: Path, name: str, like: Path | None) -> Path:
    """A new, uniquely named hidden folder in ``root`` for a data set being saved, with the permissions a folder
    made here gets (the umask honoured: mkdtemp's are always 0700) or those of ``like``, the folder it will replace
    (a group's shared folder keeps its group access and setgid bit when grown in place)."""
    import secrets

    for _ in range(100):
        tmp = root / f".{name}-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            tmp.mkdir()
        except FileExistsError:
            continue
        if like is not None:
            os.chmod(tmp, stat.S_IMODE(like.stat().st_mode))
        return tmp
    raise DataError(f"cannot make a temporary folder in {root}")


def _read_back_problem(kg, back, used: list[str]) -> str | None:
    """What differs between data set ``kg`` and ``back``, its saved CSV files read again (``used``: the names of the
    entities its facts hold, the only ones CSV files keep), naming the first name that differs; ``None`` if nothing."""
    names = set(back.entities.names)
    lost = next((n for n in used if n not in names), None)
    if lost is not None:
        new = sorted(names - set(used))
        return (f"entity '{show_invisible(lost)[:80]}' reads back "
                + (f"as '{show_invisible(new[0])[:80]}'" if len(new) == 1 else "as another name or merged with one"))
    if len(names) != len(used):
        return f"{len(used):,} entities read back as {len(names):,}"
    if len(back.inferred) != len(kg.inferred):
        return f"{len(kg.inferred):,} inferred facts read back as {len(back.inferred):,}"
    counts, back_counts = ({s: len(g.facts(s)) for s in g.splits} for g in (kg, back))
    if counts != back_counts:
        return f"facts per split {counts} read back as {back_counts}"
    return None


def row_texts(text: str, rows: list[int]) -> dict[int, str]:
    """The text of the given (1-based) lines, shortened to ROW_TEXT_CHARS characters, numbered as the reader numbers
    them (:func:`~tpar.data.textfile.newline_ends`: a carriage return inside a row shown ␍, a byte that is not UTF-8
    shown �); the text is walked to the last row wanted, never split into a list of all its lines."""
    if not rows:
        return {}
    marks = marks_of(text)
    text = newline_ends(text.lstrip("\ufeff"), SHOWN_CR)
    out, start, line = {}, 0, 1
    for r in sorted(set(rows)):
        while line < r and start >= 0:
            start = text.find("\n", start)
            start, line = (start + 1 if start >= 0 else -1), line + 1
        if start < 0 or r < 1 or (start == len(text) and r > 1):
            continue
        end = text.find("\n", start, start + ROW_TEXT_CHARS + 1)
        row = text[start:end if end >= 0 else start + ROW_TEXT_CHARS + 1]
        row = marks.bad_bytes_shown(row)
        out[r] = row if len(row) <= ROW_TEXT_CHARS else row[:ROW_TEXT_CHARS] + "…"
    return out


def keep_rows(q, idx: np.ndarray):
    """``q`` (a :class:`~tpar.data.tables.CsvQuadruples`) restricted to rows ``idx``, its time axis
    re-based on the earliest kept time (calendar axes; integer axes stay absolute)."""
    from dataclasses import replace

    from tpar.data.timeaxis import TimeAxis

    times = q.times[idx]
    axis = q.time_axis
    if axis.origin is not None and axis.granularity != "year" and len(times):
        m = int(times.min())
        axis, times = TimeAxis(axis.granularity, axis.label(m), axis.step), times - m
    pick = idx.tolist()
    return replace(q, subjects=[q.subjects[i] for i in pick], relations=[q.relations[i] for i in pick],
                   objects=[q.objects[i] for i in pick], times=times,
                   splits=[q.splits[i] for i in pick] if q.splits is not None else None, time_axis=axis,
                   inferred=[q.inferred[i] for i in pick] if q.inferred is not None else None,
                   probabilities=[q.probabilities[i] for i in pick] if q.probabilities is not None else None,
                   rows=[q.rows[i] for i in pick], raw_times=[q.raw_times[i] for i in pick])


def save_dataset(kg: TemporalKG, folder: str | Path, name: str, *, overwrite: bool = False,
                 extra_files: dict[str, str] | None = None, unchanged: Callable[[Path], None] | None = None) -> Path:
    """Write ``kg`` as ``folder/name/{train,valid,test}.csv`` and check it reads back identically.
    Refuses an existing name unless ``overwrite``; the old folder is replaced only after the new
    one is complete. ``extra_files``: more text files written into the folder with it (plain names, e.g. the
    lineage of a grown data set). ``unchanged(dest)``: called under the save's lock before anything is written;
    it raises :class:`DataError` when the data set there changed since the caller read it (a grown data set must
    not replace another process's growth)."""
    check_name("data set", name)
    root = Path(folder)
    try:
        root.mkdir(parents=True, exist_ok=True)
        with exclusive(root / f".{name}.lock", f"data set {name!r}"):  # one save of a name at a time
            restore_interrupted_save(root, name)
            if unchanged is not None:
                unchanged(root / name)
            return _save_locked(kg, root, name, overwrite, extra_files or {})
    except OSError as e:  # a full disk, a read-only folder: earlier data sets are untouched
        raise DataError(f"cannot save data set {name!r} ({e.strerror or e})", file=root) from None


def interrupted_saves(root: Path, name: str) -> list[Path]:
    """The previous copies of data set ``name`` that a replacing save moved aside (``.old-<name>-<pid>``, the rest
    of the name digits only: ``.old-a-b-7`` is data set ``a-b``'s): a save killed between its two renames left one,
    and no folder under the name. Taken under the name's lock, every such copy is a killed save's (a live save holds
    the lock), whoever now has its pid."""
    prefix = f".old-{name}-"
    return [old for old in sorted(root.glob(f"{glob_escape(prefix)}*"))
            if old.name[len(prefix):].isdigit() and old.is_dir() and not old.is_symlink()]


def restore_interrupted_save(root: Path, name: str) -> None:
    """Under the name's lock: put back the previous copy of ``name`` that a killed replacing save left aside when
    nothing is under the name (hostile audit 39 #15: the data set had vanished), and remove such copies once the
    name holds a data set again."""
    for old in interrupted_saves(root, name):
        if not (root / name).exists():
            old.rename(root / name)
        else:
            shutil.rmtree(old, ignore_errors=True)


def unsaved_entries(folder: Path, extra_files: Iterable[str] = ()) -> list[str]:
    """The entries of ``folder`` that a data set saved by :func:`save_dataset` does not hold (its split CSVs,
    the lineage and ``extra_files``' names), sorted: what replacing the folder would delete for good."""
    from tpar.data.lineage import LINEAGE_FILE

    keep = {f"{s}.csv" for s in SPLITS} | {LINEAGE_FILE} | set(extra_files)
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


def _check_replaceable(dest: Path, extra_files: dict[str, str]) -> None:
    """Replacing ``dest`` deletes it: only a data set folder as this module saves one (:func:`unsaved_entries`
    is empty) may be replaced; anything else raises :class:`DataError`, nothing deleted."""
    if dest.is_symlink() or not dest.is_dir():
        raise DataError("is not a data set folder, so it is not replaced: choose another name", file=dest)
    other = unsaved_entries(dest, extra_files)
    if other or not any((dest / f"{s}.csv").is_file() for s in SPLITS):
        raise DataError("is not only a saved data set (" + (f"it also holds {', '.join(other[:5])}" if other else
                        "no train/valid/test.csv") + "), so it is not replaced: nothing was deleted", file=dest)


def _save_locked(kg: TemporalKG, root: Path, name: str, overwrite: bool, extra_files: dict[str, str]) -> Path:
    dest = root / name
    if dest.exists() and not overwrite:
        raise DataError(f"a data set named {name!r} already exists; choose another name or replace it")
    if dest.exists():
        _check_replaceable(dest, extra_files)
    tmp = _new_folder(root, name, like=dest if dest.exists() else None)
    try:
        ax = kg.time_axis
        for split in SPLITS:
            if split not in kg.splits:
                continue
            marked = bool(kg.inferred)  # inferred facts keep their mark: completed, probability
            rows = []
            for s, r, o, t in kg.facts(split).tolist():
                row = [kg.entities.name(s), kg.relations.name(r), kg.entities.name(o), ax.label(t)]
                if marked:
                    p = kg.inferred.get((s, r, o, t))
                    # six decimals, as the fingerprint rounds them: a saved data set reads back identical
                    row += ["false", ""] if p is None else ["true", "" if p != p else f"{round(p, 6):.6f}"]
                rows.append(row)
            # the one formula-safe writer: a name from the upload never runs as a spreadsheet formula
            (tmp / f"{split}.csv").write_text(csv_text(rows, ["subject", "relation", "object", "time"]
                                                       + (["completed", "probability"] if marked else [])),
                                              encoding="utf-8")
        for file, text in extra_files.items():
            if Path(file).name != file or file.startswith(".") or file.endswith(".csv"):
                raise ValueError(f"not a plain extra file name: {file!r}")
            (tmp / file).write_text(text, encoding="utf-8")
        back = load_csv_folder(tmp, time_format={"step": "int", "year": "year", "month": "month", "day": "date"}
                               .get(ax.granularity, "datetime"))
        facts = kg.all_facts()  # CSV files hold facts: an entity of no fact (a benchmark's entity2id) is not kept
        used = sorted({kg.entities.name(e) for e in np.unique(facts[:, [0, 2]]).tolist()}) if len(facts) else []
        problem = _read_back_problem(kg, back, used)
        if problem:
            raise DataError(f"the saved data set does not read back as it was: {problem} (nothing was saved; please "
                            "report this)")
        if dest.exists():
            if not overwrite:  # appeared meanwhile (another process without the lock): never replaced silently
                raise DataError(f"a data set named {name!r} already exists; choose another name or replace it")
            old = root / f".old-{name}-{os.getpid()}"
            dest.rename(old)
            tmp.rename(dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(dest)
        return dest
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
