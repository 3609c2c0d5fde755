"""No command's output destroys its input: an output naming an input file (directly, by a symlink or a hard link),
two outputs naming one file, and ``tpar grow --replace`` of a folder that is not a saved data set are refused before
any work, with the files left exactly as they were."""

from __future__ import annotations

import hashlib
import os
import shutil

import pytest

from helpers import SAMPLE_CHECKPOINT, tiny_world_csv
from tpar.cli import main
from tpar.data.upload import inspect_upload, save_dataset
from tpar.errors import DataError


def _digest(folder) -> dict:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def world(tmp_path):
    """A saved ring world (train/valid/test.csv) and a copy of the sample checkpoint, in ``tmp_path/in``."""
    _, kg = inspect_upload(tiny_world_csv(), "ring.csv")
    root = tmp_path / "in"
    data = save_dataset(kg, root, "ring")
    ck = root / "model.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, ck)
    return root, data, ck


def _refused(capsys, argv, *words) -> str:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    for w in words:
        assert w in err, (w, err)
    return err


def test_an_output_onto_an_input_file_is_refused_and_nothing_changes(world, tmp_path, capsys):
    root, data, ck = world
    before = _digest(root)
    rows = root / "rows.csv"
    rows.write_text("subject,relation,object,time\nP0,meets,P9,2024-03-09\n")
    link = tmp_path / "link.tpar"
    link.symlink_to(ck)
    hard = tmp_path / "hard.json"
    os.link(ck, hard)
    before = _digest(root)
    cases = [
        (["baseline", "--data", str(data), "--method", "frequency", "--setting", "extrapolation", "--json",
          str(data / "train.csv"), "--quiet"], "--json is --data's file"),
        (["baseline", "--data", str(data), "--method", "frequency", "--setting", "extrapolation", "--ranks-csv",
          str(data / "test.csv"), "--quiet"], "--ranks-csv is --data's file"),
        (["evaluate", "--checkpoint", str(ck), "--data", str(data), "--json", str(ck), "--quiet"],
         "--json is --checkpoint's file"),
        (["evaluate", "--checkpoint", str(ck), "--data", str(data), "--json", str(link), "--quiet"],
         "--json is --checkpoint's file"),  # by a symlink
        (["evaluate", "--checkpoint", str(ck), "--data", str(data), "--json", str(hard), "--quiet"],
         "--json is --checkpoint's file"),  # by a hard link
        (["train", "--data", str(data), "--setting", "extrapolation", "--init", str(ck), "--out", str(ck),
          "--quiet"], "--out is --init's file"),
        (["complete", "--checkpoint", str(ck), "--data", str(data), "--input", str(rows), "--out", str(rows)],
         "--out is --input's file"),
        (["rules", "--checkpoint", str(ck), "--data", str(data), "--json", str(data / "valid.csv")],
         "--json is --data's file"),
        (["evaluate", "--checkpoint", str(ck), "--data", str(data), "--json", str(tmp_path / "m.json"),
          "--ranks-csv", str(tmp_path / "m.json"), "--quiet"], "are the same file"),
    ]
    for argv, words in cases:
        _refused(capsys, argv, words)
    assert _digest(root) == before


def test_grow_replace_refuses_a_folder_that_is_not_a_saved_data_set(world, tmp_path, capsys):
    root, data, _ = world
    rows = tmp_path / "rows.csv"
    rows.write_text("subject,relation,object,time\nP0,meets,P9,2024-03-09\n")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    before_root, before_precious = _digest(root), _digest(precious)
    grow = ["grow", "--data", str(data), "--rows", str(rows), "--replace", "--out"]
    _refused(capsys, grow + [str(precious)], "not one", "nothing was deleted")
    _refused(capsys, grow + [str(root)], "holding --data's file")  # the folder that holds the data set itself
    mixed = tmp_path / "mixed"
    shutil.copytree(data, mixed)
    (mixed / "NOTES.md").write_text("mine")
    before_mixed = _digest(mixed)
    _refused(capsys, grow + [str(mixed)], "NOTES.md", "nothing was deleted")
    assert _digest(root) == before_root and _digest(precious) == before_precious and _digest(mixed) == before_mixed
    # a saved data set is replaced
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    assert main(grow + [str(copy)]) == 0
    assert "P9" in (copy / "train.csv").read_text()


def test_saving_over_a_folder_that_is_not_a_data_set_is_refused_by_the_library(tmp_path):
    _, kg = inspect_upload(tiny_world_csv(), "ring.csv")
    (tmp_path / "ring").mkdir()
    (tmp_path / "ring" / "keep.txt").write_text("x")
    with pytest.raises(DataError, match="not replaced"):
        save_dataset(kg, tmp_path, "ring", overwrite=True)
    assert (tmp_path / "ring" / "keep.txt").read_text() == "x"
    save_dataset(kg, tmp_path, "ring2")
    assert save_dataset(kg, tmp_path, "ring2", overwrite=True).is_dir()


def test_train_never_writes_its_resume_or_lock_file_over_an_input_nor_deletes_a_foreign_lock(world, tmp_path,
                                                                                             capsys):
    """``tpar train --out M`` also writes ``M.resume`` and ``M.lock``: a config stored under either name was
    overwritten (resume) or deleted as a stale lock. Both are refused; a lock-named file that holds no pid is
    never deleted."""
    _, data, _ = world
    config = '{"train": {"epochs": 1, "max_train_queries": 5, "max_valid_queries": 5}}'
    for suffix in (".resume", ".lock"):
        cfg = tmp_path / f"out{suffix}"
        cfg.write_text(config)
        _refused(capsys, ["train", "--data", str(data), "--setting", "extrapolation", "--config", str(cfg),
                          "--out", str(tmp_path / "out"), "--quiet"], "--out's")
        assert cfg.read_text() == config
    from tpar.data.locks import acquire

    notes = tmp_path / "model.tpar.lock"
    notes.write_text("my notes, not a pid")
    with pytest.raises(DataError, match="not a tpar lock file"):
        acquire(notes, "checkpoint model.tpar")
    assert notes.read_text() == "my notes, not a pid"


def test_bench_never_writes_over_the_benchmarks_it_reads(tmp_path, capsys):
    root = tmp_path / "bench-root"
    folder = root / "extrapolation" / "ICEWS14"
    folder.mkdir(parents=True)
    (folder / "train.txt").write_text("0\t0\t1\t1\n")
    _refused(capsys, ["bench", "--data-dir", str(root), "--quick", "--json", str(folder / "train.txt")],
             "--json is --data-dir's file")
    assert (folder / "train.txt").read_text() == "0\t0\t1\t1\n"
