"""The time-aware filter: the other true answers of a query's (subject, relation, time), over
train ∪ valid ∪ test and their inverses, are not competitors when the answer is ranked."""

from __future__ import annotations

import numpy as np
import torch

from tpar.graph.index import TemporalGraphIndex
from tpar.graph.queries import QueryBatch


class TimeAwareFilter:
    """All true answers of (subject, relation, time) over the given facts and their inverses."""

    def __init__(self, facts: np.ndarray, num_entities: int, num_relations: int) -> None:
        # each true answer once: a fact given twice would be subtracted twice from a rank (filtered_ranks counts pairs)
        f = torch.unique(torch.as_tensor(np.asarray(facts, dtype=np.int64).reshape(-1, 4)), dim=0)
        s, r, o, t = f.unbind(1)
        self.num_relations = num_relations
        self._times = torch.unique(t)
        subj = torch.cat([s, o])
        rel = torch.cat([r, r + num_relations])
        ans = torch.cat([o, s])
        key = self._key(subj, rel, torch.searchsorted(self._times, torch.cat([t, t])))
        order = torch.argsort(key)
        self._keys, self._answers = key[order], ans[order]

    def _key(self, subj: torch.Tensor, rel: torch.Tensor, tpos: torch.Tensor) -> torch.Tensor:
        return (subj * (2 * self.num_relations) + rel) * (len(self._times) + 1) + tpos

    def pairs(self, batch: QueryBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """(rows, entities) to filter: every true answer of each query's (s, r, t) except its own answer."""
        tpos = torch.searchsorted(self._times, batch.time)
        known = (tpos < len(self._times)) & (self._times[tpos.clamp(max=max(len(self._times) - 1, 0))] == batch.time)
        tpos = torch.where(known, tpos, torch.full_like(tpos, len(self._times)))  # unknown time: no match
        key = self._key(batch.subject, batch.relation, tpos)
        lo = torch.searchsorted(self._keys, key, side="left")
        hi = torch.searchsorted(self._keys, key, side="right")
        idx, row = TemporalGraphIndex.expand(lo, hi)
        ent = self._answers[idx]
        keep = ent != batch.answer[row]
        return row[keep], ent[keep]
