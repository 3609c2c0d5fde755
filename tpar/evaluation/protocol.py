"""The evaluation protocol every ranker goes through.

* Queries: each fact (s, r, o, t) of the split gives (s, r, ?, t) -> o and (o, r^-1, ?, t) -> s.
* Time-aware filter: the other true answers of the same (subject, relation, time) in
  train ∪ valid ∪ test are removed from the candidates before ranking.
* Ranks in three tie modes over the remaining candidates, with a = the answer's score:
  optimistic = 1 + #(score > a); pessimistic = #(score >= a), the answer included;
  realistic = (optimistic + pessimistic) / 2, the expected rank under random tie-breaking.
  Realistic is the headline. Candidates a model never reached share one score, so they tie with
  an unreached answer and cannot help it.
* MRR = mean(1 / rank); Hits@k = share of queries with rank <= k (on the fractional realistic
  rank). Reported overall, per direction and per relation.
"""

from __future__ import annotations

import json
import time as _time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Protocol

import numpy as np
import torch
from tqdm.auto import tqdm

from tpar.graph.background import Background
from tpar.data.kg import TemporalKG
from tpar.errors import DataError, plural
from tpar.evaluation.filtering import TimeAwareFilter
from tpar.evaluation.ranks import RANK_TYPES, RankingMetrics, RankType, filtered_ranks
from tpar.graph.queries import DIRECTION_NAMES, QueryBatch, Setting, make_queries



class Ranker(Protocol):
    """Anything that scores every entity for a batch of queries."""

    name: str

    def score(self, batch: QueryBatch, background: Background) -> torch.Tensor:
        """(B, num_entities) float scores; higher is better. Never NaN."""
        ...


@dataclass
class EvaluationResult:
    """Ranks of every query and the metrics derived from them (values are fractions in [0, 1])."""

    setting: str
    split: str
    method: str
    dataset: str
    fingerprint: str
    queries: np.ndarray  # (Q, 5) int64: subject, relation (in [0, 2R)), answer, time, direction
    optimistic: np.ndarray  # (Q,)
    pessimistic: np.ndarray  # (Q,)
    relation_names: tuple[str, ...]
    seconds: float = 0.0
    params: dict = field(default_factory=dict)
    calibration: dict | None = None  # tpar.evaluation.calibration.HeldOutReport.to_dict(), when measured

    @property
    def realistic(self) -> np.ndarray:
        return (self.optimistic + self.pessimistic) / 2.0

    @property
    def num_queries(self) -> int:
        return int(len(self.optimistic))

    def ranks(self, mode: RankType) -> np.ndarray:
        if mode not in RANK_TYPES:
            raise ValueError(f"unknown tie mode {mode!r}")
        return getattr(self, mode)

    def metrics(self, mode: RankType = "realistic", mask: np.ndarray | None = None) -> RankingMetrics:
        r = self.ranks(mode)
        return RankingMetrics.from_ranks(r if mask is None else r[mask])

    def by_direction(self) -> dict[str, dict[RankType, RankingMetrics]]:
        d = self.queries[:, 4]
        return {name: {m: self.metrics(m, d == i) for m in RANK_TYPES} for i, name in enumerate(DIRECTION_NAMES)}

    def by_relation(self) -> dict[str, dict[RankType, RankingMetrics]]:
        """Per base relation, both directions together (subject queries use r + R)."""
        R = len(self.relation_names)
        base = self.queries[:, 1] % R
        return {self.relation_names[r]: {m: self.metrics(m, base == r) for m in RANK_TYPES}
                for r in np.unique(base)}

    def to_dict(self, per_relation: bool = True) -> dict:
        out: dict = {
            "setting": self.setting,
            "split": self.split,
            "method": self.method,
            "dataset": self.dataset,
            "fingerprint": self.fingerprint,
            "num_queries": self.num_queries,
        }
        for m in RANK_TYPES:
            d = self.metrics(m).to_dict()
            d.pop("count")
            out[m] = d
        out["by_direction"] = {k: {m: v.to_dict() for m, v in modes.items()} for k, modes in self.by_direction().items()}
        if per_relation:
            out["by_relation"] = {k: {m: v.to_dict() for m, v in modes.items()} for k, modes in self.by_relation().items()}
        out["params"] = self.params
        out["seconds"] = round(self.seconds, 3)
        if self.calibration is not None:
            out["calibration"] = self.calibration
        return out

    def write_json(self, path: str | Path) -> None:
        """Atomic write of :meth:`to_dict` as JSON."""
        from tpar.data.outputs import write_text

        write_text(path, json.dumps(self.to_dict(), indent=2, allow_nan=False), "JSON file")  # NaN is not JSON

    def summary(self) -> str:
        lines = [f"{self.method} | {self.dataset} | {self.setting} | {self.split} | {self.num_queries} queries "
                 f"| {self.seconds:.1f} s"]
        lines.append(f"{'':12s} {'MRR':>7s} {'H@1':>7s} {'H@3':>7s} {'H@10':>7s}")
        for m in RANK_TYPES:
            x = self.metrics(m)
            lines.append(f"{m:12s} {100 * x.mrr:7.2f} {100 * x.hits[1]:7.2f} {100 * x.hits[3]:7.2f} {100 * x.hits[10]:7.2f}")
        for name, modes in self.by_direction().items():
            x = modes["realistic"]
            if not x.count:
                lines.append(f"  {name + ' q.':10s} no questions")
                continue
            lines.append(f"  {name + ' q.':10s} {100 * x.mrr:7.2f} {100 * x.hits[1]:7.2f} {100 * x.hits[3]:7.2f} "
                         f"{100 * x.hits[10]:7.2f}  (realistic, {plural(x.count, 'query', 'queries')})")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# the evaluator
# ---------------------------------------------------------------------------------------------------
def evaluation_queries(kg: TemporalKG, split: str) -> QueryBatch:
    """Both directions of every fact of ``split``, ordered by time (so per-time caches stay warm)."""
    facts = kg.facts(split)
    if len(facts) == 0:
        raise DataError(f"{kg.name}: the {split} split is missing or empty")
    q = make_queries(facts, kg.num_relations)
    order = torch.sort(q.time, stable=True).indices
    return q[order]


def check_background(kg: TemporalKG, setting: Setting) -> None:
    """Refuse settings whose background the data cannot provide."""
    if setting is Setting.INTERPOLATION and "train" in kg.missing_splits:
        raise DataError(f"{kg.name}: the train split is missing, so interpolation queries have no background "
                         "(interpolation sees the training facts only)")


def shard_positions(n: int, batch_size: int, rank: int, world: int) -> np.ndarray:
    """Positions of the queries a rank scores: the batches of ``batch_size`` numbered rank, rank + world, ..."""
    pos = np.arange(n)
    return pos[(pos // batch_size) % world == rank]


def evaluate(kg: TemporalKG, ranker: Ranker, setting: Setting | str, split: str = "test", *,
             batch_size: int = 256, progress: bool = True, background: Background | None = None,
             on_batch: Callable[[int, int], None] | None = None, params: dict | None = None,
             max_queries: int = 0, seed: int = 0,
             on_scores: Callable[[QueryBatch, torch.Tensor, torch.Tensor, torch.Tensor], None] | None = None,
             shard: tuple[int, int] | None = None) -> EvaluationResult:
    """Rank every query of ``split`` with ``ranker`` under ``setting``; see the module docstring.

    ``max_queries`` > 0 ranks a seeded random subset of that many queries (validation during
    training); the result's params record it. ``on_scores(batch, scores (B, E), rows, cols)`` sees
    each batch's raw scores with the time-aware filter's (row, entity) pairs (e.g. for calibration).
    ``shard=(r, N)``: only the batches r, r+N, ... (:func:`shard_positions`, of the possibly subsetted
    list), one rank's part of a distributed evaluation (``tpar.training.distributed`` reassembles it);
    the batches are those one process would score, so the scores are the same to the bit."""
    setting = Setting.parse(setting)
    check_background(kg, setting)
    t0 = _time.perf_counter()
    queries = evaluation_queries(kg, split)
    params = dict(params or {})
    if 0 < max_queries < len(queries):
        keep = np.sort(np.random.default_rng(seed).choice(len(queries), max_queries, replace=False))
        queries = queries[torch.from_numpy(keep)]
        params["subset"] = {"queries": int(max_queries), "seed": int(seed)}
    if shard is not None:  # whole batches, dealt round-robin: each batch is the one a single process scores
        queries = queries[torch.from_numpy(shard_positions(len(queries), batch_size, *shard))]
        params["shard"] = {"rank": int(shard[0]), "of": int(shard[1])}
    background = background or Background.for_evaluation(kg, setting)
    filt = TimeAwareFilter(kg.all_facts(), kg.num_entities, kg.num_relations)
    n = len(queries)
    opt = np.zeros(n)
    pes = np.zeros(n)
    bar = tqdm(total=n, desc=f"{ranker.name} {split}", unit="q", disable=not progress, mininterval=1.0)
    for start in range(0, n, batch_size):
        batch = queries[slice(start, start + batch_size)]
        scores = ranker.score(batch, background)
        if scores.shape != (len(batch), kg.num_entities):
            raise ValueError(f"ranker returned scores of shape {tuple(scores.shape)}, "
                             f"expected {(len(batch), kg.num_entities)}")
        rows, cols = filt.pairs(batch)
        if on_scores:
            on_scores(batch, scores, rows, cols)
        o, p = filtered_ranks(scores, batch.answer, rows, cols)
        opt[start:start + len(batch)] = o.numpy()
        pes[start:start + len(batch)] = p.numpy()
        bar.update(len(batch))
        if on_batch:
            on_batch(min(start + batch_size, n), n)
    bar.close()
    qarr = torch.stack([queries.subject, queries.relation, queries.answer, queries.time, queries.direction], 1).numpy()
    return EvaluationResult(setting=setting.value, split=split, method=ranker.name, dataset=kg.name,
                            fingerprint=kg.fingerprint, queries=qarr, optimistic=opt, pessimistic=pes,
                            relation_names=kg.relations.names, seconds=_time.perf_counter() - t0,
                            params=params)


def compare(kg: TemporalKG, rankers: Mapping[str, Callable[[], Ranker]], setting: Setting | str, split: str = "test", *,
            max_queries: int = 0, seed: int = 0, batch_size: int = 128,
            on_progress: Callable[[str, int, int, int], None] | None = None,
            on_scores: Mapping[str, Callable[[QueryBatch, torch.Tensor, torch.Tensor, torch.Tensor], None]] | None = None,
            ) -> dict[str, EvaluationResult]:
    """Several rankers on the same queries of one split (same seeded subset for all): each entry of
    ``rankers`` builds its ranker when its turn comes (fitting a baseline may take a while).
    ``on_progress(name, method index, queries done, total)`` follows the work; ``on_scores[name]`` sees
    that ranker's scores as :func:`evaluate`'s ``on_scores`` does (e.g. a calibration report in the same pass)."""
    results: dict[str, EvaluationResult] = {}
    for i, (name, make) in enumerate(rankers.items()):
        if on_progress:
            on_progress(name, i, 0, 1)
        ranker = make()

        def tick(done: int, total: int, name: str = name, i: int = i) -> None:
            if on_progress:
                on_progress(name, i, done, total)

        results[name] = evaluate(kg, ranker, setting, split, progress=False, on_batch=tick, max_queries=max_queries,
                                 seed=seed, batch_size=batch_size, on_scores=(on_scores or {}).get(name))
    return results
