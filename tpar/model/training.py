"""Training TPAR: per-setting or unified, with validation, early stopping, periodic checkpoints
and resume.

* extrapolation: a training query (s, r, ?, t_q) sees the training facts with t < t_q;
* interpolation: every epoch the training facts are reshuffled and split into a background
  (3/4) and queries (1/4) (paper Appendix D.1); a query never sees its own fact or its inverse;
* unified: one model, batches of both kinds alternating, so a single checkpoint serves both
  settings; early stopping on the mean of the two validation MRRs.

Loss: Eq. 10 (multi-class log-loss over all entities), Adam. Each optimiser step takes
``batch_size`` queries in micro-batches of ``micro_batch`` (gradients accumulated).
Validation after each epoch on (a seeded subset of) the valid split, realistic MRR, with the
evaluation protocol of :mod:`tpar.evaluation`.
"""

from __future__ import annotations

import math
import random
import shutil
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch
from tqdm.auto import tqdm

from tpar.graph.background import Background
from tpar.model.checkpoint import Checkpoint, from_model, hardware
from tpar.model.config import RunConfig, TrainConfig
from tpar.data.kg import TemporalKG
from tpar.data.locks import acquire, lock_path, release
from tpar.errors import DataError
from tpar.evaluation.calibration import calibrate
from tpar.evaluation.protocol import evaluate
from tpar.evaluation.ranks import RANK_TYPES
from tpar.model.ranker import ModelRanker
from tpar.model.device import resolve_device
from tpar.model.distributed import current as current_dist
from tpar.model.distributed import evaluate_everywhere, microbatch_seed
from tpar.model.network import TPAR, multiclass_log_loss
from tpar.model.timing import TrainingEstimate
from tpar.graph.queries import QueryBatch, make_queries


#: free space an output folder needs before a run starts (checkpoints and resume files are small)
MIN_FREE_BYTES = 64 * 2 ** 20


class TrainingCancelled(Exception):
    """Raised inside :func:`train` when a callback asks to stop; the resume file is kept."""


class TrainingInterrupted(TrainingCancelled):
    """Raised inside :func:`train` after SIGINT / SIGTERM, once the step in progress has finished and
    a resume snapshot of that point is written."""


@contextmanager
def deferred_signals() -> Iterator[list[int]]:
    """While training, SIGINT (Ctrl-C) and SIGTERM only set a flag (the list gets the signal number),
    so the loop can finish its step and write a resume snapshot before it stops -- nothing computed is
    lost and the parameters are never caught half-updated. Only in the main thread (signals go there)."""
    received: list[int] = []
    old = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            old[sig] = signal.signal(sig, lambda signum, frame: received.append(signum))
    try:
        yield received
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


@dataclass
class StepInfo:
    epoch: int
    batch: int
    num_batches: int
    loss: float
    queries_per_second: float
    elapsed: float
    lr: float = 0.0  # the learning rate of this step (after the schedule)


@dataclass
class TrainingCallbacks:
    """Hooks for the app (progress bar, live chart, cancel button). Return True from any to cancel."""

    on_step: Callable[[StepInfo], bool | None] | None = None
    on_epoch: Callable[[dict], bool | None] | None = None
    on_checkpoint: Callable[[Path], None] | None = None
    on_phase: Callable[[str], None] | None = None   # "validating", "calibrating on valid", "evaluating on test"


@dataclass
class TrainResult:
    checkpoint: Checkpoint | None  # None on the ranks > 0 of a distributed run (rank 0 writes the model)
    path: Path
    history: list[dict]
    best_epoch: int
    seconds: float
    stopped: str  # "completed", "early-stopping", "cancelled", "interrupted" (SIGINT/SIGTERM; resume file kept)


def scheduled_lr(cfg, epoch: int, batch: int, batches: int, history: list[dict]) -> float:
    """The learning rate of optimiser step ``batch`` of ``epoch`` (0-based) under ``cfg.lr_schedule``
    (see :class:`~tpar.model.config.TrainConfig`); ``history``: the epochs validated so far."""
    if cfg.lr_schedule == "cosine":
        done = (epoch + batch / max(batches, 1)) / max(cfg.epochs, 1)
        return cfg.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(done, 1.0))))
    if cfg.lr_schedule == "plateau":
        best, flat = -math.inf, 0
        for entry in history:
            if entry["valid_mrr"] > best:
                best = entry["valid_mrr"]
            else:
                flat += 1
        return cfg.lr * 0.5 ** flat
    return cfg.lr


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.manual_seed(seed)


def resume_path(out: Path) -> Path:
    return out.with_name(out.name + ".resume")


def model_config_for(kg: TemporalKG, run: RunConfig) -> RunConfig:
    """Fill the data-dependent model fields (relations, time span)."""
    every = kg.all_facts()
    span = int(every[:, 3].max() - every[:, 3].min() + 1) if len(every) else 1
    run.model.num_relations = kg.num_relations
    run.model.time_span = span
    return run


def split_budget(total: int, available: dict[str, int]) -> dict[str, int]:
    """Training questions per kind for an epoch budget of ``total`` (0 = every available question):
    an equal share each, the remainder and whatever a kind cannot use going to the others, so the
    budget is met exactly (``min(total, Σ available)``) -- 1 trains one question, 998 trains 998."""
    if total <= 0:
        return dict(available)
    left = min(total, sum(available.values()))
    out = {k: 0 for k in available}
    open_ = [k for k in available if available[k] > 0]
    while left > 0 and open_:
        share, extra = divmod(left, len(open_))
        for i, k in enumerate(open_):
            take = min(share + (1 if i < extra else 0), available[k] - out[k])
            out[k] += take
            left -= take
        open_ = [k for k in open_ if out[k] < available[k]]
    return out


def balanced_sample(relations: np.ndarray, n: int, power: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` distinct question indices drawn with probability ∝ count(relation)^(−power): 0 = uniform
    over questions, 1 = every relation equally often (rare relations' rules get more updates), in
    a random order."""
    counts = np.bincount(relations)
    w = counts[relations].astype(np.float64) ** -power
    picked = rng.choice(len(relations), size=n, replace=False, p=w / w.sum())
    return rng.permutation(picked)


class _Plan:
    """The batches of one epoch, rebuilt deterministically from (seed, epoch) -- so resume can skip
    the batches already done."""

    def __init__(self, kg: TemporalKG, run: RunConfig, epoch: int, extrap_bg: Background | None) -> None:
        cfg = run.train
        rng = np.random.default_rng([cfg.seed, epoch])
        train = kg.facts("train")
        self.backgrounds: dict[str, Background] = {}
        self.queries: dict[str, QueryBatch] = {}
        kinds = ["extrapolation", "interpolation"] if cfg.setting == "unified" else [cfg.setting]
        pools: dict[str, tuple[Background | None, QueryBatch]] = {}
        for kind in kinds:
            if kind == "extrapolation":
                bg = extrap_bg
                q = make_queries(train, kg.num_relations)
            else:
                perm = rng.permutation(len(train))
                n_bg = int(round(cfg.background_fraction * len(train)))
                bg = Background.from_facts(train[perm[:n_bg]], kg.num_entities, kg.num_relations, "interpolation")
                q = make_queries(train[perm[n_bg:]], kg.num_relations)
            pools[kind] = (bg, q)
        budgets = split_budget(cfg.max_train_queries, {k: len(q) for k, (_, q) in pools.items()})
        for kind in kinds:
            bg, q = pools[kind]
            if cfg.relation_balance > 0 and budgets[kind] < len(q):
                order = balanced_sample(q.relation.numpy() % kg.num_relations, budgets[kind], cfg.relation_balance, rng)
            else:
                order = rng.permutation(len(q))[: budgets[kind]]
            self.backgrounds[kind], self.queries[kind] = bg, q[torch.from_numpy(order)]
        kinds = [k for k in kinds if len(self.queries[k])]
        # interleave the kinds batch by batch
        per_kind = {k: [(k, a) for a in range(0, len(self.queries[k]), cfg.batch_size)] for k in kinds}
        self.batches: list[tuple[str, int]] = []
        for i in range(max((len(v) for v in per_kind.values()), default=0)):
            for k in kinds:
                if i < len(per_kind[k]):
                    self.batches.append(per_kind[k][i])

    def batch(self, i: int, size: int) -> tuple[str, QueryBatch]:
        kind, a = self.batches[i]
        return kind, self.queries[kind][slice(a, a + size)]


def calibration_queries(cfg: TrainConfig) -> int:
    """The valid questions per setting a finished run calibrates on: the run's validation subset, or
    2,000 when it validates on all of valid."""
    return cfg.max_valid_queries or 2000


def estimate_training(kg: TemporalKG, run: RunConfig, sample: int = 24, eval_test: bool = False,
                      min_seconds: float = 0.5, max_seconds: float = 3.0) -> TrainingEstimate:
    """Time training questions of the run's first epoch (the run's own mix of kinds: at least
    ``sample`` of them and ``min_seconds``, at most ``max_seconds``, after one untimed warm-up batch)
    and a few validation questions with a freshly initialised model; nothing is written. The finish
    (calibration on valid; the test split when ``eval_test``) is priced at the validation pace. The
    live time left of the run refines this (:func:`tpar.model.timing.time_left`)."""
    run = RunConfig.from_dict(run.to_dict(), "estimate")
    model_config_for(kg, run)
    cfg = run.train
    set_seed(cfg.seed)
    model = TPAR(run.model).train()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    extrap_bg = None
    if cfg.setting in ("extrapolation", "unified"):
        extrap_bg = Background.from_facts(kg.facts("train"), kg.num_entities, kg.num_relations, "extrapolation")
    plan = _Plan(kg, run, 0, extrap_bg)
    per_epoch = sum(len(q) for q in plan.queries.values())

    def step(i: int) -> tuple[float, int]:
        kind, batch = plan.batch(i, cfg.batch_size)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        for a in range(0, len(batch), cfg.micro_batch):
            mb = batch[slice(a, a + cfg.micro_batch)]
            multiclass_log_loss(model(mb, plan.backgrounds[kind]), mb.answer).backward()
        opt.step()
        return time.perf_counter() - t0, len(batch)

    first = 1 if len(plan.batches) > 1 else 0
    if first:
        step(0)  # warm-up: the first step pays one-off costs (kernel load, allocations) the run pays once
    timed, seen = 0.0, 0
    for i in range(first, len(plan.batches)):
        dt_, n = step(i)
        timed, seen = timed + dt_, seen + n
        if (seen >= sample and timed >= min_seconds) or timed >= max_seconds:
            break
    per_q = timed / max(seen, 1)
    kinds = ["extrapolation", "interpolation"] if cfg.setting == "unified" else [cfg.setting]
    all_valid = 2 * len(kg.facts("valid")) if "valid" in kg.splits else 0
    n_valid = min(all_valid, cfg.max_valid_queries) if cfg.max_valid_queries else all_valid
    valid_seconds = finish_seconds = per_answer = overhead = 0.0
    if n_valid:
        per_answer, overhead = _answer_pace(kg, model.eval(), kinds, cfg)
        n_calibrate = min(all_valid, calibration_queries(cfg)) if cfg.calibrate else 0
        n_test = 2 * len(kg.facts("test")) if eval_test and "test" in kg.splits else 0
        valid_seconds = len(kinds) * (overhead + per_answer * n_valid)
        finish_seconds = sum(len(kinds) * (overhead + per_answer * n) for n in (n_calibrate, n_test) if n)
    return TrainingEstimate(per_q, per_epoch, valid_seconds, cfg.epochs, finish_seconds, int(seen), per_answer,
                            overhead)


def _answer_pace(kg: TemporalKG, model: TPAR, kinds: list[str], cfg: TrainConfig) -> tuple[float, float]:
    """(seconds per answered valid question, seconds of fixed cost per evaluation pass), averaged over
    ``kinds``: after an untimed warm-up, two passes of different sizes at validation's batch size
    separate the cost that grows with the questions from the cost each pass pays once."""
    ranker = ModelRanker(model, torch.device("cpu"), micro_batch=max(1, cfg.micro_batch))
    paces = []
    for kind in kinds:  # each setting's own pace (interpolation sees the facts after the question too)
        evaluate(kg, ranker, kind, "valid", progress=False, batch_size=16, max_queries=16, seed=cfg.seed)
        timed = []
        for n in (32, 128):
            t0 = time.perf_counter()
            res = evaluate(kg, ranker, kind, "valid", progress=False, batch_size=64, max_queries=n, seed=cfg.seed)
            timed.append((res.num_queries, time.perf_counter() - t0))
        (n1, t1), (n2, t2) = timed
        per = t2 / max(n2, 1)
        if n2 > n1:  # the growth between the two passes, never below a fifth of the plain mean (timing noise)
            per = max((t2 - t1) / (n2 - n1), 0.2 * per)
        paces.append((per, max(0.0, t2 - per * n2)))
    return sum(p for p, _ in paces) / len(paces), sum(o for _, o in paces) / len(paces)


def validate(model: TPAR, kg: TemporalKG, run: RunConfig, device: torch.device, progress: bool,
             max_queries: int | None = None, split: str = "valid") -> dict[str, float]:
    """Realistic MRR on (a seeded subset of) ``split`` for the run's setting(s)."""
    kinds = ["extrapolation", "interpolation"] if run.train.setting == "unified" else [run.train.setting]
    ranker = ModelRanker(model, device, micro_batch=max(1, run.train.micro_batch))
    out = {}
    for kind in kinds:  # split over the ranks of a distributed run (every rank gets the whole result)
        res = evaluate_everywhere(kg, ranker, kind, split, progress=progress, batch_size=64,
                                  max_queries=run.train.max_valid_queries if max_queries is None else max_queries,
                                  seed=run.train.seed)
        m = res.metrics("realistic")
        out[f"{kind}_mrr"] = m.mrr
        out[f"{kind}_hits@1"] = m.hits[1]
        out[f"{kind}_hits@10"] = m.hits[10]
    out["mrr"] = float(np.mean([out[f"{k}_mrr"] for k in kinds]))
    model.train()
    return out


def train(kg: TemporalKG, run: RunConfig, out: str | Path, *, resume: bool = False, progress: bool = True,
          callbacks: TrainingCallbacks | None = None, eval_test: bool = False,
          init: Checkpoint | None = None, init_name: str = "", reserved: bool = False) -> TrainResult:
    """Train (or resume training) and write the best model to ``out``; see the module docstring.

    ``init``: a warm start -- the model begins with this checkpoint's weights (same data fingerprint and
    model configuration, else a :class:`DataError`) and a fresh optimiser; the new run's epochs count from
    1, its selection is on valid as always, and the checkpoint records where it started
    (``extra["warm_start"]``, with ``init_name``). Ignored by ``resume``, whose file already holds the warm-started weights.

    ``out`` is reserved for the run (``out.lock``): a second run writing the same checkpoint is refused
    with a message, as is an output folder that cannot be written or has too little free space;
    ``reserved``: the caller already holds that lock (``tpar train`` takes it before loading the data)."""
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(out.parent).free
    except OSError as e:
        raise DataError(f"cannot write there ({e.strerror or e})", file=out.parent) from None
    if free < MIN_FREE_BYTES:
        raise DataError(f"only {free / 2 ** 20:.0f} MB free; training needs at least "
                        f"{MIN_FREE_BYTES / 2 ** 20:.0f} MB for its checkpoints", file=out.parent)
    dist = current_dist()
    if reserved:  # the caller holds the output's lock
        return _train(kg, run, out, resume=resume, progress=progress, callbacks=callbacks, eval_test=eval_test,
                      init=init, init_name=init_name)
    if dist is not None and not dist.main:  # rank 0 holds the output's lock and writes every file
        return _train(kg, run, out, resume=resume, progress=False, callbacks=None, eval_test=eval_test, init=init,
                      init_name=init_name)
    try:
        lock = acquire(lock_path(out), f"checkpoint {out.name}")
    except PermissionError as e:
        raise DataError(f"cannot write there ({e.strerror})", file=out.parent) from None
    try:
        return _train(kg, run, out, resume=resume, progress=progress, callbacks=callbacks, eval_test=eval_test,
                      init=init, init_name=init_name)
    finally:
        release(lock)


def warm_start_model(init: Checkpoint, kg: TemporalKG, run: RunConfig, device: torch.device,
                     name: str = "") -> tuple[TPAR, dict]:
    """The model of a warm start from ``init`` and the record kept of it; refuses other data or another
    model configuration (naming the differing fields)."""
    init.check_fits(kg)
    if init.data_fingerprint != kg.fingerprint:
        raise DataError(f"the warm-start checkpoint was trained on other data ({init.data_name}, fingerprint "
                        f"{init.data_fingerprint[:12]}…; this data: {kg.fingerprint[:12]}…)")
    mine, theirs = asdict(run.model), asdict(init.config.model)
    differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    if differ:
        raise DataError("the warm-start checkpoint has another model configuration: "
                        + ", ".join(f"{k} {theirs.get(k)!r} there, {mine.get(k)!r} here" for k in differ))
    model = init.build_model(device).train()
    record = {"from": name, "data_fingerprint": init.data_fingerprint, "setting": init.setting,
              "epochs": len(init.history), "best_epoch": init.extra.get("best_epoch"),
              "seconds": init.extra.get("seconds"), "valid_subset": init.metrics.get("valid_subset"),
              "hardware": init.extra.get("hardware"), "history": init.history,
              "before": init.extra.get("warm_start")}  # a chain of warm starts stays traceable
    return model, record


def _train(kg: TemporalKG, run: RunConfig, out: Path, *, resume: bool, progress: bool,
           callbacks: TrainingCallbacks | None, eval_test: bool, init: Checkpoint | None = None,
           init_name: str = "") -> TrainResult:
    out = Path(out)
    cb = callbacks or TrainingCallbacks()
    cfg = run.train
    if "train" in kg.missing_splits or len(kg.facts("train")) == 0:
        raise DataError(f"{kg.name}: no training facts to train on")
    if "valid" in kg.missing_splits:
        raise DataError(f"{kg.name}: a valid split is needed for early stopping")
    run = model_config_for(kg, run)
    device = resolve_device(cfg.device)
    set_seed(cfg.seed)
    model = TPAR(run.model).to(device)
    warm: dict | None = None
    if init is not None and not resume:
        model, warm = warm_start_model(init, kg, run, device, init_name)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    history: list[dict] = []
    start_epoch, start_batch = 0, 0
    best_mrr, best_epoch, bad_epochs = -math.inf, -1, 0
    trained_seconds = 0.0
    rpath = resume_path(out)
    if resume:
        if not rpath.is_file():
            raise DataError("nothing to resume: no resume file next to the output", file=rpath)
        ck, opt_state, pos = Checkpoint.load(rpath, with_state=True)
        ck.check_fits(kg)
        if ck.data_fingerprint != kg.fingerprint:
            raise DataError("the resume file was made on different data (fingerprints differ)", file=rpath)
        if ck.config.to_dict() != run.to_dict():
            device_asked = cfg.device
            run = ck.config  # the interrupted run's own configuration wins, except where it runs:
            cfg = run.train  # a run interrupted on a GPU machine may continue on a CPU one
            cfg.device = device_asked
            device = resolve_device(cfg.device)
        model = ck.build_model(device).train()
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        opt.load_state_dict(opt_state["adam"])
        torch.set_rng_state(opt_state["torch_rng"])
        history = ck.history
        start_epoch, start_batch = pos["epoch"], pos["batch"]
        best_mrr, best_epoch, bad_epochs = pos["best_mrr"], pos["best_epoch"], pos["bad_epochs"]
        trained_seconds = pos["seconds"]
        warm = ck.extra.get("warm_start")
    setting = cfg.setting  # after a resume: the interrupted run's setting, not the caller's
    model.train()
    extrap_bg = None
    if setting in ("extrapolation", "unified"):
        extrap_bg = Background.from_facts(kg.facts("train"), kg.num_entities, kg.num_relations, "extrapolation")
    bg_cache: dict[int, Background] = {}

    def on_device(bg: Background) -> Background:
        if id(bg) not in bg_cache:
            bg_cache.clear()
            bg_cache[id(bg)] = bg.to(device)
        return bg_cache[id(bg)]

    warm_extra = {"warm_start": warm} if warm else {}
    dist = current_dist()
    main = dist is None or dist.main

    def snapshot(epoch: int, batch: int) -> None:
        if not main:
            return
        ck = from_model(model, run, kg, setting, history=history,
                        extra={"seconds": trained_seconds, "hardware": hardware(), "seed": cfg.seed, **warm_extra})
        ck.save(rpath, optimizer={"adam": opt.state_dict(), "torch_rng": torch.get_rng_state()},
                position={"epoch": epoch, "batch": batch, "best_mrr": best_mrr, "best_epoch": best_epoch,
                          "bad_epochs": bad_epochs, "seconds": trained_seconds})
        if cb.on_checkpoint:
            cb.on_checkpoint(rpath)

    stopped = "completed"
    epochs_trained = float(start_epoch)  # epochs of optimiser steps (0.1: a tenth of the first)
    t_run = time.perf_counter()
    last_save = time.perf_counter()
    with deferred_signals() as received:
        try:
            for epoch in range(start_epoch, cfg.epochs):
                plan = _Plan(kg, run, epoch, extrap_bg)
                nb = len(plan.batches)
                first = start_batch if epoch == start_epoch else 0
                bar = tqdm(total=nb, initial=first, desc=f"epoch {epoch + 1}/{cfg.epochs}", unit="batch",
                           disable=not (progress and main), mininterval=1.0)
                t_epoch, n_q, loss_sum, loss_n = time.perf_counter(), 0, 0.0, 0
                for i in range(first, nb):
                    kind, batch = plan.batch(i, cfg.batch_size)
                    bg = on_device(plan.backgrounds[kind])
                    t0 = time.perf_counter()
                    lr = scheduled_lr(cfg, epoch, i, nb, history)
                    for group in opt.param_groups:
                        group["lr"] = lr
                    opt.zero_grad(set_to_none=True)
                    total = 0.0
                    for k, a in enumerate(range(0, len(batch), cfg.micro_batch)):
                        if dist is not None and k % dist.world != dist.rank:
                            continue  # another rank's micro-batch
                        torch.manual_seed(microbatch_seed(cfg.seed, epoch, i, k))  # dropout: the same in any layout
                        mb = batch[slice(a, a + cfg.micro_batch)].to(device)
                        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.amp and device.type == "cuda"):
                            scores = model(mb, bg)
                        loss = multiclass_log_loss(scores.float(), mb.answer) * (len(mb) / len(batch))
                        loss.backward()
                        total += float(loss.detach())
                    if dist is not None:  # the global batch's gradient: the sum of the ranks' parts
                        dist.all_reduce_grads(model.parameters())
                        total = dist.sum(total)
                    opt.step()
                    dt = time.perf_counter() - t0
                    trained_seconds += dt
                    n_q += len(batch)
                    loss_sum, loss_n = loss_sum + total, loss_n + 1
                    qps = n_q / max(time.perf_counter() - t_epoch, 1e-9)
                    epochs_trained = epoch + (i + 1) / nb
                    bar.update(1)
                    bar.set_postfix(loss=f"{total:.4f}", qps=f"{qps:.1f}", refresh=False)
                    cancel = bool(cb.on_step and cb.on_step(StepInfo(epoch, i + 1, nb, total, qps, trained_seconds, lr)))
                    stop = bool(received)
                    save = time.perf_counter() - last_save >= cfg.checkpoint_every
                    if dist is not None:  # every rank stops (and rank 0 saves) at the same step
                        cancel, stop, save = dist.any(cancel), dist.any(stop), dist.any(save)
                    if cancel:
                        snapshot(epoch, i + 1)
                        raise TrainingCancelled()
                    if stop:  # Ctrl-C / SIGTERM: this step is done; keep it and stop
                        snapshot(epoch, i + 1)
                        raise TrainingInterrupted()
                    if save:
                        snapshot(epoch, i + 1)
                        last_save = time.perf_counter()
                bar.close()
                start_batch = 0
                if cb.on_phase:
                    cb.on_phase("validating")
                val = validate(model, kg, run, device, progress)
                planned = sum(len(q) for q in plan.queries.values())  # all of them ran (some before a resume)
                entry = {"epoch": epoch + 1, "loss": loss_sum / max(loss_n, 1), "queries": planned,
                         "seconds": time.perf_counter() - t_epoch, **{f"valid_{k}": v for k, v in val.items()}}
                history.append(entry)
                improved = val["mrr"] > best_mrr
                if improved:
                    best_mrr, best_epoch, bad_epochs = val["mrr"], epoch + 1, 0
                    if main:
                        from_model(model, run, kg, setting, history=history, metrics={"valid_subset": val},
                                   extra={"seconds": trained_seconds, "hardware": hardware(), "seed": cfg.seed,
                                          "best_epoch": best_epoch, "ranks": dist.world if dist else 1,
                                          **warm_extra}).save(out)
                else:
                    bad_epochs += 1
                snapshot(epoch + 1, 0)
                last_save = time.perf_counter()
                if progress:
                    print(f"epoch {epoch + 1}: loss {entry['loss']:.4f}, valid MRR {100 * val['mrr']:.2f}"
                          f"{' (best)' if improved else ''}", flush=True)
                cancel, stop = bool(cb.on_epoch and cb.on_epoch(entry)), bool(received)
                if dist is not None:
                    cancel, stop = dist.any(cancel), dist.any(stop)
                if cancel:
                    raise TrainingCancelled()
                if stop:  # arrived during validation: the epoch's snapshot is written
                    raise TrainingInterrupted()
                if bad_epochs >= cfg.patience:
                    stopped = "early-stopping"
                    break
        except TrainingInterrupted:
            stopped = "interrupted"
        except TrainingCancelled:
            stopped = "cancelled"
    if not main:  # rank 0 finishes alone: the output, calibration and test figures are its to write
        return TrainResult(None, out, history, best_epoch, trained_seconds, stopped)
    if not out.is_file():
        # cancelled before the first validation: keep what we have so the work is not lost
        from_model(model, run, kg, setting, history=history,
                   extra={"seconds": trained_seconds, "hardware": hardware(), "seed": cfg.seed, **warm_extra}).save(out)
    best = Checkpoint.load(out)
    best.history = history
    best.extra.update({"seconds": trained_seconds, "hardware": hardware(), "seed": cfg.seed, "stopped": stopped,
                       "best_epoch": best_epoch, "wall_seconds": time.perf_counter() - t_run,
                       "epochs_trained": round(epochs_trained, 3)})
    kinds = ["extrapolation", "interpolation"] if setting == "unified" else [setting]
    finished = stopped not in ("cancelled", "interrupted")
    if finished and (cfg.calibrate or (eval_test and "test" in kg.splits)):
        model = best.build_model(device)
    if finished and cfg.calibrate:
        if cb.on_phase:
            cb.on_phase("calibrating on valid")
        for kind in kinds:  # temperature and conformal thresholds from valid (never test)
            cal = calibrate(kg, ModelRanker(model, device, cfg.micro_batch), kind, split="valid",
                            max_queries=calibration_queries(cfg), seed=cfg.seed)
            best.extra.setdefault("calibration", {})[kind] = cal.to_dict()
    if finished and eval_test and "test" in kg.splits:
        if cb.on_phase:
            cb.on_phase("evaluating on test")
        for kind in kinds:
            res = evaluate(kg, ModelRanker(model, device, cfg.micro_batch), kind, "test", progress=progress, batch_size=64)
            best.metrics[f"test_{kind}"] = {m: res.metrics(m).to_dict() for m in RANK_TYPES}
    best.save(out)
    if stopped not in ("cancelled", "interrupted") and rpath.exists():
        rpath.unlink()
    return TrainResult(best, out, history, best_epoch, trained_seconds, stopped)
