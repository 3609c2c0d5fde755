"""Run the baselines on every available benchmark and write one JSON per run plus a table.

    python benchmarks/baselines.py [--out results/baselines] [--only NAME ...]

Figures are for the test split, both query directions, time-aware filter, all three tie modes.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from tpar.evaluation.baselines import FrequencyBaseline, fit_recurrency
from tpar.evaluation.protocol import evaluate
from tpar.data.benchmarks import find_data_dir
from tpar.data.loading import load_dataset

RUNS = [  # (folder under the data dir, setting)
    ("extrapolation/ICEWS14", "extrapolation"),
    ("extrapolation/ICEWS18", "extrapolation"),
    ("extrapolation/YAGO", "extrapolation"),
    ("extrapolation/WIKI", "extrapolation"),
    ("interpolation/ICEWS14", "interpolation"),
    ("interpolation/YAGO11k", "interpolation"),
    ("interpolation/WIKIDATA12k", "interpolation"),
    ("interpolation/ICEWS05-15", "interpolation"),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/baselines")
    ap.add_argument("--only", nargs="*", help="run only these folders, e.g. extrapolation/ICEWS14")
    ap.add_argument("--split", default="test")
    args = ap.parse_args()
    data_dir = find_data_dir()
    if data_dir is None:
        raise SystemExit("benchmarks not found: set TPAR_DATA_DIR or place them in ../shared/datasets")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for folder, setting in RUNS:
        if args.only and folder not in args.only:
            continue
        kg = load_dataset(data_dir / folder)
        if setting == "interpolation" and "train" in kg.missing_splits:
            rows.append({"data": folder, "setting": setting, "skipped": "train split missing: no interpolation background"})
            print(f"skip {folder}: train split missing")
            continue
        for method in ("frequency", "recurrency"):
            t0 = time.perf_counter()
            if method == "frequency":
                ranker = FrequencyBaseline()
            else:
                ranker = fit_recurrency(kg, setting, split="valid" if "valid" in kg.splits else args.split)
            fit_s = time.perf_counter() - t0
            res = evaluate(kg, ranker, setting, args.split, params=ranker.params())
            name = f"{folder.replace('/', '_')}_{method}"
            d = res.to_dict()
            d["fit_seconds"] = round(fit_s, 2)
            d["machine"] = {"platform": platform.platform(), "torch": torch.__version__, "threads": torch.get_num_threads()}
            d["notes"] = kg.notes
            (out / f"{name}.json").write_text(json.dumps(d, indent=2))
            row = {"data": folder, "setting": setting, "method": method, "queries": res.num_queries,
                   "fit_s": round(fit_s, 1), "eval_s": round(res.seconds, 1)}
            for m in ("realistic", "optimistic", "pessimistic"):
                row[m] = {k: round(100 * v, 2) for k, v in d[m].items()}
            rows.append(row)
            print(res.summary(), f"(fit {fit_s:.1f} s)", flush=True)
    (out / "summary.json").write_text(json.dumps(rows, indent=2))
    lines = ["| data | setting | method | queries | realistic MRR / H@1 / H@3 / H@10 | optimistic MRR | pessimistic MRR | fit s | eval s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['data']} | {r['setting']} | – | – | skipped: {r['skipped']} | | | | |")
            continue
        x = r["realistic"]
        lines.append(f"| {r['data']} | {r['setting']} | {r['method']} | {r['queries']} | {x['mrr']:.2f} / {x['hits@1']:.2f} / "
                     f"{x['hits@3']:.2f} / {x['hits@10']:.2f} | {r['optimistic']['mrr']:.2f} | {r['pessimistic']['mrr']:.2f} "
                     f"| {r['fit_s']} | {r['eval_s']} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
