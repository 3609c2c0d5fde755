"""A model trained on the first half of the sample world's year answers the second half, new entities included.

Issue #31's third transfer row, built with the product's own growth path (``tpar grow``)::

    python benchmarks/transfer_sample_world.py prepare --out runs/transfer-world
    OMP_NUM_THREADS=1 tpar train --data runs/transfer-world/h1 --setting extrapolation \
        --config tpar/configs/cpu/sample-world-unified.json --propagation exact --threads 1 \
        --out runs/transfer-world/h1.tpar
    tpar grow --data runs/transfer-world/h1 --rows runs/transfer-world/second-half.csv --split column \
        --out runs/transfer-world/grown
    tpar evaluate --checkpoint runs/transfer-world/h1.tpar --data runs/transfer-world/grown --split test \
        --setting extrapolation --no-calibration --ranks-csv runs/transfer-world/h1-ranks.csv --json ...
    python benchmarks/transfer.py --checkpoint runs/transfer-world/h1.tpar --data runs/transfer-world/grown \
        --sample 0:0:runs/transfer-world/h1-ranks.csv --out runs/transfer-world
    python benchmarks/transfer_sample_world.py report --out runs/transfer-world

``prepare`` writes ``h1/`` (the facts before July 1, split chronologically 80/10/10) and ``second-half.csv``
(the facts from July 1 with a ``split`` column: the world's own train/valid/test), where a seeded 15% of the
entities appear under a new name ("<name> II"): actors the first-half model never saw, with no history before
July. The grown data set's test questions are the world's own last 14 days. ``report`` splits the ranks files:
h1's own test questions (May 28 - June 30, still the grown data set's test) and the world's last 14 days, these
split into questions that involve a new entity (as subject or answer) and the others.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tpar.data.catalog import sample_dir  # noqa: E402
from tpar.data.kg import TemporalKG  # noqa: E402
from tpar.data.loading import load_dataset  # noqa: E402
from tpar.data.outputs import csv_text  # noqa: E402
from tpar.data.upload import save_dataset  # noqa: E402
from tpar.data.tables import split_assignment  # noqa: E402

CUT = "2025-07-01"
WORLD_TEST = "2025-12-18"  # the sample world's own test split: its last 14 days
NEW_SHARE = 0.15
SUFFIX = " II"


def prepare(out: Path, seed: int = 0) -> dict:
    kg = load_dataset(sample_dir() / "world" / "chronological")
    cut = kg.time_axis.parse(CUT)
    every = [(s, f) for s in ("train", "valid", "test") for f in kg.facts(s).tolist()]
    first = np.array([f for _, f in every if f[3] < cut], dtype=np.int64)
    assign = split_assignment(first[:, 3], "chronological")
    h1 = TemporalKG(name="h1", entities=kg.entities, relations=kg.relations, time_axis=kg.time_axis,
                    splits={s: first[assign == k] for k, s in enumerate(("train", "valid", "test"))},
                    source="sample world, facts before " + CUT)
    save_dataset(h1, out, "h1", overwrite=True)
    rng = np.random.default_rng(seed)
    renamed = set(rng.choice(kg.num_entities, size=int(NEW_SHARE * kg.num_entities), replace=False).tolist())
    name = lambda e: kg.entities.name(e) + (SUFFIX if e in renamed else "")  # noqa: E731
    rows = [[name(s), kg.relations.name(r), name(o), kg.time_axis.label(t), split]
            for split, (s, r, o, t) in every if t >= cut]
    (out / "second-half.csv").write_text(csv_text(rows, ["subject", "relation", "object", "time", "split"]),
                                        encoding="utf-8")
    summary = {"cut": CUT, "h1_facts": {s: int(len(a)) for s, a in h1.splits.items()},
               "second_half_facts": len(rows), "new_entities": len(renamed),
               "new_entity_names": sorted(name(e) for e in renamed)}
    (out / "prepare.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def _read(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _metrics(ranks: list[float]) -> dict:
    r = np.asarray(ranks, dtype=float)
    return {"questions": int(len(r)), "MRR": round(100 * float(np.mean(1 / r)), 2) if len(r) else None,
            "H@1": round(100 * float(np.mean(r <= 1)), 2) if len(r) else None,
            "H@10": round(100 * float(np.mean(r <= 10)), 2) if len(r) else None}


def report(out: Path) -> dict:
    """Per ranks file in ``out``: all questions, those involving a new entity, and the others."""
    result = {}
    for path in sorted(out.glob("*ranks*.csv")):
        rows = _read(path)
        late = [r for r in rows if r["time"] >= WORLD_TEST]  # ISO dates compare as text
        new = [r for r in late if r["subject"].endswith(SUFFIX) or r["object"].endswith(SUFFIX)]
        old = [r for r in late if not (r["subject"].endswith(SUFFIX) or r["object"].endswith(SUFFIX))]
        early = [r for r in rows if r["time"] < WORLD_TEST]
        result[path.name] = {k: _metrics([float(r["realistic"]) for r in part])
                             for k, part in (("all test questions", rows), ("h1's own test (May 28 - Jun 30)", early),
                                             ("world test (Dec 18 - 31)", late), ("world test, a new entity", new),
                                             ("world test, known entities", old))}
    (out / "report.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=["prepare", "report"])
    ap.add_argument("--out", default="runs/transfer-world")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(json.dumps(prepare(out, args.seed) if args.step == "prepare" else report(out), indent=1)[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
