"""The paper's maths, one module per part (Chen et al., ACL 2024, Section 4).

Equation numbers are the paper's: (1) a temporal path, (2) periodic and non-periodic relative time
vectors, (3) their sum h_t, (4) the general recursive encoding, (5) the message
M = h_{e_s}^{ℓ-1} + h_r^ℓ + h_t, (6) the concatenation U = [h_{e_s} ‖ h_r ‖ h_{r_q} ‖ h_t], (7) the
attention α = σ(w_αᵀ ReLU(W_α U)), (8) the aggregation h_{e_o}^ℓ = δ(W^ℓ Σ α·M), (9) the score
f(q, e) = wᵀ h_e^L, (10) the multi-class log-loss, (14) top-k path interpretations (Section 5.4).

:class:`RelativeTimeEncoding` is Eqs. 2-3; :class:`TPARLayer` is one recursive step ℓ with a method per
equation (:meth:`~TPARLayer.message` Eq. 5, :meth:`~TPARLayer.attention_terms` and
:meth:`AttentionTerms.alpha` Eqs. 6-7, :meth:`~TPARLayer.aggregate` Eq. 8). The network
(:mod:`tpar.model.network`) runs the L steps; the kernels (:mod:`tpar.model.kernels`) evaluate Eqs. 5,
7 and Eq. 8's sum for millions of links at once with exactly this maths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from tpar.model.config import ModelConfig

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


@dataclass(frozen=True)
class AttentionTerms:
    """Eq. 7's W_α U for one step, split by where each part varies.

    W_α (d_a × 4d) = [W_s | W_r | W_q | W_t] acting on U = [h_{e_s} ‖ h_r ‖ h_{r_q} ‖ h_t] (Eq. 6) is
    W_s h_{e_s} + W_r h_r + W_q h_{r_q} + W_t h_t, so each term is computed once where it is cheap:
    ``node`` (P, d_a) per frontier node, ``relation`` (2R+1, d_a) per relation, ``query`` (B, d_a) per
    query (it carries W_α's bias), ``time`` (T, d_a) per distinct Δt; ``w`` (d_a,) and ``b`` (1,) are
    w_α and its bias. A link then only adds four rows (:meth:`alpha`).
    """

    node: torch.Tensor
    relation: torch.Tensor
    query: torch.Tensor
    time: torch.Tensor
    w: torch.Tensor
    b: torch.Tensor

    def alpha(self, node: torch.Tensor, relation: torch.Tensor, query: torch.Tensor, dt: torch.Tensor) -> torch.Tensor:
        """Eq. 7 for M links given by row indices (M,) into each table: σ(b + w·ReLU(Σ terms)), (M,)."""
        pre = (self.node.index_select(0, node) + self.relation.index_select(0, relation)
               + self.query.index_select(0, query) + self.time.index_select(0, dt))
        return torch.sigmoid(torch.relu(pre) @ self.w + self.b)


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
