"""Names a user gives to things saved on disk (data sets, models): they become file and folder names,
so only a safe alphabet is allowed, matched over the whole name (a trailing newline never passes)."""

from __future__ import annotations

import re
import unicodedata

from tpar.errors import DataError

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
NAME_RULE = ("use ASCII letters (a-z, A-Z, no accents), digits, '-', '_' or '.' (1 to 64, starting with a letter "
             "or digit)")


def is_valid_name(name: str) -> bool:
    """Whether ``name`` may become a file or folder name: the whole of it matches :data:`NAME_RE`."""
    return isinstance(name, str) and NAME_RE.fullmatch(name) is not None


def check_name(kind: str, name: str) -> str:
    """``name`` if valid, else a :class:`DataError` saying what a ``kind`` name ("model", "data set") may hold."""
    if not is_valid_name(name):
        raise DataError(f"{kind} name {name!r}: {NAME_RULE}")
    return name


def suggest_name(text: str, fallback: str = "upload") -> str:
    """A valid name made from ``text`` (a file's stem, say): accents dropped ("données" -> "donnees"), every other
    character outside the alphabet a '-', runs of them one, cut to 64 and starting with a letter or digit;
    ``fallback`` when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", ascii_text)
    name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:64].rstrip("-.")
    return name if is_valid_name(name) else fallback

