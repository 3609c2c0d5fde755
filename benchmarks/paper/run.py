"""The paper's experiments as commands, at a budget this CPU affords (see ``--budget``):

    python benchmarks/paper/run.py path-length      # Table 7 / Fig. path length: L = 1..5, YAGO11k interp. + ICEWS14 extrap.
    python benchmarks/paper/run.py chronological    # Table 8: relaxed vs strict link order, ICEWS14 extrapolation
    python benchmarks/paper/run.py sparsity         # Fig. sparsity: 20..100% of the training facts, ICEWS14 both settings
    python benchmarks/paper/run.py pipeline         # Tables 3/5: complete 40/30/20% masked facts, then forecast
    python benchmarks/paper/run.py report           # benchmarks/results/paper.md and its plots

Each unit (one model or baseline) writes a JSON row under ``benchmarks/results/paper/``; a rerun skips
finished units and resumes an interrupted training (``--threads`` sets torch's threads). ``--data-dir``
(default: $TPAR_DATA_DIR or ../shared/datasets). ``--only-layers 1 3`` etc. restrict a sweep.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import experiments as E  # noqa: E402
import report as R  # noqa: E402

from tpar.data.benchmarks import find_data_dir  # noqa: E402
from tpar.data.loading import load_dataset  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results" / "paper"
RUNS = ROOT.parent / "runs" / "paper"


def data(root: Path, folder: str):
    p = root / folder
    if not p.is_dir():
        sys.exit(f"{p} not found: set TPAR_DATA_DIR or --data-dir")
    return load_dataset(p)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", choices=["path-length", "chronological", "sparsity", "pipeline", "report"])
    ap.add_argument("--budget", default="cpu", choices=sorted(E.BUDGETS))
    ap.add_argument("--data-dir")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0, help="another seed: results go to <budget>-seed<N> (the report "
                    "averages the pipeline over seeds)")
    ap.add_argument("--only-layers", type=int, nargs="*")
    ap.add_argument("--only-fractions", type=float, nargs="*")
    ap.add_argument("--only-data", nargs="*", help="path-length / sparsity: only these labels")
    ap.add_argument("--min-probability", type=float, default=0.0,
                    help="pipeline: only completions at least this probable join the forecaster's data")
    ap.add_argument("--results", default=str(RESULTS), help="where the JSON rows go")
    ap.add_argument("--models", default=str(RUNS), help="where the trained models go (with their resume files)")
    args = ap.parse_args(argv)
    results = Path(args.results)
    if args.experiment == "report":
        path = R.write_report(results, ROOT / "results")
        print(f"wrote {path}")
        return 0
    torch.set_num_threads(args.threads)
    root = Path(args.data_dir) if args.data_dir else find_data_dir()
    if root is None:
        sys.exit("benchmarks not found: set TPAR_DATA_DIR or --data-dir")
    budget = E.BUDGETS[args.budget]
    if args.seed:
        budget = replace(budget, name=f"{budget.name}-seed{args.seed}", seed=args.seed)
    E.MODELS = (results, Path(args.models))
    out = results / budget.name
    if args.experiment == "path-length":
        sets = {"YAGO11k": ("interpolation/YAGO11k", "interpolation"), "ICEWS14": ("extrapolation/ICEWS14", "extrapolation")}
        sets = {k: v for k, v in sets.items() if not args.only_data or k in args.only_data}
        rows = E.path_length({k: (data(root, f), s) for k, (f, s) in sets.items()}, budget, out,
                             tuple(args.only_layers or (1, 2, 3, 4, 5)))
    elif args.experiment == "chronological":
        rows = E.chronological(data(root, "extrapolation/ICEWS14"), budget, out)
    elif args.experiment == "sparsity":
        sets = {"ICEWS14-interpolation": ("interpolation/ICEWS14", "interpolation"),
                "ICEWS14-extrapolation": ("extrapolation/ICEWS14", "extrapolation")}
        sets = {k: v for k, v in sets.items() if not args.only_data or k in args.only_data}
        rows = E.sparsity({k: (data(root, f), s) for k, (f, s) in sets.items()}, budget, out,
                          tuple(args.only_fractions or (0.2, 0.4, 0.6, 0.8, 1.0)))
    else:
        rows = E.pipeline(data(root, "extrapolation/ICEWS14"), budget, out,
                          tuple(args.only_fractions or (0.6, 0.7, 0.8)), min_probability=args.min_probability)
    for r in rows:
        print(json.dumps({k: r.get(k) for k in ("experiment", "data", "method", "layers", "order", "fraction", "known",
                                                "variant", "mrr", "h1", "h10") if r.get(k) is not None}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
