"""Per planted rule on the sample world's chronological test split: how many test queries a rule
produced, and Hits@1 / MRR (realistic) of a TPAR checkpoint next to the frequency and recurrency
baselines.

* ``--setting extrapolation`` (default): the evaluation protocol (every fact before t_q).
* ``--setting interpolation``: leave-one-out gap filling on the same test weeks: each query sees
  every other known fact, before or after t_q (all splits), except its own fact and that fact's
  inverse. (The protocol's interpolation background is the training split only, which on a
  chronological split hides the whole test weeks, same-day bodies included.) The model never
  trained on these facts; TPAR and the baselines get the same background.

    python benchmarks/sample_world_rules.py --checkpoint checkpoints/sample-world-unified.tpar [--setting S] [--json FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

from tpar.graph.background import Background
from tpar.evaluation.baselines import FrequencyBaseline, fit_recurrency
from tpar.model.checkpoint import Checkpoint
from tpar.evaluation.protocol import evaluate
from tpar.model.ranker import ModelRanker
from tpar.data.loading import load_dataset

ROOT = Path(__file__).resolve().parent.parent / "sample_data" / "world"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--setting", default="extrapolation", choices=["extrapolation", "interpolation"])
    ap.add_argument("--json")
    args = ap.parse_args()
    kg = load_dataset(ROOT / "chronological")
    label = {}
    with open(ROOT / "provenance.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            key = (kg.entities.id(row["subject"]), kg.relations.id(row["relation"]), kg.entities.id(row["object"]),
                   kg.time_axis.parse(row["time"]))
            label[key] = row["rule"]
    ck = Checkpoint.load(args.checkpoint)
    st = args.setting
    bg = (Background.from_facts(kg.all_facts(), kg.num_entities, kg.num_relations, st) if st == "interpolation"
          else None)
    rec = fit_recurrency(kg, "extrapolation", progress=False)  # λ, α from valid (interpolation's needs train-only)
    results = {"TPAR": evaluate(kg, ModelRanker(ck.build_model()), st, "test", progress=False, background=bg),
               "frequency": evaluate(kg, FrequencyBaseline(), st, "test", progress=False, background=bg),
               "recurrency": evaluate(kg, rec, st, "test", progress=False, background=bg)}
    R = kg.num_relations
    q = results["TPAR"].queries
    rules = []
    for s, r, a, t, d in q.tolist():
        fact = (s, r, a, t) if d == 0 else (a, r - R, s, t)
        rules.append(label[fact])
    rules = np.array(rules)
    table = {}
    for rule in sorted(set(rules)):
        m = rules == rule
        table[rule] = {"queries": int(m.sum())}
        for name, res in results.items():
            met = res.metrics("realistic", m)
            table[rule][name] = {"hits@1": met.hits[1], "mrr": met.mrr}
    table["all"] = {"queries": int(len(rules)), **{n: {"hits@1": r.metrics().hits[1], "mrr": r.metrics().mrr}
                                                  for n, r in results.items()}}
    print("| rule | test queries | TPAR H@1 | frequency H@1 | recurrency H@1 | TPAR MRR | frequency MRR | recurrency MRR |")
    print("|---|---|---|---|---|---|---|---|")
    for rule, v in table.items():
        print(f"| {rule} | {v['queries']} | " + " | ".join(f"{100 * v[n]['hits@1']:.1f}" for n in results) + " | "
              + " | ".join(f"{100 * v[n]['mrr']:.1f}" for n in results) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=2))


if __name__ == "__main__":
    main()
