"""Early stopping on the validation MRR (model selection on valid, never test)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class EarlyStopping:
    """The best validation MRR so far, its epoch (1-based; -1 before any), and the epochs since it."""

    patience: int
    best_mrr: float = -math.inf
    best_epoch: int = -1
    bad_epochs: int = 0

    def update(self, mrr: float, epoch: int) -> bool:
        """Record epoch ``epoch``'s validation MRR; True when it is a new best (the model to keep)."""
        if mrr > self.best_mrr:
            self.best_mrr, self.best_epoch, self.bad_epochs = mrr, epoch, 0
            return True
        self.bad_epochs += 1
        return False

    @property
    def should_stop(self) -> bool:
        return self.bad_epochs >= self.patience
