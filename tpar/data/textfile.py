"""Reading a user's or a benchmark's text file: UTF-8 (with or without a BOM) or UTF-16 (as spreadsheets
export "Unicode text"), with the row of the first bad byte named when it is neither."""

from __future__ import annotations

import codecs
import errno
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from tpar.errors import DataError

BOM = "\ufeff"
T = TypeVar("T")


def _utf16_without_bom(raw: bytes) -> str | None:
    """``utf-16-le``/``utf-16-be`` when a BOM-less file looks like UTF-16 text (a NUL in every other byte of
    its start, as ASCII text in UTF-16 has), else ``None``."""
    head = raw[:400]
    if len(head) < 4 or len(head) % 2:
        head = head[: len(head) // 2 * 2]
    if len(head) < 4:
        return None
    if head[1::2].count(0) >= 0.9 * (len(head) // 2) and head[0::2].count(0) == 0:
        return "utf-16-le"
    if head[0::2].count(0) >= 0.9 * (len(head) // 2) and head[1::2].count(0) == 0:
        return "utf-16-be"
    return None


class EncodingError(DataError):
    """A file that is not text in the encoding it starts in: the whole file, not a row a reader may drop."""


#: Unicode's private-use code points: a text may hold any of them as text (a font's icons, a legacy encoding's extra
#: characters), so a reader takes the characters it marks things with from those one text does not hold (:class:`Marks`)
PRIVATE_USE = (range(0xE000, 0xF900), range(0xF0000, 0xFFFFE), range(0x100000, 0x10FFFE))
_ANY_PRIVATE_USE = re.compile("[" + "".join(f"{chr(r.start)}-{chr(r.stop - 1)}" for r in PRIVATE_USE) + "]")
#: candidates tried one scan each before one census of every private-use character a text holds
_SCANS_BEFORE_CENSUS = 4
#: what Python's "surrogateescape" decoding makes of a byte 0x80-0xFF that is not UTF-8 (never valid text itself)
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def free_private_use(text: str, size: int = 1, avoid: tuple[range, ...] = ()) -> int | None:
    """The first of ``size`` consecutive private-use code points (the run aligned to ``size``) of which ``text``
    holds none and ``avoid`` none, or ``None`` when every run is taken (only a file made for it holds characters of
    all 2,000-odd runs of 128). Usually the first candidate is free: one scan at C speed (for one character, none
    at all in a text of one byte a character, which cannot hold one); past a few taken ones, one census of the
    text's private-use characters, never a scan per candidate."""
    def runs():
        for block in PRIVATE_USE:
            for start in range(block.start, block.stop - size + 1, size):
                if not any(start < a.stop and a.start < start + size for a in avoid):
                    yield start

    def held(start: int) -> bool:
        if size == 1:
            return chr(start) in text
        return re.search(f"[{chr(start)}-{chr(start + size - 1)}]", text) is not None

    candidates = runs()
    for _, start in zip(range(_SCANS_BEFORE_CENSUS), candidates):
        if not held(start):
            return start
    taken = {ord(m.group()) // size for m in _ANY_PRIVATE_USE.finditer(text)}
    return next((start for start in candidates if start // size not in taken), None)


@dataclass
class Marks:
    """The characters one reading of one text marks things with, each a private-use character the text does not
    hold (:func:`free_private_use`), so no cell of a valid file is ever read as a mark:

    - ``bad_byte_base``: a byte 0x80-0xFF that is not UTF-8 is ``chr(bad_byte_base + byte - 0x80)``
      (:func:`decode_text` with ``mark_bad_bytes``; ``None``: no byte was marked);
    - ``stray_cr``: a carriage return that ends no line (:func:`newline_ends`), so its row is reported whole;
    - ``long_line``: a line longer than :data:`MAX_LINE_CHARS` comes as this character and its length
      (:func:`bounded_lines`), so its row is reported and never split.

    The last two are chosen when first needed (``None`` before)."""

    bad_byte_base: int | None = None
    stray_cr: str | None = None
    long_line: str | None = None

    def _taken(self) -> tuple[range, ...]:
        runs = [range(ord(c), ord(c) + 1) for c in (self.stray_cr, self.long_line) if c]
        return tuple(runs) + ((range(self.bad_byte_base, self.bad_byte_base + 128),) if self.bad_byte_base else ())

    def free_character(self, text: str, path: str | Path, what: str) -> str:
        """A private-use character neither ``text`` nor another mark holds, for marking ``what``."""
        code = free_private_use(text, 1, self._taken())
        if code is None:
            raise DataError(f"holds private-use characters of every kind tpar could mark {what} with; save the file "
                            "without them", file=path)
        return chr(code)

    @functools.cached_property
    def _bad_byte(self) -> re.Pattern:
        base = self.bad_byte_base or 0
        return re.compile(f"[{chr(base)}-{chr(base + 127)}]")

    def bad_byte_problem(self, cells: list[str]) -> str | None:
        """"not UTF-8 text (invalid byte 0xff)" for the first byte :func:`decode_text` marked in a row's ``cells``,
        else ``None``."""
        if self.bad_byte_base is None:
            return None
        m = next((m for m in map(self._bad_byte.search, cells) if m), None)
        return None if m is None else f"not UTF-8 text (invalid byte 0x{ord(m.group()) - self.bad_byte_base + 0x80:02x})"

    def bad_bytes_shown(self, text: str, shown: str = "\ufffd") -> str:
        """``text`` with each marked byte as ``shown`` (U+FFFD, the replacement character)."""
        return text if self.bad_byte_base is None else self._bad_byte.sub(shown, text)

    def long_line_length(self, cell: str) -> int | None:
        """The length of the line a :attr:`long_line` cell stands for, or ``None`` for any other cell."""
        mark = self.long_line
        return int(cell[1:]) if mark and cell.startswith(mark) and cell[1:].isdigit() else None

    def holds_stray_cr(self, cells: list[str]) -> bool:
        return self.stray_cr is not None and any(self.stray_cr in c for c in cells)


class MarkedText(str):
    """Text :func:`decode_text` decoded with some bytes that are not UTF-8 marked: its :attr:`marks` say with
    which characters (:attr:`Marks.bad_byte_base`). Two files with such bytes can give texts equal as strings with
    their marks in other places (a mark is a character its own file does not hold, which another file may): a cache
    keyed on the text keys on the marks too."""

    marks: Marks

    def __new__(cls, text: str, marks: Marks) -> "MarkedText":
        self = super().__new__(cls, text)
        self.marks = marks
        return self


def marks_of(text: str) -> Marks:
    """A fresh :class:`Marks` for reading ``text``: the bad-byte marks of a :class:`MarkedText` kept."""
    return Marks(bad_byte_base=text.marks.bad_byte_base) if isinstance(text, MarkedText) else Marks()


def _marked_decoding(raw: bytes, path: str | Path) -> MarkedText:
    """UTF-8 ``raw`` with each byte that is not UTF-8 marked by a private-use character the rest of the text does
    not hold (Python's own surrogate escapes cannot be encoded again, and a page's cache hashes the text it reads)."""
    escaped = raw.decode("utf-8", errors="surrogateescape").lstrip(BOM)
    base = free_private_use(escaped, 128)
    if base is None:
        raise EncodingError("is not UTF-8 text and holds private-use characters of every kind tpar could mark its "
                            "bad bytes with; save the file as UTF-8", file=path)
    text = _ESCAPED_BYTE.sub(lambda m: chr(base + ord(m.group()) - 0xDC80), escaped)
    return MarkedText(text, Marks(bad_byte_base=base))


#: files that are not text, told by their first bytes, with what to do instead (never decoded as rows of bad bytes)
BINARY_KINDS = (
    (b"PK\x03\x04", "a zip archive", "a .tpar checkpoint is given with --checkpoint (or chosen on Data and model), "
                                     "an .xlsx workbook saved as CSV, a .zip unpacked first"),
    (b"\x1f\x8b", "gzip-compressed", "unpack it first (gunzip)"),
    (b"\xd0\xcf\x11\xe0", "an Office document", "save a workbook as CSV"),
    (b"%PDF-", "a PDF document", "export its table as CSV"),
    (b"SQLite format 3\x00", "an SQLite database", "export the table as CSV"),
    (b"PAR1", "a Parquet file", "export the table as CSV"),
)


def decode_text(raw: bytes, path: str | Path, *, mark_bad_bytes: bool = False) -> str:
    """The text of a file's bytes without its BOM: UTF-8, or UTF-16 when it starts with a UTF-16 BOM (or looks
    like BOM-less UTF-16); a UTF-32 BOM is named (not taken for UTF-16's, its prefix). Anything else raises
    :class:`DataError` naming ``path`` and the row of the first bad byte -- unless ``mark_bad_bytes``: then a byte
    that is not UTF-8 is kept as its mark in a :class:`MarkedText`, for a reader that drops the rows
    holding one (:meth:`Marks.bad_byte_problem`). Text that starts as UTF-16 and breaks off raises :class:`EncodingError` either way."""
    for magic, kind, instead in BINARY_KINDS:
        if raw.startswith(magic):
            raise EncodingError(f"is {kind} (its first bytes say so), not a text table of facts: {instead}", file=path)
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise EncodingError("is UTF-32 text (its first bytes say so), which tpar does not read; save the file as "
                            "UTF-8", file=path)
    encoding = "utf-8"
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"  # the BOM says which byte order
    elif not raw.startswith(codecs.BOM_UTF8):
        encoding = _utf16_without_bom(raw) or "utf-8"
    try:
        return raw.decode(encoding).lstrip(BOM)
    except UnicodeDecodeError as e:
        if mark_bad_bytes and encoding == "utf-8":
            return _marked_decoding(raw, path)
        if encoding != "utf-8":
            text = raw[: e.start - e.start % 2].decode(encoding, errors="replace")
            raise EncodingError(f"starts as UTF-16 text but byte {e.start} is not UTF-16 ({e.reason}); save the file "
                                "as UTF-8", file=path, row=text.count("\n") + 1) from None
        row = raw[: e.start].count(b"\n") + 1
        raise DataError(f"not UTF-8 text (invalid byte 0x{raw[e.start]:02x}); save the file as UTF-8",
                        file=path, row=row) from None


#: the largest data file read (a CSV/TSV of facts, a benchmark split): reading costs several times its size
MAX_TEXT_BYTES = 1024 * 2 ** 20
#: the largest small file read (a configuration, a rules JSON, a relation map, a recipe)
MAX_SMALL_BYTES = 64 * 2 ** 20


def link_problem(p: Path) -> str | None:
    """What a symbolic link that leads nowhere is ("is a loop of symbolic links", "is a symbolic link to nothing
    (its target is missing)"), ``None`` for anything else (a plain missing path, a link that resolves)."""
    if not p.is_symlink():
        return None
    try:
        p.resolve(strict=True)
    except FileNotFoundError:
        return "is a symbolic link to nothing (its target is missing)"
    except (RuntimeError, OSError) as e:  # Python < 3.13 says a loop with RuntimeError, later ones with ELOOP
        return "is a loop of symbolic links" if isinstance(e, RuntimeError) or e.errno == errno.ELOOP else None
    return None


def check_regular(path: str | Path, what: str = "file") -> Path:
    """``path`` when it names a regular file (a symlink to one included), else a :class:`DataError` saying what it
    is: missing, a folder, or a device or pipe (``/dev/zero`` never ends, a FIFO blocks its reader forever)."""
    import stat

    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except OSError as e:
        link = link_problem(p)
        if link:
            raise DataError(f"{link}, not a {what}", file=p) from None
        if isinstance(e, FileNotFoundError):
            raise DataError(f"no such {what}", file=p) from None
        raise DataError(f"cannot read the {what} ({e.strerror or type(e).__name__})", file=p) from None
    if stat.S_ISDIR(mode):
        raise DataError(f"is a folder, not a {what}", file=p)
    if not stat.S_ISREG(mode):
        kind = "a pipe" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
            "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
        raise DataError(f"is {kind}, not a regular {what}", file=p)
    return p


def read_bytes(path: str | Path, max_bytes: int = MAX_TEXT_BYTES, what: str = "file") -> bytes:
    """The bytes of the regular file ``path`` (:func:`check_regular`), at most ``max_bytes`` of them: a longer file
    (also one that grows while read) raises :class:`DataError` naming its size and the limit, before it is held."""
    p = check_regular(path, what)
    try:
        with open(p, "rb") as f:  # a buffer of the file's size (not of the limit), grown only if the file grows
            raw = f.read(min(os.fstat(f.fileno()).st_size, max_bytes) + 1)
            while len(raw) <= max_bytes:  # a file that grew while read: on to the limit
                more = f.read(min(max_bytes + 1 - len(raw), 2 ** 20))  # read() allocates what it is asked for
                if not more:
                    break
                raw += more
    except OSError as e:
        raise DataError(f"cannot read the {what} ({e.strerror or type(e).__name__})", file=p) from None
    if len(raw) > max_bytes:
        size = p.stat().st_size
        raise DataError(f"the {what} is {max(size, len(raw)) / 2 ** 20:,.0f} MB or more, larger than tpar reads "
                        f"({max_bytes / 2 ** 20:,.0f} MB)", file=p)
    return raw


def read_text(path: Path, max_bytes: int = MAX_TEXT_BYTES, what: str = "file", *, mark_bad_bytes: bool = False) -> str:
    """A text file (UTF-8 or UTF-16, :func:`decode_text`) without its BOM, read by :func:`read_bytes` (a regular
    file of at most ``max_bytes``); unreadable or undecodable files raise :class:`DataError` naming the row of the
    first bad byte (``mark_bad_bytes``: a byte that is not UTF-8 is marked instead, :func:`decode_text`)."""
    return decode_text(read_bytes(path, max_bytes, what), path, mark_bad_bytes=mark_bad_bytes)


def memory_named(read: Callable[..., T]) -> Callable[..., T]:
    """``read(path, ...)`` whose running out of memory (a file too large for this machine, though under the
    byte and row limits) is a :class:`DataError` naming ``path``, not an internal error."""
    @functools.wraps(read)
    def reading(path, *args, **kwargs):
        try:
            return read(path, *args, **kwargs)
        except MemoryError:
            raise DataError("this machine ran out of memory reading it: free some memory, or split the file",
                            file=path) from None
    return reading


def read_small_json(path: str | Path, what: str = "JSON file") -> object:
    """A small JSON file (a configuration, rules, a recipe) parsed by :func:`strict_json`: a regular file of at
    most :data:`MAX_SMALL_BYTES`; bad JSON, nesting too deep to parse, a key given twice in one object or numbers
    beyond float raise :class:`DataError` naming the file (and the row of a syntax error)."""
    import json

    text = read_text(Path(path), MAX_SMALL_BYTES, what)
    try:
        return strict_json(text)
    except json.JSONDecodeError as e:
        raise DataError(f"not valid JSON ({e.msg}, column {e.colno})", file=path, row=e.lineno) from None
    except RecursionError:
        raise DataError("JSON nested too deeply to read", file=path) from None
    except ValueError as e:  # NaN/Infinity, a huge number, a key given twice
        raise DataError(f"not valid JSON ({str(e)[:200]})", file=path) from None


#: the most digits a JSON integer may have (Python refuses to convert more than 4300 by default, with a hint about
#: ``sys.set_int_max_str_digits`` that means nothing to a user; no count or id needs more than 19)
MAX_INT_DIGITS = 100


def strict_json(text: str, *, numbers_checked_later: bool = False) -> object:
    """``text`` parsed as JSON that means one thing: a key given twice in one object (where ``json`` keeps the
    last silently) and integers of more than :data:`MAX_INT_DIGITS` digits raise ``ValueError`` naming the value,
    as do NaN/Infinity and floats beyond range -- unless ``numbers_checked_later``: a reader that checks every
    number by its field (a checkpoint's metadata, a resume file's position, whose best MRR before any epoch is
    -Infinity) takes them and names the field itself; integers are then bounded only below Python's own digit
    limit, whose message is a hint about ``sys.set_int_max_str_digits``. Syntax errors raise
    ``json.JSONDecodeError``, deep nesting ``RecursionError``."""
    import json

    if numbers_checked_later:
        return json.loads(text, parse_int=_int_under_pythons_limit, object_pairs_hook=_unique_keys)
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_short_int,
                      object_pairs_hook=_unique_keys)


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    import math

    if len(text) > 4 * MAX_INT_DIGITS:
        raise ValueError(f"a number of {len(text):,} characters ({text[:20]}...)")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is beyond any float")
    return value


def _short_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {digits:,} digits ({text[:20]}...), more than any count or id needs")
    return int(text)


def _int_under_pythons_limit(text: str) -> int:
    if len(text) > 4000:
        raise ValueError(f"an integer of {len(text.lstrip('-')):,} digits ({text[:20]}...)")
    return int(text)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key[:80]!r} is given twice in one object (which one is meant?)")
        out[key] = value
    return out


_CRS_BEFORE_LF = re.compile(r"\r+\n")
_CRS_AT_END = re.compile(r"\r+\Z")


def newline_ends(text: str, stray: str = "\r") -> str:
    """``text`` with every line ending a newline: LF, Windows' CR LF (CR CR LF too: Python's csv writer on Windows),
    and classic Mac's lone CR in a text whose lines mostly end so. Any other lone CR ends no line (a last line ended
    by CR ends there): it becomes ``stray``, so the row numbers of every later line stay the file's own."""
    if "\r" not in text:
        return text
    text = _CRS_BEFORE_LF.sub("\n", text)
    if text.count("\r") > text.count("\n"):  # mostly CR-ended lines (perhaps with a stray LF): CR breaks lines
        return text.replace("\r", "\n")
    text = _CRS_AT_END.sub("\n", text)
    return text if stray == "\r" else text.replace("\r", stray)


#: the longest line read as a row (a header of many columns fits; a longer line is one bad row, reported by its
#: length and never split into cells: a 500 MB line of commas would be a list of 250 million of them)
MAX_LINE_CHARS = 1_000_000
#: the most rows one data file may have: reading holds a few hundred bytes of Python objects per row, whatever
#: its length (a file of 8-byte rows cost ~40 times its size), so the rows are bounded, not only the bytes
MAX_ROWS = 4_000_000
_EMPTY_LINE = re.compile("(?m)^\n")


def _empty_lines(text: str) -> int:
    """How many lines of ``text`` are empty (asked only of a text of more lines than a file may have rows)."""
    return sum(1 for _ in _EMPTY_LINE.finditer(text))


def bounded_lines(text: str, path: str | Path, marks: Marks, *, keep_ends: bool = True,
                  header: bool = True) -> Iterator[str]:
    """The lines of ``text`` (newline-ended, :func:`newline_ends`) one at a time, no second copy of the text held:
    a line longer than :data:`MAX_LINE_CHARS` comes as :attr:`Marks.long_line` (chosen then) and its length, so its row is reported
    and never split; more than :data:`MAX_ROWS` rows (beyond a header) raise :class:`DataError` before they are
    held (``header``: the first line is no row). ``keep_ends``: each line with its newline (as Python's csv reader
    takes them)."""
    lines = text.count("\n", 0, len(text) - 1) + (not header)  # counted at C speed before a row is read
    if lines > MAX_ROWS and lines - _empty_lines(text) > MAX_ROWS:  # an empty line is no row: it holds nothing
        raise DataError(f"more than {MAX_ROWS:,} rows, more than tpar reads from one file (reading holds every row in "
                        "memory); split it, or keep the rows a question needs", file=path)
    start, size = 0, len(text)
    while start < size:
        end = text.find("\n", start)
        end = size if end < 0 else end + 1
        ended = text[end - 1:end] == "\n"
        length = end - start - ended  # the line's own characters, its newline not counted
        stop = end if keep_ends or not ended else end - 1
        if length <= MAX_LINE_CHARS:
            yield text[start:stop]
        else:
            if marks.long_line is None:
                marks.long_line = marks.free_character(text, path, "a line too long to read")
            yield f"{marks.long_line}{length}" + ("\n" if keep_ends else "")
        start = end


def read_lines(path: Path) -> Iterator[str]:
    """Lines of a text file without BOM and line ends (:func:`newline_ends`), one at a time; empty lines kept (for
    row numbers). A line longer than :data:`MAX_LINE_CHARS` raises :class:`DataError` naming its row, as do more
    than :data:`MAX_ROWS` lines. A lone CR inside a line stays in it: a name loses it as a control character, a
    number's strip() drops it."""
    marks = Marks()
    for row, line in enumerate(bounded_lines(newline_ends(read_text(path)), path, marks, keep_ends=False,
                                             header=False), start=1):
        length = marks.long_line_length(line)
        if length is not None:
            raise DataError(f"the line is {length:,} characters long (at most {MAX_LINE_CHARS:,} are read)",
                            file=path, row=row)
        yield line
