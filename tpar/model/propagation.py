"""The state of one propagation over temporal paths, shared by the network and its layers.

* :class:`Frontier` -- the nodes (query, entity) reached so far and their states h^ℓ (Algorithm 1's E^ℓ);
* :class:`TimeRows` -- the relative times a batch can meet, as rows of one table of time encodings;
* :class:`StepContext` -- what every step of one forward pass shares (batch, background, time table,
  kernel choice, trace);
* :class:`PruningPolicy` -- which links a step admits (exact leading steps, the per-fact link cap and
  repeats, a window) and, with top-K, which nodes send in the next step;
* :class:`PropagationTrace` -- what a pass did, per layer, for explanations and teaching.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from tpar.graph.background import NO_LIMITS, Background, LinkLimits
from tpar.graph.queries import QueryBatch
from tpar.model.config import ModelConfig


@dataclass(frozen=True)
class TimeRows:
    """The relative times a batch can meet, as rows of one small table of time encodings (Eqs. 2-3).

    Link e of query q uses row ``code[e] − offset[q]`` of ``dt`` (T,); the last row is Δt = 0, the
    self-loops'. Two layouts, whichever is smaller, so the cost never grows with the data's time span
    or with how far a question lies from the data:

    * ``range``: every integer Δt from the earliest link minus the latest question to the latest link
      minus the earliest question (code = the link's time) -- compact for dense time axes;
    * ``rank``: the distinct link times × the batch's distinct question times (code = the rank of the
      link's time) -- bounded by the data's size when a huge span holds few distinct times.
    """

    dt: torch.Tensor
    code: torch.Tensor
    offset: torch.Tensor
    layout: str
    distinct: torch.Tensor | None = None  # rank layout: the sorted distinct link times

    @property
    def zero_row(self) -> int:
        return int(self.dt.shape[0]) - 1

    def code_of(self, times: torch.Tensor) -> torch.Tensor:
        """``times`` (of questions' own facts) as codes comparable with ``code`` (-1: no link has it)."""
        if self.distinct is None:
            return times
        if not self.distinct.numel():
            return torch.full_like(times, -1)
        pos = torch.searchsorted(self.distinct, times.contiguous()).clamp(max=self.distinct.shape[0] - 1)
        return torch.where(self.distinct[pos] == times, pos, torch.full_like(times, -1))

    @classmethod
    def for_batch(cls, index, q_time: torch.Tensor) -> "TimeRows":
        dev = q_time.device
        zero = torch.zeros(1, dtype=torch.long, device=dev)
        t_min, t_max = index.time_min, index.time_min + index.time_span - 2
        lo, hi = t_min - int(q_time.max()), t_max - int(q_time.min())
        distinct = index.distinct_times
        uq, q_rank = torch.unique(q_time, return_inverse=True)
        if uq.shape[0] * distinct.shape[0] < hi - lo + 1:
            dt = (distinct.unsqueeze(0) - uq.unsqueeze(1)).reshape(-1)
            return cls(torch.cat([dt, zero]), index.time_rank, -q_rank * distinct.shape[0], "rank", distinct)
        return cls(torch.cat([torch.arange(lo, hi + 1, device=dev), zero]), index.time, q_time + lo, "range")


@dataclass(kw_only=True)
class PropagationTrace:
    """What one forward pass did, per layer (for explanations, teaching and benchmarks).

    For layer l: ``nodes[l]`` (P_l, 2) = (query, entity) after the step; ``links[l]`` (M_l, 5) =
    (query, src entity, relation, dst entity, link time) of every admitted link (self-loops
    excluded); ``alpha[l]`` (M_l,) their attention weights (Eq. 7); ``num_links[l]`` the count;
    ``loops[l]`` (P_{l-1}, 2) = (query, entity) of the self-loop of every node entering step l and
    ``loop_alpha[l]`` (P_{l-1},) its attention; ``states[l]`` (P_l, d) the nodes' states h^l after
    the step (Eq. 8).

    ``weighted=True`` makes the pass multiply every link's and self-loop's α by a weight of 1 that
    requires grad, kept in ``link_weight[l]`` (M_l,) / ``loop_weight[l]`` (P_{l-1},): after
    ``f.backward()`` their ``.grad`` is ∂f/∂(link) of Eq. 14, what :mod:`tpar.reasoning.explanation` searches.
    ``weight_scale`` β sets those weights to β instead of 1 (every link and self-loop at once): the
    points along the straight line from "no evidence" to the full pass that integrated gradients average.
    """

    nodes: list[torch.Tensor] = field(default_factory=list)
    links: list[torch.Tensor] = field(default_factory=list)
    alpha: list[torch.Tensor] = field(default_factory=list)
    num_links: list[int] = field(default_factory=list)
    loops: list[torch.Tensor] = field(default_factory=list)
    loop_alpha: list[torch.Tensor] = field(default_factory=list)
    weighted: bool = False
    weight_scale: float = 1.0
    link_weight: list[torch.Tensor] = field(default_factory=list)
    loop_weight: list[torch.Tensor] = field(default_factory=list)
    states: list[torch.Tensor] = field(default_factory=list)


@dataclass
class Frontier:
    """The nodes after a step: ``node_q`` / ``node_e`` (P,) the (query, entity) of each node, sorted by
    query; ``h`` (P, d) their states; ``node_bound`` (P,) in the chronological ablation the exclusive
    upper bound on the time of the next link a node may take (else the question's time)."""

    node_q: torch.Tensor
    node_e: torch.Tensor
    node_bound: torch.Tensor
    h: torch.Tensor

    @classmethod
    def start(cls, batch: QueryBatch, dim: int, dtype: torch.dtype, device: torch.device) -> "Frontier":
        """Before step 1: one node per query, its subject, with h^0 = 0."""
        B = len(batch)
        return cls(torch.arange(B, device=device), batch.subject, batch.time.clone(),
                   torch.zeros(B, dim, device=device, dtype=dtype))


@dataclass(kw_only=True)
class StepContext:
    """What every step of one forward pass shares: the ``batch`` and its ``background``, the time table
    ``rows`` and its encodings ``h_time`` (T, d), whether the fused kernels run (``fused`` for the links,
    ``fused_gate`` for the GRU gate), the chronological ablation, the identity relation's id (2R) and the
    optional ``trace``."""

    batch: QueryBatch
    background: Background
    rows: TimeRows
    h_time: torch.Tensor
    fused: bool
    fused_gate: bool
    chrono: bool
    identity_relation: int
    trace: PropagationTrace | None = None

    @property
    def num_entities(self) -> int:
        return self.background.num_entities


class PruningPolicy:
    """Which links each step admits and, with top-K expansion, which nodes send along links next.

    The first ``exact_steps`` steps admit every link of the background; later steps apply the model's
    :class:`~tpar.graph.background.LinkLimits` (a per-fact cap on links and on repeats of one (s, r, o),
    a window). With ``top_k`` K > 0, after each step from ``exact_steps`` on, only each query's K
    highest-priority nodes send in the next step (priority: the score of Eq. 9, or a learned
    A*Net-style priority whose σ then weights the messages they send)."""

    def __init__(self, cfg: ModelConfig) -> None:
        self.exact_steps, self.top_k, self.num_layers = cfg.exact_steps, cfg.top_k, cfg.num_layers
        self.limits = LinkLimits(cfg.history_window, cfg.link_cap, cfg.recent_repeats)

    def limits_at(self, step: int) -> LinkLimits:
        """The link limits of step ``step`` (0-based)."""
        return NO_LIMITS if step < self.exact_steps else self.limits

    def senders(self, step: int, frontier: Frontier, batch: QueryBatch, score: nn.Linear,
                priority: nn.Module | None) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """After step ``step``: (active (P,) bool or None = every node sends; gate (P,) σ(priority) or None)."""
        if not self.top_k or not self.exact_steps <= step + 1 < self.num_layers:
            return None, None
        h, node_q = frontier.h, frontier.node_q
        if priority is not None:
            prio = priority(h, batch.relation.index_select(0, node_q))
            gate = torch.sigmoid(prio)
        else:
            prio, gate = score(h).squeeze(-1), None
        order = torch.argsort(prio.detach(), descending=True, stable=True)
        order = order[torch.argsort(node_q.index_select(0, order), stable=True)]  # by query, best first
        q_sorted = node_q.index_select(0, order)
        first = torch.searchsorted(q_sorted, q_sorted)  # position of each query's first node
        rank = torch.arange(order.shape[0], device=h.device) - first
        active = torch.zeros(h.shape[0], dtype=torch.bool, device=h.device)
        active[order[rank < self.top_k]] = True
        return active, gate
