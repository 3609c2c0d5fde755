"""Rule-free baselines, ranked by the same evaluator as the model.

* ``frequency``: score(e | s, r, t_q) = number of background facts (s, r, e, t').
* ``recurrency``: the recurrency baseline of Gastinger et al. (IJCAI 2024, "History repeats
  itself"), written from its published formulas: score = α·ψ_λ + (1 − α)·ξ, where

  - ψ_λ(e | s, r, t_q) = Σ_{(s, r, e, t') in background} 2^(−λ·|t_q − t'|) / Σ_k 2^(−λ·|t_q − k|),
    the denominator summing over every time step k the background spans (before t_q when
    extrapolating): a recency-weighted count of the fact having happened before;
  - ξ(e | r) = #(x, r, e, ·) / #(x, r, ·, ·) in the background: how often e answers relation r.

  λ (per time step of the data) and α are chosen on the validation split, per relation with a
  data-set-wide fallback, exactly as that paper selects them.

Both see the background only through :meth:`tpar.graph.background.Background.edges_from`, so the
leakage rules of the setting hold for them as for the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from tqdm.auto import tqdm

from tpar.errors import DataError, finite_number, number_in
from tpar.graph.background import Background
from tpar.data.kg import TemporalKG
from tpar.evaluation.filtering import TimeAwareFilter
from tpar.evaluation.protocol import check_background, evaluation_queries
from tpar.evaluation.ranks import filtered_ranks
from tpar.graph.queries import QueryBatch, Setting


def _geometric(lmbda: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """Σ_{j=0}^{n−1} 2^(−λ·j) for ``count`` n ≥ 0 (elementwise, float64): (1 − qⁿ)/(1 − q) with q = 2^(−λ),
    written with expm1 so that a λ near 0 keeps its precision; n when λ = 0."""
    x = lmbda * math.log(2.0)
    safe = torch.where(x > 0, x, torch.ones_like(x))
    return torch.where(x > 0, torch.expm1(-count * safe) / torch.expm1(-safe), count)


def recency_normaliser(t_q: torch.Tensor, lmbda: torch.Tensor, first: float, last: float, *,
                       before_only: bool) -> torch.Tensor:
    """(B,) Σ_k 2^(−λ·|t_q − k|) over the time steps k = ``first`` .. ``last`` of the background (only k < t_q
    when ``before_only``): ψ's denominator, in closed form -- two geometric series and the step t_q itself --
    so that its cost does not grow with the span of the times (a data set of unix seconds spans 10⁹ steps).
    ``t_q`` and ``lmbda`` (B,) float64."""
    end = last + 1.0  # k in [first, end)

    def series(nearest: torch.Tensor, count: torch.Tensor) -> torch.Tensor:  # count steps, the nearest at distance
        value = torch.pow(2.0, -lmbda * nearest.clamp_min(1.0)) * _geometric(lmbda, count)
        return torch.where(count > 0, value, torch.zeros_like(value))

    hi = torch.clamp(t_q, min=first, max=end)  # the steps before t_q: [first, hi)
    before = series(t_q - hi + 1.0, hi - first)
    if before_only:
        return before
    lo = torch.clamp(t_q + 1.0, min=first, max=end)  # the steps after t_q: [lo, end)
    after = series(lo - t_q, end - lo)
    at = ((t_q >= first) & (t_q < end)).double()
    return before + at + after


def _direct_links(batch: QueryBatch, background: Background) -> tuple[torch.Tensor, torch.Tensor]:
    """Admitted links (s, r, e, t') that leave each query's subject with the query's relation."""
    b = len(batch)
    edges, owner = background.edges_from(batch.subject, torch.arange(b), batch)
    keep = background.index.rel[edges] == batch.relation[owner]
    return edges[keep], owner[keep]


#: a model ahead of the frequency baseline by less than this (MRR points) is said to be level with it
LEVEL_MARGIN = 0.1


def ahead_text(model: float, base: float) -> str:
    """How a model that scores ``model`` MRR (a fraction) above the baseline's ``base`` stands, in words: "beats it
    by 2.31 points", or "is level with it (0.03 points ahead)" for a margin under :data:`LEVEL_MARGIN` (a
    walk-through read "beats it by 0.03 points" beside "no better than a uniform guess")."""
    gap = 100 * (model - base)
    return f"is level with it ({gap:.2f} points ahead)" if gap < LEVEL_MARGIN else f"beats it by {gap:.2f} points"


def frequency_comparison(metrics: dict, stored: dict | None = None, kg=None) -> list[tuple[str, float, float]]:
    """(setting, the model's test MRR, the frequency baseline's) for each setting a checkpoint's ``metrics`` hold a
    realistic test MRR for: the baseline's as its training run stored it (``stored``: ``extra["baseline_test"]``),
    else measured now on ``kg`` (skipped without it)."""
    from tpar.evaluation.chance import test_figures
    from tpar.evaluation.protocol import evaluate

    out = []
    for setting, m in test_figures(metrics).items():
        model = m["mrr"]
        entry = stored.get(setting) if isinstance(stored, dict) else None
        base = entry.get("mrr") if isinstance(entry, dict) else None
        if not number_in(base, 0, 1):
            if kg is None:
                continue
            base = evaluate(kg, FrequencyBaseline(), setting, "test", progress=False).metrics("realistic").mrr
        out.append((setting, float(model), float(base)))
    return out


class FrequencyBaseline:
    """score(e | s, r, t_q) = #{(s, r, e, t') in the query's background}."""

    name = "frequency"

    def score(self, batch: QueryBatch, background: Background) -> torch.Tensor:
        edges, owner = _direct_links(batch, background)
        scores = torch.zeros(len(batch), background.num_entities)
        scores.index_put_((owner, background.index.dst[edges]), torch.ones(owner.shape[0]), accumulate=True)
        return scores

    def params(self) -> dict:
        return {}


@dataclass
class RecurrencyBaseline:
    """α·ψ_λ + (1 − α)·ξ (see the module docstring). ``per_relation`` maps a relation id in
    [0, 2R) to its own (λ, α); others use (``lmbda``, ``alpha``)."""

    lmbda: float = 0.1
    alpha: float = 0.99
    per_relation: dict[int, tuple[float, float]] = field(default_factory=dict)
    name: str = "recurrency"
    fit_info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._xi_cache: tuple | None = None
        self._by_time: tuple | None = None

    # -- components -------------------------------------------------------------------------------
    def psi(self, batch: QueryBatch, background: Background, lmbda: torch.Tensor) -> torch.Tensor:
        """(B, E) recency-weighted recurrence ψ_λ; ``lmbda`` (B,) per query."""
        edges, owner = _direct_links(batch, background)
        ix = background.index
        dt = (batch.time[owner].double() - ix.time[edges].double()).abs()  # in float64: no int64 overflow
        w = torch.pow(2.0, -lmbda[owner].double() * dt)
        num = torch.zeros(len(batch), background.num_entities, dtype=torch.float64)
        num.index_put_((owner, ix.dst[edges]), w, accumulate=True)
        # normaliser: sum over every time step k of the background (k < t_q when extrapolating)
        first, last = float(ix.time_min), float(ix.time_min + ix.time_span - 2)
        denom = recency_normaliser(batch.time.double(), lmbda.double(), first, last,
                                   before_only=background.setting is Setting.EXTRAPOLATION).clamp_min(1e-15)
        return (num / denom.unsqueeze(1)).float()

    def xi(self, batch: QueryBatch, background: Background) -> torch.Tensor:
        """(B, E) share of the background's links of relation r that end in each entity."""
        E = background.num_entities
        out = torch.zeros(len(batch), E)
        if background.setting is Setting.INTERPOLATION:
            counts = self._counts(background, None)
            num = counts[batch.relation].clone()
            own = background.own_fact_present(batch)  # discount the query's own fact
            rows = torch.nonzero(own).squeeze(1)
            num[rows, batch.answer[rows]] -= 1
            den = num.sum(1, keepdim=True)
            return torch.where(den > 0, num / den.clamp_min(1), out)
        for t in torch.unique(batch.time).tolist():
            rows = torch.nonzero(batch.time == t).squeeze(1)
            counts = self._counts(background, t)
            num = counts[batch.relation[rows]]
            den = num.sum(1, keepdim=True)
            out[rows] = torch.where(den > 0, num / den.clamp_min(1), out[rows])
        return out

    def _counts(self, background: Background, before: int | None) -> torch.Tensor:
        """(2R, E) link counts per (relation, destination), over links with time < ``before``. The caches
        hold the index itself (compared by identity), never its ``id``: a later index (a what-if's, or an
        interpolation question's own) may reuse a freed one's id, and must never read its counts. Each cache
        is read once into a local, so a thread that replaces it meanwhile cannot mix two entries."""
        ix = background.index
        cached = self._xi_cache
        if cached is not None and cached[0] is ix and cached[1] == before:
            return cached[2]
        by_time = self._by_time
        if by_time is None or by_time[0] is not ix:
            order = torch.argsort(ix.time, stable=True)
            by_time = self._by_time = (ix, ix.time[order], ix.rel[order] * ix.num_entities + ix.dst[order])
        _, times, flat = by_time
        n = len(times) if before is None else int(torch.searchsorted(times, torch.tensor(before)))
        counts = torch.bincount(flat[:n], minlength=2 * ix.num_relations * ix.num_entities).float()
        counts = counts.view(2 * ix.num_relations, ix.num_entities)
        self._xi_cache = (ix, before, counts)
        return counts

    # -- ranking ----------------------------------------------------------------------------------
    def _params_for(self, relation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lam = torch.full(relation.shape, float(self.lmbda), dtype=torch.float64)
        alp = torch.full(relation.shape, float(self.alpha), dtype=torch.float64)
        for i, r in enumerate(relation.tolist()):
            if r in self.per_relation:
                lam[i], alp[i] = self.per_relation[r]
        return lam, alp

    def score(self, batch: QueryBatch, background: Background) -> torch.Tensor:
        lam, alp = self._params_for(batch.relation)
        psi, xi = self.psi(batch, background, lam), self.xi(batch, background)
        a = alp.float().unsqueeze(1)
        return a * psi + (1 - a) * xi

    def params(self) -> dict:
        return {"lambda": self.lmbda, "alpha": self.alpha, "fit": self.fit_info,
                "per_relation": {str(r): {"lambda": l, "alpha": a} for r, (l, a) in sorted(self.per_relation.items())}}

    @classmethod
    def from_params(cls, d: dict, num_relations: int) -> "RecurrencyBaseline":
        """The baseline :meth:`params` describe, every value checked (a ValueError names the first that is
        not a finite λ ≥ 0, an α in 0..1, or a relation id in [0, 2R))."""
        def number(name: str, value: object, lo: float, hi: float = math.inf) -> float:
            if not (finite_number(value) and lo <= value <= hi):
                raise ValueError(f"{name} {str(value)[:40]!r} is not a finite number in {lo:g}..{hi:g}")
            return float(value)

        if not isinstance(d, dict):
            raise ValueError("the recurrency parameters are not an object")
        per = d.get("per_relation", {})
        if not isinstance(per, dict):
            raise ValueError("per_relation is not an object")
        rel = {}
        for key, v in per.items():
            if not (isinstance(key, str) and key.isdigit() and int(key) < 2 * num_relations):
                raise ValueError(f"per_relation key {key!r} is not a relation id in 0..{2 * num_relations - 1}")
            if not isinstance(v, dict):
                raise ValueError(f"per_relation {key} is not an object")
            rel[int(key)] = (number(f"per_relation {key} lambda", v.get("lambda"), 0.0),
                             number(f"per_relation {key} alpha", v.get("alpha"), 0.0, 1.0))
        fit = d.get("fit", {})
        if isinstance(fit, dict) and "queries" in fit and (isinstance(fit["queries"], bool)
                                                           or not isinstance(fit["queries"], int)):
            raise ValueError(f"fit queries {str(fit['queries'])[:40]!r} is not a count")
        return cls(number("lambda", d.get("lambda"), 0.0), number("alpha", d.get("alpha"), 0.0, 1.0), rel,
                   fit_info=fit if isinstance(fit, dict) else {})


#: grids searched by :func:`fit_recurrency` (λ per time step of the data)
LAMBDA_GRID = (0.0, 0.001, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
ALPHA_GRID = (0.0, 0.5, 0.9, 0.99, 0.999, 0.99999, 1.0)


def fit_recurrency(kg: TemporalKG, setting: Setting | str, *, split: str = "valid", per_relation: bool = True,
                   lambdas: tuple[float, ...] = LAMBDA_GRID, alphas: tuple[float, ...] = ALPHA_GRID,
                   max_queries: int = 20000, min_relation_queries: int = 5, seed: int = 0,
                   batch_size: int = 256, progress: bool = True,
                   on_step: Callable[[int, int], None] | None = None) -> RecurrencyBaseline:
    """Choose λ and α by grid search on ``split`` (realistic MRR), data-set wide and, with
    ``per_relation``, for each relation id with at least ``min_relation_queries`` queries.
    At most ``max_queries`` (a seeded random subset; 0: all) are used, to bound the cost on large data; a
    :class:`DataError` when ``split`` has no questions to fit on."""
    setting = Setting.parse(setting)
    check_background(kg, setting)
    queries = evaluation_queries(kg, split)
    if max_queries < 0:
        raise DataError(f"max_queries {max_queries} is below 0 (0: all the questions)")
    if not len(queries):
        raise DataError(f"{kg.name} has no {split} questions to fit the recurrency baseline on")
    if max_queries and len(queries) > max_queries:
        keep = torch.from_numpy(np.sort(np.random.default_rng(seed).choice(len(queries), max_queries, replace=False)))
        queries = queries[keep]
    background = Background.for_evaluation(kg, setting)
    filt = TimeAwareFilter(kg.all_facts(), kg.num_entities, kg.num_relations)
    model = RecurrencyBaseline()
    n = len(queries)
    rr = np.zeros((len(lambdas), len(alphas), n))  # reciprocal realistic ranks
    total = len(lambdas) * ((n + batch_size - 1) // batch_size)
    bar = tqdm(total=total, desc="fit recurrency", disable=not progress, mininterval=1.0)
    step = 0
    for start in range(0, n, batch_size):
        batch = queries[slice(start, start + batch_size)]
        rows, cols = filt.pairs(batch)
        xi = model.xi(batch, background)
        for i, lam in enumerate(lambdas):
            psi = model.psi(batch, background, torch.full((len(batch),), lam, dtype=torch.float64))
            for j, a in enumerate(alphas):
                o, p = filtered_ranks(a * psi + (1 - a) * xi, batch.answer, rows, cols)
                rr[i, j, start:start + len(batch)] = (2.0 / (o + p)).numpy()
            step += 1
            bar.update(1)
            if on_step:
                on_step(step, total)
    bar.close()
    mean = rr.mean(2)
    i, j = np.unravel_index(np.argmax(mean), mean.shape)
    model.lmbda, model.alpha = float(lambdas[i]), float(alphas[j])
    if per_relation:
        rel = queries.relation.numpy()
        for r in np.unique(rel):
            m = rel == r
            if m.sum() < min_relation_queries:
                continue
            sub = rr[:, :, m].mean(2)
            ri, rj = np.unravel_index(np.argmax(sub), sub.shape)
            if sub[ri, rj] > sub[i, j]:
                model.per_relation[int(r)] = (float(lambdas[ri]), float(alphas[rj]))
    model.fit_info = {"split": split, "queries": int(n), "mrr_global": float(mean[i, j]),
                      "lambdas": list(lambdas), "alphas": list(alphas)}
    return model


BASELINES = ("frequency", "recurrency")
