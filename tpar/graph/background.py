"""Backgrounds: which temporal links a query may see -- the leakage rules in one place.

* extrapolation: every known link with t < t_q (train, valid and test facts: single-step
  forecasting with ground-truth history).
* interpolation: the training links (the index is built over the training facts, or over the
  3/4 "fact" part of them while training), before or after t_q, except the query's own fact
  (s, r, o, t_q) and its inverse (o, r+R, s, t_q).

Rankers (baselines now, the TPAR model later) get links only through :meth:`Background.edges_from`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tpar.data.kg import TemporalKG
from tpar.graph.index import TemporalGraphIndex
from tpar.graph.queries import QueryBatch, Setting


@dataclass(frozen=True)
class LinkLimits:
    """Pruning of the links a node may send along (both off = every admitted link).

    * ``window`` W > 0: only links with t_q − W ≤ t (extrapolation, where t < t_q anyway) or
      |t − t_q| ≤ W (interpolation);
    * ``cap`` M > 0: at most M links per node, those nearest t_q in time: the M most recent before
      t_q (extrapolation); M // 2 before t_q and M − M // 2 at or after it (interpolation), the question's
      own fact and its inverse not counted. Links at the boundary time are cut in the index's (relation,
      entity id) order, so numbering the entities otherwise moves a few ranks (the composite audit of
      2026-11-29: 1,189 of ICEWS14 interpolation's 17,926 test ranks, its MRR 65.23495 -> 65.23761).
    * ``repeats`` m > 0: of the links that repeat one fact (s, r, o) at several times, only the m
      nearest t_q on each side: the m most recent before t_q, and (interpolation) the m earliest after
      it. Every fact that exact propagation can walk is still walked, at its most recent times, so the
      entities reached are exactly the exact propagation's; only older copies of a fact are dropped.
      A link exactly at t_q is never dropped, and the question's own fact never counts as a repeat
      (the bounds are strict), so what a question sees never depends on its answer.

    Window and cap come first; ``repeats`` then thins the links they kept (with a cap M and m = 1: the
    distinct facts among the node's M links nearest t_q, each at its most recent time there).
    Window and cap are cut straight from a node's time-sorted slice of the index, so they cost
    nothing; ``repeats`` is one comparison per link against per-link bounds computed once
    (:meth:`~tpar.graph.index.TemporalGraphIndex.repeat_bounds`). The leakage rules (t < t_q; never
    the query's own fact) hold whatever the limits.
    """

    window: int = 0
    cap: int = 0
    repeats: int = 0

    def __post_init__(self) -> None:
        if self.window < 0 or self.cap < 0 or self.repeats < 0:
            raise ValueError("window, cap and repeats must be >= 0 (0 = off)")

    @property
    def exact(self) -> bool:
        return self.window == 0 and self.cap == 0 and self.repeats == 0


NO_LIMITS = LinkLimits()


@dataclass
class Background:
    index: TemporalGraphIndex
    setting: Setting

    @classmethod
    def for_evaluation(cls, kg: TemporalKG, setting: Setting | str) -> "Background":
        """The background of valid/test queries: all facts (extrapolation, cut at t_q per query) or
        the training facts (interpolation)."""
        setting = Setting.parse(setting)
        facts = kg.all_facts() if setting is Setting.EXTRAPOLATION else kg.facts("train")
        return cls(TemporalGraphIndex(facts, kg.num_entities, kg.num_relations), setting)

    @classmethod
    def from_facts(cls, facts: np.ndarray, num_entities: int, num_relations: int, setting: Setting | str) -> "Background":
        return cls(TemporalGraphIndex(facts, num_entities, num_relations), Setting.parse(setting))

    def to(self, device: str | torch.device) -> "Background":
        return Background(self.index.to(device), self.setting)

    @property
    def num_entities(self) -> int:
        return self.index.num_entities

    @property
    def num_relations(self) -> int:
        return self.index.num_relations

    def link_ranges(self, nodes: torch.Tensor, query: torch.Tensor, batch: QueryBatch,
                    before: torch.Tensor | None = None, limits: LinkLimits = NO_LIMITS,
                    active: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The admission rule as index ranges: links leaving ``nodes[i]`` for query ``batch[query[i]]``
        are index edges ``start[i]:end[i]``, except those matching ``own`` (a (B, 4) tensor of each
        query's own fact (s, r, answer, t_q), to be skipped together with its inverse) -- ``own`` is
        ``None`` when nothing needs skipping (extrapolation: t = t_q is never in range).

        ``before`` (P,): optional extra exclusive bound on link times (extrapolation only; used for
        chronologically ordered paths). The bound t < t_q always holds. ``limits``: the pruning of
        :class:`LinkLimits`. ``active`` (P,) bool: nodes that send along links at all (the others'
        ranges are empty; top-K expansion).
        """
        t_q = batch.time.index_select(0, query)
        if self.setting is Setting.EXTRAPOLATION:
            cut = t_q if before is None else torch.minimum(t_q, before)
            start, end = self.index.slices(nodes, cut)
            own = None
            if limits.window:
                start = torch.maximum(start, self.index.slices(nodes, t_q - limits.window)[1])
            if limits.cap:
                start = torch.maximum(start, end - limits.cap)
        else:
            start, end = self.index.slices(nodes)
            own = torch.stack([batch.subject, batch.relation, batch.answer, batch.time], 1)
            if limits.window:
                start = self.index.slices(nodes, t_q - limits.window)[1]
                end = self.index.slices(nodes, t_q + limits.window + 1)[1]
            if limits.cap:
                mid = self.index.slices(nodes, t_q)[1]  # the node's first link at or after t_q
                start = torch.maximum(start, mid - limits.cap // 2)
                after = limits.cap - limits.cap // 2
                end = torch.minimum(end, mid + after + self._own_links_within(nodes, query, batch, mid, after))
        end = torch.maximum(end, start)
        if active is not None:
            end = torch.where(active, end, start)
        return start, end, own

    def _own_links_within(self, nodes: torch.Tensor, query: torch.Tensor, batch: QueryBatch, mid: torch.Tensor,
                          after: int) -> torch.Tensor:
        """(P,) how many of the links a cap lets ``nodes[i]`` send at or after t_q are its query's own fact or that
        fact's inverse (interpolation): the cap's window reaches that many links further, so that it holds ``after``
        links besides them -- the links a question sees never depend on whether its answer's fact is in the data
        (a hidden fact that took a place in the window pushed another link out of it). Own links lie at t_q, the
        first time of the window, only at the subject (the fact) and the answer (its inverse)."""
        extra = torch.zeros_like(nodes)
        at = ((nodes == batch.subject.index_select(0, query)) | (nodes == batch.answer.index_select(0, query)))
        at = at.nonzero().squeeze(1)
        if not at.numel():
            return extra
        lo = mid.index_select(0, at)
        hi = self.index.slices(nodes.index_select(0, at), batch.time.index_select(0, query.index_select(0, at)) + 1)[1]
        edges, owner = self.index.expand(lo, torch.maximum(hi, lo))  # the links at t_q
        own = self._is_own_fact(edges, query.index_select(0, at).index_select(0, owner), batch)
        edges, owner = edges[own], owner[own]
        if not edges.numel():
            return extra
        count = torch.zeros_like(lo)
        while True:  # own links are few (a fact, its inverse at a self-loop's node, their duplicates)
            reach = lo + after + count
            new = torch.zeros_like(lo).index_add_(0, owner, (edges < reach.index_select(0, owner)).long())
            if torch.equal(new, count):
                break
            count = new
        return extra.index_copy_(0, at, count)

    def edges_from(self, nodes: torch.Tensor, query: torch.Tensor, batch: QueryBatch,
                   before: torch.Tensor | None = None, limits: LinkLimits = NO_LIMITS,
                   active: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Admitted links leaving ``nodes`` for the queries ``batch[query]``, as a flat list.

        Args:
            nodes: (P,) entity ids; query: (P,) index of the query each node is expanded for.
            before, limits, active: see :meth:`link_ranges`.
        Returns:
            (edge ids (M,), owner (M,)) with owner[j] in [0, P): the (node, query) pair of link j.
        """
        start, end, own = self.link_ranges(nodes, query, batch, before, limits, active)
        edges, owner = self.index.expand(start, end)
        if own is not None and edges.numel():
            keep = ~self._is_own_fact(edges, query[owner], batch)
            edges, owner = edges[keep], owner[keep]
        if limits.repeats and edges.numel():
            keep = self.recent_repeat(edges, batch.time.index_select(0, query.index_select(0, owner)), limits.repeats)
            edges, owner = edges[keep], owner[keep]
        return edges, owner

    def recent_repeat(self, edges: torch.Tensor, t_q: torch.Tensor, m: int) -> torch.Tensor:
        """(M,) bool: link ``edges[j]`` is among the m repeats of its fact nearest ``t_q[j]`` on its side
        of t_q (see :class:`LinkLimits` ``repeats``); links at t_q are kept."""
        nxt, prv = self.index.repeat_bounds(m)
        t = self.index.time.index_select(0, edges)
        return torch.where(t < t_q, nxt.index_select(0, edges) >= t_q,
                           torch.where(t > t_q, prv.index_select(0, edges) <= t_q, torch.ones_like(t_q, dtype=torch.bool)))

    def repeat_bounds(self, limits: LinkLimits) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The per-link bounds of ``limits.repeats`` for a kernel that reads the index directly, or None."""
        return self.index.repeat_bounds(limits.repeats) if limits.repeats else None

    def _is_own_fact(self, edges: torch.Tensor, q: torch.Tensor, batch: QueryBatch) -> torch.Tensor:
        """(M,) bool: link ``edges[j]`` is query ``q[j]``'s own fact or that fact's inverse."""
        ix, R = self.index, self.num_relations
        s, r, a, t = batch.subject[q], batch.relation[q], batch.answer[q], batch.time[q]
        r_inv = torch.where(r < R, r + R, r - R)
        same_time = ix.time[edges] == t
        fwd = (ix.src[edges] == s) & (ix.rel[edges] == r) & (ix.dst[edges] == a)
        inv = (ix.src[edges] == a) & (ix.rel[edges] == r_inv) & (ix.dst[edges] == s)
        return same_time & (fwd | inv)

    def own_fact_present(self, batch: QueryBatch) -> torch.Tensor:
        """(B,) bool: the query's own fact is among this background's links (it is then hidden from
        the query by :meth:`edges_from`; aggregate statistics must discount it too)."""
        if self.setting is Setting.EXTRAPOLATION:
            return torch.zeros(len(batch), dtype=torch.bool)  # t = t_q is never visible
        return self.index.find(batch.subject, batch.relation, batch.answer, batch.time)


class DeviceCopy:
    """The device copy of the background last asked for, moved once while the caller passes that same object
    (a ranker scoring batch after batch, a trainer stepping through an epoch's plan).

    It keeps the caller's object and compares with ``is``, never by ``id()``: a freed background's id can be
    reused by the next one made (an evaluation in the other setting, the next epoch's draw), and an id-keyed
    cache then served the stale copy -- interpolation questions scored on the extrapolation background, or the
    reverse, a leak of later facts."""

    def __init__(self, device: str | torch.device) -> None:
        self.device = device
        self._last: tuple[Background, Background] | None = None  # (the caller's background, its copy on device)

    def __call__(self, background: Background) -> Background:
        if self._last is None or self._last[0] is not background:
            self._last = (background, background.to(self.device))
        return self._last[1]
