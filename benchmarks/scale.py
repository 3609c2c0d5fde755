"""How the propagation's cost grows with the graph: training ms/question, inference questions/s and peak
memory on 4 sizes up to 1,000,000 facts, exact and sparse side by side (issue: sparse propagation).

The graphs are ICEWS14 (extrapolation) repeated k times with shifted entity ids (k = 1, 3, 6, 11: about
90k, 272k, 543k and 996k facts): every copy is the same history among other entities, so a question
meets the same temporal paths at every size and what grows is only what the propagation touches beyond
its paths (tables sized by the number of entities, the index). Each measurement runs in a fresh
process (``tpar.runtime.bench``), one after the other, with the threads given (pin 1 when timing).

    python benchmarks/scale.py --threads 1          # writes results/scale.md and results/scale.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import tempfile
from pathlib import Path

import torch

from tpar.data.benchmarks import find_data_dir
from tpar.model.config import SPARSE_PROPAGATION
from tpar.runtime.bench import run_benchmarks

ROOT = Path(__file__).resolve().parent
SOURCE = "extrapolation/ICEWS14"
COPIES = (1, 3, 6, 11)


def _rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_copies(source: Path, copies: int, out: Path) -> int:
    """``source`` (a benchmark folder with integer ids) repeated ``copies`` times, entity ids of copy k
    shifted by k·E, into ``out`` (same layout); the number of facts written."""
    ents = _rows(source / "entity2id.txt")
    E = len(ents)
    out.mkdir(parents=True, exist_ok=True)
    (out / "entity2id.txt").write_text("".join(f"{name.strip()}#{k}\t{int(i) + k * E}\n" for k in range(copies)
                                               for name, i, *_ in ents), encoding="utf-8")
    (out / "relation2id.txt").write_text((source / "relation2id.txt").read_text(encoding="utf-8"), encoding="utf-8")
    n = 0
    for split in ("train", "valid", "test"):
        lines = []
        for s, r, o, t, *_ in _rows(source / f"{split}.txt"):
            for k in range(copies):
                lines.append(f"{int(s) + k * E}\t{int(r)}\t{int(o) + k * E}\t{int(t)}\n")
        n += len(lines)
        (out / f"{split}.txt").write_text("".join(lines), encoding="utf-8")
    return n


def growth_exponent(sizes: list[float], values: list[float]) -> float:
    """The slope b of log(value) = a + b·log(size) (least squares): value grows like size^b."""
    xs, ys = [math.log(x) for x in sizes], [math.log(max(y, 1e-9)) for y in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / max(sum((x - mx) ** 2 for x in xs), 1e-12)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--layers", type=int, default=5)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--copies", type=int, nargs="*", default=list(COPIES))
    args = ap.parse_args()
    root = find_data_dir()
    if root is None:
        sys.exit("benchmarks not found: set TPAR_DATA_DIR or place them in ../shared/datasets")
    rows = []
    with tempfile.TemporaryDirectory(prefix="tpar-scale-") as tmp:
        for k in args.copies:
            folder = Path(tmp) / "extrapolation" / f"ICEWS14x{k}"
            facts = write_copies(root / SOURCE, k, folder)
            print(f"ICEWS14 x{k}: {facts:,} facts", flush=True)
            for name, options in (("exact", {}), ("sparse", SPARSE_PROPAGATION)):
                res = run_benchmarks(data_dir=tmp, configs=[(f"extrapolation/ICEWS14x{k}", args.layers, args.dim, options)],
                                     queries=args.queries, threads=args.threads, progress=False)["results"][0]
                res.update(copies=k, facts=facts, variant=name)
                print(json.dumps(res), flush=True)
                rows.append(res)
    report = {"machine": {"platform": platform.platform(), "torch": torch.__version__}, "threads": args.threads,
              "source": SOURCE, "L": args.layers, "d": args.dim, "rows": rows}
    (ROOT / "results" / "scale.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    write_report(report)


def write_report(report: dict) -> None:
    rows = [r for r in report["rows"] if "error" not in r]
    lines = ["# Cost against graph size", "",
             f"ICEWS14 (extrapolation) repeated k times with shifted entity ids; L={report['L']}, d={report['d']}, "
             f"{report['threads']} thread(s), each measurement in a fresh process; {rows[0]['queries_timed'] if rows else '?'} "
             "training and inference questions timed per row. Command: `python benchmarks/scale.py --threads 1`.", "",
             "| copies | facts | propagation | train ms/question | inference q/s | peak MB | links per test question (all layers) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['copies']} | {r['facts']:,} | {r['propagation']} | {r['train_ms_per_query']} | "
                     f"{r['infer_queries_per_s']} | {r['peak_memory_mb']:.0f} | {sum(r['links_per_query_per_layer_test']):,.0f} |")
    lines += ["", "Growth with the number of facts (the exponent b of cost ∝ facts^b, least squares over the sizes; "
              "b < 1 grows slower than the graph):", ""]
    for variant in ("exact", "sparse"):
        sel = [r for r in rows if r["variant"] == variant]
        if len(sel) >= 2:
            sizes = [r["facts"] for r in sel]
            lines.append(f"- {variant} ({sel[0]['propagation']}): training ms/question b = "
                         f"{growth_exponent(sizes, [r['train_ms_per_query'] for r in sel]):.2f}, peak memory b = "
                         f"{growth_exponent(sizes, [r['peak_memory_mb'] for r in sel]):.2f}, inference time per question b = "
                         f"{growth_exponent(sizes, [1 / r['infer_queries_per_s'] for r in sel]):.2f}")
    lines += ["", "What this shows: the propagation's cost follows what a question's paths touch, not the size of the "
              "graph it lives in -- the tables sized by the number of entities (frontier marks, positions) and the index "
              "add little even at a million facts, and peak memory stays within a few hundred MB of the smallest "
              "graph. What it does not show: the copies are disjoint, so a question's paths are the same at every "
              "size; a graph that grows denser (more links per entity within a question's reach, as ICEWS18 against "
              "ICEWS14) costs more per question -- `tpar bench` measures ICEWS18 directly "
              "(`benchmarks/results/propagation.md`)."]
    errors = [r for r in report["rows"] if "error" in r]
    lines += [f"- failed: {r.get('copies')} copies, {r.get('variant')}: {r['error']}" for r in errors]
    (ROOT / "results" / "scale.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {ROOT / 'results' / 'scale.md'}")


if __name__ == "__main__":
    main()
