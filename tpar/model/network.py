"""The TPAR network (Chen et al., ACL 2024, Section 4): L recursive steps of
:class:`~tpar.model.layers.TPARLayer` over temporal paths from the query entity, then the score of
Eq. 9. The layers hold the paper's maths (Eqs. 2-3, 5-8); this module decides which links each step
admits and runs the steps for all queries of a batch at once (no Python loop over queries or links):

* The frontier is a flat list of *nodes* (query, entity), each with a state h (P, d). Step ℓ takes
  every admitted link leaving every node -- slices of the time-sorted CSR index
  (:meth:`tpar.graph.background.Background.edges_from`) -- plus one *self-loop* per node.
* Self-loops (choice documented here, as in RED-GNN which TPAR builds on): a link with an identity
  relation (id 2R) and Δt = 0 from each node to itself, so entities reached in earlier steps stay
  reached (E^ℓ = E^{ℓ-1} ∪ D(P), Algorithm 1) and paths shorter than L still score.
* Eq. 7's 4d-wide linear map W_α U is split into four d_a-wide terms computed where they are
  cheap (:class:`~tpar.model.layers.AttentionTerms`); each link then only adds four small vectors.
* The time encoding (Eqs. 2-3) is evaluated once per integer Δt in the batch's range (a lookup
  table) and gathered per link.
* The per-link work (Eq. 7's attention and Eq. 8's weighted message sum) runs in a kernel of
  :mod:`tpar.model.kernels` (fused C++ on the CPU, torch ops elsewhere); self-loops are dense per-node
  torch ops with the layer's own :meth:`~tpar.model.layers.TPARLayer.message` and
  :meth:`~tpar.model.layers.AttentionTerms.alpha`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from tpar.graph.background import NO_LIMITS, Background, LinkLimits
from tpar.graph.queries import QueryBatch
from tpar.model.config import ModelConfig
from tpar.model.kernels import csr_mark, csr_step, gate_step, links, use_fused
from tpar.model.layers import LearnedPriority, RelativeTimeEncoding, TPARLayer


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


class TPAR(nn.Module):
    """Scores every entity for a batch of queries by recursive encoding over temporal paths."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        if cfg.num_relations < 1:
            raise ValueError("ModelConfig.num_relations must be set from the data")
        self.cfg = cfg
        self.time_encoding = RelativeTimeEncoding(cfg.dim, cfg.time_span)
        self.layers = nn.ModuleList(TPARLayer(cfg, first=(i == 0)) for i in range(cfg.num_layers))
        self.score = nn.Linear(cfg.dim, 1, bias=False)  # w of Eq. 9
        self.priority = LearnedPriority(cfg) if cfg.top_k and cfg.priority == "learned" else None
        self.limits = LinkLimits(cfg.history_window, cfg.link_cap, cfg.recent_repeats)
        self.gate = nn.GRUCell(cfg.dim, cfg.dim) if cfg.gate else None  # optional, see ModelConfig.gate

    @property
    def identity_relation(self) -> int:
        return 2 * self.cfg.num_relations

    def forward(self, batch: QueryBatch, background: Background, trace: PropagationTrace | None = None) -> torch.Tensor:
        """Scores (B, num_entities), Eq. 9; entities no path reaches score 0 (h = 0).

        ``trace``: an empty :class:`PropagationTrace` to fill with per-layer nodes, links and α.
        """
        return self.scores_and_reach(batch, background, trace)[0]

    def scores_and_reach(self, batch: QueryBatch, background: Background,
                         trace: PropagationTrace | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(scores (B, E) as :meth:`forward`, reached (B, E) bool): ``reached[b, e]`` is true when some
        temporal path of length ≤ L (self-loops included, so the subject itself) led to e -- the
        entities E^L of Algorithm 1. An unreached entity scores exactly 0 because h = 0, not because
        the model judged it; a reached one may score 0 (or below) on its own merits."""
        if background.num_relations != self.cfg.num_relations:
            raise ValueError(f"model built for {self.cfg.num_relations} relations, data has {background.num_relations}")
        ix = background.index
        dev = self.score.weight.device
        E = background.num_entities
        B = len(batch)
        chrono = self.cfg.chronological and background.setting.value == "extrapolation"
        q_time = batch.time
        # per node: query, entity, (chronological mode) exclusive upper bound on the next link's time
        node_q = torch.arange(B, device=dev)
        node_e = batch.subject
        node_bound = q_time.clone()
        h = torch.zeros(B, self.cfg.dim, device=dev, dtype=self.score.weight.dtype)  # h^0 = 0
        # time encodings (Eqs. 2-3) once per relative time the batch can meet; row 0 of Δt = 0 last
        rows = TimeRows.for_batch(ix, q_time)
        h_time = self.time_encoding(rows.dt)
        fused = use_fused(dev, h.dtype, per_link_output=trace is not None or chrono)
        fused_gate = self.gate is not None and use_fused(dev, h.dtype, per_link_output=False)
        active = gate = None  # top-K: which nodes send along links, and the learned priority's weight
        for step, layer in enumerate(self.layers):
            limits = NO_LIMITS if step < self.cfg.exact_steps else self.limits  # exact leading steps
            repeat = background.repeat_bounds(limits)
            old_q, old_e = node_q, node_e
            node_ptr = torch.searchsorted(old_q, torch.arange(B + 1, device=dev))  # nodes are sorted by query
            terms = layer.attention_terms(h, batch.relation, h_time)  # Eqs. 6-7, split
            h_rel = layer.relation_embeddings
            if fused:
                start, end, own = background.link_ranges(old_e, old_q, batch, limits=limits, active=active)
                if own is not None:  # the kernel compares the own fact's time in the table's codes
                    own = torch.cat([own[:, :3], rows.code_of(own[:, 3]).unsqueeze(1)], 1)
                mark = csr_mark(start, end, old_e, node_ptr, ix, rows.code, own, repeat, q_time)
                uniq = torch.nonzero(mark).squeeze(1)
                pos = torch.empty(B * E, dtype=torch.long)
                pos[uniq] = torch.arange(uniq.shape[0])
                node_q, node_e = uniq // E, uniq % E
                loop_dst = pos.index_select(0, old_q * E + old_e)
                summed = csr_step(h, h_rel, h_time, terms, start=start, end=end, node_e=old_e, node_ptr=node_ptr,
                                  index=ix, time_code=rows.code, q_offset=rows.offset, own=own, pos=pos,
                                  num_out=node_q.shape[0], node_gate=gate, repeat=repeat, q_time=q_time)
            else:
                edges, owner = background.edges_from(old_e, old_q, batch, before=node_bound if chrono else None,
                                                     limits=limits, active=active)
                # per-link gathers, each from a per-node or per-link table (no per-link query ids needed)
                e_time = ix.time.index_select(0, edges)
                rel = ix.rel.index_select(0, edges)
                e_dst = ix.dst.index_select(0, edges)
                dt = rows.code.index_select(0, edges) - rows.offset.index_select(0, old_q).index_select(0, owner)
                if chrono:
                    e_q = old_q.index_select(0, owner)
                    node_q, node_e, node_bound, dst_all = self._unique_nodes_bounded(
                        torch.cat([e_q, old_q]), torch.cat([e_dst, old_e]), torch.cat([e_time + 1, node_bound]), E)
                else:
                    key = torch.cat([(old_q * E).index_select(0, owner) + e_dst, old_q * E + old_e])
                    node_q, node_e, dst_all = self._unique_keys(key, B, E)
                m = edges.shape[0]
                dst, loop_dst = dst_all[:m], dst_all[m:]
                edge_ptr = torch.searchsorted(owner, node_ptr)  # query q's links: edge_ptr[q]:edge_ptr[q+1]
                link_weight = None
                if trace is not None and trace.weighted:
                    link_weight = torch.full((m,), trace.weight_scale, device=dev, dtype=h.dtype, requires_grad=True)
                    trace.link_weight.append(link_weight)
                summed, alpha = links(h, h_rel, h_time, terms, owner, rel, dt, dst, edge_ptr, node_q.shape[0],
                                      link_weight, gate)
                if trace is not None:
                    trace.nodes.append(torch.stack([node_q, node_e], 1).detach())
                    trace.links.append(torch.stack([old_q[owner], ix.src[edges], rel, e_dst, e_time], 1).detach())
                    trace.alpha.append(alpha.detach())
                    trace.num_links.append(int(m))
            # self-loops: identity relation, Δt = 0, each node to itself (Eqs. 5, 7)
            loops = torch.arange(old_q.shape[0], device=dev)
            identity = torch.full_like(loops, self.identity_relation)
            zero = torch.full_like(loops, rows.zero_row)
            loop_alpha = terms.alpha(loops, identity, old_q, zero)
            if trace is not None:
                trace.loops.append(torch.stack([old_q, old_e], 1).detach())
                trace.loop_alpha.append(loop_alpha.detach())
                if trace.weighted:
                    loop_weight = torch.full_like(loop_alpha, trace.weight_scale, requires_grad=True)
                    trace.loop_weight.append(loop_weight)
                    loop_alpha = loop_alpha * loop_weight
            loop_msg = loop_alpha.unsqueeze(1) * layer.message(h, loops, identity, zero, h_time)
            h_new = layer.aggregate(summed.index_add(0, loop_dst, loop_msg))  # Eq. 8
            if self.gate is not None:  # each node's previous state reaches its new row by its self-loop
                h_new = gate_step(self.gate, h_new, h, loop_dst, fused_gate)
            h = h_new
            if trace is not None:
                trace.states.append(h.detach())
            if self.cfg.top_k and self.cfg.exact_steps <= step + 1 < len(self.layers):
                active, gate = self._top_k(h, node_q, batch)
        node_score = self.score(h).squeeze(-1)  # Eq. 9
        scores = torch.zeros(B, E, device=dev, dtype=node_score.dtype)
        reached = torch.zeros(B, E, device=dev, dtype=torch.bool)
        reached[node_q, node_e] = True
        return scores.index_put((node_q, node_e), node_score, accumulate=True), reached

    def _top_k(self, h: torch.Tensor, node_q: torch.Tensor, batch: QueryBatch) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Top-K expansion: (active (P,) bool -- each query's K highest-priority nodes, the ones that send
        along links in the next step; gate (P,) -- σ(priority) weighting their messages, or None for
        the ``score`` priority, which is not trained through the selection). Nodes are sorted by query."""
        if self.priority is not None:
            prio = self.priority(h, batch.relation.index_select(0, node_q))
            gate = torch.sigmoid(prio)
        else:
            prio, gate = self.score(h).squeeze(-1), None
        order = torch.argsort(prio.detach(), descending=True, stable=True)
        order = order[torch.argsort(node_q.index_select(0, order), stable=True)]  # by query, best first
        q_sorted = node_q.index_select(0, order)
        first = torch.searchsorted(q_sorted, q_sorted)  # position of each query's first node
        rank = torch.arange(order.shape[0], device=h.device) - first
        active = torch.zeros(h.shape[0], dtype=torch.bool, device=h.device)
        active[order[rank < self.cfg.top_k]] = True
        return active, gate

    @staticmethod
    def _unique_keys(key: torch.Tensor, B: int, E: int):
        """Distinct (query, entity) pairs of keys q·E + e, sorted, and each key's position among them.
        A dense B x E mark table: O(B·E + M), no sort."""
        mark = torch.zeros(B * E, dtype=torch.bool, device=key.device)
        mark[key] = True
        uniq = torch.nonzero(mark).squeeze(1)
        pos = torch.empty(B * E, dtype=torch.long, device=key.device)
        pos[uniq] = torch.arange(uniq.shape[0], device=key.device)
        return uniq // E, uniq % E, pos.index_select(0, key)

    @staticmethod
    def _unique_nodes_bounded(q: torch.Tensor, e: torch.Tensor, bound: torch.Tensor, E: int):
        lo = int(bound.min())
        span = int(bound.max()) - lo + 1
        key = (q * E + e) * span + (bound - lo)
        uniq, inv = torch.unique(key, return_inverse=True)
        qe = uniq // span
        return qe // E, qe % E, uniq % span + lo, inv


def multiclass_log_loss(scores: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    """Eq. 10: mean over queries of −f(q, a) + log Σ_e exp f(q, e)."""
    return torch.nn.functional.cross_entropy(scores, answer)
