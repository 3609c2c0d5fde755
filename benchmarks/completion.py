"""How good are `tpar complete`'s proposals? Mask one entity of every test fact, complete the rows from
the training and validation facts (the test facts are hidden: they are what is completed), and compare
the proposals with the truth: top-1 accuracy for TPAR (calibrated probabilities) and the recurrency
baseline (fitted on valid), and how often proposals of each probability band are right.

    python benchmarks/completion.py --checkpoint checkpoints/sample-world-unified.tpar \\
        --data sample_data/world/chronological [--mask object|subject|both] [--out benchmarks/results/completion.md]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np

from tpar.data.loading import load_dataset
from tpar.data.tables import IncompleteRow
from tpar.evaluation.baselines import fit_recurrency
from tpar.model.checkpoint import Checkpoint
from tpar.reasoning.completion import complete, complete_with_checkpoint, masked_rows

BANDS = [(0.0, 0.2), (0.2, 0.5), (0.5, 0.8), (0.8, 1.01)]


def rows_and_truth(kg, facts: np.ndarray, mask: str) -> tuple[list[IncompleteRow], list[str]]:
    """Each fact as a row to complete (``both``: the object masked, then the subject) and the hidden names."""
    sides = {"object": [False], "subject": [True], "both": [False, True]}[mask]
    facts = np.repeat(facts, len(sides), axis=0)
    subject_masked = np.tile(sides, len(facts) // len(sides)).astype(bool)
    truth = np.where(subject_masked, facts[:, 0], facts[:, 2])
    return masked_rows(kg, facts, subject_masked), [kg.entities.name(int(e)) for e in truth]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--mask", default="object", choices=["object", "subject", "both"])
    ap.add_argument("--out", help="write the table as Markdown here")
    args = ap.parse_args()
    kg = load_dataset(args.data)
    ck = Checkpoint.load(args.checkpoint)
    hidden = kg.facts("test")
    known = replace(kg, splits={s: kg.facts(s) for s in ("train", "valid")})  # the test facts are what is completed
    rows, truth = rows_and_truth(kg, hidden, args.mask)
    tpar = complete_with_checkpoint(ck, known, rows, device="cpu")
    rec = complete(known, fit_recurrency(known, "extrapolation", split="valid", max_queries=2000), rows)
    truth_a = np.array(truth)
    lines = [f"# `tpar complete` on {kg.name}: every test fact's {args.mask} masked", "",
             f"`python benchmarks/completion.py --checkpoint {args.checkpoint} --data {args.data} --mask {args.mask}`", "",
             f"{len(rows):,} rows completed from the training and validation facts (the test facts hidden); settings "
             f"used: {sorted({c.setting for c in tpar})} (auto: times after the known facts are forecast). Known "
             "answers of the same question are never proposed (time-aware filter). Harder than the evaluation "
             "protocol's test figure: there each test question sees the earlier test facts (single-step "
             "forecasting); here every test fact is hidden (up to the split's whole length ahead).", "",
             "| method | top-1 accuracy % | rows without a proposal |", "|---|---|---|"]
    for name, comps in (("TPAR (" + Path(args.checkpoint).stem + ")", tpar), ("recurrency baseline", rec)):
        got = np.array([c.entity or "" for c in comps])
        lines.append(f"| {name} | {100 * np.mean(got == truth_a):.1f} | {sum(c.entity is None for c in comps):,} |")
    lines += ["", "TPAR's proposals by probability" + (" (calibrated)" if tpar and tpar[0].calibrated else " (uncalibrated)")
              + ": how many, and the share that is right.", "", "| probability | proposals | right % |", "|---|---|---|"]
    p = np.array([c.probability if c.probability is not None else -1.0 for c in tpar])
    ok = np.array([c.entity == t for c, t in zip(tpar, truth)])
    for lo, hi in BANDS:
        m = (p >= lo) & (p < hi)
        lines.append(f"| {lo:.1f}–{min(hi, 1.0):.1f} | {int(m.sum()):,} | "
                     + (f"{100 * ok[m].mean():.1f}" if m.any() else "–") + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
