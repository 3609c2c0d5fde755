"""How long a run will take on this machine, measured before it starts (nothing is written).

The live time left of a running job refines this estimate (:func:`tpar.training.timing.time_left`).
"""

from __future__ import annotations

import time

import torch

from tpar.data.kg import TemporalKG
from tpar.evaluation.protocol import evaluate
from tpar.graph.queries import settings_of
from tpar.model.config import RunConfig, TrainConfig
from tpar.model.network import TPAR, multiclass_log_loss
from tpar.model.ranker import ModelRanker
from tpar.training.plan import EpochPlan, extrapolation_background, model_config_for, set_seed
from tpar.training.timing import TrainingEstimate


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
    live time left of the run refines this (:func:`tpar.training.timing.time_left`)."""
    run = RunConfig.from_dict(run.to_dict(), "estimate")
    model_config_for(kg, run)
    cfg = run.train
    set_seed(cfg.seed)
    model = TPAR(run.model).train()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    extrap_bg = extrapolation_background(kg, cfg.setting)
    plan = EpochPlan(kg, run, 0, extrap_bg)
    per_epoch = plan.num_questions

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
    kinds = settings_of(cfg.setting)
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
