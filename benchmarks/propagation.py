"""Exact vs pruned propagation: the accuracy side of the trade-off (issue: scalable propagation).

Every (setting, propagation) pair trains the same model (L=5, d=64, the CPU budget's other
hyper-parameters) on one full epoch of ICEWS14 training questions with the same seed, selects on a
seeded valid subset, and is evaluated on the whole test split (both directions, time-aware filter).
Runs are long on a 2-core CPU, so each writes a resume file every few minutes and this script
continues where it stopped:

    python benchmarks/propagation.py run --threads 1              # every pair not yet finished, in order
    python benchmarks/propagation.py run --only extrapolation:exact
    python benchmarks/propagation.py report                       # results/propagation.md + .svg

Speed (training ms/question, inference q/s, links per layer, memory) comes from ``tpar bench``, which
times exact and pruned propagation side by side in one run; the report joins both.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import platform
import sys
import time
from pathlib import Path

import torch

from tpar.data.benchmarks import find_data_dir
from tpar.data.loading import load_dataset
from tpar.model.checkpoint import Checkpoint
from tpar.model.config import ModelConfig, RunConfig, TrainConfig
from tpar.training.snapshots import resume_path
from tpar.training.trainer import train

from peers import TLOGIC_MEASURED, baseline_figures
from svgplot import frame

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results" / "propagation"
RUNS = ROOT.parent / "runs" / "propagation"
DATA = {"extrapolation": "extrapolation/ICEWS14", "interpolation": "interpolation/ICEWS14"}
#: the propagation options compared (name -> ModelConfig fields); "exact" is today's propagation
OPTIONS = {
    "exact": {},
    "window30+topk128": {"history_window": 30, "top_k": 128},
    "window60+topk64": {"history_window": 60, "top_k": 64},
    "window120+topk128": {"history_window": 120, "top_k": 128},
    "window250+topk256": {"history_window": 250, "top_k": 256},
    "window30": {"history_window": 30},
    "window60": {"history_window": 60},
    "topk128": {"top_k": 128},
    "window30+topk128-learned": {"history_window": 30, "top_k": 128, "priority": "learned"},
    "window120+topk128-learned": {"history_window": 120, "top_k": 128, "priority": "learned"},
    "cap64": {"link_cap": 64},
    # the first step exact (every fact of the subject, however old), the pruning from step 2 on
    "first-exact+window30+topk128": {"history_window": 30, "top_k": 128, "exact_steps": 1},
    "first-exact+window60+topk64": {"history_window": 60, "top_k": 64, "exact_steps": 1},
    "first-exact+topk32": {"top_k": 32, "exact_steps": 1},
    # only the most recent copy of each repeated fact (s, r, o): the same entities as exact are reached
    "repeats1": {"recent_repeats": 1},
    "first-exact+repeats1+topk128": {"recent_repeats": 1, "top_k": 128, "exact_steps": 1},
    # the first step exact, then per node its 12 / 16 / 24 / 32 links nearest t_q, repeats thinned
    "first-exact+repeats1+cap12": {"recent_repeats": 1, "link_cap": 12, "exact_steps": 1},
    "first-exact+repeats1+cap16": {"recent_repeats": 1, "link_cap": 16, "exact_steps": 1},
    "first-exact+repeats1+cap24": {"recent_repeats": 1, "link_cap": 24, "exact_steps": 1},
    "first-exact+repeats1+cap32": {"recent_repeats": 1, "link_cap": 32, "exact_steps": 1},
    "first-exact+cap32": {"link_cap": 32, "exact_steps": 1},
    "first-exact+repeats1+cap32+topk64": {"recent_repeats": 1, "link_cap": 32, "top_k": 64, "exact_steps": 1},
    # node pruning on top of cap 24: after the exact first step, only the K best-scoring entities of each
    # question send along links (the frontier holds about half the entities by step 5); cap24+topk256 is the
    # sparse default of every setting since 2026-11-26
    "first-exact+repeats1+cap24+topk256": {"recent_repeats": 1, "link_cap": 24, "top_k": 256, "exact_steps": 1},
    "first-exact+repeats1+cap24+topk512": {"recent_repeats": 1, "link_cap": 24, "top_k": 512, "exact_steps": 1},
    "first-exact+repeats1+cap24+topk1024": {"recent_repeats": 1, "link_cap": 24, "top_k": 1024, "exact_steps": 1},
    # the same over cap 32 (interpolation's and unified models' default until 2026-11-26)
    "first-exact+repeats1+cap32+topk256": {"recent_repeats": 1, "link_cap": 32, "top_k": 256, "exact_steps": 1},
    "first-exact+repeats1+cap32+topk512": {"recent_repeats": 1, "link_cap": 32, "top_k": 512, "exact_steps": 1},
}
#: options screened with `probe` on a trained model (and trained with `tpar train`, recorded with `converged`),
#: not part of the grid of one-epoch runs
SCREEN_ONLY = {k for k in OPTIONS if k.startswith(("first-exact+repeats1+cap24+topk", "first-exact+repeats1+cap32+topk"))
               and OPTIONS[k]["top_k"] >= 256} - {"first-exact+repeats1+cap24+topk256"}  # the default is a grid run
#: exact propagation trained for as long (wall-clock) as the candidate default's full epoch took: the
#: "better at equal training time" side of the comparison (its question budget comes from both runs)
EQUAL_TIME = "exact-equal-time"
#: the same against the sparse default of today (cap 24 + top-K 256 from step 2): exact propagation trained on as
#: many questions as it does in the time the default takes for its epoch, the speed ratio taken from the quiet
#: `tpar bench --threads 1` run of both in one process (BENCH), not from the grid rows' shared-machine timings
EQUAL_TIME_DEFAULT = "exact-equal-time-default"
DEFAULT = "first-exact+repeats1+cap24+topk256"
BENCH = {"extrapolation": ROOT / "results" / "bench.json", "interpolation": ROOT / "results" / "bench-interpolation.json"}
EQUAL_TIME_ROWS = (EQUAL_TIME, EQUAL_TIME_DEFAULT)
#: the candidate default and exact first (the comparison that matters), both settings, then the rest
FIRST = ("window30+topk128", "exact", EQUAL_TIME, "first-exact+window30+topk128", "first-exact+window60+topk64",
         "window120+topk128", "window250+topk256", EQUAL_TIME_DEFAULT)
ORDER = ([f"{s}:{o}" for s in DATA for o in FIRST]
         + [f"{s}:{o}" for s in DATA for o in OPTIONS if o not in FIRST and o not in SCREEN_ONLY])


def run_config(setting: str, options: dict) -> RunConfig:
    """L=5, d=64 and the CPU budget's other choices (tanh, lr 0.001, batches of 10), one full epoch."""
    model = ModelConfig(dim=64, attn_dim=5, num_layers=5, dropout=0.2, activation="tanh", **options)
    return RunConfig(model, TrainConfig(setting=setting, lr=0.001, batch_size=10, micro_batch=10, epochs=1,
                                        patience=1, max_train_queries=0, max_valid_queries=2000,
                                        checkpoint_every=300.0, seed=0))


def equal_time_budget(setting: str) -> int:
    """Training questions exact propagation does in the time the candidate default took for its epoch."""
    pruned = json.loads((RESULTS / f"{setting}-window30+topk128.json").read_text())
    exact = json.loads((RESULTS / f"{setting}-exact.json").read_text())
    return max(10, int(pruned["train_seconds"] / (exact["train_ms_per_question"] / 1000)))


def bench_speedup(setting: str) -> float:
    """Exact over sparse-default training ms per question, L=5, d=64 on ICEWS14, from one `tpar bench` run."""
    ms = {}
    for b in json.loads(BENCH[setting].read_text())["results"]:
        if b.get("data") == DATA[setting] and b.get("L") == 5 and b.get("d") == 64 and not b.get("gate"):
            opts = {k: v for k, v in b["propagation_options"].items() if v and k != "priority"}
            if opts == OPTIONS[DEFAULT]:
                ms["default"] = b["train_ms_per_query"]
            elif not opts:
                ms["exact"] = b["train_ms_per_query"]
    if set(ms) != {"default", "exact"}:
        sys.exit(f"{BENCH[setting]}: no L=5, d=64 exact and sparse-default rows for {DATA[setting]}")
    return ms["exact"] / ms["default"]


def equal_time_default_budget(setting: str) -> int:
    """Training questions exact propagation does in the time the sparse default takes for its full epoch."""
    default = json.loads((RESULTS / f"{setting}-{DEFAULT}.json").read_text())
    return max(10, int(default["train_questions"] / bench_speedup(setting)))


def run_one(key: str, threads: int) -> dict:
    setting, option = key.split(":")
    out = RUNS / f"{setting}-{option}.tpar"
    result_file = RESULTS / f"{setting}-{option}.json"
    if result_file.is_file():
        print(f"{key}: done already ({result_file})", flush=True)
        return json.loads(result_file.read_text())
    root = find_data_dir()
    if root is None:
        sys.exit("benchmarks not found: set TPAR_DATA_DIR or place them in ../shared/datasets")
    torch.set_num_threads(threads)
    kg = load_dataset(root / DATA[setting])
    resume = resume_path(out).is_file()
    print(f"{key}: {'resuming' if resume else 'starting'} ({out})", flush=True)
    t0 = time.time()
    run = run_config(setting, OPTIONS.get(option, {}))
    if option == EQUAL_TIME:
        run.train.max_train_queries = equal_time_budget(setting)
    elif option == EQUAL_TIME_DEFAULT:
        run.train.max_train_queries = equal_time_default_budget(setting)
    res = train(kg, run, out, resume=resume, progress=True, eval_test=True)
    if res.stopped in ("interrupted", "cancelled") or not res.history:
        # stopped by a signal (e.g. the session ended): the resume file is kept, no result is written
        sys.exit(f"{key}: {res.stopped}; resume file kept, rerun the same command to continue")
    ck = Checkpoint.load(out)
    queries = sum(h["queries"] for h in res.history)
    row = {"setting": setting, "option": option, "propagation": ck.config.model.propagation,
           "options": OPTIONS.get(option, {}), "config": ck.config.to_dict(), "data": DATA[setting],
           "fingerprint": kg.fingerprint, "train_questions": queries, "train_seconds": round(res.seconds, 1),
           "train_ms_per_question": round(1000 * res.seconds / max(queries, 1), 2),
           "wall_seconds_this_session": round(time.time() - t0, 1), "threads": threads,
           "machine": {"platform": platform.platform(), "processor": platform.processor(), "torch": torch.__version__},
           "valid": res.history[-1], "test": ck.metrics.get(f"test_{setting}", {})}
    RESULTS.mkdir(parents=True, exist_ok=True)
    result_file.write_text(json.dumps(row, indent=2))
    print(f"{key}: test realistic MRR {100 * row['test']['realistic']['mrr']:.2f}", flush=True)
    return row


def svg_plot(rows: list[dict], path: Path) -> None:
    """Test MRR against training ms per question, one panel per setting, runs in the order given (a
    dependency-free SVG).

    Each one-epoch run is a numbered marker (exact black, the sparse default green); dashed lines mark the peers
    measured here with the same protocol (the recurrency baseline, TLogic where measured), which train no
    propagation at all; a legend under each panel names the numbers."""
    W, H, pad = 520, 380, 60
    panels = [s for s in DATA if any(r["setting"] == s for r in rows)]
    legend_rows = max((sum(r["setting"] == s for r in rows) for s in panels), default=0)
    total_h = H + 16 * legend_rows + 20
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * len(panels)}" height="{total_h}" '
             'font-family="sans-serif" font-size="11">', f'<rect width="{W * len(panels)}" height="{total_h}" fill="white"/>']
    baselines = baseline_figures()
    for k, setting in enumerate(panels):
        mine = [r for r in rows if r["setting"] == setting]
        xs = [r["train_ms_per_question"] for r in mine]
        ys = [100 * r["test"]["realistic"]["mrr"] for r in mine]
        peers = [(f"recurrency {v:.2f}", v) for v in [baselines.get((setting, "ICEWS14", "recurrency"))] if v is not None]
        if setting == "extrapolation":
            peers.append((f"TLogic {TLOGIC_MEASURED:.2f}", TLOGIC_MEASURED))
        lo = min(ys + [v for _, v in peers]) - 2
        hi = max(ys + [v for _, v in peers]) + 2
        inner, X, Y = frame(W, H, (0.0, max(xs) * 1.1), (lo, hi), title=f"{setting}, ICEWS14 (one epoch, L=5, d=64)",
                            xlabel="training ms per question", ylabel="test MRR % (realistic)", xfmt=".0f", pad=pad)
        inner[0] = inner[0].replace("<svg ", f'<svg x="{k * W}" y="0" ', 1)

        def crowded(x0: float, x1: float, y: float) -> bool:
            """Whether a marker (or its number, drawn to its right) falls in the label box [x0, x1] around y."""
            return any(x0 - 24 <= X(mx) <= x1 + 6 and abs(Y(my) - y) < 16 for mx, my in zip(xs, ys))

        for label, v in peers:
            width = 6.5 * len(label)  # about 11 px sans-serif
            # the rightmost free place on the line (its right end when none is free)
            end = next((e for e in range(int(W - pad), int(pad + 4 + width), -10)
                        if not crowded(e - width, e, Y(v) - 8)), W - pad)
            inner += [f'<line x1="{pad}" y1="{Y(v):.1f}" x2="{W - pad}" y2="{Y(v):.1f}" stroke="#6b7280" '
                      'stroke-dasharray="5 4"/>',
                      f'<text x="{end}" y="{Y(v) - 4:.1f}" text-anchor="end" fill="#374151">{html.escape(label)}</text>']
        legend = []  # under the panel, in the outer SVG (the panel's own clips at its height)
        for n, (r, x, y) in enumerate(zip(mine, xs, ys), 1):
            c = {"exact": "black", DEFAULT: "#15803d"}.get(r["option"], "#1d4ed8")
            inner += [f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="4" fill="{c}"/>',
                      f'<text x="{X(x) + 6:.1f}" y="{Y(y) - 4:.1f}" fill="{c}">{n}</text>']
            legend.append(f'<text x="{k * W + pad}" y="{H + 16 * n:.0f}" fill="{c}">{n}: '
                          f'{html.escape(r["propagation"])} -- {y:.2f} MRR, {x:g} ms</text>')
        parts += inner + ["</svg>"] + legend
    path.write_text("\n".join(parts + ["</svg>"]), encoding="utf-8")


CONVERGENCE = RESULTS / "convergence"
PROBE = RESULTS / "probe"  # one file per setting (and --tag: per screened checkpoint)


def probe(checkpoint: Path, data: Path, options: list[str], questions: int, batches: int, threads: int,
          tag: str = "", reference: str = "exact") -> dict:
    """A cheap screen of propagation options before any is trained: one trained checkpoint scored on a
    seeded subset of valid questions under each option (its weights unchanged), and each option's training cost per
    question (forward + backward of the checkpoint's architecture on the same training batches),
    all in one process, options interleaved batch by batch so machine noise hits them alike.
    A model trained with an option adapts to it; a screen, not a result. ``reference``: the option every row is
    compared with (default exact; on a large graph exact may not fit in memory); ``batches`` 0 skips the training
    cost."""
    from dataclasses import replace

    from tpar.evaluation.protocol import evaluate
    from tpar.model.network import TPAR
    from tpar.model.ranker import ModelRanker

    torch.set_num_threads(threads)
    ck = Checkpoint.load(checkpoint)
    kg = load_dataset(data)
    base = ck.config.model.with_exact_propagation()
    weights = {k: v for k, v in ck.weights.items() if not k.startswith("priority.")}
    names = [reference] + [o for o in options if o != reference]
    models = {}
    for name in names:
        models[name] = TPAR(replace(base, **OPTIONS[name]))
        models[name].load_state_dict(weights, strict=False)
    rows = {n: {"option": n, "propagation": models[n].cfg.propagation} for n in names}
    for n in names:  # accuracy of the trained weights under each option
        t0 = time.perf_counter()
        res = evaluate(kg, ModelRanker(models[n].eval(), "cpu", micro_batch=16), ck.setting, "valid",
                       max_queries=questions, seed=0, progress=False)
        rows[n]["valid_mrr_subset"] = round(100 * res.metrics().mrr, 2)
        rows[n]["inference_q_per_s"] = round(len(res.queries) / (time.perf_counter() - t0), 1)
    if batches:  # training cost, interleaved (the training background and plan are built only for it)
        spent = _training_cost(kg, ck.setting, base, models, batches)
        for n in names:
            rows[n]["train_ms_per_question"] = round(1000 * spent[n] / (10 * batches), 2)
            rows[n]["train_speedup"] = round(spent[reference] / spent[n], 2)
    out = {"checkpoint": str(checkpoint), "setting": ck.setting, "fingerprint": ck.data_fingerprint,
           "reference": reference, "data": Path(data).name, "trained_with": ck.config.model.propagation,
           "valid_questions": questions, "train_batches": batches, "threads": threads,
           "platform": platform.platform(), "rows": list(rows.values()),
           "command": "python benchmarks/propagation.py probe " + " ".join(sys.argv[2:])}
    PROBE.mkdir(parents=True, exist_ok=True)
    (PROBE / f"{ck.setting}{'-' + tag if tag else ''}.json").write_text(json.dumps(out, indent=2))
    return out


def _training_cost(kg, setting: str, base: ModelConfig, models: dict, batches: int) -> dict[str, float]:
    """Seconds of forward + backward each model spends on the same ``batches`` training batches of 10, the models
    interleaved batch by batch so machine noise hits them alike."""
    from tpar.model.network import multiclass_log_loss
    from tpar.training.plan import EpochPlan, extrapolation_background

    run = RunConfig(base, TrainConfig(setting=setting, batch_size=10, micro_batch=10, epochs=1, seed=0))
    plan = EpochPlan(kg, run, 0, extrapolation_background(kg, setting))
    spent = dict.fromkeys(models, 0.0)
    for i in range(batches):
        kind, batch = plan.batch(i, 10)
        for n, m in models.items():
            m.train()
            t0 = time.perf_counter()
            multiclass_log_loss(m(batch, plan.backgrounds[kind]), batch.answer).backward()
            spent[n] += time.perf_counter() - t0
            m.zero_grad(set_to_none=True)
    return spent


def probe_lines() -> list[str]:
    lines = []
    for path in sorted(PROBE.glob("*.json")):
        lines += _probe_lines(json.loads(path.read_text()))
    return lines


def _probe_lines(p: dict) -> list[str]:
    ref_name = p.get("reference", "exact")  # probes before 2026-11-27 always compared with exact
    ref = next(r for r in p["rows"] if r["option"] == ref_name)
    timed = p["train_batches"] > 0
    data = f" on {p['data']}" if "data" in p else ""
    lines = ["", f"## Screening options on a trained model: {p['setting']} ({Path(p['checkpoint']).stem}{data})", "",
             f"`{Path(p['checkpoint']).name}` ({p['setting']}"
             + (f", trained with {p['trained_with']}" if "trained_with" in p else "")
             + ") scored under each option without retraining, on "
             f"{p['valid_questions']:,} seeded valid questions"
             + (f"; training cost = forward + backward on the same {p['train_batches']} training batches of 10, "
                f"options interleaved" if timed else " (no training cost measured)")
             + f", {p['threads']} thread. A model trained with an option adapts to it"
             + (", and in the runs so far lost less than here (Trained to convergence, above). " if ref_name == "exact"
                else ". ")
             + f"Command: `{p['command']}`.", "",
             f"| propagation | valid MRR (subset) | vs {ref['propagation']} | "
             "inference q/s" + (" | train ms/question | training speed-up |" if timed else " |"),
             "|---|---|---|---|" + ("---|---|" if timed else "")]
    for r in p["rows"]:
        lines.append(f"| {r['propagation']} | {r['valid_mrr_subset']:.2f} | {r['valid_mrr_subset'] - ref['valid_mrr_subset']:+.2f} | "
                     f"{r['inference_q_per_s']} |" + (f" {r['train_ms_per_question']} | {r['train_speedup']}x |" if timed else ""))
    return lines


def record_convergence(name: str, checkpoint: Path, command: str, test_json: Path | None = None) -> dict:
    """A model trained to convergence (its whole schedule, selected on all valid questions), as one row:
    its propagation, the optimiser-step seconds and questions of the whole run (warm starts included),
    the valid history and the test figures (``tpar evaluate --json``, else the checkpoint's own)."""
    ck = Checkpoint.load(checkpoint)
    seconds, questions = ck.extra.get("seconds", 0.0), sum(h.get("queries", 0) for h in ck.history)
    for warm in ck.warm_starts():  # a chain of warm starts counts whole
        seconds += warm.get("seconds") or 0.0
        questions += sum(h.get("queries", 0) for h in warm.get("history") or [])
    test = json.loads(test_json.read_text())["realistic"] if test_json else \
        ck.metrics.get(f"test_{ck.setting}", {}).get("realistic", {})
    hw = ck.extra.get("hardware", {})
    row = {"name": name, "setting": ck.setting, "propagation": ck.config.model.propagation, "config": ck.config.to_dict(),
           "fingerprint": ck.data_fingerprint, "train_seconds": round(seconds, 1), "train_questions": questions,
           "train_ms_per_question": round(1000 * seconds / max(questions, 1), 2), "threads": hw.get("cpu_threads"),
           "valid_history": [round(100 * h["valid_mrr"], 2) for h in ck.history if "valid_mrr" in h],
           "best_epoch": ck.extra.get("best_epoch"), "test": test, "command": command, "checkpoint": str(checkpoint)}
    CONVERGENCE.mkdir(parents=True, exist_ok=True)
    (CONVERGENCE / f"{name}.json").write_text(json.dumps(row, indent=2))
    return row


def convergence_lines() -> list[str]:
    rows = [json.loads(p.read_text()) for p in sorted(CONVERGENCE.glob("*.json"))]
    if not rows:
        return []
    lines = ["", "## Trained to convergence", "",
             "The same model, schedule and questions for each propagation, each selected on **all** valid questions; "
             "test = every test question, both directions, time-aware filter, realistic ties. Training ms/question is "
             "the whole run's optimiser-step time over its questions (one thread; the runs shared the 2 cores with "
             "other work, so compare the speed ratios in the `tpar bench` table below, measured in one run).", "",
             "| model | setting | propagation | training questions | train ms/question | valid MRR by epoch | "
             "test MRR | H@1 | H@10 | command |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["setting"], r["propagation"] != "exact", r["name"])):
        t = r["test"]
        lines.append(f"| {r['name']} | {r['setting']} | {r['propagation']} | {r['train_questions']:,} | "
                     f"{r['train_ms_per_question']} | {', '.join(f'{v:.2f}' for v in r['valid_history'])} | "
                     f"{100 * t.get('mrr', float('nan')):.2f} | {100 * t.get('hits@1', float('nan')):.2f} | "
                     f"{100 * t.get('hits@10', float('nan')):.2f} | `{r['command']}` |")
    return lines


def report(bench_file: Path | None) -> None:
    rows = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))]
    rows.sort(key=lambda r: (r["setting"], list(OPTIONS).index(r["option"]) if r["option"] in OPTIONS else 1.5))
    lines = ["# Exact vs pruned propagation", "",
             "ICEWS14, L=5, d=64, tanh, lr 0.001, batches of 10, one full epoch of training questions, seed 0; "
             "selected on 2,000 seeded valid queries; test = every test query, both directions, time-aware filter. "
             "Command: `python benchmarks/propagation.py run --threads 1` then `python benchmarks/propagation.py report`.",
             "", "| setting | propagation | training questions | train ms/question | valid MRR (subset) | test MRR | "
             "H@1 | H@10 | threads |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = r["test"].get("realistic", {})
        prop = r["propagation"] + {EQUAL_TIME: " (equal training time: window=30+top_k=128)",
                                   EQUAL_TIME_DEFAULT: " (equal training time: the sparse default)"}.get(r["option"], "")
        lines.append(f"| {r['setting']} | {prop} | {r['train_questions']:,} | {r['train_ms_per_question']} | "
                     f"{100 * r['valid'].get('valid_mrr', float('nan')):.2f} | {100 * t.get('mrr', float('nan')):.2f} | "
                     f"{100 * t.get('hits@1', float('nan')):.2f} | {100 * t.get('hits@10', float('nan')):.2f} | "
                     f"{r['threads']} |")
    missing = [k for k in ORDER if not (RESULTS / f"{k.replace(':', '-')}.json").is_file()]
    if missing:
        lines += ["", "Not yet run (or still running): " + ", ".join(missing) + "."]
    if rows:
        lines += ["", "![test MRR against training ms per question, one panel per setting](propagation.svg)", "",
                  "The plot (`propagation.svg`, written by the same `report` command): every one-epoch row above but "
                  "the equal-time ones, exact in black, the sparse default in green; dashed lines mark the recurrency "
                  "baseline and (extrapolation) TLogic, measured here with the same protocol (`benchmarks/peers.py`; "
                  "they train no propagation, so they have no place on the x axis). The x axis is each run's own "
                  "timing: rows that shared the machine with other jobs sit to the right of where a quiet machine "
                  "puts them (the *Speed* table's `tpar bench` run is the like-for-like speed comparison)."]
    lines += convergence_lines()
    lines += probe_lines()
    if bench_file and bench_file.is_file():
        bench = json.loads(bench_file.read_text())
        lines += ["", f"## Speed (`tpar bench`, {bench_file.name})", "",
                  "| data | L | d | propagation | train ms/q | inference q/s | peak MB | links per test question per layer |",
                  "|---|---|---|---|---|---|---|---|"]
        for b in bench.get("results", []):
            if "error" in b or "skipped" in b:
                continue
            lines.append(f"| {b['data']} | {b['L']} | {b['d']} | {b.get('propagation', 'exact')} | {b['train_ms_per_query']} | "
                         f"{b['infer_queries_per_s']} | {b['peak_memory_mb']:.0f} | "
                         f"{', '.join(f'{x:,.0f}' for x in b['links_per_query_per_layer_test'])} |")
    notes = ROOT / "results" / "propagation-notes.md"  # hand-written sections (scale, GPU), kept at the end
    if notes.is_file():
        lines += ["", notes.read_text(encoding="utf-8").rstrip("\n")]
    out = ROOT / "results" / "propagation.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if rows:
        svg_plot([r for r in rows if r["option"] not in EQUAL_TIME_ROWS], ROOT / "results" / "propagation.svg")
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--only", nargs="*", choices=ORDER, help="setting:option pairs (default: all, in order)")
    r.add_argument("--threads", type=int, default=1)
    rp = sub.add_parser("report")
    rp.add_argument("--bench", type=Path, default=ROOT / "results" / "bench.json")
    cv = sub.add_parser("converged", help="record a model trained to convergence as a row of the report")
    cv.add_argument("--name", required=True)
    cv.add_argument("--checkpoint", type=Path, required=True)
    cv.add_argument("--train-command", required=True, help="the command that trained it (shown in the report)")
    cv.add_argument("--test-json", type=Path, help="`tpar evaluate --json` output of its test evaluation")
    pb = sub.add_parser("probe", help="screen options on one trained checkpoint: accuracy without retraining, training cost")
    pb.add_argument("--checkpoint", type=Path, required=True)
    pb.add_argument("--data", type=Path, required=True)
    pb.add_argument("--options", nargs="+", choices=list(OPTIONS), required=True)
    pb.add_argument("--questions", type=int, default=1000)
    pb.add_argument("--batches", type=int, default=30, help="training batches timed per option (0: none)")
    pb.add_argument("--reference", choices=list(OPTIONS), default="exact",
                    help="the option every row is compared with (default exact)")
    pb.add_argument("--threads", type=int, default=1)
    pb.add_argument("--tag", default="", help="kept as probe/SETTING-TAG.json beside the others (default: replaces "
                    "probe/SETTING.json)")
    args = ap.parse_args()
    if args.command == "probe":
        if args.tag and not re.fullmatch(r"[A-Za-z0-9_.-]+", args.tag):
            ap.error(f"--tag {args.tag!r}: letters, digits, '.', '_' and '-' only")
        if args.batches < 0 or args.questions < 1:
            ap.error("--batches must be 0 or more and --questions 1 or more")
        out = probe(args.checkpoint, args.data, args.options, args.questions, args.batches, args.threads, args.tag,
                    args.reference)
        print("\n".join(probe_lines()))
    elif args.command == "run":
        for key in args.only or ORDER:
            run_one(key, args.threads)
    elif args.command == "converged":
        print(json.dumps(record_convergence(args.name, args.checkpoint, args.train_command, args.test_json), indent=2))
    else:
        report(args.bench)


if __name__ == "__main__":
    main()
