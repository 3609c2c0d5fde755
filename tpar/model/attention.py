"""Eq. 7's attention, split into the terms one step computes once (paper Eqs. 6-7)."""

from __future__ import annotations

from dataclasses import dataclass

import torch


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
