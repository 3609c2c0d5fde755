"""The TPAR network (Chen et al., ACL 2024, Section 4): a loop over L recursive steps of
:class:`~tpar.model.layers.TPARLayer` over temporal paths from the query entity, then the score of
Eq. 9. Each layer's ``forward`` runs one step of the paper (Eqs. 5-8, the gate); the
:class:`~tpar.model.propagation.PruningPolicy` decides which links each step admits; all queries of a
batch run at once (no Python loop over queries or links):

* The frontier is a flat list of *nodes* (query, entity), each with a state h (P, d). Step ℓ takes
  every admitted link leaving every node -- slices of the time-sorted CSR index
  (:meth:`tpar.graph.background.Background.edges_from`) -- plus one *self-loop* per node.
* Self-loops (choice documented here, as in RED-GNN which TPAR builds on): a link with an identity
  relation (id 2R) and Δt = 0 from each node to itself, so entities reached in earlier steps stay
  reached (E^ℓ = E^{ℓ-1} ∪ D(P), Algorithm 1) and paths shorter than L still score.
* Eq. 7's 4d-wide linear map W_α U is split into four d_a-wide terms computed where they are
  cheap (:class:`~tpar.model.attention.AttentionTerms`); each link then only adds four small vectors.
* The time encoding (Eqs. 2-3) is evaluated once per integer Δt in the batch's range (a lookup
  table) and gathered per link.
* The per-link work (Eq. 7's attention and Eq. 8's weighted message sum) runs in a kernel of
  :mod:`tpar.model.kernels` (fused C++ on the CPU, torch ops elsewhere); self-loops are dense per-node
  torch ops with the layer's own :meth:`~tpar.model.layers.TPARLayer.message` and
  :meth:`~tpar.model.attention.AttentionTerms.alpha`.
"""

from __future__ import annotations

import torch
from torch import nn

from tpar.errors import DataError
from tpar.graph.background import Background
from tpar.graph.queries import QueryBatch
from tpar.model.config import ModelConfig
from tpar.model.kernels import KernelChoice, default_kernel, use_fused
from tpar.model.layers import LearnedPriority, RelativeTimeEncoding, TPARLayer
from tpar.model.propagation import Frontier, PropagationTrace, PruningPolicy, StepContext, TimeRows

__all__ = ["TPAR", "PropagationTrace", "TimeRows", "multiclass_log_loss"]


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
        self.pruning = PruningPolicy(cfg)  # which links each step admits; top-K senders
        #: which kernel runs the per-link work (auto / cpp / torch; not saved with the weights)
        self.kernel: KernelChoice = default_kernel()
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
        dev, dtype = self.score.weight.device, self.score.weight.dtype
        E, B = background.num_entities, len(batch)
        rows = TimeRows.for_batch(background.index, batch.time)  # Eqs. 2-3 once per Δt the batch can meet
        chrono = self.cfg.chronological and background.setting.value == "extrapolation"
        ctx = StepContext(batch=batch, background=background, rows=rows, h_time=self.time_encoding(rows.dt),
                          fused=use_fused(self.kernel, dev, dtype, per_link_output=trace is not None or chrono),
                          fused_gate=self.gate is not None and use_fused(self.kernel, dev, dtype, per_link_output=False),
                          chrono=chrono, identity_relation=self.identity_relation, trace=trace)
        frontier = Frontier.start(batch, self.cfg.dim, dtype, dev)  # h^0 = 0 at each query's subject
        active = node_gate = None  # top-K: which nodes send along links, and the learned priority's weight
        for step, layer in enumerate(self.layers):
            frontier = layer(frontier, ctx, self.pruning.limits_at(step), active, node_gate, self.gate)
            active, node_gate = self.pruning.senders(step, frontier, batch, self.score, self.priority)
        node_score = self.score(frontier.h).squeeze(-1)  # Eq. 9
        scores = torch.zeros(B, E, device=dev, dtype=node_score.dtype)
        reached = torch.zeros(B, E, device=dev, dtype=torch.bool)
        reached[frontier.node_q, frontier.node_e] = True
        scores = scores.index_put((frontier.node_q, frontier.node_e), node_score, accumulate=True)
        if not self.training and not bool(torch.isfinite(scores).all()):  # answering: never rank NaN or ±inf
            raise DataError("the model's scores are not finite (NaN or ±inf): its weights are too large to compute "
                            "with (a training run that diverged?); retrain it, or use another checkpoint")
        return scores, reached


def multiclass_log_loss(scores: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    """Eq. 10: mean over queries of −f(q, a) + log Σ_e exp f(q, e)."""
    return torch.nn.functional.cross_entropy(scores, answer)
