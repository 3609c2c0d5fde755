"""Rule recovery on the sample world: for test facts a planted rule produced (asked in both
directions), the share whose most important explanation path (Eq. 14) walks that rule's body, next
to Hits@1 on the same questions. Extrapolation (only earlier facts) and interpolation (every other
known fact) on the chronological test weeks, which the model never trained on.

    python benchmarks/rule_recovery.py --checkpoint checkpoints/sample-world-unified.tpar [--per-rule 60] [--json F]
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

from tpar.model.checkpoint import Checkpoint
from tpar.reasoning.explanation import Explainer
from tpar.reasoning.prediction import Predictor
from tpar.reasoning.rules import rule_recovery
from tpar.data.loading import load_dataset

ROOT = Path(__file__).resolve().parent.parent / "sample_data" / "world"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--per-rule", type=int, default=60, help="facts per rule (seeded sample; 0 = all)")
    ap.add_argument("--paths", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    kg = load_dataset(ROOT / "chronological")
    rules = {r["id"]: r for r in json.loads((ROOT / "rules.json").read_text())["rules"]}
    test_from = kg.time_axis.label(int(kg.facts("test")[:, 3].min()))
    with open(ROOT / "provenance.csv", encoding="utf-8") as f:
        questions = [(r["subject"], r["relation"], r["object"], r["time"], r["rule"]) for r in csv.DictReader(f)
                     if r["time"] >= test_from and r["rule"] in rules]
    ex = Explainer(Predictor(Checkpoint.load(args.checkpoint), kg, "cpu"))
    out = {}
    print("| setting | rule | body | questions | Hits@1 | top path follows the rule | rule among top 5 paths |")
    print("|---|---|---|---|---|---|---|")
    for setting in ("extrapolation", "interpolation"):
        t0 = time.perf_counter()
        rows = rule_recovery(ex, questions, rules, setting=setting, num_paths=args.paths, max_per_rule=args.per_rule)
        secs = time.perf_counter() - t0
        out[setting] = {"seconds": secs, "rows": [r.to_dict() for r in rows]}
        for r in rows:
            body = "; ".join(rules[r.rule]["body"])
            print(f"| {setting} | {r.rule} | {body} | {r.questions} | {100 * r.answer_at_rank_1:.1f} | "
                  f"{100 * r.top_path_follows_body:.1f} | {100 * r.any_path_follows_body:.1f} |")
        n = sum(r.questions for r in rows)
        print(f"<!-- {setting}: {n} explanations in {secs:.1f} s ({1000 * secs / max(n, 1):.0f} ms each) -->")
    for setting, d in out.items():
        for r in d["rows"]:
            for e in r["examples"][:1]:
                print(f"- {setting}, {r['rule']}: {e}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
