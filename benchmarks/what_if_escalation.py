"""What-if on the sample world's escalation rule: for every test fact (B, Mobilize against, A, t) the
rule produced, remove its body -- every (A, Threaten, B, t') with t − 3 ≤ t' ≤ t − 1 -- and ask
(B, Mobilize against, ?, t) again (extrapolation): how often does the planted answer A leave rank 1?

    python benchmarks/what_if_escalation.py --checkpoint checkpoints/sample-world-unified.tpar
"""

from __future__ import annotations

import argparse
import csv

import torch

from tpar.data.catalog import sample_dir
from tpar.data.loading import load_dataset
from tpar.evaluation.ranks import realistic_rank
from tpar.graph.queries import Question
from tpar.model.checkpoint import Checkpoint
from tpar.reasoning.prediction import Predictor


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    world = sample_dir() / "world"
    kg = load_dataset(world / "chronological")
    p = Predictor(Checkpoint.load(args.checkpoint), kg, "cpu")
    axis = kg.time_axis
    test = {tuple(f) for f in kg.facts("test").tolist()}
    with open(world / "provenance.csv", encoding="utf-8", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["rule"] == "escalation"]
    facts = kg.all_facts()
    threaten = kg.relations.id("Threaten")
    asked = first_before = dropped = 0
    for r in rows:
        b, a, t = kg.entities.id(r["subject"]), kg.entities.id(r["object"]), axis.parse(r["time"])
        if (b, kg.relations.id(r["relation"]), a, t) not in test:
            continue
        body = facts[(facts[:, 0] == a) & (facts[:, 1] == threaten) & (facts[:, 2] == b)
                     & (facts[:, 3] >= t - 3) & (facts[:, 3] <= t - 1)]
        q = Question(r["subject"], r["relation"], r["time"], "object", "extrapolation")
        asked += 1
        ranks = []
        for data in (None, facts[~((facts[:, 0] == a) & (facts[:, 1] == threaten) & (facts[:, 2] == b)
                                   & (facts[:, 3] >= t - 3) & (facts[:, 3] <= t - 1))]):
            prepared = p.prepare(q, data)
            with torch.no_grad():
                s = p.model(prepared.batch, prepared.background)[0].float()
            ranks.append(realistic_rank(s, float(s[a])))
        if ranks[0] == 1:
            first_before += 1
            dropped += ranks[1] > 1
        assert len(body) >= 1
    print(f"escalation test facts: {asked}; planted answer first before: {first_before}; after removing the "
          f"threat(s): out of rank 1 in {dropped} of {first_before} ({100 * dropped / max(first_before, 1):.1f}%)")


if __name__ == "__main__":
    main()
