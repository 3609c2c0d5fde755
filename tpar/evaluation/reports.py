"""Evaluation results written for people and spreadsheets.

Every CSV written for a person goes through :func:`spreadsheet_safe`: a text cell that a spreadsheet
would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) gets a
leading apostrophe, so a name from an untrusted file can never become a formula (OWASP's advice).
Data set files (``save_dataset``) are the user's own data and round-trip unchanged."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Mapping

from tpar.data.kg import TemporalKG
from tpar.evaluation.protocol import EvaluationResult
from tpar.evaluation.ranks import RANK_TYPES


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """``value`` for a CSV cell: text that would start a formula gets a leading apostrophe; anything
    else (numbers included) is returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_text(rows: list[dict] | list[list], header: list[str] | None = None) -> str:
    """A CSV document of ``rows`` (dicts, or lists with ``header``) with every cell spreadsheet-safe."""
    buf = io.StringIO()
    w = csv.writer(buf)  # RFC 4180 line ends: a cell holding \r or \n is quoted, never split
    if rows and isinstance(rows[0], dict):
        header = header or list(rows[0])
        rows = [[r.get(k) for k in header] for r in rows]
    if header:
        w.writerow([spreadsheet_safe(h) for h in header])
    for r in rows:
        w.writerow([spreadsheet_safe(v) for v in r])
    return buf.getvalue()


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
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(csv_text(rows, ["subject", "relation", "object", "time", "direction", "optimistic", "pessimistic",
                                   "realistic"]), encoding="utf-8")
    tmp.replace(path)


def metrics_rows(results: Mapping[str, EvaluationResult]) -> list[dict]:
    """One row per method and rank type: MRR and Hits@1/3/10 in percent."""
    return [{"method": name, "ties": mode, "mrr": 100 * m.mrr, **{f"hits@{k}": 100 * v for k, v in m.hits.items()}}
            for name, res in results.items() for mode in RANK_TYPES for m in [res.metrics(mode)]]


def relation_rows(results: Mapping[str, EvaluationResult]) -> list[dict]:
    """One row per method and base relation: realistic MRR in percent and the number of queries."""
    return [{"relation": rel, "method": name, "MRR": 100 * modes["realistic"].mrr, "queries": modes["realistic"].count}
            for name, res in results.items() for rel, modes in res.by_relation().items()]
