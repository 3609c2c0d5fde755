"""The temporal graph index: a CSR over source entities, each node's edges sorted by time.

Every fact (s, r, o, t) is stored twice: as the edge s -r-> o and as the inverse edge
o -(r+R)-> s. Inverse relations are added here and never stored in files. Because each node's
edges are sorted by time, "edges leaving node v with t < t_q" is the slice
``indptr[v] : indptr[v] + (number of v's edges before t_q)``, found by one binary search over a
combined (node, time) key -- vectorised over any number of (node, t_q) pairs.
"""

from __future__ import annotations

import numpy as np
import torch

#: (node, time) keys are node · span + time: entities × time steps must stay below this
MAX_KEY = 2 ** 62


class TemporalGraphIndex:
    """CSR index of facts plus their inverses.

    Attributes (all int64 tensors of shape (2N,) unless noted, ordered by (src, time, rel, dst)):
        src, rel, dst, time: the edges; ``rel`` in [0, 2R).
        fact: row of the edge's fact in the ``facts`` array given to the constructor.
        indptr: (E + 1,) node v's edges are ``indptr[v]:indptr[v+1]``.
        distinct_times: (D,) the sorted distinct times; time_rank: (2N,) each edge's time's position there.
    """

    def __init__(self, facts: np.ndarray, num_entities: int, num_relations: int) -> None:
        f = torch.as_tensor(np.asarray(facts, dtype=np.int64).reshape(-1, 4))
        self.num_entities = int(num_entities)
        self.num_relations = int(num_relations)
        s, r, o, t = f.unbind(1)
        n = f.shape[0]
        src = torch.cat([s, o])
        rel = torch.cat([r, r + num_relations])
        dst = torch.cat([o, s])
        time = torch.cat([t, t])
        fact = torch.cat([torch.arange(n), torch.arange(n)])
        self.time_min = int(time.min()) if n else 0
        self.time_span = (int(time.max()) - self.time_min + 2) if n else 2
        if max(1, self.num_entities) * self.time_span >= MAX_KEY:  # the (node, time) key must stay exact in int64
            from tpar.errors import DataError

            raise DataError(f"the facts' times span {self.time_span - 2:,} time steps ({self.time_min:,} to "
                            f"{int(time.max()):,}) over {self.num_entities:,} entities: more than this index can "
                            "order (entities × steps below 2^62); use a coarser time unit (days, not seconds)")
        order = self._edge_order(src, rel, dst, time - self.time_min, self.time_span, num_entities, num_relations)
        self.src, self.rel, self.dst, self.time, self.fact = (x[order].contiguous() for x in (src, rel, dst, time, fact))
        counts = torch.bincount(self.src, minlength=self.num_entities) if n else torch.zeros(self.num_entities, dtype=torch.int64)
        self.indptr = torch.zeros(self.num_entities + 1, dtype=torch.int64)
        self.indptr[1:] = torch.cumsum(counts, 0)
        self._key = self.src * self.time_span + (self.time - self.time_min)  # sorted ascending
        # the distinct link times and each edge's rank among them (time encodings per distinct time)
        self.distinct_times, self.time_rank = torch.unique(self.time, return_inverse=True)
        self._repeat_bounds: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    @staticmethod
    def _edge_order(src, rel, dst, dt, span: int, num_entities: int, num_relations: int) -> torch.Tensor:
        """The permutation that sorts the edges by (src, time, rel, dst), equal edges in their given order: one
        stable sort of a combined int64 key where it fits (``dt`` = time − the first time, in [0, ``span``)),
        else successive stable sorts, last key first."""
        E, R2 = max(1, int(num_entities)), max(1, 2 * int(num_relations))
        if E * E * R2 * max(1, span) < 2 ** 62:
            return torch.sort(((src * span + dt) * R2 + rel) * E + dst, stable=True).indices
        order = torch.arange(src.shape[0])
        for key in (dst, rel, dt, src):
            order = order[torch.sort(key[order], stable=True).indices]
        return order

    #: no m-th later (earlier) repeat: a time after (before) every time a question can have
    NO_LATER_REPEAT = 2 ** 62
    NO_EARLIER_REPEAT = -(2 ** 62)

    def repeat_bounds(self, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """For every edge, the time of the m-th *later* and the m-th *earlier* edge with the same
        (src, rel, dst) -- the same fact repeated -- as two (2N,) int64 tensors (``NO_LATER_REPEAT`` /
        ``NO_EARLIER_REPEAT`` where the fact repeats fewer than m times on that side).

        Edge e is then among the m most recent repeats before t_q iff ``next[e] >= t_q`` and among the m
        earliest after t_q iff ``prev[e] <= t_q``: a per-edge test with no per-question sort
        (:class:`tpar.graph.background.LinkLimits`' ``repeats``). Computed once per m and kept."""
        if m < 1:
            raise ValueError("m must be >= 1")
        if m not in self._repeat_bounds:
            n = self.num_edges
            # group edges by (src, rel, dst), time order kept inside a group: edges are sorted by
            # (src, time, ...), so a stable sort by (rel, dst) then by src keeps time order per group
            order = torch.sort(self.rel * self.num_entities + self.dst, stable=True).indices
            order = order[torch.sort(self.src.index_select(0, order), stable=True).indices]
            group = (self.src * (2 * self.num_relations) + self.rel).index_select(0, order) * self.num_entities \
                + self.dst.index_select(0, order)
            t = self.time.index_select(0, order)
            nxt = torch.full((n,), self.NO_LATER_REPEAT, dtype=torch.int64, device=t.device)
            prv = torch.full((n,), self.NO_EARLIER_REPEAT, dtype=torch.int64, device=t.device)
            if n > m:
                same = group[m:] == group[:-m]  # position i and i + m hold the same fact
                nxt[:-m] = torch.where(same, t[m:], nxt[:-m])
                prv[m:] = torch.where(same, t[:-m], prv[m:])
            nxt_e, prv_e = torch.empty_like(nxt), torch.empty_like(prv)
            nxt_e[order], prv_e[order] = nxt, prv
            self._repeat_bounds[m] = (nxt_e, prv_e)
        return self._repeat_bounds[m]

    def to(self, device: str | torch.device) -> "TemporalGraphIndex":
        """A copy whose tensors live on ``device`` (this one if already there)."""
        device = torch.device(device)
        if self.src.device == device:
            return self
        other = object.__new__(TemporalGraphIndex)
        other.__dict__.update({k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in self.__dict__.items()})
        other._repeat_bounds = {m: (a.to(device), b.to(device)) for m, (a, b) in self._repeat_bounds.items()}
        return other

    @property
    def num_edges(self) -> int:
        return int(self.src.shape[0])

    def degree(self, nodes: torch.Tensor) -> torch.Tensor:
        return self.indptr[nodes + 1] - self.indptr[nodes]

    def slices(self, nodes: torch.Tensor, before: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Edge ranges ``[start, end)`` leaving ``nodes`` (P,); with ``before`` (P,), only edges with
        time < before[i]. Returns two (P,) int64 tensors."""
        start = self.indptr[nodes]
        if before is None:
            return start, self.indptr[nodes + 1]
        cut = (before - self.time_min).clamp(0, self.time_span - 1)
        end = torch.searchsorted(self._key, nodes * self.time_span + cut)
        return start, torch.maximum(end, start)

    @staticmethod
    def expand(start: torch.Tensor, end: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Flatten ranges into (edge ids (M,), owner (M,)) where owner[j] is the range that edge j
        came from. No Python loop."""
        lengths = end - start
        owner = torch.repeat_interleave(torch.arange(start.shape[0], device=start.device), lengths)
        if owner.numel() == 0:
            return owner, owner
        offsets = torch.cumsum(lengths, 0) - lengths  # start of each range in the flat list
        edge = torch.arange(owner.shape[0], device=start.device) + (start - offsets).index_select(0, owner)
        return edge, owner

    def find(self, src: torch.Tensor, rel: torch.Tensor, dst: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
        """Whether each edge (src, rel, dst, time) is in the index: (P,) bool."""
        _, start = self.slices(src, time)      # first edge of src with time >= t
        _, end = self.slices(src, time + 1)    # one past src's last edge with time t
        e, owner = self.expand(start, end)
        hit = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        if e.numel():
            m = (self.rel[e] == rel[owner]) & (self.dst[e] == dst[owner])
            hit[owner[m]] = True
        return hit
