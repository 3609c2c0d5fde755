"""Runs that end otherwise than planned (hostile audit 39): killed outright, cancelled while replacing a model,
resumed with other options or without their best model, resumed after early stopping, Ctrl-C twice; locks and
job pid files whose pid was reused; damaged job folders; recipes that would write outside their folder; a full
disk; a composite of a byte copy."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from helpers import ROOT, tiny_world_csv
from tpar.cli import main
from tpar.data.loading import load_dataset
from tpar.errors import DataError
from tpar.model.checkpoint import Checkpoint
from tpar.model.config import ModelConfig, RunConfig, TrainConfig
from tpar.training.snapshots import resume_path
from tpar.training.trainer import TrainingCallbacks, train


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    p = tmp_path_factory.mktemp("world") / "world.csv"
    p.write_text(tiny_world_csv())
    return p


def tiny_run(**kw):
    return RunConfig(ModelConfig(dim=8, attn_dim=3, num_layers=2, dropout=0.1),
                     TrainConfig(setting="extrapolation", lr=5e-3, batch_size=8, micro_batch=4,
                                 epochs=kw.pop("epochs", 3), patience=kw.pop("patience", 5), max_valid_queries=0,
                                 checkpoint_every=1e9, seed=kw.pop("seed", 0), **kw))


def test_the_best_model_so_far_says_it_is_unfinished_until_its_run_records_how_it_ended(world, tmp_path):
    """A run killed outright (SIGKILL, out of memory) left its best model so far looking finished (#1)."""
    kg, out, seen = load_dataset(world), tmp_path / "m.tpar", []
    train(kg, tiny_run(epochs=2), out, progress=False,
          callbacks=TrainingCallbacks(on_epoch=lambda e: seen.append(Checkpoint.load(out).unfinished())))
    assert len(seen) == 2 and seen[0] == ("the best model so far (epoch 1; 1 of at most 2 epochs validated when it "
                                          "was saved) of a run still training, or killed before it finished")
    assert seen[1].startswith("the best model so far (epoch ") and seen[1].endswith("of a run still training, or "
                                                                                    "killed before it finished")
    assert Checkpoint.load(out).unfinished() == ""


def test_a_resume_says_which_options_of_the_command_are_not_used_and_prints_the_config_that_runs(world, tmp_path,
                                                                                                 capsys):
    """--resume took the interrupted run's configuration silently and printed the command line's (#3)."""
    kg, out = load_dataset(world), tmp_path / "r.tpar"
    train(kg, tiny_run(epochs=3), out, progress=False, callbacks=TrainingCallbacks(on_epoch=lambda e: True))
    assert resume_path(out).is_file()
    assert main(["train", "--data", str(world), "--setting", "extrapolation", "--out", str(out), "--resume",
                 "--quiet", "--dim", "16", "--epochs", "2", "--threads", "1"]) == 0
    err = capsys.readouterr().err
    assert "note: --resume continues the interrupted run as it was configured" in err
    assert "this command's --epochs 2 (the run's: 3); --dim 16 (the run's: 8) are not used" in err, err
    assert "--threads" not in err.split("note:")[1].split("\n")[0]  # where it runs is the command's
    assert f"config: the interrupted run's own, from {resume_path(out)}" in err and "L=2, d=8" in err
    ck = Checkpoint.load(out)
    assert ck.config.model.dim == 8 and len(ck.history) == 3


def test_a_resume_whose_best_model_is_gone_is_refused_not_labelled_with_other_weights(world, tmp_path):
    """The last epoch's weights were saved as the best epoch's when --out had been moved away (#4)."""
    kg, out = load_dataset(world), tmp_path / "c.tpar"
    train(kg, tiny_run(epochs=3), out, progress=False, callbacks=TrainingCallbacks(on_epoch=lambda e: True))
    out.rename(tmp_path / "moved.tpar")
    with pytest.raises(DataError, match=r"best model of this run so far \(epoch 1.*which is gone: put it back"):
        train(kg, tiny_run(epochs=3), out, resume=True, progress=False)
    assert resume_path(out).is_file() and not out.exists()  # nothing lost, nothing written
    (tmp_path / "moved.tpar").rename(out)
    assert train(kg, tiny_run(epochs=3), out, resume=True, progress=False).stopped == "completed"


def test_a_resume_whose_best_model_was_replaced_by_another_or_damaged_is_refused(world, tmp_path):
    """Only the best file's existence was checked: another model put in its place (another run's, a copy of a
    later epoch) would be kept or labelled as this run's best epoch. Its epoch, valid MRR and data must be this
    run's; a damaged file is named as such. Nothing is lost either way, and the real file lets the run go on."""
    kg, out = load_dataset(world), tmp_path / "c.tpar"
    train(kg, tiny_run(epochs=3), out, progress=False, callbacks=TrainingCallbacks(on_epoch=lambda e: True))
    shutil.copy(out, tmp_path / "real.tpar")
    train(kg, tiny_run(epochs=2, seed=1), tmp_path / "other.tpar", progress=False)
    shutil.copy(tmp_path / "other.tpar", out)
    with pytest.raises(DataError, match=r"best model of this run so far \(epoch 1, valid MRR [0-9.]+\) was written "
                                        r"to c.tpar, but the model there now is another one \(epoch \d, valid MRR"):
        train(kg, tiny_run(epochs=3), out, resume=True, progress=False)
    out.write_bytes(b"not a model")
    with pytest.raises(DataError, match=r"which is no longer readable \(.*\): put it back to continue"):
        train(kg, tiny_run(epochs=3), out, resume=True, progress=False)
    assert resume_path(out).is_file()
    shutil.copy(tmp_path / "real.tpar", out)
    assert train(kg, tiny_run(epochs=3), out, resume=True, progress=False).stopped == "completed"


def test_a_run_stopped_early_and_killed_while_finishing_finishes_on_resume_without_more_epochs(world, tmp_path,
                                                                                                monkeypatch):
    """Its resume file records the stop; --resume trained patience + 1 more epochs (#5)."""
    import tpar.training.trainer as trainer

    kg, out = load_dataset(world), tmp_path / "e.tpar"
    mrrs = iter([0.5, 0.4, 0.3, 0.2, 0.1, 0.05])
    real = trainer.validate
    monkeypatch.setattr(trainer, "validate", lambda *a, **k: {**real(*a, **k), "mrr": next(mrrs)})

    def killed(*a, **k):
        raise KeyboardInterrupt  # the process dies while calibrating: the resume file is what is left
    monkeypatch.setattr(trainer.Trainer, "_calibrate_and_test", killed)
    with pytest.raises(KeyboardInterrupt):
        train(kg, tiny_run(epochs=6, patience=1), out, progress=False)
    monkeypatch.undo()
    res = train(kg, tiny_run(epochs=6, patience=1), out, resume=True, progress=False)
    assert res.stopped == "early-stopping" and len(res.history) == 2 and res.best_epoch == 1


def test_a_second_ctrl_c_stops_at_once_and_the_first_says_what_happens(world, tmp_path, capsys):
    """Ctrl-C during a long validation got no answer, and again did nothing (#11)."""
    from tpar.training.signals import FIRST_SIGNAL_TEXT, deferred_signals

    with deferred_signals() as received:
        os.kill(os.getpid(), signal.SIGINT)
        assert received == [signal.SIGINT]
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler runs between bytecodes
                pass
    assert FIRST_SIGNAL_TEXT in capsys.readouterr().err


def test_a_lock_whose_pid_now_names_another_process_is_stale(tmp_path):
    """A lock left by a killed process blocked for good once its pid was reused (#6)."""
    from tpar.data.locks import acquire, parse_token, process_token, release

    lock = tmp_path / "m.tpar.lock"
    pid, start = parse_token(process_token())
    if start is None:
        pytest.skip("this system shows no process start times (no /proc): a pid alone names a lock's owner")
    lock.write_text(f"{pid}:{int(start) + 1}")  # this pid, another start: the process that took it is gone
    assert acquire(lock, "checkpoint m.tpar") == lock and lock.read_text() == process_token()
    release(lock)
    lock.write_text(process_token(os.getppid()))  # a live process: refused, naming the lock file
    with pytest.raises(DataError) as e:
        acquire(lock, "checkpoint m.tpar")
    assert str(e.value).startswith(f"{lock}: checkpoint m.tpar is in use by another process (pid {os.getppid()})")
    assert "remove this lock file" in str(e.value)


def test_a_job_whose_pid_was_reused_is_not_running_and_a_damaged_job_blocks_nothing(tmp_path):
    """A dead job showed 'running' for good when its pid was reused; one job folder of wrong types broke the
    Train page and every start (#6, #7)."""
    from tpar.data.locks import process_token
    from tpar.runtime.jobs import JobSpec, TrainingJob, list_jobs, running_outputs

    root = tmp_path / "jobs"
    spec = JobSpec(data="x.csv", setting="extrapolation", run=tiny_run().to_dict(), out=str(tmp_path / "a.tpar"))
    for name, events in (("1-reused", ['{"type": "start", "time": 1}']),
                         ("2-bad-types", ['{"type": "start", "time": 1}', '{"type": "step", "epoch": "many"}']),
                         ("3-not-objects", ['[1, 2]']),
                         ("4-bad-bytes", None)):
        d = root / name
        d.mkdir(parents=True)
        (d / "spec.json").write_text(json.dumps({**spec.__dict__, "out": str(tmp_path / f"{name}.tpar")}))
        if events is None:
            (d / "events.jsonl").write_bytes(b'{"type": "start"}\n\xff\xfe\n')
        else:
            (d / "events.jsonl").write_text("\n".join(events) + "\n")
    pid, _, start = process_token().partition(":")
    if not start:
        pytest.skip("this system shows no process start times (no /proc): a pid alone names a job's worker")
    (root / "1-reused" / "pid").write_text(f"{pid}:{int(start) + 1}")  # our pid: alive, but not the worker
    states = {j.id: j.status() for j in list_jobs(root)}
    assert states["1-reused"].state == "failed" and "ended unexpectedly" in states["1-reused"].message
    for name in ("2-bad-types", "3-not-objects", "4-bad-bytes"):
        assert states[name].state == "broken" and "events.jsonl: its progress cannot be read" in states[name].message
    assert running_outputs(root) == set()
    shutil.rmtree(root / "2-bad-types")
    with pytest.raises(DataError, match="cannot be cancelled"):
        TrainingJob(root / "2-bad-types").cancel()


def test_a_recipe_cannot_write_outside_its_folder_and_retrain_runs_from_any_folder(tmp_path, monkeypatch, capsys):
    """Stage names were joined into paths unchecked, --replace was allowed, names could repeat; the shipped
    recipes named their config files relative to the repository root (#9, #10)."""
    from tpar.training.recipes import Recipe, load_recipe, stage_train_args

    base = {"name": "x", "data": "d", "stages": [{"name": "s1", "init": None, "train_args": []}]}
    for change, said in (({"name": "../x"}, "recipe name '../x'"),
                         ({"stages": [{"name": "../../victim", "init": None}]}, "stage 1: name '../../victim'"),
                         ({"stages": [{"name": "s1", "init": None}, {"name": "s1", "init": "s1"}]},
                          "stage 2: name 's1' is an earlier stage's"),
                         ({"stages": [{"name": "s1", "init": None, "train_args": ["--replace"]}]},
                          "train_args may not set --replace")):
        with pytest.raises(DataError, match=said.replace("(", r"\(")):
            Recipe.from_dict({**base, **change}, "r.json")
    monkeypatch.chdir(tmp_path)
    stage = load_recipe("sample-world-unified").stages[0]
    args = stage_train_args(stage)
    config = args[args.index("--config") + 1]
    assert os.path.isabs(config) and os.path.isfile(config) and config.startswith(str(ROOT / "tpar" / "configs"))
    own = tmp_path / "tpar" / "configs" / "cpu" / "sample-world-unified.json"  # a user's own copy there: used
    own.parent.mkdir(parents=True)
    own.write_text("{}")
    assert "tpar/configs/cpu/sample-world-unified.json" in stage_train_args(stage)
    assert main(["retrain", "sample-world-unified", "--out-dir", str(tmp_path / "rt"), "--dry-run"]) == 0
    assert not (tmp_path / "rt").exists()  # a dry run writes nothing
    assert main(["retrain", "sample-world-unified", "--data", str(tmp_path / "none"), "--dry-run"]) == 2
    assert main(["train", "--data", str(tmp_path / "none"), "--setting", "unified", "--out", ""]) == 2
    err = capsys.readouterr().err
    assert "none: no such data set" in err and "error: --out is empty: give the file to write" in err


def test_a_full_disk_while_saving_is_named_as_such_not_a_bug(tmp_path, monkeypatch):
    """torch's writer says "unexpected pos 128 vs 0" on a full disk; it was reported as an internal error (#8)."""
    import tpar.model.checkpoint as checkpoint

    def full(obj, f):
        open(f, "wb").close()
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 128 vs 0")
    monkeypatch.setattr(checkpoint.torch, "save", full)
    with pytest.raises(DataError, match=r"cannot write the checkpoint \(.*unexpected pos 128 vs 0"):
        checkpoint.atomic_torch_save({"a": 1}, tmp_path / "m.tpar")
    assert os.listdir(tmp_path) == []  # no temporary file left


def test_temporary_files_of_a_killed_writer_are_removed_at_the_next_write(tmp_path):
    """A SIGKILL during a save left a hidden temporary file for good (#14); a live writer's is left alone."""
    from tpar.data.outputs import write_text

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = tmp_path / f".m.csv.{dead.stdout.strip()}.0a1b2c3d.tmp"
    live = tmp_path / f".m.csv.{os.getppid()}.0a1b2c3d.tmp"
    other = tmp_path / f".m.csv.bak.{dead.stdout.strip()}.tmp"
    for f in (orphan, live, other):
        f.write_text("half")
    write_text(tmp_path / "m.csv", "a,b\n")
    assert not orphan.exists() and live.exists() and other.exists() and (tmp_path / "m.csv").read_text() == "a,b\n"


def test_a_composite_of_a_byte_copy_is_refused_before_any_work(tmp_path, capsys):
    """Two copies of one file under two names passed, and the composite written was refused when loaded (#12)."""
    from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD

    copy = tmp_path / "copy.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, copy)
    assert main(["ensemble", "--checkpoints", str(SAMPLE_CHECKPOINT), str(copy), "--data", str(SAMPLE_WORLD),
                 "--setting", "extrapolation", "--out", str(tmp_path / "e.tpar")]) == 2
    err = capsys.readouterr().err
    assert f"{copy} holds the same weights as {SAMPLE_CHECKPOINT}" in err and not (tmp_path / "e.tpar").exists()


def test_retrain_never_skips_a_stage_trained_on_other_data(tmp_path, capsys):
    """A rerun into the same --out-dir with other data skipped every stage as done, then failed in calibration with
    a self-contradicting message (hostile audit 39)."""
    from helpers import SAMPLE_WORLD

    done = tmp_path / "rt" / "sample-world-unified" / "sample-world-unified.tpar"
    done.parent.mkdir(parents=True)
    shutil.copy(ROOT / "checkpoints" / "icews14-unified.tpar", done)
    assert main(["retrain", "sample-world-unified", "--data", str(SAMPLE_WORLD), "--out-dir", str(tmp_path / "rt")]) == 2
    err = capsys.readouterr().err
    assert f"{done}: is a finished stage's model trained on other data (ICEWS14" in err and "calibrat" not in err


def test_a_folder_where_the_resume_file_goes_is_refused_before_any_work(world, tmp_path, capsys):
    """It was found at the first snapshot, after the data was loaded and steps were run (hostile audit 39)."""
    (tmp_path / "x.tpar.resume").mkdir()
    assert main(["train", "--data", str(world), "--setting", "extrapolation", "--out", str(tmp_path / "x.tpar"),
                 "--replace", "--quiet", "--epochs", "1"]) == 2
    assert "x.tpar.resume: is in the way of the run's resume file (it is not a file)" in capsys.readouterr().err


def test_retrain_skips_its_own_finished_stages_read_as_they_read_the_data(world, tmp_path, capsys):
    """Review 39b: the check that a finished stage was trained on this data read the data with the default options,
    so a recipe whose stage splits at random refused its own stages on every rerun."""
    recipe = tmp_path / "tiny.json"
    recipe.write_text(json.dumps({"name": "tiny", "data": "x", "stages": [{"name": "s1", "init": None, "train_args": [
        "--setting", "extrapolation", "--split-policy", "random", "--dim", "8", "--num-layers", "2", "--epochs", "1",
        "--max-train-queries", "40", "--max-valid-queries", "20", "--quiet"]}]}))
    argv = ["retrain", str(recipe), "--data", str(world), "--out-dir", str(tmp_path / "rt"), "--threads", "1"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv) == 0
    assert "stage 1/1 s1: done (" in capsys.readouterr().err


@pytest.mark.parametrize("cut_after", ["calibrating on valid", "evaluating on test"])
def test_a_cancel_while_calibrating_or_testing_stops_that_phase_and_saves_the_chosen_model_without_its_figures(
        tmp_path, cut_after):
    """Cancel during the finishing passes did nothing until they ended (hostile audit 39, LOW): now the pass stops
    at its next batch, the chosen model is saved with what finished whole (never a part of a phase), the resume file
    goes (training is over) and the card says why test figures are missing."""
    from tpar.model.card import render
    from tpar.training.trainer import cut_text

    big = tmp_path / "world.csv"
    big.write_text(tiny_world_csv(days=300))  # valid and test of several batches: a stop mid-phase is visible
    kg, out, phases, polls = load_dataset(big), tmp_path / "f.tpar", [], []

    def poll():
        polls.append(phases[-1])
        return phases[-1] == cut_after  # at the phase's first batch

    res = train(kg, tiny_run(epochs=2, max_train_queries=100), out, progress=False, eval_test=True,
                callbacks=TrainingCallbacks(on_phase=phases.append, cancel_requested=poll))
    assert res.cut == cut_after and res.stopped in ("completed", "early-stopping")
    assert phases[-1] == cut_after and polls.count(cut_after) == 1  # it stopped at once, not at the phase's end
    ck = Checkpoint.load(out)
    assert ck.extra["cut"] == cut_after and not ck.unfinished() and len(ck.history) == 2
    assert not any(k.startswith("test_") for k in ck.metrics) and "baseline_test" not in ck.extra
    assert ("calibration" in ck.extra) == (cut_after == "evaluating on test")  # a whole calibration is kept
    assert not resume_path(out).exists()
    assert f"No test metrics recorded: its run was cancelled while {cut_after}." in render(ck, out.name)
    assert cut_text(cut_after).startswith(f"cancelled while {cut_after}: the model it chose is saved")
    # without a cancel the same run finishes both passes
    seen = []
    whole = train(kg, tiny_run(epochs=2, max_train_queries=100), tmp_path / "g.tpar", progress=False, eval_test=True,
                  callbacks=TrainingCallbacks(on_phase=seen.append, cancel_requested=lambda: seen.append("poll") or False))
    assert seen[seen.index(cut_after) + 1:][:2] == ["poll", "poll"]  # the phase has batches after the first
    assert whole.cut == "" and "calibration" in whole.checkpoint.extra and "test_extrapolation" in whole.checkpoint.metrics


def test_a_run_killed_between_its_new_best_model_and_that_epochs_snapshot_resumes(world, tmp_path, monkeypatch):
    """The best file is written before the epoch's snapshot: a hard kill between the two (SIGKILL, out of memory)
    leaves the run's own next epoch at --out beside a resume file one epoch behind. The check of the best file
    refused it as another model, and the run could only start over (review 40): it is this run's (its history
    continues the resume file's), so the resume redoes that epoch and ends as an uninterrupted run does."""
    from tpar.training import trainer as tr

    class Killed(BaseException):
        pass

    kg, out = load_dataset(world), tmp_path / "k.tpar"
    full = train(kg, tiny_run(epochs=3, seed=1), tmp_path / "full.tpar", progress=False)
    improved = [h["epoch"] for h in full.history if h["epoch"] == 2 and h["valid_mrr"] > full.history[0]["valid_mrr"]]
    assert improved == [2], full.history  # epoch 2 is a new best: the kill falls between its two writes
    real = tr.Trainer.snapshot

    def snapshot(self, epoch, batch):
        if epoch == 2 and batch == 0:  # after epoch 2's validation saved the new best: killed before this snapshot
            raise Killed()
        return real(self, epoch, batch)

    monkeypatch.setattr(tr.Trainer, "snapshot", snapshot)
    with pytest.raises(Killed):
        train(kg, tiny_run(epochs=3, seed=1), out, progress=False)
    monkeypatch.setattr(tr.Trainer, "snapshot", real)
    assert Checkpoint.load(out).extra["best_epoch"] == 2 and resume_path(out).is_file()
    res = train(kg, tiny_run(epochs=3, seed=1), out, resume=True, progress=False)
    assert res.stopped == "completed" and [h["valid_mrr"] for h in res.history] == [h["valid_mrr"] for h in full.history]
    assert res.best_epoch == full.best_epoch
