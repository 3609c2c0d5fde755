"""Question latency as the explorer app sees it: ``Predictor.predict`` (top 10) + ``Explainer.explain``
(the top answer, 5 paths), one question at a time on the CPU, caches cold per question.

    python benchmarks/latency.py --data sample_data/world/chronological --checkpoint checkpoints/sample-world-unified.tpar
    python benchmarks/latency.py --data ../shared/datasets/extrapolation/ICEWS14 --checkpoint checkpoints/icews14-extrapolation.tpar
    python benchmarks/latency.py ... --app     # also end to end through the Streamlit script (AppTest)

Questions: a seeded sample of test facts, asked at their own time ("auto": interpolation inside the
data's time range) and one step after the last known fact (extrapolation).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

from tpar.model.checkpoint import Checkpoint
from tpar.reasoning.explanation import Explainer
from tpar.reasoning.prediction import Predictor
from tpar.data.loading import load_dataset


def pct(xs: list[float]) -> dict:
    a = np.array(xs) * 1000
    return {"p50_ms": round(float(np.percentile(a, 50)), 1), "p95_ms": round(float(np.percentile(a, 95)), 1),
            "max_ms": round(float(a.max()), 1), "n": len(xs)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--app", action="store_true", help="also time whole Ask + Evidence page runs with AppTest")
    ap.add_argument("--json")
    args = ap.parse_args()
    kg = load_dataset(args.data)
    ex = Explainer(Predictor(Checkpoint.load(args.checkpoint), kg, "cpu"))
    p = ex.predictor
    rng = np.random.default_rng(args.seed)
    test = kg.facts("test")
    rows = test[rng.choice(len(test), min(args.questions, len(test)), replace=False)]
    after = kg.time_axis.label(p.last_time + 1)
    # warm-up (kernel build, allocator)
    s0, r0 = kg.entities.name(int(rows[0, 0])), kg.relations.name(int(rows[0, 1]))
    ex.explain(s0, r0, after, p.predict(s0, r0, after, top_k=1).answers[0].entity)
    report = {"data": kg.name, "checkpoint": Path(args.checkpoint).name, "torch_threads": torch.get_num_threads(),
              "cpu": platform.processor() or platform.machine(), "settings": {}}
    for label, when in (("interpolation (test fact's own time)", None), ("extrapolation (after the data)", after)):
        ask, expl, total = [], [], []
        for s, r, o, t in rows.tolist():
            subj, rel = kg.entities.name(s), kg.relations.name(r)
            tq = kg.time_axis.label(t) if when is None else when
            t0 = time.perf_counter()
            pred = p.predict(subj, rel, tq, top_k=10)
            t1 = time.perf_counter()
            ex.explain(subj, rel, tq, pred.answers[0].entity, num_paths=5)
            t2 = time.perf_counter()
            ask.append(t1 - t0)
            expl.append(t2 - t1)
            total.append(t2 - t0)
        report["settings"][label] = {"ask": pct(ask), "explain": pct(expl), "ask+explain": pct(total)}
    if args.app:
        report["app"] = app_latency(args, rows, kg)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text)


def app_latency(args, rows, kg) -> dict:
    """Whole page runs (Ask, then Evidence) through the Streamlit script, new question each time."""
    import os

    from streamlit.testing.v1 import AppTest

    app = str(Path(__file__).resolve().parent.parent / "app" / "streamlit_app.py")
    data_label = None
    from tpar.data.catalog import find_datasets

    for d in find_datasets():
        if Path(d.path).resolve() == Path(args.data).resolve():
            data_label = d.label
    if data_label is None:
        return {"skipped": f"{args.data} is not among the app's data sets"}
    os.environ.setdefault("STREAMLIT_LOG_LEVEL", "error")
    at = AppTest.from_file(app, default_timeout=300)
    at.query_params["data"] = data_label
    at.run()
    ask, evid = [], []
    for s, r, o, t in rows.tolist()[:20]:
        at.switch_page("views/ask.py")
        at.session_state["subject"] = kg.entities.name(s)
        at.session_state["relation"] = kg.relations.name(r)
        at.session_state["time"] = kg.time_axis.label(t)
        t0 = time.perf_counter()
        at.run()
        t1 = time.perf_counter()
        at.switch_page("views/evidence.py").run()
        t2 = time.perf_counter()
        assert not at.exception, at.exception
        ask.append(t1 - t0)
        evid.append(t2 - t1)
    return {"ask_page": pct(ask), "evidence_page": pct(evid)}


if __name__ == "__main__":
    main()
