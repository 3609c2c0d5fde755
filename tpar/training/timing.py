"""How long a training run takes: one source for the estimate given before a run and the time left
shown while it runs.

:func:`tpar.training.trainer.estimate_training` times a few training questions and validation answers on
this machine (a :class:`TrainingEstimate`). :func:`time_left` prices what is left of a run from that
estimate, refined by what the run itself has measured so far (:class:`RunProgress`): before the first
step it returns exactly the estimate's total, and the more of the run has been timed, the more the
live pace counts (the estimate weighs as much as the questions it timed). Torch-free, so a front end
can call it on every redraw.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from tpar.errors import plural


@dataclass
class TrainingEstimate:
    """How long a run should take on this machine, from a few timed training steps and answered
    validation questions (an estimate: the machine's load and early stopping change it)."""

    seconds_per_question: float    # one training question: forward, backward, optimiser share
    questions_per_epoch: int
    valid_seconds: float           # one validation pass
    epochs: int
    finish_seconds: float = 0.0    # after the last epoch: calibration on valid, the test evaluation if asked
    sample_questions: int = 0      # training questions timed (the estimate's weight against the live pace)
    seconds_per_answer: float = 0.0  # one answered validation question (the growing part of a pass)
    pass_overhead_seconds: float = 0.0  # what one evaluation pass of one setting pays once

    @property
    def epoch_seconds(self) -> float:
        return self.seconds_per_question * self.questions_per_epoch + self.valid_seconds

    @property
    def total_seconds(self) -> float:
        """At most this long (every epoch run; early stopping may end sooner), the finish included."""
        return self.epoch_seconds * self.epochs + self.finish_seconds

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None) -> TrainingEstimate | None:
        """The estimate stored with ``to_dict``; ``None`` for an empty or unreadable record."""
        if not isinstance(d, dict) or not d:
            return None
        known = {f.name for f in fields(cls)}
        try:
            est = cls(**{k: v for k, v in d.items() if k in known})
            values = (est.seconds_per_question, est.questions_per_epoch, est.valid_seconds, est.epochs,
                      est.finish_seconds, est.sample_questions, est.seconds_per_answer, est.pass_overhead_seconds)
            if not all(isinstance(v, (int, float)) and v >= 0 for v in values):
                return None
            return est
        except TypeError:
            return None


@dataclass
class RunProgress:
    """What a running job has done so far, as its events report it."""

    epochs: int                       # planned epochs (every one run: early stopping may end sooner)
    epoch_fraction: float = 0.0       # epochs of optimiser steps done (2.5: two epochs and half the third)
    step_seconds: float = 0.0         # time those steps took
    validations: int = 0              # validation passes finished
    validation_seconds: float = 0.0   # their total time
    phase: str = ""                   # "validating", "calibrating on valid", "evaluating on test" or "" (stepping)
    phase_seconds: float = 0.0        # how long the current phase has run (for the finish: since it began)


@dataclass
class TimeLeft:
    """What is left of a run, priced by :func:`time_left`."""

    seconds: float                    # at most this long still (every planned epoch run)
    epoch_step_seconds: float         # the optimiser steps of one epoch, at the pace used
    valid_seconds: float              # one validation pass, at the pace used
    finish_seconds: float             # calibration (and the test evaluation) after the last epoch
    measured: bool                    # the pace rests on the run's own steps (not only on the estimate)


#: the estimate's weight, in training questions, when it does not say how many it timed
DEFAULT_SAMPLE = 24
FINISH_PHASES = ("calibrating on valid", "evaluating on test")


def time_left(estimate: TrainingEstimate | None, progress: RunProgress | None = None) -> TimeLeft | None:
    """The time a run still needs (all planned epochs, their validation and the finish), from
    ``estimate`` refined by ``progress``; ``None`` when neither says anything yet (no estimate and no
    step timed).

    The step pace is the estimate's per-question cost and the run's measured one, weighted by the
    questions behind each; a validation pass is the mean of those measured, else the estimate's scaled
    by how much faster or slower the steps turned out; the finish is priced at the validation pace."""
    p = progress or RunProgress(epochs=estimate.epochs if estimate else 0)
    live_epochs = p.epoch_fraction if p.step_seconds > 0 else 0.0
    if estimate is not None and estimate.questions_per_epoch > 0:
        prior_epochs = (estimate.sample_questions or DEFAULT_SAMPLE) / estimate.questions_per_epoch
        prior_step = estimate.seconds_per_question * estimate.questions_per_epoch
    else:
        prior_epochs, prior_step = 0.0, 0.0
    if prior_epochs + live_epochs <= 0:
        return None
    live_step = p.step_seconds / live_epochs if live_epochs else 0.0
    step = (prior_step * prior_epochs + live_step * live_epochs) / (prior_epochs + live_epochs)
    speed = step / prior_step if prior_step > 0 else 1.0  # > 1: this run is slower than estimated
    if p.validations and p.validation_seconds > 0:
        valid = p.validation_seconds / p.validations
    else:
        valid = estimate.valid_seconds * speed if estimate else 0.0
    if estimate is None:
        finish = 0.0
    elif estimate.valid_seconds > 0:
        finish = estimate.finish_seconds * valid / estimate.valid_seconds
    else:
        finish = estimate.finish_seconds * speed
    epochs = p.epochs
    left = max(0.0, epochs - p.epoch_fraction) * step
    if p.phase in FINISH_PHASES:
        left = max(0.0, finish - p.phase_seconds)
    else:
        pending = max(0, epochs - p.validations)
        if p.phase == "validating" and pending:
            left += max(0.0, valid - p.phase_seconds) + (pending - 1) * valid
        else:
            left += pending * valid
        left += finish
    return TimeLeft(left, step, valid, finish, live_epochs > 0)


def duration(seconds: float) -> str:
    """'under 1 s', '45 s', '12 min', '2 h 05 min'."""
    if seconds < 1:
        return "under 1 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def about(seconds: float) -> str:
    """'about 45 s', but 'under 1 s' (never 'about under 1 s')."""
    return duration(seconds) if seconds < 1 else f"about {duration(seconds)}"


def describe_estimate(est: TrainingEstimate) -> str:
    """The estimate in one sentence (``tpar train`` prints it before the first step)."""
    finish = f", then {duration(est.finish_seconds)} to calibrate (and test)" if est.finish_seconds else ""
    return (f"estimate on this machine: {est.questions_per_epoch:,} training questions per epoch at "
            f"{1000 * est.seconds_per_question:.1f} ms each plus {duration(est.valid_seconds)} of validation: "
            f"{about(est.epoch_seconds)} per epoch; at most {duration(est.total_seconds)} for "
            f"{plural(est.epochs, 'epoch')} (early stopping may end sooner){finish}")

