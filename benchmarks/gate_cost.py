"""What the GRU gate between steps costs on a large graph (issue #28's scale figures).

``tpar bench`` times the paper's model (no gate) on ICEWS18; the shipped models and the ICEWS18 composite's
members use the gate (``--gate``, not in the paper). This times the same shape, L=5, d=64, the sparse default,
with and without the gate, interleaved in one process on one thread (A B, B A, A B ...: drift in the
machine's load hits both alike), so that another busy process
slows both alike and the ratio holds on a shared machine:

    python benchmarks/gate_cost.py --data ../shared/datasets/extrapolation/ICEWS18 --repeats 2 --queries 100

writes ``results/gate_cost.json`` (every measurement, the ratios and the command).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from pathlib import Path

from tpar.runtime.bench import DEFAULT_PRUNING, _measure

OUT = Path(__file__).resolve().parent / "results" / "gate_cost.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="a benchmark folder (extrapolation)")
    ap.add_argument("--repeats", type=int, default=2, help="rounds of (no gate, gate)")
    ap.add_argument("--queries", type=int, default=100, help="questions timed per measurement")
    ap.add_argument("--layers", type=int, default=5)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    rows = []
    for rep in range(a.repeats):
        for gate in ((False, True) if rep % 2 == 0 else (True, False)):  # alternate: drift hits both alike
            r = _measure(a.data, a.layers, a.dim, {**DEFAULT_PRUNING, "gate": gate}, a.queries, "cpu", threads=1,
                         seed=rep)
            # the process's max RSS so far, not this measurement's own (tpar bench runs each in a process)
            r["peak_memory_mb_running_max"] = r.pop("peak_memory_mb")
            rows.append(r)
            print(f"round {rep + 1}, gate {gate}: {r['train_ms_per_query']} ms per training question, "
                  f"{r['infer_queries_per_s']} q/s", flush=True)
    ratio = {}
    for key, slower_is in (("train_ms_per_query", "gate / none"), ("infer_queries_per_s", "none / gate")):
        per_round = []
        for rep in range(a.repeats):
            pair = {r["gate"]: r[key] for r in rows[2 * rep:2 * rep + 2]}
            off, on = pair[False], pair[True]
            per_round.append(on / off if key.startswith("train") else off / on)
        ratio[key] = {"per_round": [round(x, 2) for x in per_round], "median": round(statistics.median(per_round), 2),
                      "as": slower_is}
    out = {"data": a.data, "L": a.layers, "d": a.dim, "propagation_options": DEFAULT_PRUNING, "threads": 1,
           "rows": rows, "gate_cost": ratio, "platform": platform.platform(),
           "command": "python benchmarks/gate_cost.py " + " ".join(sys.argv[1:])}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(ratio))


if __name__ == "__main__":
    main()
