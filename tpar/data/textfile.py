"""Reading a user's or a benchmark's text file: UTF-8 (with or without a BOM) or UTF-16 (as spreadsheets
export "Unicode text"), with the row of the first bad byte named when it is neither."""

from __future__ import annotations

import codecs
import os
import re
from pathlib import Path

from tpar.errors import DataError

BOM = "\ufeff"


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


def decode_text(raw: bytes, path: str | Path) -> str:
    """The text of a file's bytes without its BOM: UTF-8, or UTF-16 when it starts with a UTF-16 BOM (or looks
    like BOM-less UTF-16); anything else raises :class:`DataError` naming ``path`` and the row of the first
    bad byte."""
    encoding = "utf-8"
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"  # the BOM says which byte order
    elif not raw.startswith(codecs.BOM_UTF8):
        encoding = _utf16_without_bom(raw) or "utf-8"
    try:
        return raw.decode(encoding).lstrip(BOM)
    except UnicodeDecodeError as e:
        if encoding != "utf-8":
            text = raw[: e.start - e.start % 2].decode(encoding, errors="replace")
            raise DataError(f"starts as UTF-16 text but byte {e.start} is not UTF-16 ({e.reason}); save the file "
                            "as UTF-8", file=path, row=text.count("\n") + 1) from None
        row = raw[: e.start].count(b"\n") + 1
        raise DataError(f"not UTF-8 text (invalid byte 0x{raw[e.start]:02x}); save the file as UTF-8",
                        file=path, row=row) from None


#: the largest data file read (a CSV/TSV of facts, a benchmark split): reading costs several times its size
MAX_TEXT_BYTES = 1024 * 2 ** 20
#: the largest small file read (a configuration, a rules JSON, a relation map, a recipe)
MAX_SMALL_BYTES = 64 * 2 ** 20


def check_regular(path: str | Path, what: str = "file") -> Path:
    """``path`` when it names a regular file (a symlink to one included), else a :class:`DataError` saying what it
    is: missing, a folder, or a device or pipe (``/dev/zero`` never ends, a FIFO blocks its reader forever)."""
    import stat

    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        raise DataError(f"no such {what}", file=p) from None
    except OSError as e:
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
        with open(p, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        raise DataError(f"cannot read the {what} ({e.strerror or type(e).__name__})", file=p) from None
    if len(raw) > max_bytes:
        size = p.stat().st_size
        raise DataError(f"the {what} is {max(size, len(raw)) / 2 ** 20:,.0f} MB or more, larger than tpar reads "
                        f"({max_bytes / 2 ** 20:,.0f} MB)", file=p)
    return raw


def read_text(path: Path, max_bytes: int = MAX_TEXT_BYTES, what: str = "file") -> str:
    """A text file (UTF-8 or UTF-16, :func:`decode_text`) without its BOM, read by :func:`read_bytes` (a regular
    file of at most ``max_bytes``); unreadable or undecodable files raise :class:`DataError` naming the row of the
    first bad byte."""
    return decode_text(read_bytes(path, max_bytes, what), path)


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


def read_lines(path: Path) -> list[str]:
    """Lines of a text file without BOM and line ends (:func:`newline_ends`); empty lines kept (for row numbers). A
    lone CR inside a line stays in it: a name loses it as a control character, a number's strip() drops it."""
    return newline_ends(read_text(path)).split("\n")
