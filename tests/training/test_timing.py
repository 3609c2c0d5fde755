"""The training time: one function prices the estimate shown before a run and the time left while it
runs (tpar.training.timing.time_left), and a job's status feeds it what the run measured."""

from __future__ import annotations

import json
import os

import pytest

from tpar.training.timing import RunProgress, TrainingEstimate, time_left
from tpar.runtime.jobs import JobSpec, TrainingJob

EST = TrainingEstimate(seconds_per_question=0.01, questions_per_epoch=1000, valid_seconds=5.0, epochs=4,
                       finish_seconds=10.0, sample_questions=100)  # 10 s of steps + 5 s validation per epoch


def test_before_the_run_the_time_left_is_the_estimate():
    left = time_left(EST)
    assert left.seconds == pytest.approx(EST.total_seconds) == pytest.approx(4 * 15 + 10)
    assert not left.measured
    assert time_left(EST, RunProgress(epochs=4)).seconds == pytest.approx(EST.total_seconds)
    assert time_left(None) is None and time_left(None, RunProgress(epochs=4)) is None


def test_a_slower_run_is_priced_at_its_own_pace_as_it_goes():
    """The run turns out 3x slower than estimated: the more of it is timed, the closer the time left
    comes to the measured pace (the estimate weighs as much as the 100 questions it timed)."""
    previous = None
    for fraction in (0.05, 0.2, 0.5, 1.0):  # epochs of steps done, each at 30 s per epoch
        left = time_left(EST, RunProgress(epochs=4, epoch_fraction=fraction, step_seconds=30 * fraction))
        done_q = fraction * 1000
        step = (10 * 100 + 30 * done_q) / (100 + done_q)  # the weighted pace per epoch of steps
        assert left.epoch_step_seconds == pytest.approx(step) and left.measured
        speed = step / 10
        assert left.valid_seconds == pytest.approx(5 * speed)  # no validation timed yet: scaled like the steps
        assert left.seconds == pytest.approx((4 - fraction) * step + 4 * 5 * speed + 10 * speed)
        if previous is not None:
            assert left.epoch_step_seconds > previous  # converging on the measured 30 s
        previous = left.epoch_step_seconds
    assert previous == pytest.approx(30, rel=0.1)


def test_measured_validation_and_the_finish_count_what_is_left():
    # two epochs done, their validations took 8 s each; stepping the third epoch at the estimated pace
    p = RunProgress(epochs=4, epoch_fraction=2.5, step_seconds=25, validations=2, validation_seconds=16)
    left = time_left(EST, p)
    assert left.valid_seconds == 8 and left.finish_seconds == pytest.approx(10 * 8 / 5)  # the finish at that pace
    assert left.seconds == pytest.approx(1.5 * 10 + 2 * 8 + 16)
    # validating the last epoch for 3 s: 5 s of it left, then the finish
    p = RunProgress(epochs=4, epoch_fraction=4, step_seconds=40, validations=3, validation_seconds=24,
                    phase="validating", phase_seconds=3)
    assert time_left(EST, p).seconds == pytest.approx(8 - 3 + 16)
    # the finish running for 6 s (calibration, then the test split: counted from the first)
    p = RunProgress(epochs=4, epoch_fraction=4, step_seconds=40, validations=4, validation_seconds=32,
                    phase="evaluating on test", phase_seconds=6)
    assert time_left(EST, p).seconds == pytest.approx(16 - 6)
    # without an estimate, the pace measured so far alone
    left = time_left(None, RunProgress(epochs=2, epoch_fraction=0.5, step_seconds=20))
    assert left.seconds == pytest.approx(1.5 * 40) and left.measured


def test_an_estimate_survives_the_job_spec_and_junk_does_not():
    assert TrainingEstimate.from_dict(EST.to_dict()) == EST
    assert TrainingEstimate.from_dict({}) is None and TrainingEstimate.from_dict(None) is None
    assert TrainingEstimate.from_dict({**EST.to_dict(), "valid_seconds": "soon"}) is None
    assert TrainingEstimate.from_dict({**EST.to_dict(), "epochs": -1}) is None


def test_a_jobs_status_feeds_the_time_left_what_the_run_measured(tmp_path):
    """A running job (this process stands in for its worker) whose events say: one epoch of steps in
    30 s, its validation 8 s, now 1.5 s into the second epoch's steps."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    spec = JobSpec(data="d", setting="unified", run={"train": {"epochs": 4}}, out=str(tmp_path / "m.tpar"),
                   name="m", estimate=EST.to_dict())
    (job_dir / "spec.json").write_text(json.dumps(spec.__dict__))
    (job_dir / "pid").write_text(str(os.getpid()))
    t0 = 1000.0
    events = [{"type": "start", "time": t0},
              {"type": "step", "time": t0 + 30, "epoch": 0, "batch": 100, "batches": 100, "loss": 1.0, "qps": 1,
               "elapsed": 30.0},
              {"type": "phase", "time": t0 + 30, "phase": "validating"},
              {"type": "epoch", "time": t0 + 38, "epoch": 1, "loss": 1.0},
              {"type": "step", "time": t0 + 40, "epoch": 1, "batch": 5, "batches": 100, "loss": 1.0, "qps": 1,
               "elapsed": 31.5}]
    (job_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    s = TrainingJob(job_dir).status()
    assert s.state == "running" and s.phase == "" and s.epoch_fraction == pytest.approx(1.05)
    assert (s.validations, s.validation_seconds) == (1, 8)
    assert s.estimate() == EST
    expected = time_left(EST, RunProgress(4, 1.05, 31.5, 1, 8.0))
    assert s.time_left(now=t0 + 40) == expected
    assert expected.measured and expected.valid_seconds == 8
    # while the second validation runs, its time so far comes off
    with open(job_dir / "events.jsonl", "a") as f:
        f.write(json.dumps({"type": "phase", "time": t0 + 70, "phase": "validating"}) + "\n")
    s = TrainingJob(job_dir).status()
    assert s.phase == "validating"
    assert s.time_left(now=t0 + 73).seconds == pytest.approx(
        time_left(EST, RunProgress(4, 1.05, 31.5, 1, 8.0, "validating", 3.0)).seconds)
