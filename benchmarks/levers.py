"""Issue 12, step 2: what is known to matter, each as a measured row at one equal budget.

Every row trains the same small model from scratch on ICEWS14 (L=3, d=32, the CPU budget of
``tpar/configs/cpu``) for the same number of training questions and reports the best validation MRR
on one seeded valid subset (selection on valid only; the test split is never read). One lever changes
per row against the row it names; each row runs with two training seeds, and the table gives both and
their mean, so a difference smaller than the seeds' spread is not a finding.

    python benchmarks/levers.py [--questions 2000] [--epochs 2] [--valid 1000] [--seeds 0 1] [--only NAME ...]

Writes ``benchmarks/results/levers.md`` and ``levers.json`` (rows, configs, seconds, machine, data
fingerprints). Needs the public benchmarks (``$TPAR_DATA_DIR`` or ``../shared/datasets``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tpar.data.benchmarks import load_benchmark
from tpar.model.checkpoint import hardware
from tpar.model.config import ModelConfig, RunConfig, TrainConfig
from tpar.training.trainer import train

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "results"


@dataclass
class Lever:
    name: str
    setting: str
    what: str
    against: str = ""
    model: dict = field(default_factory=dict)
    train: dict = field(default_factory=dict)


#: the CPU budget's model and training (tpar/configs/cpu/icews14-extrapolation.json)
BASE_MODEL = dict(dim=32, attn_dim=5, num_layers=3, dropout=0.2, activation="tanh")
BASE_TRAIN = dict(lr=2e-3, batch_size=10, micro_batch=10)
#: the paper's ICEWS14 choices (Appendix D.3 / E.3): lr 3e-4, batch 10, identity activation
PAPER = dict(model=dict(activation="identity"), train=dict(lr=3e-4))

LEVERS = [
    Lever("extrap/base", "extrapolation", "CPU budget: lr 2e-3, tanh, batch 10, exact propagation"),
    Lever("extrap/paper", "extrapolation", "the paper's lr 3e-4, identity, batch 10", "extrap/base", **PAPER),
    Lever("extrap/gate", "extrapolation", "+ GRU gate between steps", "extrap/base", model=dict(gate=True)),
    Lever("extrap/cosine", "extrapolation", "+ cosine lr schedule (to lr/10)", "extrap/base",
          train=dict(lr_schedule="cosine")),
    Lever("extrap/plateau", "extrapolation", "+ lr halved per epoch without a better valid MRR", "extrap/base",
          train=dict(lr_schedule="plateau")),
    Lever("extrap/W120+K128", "extrapolation", "propagation: window 120 + top-K 128 (score)", "extrap/base",
          model=dict(history_window=120, top_k=128)),
    Lever("extrap/W120+K128 learned", "extrapolation", "propagation: window 120 + top-K 128 (learned priority)",
          "extrap/base", model=dict(history_window=120, top_k=128, priority="learned")),
    Lever("interp/base", "interpolation", "CPU budget: lr 2e-3, tanh, batch 10, exact, background 3/4 (paper)"),
    Lever("interp/paper", "interpolation", "the paper's lr 3e-4, identity, batch 10", "interp/base", **PAPER),
    Lever("interp/gate", "interpolation", "+ GRU gate between steps", "interp/base", model=dict(gate=True)),
    Lever("interp/cosine", "interpolation", "+ cosine lr schedule (to lr/10)", "interp/base",
          train=dict(lr_schedule="cosine")),
    Lever("interp/background 4:1", "interpolation", "background 4/5 : questions 1/5 (RED-GNN's choice)",
          "interp/base", train=dict(background_fraction=0.8)),
    Lever("interp/W30+K128", "interpolation", "propagation: window 30 + top-K 128 (score; the scale config)",
          "interp/base", model=dict(history_window=30, top_k=128)),
    Lever("interp/W30+K128 learned", "interpolation", "propagation: window 30 + top-K 128 (learned priority)",
          "interp/base", model=dict(history_window=30, top_k=128, priority="learned")),
]


def data_root() -> Path:
    for p in (os.environ.get("TPAR_DATA_DIR"), ROOT.parent.parent / "shared" / "datasets"):
        if p and Path(p).is_dir():
            return Path(p)
    sys.exit("needs the public benchmarks: set TPAR_DATA_DIR or place them at ../shared/datasets")


def run_lever(lever: Lever, kg, seed: int, args) -> dict:
    model = ModelConfig(**{**BASE_MODEL, **lever.model})
    tcfg = TrainConfig(**{**BASE_TRAIN, **lever.train}, setting=lever.setting, epochs=args.epochs, patience=args.epochs,
                       max_train_queries=args.questions, max_valid_queries=args.valid, seed=seed,
                       checkpoint_every=1e9, calibrate=False, device="cpu")
    run = RunConfig(model, tcfg)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = train(kg, copy.deepcopy(run), Path(tmp) / "m.tpar", progress=False)
        wall = time.perf_counter() - t0
    valid = [h["valid_mrr"] for h in res.history]
    return {"lever": lever.name, "seed": seed, "best_valid_mrr": max(valid), "valid_by_epoch": valid,
            "seconds": res.seconds, "wall_seconds": wall, "config": run.to_dict()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=2000, help="training questions per epoch")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--valid", type=int, default=1000, help="seeded validation questions")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--only", nargs="*", help="lever names to run (default: all)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    root = data_root()
    kgs = {s: load_benchmark(root / s / "ICEWS14") for s in ("extrapolation", "interpolation")}
    json_path = OUT / "levers.json"
    done = json.loads(json_path.read_text())["rows"] if json_path.is_file() else []
    todo = [lv for lv in LEVERS if not args.only or lv.name in args.only]
    for lever in todo:
        for seed in args.seeds:
            done = [r for r in done if not (r["lever"] == lever.name and r["seed"] == seed)]
            row = run_lever(lever, kgs[lever.setting], seed, args)
            done.append(row)
            print(f"{lever.name:28s} seed {seed}: best valid MRR {100 * row['best_valid_mrr']:.2f} "
                  f"({row['seconds']:.0f} s)", flush=True)
            json_path.write_text(json.dumps({"budget": vars(args) | {"only": None}, "machine": hardware(),
                                             "data": {s: kg.fingerprint for s, kg in kgs.items()},
                                             "rows": done}, indent=1))
    write_report(json.loads(json_path.read_text()))


def write_report(data: dict) -> None:
    b = data["budget"]
    by = {}
    for r in data["rows"]:
        by.setdefault(r["lever"], []).append(r)
    mean = {k: sum(x["best_valid_mrr"] for x in v) / len(v) for k, v in by.items()}
    lines = ["# Levers at an equal budget (issue 12, step 2)", "",
             f"ICEWS14, L=3, d=32, {b['epochs']} epochs × {b['questions']:,} training questions from scratch; "
             f"best valid MRR % (realistic, time-aware filter, both directions) on {b['valid']:,} seeded valid "
             "questions; one lever changed against the row named in 'vs'. Seeds: "
             + ", ".join(str(s) for s in sorted({r["seed"] for r in data["rows"]})) + f". Machine: {data['machine'].get('platform', '?')}, "
             f"{data['machine'].get('cpu_threads', '?')} thread(s). `python benchmarks/levers.py`.", "",
             "| lever | setting | what changes | valid MRR by seed | mean | vs | Δ mean | s / run |",
             "|---|---|---|---|---|---|---|---|"]
    for lv in LEVERS:
        rows = sorted(by.get(lv.name, []), key=lambda r: r["seed"])
        if not rows:
            continue
        spread = " / ".join(f"{100 * r['best_valid_mrr']:.2f}" for r in rows)
        delta = (f"{100 * (mean[lv.name] - mean[lv.against]):+.2f}" if lv.against in mean else "")
        secs = sum(r["seconds"] for r in rows) / len(rows)
        lines.append(f"| {lv.name} | {lv.setting} | {lv.what} | {spread} | {100 * mean[lv.name]:.2f} | "
                     f"{lv.against} | {delta} | {secs:.0f} |")
    lines += ["", "Seconds are optimiser-step time on a machine shared with other runs: not comparable across rows "
              "(benchmarks/results/propagation.md has the controlled speed measurements). "
              "Δ compares the means over the seeds each row has (rows with one seed against the base row's mean). "
              "A Δ within the base row's seed spread is noise at this budget. The small budget favours "
              "levers that speed up early learning (a larger lr); it says little about the end of a long run, "
              "which the shipped checkpoints' learning curves show (`learning_curves.md`)."]
    (OUT / "levers.md").write_text("\n".join(lines) + "\n")
    print(OUT / "levers.md")


if __name__ == "__main__":
    main()
