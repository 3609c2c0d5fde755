"""Rank types and ranking metrics.

With a = the answer's score among the candidates left after filtering:
optimistic = 1 + #(score > a); pessimistic = #(score >= a), the answer included;
realistic = (optimistic + pessimistic) / 2, the expected rank under random tie-breaking (the headline).
MRR = mean(1 / rank); Hits@k = share of queries with rank <= k (on the fractional realistic rank).
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import torch

RankType = Literal["realistic", "optimistic", "pessimistic"]
#: every rank type, the headline first
RANK_TYPES: tuple[RankType, ...] = get_args(RankType)
HITS_AT = (1, 3, 10)


def realistic_rank(scores: torch.Tensor, value: float) -> float:
    """1-based rank of ``value`` among ``scores`` (which include it), ties sharing the mean position."""
    return float((scores > value).sum()) + (float((scores == value).sum()) - 1) / 2 + 1


def filtered_ranks(scores: torch.Tensor, answer: torch.Tensor, filter_rows: torch.Tensor,
                   filter_cols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Optimistic and pessimistic ranks (B,) of ``answer`` among unfiltered candidates.

    ``scores`` (B, E): higher is better. The answer itself is never counted as a competitor in
    the optimistic rank and counts once in the pessimistic rank.
    """
    scores = scores.detach().float().cpu()
    if torch.isnan(scores).any():
        raise ValueError("ranker returned NaN scores")
    b = scores.shape[0]
    rows = torch.arange(b)
    a = scores[rows, answer]
    greater = (scores > a.unsqueeze(1)).sum(1)
    equal = (scores == a.unsqueeze(1)).sum(1) - 1  # the answer itself is not a competitor
    if filter_rows.numel():  # filtered entities are not competitors either (pairs are unique)
        fs, fa = scores[filter_rows, filter_cols], a[filter_rows]
        greater -= torch.bincount(filter_rows, weights=(fs > fa).double(), minlength=b).long()
        equal -= torch.bincount(filter_rows, weights=(fs == fa).double(), minlength=b).long()
    return (1 + greater).double(), (1 + greater + equal).double()


@dataclass
class RankingMetrics:
    mrr: float
    hits: dict[int, float]
    count: int

    @classmethod
    def from_ranks(cls, ranks: np.ndarray) -> "RankingMetrics":
        ranks = np.asarray(ranks, dtype=np.float64)
        if len(ranks) == 0:
            return cls(float("nan"), {k: float("nan") for k in HITS_AT}, 0)
        return cls(float(np.mean(1.0 / ranks)), {k: float(np.mean(ranks <= k)) for k in HITS_AT}, int(len(ranks)))

    def to_dict(self) -> dict:
        """The figures as JSON values: null for those of no questions (NaN is not JSON: strict readers refuse it)."""
        def value(x: float) -> float | None:
            return x if self.count and math.isfinite(x) else None

        d = {"mrr": value(self.mrr)}
        d.update({f"hits@{k}": value(v) for k, v in self.hits.items()})
        d["count"] = self.count
        return d
