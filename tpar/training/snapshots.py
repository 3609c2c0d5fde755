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
    state and the optimiser-step seconds so far; for the epoch in progress, the summed loss of its ``loss_steps``
    steps and its wall seconds so far (so that an epoch interrupted and resumed reports the mean loss and the time
    of all its steps, not only those after the resume; resume files written before these fields read as 0)."""

    epoch: int
    batch: int
    stopping: EarlyStopping
    seconds: float
    loss_sum: float = 0.0
    loss_steps: int = 0
    epoch_seconds: float = 0.0

    def position(self) -> dict:
        return {"epoch": self.epoch, "batch": self.batch, "best_mrr": self.stopping.best_mrr,
                "best_epoch": self.stopping.best_epoch, "bad_epochs": self.stopping.bad_epochs,
                "seconds": self.seconds, "loss_sum": self.loss_sum, "loss_steps": self.loss_steps,
                "epoch_seconds": self.epoch_seconds}


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
    point = _checked_position(pos, patience, path)
    if not isinstance(opt_state, dict) or not isinstance(opt_state.get("adam"), dict):
        raise DataError("the resume file holds no optimiser state: it is not a resume file of tpar train", file=path)
    rng = opt_state.get("torch_rng")
    want = torch.get_rng_state()
    if not isinstance(rng, torch.Tensor) or rng.dtype != want.dtype or rng.shape != want.shape or \
            not rng.is_contiguous() or rng.layout != torch.strided:
        raise DataError("the resume file's random-number state is not torch's (altered or from another torch)",
                        file=path)
    return ck, opt_state, point


def _checked_position(pos: object, patience: int, path: Path) -> ResumePoint:
    """The position of a resume file, each field of its type and range (a :class:`DataError` naming the first
    that is not: a null best MRR, a negative epoch ...)."""
    import math

    from tpar.errors import number_in

    if not isinstance(pos, dict):
        raise DataError("the resume file holds no position (epoch, batch): it is not a resume file of tpar train",
                        file=path)

    def whole(key: str, least: int) -> int:
        v = pos.get(key)
        if not number_in(v, least, 10 ** 12, whole=True):
            raise DataError(f"the resume file's {key} is {str(v)[:40]!r}, not a whole number from {least}", file=path)
        return v

    epoch, batch, best_epoch, bad = whole("epoch", 0), whole("batch", 0), whole("best_epoch", -1), whole("bad_epochs", 0)
    best, seconds = pos.get("best_mrr"), pos.get("seconds")
    before_any = best_epoch == -1 and isinstance(best, float) and best == -math.inf
    if not before_any and not number_in(best, 0.0, 1.0):
        raise DataError(f"the resume file's best_mrr is {str(best)[:40]!r}, not a share from 0 to 1", file=path)
    if not number_in(seconds, 0.0):
        raise DataError(f"the resume file's seconds is {str(seconds)[:40]!r}, not a duration", file=path)
    steps = pos.get("loss_steps", 0)
    if not number_in(steps, 0, batch, whole=True):
        raise DataError(f"the resume file's loss_steps is {str(steps)[:40]!r}, not a whole number from 0 to its "
                        f"batch ({batch})", file=path)
    loss_sum, epoch_seconds = pos.get("loss_sum", 0.0), pos.get("epoch_seconds", 0.0)
    if not number_in(loss_sum, 0.0, 1e6 * max(steps, 1)) or (steps == 0 and loss_sum != 0):  # a mean loss ≤ 1e6
        raise DataError(f"the resume file's loss_sum is {str(loss_sum)[:40]!r}, not a finite loss of its {steps} "
                        "steps", file=path)
    if not number_in(epoch_seconds, 0.0, 1e9):  # about 30 years
        raise DataError(f"the resume file's epoch_seconds is {str(epoch_seconds)[:40]!r}, not a duration", file=path)
    return ResumePoint(epoch, batch, EarlyStopping(patience, float(best), best_epoch, bad), float(seconds),
                       float(loss_sum), int(steps), float(epoch_seconds))


def restore_optimizer(optimizer: torch.optim.Optimizer, adam_state: dict, path: Path) -> None:
    """Load a resume file's optimiser state into ``optimizer`` (built over the resumed model's parameters): its
    groups and every moment tensor must fit those parameters, or a :class:`DataError` names the file -- a
    mismatch would otherwise fail at the first step, after the data is loaded, with an internal error."""
    from tpar.errors import number_in

    params = [q for g in optimizer.param_groups for q in g["params"]]
    groups = adam_state.get("param_groups")
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise DataError("the resume file's optimiser state has no parameter groups", file=path)
    for g in groups:  # the options tpar's Adam runs with: nothing a hand edit could turn into an internal error
        betas = g.get("betas")
        fine = (number_in(g.get("lr"), 0.0, 10.0, above=True) and number_in(g.get("eps"), 0.0, 1.0, above=True)
                and number_in(g.get("weight_decay", 0.0), 0.0, 10.0)
                and isinstance(betas, (list, tuple)) and len(betas) == 2
                and all(number_in(b, 0.0, 1.0 - 1e-12) for b in betas)
                and not any(g.get(k) for k in ("amsgrad", "maximize", "capturable", "differentiable", "fused",
                                                "foreach", "decoupled_weight_decay")))
        if not fine:
            shown = {k: g.get(k) for k in ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "capturable")}
            raise DataError(f"the resume file's optimiser options are not Adam's as tpar trains ({str(shown)[:200]})",
                            file=path)
    try:
        optimizer.load_state_dict(adam_state)
    except (ValueError, KeyError, TypeError, RuntimeError, IndexError) as e:
        raise DataError(f"the resume file's optimiser state does not fit the model ({str(e)[:160]})", file=path) \
            from None
    for q in params:
        st = optimizer.state.get(q, {})
        for key, v in st.items():
            if key == "step":
                ok = isinstance(v, torch.Tensor) and v.numel() == 1 and bool(torch.isfinite(v).all()) and float(v) >= 0
            else:
                ok = key in ("exp_avg", "exp_avg_sq") and isinstance(v, torch.Tensor) and v.shape == q.shape and \
                    v.is_floating_point() and bool(torch.isfinite(v).all()) and \
                    (key != "exp_avg_sq" or bool((v >= 0).all()))
            if not ok:
                raise DataError(f"the resume file's optimiser state {key!r} does not fit a weight of shape "
                                f"{tuple(q.shape)} (or is not finite)", file=path)
