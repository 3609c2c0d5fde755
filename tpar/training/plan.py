"""What a run trains on: the model's data-dependent fields, seeds, and each epoch's batches.

* extrapolation: a training query (s, r, ?, t_q) sees the training facts with t < t_q;
* interpolation: every epoch the training facts are reshuffled and split into a background
  (``background_fraction``, 3/4 as in the paper's Appendix D.1) and queries; a query never sees its
  own fact or its inverse;
* unified: batches of both kinds alternate, so one checkpoint serves both settings.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from tpar.data.kg import TemporalKG
from tpar.graph.background import Background
from tpar.graph.queries import QueryBatch, make_queries, settings_of
from tpar.model.config import RunConfig


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.manual_seed(seed)


def model_config_for(kg: TemporalKG, run: RunConfig) -> RunConfig:
    """Fill the data-dependent model fields (relations, time span)."""
    every = kg.all_facts()
    span = int(every[:, 3].max() - every[:, 3].min() + 1) if len(every) else 1
    run.model.num_relations = kg.num_relations
    run.model.time_span = span
    return run


def split_budget(total: int, available: dict[str, int]) -> dict[str, int]:
    """Training questions per kind for an epoch budget of ``total`` (0 = every available question):
    an equal share each, the remainder and whatever a kind cannot use going to the others, so the
    budget is met exactly (``min(total, Σ available)``) -- 1 trains one question, 998 trains 998."""
    if total <= 0:
        return dict(available)
    left = min(total, sum(available.values()))
    out = {k: 0 for k in available}
    open_ = [k for k in available if available[k] > 0]
    while left > 0 and open_:
        share, extra = divmod(left, len(open_))
        for i, k in enumerate(open_):
            take = min(share + (1 if i < extra else 0), available[k] - out[k])
            out[k] += take
            left -= take
        open_ = [k for k in open_ if out[k] < available[k]]
    return out


def balanced_sample(relations: np.ndarray, n: int, power: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` distinct question indices drawn with probability ∝ count(relation)^(−power): 0 = uniform
    over questions, 1 = every relation equally often (rare relations' rules get more updates), in
    a random order."""
    counts = np.bincount(relations)
    w = counts[relations].astype(np.float64) ** -power
    picked = rng.choice(len(relations), size=n, replace=False, p=w / w.sum())
    return rng.permutation(picked)


def extrapolation_background(kg: TemporalKG, setting: str) -> Background | None:
    """The training facts as an extrapolation background (each query sees those before it), built once
    per run; ``None`` when the run trains interpolation only."""
    if setting not in ("extrapolation", "unified"):
        return None
    return Background.from_facts(kg.facts("train"), kg.num_entities, kg.num_relations, "extrapolation")


def interpolation_draw(kg: TemporalKG, fraction: float, rng: np.random.Generator) -> tuple[Background, QueryBatch]:
    """One epoch's interpolation split of train: a random ``fraction`` of its facts is the background the
    questions see (before and after their time), the rest are the questions (both directions)."""
    train = kg.facts("train")
    perm = rng.permutation(len(train))
    n_bg = int(round(fraction * len(train)))
    bg = Background.from_facts(train[perm[:n_bg]], kg.num_entities, kg.num_relations, "interpolation")
    return bg, make_queries(train[perm[n_bg:]], kg.num_relations)


class EpochPlan:
    """The batches of one epoch, rebuilt deterministically from (seed, epoch) -- so resume can skip
    the batches already done. ``batches``: (kind, first question) in training order, the kinds
    interleaved batch by batch; ``backgrounds`` / ``queries`` per kind."""

    def __init__(self, kg: TemporalKG, run: RunConfig, epoch: int, extrap_bg: Background | None) -> None:
        cfg = run.train
        rng = np.random.default_rng([cfg.seed, epoch])
        train = kg.facts("train")
        self.backgrounds: dict[str, Background] = {}
        self.queries: dict[str, QueryBatch] = {}
        kinds = settings_of(cfg.setting)
        pools: dict[str, tuple[Background | None, QueryBatch]] = {}
        for kind in kinds:
            if kind == "extrapolation":
                bg = extrap_bg
                q = make_queries(train, kg.num_relations)
            else:
                bg, q = interpolation_draw(kg, cfg.background_fraction, rng)
            pools[kind] = (bg, q)
        budgets = split_budget(cfg.max_train_queries, {k: len(q) for k, (_, q) in pools.items()})
        for kind in kinds:
            bg, q = pools[kind]
            if cfg.relation_balance > 0 and budgets[kind] < len(q):
                order = balanced_sample(q.relation.numpy() % kg.num_relations, budgets[kind], cfg.relation_balance, rng)
            else:
                order = rng.permutation(len(q))[: budgets[kind]]
            self.backgrounds[kind], self.queries[kind] = bg, q[torch.from_numpy(order)]
        kinds = [k for k in kinds if len(self.queries[k])]
        per_kind = {k: [(k, a) for a in range(0, len(self.queries[k]), cfg.batch_size)] for k in kinds}
        self.batches: list[tuple[str, int]] = []
        for i in range(max((len(v) for v in per_kind.values()), default=0)):
            for k in kinds:
                if i < len(per_kind[k]):
                    self.batches.append(per_kind[k][i])

    @property
    def num_questions(self) -> int:
        return sum(len(q) for q in self.queries.values())

    def batch(self, i: int, size: int) -> tuple[str, QueryBatch]:
        kind, a = self.batches[i]
        return kind, self.queries[kind][slice(a, a + size)]
