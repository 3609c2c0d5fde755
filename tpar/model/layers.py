"""The paper's maths, one module per part (Chen et al., ACL 2024, Section 4).

Equation numbers are the paper's: (1) a temporal path, (2) periodic and non-periodic relative time
vectors, (3) their sum h_t, (4) the general recursive encoding, (5) the message
M = h_{e_s}^{ℓ-1} + h_r^ℓ + h_t, (6) the concatenation U = [h_{e_s} ‖ h_r ‖ h_{r_q} ‖ h_t], (7) the
attention α = σ(w_αᵀ ReLU(W_α U)), (8) the aggregation h_{e_o}^ℓ = δ(W^ℓ Σ α·M), (9) the score
f(q, e) = wᵀ h_e^L, (10) the multi-class log-loss, (14) top-k path interpretations (Section 5.4).

:class:`RelativeTimeEncoding` is Eqs. 2-3; :class:`TPARLayer` is one recursive step ℓ: its
:meth:`~TPARLayer.forward` runs the step (attention terms, links, self-loops, aggregation, gate) with a
method per equation (:meth:`~TPARLayer.message` Eq. 5, :meth:`~TPARLayer.attention_terms` and
:meth:`~tpar.model.attention.AttentionTerms.alpha` Eqs. 6-7, :meth:`~TPARLayer.aggregate` Eq. 8). The
network (:mod:`tpar.model.network`) loops over the L layers; the kernels (:mod:`tpar.model.kernels`)
evaluate Eqs. 5, 7 and Eq. 8's sum for millions of links at once with exactly this maths.

Where the code goes beyond the equations as printed (each documented where it is made, and switchable where it
changes what is computed): Eq. 7 carries two biases, W_α's and w_α's, α = σ(w_αᵀ ReLU(W_α U + b_α) + b), the
last initialised to ``ModelConfig.attention_bias_init`` (-5: every link starts nearly closed); each entity keeps
its state through a self-loop; ``ModelConfig.gate`` adds a GRU-style gate between steps (off by default); the
propagation can be pruned (:mod:`tpar.model.propagation`; ``--propagation exact`` walks every link, as Eqs. 4
and 8 do).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tpar.model.attention import AttentionTerms
from tpar.model.config import ModelConfig
from tpar.model.kernels import csr_mark, csr_step, gate_step, links
from tpar.model.propagation import Frontier, StepContext

ACTIVATIONS = {"identity": nn.Identity, "tanh": nn.Tanh, "relu": nn.ReLU}


class RelativeTimeEncoding(nn.Module):
    """Eqs. 2-3: h_t = sin(ω_p Δt + φ_p) + (ω_np Δt + φ_np), Δt = t_link - t_q, all in R^d."""

    def __init__(self, dim: int, time_span: int) -> None:
        super().__init__()
        span = max(int(time_span), 2)
        # periods spread geometrically from 2 steps to 2x the data's span; slow linear drift
        periods = torch.logspace(math.log10(2.0), math.log10(2.0 * span), dim)
        self.omega_p = nn.Parameter(2 * math.pi / periods)
        self.phi_p = nn.Parameter(torch.rand(dim) * 2 * math.pi)
        self.omega_np = nn.Parameter((torch.rand(dim) * 2 - 1) / span)
        self.phi_np = nn.Parameter(torch.zeros(dim))

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        """dt (N,) integer or float relative times -> (N, d): Eq. 3, the sum of Eq. 2's two parts."""
        return self.periodic(dt) + self.linear(dt)

    def periodic(self, dt: torch.Tensor) -> torch.Tensor:
        """Eq. 2, periodic part: sin(ω_p Δt + φ_p), (N, d)."""
        return torch.sin(self.omega_p * dt.to(self.omega_p.dtype).unsqueeze(-1) + self.phi_p)

    def linear(self, dt: torch.Tensor) -> torch.Tensor:
        """Eq. 2, non-periodic part: ω_np Δt + φ_np, (N, d)."""
        return self.omega_np * dt.to(self.omega_np.dtype).unsqueeze(-1) + self.phi_np


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout, as ``nn.functional.dropout``, with the mask drawn by ``rand_like`` (on the CPU
    about 1.4x cheaper, forward and backward, than the Bernoulli sampler on the node states' sizes)."""
    if not training or p <= 0:
        return x
    if p >= 1:
        return x * 0
    return x * (torch.rand_like(x) >= p).to(x.dtype).mul_(1 / (1 - p))


class TPARLayer(nn.Module):
    """One recursive step ℓ: relation embeddings h_r^ℓ (+ the identity relation of self-loops),
    attention W_α^ℓ / w_α^ℓ (Eq. 7), W^ℓ and δ (Eq. 8)."""

    def __init__(self, cfg: ModelConfig, first: bool = False) -> None:
        super().__init__()
        d, da = cfg.dim, cfg.attn_dim
        self.rel_emb = nn.Embedding(2 * cfg.num_relations + 1, d)  # + identity relation of self-loops
        # W_α's block acting on h_{e_s}; the first step's states are h^0 = 0, so it has none
        self.att_node = None if first else nn.Linear(d, da, bias=False)
        self.att_rel = nn.Linear(d, da, bias=False)    # ... on h_r
        self.att_query = nn.Linear(d, da, bias=True)   # ... on h_{r_q} (carries W_α's bias)
        self.att_time = nn.Linear(d, da, bias=False)   # ... on h_t
        self.att_out = nn.Linear(da, 1, bias=True)     # w_α
        self.W = nn.Linear(d, d, bias=False)           # W^ℓ
        self.activation = ACTIVATIONS[cfg.activation]()  # δ
        self.dropout = nn.Dropout(cfg.dropout)
        self.attn_dim = da
        nn.init.normal_(self.rel_emb.weight, std=d ** -0.5)
        nn.init.constant_(self.att_out.bias, cfg.attention_bias_init)

    @property
    def relation_embeddings(self) -> torch.Tensor:
        """h_r^ℓ of every relation: (2R+1, d), row 2R the identity relation of self-loops."""
        return self.rel_emb.weight

    def message(self, h: torch.Tensor, node: torch.Tensor, relation: torch.Tensor, dt: torch.Tensor,
                h_time: torch.Tensor) -> torch.Tensor:
        """Eq. 5 for M links: M = h^{ℓ-1}[node] + h_r[relation] + h_t[dt], (M, d); ``h_time`` (T, d)."""
        return h.index_select(0, node) + self.rel_emb.weight.index_select(0, relation) + h_time.index_select(0, dt)

    def attention_terms(self, h: torch.Tensor, query_relation: torch.Tensor, h_time: torch.Tensor) -> AttentionTerms:
        """Eqs. 6-7's W_α U split into per-node (h (P, d)), per-relation, per-query (query_relation (B,))
        and per-Δt (h_time (T, d)) terms: see :class:`AttentionTerms`."""
        node = self.att_node(h) if self.att_node is not None else h.new_zeros(h.shape[0], self.attn_dim)
        return AttentionTerms(node=node, relation=self.att_rel(self.rel_emb.weight),
                              query=self.att_query(self.rel_emb(query_relation)), time=self.att_time(h_time),
                              w=self.att_out.weight.view(-1), b=self.att_out.bias)

    def aggregate(self, summed: torch.Tensor) -> torch.Tensor:
        """Eq. 8: h^ℓ = δ(W^ℓ Σ α·M) from the summed weighted messages (P', d); dropout while training."""
        return dropout(self.activation(self.W(summed)), self.dropout.p, self.training)

    def forward(self, frontier: Frontier, ctx: StepContext, limits, active: torch.Tensor | None = None,
                node_gate: torch.Tensor | None = None, gate: nn.GRUCell | None = None) -> Frontier:
        """Step ℓ of Algorithm 1 for every query of the batch: the frontier after step ℓ-1 -> after step ℓ.

        Attention terms (Eqs. 6-7) once per node, relation, query and Δt; every admitted link's message
        (Eq. 5) weighted by its attention (Eq. 7) and summed at its target, plus each node's self-loop
        (identity relation, Δt = 0); then h^ℓ = δ(W^ℓ Σ α·M) (Eq. 8) and, with ``gate``, the GRU gate
        between h^{ℓ-1} and h^ℓ. ``limits``: the links this step admits; ``active`` (P,): the nodes that
        send along links (top-K; None = all); ``node_gate`` (P,): σ(priority) weighting their messages."""
        terms = self.attention_terms(frontier.h, ctx.batch.relation, ctx.h_time)  # Eqs. 6-7, split
        if ctx.fused:
            nxt, summed, loop_dst = self._links_fused(frontier, ctx, terms, limits, active, node_gate)
        else:
            nxt, summed, loop_dst = self._links_listed(frontier, ctx, terms, limits, active, node_gate)
        summed = summed.index_add(0, loop_dst, self._self_loops(frontier, ctx, terms))
        h_new = self.aggregate(summed)  # Eq. 8
        if gate is not None:  # each node's previous state reaches its new row by its self-loop
            h_new = gate_step(gate, h_new, frontier.h, loop_dst, ctx.fused_gate)
        nxt.h = h_new
        if ctx.trace is not None:
            ctx.trace.states.append(h_new.detach())
        return nxt

    def _links_fused(self, frontier: Frontier, ctx: StepContext, terms: AttentionTerms, limits, active, node_gate):
        """Eqs. 5, 7 and 8's sum over the admitted links in the fused C++ kernel, reading the CSR index
        directly: (next frontier without states, summed messages (P', d), each old node's row in it)."""
        B, E, ix, rows = len(ctx.batch), ctx.num_entities, ctx.background.index, ctx.rows
        old_q, old_e = frontier.node_q, frontier.node_e
        node_ptr = torch.searchsorted(old_q, torch.arange(B + 1, device=old_q.device))  # nodes sorted by query
        repeat = ctx.background.repeat_bounds(limits)
        start, end, own = ctx.background.link_ranges(old_e, old_q, ctx.batch, limits=limits, active=active)
        if own is not None:  # the kernel compares the own fact's time in the table's codes
            own = torch.cat([own[:, :3], rows.code_of(own[:, 3]).unsqueeze(1)], 1)
        mark = csr_mark(start, end, old_e, node_ptr, ix, rows.code, own, repeat, ctx.batch.time)
        uniq = torch.nonzero(mark).squeeze(1)
        pos = torch.empty(B * E, dtype=torch.long)
        pos[uniq] = torch.arange(uniq.shape[0])
        node_q, node_e = uniq // E, uniq % E
        summed = csr_step(frontier.h, self.relation_embeddings, ctx.h_time, terms, start=start, end=end,
                          node_e=old_e, node_ptr=node_ptr, index=ix, time_code=rows.code, q_offset=rows.offset,
                          own=own, pos=pos, num_out=node_q.shape[0], node_gate=node_gate, repeat=repeat,
                          q_time=ctx.batch.time)
        return (Frontier(node_q, node_e, frontier.node_bound, frontier.h), summed,
                pos.index_select(0, old_q * E + old_e))

    def _links_listed(self, frontier: Frontier, ctx: StepContext, terms: AttentionTerms, limits, active, node_gate):
        """The same as :meth:`_links_fused` over a listed set of links in torch ops (any device; per-link
        α for the trace; the chronological ablation's per-node time bounds)."""
        B, E, ix, rows, trace = len(ctx.batch), ctx.num_entities, ctx.background.index, ctx.rows, ctx.trace
        old_q, old_e = frontier.node_q, frontier.node_e
        node_ptr = torch.searchsorted(old_q, torch.arange(B + 1, device=old_q.device))
        edges, owner = ctx.background.edges_from(old_e, old_q, ctx.batch,
                                                 before=frontier.node_bound if ctx.chrono else None,
                                                 limits=limits, active=active)
        # per-link gathers, each from a per-node or per-link table (no per-link query ids needed)
        e_time = ix.time.index_select(0, edges)
        rel = ix.rel.index_select(0, edges)
        e_dst = ix.dst.index_select(0, edges)
        dt = rows.code.index_select(0, edges) - rows.offset.index_select(0, old_q).index_select(0, owner)
        if ctx.chrono:
            e_q = old_q.index_select(0, owner)
            node_q, node_e, node_bound, dst_all = unique_nodes_bounded(
                torch.cat([e_q, old_q]), torch.cat([e_dst, old_e]), torch.cat([e_time + 1, frontier.node_bound]), E)
        else:
            key = torch.cat([(old_q * E).index_select(0, owner) + e_dst, old_q * E + old_e])
            node_q, node_e, dst_all = unique_nodes(key, B, E)
            node_bound = frontier.node_bound
        m = edges.shape[0]
        dst, loop_dst = dst_all[:m], dst_all[m:]
        edge_ptr = torch.searchsorted(owner, node_ptr)  # query q's links: edge_ptr[q]:edge_ptr[q+1]
        link_weight = None
        if trace is not None and trace.weighted:
            link_weight = torch.full((m,), trace.weight_scale, device=frontier.h.device, dtype=frontier.h.dtype,
                                     requires_grad=True)
            trace.link_weight.append(link_weight)
        summed, alpha = links(frontier.h, self.relation_embeddings, ctx.h_time, terms, owner, rel, dt, dst, edge_ptr,
                              node_q.shape[0], link_weight, node_gate)
        if trace is not None:
            trace.nodes.append(torch.stack([node_q, node_e], 1).detach())
            trace.links.append(torch.stack([old_q[owner], ix.src[edges], rel, e_dst, e_time], 1).detach())
            trace.alpha.append(alpha.detach())
            trace.num_links.append(int(m))
        return Frontier(node_q, node_e, node_bound, frontier.h), summed, loop_dst

    def _self_loops(self, frontier: Frontier, ctx: StepContext, terms: AttentionTerms) -> torch.Tensor:
        """Each node's message to itself (Eqs. 5, 7 with the identity relation and Δt = 0), (P, d)."""
        old_q, trace = frontier.node_q, ctx.trace
        loops = torch.arange(old_q.shape[0], device=old_q.device)
        identity = torch.full_like(loops, ctx.identity_relation)
        zero = torch.full_like(loops, ctx.rows.zero_row)
        loop_alpha = terms.alpha(loops, identity, old_q, zero)
        if trace is not None:
            trace.loops.append(torch.stack([old_q, frontier.node_e], 1).detach())
            trace.loop_alpha.append(loop_alpha.detach())
            if trace.weighted:
                loop_weight = torch.full_like(loop_alpha, trace.weight_scale, requires_grad=True)
                trace.loop_weight.append(loop_weight)
                loop_alpha = loop_alpha * loop_weight
        return loop_alpha.unsqueeze(1) * self.message(frontier.h, loops, identity, zero, ctx.h_time)


def unique_nodes(key: torch.Tensor, B: int, E: int):
    """Distinct (query, entity) pairs of keys q·E + e, sorted, and each key's position among them.
    A dense B x E mark table: O(B·E + M), no sort."""
    mark = torch.zeros(B * E, dtype=torch.bool, device=key.device)
    mark[key] = True
    uniq = torch.nonzero(mark).squeeze(1)
    pos = torch.empty(B * E, dtype=torch.long, device=key.device)
    pos[uniq] = torch.arange(uniq.shape[0], device=key.device)
    return uniq // E, uniq % E, pos.index_select(0, key)


def unique_nodes_bounded(q: torch.Tensor, e: torch.Tensor, bound: torch.Tensor, E: int):
    """Distinct (query, entity, time bound) nodes of the chronological ablation, and each key's position."""
    lo = int(bound.min())
    span = int(bound.max()) - lo + 1
    key = (q * E + e) * span + (bound - lo)
    uniq, inv = torch.unique(key, return_inverse=True)
    qe = uniq // span
    return qe // E, qe % E, uniq % span + lo, inv


class LearnedPriority(nn.Module):
    """A*Net-style priority of a (query, entity) node for top-K expansion: w_p·ReLU(W_p [h ‖ h_{r_q}]),
    (P,) from states h (P, d) and the query relations of the nodes (P,). Its σ weights the messages
    the kept entities send (:mod:`tpar.model.network`), which is how it is trained."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.dim
        self.rel_emb = nn.Embedding(2 * cfg.num_relations, d)
        self.hidden = nn.Linear(2 * d, d)
        self.out = nn.Linear(d, 1)
        nn.init.normal_(self.rel_emb.weight, std=d ** -0.5)
        nn.init.zeros_(self.out.weight)
        nn.init.constant_(self.out.bias, 3.0)  # σ(3) ≈ 0.95: kept entities start close to ungated

    def forward(self, h: torch.Tensor, query_relation: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.hidden(torch.cat([h, self.rel_emb(query_relation)], 1)))).squeeze(-1)
