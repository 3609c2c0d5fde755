"""Vocabularies: dense integer ids <-> names, for entities and relations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence


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

    @classmethod
    def from_names(cls, names: Iterable[str]) -> "Vocabulary":
        return cls(tuple(names))

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
