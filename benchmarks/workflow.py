"""How long each step of the bring-your-own-data workflow takes, through the same API calls the app
makes: validate an upload, save it, train a model in a background job (process start included),
answer + explain a question, evaluate (TPAR and both baselines).

    python benchmarks/workflow.py --csv sample_data/world/facts.csv
    python benchmarks/workflow.py --from-benchmark ../shared/datasets/extrapolation/ICEWS14 --facts 50000
        # a 50k-fact upload: the earliest 50k ICEWS14 facts written as an upload CSV (names, ISO dates)

Training uses the Train page's defaults (unified, L=3, d=32, lr 0.002, batches of 10, 4 epochs at most)
with ``--questions`` training questions per epoch.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from tpar.evaluation.baselines import FrequencyBaseline, fit_recurrency
from tpar.model.checkpoint import Checkpoint
from tpar.model.config import ModelConfig, RunConfig, TrainConfig
from tpar.evaluation.protocol import evaluate
from tpar.reasoning.explanation import Explainer
from tpar.model.ranker import ModelRanker
from tpar.reasoning.prediction import Predictor
from tpar.runtime.jobs import JobSpec, start_job
from tpar.data.loading import load_dataset
from tpar.data.upload import inspect_upload, save_dataset


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv")
    ap.add_argument("--from-benchmark")
    ap.add_argument("--facts", type=int, default=50000)
    ap.add_argument("--questions", type=int, default=20000, help="training questions per epoch")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--eval-queries", type=int, default=2000)
    ap.add_argument("--json")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tpar-workflow-"))
    if args.from_benchmark:
        from tpar.data.outputs import write_csv

        src = load_dataset(args.from_benchmark)
        facts = src.all_facts()
        facts = facts[facts[:, 3].argsort(kind="stable")][: args.facts]
        csv_path = work / f"{src.name.lower()}-{len(facts)}.csv"
        write_csv(csv_path, [[src.entities.name(s_), src.relations.name(r_), src.entities.name(o_),
                              src.time_axis.label(t_)] for s_, r_, o_, t_ in facts.tolist()],
                  ["subject", "relation", "object", "time"])
    else:
        csv_path = Path(args.csv)
    text = csv_path.read_text(encoding="utf-8")
    out: dict = {"file": csv_path.name, "bytes": len(text.encode())}
    t = time.perf_counter()
    report, kg = inspect_upload(text, csv_path.name)
    out["validate_s"] = time.perf_counter() - t
    out["facts"] = report.rows_kept
    out["entities"], out["relations"] = report.entities, report.relations
    t = time.perf_counter()
    folder = save_dataset(kg, work / "uploads", "data")
    out["save_s"] = time.perf_counter() - t
    t = time.perf_counter()
    kg = load_dataset(folder)
    out["load_s"] = time.perf_counter() - t
    run = RunConfig(ModelConfig(dim=32, attn_dim=5, num_layers=3, dropout=0.2, activation="tanh"),
                    TrainConfig(setting="unified", lr=0.002, batch_size=10, micro_batch=10, epochs=args.epochs,
                                patience=2, max_train_queries=args.questions, max_valid_queries=1000))
    t = time.perf_counter()
    job = start_job(work / "jobs", JobSpec(data=str(folder), setting="unified", run=run.to_dict(),
                                           out=str(work / "model.tpar"), name="model"))
    first_step = None
    while not (s := job.status()).finished:
        if first_step is None and s.steps:
            first_step = time.perf_counter() - t
        time.sleep(0.5)
    out["train"] = {"state": s.state, "wall_s": time.perf_counter() - t, "optimiser_s": s.seconds,
                    "first_progress_s": first_step, "epochs": len(s.epochs_done),
                    "valid_mrr": s.epochs_done[-1].get("valid_mrr") if s.epochs_done else None}
    ck = Checkpoint.load(work / "model.tpar")
    t = time.perf_counter()
    ex = Explainer(Predictor(ck, kg, "cpu"))
    out["model_load_s"] = time.perf_counter() - t
    s_, r_, _, t_ = kg.facts("test")[0].tolist()
    subj, rel = kg.entities.name(s_), kg.relations.name(r_)
    when = kg.time_axis.label(ex.predictor.last_time + 1)
    ex.predictor.predict(subj, rel, when)  # warm
    t = time.perf_counter()
    pred = ex.predictor.predict(subj, rel, when, top_k=10)
    ex.explain(subj, rel, when, pred.answers[0].entity, num_paths=5)
    out["ask_explain_s"] = time.perf_counter() - t
    evals = {}
    for name, make in (("TPAR", lambda: ModelRanker(ck.build_model(), micro_batch=16)),
                       ("frequency", FrequencyBaseline),
                       ("recurrency", lambda: fit_recurrency(kg, "extrapolation", progress=False))):
        t = time.perf_counter()
        res = evaluate(kg, make(), "extrapolation", "test", progress=False, max_queries=args.eval_queries, batch_size=128)
        evals[name] = {"s": time.perf_counter() - t, "mrr": res.metrics().mrr, "queries": res.num_queries}
    out["evaluate"] = evals
    text_out = json.dumps(out, indent=2)
    print(text_out)
    if args.json:
        Path(args.json).write_text(text_out)


if __name__ == "__main__":
    main()
