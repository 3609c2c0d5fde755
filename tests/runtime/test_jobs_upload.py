"""Background training jobs (own process, progress through files, cancel, crash detection, no
collisions) and the upload path (validation report, atomic save that never loses data)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from helpers import tiny_world_csv
from tpar.model.config import ModelConfig, RunConfig, TrainConfig
from tpar.errors import DataError
from tpar.runtime.jobs import JobSpec, list_jobs, start_job
from tpar.data.loading import load_dataset
from tpar.data.upload import inspect_upload, save_dataset


def tiny_run(epochs=1, per_epoch=60) -> dict:
    return RunConfig(ModelConfig(dim=8, attn_dim=3, num_layers=2, dropout=0.0, activation="tanh"),
                     TrainConfig(setting="unified", lr=5e-3, batch_size=8, micro_batch=8, epochs=epochs, patience=5,
                                 max_train_queries=per_epoch, max_valid_queries=20)).to_dict()


@pytest.fixture()
def world_dir(tmp_path):
    _, kg = inspect_upload(tiny_world_csv(), "world.csv")
    return save_dataset(kg, tmp_path / "uploads", "world")


def wait(job, timeout=180.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        s = job.status()
        if s.finished:
            return s
        time.sleep(0.3)
    raise AssertionError(f"job still {job.status().state} after {timeout} s; log: "
                         f"{(job.dir / 'worker.log').read_text()[-2000:]}")


@pytest.mark.slow
def test_job_runs_in_its_own_process_and_reports(world_dir, tmp_path):
    out = tmp_path / "models" / "w.tpar"
    job = start_job(tmp_path / "jobs", JobSpec(data=str(world_dir), setting="unified", run=tiny_run(epochs=2),
                                               out=str(out), name="w", eval_test=True))
    assert int((job.dir / "pid").read_text().split(":")[0]) != os.getpid()
    s = wait(job)
    assert s.state == "done", s.message
    assert s.progress == 1.0 and len(s.epochs_done) == 2 and s.steps
    assert s.started <= s.ended and s.ended - s.started >= s.seconds  # the job's wall time covers its steps
    assert s.validations == 2 and s.validation_seconds > 0 and s.time_left() is None  # finished: nothing left
    assert all(0 < e["loss"] for e in s.steps) and "valid_mrr" in s.epochs_done[-1]
    assert out.is_file() and out.with_suffix(".md").is_file()  # checkpoint and model card
    assert [j.id for j in list_jobs(tmp_path / "jobs")] == [job.id]
    # what it did besides optimiser steps was reported as it happened, in order, and is over now
    phases = [e["phase"] for e in job.events() if e["type"] == "phase"]
    assert phases == ["validating", "validating", "calibrating on valid", "evaluating on test"] and s.phase == ""


@pytest.mark.slow
def test_cancel_keeps_the_model_so_far(world_dir, tmp_path):
    out = tmp_path / "models" / "c.tpar"
    job = start_job(tmp_path / "jobs", JobSpec(data=str(world_dir), setting="unified",
                                               run=tiny_run(epochs=50, per_epoch=400), out=str(out), name="c"))
    t0 = time.time()
    while not job.status().steps and time.time() - t0 < 120:
        time.sleep(0.2)
    assert job.status().steps, "no training step reported: the cancel would not interrupt a running training"
    job.cancel()
    s = wait(job)
    assert s.state == "cancelled" and out.is_file()


@pytest.mark.slow
def test_two_jobs_never_share_an_output(world_dir, tmp_path):
    out = tmp_path / "models" / "same.tpar"
    first = start_job(tmp_path / "jobs", JobSpec(data=str(world_dir), setting="unified",
                                                 run=tiny_run(epochs=50, per_epoch=400), out=str(out)))
    with pytest.raises(DataError, match="already writing same.tpar"):
        start_job(tmp_path / "jobs", JobSpec(data=str(world_dir), setting="unified", run=tiny_run(), out=str(out)))
    other = start_job(tmp_path / "jobs", JobSpec(data=str(world_dir), setting="unified", run=tiny_run(),
                                                 out=str(tmp_path / "models" / "other.tpar")))
    assert other.dir != first.dir
    assert wait(other).state == "done"
    # a worker that dies without a word is reported, not shown as running forever
    pid = int((first.dir / "pid").read_text().split(":")[0])
    while not first.status().steps:
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    s = first.status()
    assert s.state == "failed" and "ended unexpectedly" in s.message
    # a saved model is replaced only when the start asks for it, whoever starts the job (not only the Train page)
    saved = (tmp_path / "models" / "other.tpar").read_bytes()
    with pytest.raises(DataError, match="a model other.tpar exists and is kept"):
        start_job(tmp_path / "jobs", JobSpec(data=str(world_dir), setting="unified", run=tiny_run(),
                                             out=str(tmp_path / "models" / "other.tpar")))
    assert (tmp_path / "models" / "other.tpar").read_bytes() == saved
    again = start_job(tmp_path / "jobs", JobSpec(data=str(world_dir), setting="unified", run=tiny_run(),
                                                 out=str(tmp_path / "models" / "other.tpar"), replace=True))
    assert wait(again).state == "done"


def test_bad_job_input_fails_cleanly(tmp_path):
    job = start_job(tmp_path / "jobs", JobSpec(data=str(tmp_path / "nowhere"), setting="unified", run=tiny_run(),
                                               out=str(tmp_path / "x.tpar")))
    s = wait(job)
    assert s.state == "failed" and "no such file or directory" in s.message
    with pytest.raises(DataError, match="model name"):
        start_job(tmp_path / "jobs", JobSpec(data="x", setting="unified", run=tiny_run(), out="y", name="../evil"))


def test_upload_report_lists_dropped_rows_and_duplicates():
    text = tiny_world_csv(extra="P0,meets,P1,2024-01-01\nP0,meets\nP1,,P2,2024-01-02\nP2,meets,P3,someday\n")
    rep, kg = inspect_upload(text, "mine.csv")
    assert rep.rows_read == 124 and rep.rows_kept == 120
    assert rep.duplicates == 1 and rep.duplicate_rows == [(122, 2, "P0, meets, P1, 2024-01-01")]  # listed: which row repeats which fact
    assert rep.accounting() == "124 rows read = 120 facts kept + 3 dropped + 1 duplicate"  # the tiles add up
    assert [r for r, _ in rep.dropped] == [123, 124, 125]
    assert "expected 4 columns" in rep.dropped[0][1] and "empty relation" in rep.dropped[1][1]
    assert "not an ISO date" in rep.dropped[2][1]
    assert rep.time_format == "date" and rep.granularity == "day"
    assert rep.time_range == ("2024-01-01", "2024-03-04")
    assert sum(rep.split_counts.values()) == 120 and set(rep.split_counts) == {"train", "valid", "test"}
    # chronological: every valid/test fact is later than every training fact
    assert kg.facts("train")[:, 3].max() < kg.facts("valid")[:, 3].min()
    rep2, _ = inspect_upload(text, "mine.csv", split_policy="random", seed=3)
    assert rep2.split_counts["train"] == 96
    rep3, kg3 = inspect_upload("subject,relation,object,time\n" + "\n".join(f"a{i},r,b,{2000 + i}" for i in range(30)),
                               "years.csv", time_format="int")
    assert rep3.granularity == "step" and rep3.time_range == ("2000", "2029")


@pytest.mark.parametrize("text, message", [
    ("", "file is empty"),
    ("who,what,when\na,b,c\n", "header lacks column"),
    ("subject,relation,object,time\na,b\n", "no valid rows"),
    ("subject,relation,object,time\na,r,b,noon\n", "is not an ISO date"),
])
def test_unusable_uploads_say_why(text, message):
    with pytest.raises(DataError, match=message):
        inspect_upload(text, "bad.csv")
    with pytest.raises(DataError, match="no 'split' column"):
        inspect_upload(tiny_world_csv(), "x.csv", split_policy="column")


def test_save_is_atomic_and_never_overwrites_silently(tmp_path):
    _, kg = inspect_upload(tiny_world_csv(), "world.csv")
    path = save_dataset(kg, tmp_path, "w")
    back = load_dataset(path)
    # the same data back: vocabularies, time axis and every split's facts (what the fingerprint hashes)
    assert back.fingerprint == kg.fingerprint
    assert {s: len(back.facts(s)) for s in back.splits} == {s: len(kg.facts(s)) for s in kg.splits}
    before = (path / "train.csv").read_bytes()
    with pytest.raises(DataError, match="already exists"):
        save_dataset(kg, tmp_path, "w")
    with pytest.raises(DataError, match="data set name"):
        save_dataset(kg, tmp_path, "../escape")
    assert (path / "train.csv").read_bytes() == before
    _, kg2 = inspect_upload(tiny_world_csv(days=30), "world.csv")
    save_dataset(kg2, tmp_path, "w", overwrite=True)
    assert (path / "train.csv").read_bytes() != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w"]  # no temporary folders left behind


def test_two_saves_of_one_name_at_once_exactly_one_wins(tmp_path):
    import threading

    _, kg = inspect_upload(tiny_world_csv(), "world.csv")
    outcomes, barrier = [], threading.Barrier(4)

    def save(overwrite: bool) -> None:
        barrier.wait()
        try:
            save_dataset(kg, tmp_path / "uploads", "same", overwrite=overwrite)
            outcomes.append("saved")
        except DataError as e:
            outcomes.append(str(e))

    threads = [threading.Thread(target=save, args=(i % 2 == 1,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("saved") >= 1 and len(outcomes) == 4
    assert all(o == "saved" or "in use by another process" in o or "already exists" in o for o in outcomes), outcomes
    back = load_dataset(tmp_path / "uploads" / "same")  # whatever won, the data set is whole
    assert back.fingerprint == load_dataset(save_dataset(kg, tmp_path / "again", "same")).fingerprint
    assert not list((tmp_path / "uploads").glob(".same*"))  # no temp folder or lock left behind


def test_a_second_training_run_on_one_output_is_refused(world_dir, tmp_path, monkeypatch):
    import shutil as sh

    from tpar.data.locks import acquire, release
    from tpar.training import snapshots
    from tpar.training.trainer import train

    kg = load_dataset(world_dir)
    run = RunConfig.from_dict(tiny_run(epochs=1, per_epoch=16), "test")
    out = tmp_path / "m.tpar"
    lock = acquire(out.with_name("m.tpar.lock"), "checkpoint m.tpar")  # another run holds it
    with pytest.raises(DataError, match=r"checkpoint m.tpar is in use by another process \(pid \d+\)"):
        train(kg, run, out, progress=False)
    release(lock)
    out.with_name("m.tpar.lock").write_text("999999")  # a run that died without releasing: stale
    assert train(kg, run, out, progress=False).stopped in ("completed", "early-stopping")
    assert not out.with_name("m.tpar.lock").exists()
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(DataError, match="cannot write there"):
        train(kg, run, tmp_path / "a-file" / "m.tpar", progress=False)
    monkeypatch.setattr(snapshots.shutil, "disk_usage", lambda p: sh._ntuple_diskusage(10, 10, 1024))
    with pytest.raises(DataError, match="MB free; training needs at least"):
        train(kg, run, tmp_path / "other.tpar", progress=False)


def test_an_outlier_time_is_flagged_with_its_row_and_can_be_left_out():
    """One 2031 row in 2024 data: flagged with its row; kept, it stretches the range; left out, the
    range and the time axis are the data's own again."""
    text = tiny_world_csv(extra="P0,meets,P1,2031-05-01\n")
    kept, kg_kept = inspect_upload(text, "x.csv")
    assert kept.outliers == [(122, "2031-05-01")] and not kept.outliers_excluded
    assert kept.time_range[1] == "2031-05-01" and kept.rows_kept == 121
    left, kg = inspect_upload(text, "x.csv", exclude_outliers=True)
    assert left.outliers_excluded and left.rows_kept == 120 and left.time_range == ("2024-01-01", "2024-03-04")
    assert kg.time_axis.label(kg.time_range[1]) == "2024-03-04"
    early, kg_early = inspect_upload("subject,relation,object,time\nA,meets,B,1970-01-01\n" + tiny_world_csv()
                                     .split("\n", 1)[1], "y.csv", exclude_outliers=True)
    assert early.outliers == [(2, "1970-01-01")]
    assert kg_early.time_axis.origin == "2024-01-01" and kg_early.time_range[0] == 0  # re-based on the data


@pytest.mark.parametrize("times", [list(range(30)), list(range(0, 300, 10)), [0, 1, 2, 3, 50, 51, 52, 53]])
def test_ordinary_spread_or_gapped_data_has_no_outliers(times):
    import numpy as np

    from tpar.data.upload import outlier_times

    assert not outlier_times(np.array(times)).any()


def test_the_report_shows_self_loops_dropped_row_content_and_a_preview():
    text = tiny_world_csv(days=6, extra="P3,meets,P3,2024-01-02\nP0,meets\n\"unclosed,calls,P1,2024-01-03\n")
    report, _ = inspect_upload(text, "z.csv")
    assert report.self_loops == [14]
    rows = {d["row"]: d for d in report.problems_table()}
    assert rows[15]["content"] == "P0,meets" and "expected 4 columns" in rows[15]["problem"]
    assert rows[16]["content"].startswith('"unclosed')
    assert report.preview[0] == {"row": 2, "subject": "P0", "relation": "meets", "object": "P1", "time": "2024-01-01"}
    assert len(report.preview) == 10


def test_a_split_column_not_chosen_is_named_with_how_to_use_it():
    rows = tiny_world_csv().strip().splitlines()
    text = "\n".join([rows[0] + ",split"] + [f"{r},{'test' if i % 5 == 0 else 'train'}" for i, r in enumerate(rows[1:])])
    rep, _ = inspect_upload(text + "\n", "mine.csv", split_policy="random")
    assert any("split column is not used: the random split" in n and "the file's split column" in n for n in rep.notes)
    rep, kg = inspect_upload(text + "\n", "mine.csv", split_policy="column")
    assert not any("not used" in n for n in rep.notes) and len(kg.facts("test")) > 0


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads process states from /proc (Linux)")
def test_finished_workers_are_reaped_not_left_as_zombies(tmp_path):
    """A long-lived parent (the app) lists jobs on every rerun: the workers it started that have
    ended are waited for there, so none stays a zombie."""
    import subprocess
    import sys

    from tpar.runtime import jobs

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    jobs._workers.append(proc)
    deadline = time.time() + 30
    while time.time() < deadline and open(f"/proc/{proc.pid}/stat").read().split(")")[1].split()[0] != "Z":
        time.sleep(0.05)  # ended but not waited for: a zombie
    list_jobs(tmp_path)
    assert proc not in jobs._workers and proc.returncode == 0
    assert not os.path.exists(f"/proc/{proc.pid}")  # gone from the process table


def test_a_saved_data_set_never_holds_a_spreadsheet_formula_and_reads_back_exactly(tmp_path):
    """Names from an upload go through the one formula-safe CSV writer; the reader takes exactly one
    neutralising apostrophe off (so "''=x" in a file is the name "'=x"), and a saved data set reads
    back with the names it was saved with."""
    import csv as csvmod

    names = ['=HYPERLINK("http://evil.example")', "+1", "@here", "''=already", "'s-Hertogenbosch", "-x"]
    rows = "".join(f'"{n.replace(chr(34), chr(34) * 2)}",meets,P{i},2024-01-{1 + i:02d}\n' for i, n in enumerate(names))
    _, kg = inspect_upload("subject,relation,object,time\n" + rows + tiny_world_csv().split("\n", 1)[1], "x.csv")
    assert "'=already" in kg.entities and "'s-Hertogenbosch" in kg.entities
    saved = save_dataset(kg, tmp_path, "hostile")
    cells = [c for f in saved.glob("*.csv") for row in csvmod.reader(f.read_text(encoding="utf-8").splitlines())
             for c in row]
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert "''=already" in cells and "'s-Hertogenbosch" in cells and "'=HYPERLINK(\"http://evil.example\")" in cells
    back = load_dataset(saved)
    assert sorted(back.entities.names) == sorted(kg.entities.names) and back.fingerprint == kg.fingerprint


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r", "\r\r\n"])
def test_an_upload_reads_every_line_ending_and_numbers_rows_as_its_lines(ending):
    """LF, CR LF and classic Mac CR files read the same; a stray CR inside a row of an LF file drops that row
    whole (an audit saw its tail kept as a fact with subject 'x', and every later row number shifted by one)."""
    good = "subject,relation,object,time\na,r,b,2024-01-01\nb,r,c,2024-01-02\nc,r,a,2024-02-30\nd,r,a,2024-01-04\n"
    rep, kg = inspect_upload(good.replace("\n", ending), "endings.csv")
    assert rep.rows_read == 4 and rep.rows_kept == 3 and [r for r, _ in rep.dropped] == [4]
    assert rep.dropped_text[4] == "c,r,a,2024-02-30"  # the file's own line 4
    stray = good.replace("a,r,b,2024-01-01", "a\rx,r,b,2024-01-01")
    rep, kg = inspect_upload(stray, "stray.csv")
    assert [r for r, _ in rep.dropped] == [2, 4] and "carriage return" in rep.dropped[0][1]
    assert rep.dropped_text[4] == "c,r,a,2024-02-30" and rep.rows_read == 4 and rep.rows_kept == 2
    assert "x" not in kg.entities.names and sorted(kg.entities.names) == ["a", "b", "c", "d"]
    assert rep.dropped_text[2] == "a\u240dx,r,b,2024-01-01"  # the carriage return shown as ␍
    rep, kg = inspect_upload(good.replace("a,r,b", "a\u240dx,r,b"), "symbol.csv")  # the symbol ␍ itself is a name
    assert rep.rows_kept == 3 and "a\u240dx" in kg.entities.names
    rep, kg = inspect_upload(good.rstrip("\n") + "\r", "last-cr.csv")  # a last line ended by CR is a line
    assert rep.rows_kept == 3 and [r for r, _ in rep.dropped] == [4]


def test_an_upload_whose_valid_or_test_split_is_tiny_says_so():
    """A chronological split never cuts a time step, so a share can end at a fact or two: a valid split that small
    chooses a model by chance, and test figures on it say little; the report says so (walk-through: 'test 1',
    unremarked). A split of ordinary size gets no such note."""
    _, small = inspect_upload(tiny_world_csv(days=12), "small.csv")
    assert {s: len(small.facts(s)) for s in small.splits} == {"train": 20, "valid": 2, "test": 2}
    said = [n for n in small.notes if "split holds only" in n]
    assert said == ["the valid split holds only 2 facts (4 questions): a model chosen on so few is chosen largely by "
                    "chance; more data, or other split shares, give it more",
                    "the test split holds only 2 facts (4 questions): test figures on so few say little; more data, "
                    "or other split shares, give it more"]
    _, ring = inspect_upload(tiny_world_csv(days=60), "ring.csv")
    assert not [n for n in ring.notes if "split holds only" in n]


def test_a_file_in_the_way_of_the_job_or_model_folder_is_named_not_an_internal_error(world_dir, tmp_path):
    """A workspace's ``jobs`` (or models) folder that is a file: a DataError naming it, before anything starts
    (hostile audit 38 #3: it was FileExistsError, shown as "This is a bug")."""
    (tmp_path / "jobs").write_text("x")
    spec = JobSpec(data=str(world_dir), setting="unified", run=tiny_run(), out=str(tmp_path / "models" / "w.tpar"))
    with pytest.raises(DataError, match="folder of training jobs cannot be made .a file of that name is in the way"):
        start_job(tmp_path / "jobs", spec)
    (tmp_path / "models").write_text("x")
    with pytest.raises(DataError, match="folder of trained models cannot be made") as e:
        start_job(tmp_path / "jobs2", spec)
    assert str(tmp_path / "models") in str(e.value) and not list_jobs(tmp_path / "jobs2")  # no job started
