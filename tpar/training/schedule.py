"""The learning-rate schedule of a run (``TrainConfig.lr_schedule``)."""

from __future__ import annotations

import math

from tpar.model.config import TrainConfig


def scheduled_lr(cfg: TrainConfig, epoch: int, batch: int, batches: int, history: list[dict]) -> float:
    """The learning rate of optimiser step ``batch`` of ``epoch`` (0-based) under ``cfg.lr_schedule``
    (see :class:`~tpar.model.config.TrainConfig`); ``history``: the epochs validated so far.

    ``constant``: ``cfg.lr``; ``cosine``: from ``lr`` down to ``lr / 10`` over the planned epochs;
    ``plateau``: ``lr`` halved for every validated epoch that did not improve on the best."""
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
