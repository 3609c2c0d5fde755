"""Issue #28's GPU item: training and inference questions/s of the batched propagation at growing batch sizes.

Every (data, L, d, propagation) shape is measured at the paper's batch sizes and at larger ones, each in a fresh
process (``tpar.runtime.bench``: its own peak memory; a batch too large for the card comes back as that row's
error). All queries of a batch already run at once (one flat frontier of (query, entity) nodes,
``tpar.model.network``), so a larger batch means fewer kernel launches per question.

    python benchmarks/gpu/batching.py --data-dir DATA --device cuda --out batching.json [--budget SECONDS]

Rows are run in the order listed and stop when ``--budget`` seconds are spent (the rest are marked not run).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tpar.model.config import SPARSE_PROPAGATION  # noqa: E402
from tpar.runtime.bench import run_benchmarks  # noqa: E402

I14, I18 = "extrapolation/ICEWS14", "extrapolation/ICEWS18"
SPARSE = dict(SPARSE_PROPAGATION)
#: (data, L, d, propagation options, train batch, infer batch, questions timed)
ROWS = [
    (I14, 5, 64, {}, 5, 16, 600), (I14, 5, 64, {}, 64, 256, 2048),
    (I14, 5, 64, SPARSE, 5, 16, 600), (I14, 5, 64, SPARSE, 64, 256, 2048), (I14, 5, 64, SPARSE, 256, 1024, 4096),
    (I14, 5, 128, {}, 10, 64, 1000), (I14, 5, 128, {}, 64, 256, 2048),
    (I18, 5, 64, SPARSE, 5, 16, 600), (I18, 5, 64, SPARSE, 64, 256, 2048),
    (I18, 5, 64, {}, 5, 16, 300), (I18, 5, 64, {}, 32, 128, 1024),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, default=0, help="seconds; 0 = no limit")
    ap.add_argument("--rows", type=int, nargs="*", help="indices into ROWS (default: all)")
    args = ap.parse_args()
    bad = [i for i in args.rows or [] if not 0 <= i < len(ROWS)]
    if bad:
        ap.error(f"--rows {' '.join(map(str, bad))}: indices run from 0 to {len(ROWS) - 1}")
    start, results, machine = time.perf_counter(), [], {}
    for i in args.rows if args.rows is not None else range(len(ROWS)):
        data, layers, dim, options, tb, ib, queries = ROWS[i]
        if args.budget and time.perf_counter() - start > args.budget:
            row = {"data": data, "L": layers, "d": dim, "train_batch": tb, "infer_batch": ib,
                   "skipped": "not run: the call's time budget was spent"}
        else:
            t0 = time.perf_counter()
            rep = run_benchmarks(data_dir=args.data_dir, device=args.device, queries=queries, progress=True,
                                 configs=[(data, layers, dim, options)], threads=args.threads, train_batch=tb,
                                 infer_batch=ib)
            machine = rep["machine"]
            row = {**rep["results"][0], "train_batch": tb, "infer_batch": ib,
                   "row_seconds": round(time.perf_counter() - t0, 1)}
            print(json.dumps(row), flush=True)
        results.append(row)
        Path(args.out).write_text(json.dumps({"machine": machine, "results": results}, indent=2))  # kept if cut short
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
