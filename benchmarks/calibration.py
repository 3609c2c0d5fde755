"""Calibration and answer sets on a test split: TPAR's stored calibration (fitted on valid) and, for
comparison, the frequency baseline calibrated and given conformal sets the same way.

    python benchmarks/calibration.py --checkpoint checkpoints/icews14-extrapolation.tpar \\
        --data ../shared/datasets/extrapolation/ICEWS14 --setting extrapolation
"""

from __future__ import annotations

import argparse

import torch

from tpar.data.loading import load_dataset
from tpar.evaluation.baselines import FrequencyBaseline
from tpar.evaluation.calibration import calibrate, held_out, stored
from tpar.model.checkpoint import Checkpoint
from tpar.model.ranker import ModelRanker


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--setting", default="extrapolation", choices=["extrapolation", "interpolation"])
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    kg = load_dataset(args.data)
    ck = Checkpoint.load(args.checkpoint)
    tpar_cal = stored(ck.extra, args.setting) or calibrate(kg, ModelRanker(ck.build_model()), args.setting)
    rows = {"TPAR": held_out(kg, ModelRanker(ck.build_model()), tpar_cal, "test")}
    freq = FrequencyBaseline()
    rows["frequency"] = held_out(kg, freq, calibrate(kg, freq, args.setting), "test")
    print(f"{kg.name}, {args.setting}, test ({rows['TPAR'].after.queries:,} questions); temperatures and set "
          "thresholds fitted on valid\n")
    print("| method | T | ECE before → after | Brier before → after | NLL before → after | "
          "80% sets: coverage / size | 90% | 95% |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        b, a = r.before, r.after
        sets = " | ".join(f"{100 * r.coverage[k]:.1f}% / {r.mean_set_size[k]:.1f}" for k in ("0.8", "0.9", "0.95"))
        print(f"| {name} | {r.temperature:.3f} | {b.ece:.4f} → {a.ece:.4f} | {b.brier:.4f} → {a.brier:.4f} | "
              f"{b.nll:.3f} → {a.nll:.3f} | {sets} |")


if __name__ == "__main__":
    main()
