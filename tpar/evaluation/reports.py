"""Evaluation results written for people and spreadsheets, through the one formula-safe CSV writer
(:mod:`tpar.data.outputs`: :func:`spreadsheet_safe`, :func:`csv_text`, re-exported here)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from tpar.data.kg import TemporalKG
from tpar.data.outputs import FORMULA_START, csv_text, spreadsheet_safe, write_csv  # noqa: F401 (re-exported)
from tpar.evaluation.protocol import EvaluationResult
from tpar.evaluation.ranks import RANK_TYPES


def write_ranks_csv(res: EvaluationResult, kg: TemporalKG, path: str | Path) -> None:
    """One row per query: its fact, direction and three ranks (atomic write)."""
    R = kg.num_relations
    rows = []
    real = res.realistic
    for i, (q_s, q_r, ans, t, d) in enumerate(res.queries.tolist()):
        r = q_r % R
        s, o = (q_s, ans) if d == 0 else (ans, q_s)
        rows.append([kg.entities.name(s), kg.relations.name(r), kg.entities.name(o), kg.time_axis.label(t),
                     "object" if d == 0 else "subject", int(res.optimistic[i]), int(res.pessimistic[i]), f"{real[i]:g}"])
    write_csv(path, rows, ["subject", "relation", "object", "time", "direction", "optimistic", "pessimistic",
                           "realistic"], "ranks CSV")


def metrics_rows(results: Mapping[str, EvaluationResult]) -> list[dict]:
    """One row per method and rank type: MRR and Hits@1/3/10 in percent."""
    return [{"method": name, "ties": mode, "mrr": 100 * m.mrr, **{f"hits@{k}": 100 * v for k, v in m.hits.items()}}
            for name, res in results.items() for mode in RANK_TYPES for m in [res.metrics(mode)]]


def relation_rows(results: Mapping[str, EvaluationResult]) -> list[dict]:
    """One row per method and base relation: realistic MRR in percent and the number of queries."""
    return [{"relation": rel, "method": name, "MRR": 100 * modes["realistic"].mrr, "queries": modes["realistic"].count}
            for name, res in results.items() for rel, modes in res.by_relation().items()]
