"""Temporal rules distilled from a checkpoint (``tpar rules``, :mod:`tpar.reasoning.distilled_rules`): the
sample world's planted rules recovered, and the rules as a predictor (:mod:`tpar.reasoning.rule_ranker`) under the
evaluation protocol, its aggregation chosen on valid, then scored on test.

    python benchmarks/distilled_rules.py sample [--json F]
    python benchmarks/distilled_rules.py predictor --checkpoint checkpoints/icews14-extrapolation-sparse.tpar \\
        --data ../shared/datasets/extrapolation/ICEWS14 --from train --questions 200 --max-rules 100 \\
        [--rules-json F] [--valid-queries 4000] [--test-queries 0] [--show Threaten,...]

Everything at one CPU thread. Prints markdown rows for ``benchmarks/results/rules.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from itertools import product
from pathlib import Path

import torch

from tpar.data.loading import load_dataset
from tpar.evaluation.protocol import evaluate
from tpar.model.checkpoint import Checkpoint
from tpar.reasoning.distilled_rules import RuleConfig, RuleSet, distill_rules, planted_ranks
from tpar.reasoning.explanation import Explainer
from tpar.reasoning.prediction import Predictor
from tpar.reasoning.rule_ranker import RuleRanker

ROOT = Path(__file__).resolve().parent.parent
WORLD = ROOT / "sample_data" / "world"
#: TLogic's a (share of the confidence) and λ (recency decay per day) grid, and rules per head
GRID = {"top": (20, 50, 100), "confidence_share": (1.0, 0.9, 0.5), "decay": (0.01, 0.1)}


def pct(x: float) -> str:
    return f"{100 * x:.2f}"


def metrics(res) -> str:
    m = res.metrics()
    return f"{pct(m.mrr)} / {pct(m.hits[1])} / {pct(m.hits[3])} / {pct(m.hits[10])}"


def distil(checkpoint: str, data: str, config: RuleConfig) -> tuple[RuleSet, object]:
    kg = load_dataset(data)
    ex = Explainer(Predictor(Checkpoint.load(checkpoint), kg, "cpu"))
    t0 = time.perf_counter()
    rules = distill_rules(ex, config)
    rules.meta["checkpoint"] = checkpoint
    print(f"<!-- distilled {rules.meta['questions']:,} questions in {time.perf_counter() - t0:.0f} s, "
          f"{len(rules.rules):,} rules kept -->")
    return rules, ex.kg


def sample(args) -> None:
    checkpoint = str(ROOT / "checkpoints" / "sample-world-unified.tpar")
    rules, kg = distil(checkpoint, str(WORLD / "chronological"), RuleConfig(seed=args.seed))
    if args.json:
        Path(args.json).write_text(rules.to_json(), encoding="utf-8")
    planted = json.loads((WORLD / "rules.json").read_text(encoding="utf-8"))["rules"]
    by_id = {p["id"]: p for p in planted}
    print("| planted rule | questions | rank (object q.) | rank (subject q.) | learned rule (object questions) | "
          "support | confidence |")
    print("|---|---|---|---|---|---|---|")
    rows = planted_ranks(rules, planted, top=3)
    for rid in by_id:
        obj, sub = (next(r for r in rows if r["rule"] == rid and r["head_inverse"] == inv) for inv in (False, True))
        print(f"| {rid}: {'; '.join(by_id[rid]['body'])} ⇒ {by_id[rid]['head']} | {obj['questions']} + "
              f"{sub['questions']} | {obj['rank']} | {sub['rank']} | `{obj['learned']}` | {obj['support']} | "
              f"{100 * (obj['confidence'] or 0):.0f}% |")
    print(f"\n{sum(r['in_top'] for r in rows)} of {len(rows)} (rule, direction) pairs in the top 3")
    print("\n| setting | rules (test) | rules per head |")
    print("|---|---|---|")
    for setting in ("extrapolation", "interpolation"):
        res = evaluate(kg, RuleRanker(rules, kg, top=20), setting, "test", progress=False)
        print(f"| {setting} | {metrics(res)} | 20 |")


def predictor(args) -> None:
    if args.rules_json and Path(args.rules_json).is_file():
        rules, kg = RuleSet.read(args.rules_json), load_dataset(args.data)
        print(f"<!-- rules read from {args.rules_json} -->")
    else:
        rules, kg = distil(args.checkpoint, args.data, RuleConfig(questions=args.questions, source=args.source,
                                                                  max_rules=args.max_rules, seed=args.seed))
        if args.rules_json:
            Path(args.rules_json).write_text(rules.to_json(), encoding="utf-8")
    setting = rules.meta["setting"]
    for head in [h for h in (args.show or "").split(",") if h]:
        for inverse in (False, True):
            for r in rules.for_head(head, inverse)[:3]:
                print(f"| {head}{' (subject q.)' if inverse else ''} | {r.rank} | `{r.text(rules.scale)}` | "
                      f"{r.support} | {100 * r.confidence:.0f}% | {r.score:.3f} |")
    print("\n| rules per head | a | λ | valid MRR / H@1 / H@3 / H@10 |")
    print("|---|---|---|---|")
    best = None
    for top, a, lam in product(GRID["top"], GRID["confidence_share"], GRID["decay"]):
        if a == 1.0 and lam != GRID["decay"][0]:
            continue  # λ plays no part without the recency share
        res = evaluate(kg, RuleRanker(rules, kg, top=top, confidence_share=a, decay=lam), setting, "valid",
                       progress=False, max_queries=args.valid_queries, seed=args.seed, batch_size=64)
        print(f"| {top} | {a} | {lam if a < 1 else '-'} | {metrics(res)} |", flush=True)
        if best is None or res.metrics().mrr > best[0]:
            best = (res.metrics().mrr, top, a, lam)
    _, top, a, lam = best
    res = evaluate(kg, RuleRanker(rules, kg, top=top, confidence_share=a, decay=lam), setting, "test",
                   progress=False, max_queries=args.test_queries, seed=args.seed, batch_size=64)
    print(f"\nchosen on valid: {top} rules per head, a = {a}, λ = {lam}")
    print(f"| rules distilled from the model (test) | {res.num_queries:,} | {metrics(res)} | "
          f"{pct(res.metrics('optimistic').mrr)} | {res.seconds:.0f} s |")


def ship(args) -> None:
    """Distil the shipped sample-world checkpoint's rules with the Learned rules page's default configuration
    into checkpoints/rules/ (the page reads them there, keyed by checkpoint, data and configuration)."""
    from tpar.data.catalog import checkpoint_dir, sample_dir
    from tpar.data.loading import load_dataset
    from tpar.model.checkpoint import Checkpoint
    from tpar.reasoning.distilled_rules import RuleConfig, cache_path, cached_rules
    from tpar.reasoning.explanation import Explainer
    from tpar.reasoning.prediction import Predictor

    ck = checkpoint_dir() / "sample-world-unified.tpar"
    kg = load_dataset(sample_dir() / "world" / "chronological")
    rules, cached = cached_rules(checkpoint_dir() / "rules", ck, Explainer(Predictor(Checkpoint.load(ck), kg, "cpu")),
                                 RuleConfig())
    print(f"{'kept' if cached else 'wrote'} {cache_path(checkpoint_dir() / 'rules', ck, kg, RuleConfig())}: "
          f"{len(rules.head_names)} head relations")


def main(argv: list[str] | None = None) -> None:
    torch.set_num_threads(1)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    sp = sub.add_parser("sample")
    sp.add_argument("--json")
    sp.add_argument("--seed", type=int, default=0)
    sp.set_defaults(func=sample)
    sp = sub.add_parser("ship")
    sp.set_defaults(func=ship)
    sp = sub.add_parser("predictor")
    sp.add_argument("--checkpoint", required=True)
    sp.add_argument("--data", required=True)
    sp.add_argument("--from", dest="source", default="train", choices=["train", "valid"])
    sp.add_argument("--questions", type=int, default=200)
    sp.add_argument("--max-rules", type=int, default=100)
    sp.add_argument("--rules-json", help="read the rules from here if it exists, else write them there")
    sp.add_argument("--valid-queries", type=int, default=4000, help="seeded valid subset for the grid (0 = all)")
    sp.add_argument("--test-queries", type=int, default=0, help="seeded test subset (0 = all)")
    sp.add_argument("--show", help="comma-separated head relations whose top 3 rules are printed")
    sp.add_argument("--seed", type=int, default=0)
    sp.set_defaults(func=predictor)
    args = ap.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    sys.exit(main())
