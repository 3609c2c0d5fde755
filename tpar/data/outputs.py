"""Files written for a user: one check of an output path before any work, atomic writes whose file
system errors name the path, and the one formula-safe CSV writer.

Every command that writes goes through :func:`check_output` (or :func:`check_output_folder`) before
it spends time, so a folder given as a file, a missing folder, a read-only file system or a folder
without write permission ends with a :class:`DataError` naming the path instead of failing at the end.
The writes themselves (:func:`write_text`, :func:`write_csv`, :func:`writing`) replace the target only
with a complete file and turn a failure (disk full, file system gone read-only) into the same error.

Every CSV this project writes goes through :func:`spreadsheet_safe`: a text cell that a spreadsheet
would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, after
any apostrophes) gets a leading apostrophe, so a name from an untrusted file can never become a
formula (OWASP's advice). The table reader takes exactly one such apostrophe off again
(:func:`tpar.data.tables.unescape_cell`), so data files written this way (saved data sets, completed
CSVs) read back unchanged."""

from __future__ import annotations

import csv
import io
import os
import secrets
from contextlib import contextmanager
from glob import escape as glob_escape
from pathlib import Path
from typing import Iterator, Sequence

from tpar.errors import DataError

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _why(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _probe(folder: Path, named: Path, what: str) -> None:
    """Create and remove a file in ``folder``: the one test that a write will succeed there (permission
    bits, a read-only mount and root's privileges all answer it); a refusal names ``named``."""
    probe = folder / f".tpar-write-probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as e:
        where = "" if named == folder else " in its folder"
        raise DataError(f"cannot write the {what}{where} ({_why(e)})", file=named) from None
    os.close(fd)
    try:
        probe.unlink()
    except OSError:
        pass


def check_output(path: str | Path, what: str = "output file", *, make_parents: bool = False) -> Path:
    """``path`` as a file this process can write (new or replaced), or a :class:`DataError` naming it:
    a folder, a parent that is missing (created when ``make_parents``) or not a folder, or a folder
    that cannot be written (permissions, a read-only file system)."""
    p = Path(path)
    if str(path).strip() == "":
        raise DataError(f"no {what} given")
    if p.is_dir():
        raise DataError(f"the {what} is a folder; give a file name", file=p)
    parent = p.parent
    if not parent.exists():
        if not make_parents:
            raise DataError(f"the {what}'s folder {parent} does not exist; create it first", file=p)
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise DataError(f"cannot create the {what}'s folder {parent} ({_why(e)})", file=p) from None
    if not parent.is_dir():
        raise DataError(f"the {what}'s folder {parent} is not a folder", file=p)
    if p.exists() and not p.is_file():
        raise DataError(f"the {what} exists and is not a regular file", file=p)
    if p.is_file() and (not os.access(p, os.W_OK) or not p.stat().st_mode & 0o222):
        # an atomic write replaces the file through its folder, past its own mode: a file made read-only (no write
        # bit for anyone, which also protects it from root) is a file someone means to keep
        raise DataError(f"the {what} exists and is read-only: nothing was written; make it writable or choose "
                        "another name", file=p)
    _probe(parent, p, what)
    return p


def same_file(a: str | Path, b: str | Path) -> bool:
    """``a`` and ``b`` name one file: the same inode when both exist (a symlink or a hard link included),
    else the same absolute path."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, ValueError, RuntimeError):
        return False


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, ValueError, RuntimeError):
        return False


def refuse_overwriting_inputs(outputs: dict[str, str | Path | None], inputs: dict[str, Sequence[Path]]) -> None:
    """The one check that a command's outputs spare its inputs, before any work: an output file (``{"--json":
    path}``) that is one of the input files (``{"--data": [its files]}``: a symlink or hard link to one
    included), two outputs that are one file, or an output that is an existing folder holding an input, raise
    :class:`DataError` naming both. ``None`` outputs are skipped."""
    seen: dict[str, Path] = {}
    for flag, out in outputs.items():
        if out is None or str(out).strip() == "":
            continue
        o = Path(out)
        for in_flag, files in inputs.items():
            for f in files:
                if same_file(o, f):
                    raise DataError(f"{flag} is {in_flag}'s file {f}: writing it would destroy the input; choose "
                                    f"another {flag}", file=o)
                if o.is_dir() and _inside(f, o):
                    raise DataError(f"{flag} is a folder holding {in_flag}'s file {f}; choose another {flag}", file=o)
        for other, p in seen.items():
            if same_file(o, p):
                raise DataError(f"{flag} and {other} are the same file; give each its own", file=o)
        seen[flag] = o


def check_output_folder(path: str | Path, what: str = "output folder") -> Path:
    """``path`` as a folder this process can write into (created with its parents when missing), or a
    :class:`DataError` naming it."""
    p = Path(path)
    if str(path).strip() == "":
        raise DataError(f"no {what} given")
    if p.exists() and not p.is_dir():
        raise DataError(f"the {what} exists and is not a folder", file=p)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DataError(f"cannot create the {what} ({_why(e)})", file=p) from None
    _probe(p, p, what)
    return p


@contextmanager
def writing(path: str | Path, what: str = "output file") -> Iterator[Path]:
    """``with writing(path) as tmp:`` -- write ``tmp``; it replaces ``path`` when the block ends
    without an error, so ``path`` is never half written; an :class:`OSError` on the way becomes a
    :class:`DataError` naming ``path``."""
    p = Path(path)
    _remove_orphans(p)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        _sync(tmp)  # on disk before the rename: after a power loss ``path`` is the old file or the new, never empty
        os.replace(tmp, p)
        _sync(p.parent)
    except OSError as e:
        raise DataError(f"cannot write the {what} ({_why(e)})", file=p) from None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def _sync(path: Path) -> None:
    """fsync ``path`` (a file or a folder) where the system allows it (some file systems refuse a folder's)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_orphans(p: Path) -> None:
    """Remove the temporary files of :func:`writing` that a killed process left beside ``p`` (SIGKILL mid-write:
    hostile audit 39 #14); a file whose process is alive is left alone (it is being written now). POSIX only (on
    Windows a liveness probe by signal would send one)."""
    from tpar.data.locks import pid_alive

    if os.name != "posix":
        return
    try:
        olds = list(p.parent.glob(f".{glob_escape(p.name)}.*.tmp"))
    except OSError:
        return
    for old in olds:
        parts = old.name[len(p.name) + 2:].split(".")
        if len(parts) != 3 or not parts[0].isdigit() or len(parts[0]) > 12 or pid_alive(int(parts[0])):
            continue  # not one of ours, or its writer is alive (or another user's): not ours to remove
        try:
            old.unlink()
        except OSError:
            pass


def write_text(path: str | Path, text: str, what: str = "output file") -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`writing`)."""
    with writing(path, what) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def spreadsheet_safe(value):
    """``value`` for a CSV cell: text that would start a formula gets a leading apostrophe (also when it
    already starts with apostrophes, so that taking one off restores it exactly); anything else
    (numbers included) is returned unchanged."""
    if isinstance(value, str) and value.lstrip("'").startswith(FORMULA_START):
        return "'" + value
    return value


def csv_text(rows: Sequence[dict] | Sequence[Sequence], header: Sequence[str] | None = None, *,
             lineterminator: str = "\r\n") -> str:
    """A CSV document of ``rows`` (dicts, or lists with ``header``) with every cell spreadsheet-safe.
    RFC 4180 line ends by default: a cell holding a CR or LF is then quoted, never split; ``"\n"`` only
    for text known to hold neither (the generated sample world)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=lineterminator)
    if rows and isinstance(rows[0], dict):
        header = list(header or rows[0])
        rows = [[r.get(k) for k in header] for r in rows]  # type: ignore[union-attr]
    if header:
        w.writerow([spreadsheet_safe(h) for h in header])
    for r in rows:
        w.writerow([spreadsheet_safe(v) for v in r])
    return buf.getvalue()


def write_csv(path: str | Path, rows: Sequence[dict] | Sequence[Sequence], header: Sequence[str] | None = None,
              what: str = "CSV file") -> Path:
    """:func:`csv_text` written to ``path`` atomically (see :func:`writing`)."""
    return write_text(path, csv_text(rows, header), what)
