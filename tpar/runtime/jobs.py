"""Background training jobs: each runs :func:`tpar.training.trainer.train` in its own process and reports
through files, so a front end stays responsive, a page reload finds the job again, and several
jobs (from several browser sessions) never share state.

A job is a folder ``<root>/<job id>/`` holding

* ``spec.json`` -- what to train (data folder, setting, run config, output checkpoint);
* ``events.jsonl`` -- one JSON object per line, appended by the worker: ``start``, ``step``
  (epoch, batch, batches, loss, q/s), ``epoch`` (history entry with validation metrics), then one of
  ``done`` (checkpoint path, seconds, how it stopped), ``cancelled``, ``failed`` (message); ``kept: true`` on
  ``done`` / ``cancelled`` when the run stopped before its first validation and the model it was to replace is
  kept as it was;
* ``cancel`` -- created to ask the worker to stop (it saves what it has and exits);
* ``pid`` -- the worker's process id and start time (:func:`tpar.data.locks.process_token`), to tell a crashed
  worker from a running one;
* ``worker.log`` -- the worker's stdout/stderr.

    job = start_job(root, JobSpec(data="sample_data/world/chronological", setting="unified",
                                  run=run.to_dict(), out="workspace/checkpoints/mine.tpar"))
    job.status()      # JobStatus(state="running", progress=0.42, ...)
    job.cancel()
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tpar.data.locks import exclusive, parse_token, proc_stat, process_token, token_alive
from tpar.data.names import check_name
from tpar.errors import DataError
from tpar.training.snapshots import resume_path
from tpar.training.timing import FINISH_PHASES, RunProgress, TimeLeft, TrainingEstimate, time_left

STEP_EVENT_EVERY = 0.5  # seconds between step events (the chart's resolution)


@dataclass
class JobSpec:
    data: str                     # data folder or CSV file, as :func:`tpar.data.loading.load_dataset` takes
    setting: str                  # extrapolation | interpolation | unified
    run: dict                     # RunConfig.to_dict()
    out: str                      # checkpoint to write
    name: str = ""                # shown in lists
    data_label: str = ""          # the data set's label in the app's catalog
    eval_test: bool = False
    threads: int = 0              # torch threads for the worker (0: the idle cores when it starts)
    estimate: dict = field(default_factory=dict)  # TrainingEstimate.to_dict() made before the start, if any
    replace: bool = False         # the output may be an existing model, to be replaced (asked for explicitly)


@dataclass
class JobStatus:
    id: str
    name: str
    state: str                    # starting | running | done | cancelled | failed | broken (unreadable spec)
    progress: float               # 0..1 over all planned optimiser steps
    epoch: int
    epochs: int
    steps: list[dict] = field(default_factory=list)    # step events (loss, q/s, elapsed)
    epochs_done: list[dict] = field(default_factory=list)
    message: str = ""
    phase: str = ""               # what a running job does besides optimiser steps ("validating", …); "" while stepping
    checkpoint: str = ""
    started: float = 0.0
    seconds: float = 0.0
    spec: dict = field(default_factory=dict)
    epoch_fraction: float = 0.0   # epochs of optimiser steps done (2.5: two and half the third)
    validations: int = 0          # validation passes finished
    validation_seconds: float = 0.0  # their time (from the phase events that announce them)
    phase_started: float = 0.0    # when the current phase began (for the finish: the first finish phase)
    ended: float = 0.0            # when it finished (done, cancelled or failed), 0 before
    entities: int = 0             # candidate answers of the data (the loss of a uniform guess is ln of it), 0 before read
    kept: bool = False            # cancelled before its first validation: the model it was to replace is kept as it was
    cut: str = ""                 # cancelled while finishing: the phase cut short (TrainResult.cut); training ran whole

    @property
    def finished(self) -> bool:
        return self.state in ("done", "cancelled", "failed", "broken")

    def estimate(self) -> TrainingEstimate | None:
        """The estimate the job was started with (``None`` when it was started without one)."""
        return TrainingEstimate.from_dict(self.spec.get("estimate"))

    def time_left(self, now: float | None = None) -> TimeLeft | None:
        """What is left of the run, every planned epoch run (early stopping may end sooner): the start's
        estimate refined by the pace measured so far (:func:`tpar.training.timing.time_left`, the same
        function that priced the estimate); ``None`` once finished or before anything says."""
        if self.finished:
            return None
        now = time.time() if now is None else now
        progress = RunProgress(self.epochs, self.epoch_fraction, self.seconds, self.validations,
                               self.validation_seconds, self.phase,
                               max(0.0, now - self.phase_started) if self.phase and self.phase_started else 0.0)
        return time_left(self.estimate(), progress)


class TrainingJob:
    def __init__(self, folder: str | Path) -> None:
        self.dir = Path(folder)

    @property
    def id(self) -> str:
        return self.dir.name

    def spec(self) -> JobSpec:
        """The job's spec; a :class:`DataError` naming the file when it is unreadable or malformed."""
        f = self.dir / "spec.json"
        try:
            d = json.loads(f.read_text(encoding="utf-8"))
            if not isinstance(d, dict) or not isinstance(d.get("run", {}), dict):
                raise ValueError("not a job spec object")
            spec = JobSpec(**d)
            if not all(isinstance(getattr(spec, k), str) for k in ("data", "setting", "out", "name", "data_label")):
                raise ValueError("data, setting, out, name and data_label must be text")
            return spec
        except (OSError, ValueError, TypeError, RecursionError) as e:
            raise DataError(f"unreadable job spec ({type(e).__name__}: {str(e)[:200]})", file=f) from None

    def events(self) -> list[dict]:
        f = self.dir / "events.jsonl"
        if not f.is_file():
            return []
        out = []
        lines = f.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            try:
                e = json.loads(line)
            except ValueError:
                if i == len(lines) - 1:  # the last line, being written right now
                    break
                raise ValueError(f"line {i + 1} is not a JSON event") from None
            if not isinstance(e, dict):
                raise ValueError(f"an event is {type(e).__name__}, not an object")
            out.append(e)
        return out

    def cancel(self) -> None:
        """Ask the worker to stop (it saves what it has); a :class:`DataError` when the job's folder is gone."""
        try:
            (self.dir / "cancel").touch()
        except OSError as e:
            raise DataError(f"the job cannot be cancelled: its folder cannot be written ({e.strerror or e})",
                            file=self.dir) from None

    def _alive(self) -> bool:
        """Whether the worker runs: the process its ``pid`` file names (pid and start time, so a pid reused by
        another process after the worker died does not count: hostile audit 39 #6), and not a zombie."""
        try:
            text = (self.dir / "pid").read_text()[:64]
        except (OSError, ValueError):
            return False
        token = parse_token(text)
        if token is None or not token_alive(token):
            return False
        stat = proc_stat(token[0])
        return stat is None or stat[0] != "Z"  # a zombie (exited, not yet reaped by its parent) is not alive

    def status(self) -> JobStatus:
        """Where the job stands, from its files; a job whose spec or events cannot be read or interpreted (another
        tpar's, edited, damaged) is ``broken``, with why: one such folder never hides or blocks the others
        (hostile audit 39 #7)."""
        try:
            spec = self.spec()
        except DataError as e:
            return JobStatus(self.id, self.id, "broken", 0.0, 0, 0, message=str(e))
        try:
            return self._status(spec)
        except (OSError, ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError) as e:
            # UnicodeDecodeError is a ValueError
            return JobStatus(self.id, spec.name or self.id, "broken", 0.0, 0, 0, spec=asdict(spec),
                             message=f"{self.dir / 'events.jsonl'}: its progress cannot be read ({type(e).__name__}: "
                                     f"{str(e)[:160]})")

    def _status(self, spec: JobSpec) -> JobStatus:
        ev = self.events()
        epochs = int(spec.run.get("train", {}).get("epochs", 1))
        st = JobStatus(self.id, spec.name or self.id, "starting", 0.0, 0, epochs, spec=asdict(spec))
        validating_since = None
        for e in ev:
            kind = e.get("type")
            if kind == "start":
                st.state, st.started = "running", e.get("time", 0.0)
            elif kind == "data":
                st.entities = int(e.get("entities", 0))
            elif kind == "phase":
                phase = str(e.get("phase", ""))
                if phase == "validating":
                    validating_since = e.get("time")
                if not (phase in FINISH_PHASES and st.phase in FINISH_PHASES):  # the finish counts from its first phase
                    st.phase_started = e.get("time", 0.0)
                st.phase = phase
            elif kind == "step":
                st.phase = ""
                st.steps.append(e)
                st.epoch = e["epoch"] + 1
                st.epoch_fraction = e["epoch"] + e["batch"] / max(e["batches"], 1)
                st.progress = min(1.0, st.epoch_fraction / max(epochs, 1))
                st.seconds = e.get("elapsed", st.seconds)
            elif kind == "epoch":
                st.epochs_done.append(e)
                st.validations += 1
                if validating_since is not None and isinstance(e.get("time"), (int, float)):
                    st.validation_seconds += max(0.0, e["time"] - validating_since)
                validating_since = None
                if st.phase == "validating":
                    st.phase = ""  # done: the next epoch's steps, or the finish, come next
            elif kind in ("done", "cancelled", "failed"):
                st.state, st.phase, st.ended = kind, "", e.get("time", 0.0)
                st.message = e.get("message", "")
                st.checkpoint = e.get("checkpoint", "")
                st.seconds = e.get("seconds", st.seconds)
                st.kept = e.get("kept") is True
                st.cut = e["cut"] if e.get("cut") in FINISH_PHASES else ""
                if kind == "done":
                    st.progress = 1.0
        if not st.finished and ev and not self._alive():
            st.state, st.message = "failed", "the training process ended unexpectedly (see worker.log)"
        elif st.state == "starting" and not self._alive() and time.time() - self.dir.stat().st_mtime > 60:
            st.state, st.message = "failed", "the training process did not start (see worker.log)"
        return st


def running_outputs(root: str | Path) -> set[str]:
    """The checkpoints that unfinished jobs are writing (broken jobs write nothing)."""
    out = set()
    for job in list_jobs(root):
        st = job.status()
        if not st.finished:
            out.add(str(Path(st.spec["out"]).resolve()))
    return out


def start_job(root: str | Path, spec: JobSpec) -> TrainingJob:
    """Create the job folder and launch its worker process (detached from the caller's session)."""
    root = Path(root)
    check_name("model", spec.name or Path(spec.out).stem)
    for folder, holds in ((root, "training jobs"), (Path(spec.out).parent, "trained models")):
        _make_folder(folder, holds)
    # the check and the new job folder under one lock: two starts at once (two browser tabs, two
    # sessions) cannot both pass the check
    try:
        with exclusive(root / ".start.lock", "the training job list", wait=10.0):
            return _start_job(root, spec)
    except OSError as e:  # a full disk, a read-only folder: no job started, nothing saved is touched
        raise DataError(f"cannot start the training job ({e.strerror or e})", file=root) from None


def _make_folder(folder: Path, holds: str) -> None:
    """``folder`` made if missing; a :class:`DataError` naming it when it cannot be (a file of that name in the
    way, a read-only disk), before anything starts (hostile audit 38: a file in the way was an internal error)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = ("a file of that name is in the way: move or rename it" if folder.exists() and not folder.is_dir()
               else e.strerror or str(e))
        raise DataError(f"the folder of {holds} cannot be made ({why})", file=folder) from None


def _start_job(root: Path, spec: JobSpec) -> TrainingJob:
    out = Path(spec.out).resolve()
    if str(out) in running_outputs(root):
        raise DataError(f"another running job is already writing {out.name}; choose another name")
    if out.exists() and not spec.replace:  # a saved model is replaced only when asked, whoever starts the job
        raise DataError(f"a model {out.name} exists and is kept; choose another name, or ask to replace it")
    progress = resume_path(out)
    if progress.exists() and not spec.replace:  # nor an interrupted run's progress (tpar train --resume continues it)
        raise DataError(f"an interrupted run of {out.name} left its progress in {progress.name} (`tpar train --out "
                        f"{out} --resume` continues it); choose another name, or ask to replace it")
    root.mkdir(parents=True, exist_ok=True)
    job_id = time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
    folder = root / job_id
    folder.mkdir()
    tmp = folder / "spec.json.tmp"  # atomic: readers never see half a spec
    tmp.write_text(json.dumps(asdict(spec), indent=2), encoding="utf-8")
    tmp.replace(folder / "spec.json")
    env = dict(os.environ)
    if spec.threads:
        env["OMP_NUM_THREADS"] = str(spec.threads)
    with open(folder / "worker.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tpar.runtime.jobs", str(folder)], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    _workers.append(proc)  # reaped whatever happens below
    try:
        (folder / "pid").write_text(process_token(proc.pid))
    except OSError:  # a job nobody can follow or cancel must not run on: stopped, so "cannot start" stays true
        proc.terminate()
        raise
    reap_workers()
    return TrainingJob(folder)


#: worker processes this process started and has not yet reaped
_workers: list[subprocess.Popen] = []


def reap_workers() -> int:
    """Collect the exit status of finished workers this process started, so none stays a zombie under
    a long-lived parent (the app); returns how many are still running."""
    _workers[:] = [w for w in _workers if w.poll() is None]
    return len(_workers)


def list_jobs(root: str | Path) -> list[TrainingJob]:
    """Jobs under ``root``, newest first (finished workers of this process are reaped on the way)."""
    reap_workers()
    root = Path(root)
    if not root.is_dir():
        return []
    return [TrainingJob(p) for p in sorted(root.iterdir(), reverse=True) if (p / "spec.json").is_file()]


# -- the worker -----------------------------------------------------------------------------------
def run_job(folder: str | Path) -> int:
    """Run the job in ``folder`` in this process (what the worker process does)."""
    import torch

    from tpar.model.config import RunConfig
    from tpar.data.loading import load_dataset
    from tpar.model.card import write_card
    from tpar.runtime.memory import bound_heap_growth
    from tpar.training.trainer import TrainingCallbacks, cut_text, train

    bound_heap_growth()
    job = TrainingJob(folder)
    events = open(job.dir / "events.jsonl", "a", encoding="utf-8")

    def emit(kind: str, **data) -> None:
        events.write(json.dumps({"type": kind, "time": time.time(), **data}) + "\n")
        events.flush()

    last = [0.0]
    spec: JobSpec | None = None
    try:
        spec = job.spec()
        from tpar.runtime.threads import apply_threads

        apply_threads(spec.threads)  # 0: the idle cores (tpar.runtime.threads)
        emit("start", pid=os.getpid())
        kg = load_dataset(spec.data)
        emit("data", entities=kg.num_entities)
        run = RunConfig.from_dict(spec.run, "job spec")
        cancel = job.dir / "cancel"

        def on_step(info) -> bool:
            now = time.perf_counter()
            if now - last[0] >= STEP_EVENT_EVERY or info.batch == info.num_batches:
                last[0] = now
                emit("step", epoch=info.epoch, batch=info.batch, batches=info.num_batches, loss=info.loss,
                     qps=info.queries_per_second, elapsed=info.elapsed)
            return cancel.exists()

        def on_epoch(entry: dict) -> bool:
            emit("epoch", **{k: v for k, v in entry.items() if isinstance(v, (int, float, str))})
            return cancel.exists()

        Path(spec.out).parent.mkdir(parents=True, exist_ok=True)
        result = train(kg, run, spec.out, progress=False, eval_test=spec.eval_test,
                       callbacks=TrainingCallbacks(on_step=on_step, on_epoch=on_epoch,
                                                   on_phase=lambda phase: emit("phase", phase=phase),
                                                   cancel_requested=cancel.exists))
        try:
            if not result.kept:  # a kept model's card is its own
                write_card(result.path)
        except (OSError, DataError) as e:  # the card is a convenience; the checkpoint is what matters
            print(f"warning: no model card written: {e}", flush=True)
        if result.kept:  # stopped before its first validation: the model it was to replace is kept as it was
            emit("cancelled" if result.stopped == "cancelled" else "done", checkpoint=str(result.path),
                 seconds=result.seconds, kept=True,
                 message=f"{result.stopped} before the first validation: the model that was there, "
                         f"{result.path.name}, is kept as it was (this run's progress is in "
                         f"{resume_path(result.path).name}: tpar train --resume continues it)")
        elif result.cut:  # trained and chosen; cancelled while calibrating or testing
            emit("cancelled", checkpoint=str(result.path), seconds=result.seconds, cut=result.cut,
                 message=cut_text(result.cut))
        elif result.stopped == "cancelled":
            emit("cancelled", checkpoint=str(result.path), seconds=result.seconds,
                 message="cancelled: the model so far was saved")
        else:
            emit("done", checkpoint=str(result.path), seconds=result.seconds, message=result.stopped)
        return 0
    except DataError as e:
        emit("failed", message=str(e))
        return 2
    except KeyboardInterrupt:  # a second SIGTERM / SIGINT: stopped at once (tpar.training.signals)
        kept = spec is not None and resume_path(Path(spec.out)).is_file()
        emit("failed", message="stopped at once by a second signal" + (
            "; the last resume file is kept (tpar train --resume continues the run)" if kept else ""))
        return 130
    except Exception as e:  # report, never hang the front end
        emit("failed", message=f"{type(e).__name__}: {e}")
        raise
    finally:
        events.close()


if __name__ == "__main__":
    sys.exit(run_job(sys.argv[1]))
