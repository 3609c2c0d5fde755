"""Zero-shot transfer beside the recurrency baseline on the very same questions, compared question by question.

A checkpoint trained on one data set is evaluated on another's test questions with
``tpar evaluate --max-queries N --seed S --ranks-csv FILE`` (relations matched by name). This script fits
the recurrency baseline once on the same matched data (λ, α chosen on its valid split, as ``tpar baseline``
does), ranks each seeded sample of test questions with it, checks that the questions are exactly those
of the model's ranks file, and reports both models' metrics with a paired bootstrap 95% interval of the
MRR difference (model − recurrency). Usage::

    python benchmarks/transfer.py --checkpoint checkpoints/icews14-extrapolation.tpar \
        --data ../shared/datasets/extrapolation/ICEWS18 --sample 2000:0:tpar-ranks-2000.csv \
        --out benchmarks/results/transfer
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tpar.data.loading import load_dataset  # noqa: E402
from tpar.evaluation.baselines import fit_recurrency  # noqa: E402
from tpar.evaluation.protocol import evaluate  # noqa: E402
from tpar.evaluation.reports import write_ranks_csv  # noqa: E402
from tpar.model.checkpoint import Checkpoint  # noqa: E402

QUESTION = ("subject", "relation", "object", "time", "direction")


def read_ranks(path: Path) -> tuple[list[tuple[str, ...]], np.ndarray]:
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [tuple(r[c] for c in QUESTION) for r in rows], np.array([float(r["realistic"]) for r in rows])


def metrics(ranks: np.ndarray) -> dict:
    return {"mrr": float(np.mean(1 / ranks)), "hits@1": float(np.mean(ranks <= 1)),
            "hits@3": float(np.mean(ranks <= 3)), "hits@10": float(np.mean(ranks <= 10)), "count": int(len(ranks))}


def paired_bootstrap(a: np.ndarray, b: np.ndarray, n: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of mean(a) − mean(b) over questions resampled with replacement."""
    rng = np.random.default_rng(seed)
    d = a - b
    idx = rng.integers(0, len(d), size=(n, len(d)))
    means = d[idx].mean(1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--sample", action="append", required=True, metavar="N:SEED:RANKS_CSV",
                    help="a seeded sample of N test questions and the model's ranks file for it (repeatable)")
    ap.add_argument("--out", default="benchmarks/results/transfer")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ck = Checkpoint.load(args.checkpoint)
    kg = ck.fit(load_dataset(args.data))
    match = getattr(kg, "match", None)
    if match is not None:
        print(match.report(), file=sys.stderr)
    samples = [spec.split(":", 2) for spec in args.sample]
    rec = None
    params_file = out / "recurrency-params.json"
    if any(not (out / f"recurrency-ranks-{n}-seed{seed}.csv").is_file() for n, seed, _ in samples):
        t0 = time.perf_counter()
        rec = fit_recurrency(kg, "extrapolation", progress=False, seed=0)  # as `tpar baseline --seed 0`
        print(f"recurrency fitted on valid in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        params_file.write_text(json.dumps(rec.params(), indent=1, default=str))
    summary = []
    for n, seed, ranks_csv in samples:
        rec_csv = out / f"recurrency-ranks-{n}-seed{seed}.csv"
        if not rec_csv.is_file():  # ranked once; a later run only compares
            res = evaluate(kg, rec, "extrapolation", "test", max_queries=int(n), seed=int(seed), progress=False)
            write_ranks_csv(res, kg, rec_csv)
        if not Path(ranks_csv).is_file():
            print(f"{ranks_csv} not there yet: recurrency ranks written to {rec_csv}; run again to compare",
                  file=sys.stderr)
            continue
        q_model, r_model = read_ranks(Path(ranks_csv))
        q_rec, r_rec = read_ranks(rec_csv)
        if q_model != q_rec:
            raise SystemExit(f"{ranks_csv}: not the questions of sample {n}:{seed} (run tpar evaluate with "
                             f"--max-queries {n} --seed {seed})")
        lo, hi = paired_bootstrap(1 / r_model, 1 / r_rec)
        row = {"sample": int(n), "seed": int(seed), "model": metrics(r_model), "recurrency": metrics(r_rec),
               "mrr_difference": float(np.mean(1 / r_model - 1 / r_rec)), "mrr_difference_95ci": [lo, hi],
               "model_better_questions": int(np.sum(r_model < r_rec)),
               "recurrency_better_questions": int(np.sum(r_rec < r_model))}
        if match is not None:
            ans, total = match.questions("test")
            row["answerable_share"] = ans / total
        summary.append(row)
        m, b = row["model"], row["recurrency"]
        print(f"{n} questions (seed {seed}): model MRR {100 * m['mrr']:.2f} H@1 {100 * m['hits@1']:.2f} "
              f"H@10 {100 * m['hits@10']:.2f} | recurrency MRR {100 * b['mrr']:.2f} H@1 {100 * b['hits@1']:.2f} "
              f"H@10 {100 * b['hits@10']:.2f} | difference {100 * row['mrr_difference']:+.2f} "
              f"(95% CI {100 * lo:+.2f} .. {100 * hi:+.2f})")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    print(f"wrote {out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
