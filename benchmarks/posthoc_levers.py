"""Issue #29: levers that need no retraining, measured on ICEWS14 extrapolation (or any data set):

* **history prior** (the copy mechanism of CENET / TiRGN, as a fitted mix): score'(e) = f(q, e) +
  β · log(ε + ψ(e | s, r, t_q)), with ψ the recurrency baseline's score (recency-weighted count of the
  candidate having answered this question before, plus its share of the relation; fitted on valid as
  that baseline is) and (ε, β) chosen on valid from a grid;
* **ensemble** of several checkpoints (e.g. the exact and the sparse model): the mean of their
  calibrated log-probabilities log softmax(f_i / T_i), alone and with the history prior.

Every candidate is scored on the same valid questions (all, or a seeded subset); the one with the best
valid MRR (realistic ties, time-aware filter, both directions) is the selection. With ``--test`` each
single model, the selected ensemble-free prior, the selected ensemble and the overall selection are
then evaluated once on test -- selection never looks at test. The candidates, their scores and their
evaluation are the package's (:mod:`tpar.model.ensemble`, :mod:`tpar.model.composite`): ``tpar ensemble``
makes the selection a shipped composite checkpoint.

    python benchmarks/posthoc_levers.py --data ../shared/datasets/extrapolation/ICEWS14 \\
        --checkpoints checkpoints/icews14-extrapolation.tpar [more.tpar ...] [--valid-queries 0] [--test]

Writes ``benchmarks/results/posthoc_levers.json`` and ``.md`` (``--name`` changes the stem).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from tpar.data.loading import load_dataset
from tpar.evaluation.baselines import fit_recurrency
from tpar.model.checkpoint import Checkpoint, hardware
from tpar.model.ensemble import PRIOR_QUERIES, candidates, member_temperature, score_candidates

OUT = Path(__file__).resolve().parent / "results"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--checkpoints", nargs="+", required=True)
    ap.add_argument("--setting", default="extrapolation")
    ap.add_argument("--valid-queries", type=int, default=0, help="a seeded subset of valid (0: all)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--test", action="store_true", help="evaluate the selections once on test")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--name", default="posthoc_levers")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    kg = load_dataset(args.data)
    cks = [Checkpoint.load(p) for p in args.checkpoints]
    for p, ck in zip(args.checkpoints, cks):
        if ck.data_fingerprint != kg.fingerprint:
            sys.exit(f"{p}: trained on other data ({ck.data_name})")
    temps = [member_temperature(ck, kg, args.setting, seed=args.seed)[0] for ck in cks]
    t0 = time.perf_counter()
    prior = fit_recurrency(kg, args.setting, progress=False, max_queries=PRIOR_QUERIES, seed=args.seed)
    fit_seconds = time.perf_counter() - t0
    models = [ck.build_model("cpu") for ck in cks]
    cands = candidates(len(cks), prior=True)  # the package's selection (tpar.model.ensemble), every candidate

    def run(split: str, max_queries: int, names=None) -> dict[str, dict]:
        chosen = [c for c in cands if names is None or c.name in names]
        rows = score_candidates(kg, models, temps, prior, chosen, args.setting, split, max_queries=max_queries,
                                seed=args.seed)
        return {k: {"mrr": 100 * v["mrr"], "hits@1": 100 * v["hits@1"], "hits@10": 100 * v["hits@10"],
                    "queries": v["queries"]} for k, v in rows.items()}

    t0 = time.perf_counter()
    valid = run("valid", args.valid_queries)
    valid_seconds = time.perf_counter() - t0
    single = [f"model {i + 1}" for i in range(len(cks))]
    with_prior = [k for k in valid if k.startswith("model") and "prior" in k]
    ens_keys = [k for k in valid if k.startswith("ensemble")]
    chosen = {"best single model": max(single, key=lambda k: valid[k]["mrr"]),
              "best model + prior": max(with_prior, key=lambda k: valid[k]["mrr"])}
    if ens_keys:
        chosen["best ensemble"] = max(ens_keys, key=lambda k: valid[k]["mrr"])
    chosen["overall selection"] = max(valid, key=lambda k: valid[k]["mrr"])
    test = run("test", 0, set(single) | set(chosen.values())) if args.test else {}
    result = {"data": args.data, "fingerprint": kg.fingerprint, "setting": args.setting,
              "checkpoints": args.checkpoints, "temperatures": temps, "valid_queries": args.valid_queries,
              "seed": args.seed, "prior": prior.params() | {"fit_seconds": fit_seconds},
              "valid": valid, "chosen_on_valid": chosen, "test": test, "valid_seconds": valid_seconds,
              "hardware": hardware(), "command": "python " + " ".join(sys.argv)}
    (OUT / f"{args.name}.json").write_text(json.dumps(result, indent=1))
    lines = [f"# Post-hoc levers ({args.setting}, `{Path(args.data).name}`)", "",
             "Selection on valid only (realistic ties, time-aware filter, both directions); test evaluated once "
             "for the selections.", "",
             *(f"- model {i + 1}: `{p}` (temperature {t:.3f})" for i, (p, t) in enumerate(zip(args.checkpoints, temps))),
             f"- valid questions: {'all' if not args.valid_queries else f'{args.valid_queries} (seed {args.seed})'}",
             f"- command: `{result['command']}`", "",
             "| selection | candidate | valid MRR | test MRR | test H@1 | test H@10 |", "|---|---|---|---|---|---|"]
    for what, key in [*((k, k) for k in single), *chosen.items()]:
        t = test.get(key, {})
        lines.append(f"| {what} | {key} | {valid[key]['mrr']:.2f} | {t.get('mrr', float('nan')):.2f} | "
                     f"{t.get('hits@1', float('nan')):.2f} | {t.get('hits@10', float('nan')):.2f} |")
    lines += ["", "Every candidate on valid:", "", "| candidate | valid MRR |", "|---|---|"]
    lines += [f"| {k} | {v['mrr']:.2f} |" for k, v in sorted(valid.items(), key=lambda kv: -kv[1]["mrr"])]
    (OUT / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:20 + len(single) + len(chosen)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
