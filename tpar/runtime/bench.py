"""Speed benchmark of the propagation: training ms per query (forward + backward + Adam step),
inference queries per second, peak memory, and temporal links per query per layer.

Each configuration runs in a fresh process so that its peak memory is its own. Extrapolation (the
default): training queries come from the training split with the training background (t < t_q),
inference queries from the test split with the evaluation background (every known fact with t < t_q).
Interpolation (a data folder under ``interpolation/``, or ``setting="interpolation"``): training
queries are the training facts left out of a background of the other 3/4 (as the trainer draws it),
inference queries the test split over the training facts, before and after t_q.
"""

from __future__ import annotations

import json
import subprocess
import sys
import platform
import resource
import time
from pathlib import Path

import numpy as np
import torch

from tpar.data.catalog import sample_dir
from tpar.model.config import SPARSE_PROPAGATION

#: the default sparse propagation (tpar.model.config.SPARSE_PROPAGATION, chosen in benchmarks/results/propagation.md)
DEFAULT_PRUNING = SPARSE_PROPAGATION
EXACT: dict = {}
CONFIGS = [  # (data folder under the benchmark root, L, d, propagation options); exact and pruned side by side
    ("extrapolation/ICEWS14", 5, 64, EXACT),
    ("extrapolation/ICEWS14", 5, 64, DEFAULT_PRUNING),
    ("extrapolation/ICEWS14", 3, 64, {"gate": True}),  # the shipped extrapolation model's shape
    ("extrapolation/ICEWS14", 3, 64, {"gate": True, **DEFAULT_PRUNING}),
    ("extrapolation/ICEWS18", 5, 64, EXACT),
    ("extrapolation/ICEWS18", 5, 64, DEFAULT_PRUNING),
    ("interpolation/ICEWS14", 5, 64, EXACT),
    ("interpolation/ICEWS14", 5, 64, DEFAULT_PRUNING),
]
SETTINGS = ("extrapolation", "interpolation")


def setting_of(folder: str, default: str = "extrapolation") -> str:
    """The setting a configuration's data folder is measured in: ``interpolation/...`` in interpolation,
    anything else in ``default``."""
    return "interpolation" if Path(folder).parts[:1] == ("interpolation",) else default
QUICK = [("extrapolation/ICEWS14", 3, 32, EXACT), ("extrapolation/ICEWS14", 3, 32, DEFAULT_PRUNING)]
#: the embedded sample world: what ``tpar bench`` measures when no public benchmark is found


def shapes(quick: bool) -> list[tuple[int, int, dict]]:
    """The (L, d, propagation options) measured on one data set: those of the quick or full list."""
    out: list[tuple[int, int, dict]] = []
    for _, layers, dim, options in QUICK if quick else CONFIGS:
        if (layers, dim, options) not in out:
            out.append((layers, dim, options))
    return out


def plan(data: str | None = None, data_dir: str | None = None,
         quick: bool = False) -> tuple[Path, list[tuple[str, int, int, dict]], str]:
    """What to measure: (root, configurations, a note for the user, empty when there is nothing to say).

    ``data`` (a data set: folder or CSV) runs every shape on it; ``data_dir`` the benchmark list
    under that root (a :class:`DataError` when none of its data sets is there); neither: the benchmark
    list under ``$TPAR_DATA_DIR`` / ``../shared/datasets``, or the sample world when that has none."""
    from tpar.data.benchmarks import find_data_dir
    from tpar.errors import DataError

    wanted = QUICK if quick else CONFIGS
    if data:
        if not Path(data).exists():
            raise DataError("no such file or folder", file=data)
        return Path(data), [(".", layers, dim, opts) for layers, dim, opts in shapes(quick)], ""
    if data_dir:
        root = Path(data_dir)
        if not root.is_dir():
            raise DataError("--data-dir is not a folder", file=data_dir)
        if not any((root / folder).is_dir() for folder, *_ in wanted):
            needed = ", ".join(sorted({folder for folder, *_ in wanted}))
            raise DataError(f"no benchmark data set here (the benchmark list needs {needed}); benchmark another "
                            f"data set with --data FOLDER_OR_CSV, or leave out --data-dir for the sample world",
                            file=data_dir)
        return root, list(wanted), ""
    root = find_data_dir()
    if root is not None and any((root / folder).is_dir() for folder, *_ in wanted):
        return root, list(wanted), ""
    why = f"no public benchmark in {root}" if root is not None else (
        "no public benchmark found ($TPAR_DATA_DIR or ../shared/datasets)")
    world = sample_dir() / "world" / "chronological"
    return world, [(".", layers, dim, opts) for layers, dim, opts in shapes(quick)], (
        f"{why}: benchmarking the sample world ({world}); --data DATA benchmarks another data set")


#: questions per forward pass in training (the paper's batch sizes are 5-20) and in inference
TRAIN_BATCH, INFER_BATCH = 5, 16
#: the fewest questions a measurement times (after its warm-up batch)
MIN_TIMED = 5
#: the most questions one measurement times (a split's size is the practical bound; this one keeps a typo from
#: asking for hours)
MAX_TIMED = 100_000


def _measure(folder: str, layers: int, dim: int, options: dict, queries: int, device: str, threads: int = 0,
             seed: int = 0, train_batch: int = TRAIN_BATCH, infer_batch: int = INFER_BATCH,
             setting: str = "extrapolation") -> dict:
    from tpar.graph.background import Background
    from tpar.model.config import ModelConfig, TrainConfig
    from tpar.model.device import resolve_device
    from tpar.model.kernels import default_kernel, kernel_status
    from tpar.model.network import TPAR, PropagationTrace, multiclass_log_loss
    from tpar.graph.queries import make_queries
    from tpar.data.loading import load_dataset
    from tpar.training.plan import interpolation_draw

    if threads:
        torch.set_num_threads(threads)
    dev = resolve_device(device)
    kg = load_dataset(folder)
    torch.manual_seed(seed)
    cfg = ModelConfig(dim=dim, num_layers=layers, num_relations=kg.num_relations, time_span=365, **options)
    model = TPAR(cfg).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    rng = np.random.default_rng(seed)
    if setting not in SETTINGS:
        raise ValueError(f"setting {setting!r}: one of {', '.join(SETTINGS)}")
    train = kg.facts("train")
    if setting == "interpolation":  # the trainer's draw: a background of 3/4 of train, questions from the rest
        train_bg, train_q = interpolation_draw(kg, TrainConfig.background_fraction, rng)
        train_bg = train_bg.to(dev)
    else:
        train_bg = Background.from_facts(train, kg.num_entities, kg.num_relations, setting).to(dev)
        train_q = make_queries(train, kg.num_relations)
    eval_bg = Background.for_evaluation(kg, setting).to(dev)
    test_q = make_queries(kg.facts("test"), kg.num_relations)
    # a small data set times what it has: at most `queries` (the last batch may be partial), after one warm-up batch
    tb, ib = train_batch, infer_batch
    if queries < MIN_TIMED or tb < 1 or ib < 1:
        raise ValueError(f"queries {queries}, batches {tb}/{ib}: at least {MIN_TIMED} questions are timed, in "
                         "batches of at least 1")
    queries = min(queries, len(train_q) - tb, len(test_q) - ib)
    if queries < MIN_TIMED:
        raise ValueError(f"too few questions to time ({len(train_q)} train, {len(test_q)} test; need {tb + MIN_TIMED} "
                         f"and {ib + MIN_TIMED} for a warm-up batch of {tb} and {ib} and {MIN_TIMED} timed)")
    train_q = train_q[torch.from_numpy(rng.choice(len(train_q), queries + tb, replace=False))]
    test_q = test_q[torch.from_numpy(rng.choice(len(test_q), queries + ib, replace=False))]

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    # training: one optimiser step per batch of `train_batch` questions
    model.train()
    def train_step(b):
        opt.zero_grad(set_to_none=True)
        loss = multiclass_log_loss(model(b.to(dev), train_bg), b.answer.to(dev))
        loss.backward()
        opt.step()
    train_step(train_q[0:tb])  # warm-up (kernel build, allocator)
    sync()
    t0 = time.perf_counter()
    for a in range(tb, len(train_q), tb):
        train_step(train_q[a:a + tb])
    sync()
    train_ms = (time.perf_counter() - t0) / queries * 1000
    # inference: batches of `infer_batch`, no gradients
    model.eval()
    with torch.no_grad():
        model(test_q[0:ib].to(dev), eval_bg)
        sync()
        t0 = time.perf_counter()
        for a in range(ib, len(test_q), ib):
            model(test_q[a:a + ib].to(dev), eval_bg)
        sync()
        qps = queries / (time.perf_counter() - t0)
        # links per query per layer, on the timed test queries and on training queries
        def links(q, bg):
            tr = PropagationTrace()
            model(q.to(dev), bg, trace=tr)
            return [round(n / len(q), 1) for n in tr.num_links]
        links_test = links(test_q[ib:ib + min(queries, 64)], eval_bg)
        links_train = links(train_q[tb:tb + min(queries, 64)], train_bg)
    peak = (torch.cuda.max_memory_allocated() / 2 ** 20 if dev.type == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return {"data": Path(folder).parent.name + "/" + Path(folder).name, "setting": setting, "L": layers, "d": dim,
            "propagation": cfg.propagation, "gate": cfg.gate, "propagation_options": {
                k: getattr(cfg, k) for k in ("history_window", "link_cap", "recent_repeats", "top_k", "exact_steps", "priority")},
            "device": str(dev), "kernel": kernel_status(default_kernel()) if dev.type == "cpu" else "torch",
            "train_ms_per_query": round(train_ms, 2), "infer_queries_per_s": round(qps, 2),
            "peak_memory_mb": round(peak, 1), "peak_memory_kind": "cuda max allocated" if dev.type == "cuda" else "process max RSS",
            "links_per_query_per_layer_train": links_train, "links_per_query_per_layer_test": links_test,
            "queries_timed": queries, "train_batch": tb, "infer_batch": ib, "threads": torch.get_num_threads()}


def _measure_in_process(args: list) -> dict:
    """Run :func:`_measure` in a fresh ``python -m tpar.runtime.bench`` process (its peak memory is its
    own; nothing of the caller -- a test runner, an app -- is re-imported there)."""
    proc = subprocess.run([sys.executable, "-m", "tpar.runtime.bench", json.dumps(args)], capture_output=True,
                          text=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
        return {"error": f"the measurement process failed (exit code {proc.returncode}): {tail}"}
    return json.loads(lines[-1])


def run_benchmarks(data_dir: str | None = None, quick: bool = False, device: str = "auto", queries: int = 200,
                   progress: bool = True, configs: list[tuple[str, int, int, dict]] | None = None,
                   threads: int = 0, data: str | None = None, train_batch: int = TRAIN_BATCH,
                   infer_batch: int = INFER_BATCH, setting: str = "extrapolation") -> dict:
    """Each configuration in a fresh process (its own peak memory); exact and pruned propagation of
    the same data, L and d run one after the other, so their ratio is taken on one machine state.
    Which data (:func:`plan`): ``data``, else the benchmarks under ``data_dir`` or found, else the
    sample world (the report's ``note`` says so). ``train_batch`` questions per optimiser step and
    ``infer_batch`` per inference pass (larger batches: fewer kernel launches, the lever on a GPU).
    ``setting``: where a configuration's folder does not say (:func:`setting_of`: ``interpolation/...``
    is measured in interpolation), the setting measured."""
    from tpar.runtime.threads import choose_threads

    if configs is not None:
        root, note = Path(data_dir) if data_dir else Path("."), ""
    else:
        root, configs, note = plan(data, data_dir, quick)
    results = []
    for folder, layers, dim, options in configs:
        path, kind = root / folder, setting_of(folder, setting)
        if not path.exists():
            results.append({"data": folder, "setting": kind, "L": layers, "d": dim, "skipped": "data not found"})
            continue
        if progress:
            print(f"bench {path if folder == '.' else folder} ({kind}) L={layers} d={dim} {options or 'exact'} "
                  f"(batches {train_batch}/{infer_batch}) ...", flush=True)
        # chosen per measurement, just before it starts: the idle cores unless pinned (tpar.runtime.threads)
        res = _measure_in_process([str(path), layers, dim, options, queries, device, choose_threads(threads), 0,
                                   train_batch, infer_batch, kind])
        if "error" in res:
            res = {"data": folder, "setting": kind, "L": layers, "d": dim, **res}
        results.append(res)
    return {"machine": {"platform": platform.platform(), "processor": platform.processor(),
                        "cpu_threads": torch.get_num_threads(), "torch": torch.__version__,
                        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None},
            "results": results, **({"note": note} if note else {})}


if __name__ == "__main__":  # one measurement: argv[1] = JSON list of _measure's arguments; prints JSON
    try:
        print(json.dumps(_measure(*json.loads(sys.argv[1]))))
    except Exception as e:  # reported to the parent as a row's error, never a hang
        from tpar.errors import DataError

        # a refusal (too few questions to time, …) is said as such; anything else is a bug and names its type
        print(json.dumps({"error": str(e) if isinstance(e, (DataError, ValueError)) else f"{type(e).__name__}: {e}"}))
