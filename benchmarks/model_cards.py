"""Record test metrics into the shipped checkpoints (metadata only; weights untouched) and write a
model card beside each. Run after the evaluations listed in benchmarks/results/tpar.md:

    python benchmarks/model_cards.py [--only icews14-extrapolation ...]
"""

from __future__ import annotations

import json
from pathlib import Path

from tpar.model.checkpoint import Checkpoint
from tpar.model.card import write_card

from peers import TLOGIC_MEASURED

ROOT = Path(__file__).resolve().parent.parent
RES = Path(__file__).resolve().parent / "results"


def metrics(path: Path) -> dict:
    d = json.loads(path.read_text())
    return {m: d[m] for m in ("realistic", "optimistic", "pessimistic")}


def baseline(path: Path) -> dict:
    return json.loads(path.read_text())["realistic"]


SHIPPED = {
    # the composite (tpar ensemble): two trainings of the recipe below and the history prior, chosen on valid
    "icews14-extrapolation": ({"extrapolation": RES / "tpar/icews14-extrapolation-test.json"},
                              {"frequency": RES / "baselines/extrapolation_ICEWS14_frequency.json",
                               "recurrency": RES / "baselines/extrapolation_ICEWS14_recurrency.json"},
                              {"TPAR (ACL 2024), ICEWS14 extrapolation MRR": 46.89, "TLogic (measured here)": TLOGIC_MEASURED,
                               "LogCL (ICDE 2024), the best published figure we know": 48.87}),
    "icews14-extrapolation-sparse": ({"extrapolation": RES / "tpar/icews14-extrapolation-sparse-test.json"},
                                     {"frequency": RES / "baselines/extrapolation_ICEWS14_frequency.json",
                                      "recurrency": RES / "baselines/extrapolation_ICEWS14_recurrency.json"},
                                     {"TPAR (ACL 2024), ICEWS14 extrapolation MRR": 46.89,
                                      "TLogic (measured here)": TLOGIC_MEASURED}),
    "icews14-interpolation": ({"interpolation": RES / "tpar/icews14-interpolation-test.json"},
                              {"frequency": RES / "baselines/interpolation_ICEWS14_frequency.json",
                               "recurrency": RES / "baselines/interpolation_ICEWS14_recurrency.json"},
                              {"TPAR (ACL 2024), ICEWS14 interpolation MRR": 65.07}),
    "icews14-unified": ({"interpolation": RES / "tpar/icews14-unified-interpolation-test.json",
                         "extrapolation": RES / "tpar/icews14-unified-extrapolation-test.json"},
                        {"frequency (interpolation)": RES / "baselines/interpolation_ICEWS14_frequency.json",
                         "recurrency (interpolation)": RES / "baselines/interpolation_ICEWS14_recurrency.json",
                         "recurrency (extrapolation, same split)": RES / "tpar/icews14interp-recurrency-extrapolation.json"},
                        {"TPAR (ACL 2024), ICEWS14 interpolation MRR": 65.07}),
    "yago11k-interpolation": ({"interpolation": RES / "tpar/yago11k-interpolation-test.json"}, {"frequency": RES / "baselines/interpolation_YAGO11k_frequency.json",
                                   "recurrency": RES / "baselines/interpolation_YAGO11k_recurrency.json"},
                              {"TPAR (ACL 2024), YAGO11k MRR": 24.12}),
    "wikidata12k-interpolation": ({"interpolation": RES / "tpar/wikidata12k-interpolation-test.json"},
                                  {"frequency": RES / "baselines/interpolation_WIKIDATA12k_frequency.json",
                                   "recurrency": RES / "baselines/interpolation_WIKIDATA12k_recurrency.json"},
                                  {"TPAR (ACL 2024), WIKIDATA12k MRR": 34.89}),
    "yago-extrapolation": ({"extrapolation": RES / "tpar/yago-extrapolation-test.json"},
                           {"frequency": RES / "baselines/extrapolation_YAGO_frequency.json",
                            "recurrency": RES / "baselines/extrapolation_YAGO_recurrency.json"},
                           {"TPAR (ACL 2024), YAGO extrapolation MRR": 91.53}),
    # test metrics and baselines by `tpar evaluate` / `tpar baseline` on sample_data/world/chronological, one JSON
    # per setting (and method)
    "sample-world-unified": ({s: RES / f"tpar/sample-world-unified-{s}-test.json" for s in ("extrapolation", "interpolation")},
                             {f"{m} ({s})": RES / f"baselines/{s}_sample-world_{m}.json"
                                  for s in ("extrapolation", "interpolation") for m in ("frequency", "recurrency")}, {}),
}

#: the note on a composite whose capped models were measured again after the cap's fix (2026-11-29, session 36)
CAP_FIX = ("interpolation: measured again after interpolation's cap stopped depending on whether the question's own "
           "fact is in the data (it took one of the cap's places at or after t_q, hidden, and pushed another link "
           "out). Before the fix: {before}. The composite's weights and prior were chosen on valid before the fix, by "
           "figures of then")

NOTES = {
    "wikidata12k-interpolation": [CAP_FIX.format(before="35.43 / 25.89 (MRR / H@1); 108 test questions were scored "
                                                        "otherwise and one rank moved"),
                                  "the benchmark's test split repeats 132 training facts (its intervals' bounds "
                                  "repeat): their 264 questions score MRR 99.1, and without them the figure is 34.3 -- "
                                  "about 1.1 points that any method gets on this split, the paper's included (an "
                                  "independent recomputation, composite audit 36)"],
    "sample-world-unified": [
        "extrapolation: 3 of the 1,892 test questions are such near-ties (the answer loses by a relative 1e-8 or so); "
        "on the 2-core machine the figures were made on, both kernels give 30.24 / 27.70 (MRR / H@1), an earlier CPU "
        "gave 30.29 / 27.80, and an independent float64 recomputation gives 30.23 / 27.70",
        "interpolation on this chronological split: every test question lies in the last 14 days, after all the "
        "training facts, and the protocol's interpolation graph is the training split, so these questions see no fact "
        "after them: a forecast with a gap rather than gap filling. Gap filling proper, with the facts before and after "
        "each question: `benchmarks/results/sample_world.md` (or `sample_data/world/random`)"],
}


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description="record test metrics into the shipped checkpoints and write their cards")
    ap.add_argument("--only", nargs="*", choices=sorted(SHIPPED), help="these checkpoints only (default: all)")
    only = ap.parse_args().only
    for name, (tests, bases, paper) in SHIPPED.items():
        if only and name not in only:
            continue
        path = ROOT / "checkpoints" / f"{name}.tpar"
        missing = [str(f) for f in list(tests.values()) + list(bases.values()) if not f.is_file()]
        if missing:  # the evaluation results are not here: rewriting the card would drop their sections
            print(f"{name}: card kept as it is; missing {', '.join(missing)}")
            continue
        ck = Checkpoint.load(path)
        recorded = {f"test_{setting}": metrics(f) for setting, f in tests.items()}
        if any(ck.metrics.get(k) != v for k, v in recorded.items()):  # saved only when a figure changed
            ck.metrics.update(recorded)
            ck.save(path)
        b = {k: baseline(f) for k, f in bases.items()}
        kernels = {setting: (json.loads(f.read_text()).get("params") or {}).get("kernel") for setting, f in tests.items()}
        notes = [f"{' and '.join(s for s, k in kernels.items() if k == kernel)}: scored with {kernel} (`tpar evaluate`, "
                 "JSON in `benchmarks/results/tpar`) in float32; two answers whose scores lie closer than float32 can tell apart "
                 "rank by rounding, which depends on the kernel's order of addition and on the CPU (the C++ "
                 "kernel is compiled for the machine it runs on): figures from another kernel or machine can differ by "
                 "a few hundredths" for kernel in dict.fromkeys(kernels.values()) if kernel]
        notes += NOTES.get(name, [])
        print(write_card(path, baselines=b or None, paper=paper or None, notes=notes or None))


if __name__ == "__main__":
    main()
