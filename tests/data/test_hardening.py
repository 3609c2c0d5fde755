"""Hostile and careless input to the newer features (issue #32), one section per class: concurrent
writers of one file, stored numbers trusted on load, what-if files, tpar complete's output and size.
The output-path class is in test_cli.py's hostile-output table, which every writing option joins."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
import torch

from helpers import ROOT, SAMPLE_CHECKPOINT, SAMPLE_WORLD, a_calibration, rewrite_checkpoint
from tpar.cli import main
from tpar.data.locks import acquire, lock_path, release
from tpar.errors import DataError
from tpar.model import checkpoint as ckmod
from tpar.model.checkpoint import Checkpoint


rewrite = rewrite_checkpoint


# ---------------------------------------------------------------- concurrent writers of one file
def test_a_calibration_waits_for_the_checkpoints_other_writer_and_both_are_kept(tmp_path):
    from tpar.cli import store_calibration

    path = tmp_path / "m.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, path)
    fitted_on = Checkpoint.load(path)
    lock = acquire(lock_path(path), "checkpoint m.tpar")  # another writer holds the file ...
    done = threading.Thread(target=store_calibration, args=(str(path), fitted_on,
                                                            {"extrapolation": a_calibration("extrapolation", 11)}))
    done.start()
    time.sleep(0.5)
    assert done.is_alive()  # ... so the calibration waits its turn
    back = Checkpoint.load(path)
    back.extra["calibration"]["interpolation"] = a_calibration("interpolation", 22)  # that writer's change
    back.save(path)
    release(lock)
    done.join(20)
    kept = Checkpoint.load(path).extra["calibration"]
    assert kept["extrapolation"]["seed"] == 11 and kept["interpolation"]["seed"] == 22


SIMULTANEOUS = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
from tpar.cli import store_calibration
from tpar.model.checkpoint import Checkpoint
from helpers import a_calibration
path, setting, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
ck = Checkpoint.load(path)
while not go.exists():
    time.sleep(0.005)
for seed in range(5):
    store_calibration(path, ck, {{setting: a_calibration(setting, seed)}})
"""


@pytest.mark.slow
def test_two_simultaneous_calibrations_of_one_checkpoint_both_keep_theirs(tmp_path):
    path, go = tmp_path / "m.tpar", tmp_path / "go"
    shutil.copy(SAMPLE_CHECKPOINT, path)
    script = SIMULTANEOUS.format(root=str(ROOT), tests=str(ROOT / "tests"))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), s, str(go)], env=env, stderr=subprocess.PIPE,
                              text=True) for s in ("extrapolation", "interpolation")]
    time.sleep(3)  # both have loaded the checkpoint and wait for the start
    go.touch()
    for p in procs:
        assert p.wait(120) == 0, p.stderr.read()
    kept = Checkpoint.load(path).extra["calibration"]
    assert kept["extrapolation"]["seed"] == 4 and kept["interpolation"]["seed"] == 4


def test_a_calibration_is_refused_when_the_checkpoint_stays_busy_or_was_replaced(tmp_path, monkeypatch):
    import tpar.cli as cli

    path = tmp_path / "m.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, path)
    before = path.read_bytes()
    fitted_on = Checkpoint.load(path)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock_path(path).write_text(str(holder.pid))  # a live process (a training run) holds the file
        monkeypatch.setattr(cli, "CALIBRATION_LOCK_WAIT", 0.3)
        with pytest.raises(DataError, match=rf"checkpoint m.tpar is in use by another process \(pid {holder.pid}\)"):
            cli.store_calibration(str(path), fitted_on, {"extrapolation": a_calibration("extrapolation", 1)})
    finally:
        holder.kill()
        holder.wait()
    assert path.read_bytes() == before
    lock_path(path).unlink()
    retrained = Checkpoint.load(path)  # another model saved under the same name meanwhile
    retrained.weights = {k: v + 0.5 if v.is_floating_point() else v for k, v in retrained.weights.items()}
    retrained.save(path)
    before = path.read_bytes()
    with pytest.raises(DataError, match="replaced while it was being calibrated"):
        cli.store_calibration(str(path), fitted_on, {"extrapolation": a_calibration("extrapolation", 1)})
    assert path.read_bytes() == before


def test_a_second_tpar_train_on_one_output_is_refused_before_it_loads_anything(tmp_path, monkeypatch, capsys):
    from tpar.data import loading

    out = tmp_path / "m.tpar"
    monkeypatch.setattr(loading, "load_dataset", lambda *a, **k: pytest.fail("the second run started"))
    lock = acquire(lock_path(out), "checkpoint m.tpar")  # the first run
    try:
        assert main(["train", "--data", str(SAMPLE_WORLD), "--setting", "extrapolation", "--out", str(out)]) == 2
    finally:
        release(lock)
    err = capsys.readouterr().err
    assert "checkpoint m.tpar is in use by another process" in err and "configuration" not in err.lower()


def test_two_simultaneous_training_jobs_on_one_output_do_not_both_start(tmp_path, monkeypatch):
    from tpar.runtime import jobs

    class Worker:  # stands in for the worker process: alive, never finishing
        pid = os.getpid()

        def __init__(self, *a, **kw):
            pass

        def poll(self):
            return None

    checked = jobs.running_outputs

    def slow_check(root):  # a busy machine: time passes between the check and the new job folder
        found = checked(root)
        time.sleep(0.3)
        return found

    monkeypatch.setattr(jobs.subprocess, "Popen", Worker)
    monkeypatch.setattr(jobs, "running_outputs", slow_check)
    spec = jobs.JobSpec(data=str(SAMPLE_WORLD), setting="extrapolation", out=str(tmp_path / "models" / "m.tpar"),
                        run={}, name="m")
    results, barrier = [], threading.Barrier(2)

    def start():
        barrier.wait()
        try:
            results.append(jobs.start_job(tmp_path / "jobs", spec))
        except DataError as e:
            results.append(e)

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    started = [r for r in results if isinstance(r, jobs.TrainingJob)]
    refused = [r for r in results if isinstance(r, DataError)]
    assert len(started) == 1 and len(refused) == 1 and "already writing m.tpar" in str(refused[0])
    jobs._workers.clear()


# ---------------------------------------------------------------- stored numbers checked on load
@pytest.mark.slow
@pytest.mark.parametrize("temperature", [-1.0, float("nan"), float("inf"), 0.0])
def test_a_stored_temperature_out_of_range_is_set_aside_and_said(tmp_path, temperature, capsys):
    from tpar.evaluation.calibration import stored
    from tpar.reasoning.prediction import Predictor

    def bad(meta):
        meta["extra"]["calibration"]["extrapolation"]["temperature"] = temperature

    path = rewrite(tmp_path / "t.tpar", bad)
    ck = Checkpoint.load(path)
    assert stored(ck.extra, "extrapolation") is None and stored(ck.extra, "interpolation") is not None
    (note,) = ck.load_notes
    assert "extrapolation calibration was ignored (temperature" in note and "raw softmax" in note
    from tpar.data.loading import load_dataset

    p = Predictor(ck, load_dataset(SAMPLE_WORLD), "cpu").predict("Orora Front", "Mobilize against", "2025-12-20",
                                                                 setting="extrapolation", top_k=20)
    probs = [a.probability for a in p.answers]
    assert p.temperature is None and all(math.isfinite(x) and 0 <= x <= 1 for x in probs)
    assert probs == sorted(probs, reverse=True) and note in p.warnings
    assert main(["predict", "--checkpoint", str(path), "--data", str(SAMPLE_WORLD), "--subject", "Orora Front",
                 "--relation", "Mobilize against", "--time", "2025-12-20", "--setting", "extrapolation"]) == 0
    out = capsys.readouterr()
    # said once, among the answer's warnings (stdout), not repeated on stderr
    assert out.out.count("extrapolation calibration was ignored") == 1 and "raw softmax, not calibrated" in out.out
    assert "extrapolation calibration was ignored" not in out.err


@pytest.mark.parametrize("field,value", [("threshold", 1.5), ("threshold", float("nan")), ("ece", -0.1),
                                         ("level", 0.5)])
def test_stored_thresholds_and_figures_out_of_range_set_the_calibration_aside(tmp_path, field, value):
    def bad(meta):
        c = meta["extra"]["calibration"]["interpolation"]
        if field == "threshold":
            c["thresholds"]["0.9"] = value
        elif field == "level":
            c["thresholds"]["0.5"] = 0.1
        else:
            c["after"][field] = value

    ck = Checkpoint.load(rewrite(tmp_path / "c.tpar", bad))
    assert list(ck.extra["calibration"]) == ["extrapolation"] and "interpolation calibration was ignored" in ck.load_notes[0]


@pytest.mark.parametrize("where,value", [("mrr", 7.0), ("mrr", float("nan")), ("count", -5), ("loss", float("inf")),
                                         ("seconds", -60.0), ("seconds", float("nan"))])
def test_stored_metrics_out_of_range_refuse_the_checkpoint_by_name(tmp_path, where, value):
    def bad(meta):
        if where == "loss":
            meta["history"][0]["loss"] = value
        elif where == "seconds":
            meta["extra"]["seconds"] = value
        else:
            key = next(k for k in meta["metrics"] if k.startswith("test_"))
            meta["metrics"][key]["realistic"][where] = value

    path = rewrite(tmp_path / "m.tpar", bad)
    with pytest.raises(DataError, match=rf"m.tpar: refused: stored figures out of range .*\.{where} is "):
        Checkpoint.load(path)


def test_nan_weights_are_refused(tmp_path):
    def bad(payload):
        name = next(k for k, v in payload["weights"].items() if v.is_floating_point())
        payload["weights"][name] = payload["weights"][name].clone().fill_(float("nan"))

    with pytest.raises(DataError, match="weights hold NaN or infinite values"):
        Checkpoint.load(rewrite(tmp_path / "n.tpar", edit_payload=bad))


def test_a_newer_format_version_says_so(tmp_path):
    path = rewrite(tmp_path / "v2.tpar", edit_payload=lambda p: p.__setitem__("format", "tpar-checkpoint-v2"))
    with pytest.raises(DataError, match="format version '2'.*written by a newer tpar: upgrade tpar") as e:
        Checkpoint.load(path)
    assert "not a TPAR checkpoint" not in str(e.value)
    other = rewrite(tmp_path / "x.tpar", edit_payload=lambda p: p.__setitem__("format", "something-else"))
    with pytest.raises(DataError, match="not a TPAR checkpoint"):
        Checkpoint.load(other)


@pytest.mark.slow
def test_a_small_file_that_would_inflate_to_512_mb_is_refused_before_inflating(tmp_path):
    import resource

    bomb = tmp_path / "bomb.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, bomb)  # the real archive, plus one weight blob deflated from 512 MB of zeros
    with zipfile.ZipFile(bomb, "a", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("sample-world-unified/data/1000", "w", force_zip64=True) as f:
            for _ in range(32):
                f.write(bytes(2 ** 24))
    assert bomb.stat().st_size < 2 ** 20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DataError, match="would inflate 0.* MB to 512 MB"):
        Checkpoint.load(bomb)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 64 * 1024  # KB: nothing inflated


# ---------------------------------------------------------------- what-if files
def test_a_bad_row_of_a_what_if_file_is_named_with_its_file_and_row(tmp_path, capsys):
    facts = tmp_path / "add.csv"
    facts.write_text("subject,relation,object,time\nOrora Front,Threaten,Hugo of Zanistan,2025-12-18\n"
                     "Nobody,Threaten,Hugo of Zanistan,2025-12-18\n")
    argv = ["predict", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), "--subject",
            "Orora Front", "--relation", "Mobilize against", "--time", "2025-12-20"]
    assert main(argv + ["--with", str(facts)]) == 2
    err = capsys.readouterr().err
    assert f"{facts}, row 3: fact to add (Nobody, Threaten, Hugo of Zanistan, 2025-12-18): unknown entity 'Nobody'" in err
    gone = tmp_path / "gone.csv"
    gone.write_text("subject,relation,object,time\nOrora Front,Threaten,Hugo of Zanistan,2025-12-18\n")
    assert main(argv + ["--without", str(gone)]) == 2
    assert f"{gone}, row 2: fact to remove" in capsys.readouterr().err


def test_the_same_fact_twice_or_under_an_alias_counts_once(sample_kg, sample_checkpoint):
    from tpar.reasoning.prediction import FactRows, Predictor

    p = Predictor(sample_checkpoint, sample_kg, "cpu")
    ask = dict(subject="Orora Front", relation="Mobilize against", time="2025-12-20", setting="extrapolation",
               top_k=None)
    fact = ("Hugo of Zanistan", "Threaten", "Orora Front", "2025-12-18")
    alias = ("hugo of zanistan", "threaten", " Orora  Front", "2025-12-18")
    assert (p.resolve_facts([fact]) == p.resolve_facts([alias])).all()
    once = p.predict(**ask, extra=[fact])
    for twice in ([fact, fact], [fact, alias], FactRows([fact, alias], file="x.csv", rows=[2, 5])):
        again = p.predict(**ask, extra=twice)
        assert [(a.entity, a.score) for a in again.answers] == [(a.entity, a.score) for a in once.answers]
        assert any("given twice" in n for n in again.hypothetical)
    named = p.predict(**ask, extra=FactRows([fact, alias], file="x.csv", rows=[2, 5]))
    assert any("(x.csv, row 2 and x.csv, row 5): added once" in n for n in named.hypothetical)
    known = ("Hugo of Zanistan", "Threaten", "Orora Front", "2025-12-19")
    gone_once = p.predict(**ask, without=[known])
    gone_twice = p.predict(**ask, without=[known, tuple(x.upper() if i == 1 else x for i, x in enumerate(known))])
    assert [(a.entity, a.score) for a in gone_twice.answers] == [(a.entity, a.score) for a in gone_once.answers]
    with pytest.raises(DataError, match="also among the facts to remove"):
        p.predict(**ask, without=[known], extra=[known])


# ---------------------------------------------------------------- a model card belongs to its weights
def test_a_card_is_shown_only_beside_the_checkpoint_it_was_written_for(tmp_path):
    from tpar.model.card import card_for, write_card

    path = tmp_path / "m.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, path)
    write_card(path)
    ck = Checkpoint.load(path)
    text, why = card_for(ck, path)
    assert why == "" and text == path.with_suffix(".md").read_text(encoding="utf-8").rsplit("\n\n<!--", 1)[0] + "\n"
    ck.extra["calibration"]["extrapolation"]["seed"] = 99  # calibrated again: metadata, and so the digest, change
    ck.save(path)
    text, why = card_for(Checkpoint.load(path), path)
    assert "m.md was written for another model saved as m.tpar" in why and "sha256" not in text
    path.with_suffix(".md").write_text("# Model card: m\n\nMRR 99%\n")  # a card without its mark
    text, why = card_for(Checkpoint.load(path), path)
    assert "carries no checksum" in why and "MRR 99%" not in text


# ---------------------------------------------------------------- one formula-safe CSV writer
def test_every_csv_is_written_by_the_one_formula_safe_writer():
    """No module writes CSV but tpar.data.outputs (spreadsheet_safe on every cell): a new writer of CSV
    elsewhere fails here."""
    own = ROOT / "tpar" / "data" / "outputs.py"
    found = [f"{p.relative_to(ROOT)}:{i}" for folder in ("tpar", "app", "benchmarks") for p in (ROOT / folder).rglob("*.py")
             if p != own for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if any(w in line for w in ("csv.writer(", "csv.DictWriter(", ".to_csv("))]
    assert found == []


@pytest.mark.parametrize("stem, want", [("données", "donnees"), ("<img>x", "img-x"), ("_data", "data"),
                                        ("My File (2)", "My-File-2"), ("...", "upload"), ("日本語", "upload"),
                                        ("a" * 100, "a" * 64)])
def test_a_suggested_data_set_name_is_one_the_rule_accepts(stem, want):
    """The Upload page's default name, from the file's name: an audit saw 'données' suggested, then refused."""
    from tpar.data.names import is_valid_name, suggest_name

    assert suggest_name(stem) == want and is_valid_name(want)


def test_a_long_unknown_name_is_echoed_cut():
    from tpar.data.vocab import Vocabulary

    with pytest.raises(DataError) as e:
        Vocabulary(("Arovia", "Belor")).resolve("A" * 30_000, "entity")
    assert len(str(e.value)) < 200 and "(30,000 characters)" in str(e.value)


def test_when_no_row_has_a_valid_time_the_first_rows_problem_says_why(tmp_path):
    from tpar.data.tables import read_quadruple_csv

    f = tmp_path / "big.csv"
    f.write_text("subject,relation,object,time\na,r,b,1000000000000000000\nb,r,c,1000000000000000001\n")
    with pytest.raises(DataError, match=r"no row has a valid time \(first: row 2: time '1000000000000000000' is beyond ±2\^53"):
        read_quadruple_csv(f, on_bad_rows="drop")
