"""Reading a user's or a benchmark's text file: UTF-8 (with or without a BOM) or UTF-16 (as spreadsheets
export "Unicode text"), with the row of the first bad byte named when it is neither."""

from __future__ import annotations

import codecs
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


def read_text(path: Path) -> str:
    """A text file (UTF-8 or UTF-16, :func:`decode_text`) without its BOM; unreadable or undecodable files raise
    :class:`DataError` naming the row of the first bad byte."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DataError(f"cannot read file ({e.strerror})", file=path) from None
    return decode_text(raw, path)


def read_lines(path: Path) -> list[str]:
    """Lines of a text file without BOM and line ends; empty lines kept (for row numbers)."""
    return read_text(path).replace("\r\n", "\n").replace("\r", "\n").split("\n")
