"""Where a run writes, and its resume file: the model, optimiser, RNG and position of the last snapshot.

A resume file (``<out>.resume``) is a checkpoint with two extra entries: the optimiser and torch RNG
state, and the position (epoch, next batch, early-stopping state, seconds trained). ``tpar train
--resume`` continues from it exactly where the snapshot was taken.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from tpar.data.kg import TemporalKG
from tpar.errors import DataError
from tpar.model.checkpoint import Checkpoint
from tpar.training.stopping import EarlyStopping

#: free space an output folder needs before a run starts (checkpoints and resume files are small)
MIN_FREE_BYTES = 64 * 2 ** 20


def resume_path(out: Path) -> Path:
    return out.with_name(out.name + ".resume")


def check_output_folder(out: Path) -> None:
    """Create ``out``'s folder; a :class:`DataError` when it cannot be written or has too little space."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(out.parent).free
    except OSError as e:
        raise DataError(f"cannot write there ({e.strerror or e})", file=out.parent) from None
    if free < MIN_FREE_BYTES:
        raise DataError(f"only {free / 2 ** 20:.0f} MB free; training needs at least "
                        f"{MIN_FREE_BYTES / 2 ** 20:.0f} MB for its checkpoints", file=out.parent)


@dataclass
class ResumePoint:
    """Where a snapshot was taken: ``epoch`` in progress (0-based), its next ``batch``, the early-stopping
    state and the optimiser-step seconds so far."""

    epoch: int
    batch: int
    stopping: EarlyStopping
    seconds: float

    def position(self) -> dict:
        return {"epoch": self.epoch, "batch": self.batch, "best_mrr": self.stopping.best_mrr,
                "best_epoch": self.stopping.best_epoch, "bad_epochs": self.stopping.bad_epochs,
                "seconds": self.seconds}


def save_resume(path: Path, ckpt: Checkpoint, optimizer: torch.optim.Optimizer, point: ResumePoint) -> None:
    ckpt.save(path, optimizer={"adam": optimizer.state_dict(), "torch_rng": torch.get_rng_state()},
              position=point.position())


def load_resume(path: Path, kg: TemporalKG, patience: int) -> tuple[Checkpoint, dict, ResumePoint]:
    """(checkpoint, optimiser state, position) of the resume file at ``path``, checked against ``kg``."""
    if not path.is_file():
        raise DataError("nothing to resume: no resume file next to the output", file=path)
    ck, opt_state, pos = Checkpoint.load(path, with_state=True)
    ck.check_fits(kg)
    if ck.data_fingerprint != kg.fingerprint:
        raise DataError("the resume file was made on different data (fingerprints differ)", file=path)
    stopping = EarlyStopping(patience, pos["best_mrr"], pos["best_epoch"], pos["bad_epochs"])
    return ck, opt_state, ResumePoint(pos["epoch"], pos["batch"], stopping, pos["seconds"])
