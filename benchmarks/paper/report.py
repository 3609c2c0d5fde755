"""benchmarks/results/paper.md from the experiments' JSON rows: our figures beside the paper's, the
gap said in numbers, and one SVG plot per experiment (dependency-free)."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from peers import TLOGIC_MEASURED, TLOGIC_SOURCE, baseline_figures  # noqa: E402
from svgplot import frame  # noqa: E402

#: the paper's figures (test MRR %, ICEWS14 / YAGO11k), by table
PAPER = {
    "path_length": {"YAGO11k": {1: 10.32, 2: 10.84, 3: 21.03, 4: 21.62, 5: 24.12}},  # Table 7 (appendix)
    "chronological": {"relaxed": 46.89, "strict": 45.77, "TLogic relaxed": 42.02, "TLogic strict": 43.04},  # Table 8
    # Tables 3 and 5: TPAR→TPAR and TPAR alone at 60/70/80% known (Table 3 prints 36.36 for C alone, Table 5 46.36)
    "pipeline": {"TPAR pipeline": {60: 44.56, 70: 46.07, 80: 46.66}, "TPAR alone": {60: 43.86, 70: 45.49, 80: 46.36}},
}
ROOT = Path(__file__).resolve().parents[2]
#: ICEWS18 extrapolation: everything tried, in order (no checkpoint reaches #29's bar of 35.8)
ICEWS18_NOTE = (
    "No ICEWS18 checkpoint is shipped: none reaches #29's bar of 35.8 on test. The figure in the table is the best "
    "model measured here, a composite chosen on valid only and tested once (below).",
    "Transfer: the sparse ICEWS14 model (`icews14-extrapolation-sparse`) zero-shot: 33.71; fine-tuned on ICEWS18 from "
    "it (`tpar train --init checkpoints/icews14-extrapolation-sparse.tpar --lr 3e-4 --lr-schedule cosine --epochs 3 "
    "--max-train-queries 40000 --max-valid-queries 5000`: 120,000 questions, 30 min on one thread): 34.17 "
    "(`benchmarks/results/transfer.md`); two more stages on a lent H200 (780,000 questions, 5 min): 34.52 "
    "(`runs/icews18-gpu/`, `benchmarks/results/gpu.md`); with the history prior chosen on valid: 34.46.",
    "A composite of that model, an L=5 one fine-tuned on the H200 from an L=5 ICEWS14 model (34.10 alone) and the "
    "history prior, chosen on 5,000 valid questions (valid 36.61): 35.06 (`runs/gpu-members/README.md`).",
    "**The best**: two more L=5 members trained 4.3-4.4 min each on a lent H200 (valid 35.16 and 35.12 alone) in a "
    "composite with the first model and the prior, chosen on valid (36.72): **35.09** on all 99,090 test questions "
    "(H@1 24.96, H@10 55.05; `runs/icews18-gpu3/README.md` holds its commands and the shipping rule written before "
    "its test was read).",
    "What did not move the composite on valid (so none was tested): a CPU stage of the first L=5 member (106 min, "
    "36.63 against 36.61; `runs/icews18-cpu/`); a fourth GPU stage (the members +0.21 and +0.15 alone, the composite "
    "36.72 again; `runs/icews18-gpu4/`); CPU stages of the L=3 member (600,000 questions, 183 min: 36.72 -> 36.74; "
    "`runs/icews18-cpu2/`) and of the L=5 member (400,000 questions, 246 min: 36.74; `runs/icews18-cpu3/`); a learned "
    "mix with wider history features (any relation, reciprocity, a β per relation: 35.35 held out either way) and "
    "rules distilled from a member as one more feature (-0.08 held out; `runs/prior-mix/README.md`).",
    "Reading: composites of d=64 members fine-tuned from ICEWS14 for GPU minutes level off near 35.1 however their "
    "members improve on valid; 35.8 needs members near it alone, which is GPU hours of the paper's recipe (L=5, many "
    "epochs on ICEWS18 itself), more than the 15 minutes a session is lent.",
)


@dataclass(frozen=True)
class PaperRow:
    """One row of the paper's Tables 1 and 2 and what answers it here."""

    table: str
    setting: str
    data: str
    paper: float  # the paper's test MRR %
    checkpoint: str | None  # the shipped checkpoint (checkpoints/<name>.tpar) or None
    note: tuple[str, ...]  # how it was made / why there is none: one bullet each
    #: the best model measured here that is not shipped (below the issue's bar): its checkpoint and test JSON
    unshipped: tuple[str, str] | None = None
    reproduce: str = ""  # where no checkpoint is shipped
    #: the best single model measured here on test, where ours is a composite (the paper's figures are one model
    #: each): a checkpoint or test JSON under the repository that records it, else its figure and where it is
    #: written down (a model kept only in git or in a run's README)
    single: str | tuple[float, str] | None = None


#: Tables 1 (interpolation) and 2 (extrapolation), in the paper's order
RESULTS_TABLE = [
    PaperRow('1', 'interpolation', 'ICEWS14', 65.07, 'icews14-interpolation',
             ('a composite: **two trainings with weights and the history prior, all chosen on valid** (valid 66.24; S ='
              ' ⅓·f₁/T₁ + ⅔·f₂/T₂ + 0.05·log(1 + ψ/1e-9)) -- `tpar ensemble --checkpoints L3.tpar L5TAIL3.tpar '
              'TOPK.tpar --data …/interpolation/ICEWS14 --prior --weights --betas 0.025 0.05 0.1 0.2 0.4 --eps 1e-9 '
              '1e-8 1e-7 1e-6 1e-5 1e-4`: L3 the model shipped alone before (`git show '
              '84ac7a3:checkpoints/icews14-interpolation.tpar`, test 63.64), L5TAIL3 an L=5, d=64 model (`--config '
              'tpar/configs/cpu/icews14-interpolation.json --gate --dim 64 --num-layers 5 --lr 1e-3 --lr-schedule '
              'cosine --epochs 6`) with three cosine tails in the sparse default (valid 65.46 alone), TOPK an L=3 model'
              ' in the sparse default (test 62.72), which the weight search gave weight 0 (left out); `tpar retrain '
              'icews14-interpolation` runs all eight stages (`runs/icews14-interp-l5/`, `runs/icews14-interp-'
              'composite/`)',),
             single=(63.64, "the composite's L=3 member, shipped alone before: `git show "
                            "84ac7a3:checkpoints/icews14-interpolation.tpar`")),
    PaperRow('1', 'interpolation', 'YAGO11k', 24.12, 'yago11k-interpolation',
             ('`tpar train --data …/interpolation/YAGO11k --setting interpolation --config '
              'tpar/configs/cpu/yago11k-interpolation.json --gate --num-layers 5 --dim 64 --epochs 30 --patience 6 '
              '--propagation exact`, then two cosine tails (tpar.md)',)),
    PaperRow('1', 'interpolation', 'ICEWS05-15', 69.33, None,
             ('no training file in the data here: no model can be trained',),
             reproduce="no training file here"),
    PaperRow('1', 'interpolation', 'WIKIDATA12k', 34.89, 'wikidata12k-interpolation',
             ('a composite: **two trainings (seeds 0 and 1) and the history prior, chosen on valid** (valid 35.96; each'
              ' alone: valid 35.21 / 35.58, test 34.82 / 35.04) -- each `tpar train --data …/interpolation/WIKIDATA12k '
              '--setting interpolation --config tpar/configs/cpu/yago11k-interpolation.json --gate --num-layers 5 --dim'
              ' 64 --epochs 30 --patience 6 --max-valid-queries 0 [--train-seed 1]` (the sparse default of the time, '
              'cap 32; stopped by hand in epochs 20 and 16), a cosine tail `--init … --lr 3e-4 --lr-schedule cosine '
              '--epochs 4 --patience 4 --max-valid-queries 0`, then `tpar ensemble --checkpoints TAIL0 TAIL1 --prior`; '
              'or `tpar retrain wikidata12k-interpolation`',
              'measured again on 2026-11-29 after interpolation\'s cap stopped depending on whether a question\'s own '
              'fact is in the data (35.43 before; one rank moved)',
              'the benchmark\'s test split repeats 132 training facts (its intervals\' bounds repeat): their 264 '
              'questions score MRR 99.1, and without them the figure is 34.3 -- about 1.1 points any method gets on '
              'this split, the paper\'s figure included'),
             single=(35.04, "the composite's seed-1 model: `runs/wd12k-s1/README.md`")),
    PaperRow('2', 'extrapolation', 'ICEWS14', 46.89, 'icews14-extrapolation',
             ('a composite of **sparse-default models only and a fitted history prior, all chosen on valid** (valid '
              '48.67; shipped since 2026-11-27, issue #28) -- `tpar ensemble --checkpoints S0.tpar S1.tpar S2.tpar '
              'L5.tpar L5TAIL.tpar --data …/extrapolation/ICEWS14 --prior --weights --seed 7 --betas 0.0125 0.025 0.05 '
              '0.1 0.2 --eps 1e-12 1e-11 1e-10 1e-9 1e-8 1e-7 1e-6` kept S0 : S1 : L5TAIL = 2 : 1 : 2 (ε 1e-12, β '
              '0.05); S0, S1, S2 trained by `tpar train --data …/extrapolation/ICEWS14 --setting extrapolation --config'
              ' tpar/configs/cpu/icews14-extrapolation.json --gate --dim 64 --lr-schedule cosine --epochs 6 --patience '
              '3 --max-train-queries 60000 --max-valid-queries 0 [--train-seed 1|2]` (valid 47.71, 47.25, 46.74), L5 '
              'the same with `--num-layers 5 --lr 1e-3 --epochs 4` (46.35), L5TAIL from it `--init L5.tpar --lr 5e-4 '
              '--lr-schedule cosine --batch-size 32 --micro-batch 32 --epochs 3 --max-train-queries 50000 --max-valid-'
              'queries 0 --train-seed 3` (46.91; 4 min on a lent H200, about 35 min on one CPU thread); `tpar retrain '
              'icews14-extrapolation` runs all (`runs/gpu-members/README.md`). Shipped before it: the mixed composite '
              'of an exact, a cap-24 and a sparse-default model (valid 48.64, test 47.24; `git show '
              '789f717:checkpoints/icews14-extrapolation.tpar`)',),
             single="checkpoints/icews14-extrapolation-sparse.tpar"),
    PaperRow('2', 'extrapolation', 'ICEWS18', 35.76, None,
             ICEWS18_NOTE,
             unshipped=("runs/icews18-gpu3/i18-comp.tpar", "runs/icews18-gpu3/i18-comp-test.json"),
             reproduce="`runs/icews18-gpu3/README.md`", single="runs/icews18-gpu/i18g2-test.json"),
    PaperRow('2', 'extrapolation', 'YAGO', 91.53, 'yago-extrapolation',
             ('`tpar train --data …/extrapolation/YAGO --setting extrapolation --config tpar/configs/cpu/yago-'
              'extrapolation.json --propagation exact`',)),
    PaperRow('2', 'extrapolation', 'WIKI', 83.2, None,
             ('no training file in the data here: no model can be trained',),
             reproduce="no training file here"),
]


def load_all(results: Path) -> dict[str, dict[str, dict[str, dict]]]:
    """{budget folder: {experiment folder: {file stem: row}}} under ``results``."""
    return {budget.name: {exp.name: {f.stem: json.loads(f.read_text()) for f in sorted(exp.glob("*.json"))}
                          for exp in budget.iterdir() if exp.is_dir()}
            for budget in sorted(p for p in results.glob("*") if p.is_dir())}



def _fmt(x) -> str:
    return "–" if x is None or x != x else f"{x:.2f}"


def _gap(ours, paper) -> str:
    return "–" if ours is None or paper is None else f"{ours - paper:+.2f}"


def svg_lines(series: dict[str, list[tuple[float, float]]], title: str, xlabel: str, path: Path) -> None:
    """A line plot of MRR (y) against ``xlabel`` (x), one line per series."""
    W, H, pad = 640, 360, 60
    pts = [p for s in series.values() for p in s] or [(0, 0)]
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(p[1] for p in pts) - 2, max(p[1] for p in pts) + 2
    colours = ["#1d4ed8", "#ea580c", "#059669", "#7c3aed", "#dc2626", "#64748b"]
    out, X, Y = frame(W, H, (x0, x1), (y0, y1), xlabel=xlabel, ylabel="test MRR % (realistic)", title=title, pad=pad)
    for i, (name, s) in enumerate(series.items()):
        c = colours[i % len(colours)]
        s = sorted(s)
        dash = ' stroke-dasharray="5 4"' if name.startswith("paper") else ""
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="'
                   + " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in s) + '"/>')
        out += [f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3" fill="{c}"/>' for x, y in s]
        out.append(f'<text x="{W - pad + 4 - 150}" y="{pad + 14 * i}" fill="{c}">{html.escape(name)}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out))


def write_report(results: Path, out_dir: Path) -> Path:
    every = load_all(results)
    main = max(every, key=lambda b: sum(map(len, every[b].values())), default=None)
    rows = every.get(main, {})
    seeds = [every[b].get("pipeline", {}) for b in sorted(every) if b == main or b.startswith(f"{main}-seed")]
    budget = next((r["budget"] for exp in rows.values() for r in exp.values() if "budget" in r), None)
    lines = ["# The paper's results, rerun here", ""] + _results_table()
    lines += ["## The paper's other experiments", "",
              "Each figure is a test MRR % (both directions, time-aware filter, realistic ties; models selected on "
              "valid only) from `python benchmarks/paper/run.py <experiment>`; the paper's figure is beside it where "
              "the paper prints one. The budget is this 2-core CPU's, far below the paper's (L=5, d=128, many "
              "epochs) and the shipped checkpoints' above, so absolute figures trail the paper; what is tested is the "
              "*direction* of each claim.", ""]
    if budget:
        from experiments import Budget

        lines += [f"Budget `{budget['name']}`: " + Budget(**budget).describe() + ".", ""]
    lines += _path_length(rows.get("path_length", {}), out_dir)
    lines += _chronological(rows.get("chronological", {}))
    lines += _sparsity(rows.get("sparsity", {}), out_dir)
    lines += _pipeline(rows.get("pipeline", {}), out_dir)
    if len([s for s in seeds if s]) > 1:
        lines += _pipeline_seeds(seeds)
    discussion = Path(__file__).with_name("discussion.md")  # the reading of the figures, written by hand
    if discussion.is_file():
        lines += [discussion.read_text().rstrip(), ""]
    path = out_dir / "paper.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _trained(ck) -> tuple[float, str]:
    """(hours of optimiser steps, warm starts included; the machines) of a checkpoint; a composite: its models'
    training summed, plus the time choosing it on valid took. A warm start two members share (one parent model)
    counts once. Models trained on different machines (a lent GPU for one of them): each machine with its hours."""
    hours: dict[str, float] = {}
    threads: set[int] = set()
    seen: set[tuple] = set()

    def add(hw: object, seconds: float) -> None:
        hw = hw if isinstance(hw, dict) else {}
        where = hw.get("gpu") or "CPU"
        if where == "CPU" and isinstance(hw.get("cpu_threads"), int):
            threads.add(hw["cpu_threads"])
        hours[where] = hours.get(where, 0.0) + (seconds or 0.0) / 3600

    for m in ck.member_checkpoints:
        add(m.extra.get("hardware", {}), m.extra.get("seconds", 0.0))
        for w in m.warm_starts():
            key = (w.get("from"), w.get("data_fingerprint"), w.get("epochs"), w.get("seconds"))
            if key not in seen:
                seen.add(key)
                add(w.get("hardware") or m.extra.get("hardware", {}), w.get("seconds") or 0.0)
    if ck.kind == "composite":  # choosing it on valid: where the ensemble ran
        add(ck.extra.get("hardware", {}), ck.extra.get("seconds", 0.0))
    n = "-".join(map(str, sorted({min(threads), max(threads)}))) if threads else "?"
    cpu = f"CPU, {n} thread{'' if n == '1' else 's'}"
    if set(hours) == {"CPU"}:
        return sum(hours.values()), f"{cpu}, no GPU"
    return sum(hours.values()), "; ".join(f"{cpu if k == 'CPU' else k}: {h:.2f} h"
                                          for k, h in sorted(hours.items(), key=lambda kv: -kv[1]))


def _single(row: PaperRow) -> tuple[float | None, str]:
    """(the best single model's test MRR %, where it comes from) of a row whose ``single`` names it: read from the
    checkpoint or test JSON it names (None when that file is absent), or the figure written beside its source."""
    from tpar.model.checkpoint import Checkpoint

    if isinstance(row.single, tuple):
        return row.single
    path = ROOT / str(row.single)
    if not path.is_file():
        return None, f"`{row.single}` (absent)"
    if path.suffix == ".json":
        return 100 * json.loads(path.read_text())["realistic"]["mrr"], f"`{row.single}`"
    test = Checkpoint.load(path).metrics.get(f"test_{row.setting}", {}).get("realistic", {})
    return (100 * test["mrr"] if "mrr" in test else None), f"`{row.single}`"


def _results_table() -> list[str]:
    """Tables 1 and 2 of the paper, row by row: its figure, ours (the shipped checkpoint's, or the best model
    measured here, marked not shipped), the gap, the best peer measured here (recurrency baseline; TLogic where
    measured), the training hours, one reproduce command; then how each row was made."""
    from tpar.model.checkpoint import Checkpoint

    base = baseline_figures()
    lines = ["## Tables 1 and 2", "",
             "Test MRR %, both directions, time-aware filter, realistic ties, each model selected on valid only; ours = the "
             "shipped checkpoint (`checkpoints/`, its card beside it; `python benchmarks/reproduce_checkpoints.py` "
             "re-evaluates each, `tpar retrain <name>` trains it again from the data, stage by stage). Peers measured "
             "here with the same protocol: the recurrency baseline (`python benchmarks/baselines.py`) and, on ICEWS14 "
             "extrapolation, TLogic (reference code; " + TLOGIC_SOURCE + "). How each row was made follows the table. "
             "*Best single model here*: the paper's figures are one model each; "
             f"{('no', 'one', 'two', 'three', 'four', 'five', 'six')[sum(1 for r in RESULTS_TABLE if r.single)]} of ours "
             "are composites (several GRU-gated models and a "
             "history prior, chosen on valid), so the column beside them gives the best single model measured here on "
             "test (" + "; ".join(f"{r.data} {r.setting}: {_single(r)[1]}" for r in RESULTS_TABLE if r.single)
             + "). Every one of them is gated and smaller than the paper's L=5, d=128.", "",
             "| table | setting | data | paper | ours | gap | best single model here | best peer here | training hours, "
             "machine | reproduce |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for row in RESULTS_TABLE:
        peers = []
        if (row.setting, row.data, "recurrency") in base:
            peers.append(f"recurrency {base[(row.setting, row.data, 'recurrency')]:.2f}" + (
                " (no train split here: history from valid and test only, not comparable with the paper's)"
                if row.reproduce == "no training file here" else ""))
        if (row.setting, row.data) == ("extrapolation", "ICEWS14"):
            peers.append(f"TLogic {TLOGIC_MEASURED:.2f}")
        ours = hours = None
        machine, shown, reproduce = "–", "–", row.reproduce or "–"
        path = ROOT / "checkpoints" / f"{row.checkpoint}.tpar" if row.checkpoint else None
        if path is not None and path.is_file():
            ck = Checkpoint.load(path)
            test = ck.metrics.get(f"test_{row.setting}", {}).get("realistic", {})
            ours = 100 * test["mrr"] if "mrr" in test else None
            hours, machine = _trained(ck)
            shown, reproduce = _fmt(ours), f"`tpar retrain {row.checkpoint}`"
        elif row.checkpoint:
            reproduce = "no model yet"
        elif row.unshipped and all((ROOT / f).is_file() for f in row.unshipped):
            ck_path, test_json = (ROOT / f for f in row.unshipped)
            ours = 100 * json.loads(test_json.read_text())["realistic"]["mrr"]
            hours, machine = _trained(Checkpoint.load(ck_path))
            shown = f"{ours:.2f} (best here, not shipped)"
        trained = f"{hours:.1f} h, {machine}" if hours is not None else "–"
        single = _fmt(_single(row)[0]) if row.single else f"{_fmt(ours)} (ours)" if ours is not None else "–"
        lines.append(f"| {row.table} | {row.setting} | {row.data} | {row.paper:.2f} | {shown} | {_gap(ours, row.paper)} "
                     f"| {single} | {'; '.join(peers) or '–'} | {trained} | {reproduce} |")
        notes += [f"**Table {row.table}, {row.data} ({row.setting}).**", ""] + [f"- {n}" for n in row.note] + [""]
    return lines + ["", "### How each row was made", ""] + notes


def _path_length(rows: dict, out_dir: Path) -> list[str]:
    out = ["## 1. Path length (Table 7, Fig. path length)", ""]
    if not rows:
        return out + ["Not run yet: `python benchmarks/paper/run.py path-length`.", ""]
    by = {}
    for stem, r in rows.items():
        m = re.fullmatch(r"(.+)-L(\d)", stem)
        if m:
            by.setdefault(m.group(1), {})[int(m.group(2))] = r
    out += ["| data | setting | L | ours MRR | H@1 | H@10 | paper MRR | gap | train s |", "|---|---|---|---|---|---|---|---|---|"]
    series, notes = {}, []
    for label, per in sorted(by.items()):
        paper = PAPER["path_length"].get(label, {})
        for L, r in sorted(per.items()):
            out.append(f"| {label} | {r['setting']} | {L} | {_fmt(r['mrr'])} | {_fmt(r['h1'])} | {_fmt(r['h10'])} | "
                       f"{_fmt(paper.get(L))} | {_gap(r['mrr'], paper.get(L))} | {r['train_seconds']:.0f} |")
        series[f"ours {label}"] = [(L, r["mrr"]) for L, r in per.items()]
        if paper:
            series[f"paper {label}"] = list(paper.items())
        if len(per) > 1:
            lo, hi = min(per), max(per)
            best = max(per, key=lambda L: per[L]["mrr"])
            notes.append(f"{label}: L={hi} vs L={lo}: {per[hi]['mrr'] - per[lo]['mrr']:+.2f} points; best at L={best}"
                         + (f" (paper: L=5 vs L=1 {paper[5] - paper[1]:+.2f}, best at L=5)" if paper else "") + ".")
    out += [""] + [x for n in notes for x in (n, "")]
    svg_lines(series, "Test MRR by maximum path length L", "L", out_dir / "paper_path_length.svg")
    return out + ["", "![path length](paper_path_length.svg)", ""]


def _chronological(rows: dict) -> list[str]:
    out = ["## 2. Chronological order of links (Table 8, ICEWS14 extrapolation)", ""]
    if not rows:
        return out + ["Not run yet: `python benchmarks/paper/run.py chronological`.", ""]
    got = {stem.rsplit("-", 1)[1]: r for stem, r in rows.items()}
    p = PAPER["chronological"]
    out += ["| method | order | ours MRR | H@1 | H@10 | paper MRR |", "|---|---|---|---|---|---|"]
    for key in ("relaxed", "strict"):
        if key in got:
            r = got[key]
            out.append(f"| TPAR | {key} | {_fmt(r['mrr'])} | {_fmt(r['h1'])} | {_fmt(r['h10'])} | {_fmt(p[key])} |")
    if "recurrency" in got:
        r = got["recurrency"]
        out.append(f"| recurrency baseline | – | {_fmt(r['mrr'])} | {_fmt(r['h1'])} | {_fmt(r['h10'])} | – |")
    out += [f"| TLogic (measured here, reference code) | relaxed | {TLOGIC_MEASURED:.2f} | | | {p['TLogic relaxed']:.2f} |",
            f"| TLogic (paper) | strict | | | | {p['TLogic strict']:.2f} |", ""]
    if "relaxed" in got and "strict" in got:
        d = got["relaxed"]["mrr"] - got["strict"]["mrr"]
        out.append(f"Relaxed − strict: **{d:+.2f}** points here, {p['relaxed'] - p['strict']:+.2f} in the paper: the claim "
                   + ("holds" if d > 0 else "is not reproduced") + " at this budget.")
    return out + [""]


def _sparsity(rows: dict, out_dir: Path) -> list[str]:
    out = ["## 3. Sparsity (Fig. sparsity, ICEWS14)", ""]
    if not rows:
        return out + ["Not run yet: `python benchmarks/paper/run.py sparsity`.", ""]
    by: dict = {}
    for stem, r in rows.items():
        m = re.fullmatch(r"(.+)-(\w+)-(\d+)-(tpar|frequency|recurrency)", stem)
        if m:
            by.setdefault(m.group(2), {}).setdefault(int(m.group(3)), {})[m.group(4)] = r
    out += ["The paper prints no numbers for this figure (only curves against other neural models); its claim is that "
            "TPAR stays ahead at every sparsity level. Here TPAR is compared with the two baselines.", "",
            "| setting | training facts | TPAR | frequency | recurrency | TPAR − best baseline |", "|---|---|---|---|---|---|"]
    series, notes = {}, []
    for setting, per in sorted(by.items()):
        for pct, m in sorted(per.items()):
            t, f, r = (m.get(k, {}).get("mrr") for k in ("tpar", "frequency", "recurrency"))
            base = max([x for x in (f, r) if x is not None], default=None)
            out.append(f"| {setting} | {pct}% | {_fmt(t)} | {_fmt(f)} | {_fmt(r)} | {_gap(t, base)} |")
            for k, v in (("TPAR", t), ("recurrency", r), ("frequency", f)):
                if v is not None:
                    series.setdefault(f"{k} {setting[:6]}.", []).append((pct, v))
        wins = sum(1 for m in per.values() if "tpar" in m and all(m["tpar"]["mrr"] > m[k]["mrr"] for k in ("frequency", "recurrency") if k in m))
        notes.append(f"{setting}: TPAR ahead of both baselines at {wins} of {len(per)} levels.")
    out += [""] + [x for n in notes for x in (n, "")]
    svg_lines(series, "Test MRR by share of training facts (ICEWS14)", "% of training facts", out_dir / "paper_sparsity.svg")
    return out + ["![sparsity](paper_sparsity.svg)", ""]


def _pipeline_by_known(rows: dict) -> dict:
    by: dict = {}
    for stem, r in rows.items():
        m = re.fullmatch(r"(.+)-(\d+)-(tpar-alone|rec-alone|tpar-pipeline(?:-p\d+)?|rec-pipeline|tpar-completion|"
                         r"recurrency-completion)", stem)
        if m:
            by.setdefault(int(m.group(2)), {})[m.group(3)] = r
    return by


def _pipeline_seeds(seeds: list[dict]) -> list[str]:
    """The pipeline's gain per seed and its mean: how much of a gain is seed noise."""
    runs = [_pipeline_by_known(s) for s in seeds if s]
    out = [f"### Pipeline over {len(runs)} seeds (the known/masked split, the masking and the training seed all change)", "",
           "| known | method | gain per seed (pipeline − alone) | mean gain | alone: mean (spread) |", "|---|---|---|---|---|"]
    for pct in sorted({k for r in runs for k in r}):
        for method, a, b in (("TPAR", "tpar-alone", "tpar-pipeline"), ("recurrency", "rec-alone", "rec-pipeline")):
            pairs = [(r[pct][a]["mrr"], r[pct][b]["mrr"]) for r in runs if pct in r and a in r[pct] and b in r[pct]]
            if not pairs:
                continue
            gains = [y - x for x, y in pairs]
            alone = [x for x, _ in pairs]
            out.append(f"| {pct}% | {method} | {', '.join(f'{g:+.2f}' for g in gains)} | {sum(gains) / len(gains):+.2f} | "
                       f"{sum(alone) / len(alone):.2f} ({max(alone) - min(alone):.2f}) |")
    return out + [""]


def _pipeline(rows: dict, out_dir: Path) -> list[str]:
    out = ["## 4. Pipeline: complete the past, then forecast (Tables 3 and 5, ICEWS14)", ""]
    if not rows:
        return out + ["Not run yet: `python benchmarks/paper/run.py pipeline`.", ""]
    by = _pipeline_by_known(rows)
    p = PAPER["pipeline"]
    out += ["| known | method | alone | pipeline | gain | completion top-1 acc. | paper alone | paper pipeline | paper gain |",
            "|---|---|---|---|---|---|---|---|---|"]
    series = {}
    for pct, m in sorted(by.items()):
        for method, a, b, c in (("TPAR", "tpar-alone", "tpar-pipeline", "tpar-completion"),
                                ("recurrency", "rec-alone", "rec-pipeline", "recurrency-completion")):
            alone, both = m.get(a, {}).get("mrr"), m.get(b, {}).get("mrr")
            acc = m.get(c, {}).get("accuracy")
            pa, pb = (p["TPAR alone"].get(pct), p["TPAR pipeline"].get(pct)) if method == "TPAR" else (None, None)
            out.append(f"| {pct}% | {method} | {_fmt(alone)} | {_fmt(both)} | {_gap(both, alone)} | {_fmt(acc)} | "
                       f"{_fmt(pa)} | {_fmt(pb)} | {_gap(pb, pa)} |")
            for k, v in ((f"{method} alone", alone), (f"{method} pipeline", both)):
                if v is not None:
                    series.setdefault(k, []).append((pct, v))
    filtered = sorted({k for m in by.values() for k in m if k.startswith("tpar-pipeline-p")})
    if filtered:
        out += ["", "Only confident completions (TPAR's raw probability ≥ p) joining the forecaster's data "
                "(`run.py pipeline --min-probability p`):", "",
                "| known | completions kept | alone | pipeline | gain |", "|---|---|---|---|---|"]
        for pct, m in sorted(by.items()):
            for k in filtered:
                if k in m and "tpar-alone" in m:
                    a, b = m["tpar-alone"]["mrr"], m[k]["mrr"]
                    out.append(f"| {pct}% | p ≥ {int(k.rsplit('-p', 1)[1]) / 100:g} | {_fmt(a)} | {_fmt(b)} | {_gap(b, a)} |")
    out += ["", "The paper's Table 3 prints 36.36 for TPAR alone at 80%; its Table 5 prints 46.36, used here.", ""]
    svg_lines(series, "Forecasting MRR with and without completing the masked facts", "% of training facts known",
              out_dir / "paper_pipeline.svg")
    return out + ["![pipeline](paper_pipeline.svg)", ""]
