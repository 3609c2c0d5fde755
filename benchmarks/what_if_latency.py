"""What-if latency: a test question re-answered with one of its subject's earlier facts removed
(the background index rebuilt without it, then one forward pass).

    python benchmarks/what_if_latency.py --checkpoint checkpoints/icews14-extrapolation.tpar \\
        --data ../shared/datasets/extrapolation/ICEWS14 [--questions 30]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from tpar.data.loading import load_dataset
from tpar.model.checkpoint import Checkpoint
from tpar.reasoning.prediction import Predictor


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--questions", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    kg = load_dataset(args.data)
    p = Predictor(Checkpoint.load(args.checkpoint), kg, "cpu")
    facts, axis = kg.all_facts(), kg.time_axis
    name = kg.entities.name
    plain, what_if = [], []
    for s, r, o, t in kg.facts("test")[: args.questions + 1].tolist():
        prior = facts[(facts[:, 0] == s) & (facts[:, 3] < t)][-1:]
        without = [(name(int(a)), kg.relations.name(int(b)), name(int(c)), axis.label(int(d))) for a, b, c, d in prior]
        q = (name(s), kg.relations.name(r), axis.label(t))
        t0 = time.perf_counter()
        p.predict(*q, setting="extrapolation")
        t1 = time.perf_counter()
        p.predict(*q, setting="extrapolation", without=without)
        t2 = time.perf_counter()
        plain.append(t1 - t0)
        what_if.append(t2 - t1)
    plain, what_if = plain[1:], what_if[1:]  # the first call warms caches
    print(f"{kg.name}, {len(what_if)} questions, {args.threads} thread(s): answer median {1000 * np.median(plain):.0f} ms; "
          f"what-if median {1000 * np.median(what_if):.0f} ms, p95 {1000 * np.percentile(what_if, 95):.0f} ms")


if __name__ == "__main__":
    main()
