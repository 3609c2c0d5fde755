"""Do the shipped benchmark checkpoints still reproduce the test metrics recorded in them (and in their
cards)? Each one whose data set is present is evaluated again on its test split (both directions,
time-aware filter) in every setting it has a recorded figure for; realistic MRR and H@1 must agree within
0.1 points. Slow (minutes per model), so a benchmark command rather than a test:

    python benchmarks/reproduce_checkpoints.py [--threads 2] [--only icews14-interpolation ...]

Exit status 1 when a figure is off or a recorded checkpoint cannot be evaluated.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from tpar.data.benchmarks import find_data_dir
from tpar.data.loading import load_dataset
from tpar.evaluation.protocol import evaluate
from tpar.model.checkpoint import Checkpoint
from tpar.model.ranker import ModelRanker

ROOT = Path(__file__).resolve().parent.parent
DATA = {"icews14-extrapolation": "extrapolation/ICEWS14", "icews14-extrapolation-sparse": "extrapolation/ICEWS14",
        "icews14-interpolation": "interpolation/ICEWS14",
        "icews14-unified": "interpolation/ICEWS14", "yago11k-interpolation": "interpolation/YAGO11k",
        "yago-extrapolation": "extrapolation/YAGO", "wikidata12k-interpolation": "interpolation/WIKIDATA12k"}
TOLERANCE = 0.1  # percentage points


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    root = find_data_dir()
    if root is None:
        print("benchmarks not found: set TPAR_DATA_DIR or place them in ../shared/datasets")
        return 0
    bad = 0
    print("| checkpoint | setting | recorded MRR / H@1 | now MRR / H@1 | agrees (±0.1) | seconds |")
    print("|---|---|---|---|---|---|")
    for name, folder in DATA.items():
        if args.only and name not in args.only:
            continue
        ck = Checkpoint.load(ROOT / "checkpoints" / f"{name}.tpar")
        kg = load_dataset(root / folder)
        ranker = ModelRanker(ck.build_model("cpu"), "cpu")
        for key, recorded in sorted(ck.metrics.items()):
            if not key.startswith("test_") or "realistic" not in recorded:
                continue
            setting = key[len("test_"):]
            t0 = time.perf_counter()
            res = evaluate(kg, ranker, setting, "test", progress=False).metrics("realistic")
            was = 100 * recorded["realistic"]["mrr"], 100 * recorded["realistic"]["hits@1"]
            now = 100 * res.mrr, 100 * res.hits[1]
            ok = all(abs(a - b) <= TOLERANCE for a, b in zip(was, now))
            bad += not ok
            print(f"| {name} | {setting} | {was[0]:.2f} / {was[1]:.2f} | {now[0]:.2f} / {now[1]:.2f} | "
                  f"{'yes' if ok else '**no**'} | {time.perf_counter() - t0:.0f} |", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
