"""Reading a user's or a benchmark's text file: UTF-8, without a BOM, with the row of the first bad byte
named when it is not UTF-8."""

from __future__ import annotations

from pathlib import Path

from tpar.errors import DataError

BOM = "\ufeff"


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


def read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 text file without BOM and line ends; empty lines kept (for row numbers)."""
    return read_text(path).replace("\r\n", "\n").replace("\r", "\n").split("\n")
