"""Vocabularies: dense integer ids <-> names, for entities and relations."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Sequence

from tpar.errors import DataError, quoted


#: up to this many names, an unknown one with no close match is answered with the list of them all
FEW_NAMES = 30


@dataclass(frozen=True)
class Vocabulary:
    """An ordered list of unique names; the position of a name is its id."""

    names: tuple[str, ...]
    _ids: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ids: dict[str, int] = {}
        for i, name in enumerate(self.names):
            if name in ids:
                raise ValueError(f"duplicate name in vocabulary: {name!r}")
            ids[name] = i
        object.__setattr__(self, "_ids", ids)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self._ids

    def id(self, name: str) -> int:
        """The id of ``name``; ``KeyError`` if unknown."""
        return self._ids[name]

    def get(self, name: str, default: int | None = None) -> int | None:
        return self._ids.get(name, default)

    def name(self, idx: int) -> str:
        return self.names[idx]

    def ids(self, names: Sequence[str]) -> list[int]:
        return [self._ids[n] for n in names]

    def resolve(self, name: str, kind: str = "name") -> str:
        """The vocabulary's own spelling of ``name``: itself, or the one name equal to it ignoring case,
        surrounding space and the difference between runs of spaces and underscores ("make statement"
        finds ICEWS's "Make_statement"), after the normalisation the data's names had (Unicode NFC, invisible and
        direction characters removed); otherwise a :class:`DataError` suggesting the closest names."""
        if name in self._ids:
            return name
        from tpar.data.tables import clean_name  # here: tables imports this module's users

        kept = clean_name(str(name))  # as the data's names were read: NFC, invisible characters removed ('Zoë'
        if kept in self._ids:         # typed as 'e' + a combining diaeresis, as macOS input gives it)
            return kept
        asked, name = name, kept or name  # errors quote what was asked for
        key = _loose(name)
        same = [n for n in self.names if _loose(n) == key]
        if len(same) == 1:
            return same[0]
        if len(same) > 1:  # known, loosely, under several spellings: say so, never "unknown"
            raise DataError(f"{kind} {quoted(asked)} is ambiguous: the data has {', '.join(repr(n) for n in same[:5])}"
                            + (f" and {len(same) - 5} more" if len(same) > 5 else "") + "; give the exact spelling")
        close = same or difflib.get_close_matches(str(name), self.names, n=3, cutoff=0.6)
        if not close and key:
            close = [n for n in self.names if key in _loose(n)][:3]
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        if not close and 0 < len(self.names) <= FEW_NAMES and sum(map(len, self.names)) <= 30 * 60:
            # nothing close, and few to choose from: all of them, whole (a cut name could not be copied)
            kinds = kind[:-1] + "ies" if kind.endswith("y") else kind + "s"
            names = ", ".join(repr(n) for n in sorted(self.names, key=str.casefold))
            hint = (f"; the data's only {kind} is {names}" if len(self.names) == 1 else
                    f"; the data's {kinds} are {names}")
        raise DataError(f"unknown {kind} {quoted(asked)}{hint}")


def _loose(name: object) -> str:
    """``name`` compared loosely: case-folded, stripped, runs of spaces/underscores as one space."""
    return re.sub(r"[\s_]+", " ", str(name)).strip().casefold()
