"""The command line on a user CSV: info, both baselines, the JSON contract."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tpar.cli import main
from tpar.data.loading import load_dataset
from tpar.evaluation.baselines import FrequencyBaseline, RecurrencyBaseline
from tpar.evaluation.protocol import evaluate


@pytest.fixture()
def csv_file(tmp_path):
    rows = ["subject,relation,object,time"]
    people = ["Ann", "Bob", "Cid", "Dee"]
    for day in range(1, 29):
        a, b = people[day % 4], people[(day + 1) % 4]
        c = people[(day * day + day // 3) % 4]  # calls are irregular: the baselines do not all rank perfectly
        c = a if c == b else c
        rows.append(f"{a},meets,{b},2024-02-{day:02d}")
        rows.append(f"{b},calls,{c},2024-02-{day:02d}")
    p = tmp_path / "events.csv"
    p.write_text("\n".join(rows) + "\n")
    return p


def test_info_json(csv_file, capsys):
    assert main(["info", str(csv_file), "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["num_entities"] == 4 and st["num_relations"] == 2
    assert sum(s["facts"] for s in st["splits"].values()) == 56
    assert st["time_axis"] == "day steps from 2024-02-01"


@pytest.mark.parametrize("method", ["frequency", "recurrency"])
@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
def test_baseline_json(csv_file, tmp_path, capsys, method, setting):
    out = tmp_path / "m.json"
    code = main(["baseline", "--data", str(csv_file), "--method", method, "--setting", setting,
                 "--split", "test", "--json", str(out), "--quiet"])
    assert code == 0
    d = json.loads(out.read_text())
    assert d["setting"] == setting and d["split"] == "test" and d["method"] == method
    assert d["num_queries"] > 0
    # the figures are those of the named method with the reported parameters on this data
    if method == "frequency":
        ranker = FrequencyBaseline()
    else:
        pr = d["params"]
        ranker = RecurrencyBaseline(pr["lambda"], pr["alpha"], per_relation={
            int(r): (v["lambda"], v["alpha"]) for r, v in pr["per_relation"].items()})
    want = evaluate(load_dataset(csv_file), ranker, setting, "test", progress=False).to_dict()
    assert d["num_queries"] == want["num_queries"]
    for mode in ("realistic", "optimistic", "pessimistic"):
        assert set(d[mode]) == {"mrr", "hits@1", "hits@3", "hits@10"}
        assert d[mode] == pytest.approx(want[mode], abs=1e-12), mode
    out = capsys.readouterr().out
    assert "realistic" in out
    # what limits the figures is said after the table, as for a model (new-user walk 38: the baselines said nothing)
    assert f"note: measured on only {want['num_queries']} questions" in out


def test_console_script_installed():
    exe = shutil.which("tpar")
    if exe is None:
        pytest.skip("the tpar console command is not on PATH (install with pip install -e .)")
    r = subprocess.run([exe, "baseline", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--setting" in r.stdout
    r = subprocess.run([sys.executable, "-m", "tpar.cli", "info", "/nonexistent/x.csv"], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "no such file" in r.stderr


def test_an_internal_error_is_one_line_naming_the_log(tmp_path, monkeypatch, capsys):
    """A bug (not bad input) exits 1 with one line that names the log; the traceback is in the log."""
    import tpar.cli as cli

    def broken(args):
        raise RuntimeError("something inside broke")

    monkeypatch.setenv("TPAR_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr(cli, "cmd_info", broken)
    assert cli.main(["info", str(tmp_path)]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "RuntimeError: something inside broke" in err and "Traceback" not in err
    log = (tmp_path / "logs" / "errors.log").read_text()
    ref = err.split("(error ")[1].split(")")[0]
    assert f"error {ref}" in log and "Traceback" in log and "in broken" in log


@pytest.mark.parametrize("error", [MemoryError(), RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. "
                                                                "DefaultCPUAllocator: can't allocate memory")])
def test_running_out_of_memory_is_said_as_such_not_as_a_bug(error, tmp_path, monkeypatch, capsys):
    import tpar.cli as cli

    def exhausted(args):
        raise error

    monkeypatch.setenv("TPAR_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr(cli, "cmd_info", exhausted)
    assert cli.main(["info", str(tmp_path)]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("error: out of memory (") and "fewer questions at once" in err and "bug" not in err


def test_a_bad_csv_row_stops_the_cli_with_a_hint_or_is_dropped_and_reported(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("subject,relation,object,time\nA,r,B,2024-01-01\nA,r\nB,r,C,2024-01-02\nC,r,A,2024-02-30\n"
                   "A,r,C,2024-01-03\n")
    assert main(["info", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv, row 3: expected 4 columns, found 2" in err and "--drop-bad-rows" in err
    assert main(["info", str(bad), "--drop-bad-rows"]) == 0
    out = capsys.readouterr().out
    assert "row 3 dropped: expected 4 columns, found 2" in out
    assert "row 5 dropped: time '2024-02-30' is not a real date" in out
    assert "3 facts" in out


def test_version_names_the_package(capsys):
    import tpar

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and f"tpar {tpar.__version__}" in capsys.readouterr().out


def test_every_option_of_every_command_has_help():
    import argparse

    from tpar.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert {"app", "bench", "train", "predict", "explain", "sample-world"} <= set(commands)
    missing = [f"{name} {a.option_strings or a.dest}" for name, sp in commands.items() for a in sp._actions
               if not isinstance(a, argparse._HelpAction) and not (a.help or "").strip()]
    assert missing == []


@pytest.mark.parametrize("top", ["0", "-3", "ten"])
def test_top_below_one_or_not_a_number_is_a_clear_usage_error(top, capsys):
    with pytest.raises(SystemExit) as e:
        main(["predict", "--checkpoint", "m.tpar", "--data", "d", "--subject", "a", "--relation", "r",
              "--time", "1", "--top", top])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "argument --top" in err and "Traceback" not in err


def test_top_takes_a_number_or_all():
    from tpar.cli import top_answers

    assert top_answers("3") == 3 and top_answers("ALL") == "all"


@pytest.mark.slow
def test_sample_world_refuses_a_folder_with_files_unless_forced(tmp_path, capsys):
    keep = tmp_path / "mine.txt"
    keep.write_text("my notes")
    assert main(["sample-world", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not empty" in err and "--force" in err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["mine.txt"]
    assert main(["sample-world", "--out", str(tmp_path), "--force", "--countries", "12"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "chronological" / "train.csv").is_file() and keep.read_text() == "my notes"
    assert len(out.strip().splitlines()) <= 5 and "facts" in out and "{" not in out
    assert main(["sample-world", "--out", str(tmp_path / "new"), "--countries", "12", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["countries"] == 12


def test_app_runs_streamlit_on_the_checkouts_app_from_its_root(monkeypatch, capsys):
    import os

    import tpar.cli as cli

    calls = {}
    monkeypatch.setattr(os, "chdir", lambda d: calls.setdefault("cwd", str(d)))
    monkeypatch.setattr(os, "execv", lambda exe, argv: calls.setdefault("argv", argv))
    assert cli.main(["app", "--port", "8611"]) == 0
    argv = calls["argv"]
    assert argv[1:4] == ["-m", "streamlit", "run"] and argv[4].endswith("app/streamlit_app.py")
    assert argv[argv.index("--server.port") + 1] == "8611"
    assert (cli.app_script().parents[1] / ".streamlit" / "config.toml").is_file()
    assert calls["cwd"] == str(cli.app_script().parents[1])  # where streamlit finds that config
    for port, why in (("0", "0: below 1"), ("65536", "65536: above 65,535"), ("http", "'http' is not a TCP port")):
        with pytest.raises(SystemExit) as stop:
            cli.main(["app", "--port", port])
        assert stop.value.code == 2 and f"argument --port: {why}" in capsys.readouterr().err


@pytest.mark.parametrize("args,why", [
    (["--queries", "0"], "argument --queries: 0: below 5"),
    (["--queries", "4"], "argument --queries: 4: below 5"),
    (["--queries", "100001"], "argument --queries: 100001: above 100,000, the most this option takes"),
    (["--train-batch", "0"], "argument --train-batch: 0: below 1"),
    (["--infer-batch", "-3"], "argument --infer-batch: -3: below 1"),
    (["--infer-batch", "1000001"], "argument --infer-batch: 1000001: above 1,000,000"),
])
def test_bench_refuses_a_bad_count_before_measuring(args, why, capsys, monkeypatch):
    """One line naming the flag and its value, before any measurement starts (each row would fail alike)."""
    from tpar.runtime import bench

    monkeypatch.setattr(bench, "run_benchmarks", lambda **kw: pytest.fail("measured"))
    with pytest.raises(SystemExit) as stop:
        main(["bench", *args])
    assert stop.value.code == 2 and why in capsys.readouterr().err


def test_bench_summary_shows_skipped_and_failed_rows():
    from tpar.cli import bench_summary

    text = bench_summary({"results": [{"data": "extrapolation/ICEWS18", "L": 5, "d": 64, "skipped": "data not found"},
                                      {"data": "x", "L": 3, "d": 32, "error": "boom"}], "note": "why"})
    assert "skipped: data not found" in text and "error: boom" in text and "note: why" in text


def test_bench_plans_the_sample_world_without_benchmarks_and_refuses_a_root_without_them(tmp_path, monkeypatch):
    from tpar.errors import DataError
    from tpar.runtime import bench

    monkeypatch.setenv("TPAR_DATA_DIR", str(tmp_path / "absent"))
    root, configs, note = bench.plan(quick=True)
    from helpers import SAMPLE_WORLD

    assert root == SAMPLE_WORLD and (root / "train.csv").is_file()
    assert [c[1:] for c in configs] == bench.shapes(True) and "sample world" in note
    with pytest.raises(DataError, match="no benchmark data set here"):
        bench.plan(data_dir=str(tmp_path), quick=True)
    root, configs, note = bench.plan(data=str(tmp_path), quick=False)
    assert root == tmp_path and len(configs) == len(bench.shapes(False)) == 4 and note == ""
    with pytest.raises(DataError, match="no such file"):
        bench.plan(data=str(tmp_path / "nope.csv"))


@pytest.mark.slow
def test_bench_runs_on_a_small_csv(tmp_path):
    """Any data set can be benchmarked; a small one (here 400 rows) times the questions it has."""
    from tpar.runtime import bench

    rows = ["subject,relation,object,time"] + [f"e{i % 13},r{i % 3},e{(i * 7) % 11},2024-01-{1 + i // 15:02d}"
                                               for i in range(400)]
    data = tmp_path / "small.csv"
    data.write_text("\n".join(rows) + "\n")
    report = bench.run_benchmarks(data_dir=str(data), queries=200, progress=False, threads=1,
                                  configs=[(".", 2, 8, {})])
    (row,) = report["results"]
    assert "error" not in row, row
    assert 5 <= row["queries_timed"] < 200 and row["train_ms_per_query"] > 0


# ---------------------------------------------------------------- hostile output paths (every command that writes)
#: every option that names a file or folder a command writes, with the rest of a minimal command line
#: (the output is checked before any data is read, so these never run a model)
OUTPUT_OPTIONS = {
    ("baseline", "json"): ["baseline", "--data", "{data}", "--method", "frequency", "--setting", "extrapolation",
                           "--json", "{out}"],
    ("baseline", "ranks_csv"): ["baseline", "--data", "{data}", "--method", "frequency", "--setting",
                                "extrapolation", "--ranks-csv", "{out}"],
    ("evaluate", "json"): ["evaluate", "--checkpoint", "{ckpt}", "--data", "{data}", "--json", "{out}"],
    ("evaluate", "ranks_csv"): ["evaluate", "--checkpoint", "{ckpt}", "--data", "{data}", "--ranks-csv", "{out}"],
    ("train", "out"): ["train", "--data", "{data}", "--setting", "extrapolation", "--out", "{out}"],
    ("calibrate", "checkpoint"): ["calibrate", "--checkpoint", "{out}", "--data", "{data}"],
    ("complete", "out"): ["complete", "--checkpoint", "{ckpt}", "--data", "{data}", "--input", "{data}", "--out", "{out}"],
    ("bench", "json"): ["bench", "--quick", "--json", "{out}"],
    ("sample-world", "out"): ["sample-world", "--out", "{out}"],
    ("rules", "json"): ["rules", "--checkpoint", "{ckpt}", "--data", "{data}", "--json", "{out}"],
    ("rules", "rules_csv"): ["rules", "--checkpoint", "{ckpt}", "--data", "{data}", "--csv", "{out}"],
    ("rules", "metrics_json"): ["rules", "--checkpoint", "{ckpt}", "--data", "{data}", "--evaluate", "test",
                                "--metrics-json", "{out}"],
    ("ensemble", "out"): ["ensemble", "--checkpoints", "{ckpt}", "{ckpt}", "--data", "{data}", "--out", "{out}"],
    ("retrain", "out_dir"): ["retrain", "sample-world-unified", "--data", "{data}", "--out-dir", "{out}"],
    ("grow", "out"): ["grow", "--data", "{data}", "--rows", "{data}", "--out", "{out}"],
}
#: outputs whose missing folders are created (a training run's folder, the sample world's folder)
CREATES_FOLDERS = {("train", "out"), ("sample-world", "out"), ("ensemble", "out"), ("retrain", "out_dir"),
                   ("grow", "out")}


def _writing_options() -> set[tuple[str, str]]:
    """(command, dest) of every option that writes: named out/json/*_csv and taking a value, or said to
    be rewritten. A new command's output option lands here and must join OUTPUT_OPTIONS."""
    import argparse

    from tpar.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    return {(name, a.dest) for name, sp in commands.items() for a in sp._actions
            if a.option_strings and a.nargs != 0
            and (a.dest in ("out", "out_dir", "json") or a.dest.endswith(("_csv", "_json"))
                 or "rewritten" in (a.help or ""))}


def test_every_output_option_is_in_the_hostile_output_table():
    assert _writing_options() == set(OUTPUT_OPTIONS)


def _hostile_outputs(tmp_path, key):
    (tmp_path / "a-file").write_text("mine")
    cases = {"a folder": tmp_path / "a-folder", "under a file": tmp_path / "a-file" / "x.out",
             "a folder no one may write (/sys)": "/sys/tpar-x.out"}
    (tmp_path / "a-folder").mkdir()
    if key not in CREATES_FOLDERS:
        cases["in a missing folder"] = tmp_path / "missing" / "x.out"
    if key in (("sample-world", "out"), ("retrain", "out_dir")):  # a folder: a file is the wrong kind there
        cases["a folder"] = tmp_path / "a-file"
    elif key != ("grow", "out"):  # a file someone made read-only is kept (an atomic write would pass its mode)
        kept = tmp_path / "read-only.out"
        kept.write_text("kept")
        kept.chmod(0o444)
        cases["a read-only file"] = kept
    return cases


@pytest.mark.parametrize("key", sorted(OUTPUT_OPTIONS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_an_output_that_cannot_be_written_is_named_before_any_work(key, tmp_path, csv_file, capsys, monkeypatch):
    from helpers import SAMPLE_CHECKPOINT
    from tpar.data import loading, sample_world
    from tpar.model.checkpoint import Checkpoint
    from tpar.runtime import bench

    def work(*a, **kw):
        raise AssertionError("work started before the output was checked")

    for owner, name in ((loading, "load_dataset"), (sample_world, "write_world"), (bench, "run_benchmarks")):
        monkeypatch.setattr(owner, name, work)
    monkeypatch.setattr(Checkpoint, "load", classmethod(work))

    for case, out in _hostile_outputs(tmp_path, key).items():
        argv = [a.format(data=csv_file, ckpt=SAMPLE_CHECKPOINT, out=out) for a in OUTPUT_OPTIONS[key]]
        assert main(argv) == 2, case
        err = capsys.readouterr().err
        assert "internal error" not in err and "Traceback" not in err, (case, err)
        assert f"error: {out}: " in err, (case, err)
    assert (tmp_path / "a-file").read_text() == "mine" and list((tmp_path / "a-folder").iterdir()) == []
    assert not (tmp_path / "missing").exists()
    assert not (tmp_path / "read-only.out").exists() or (tmp_path / "read-only.out").read_text() == "kept"


def test_a_file_system_that_fails_while_writing_is_named_and_the_old_file_kept(csv_file, tmp_path, monkeypatch,
                                                                              capsys):
    import errno

    from tpar.data import outputs

    out = tmp_path / "m.json"
    out.write_text("the previous run")

    def read_only(src, dst):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(outputs.os, "replace", read_only)
    assert main(["baseline", "--data", str(csv_file), "--method", "frequency", "--setting", "extrapolation",
                 "--json", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{out}: cannot write the JSON file (Read-only file system)" in err and "internal error" not in err
    assert out.read_text() == "the previous run" and [p.name for p in tmp_path.iterdir() if p.name != "events.csv"] == ["m.json"]


def test_calibrate_on_a_read_only_checkpoint_is_refused_before_the_fit(tmp_path, monkeypatch, capsys):
    import errno

    from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD
    from tpar.data import outputs

    ckpt = tmp_path / "m.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, ckpt)
    before = ckpt.read_bytes()
    real_open = outputs.os.open

    def read_only_here(path, *a, **kw):  # the syscall answer of a read-only mount, for this folder only
        if str(path).startswith(str(tmp_path)):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(outputs.os, "open", read_only_here)
    assert main(["calibrate", "--checkpoint", str(ckpt), "--data", str(SAMPLE_WORLD)]) == 2
    err = capsys.readouterr().err
    assert f"{ckpt}: cannot write the checkpoint in its folder (Read-only file system)" in err and "internal error" not in err
    assert ckpt.read_bytes() == before


# ---------------------------------------------------------------- hostile checkpoints and fact files (every command that reads one)
QUESTION_ARGS = ["--subject", "Ann", "--relation", "meets", "--time", "2024-02-27"]
#: every option that reads a checkpoint, with the rest of a minimal command line
CHECKPOINT_OPTIONS = {
    ("train", "init"): ["train", "--data", "{data}", "--setting", "extrapolation", "--out", "{tmp}/m.tpar",
                        "--init", "{ckpt}"],
    ("evaluate", "checkpoint"): ["evaluate", "--checkpoint", "{ckpt}", "--data", "{data}"],
    ("calibrate", "checkpoint"): ["calibrate", "--checkpoint", "{ckpt}", "--data", "{data}"],
    ("predict", "checkpoint"): ["predict", "--checkpoint", "{ckpt}", "--data", "{data}", *QUESTION_ARGS],
    ("complete", "checkpoint"): ["complete", "--checkpoint", "{ckpt}", "--data", "{data}", "--input", "{data}",
                                 "--out", "{tmp}/out.csv"],
    ("explain", "checkpoint"): ["explain", "--checkpoint", "{ckpt}", "--data", "{data}", *QUESTION_ARGS,
                                "--answer", "Bob"],
    ("baseline", "questions_of"): ["baseline", "--data", "{data}", "--method", "frequency", "--setting",
                                   "extrapolation", "--questions-of", "{ckpt}"],
    ("rules", "checkpoint"): ["rules", "--checkpoint", "{ckpt}", "--data", "{data}"],
}
#: every option that reads a file of facts (subject, relation, object, time), with a command line whose
#: other inputs are good: a bad row of it must be named with the file and the row
FACT_FILE_OPTIONS = {
    ("predict", "without"): ["predict", "--checkpoint", "{ckpt}", "--data", "{world}", "--subject", "Orora Front",
                             "--relation", "Mobilize against", "--time", "2025-12-20", "--without", "{facts}"],
    ("predict", "with_facts"): ["predict", "--checkpoint", "{ckpt}", "--data", "{world}", "--subject", "Orora Front",
                                "--relation", "Mobilize against", "--time", "2025-12-20", "--with", "{facts}"],
    ("complete", "input"): ["complete", "--checkpoint", "{ckpt}", "--data", "{world}", "--input", "{facts}",
                            "--out", "{tmp}/out.csv"],
}


def _options(test) -> set[tuple[str, str]]:
    import argparse

    from tpar.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    return {(name, a.dest) for name, sp in commands.items() for a in sp._actions
            if a.option_strings and a.nargs != 0 and test(a)}


def test_every_checkpoint_and_fact_file_option_is_in_the_hostile_tables():
    assert _options(lambda a: a.dest in ("checkpoint", "init", "questions_of")) == set(CHECKPOINT_OPTIONS)
    assert _options(lambda a: a.metavar == "FILE" and (a.dest not in ("json", "out")
                                                       and not a.dest.endswith(("_csv", "_json")))) \
        == set(FACT_FILE_OPTIONS)


def _hostile_checkpoints(tmp_path) -> dict[str, tuple]:
    """(file, what the refusal says) of checkpoints a tamperer or a newer tpar would hand over."""
    import zipfile

    from helpers import SAMPLE_CHECKPOINT, rewrite_checkpoint

    def variant(name, edit_meta=None, edit_payload=None):
        return rewrite_checkpoint(tmp_path / name, edit_meta, edit_payload)

    def nan_mrr(meta):
        meta["metrics"][next(k for k in meta["metrics"] if k.startswith("test_"))]["realistic"]["mrr"] = float("nan")

    bomb = tmp_path / "bomb.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, bomb)
    with zipfile.ZipFile(bomb, "a", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("sample-world-unified/data/1000", "w", force_zip64=True) as f:
            for _ in range(4):
                f.write(bytes(2 ** 24))
    return {"newer format": (variant("v9.tpar", edit_payload=lambda p: p.__setitem__("format", "tpar-checkpoint-v9")),
                             "written by a newer tpar"),
            "NaN metric": (variant("nan.tpar", nan_mrr), "stored figures out of range"),
            "archive bomb": (bomb, "would inflate")}


@pytest.mark.parametrize("key", sorted(CHECKPOINT_OPTIONS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_a_hostile_checkpoint_is_refused_by_name_in_every_command(key, tmp_path, csv_file, capsys):
    for case, (ckpt, says) in _hostile_checkpoints(tmp_path).items():
        before = ckpt.read_bytes()
        argv = [a.format(data=csv_file, ckpt=ckpt, tmp=tmp_path) for a in CHECKPOINT_OPTIONS[key]]
        assert main(argv) == 2, case
        err = capsys.readouterr().err
        assert f"{ckpt}: " in err and says in err and "internal error" not in err, (case, err)
        assert ckpt.read_bytes() == before  # nothing saved is lost or changed


@pytest.mark.parametrize("key", sorted(FACT_FILE_OPTIONS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_a_bad_row_of_a_fact_file_is_named_with_file_and_row_in_every_command(key, tmp_path, capsys):
    from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD

    facts = tmp_path / "facts.csv"
    for rows, says in ((["Orora Front,Threaten,Hugo of Zanistan,2025-12-18", "Orora Front,Threaten"],
                        "row 3: expected 4 columns, found 2"),
                       (["Orora Front,Threaten,Hugo of Zanistan,2025-12-18", "Orora Front,Threaten,,2025-02-30"],
                        "row 3: ")):
        facts.write_text("subject,relation,object,time\n" + "\n".join(rows) + "\n")
        argv = [a.format(ckpt=SAMPLE_CHECKPOINT, world=SAMPLE_WORLD, facts=facts, tmp=tmp_path)
                for a in FACT_FILE_OPTIONS[key]]
        assert main(argv) == 2, rows
        err = capsys.readouterr().err
        assert f"{facts}, {says}" in err and "internal error" not in err, err


def test_the_readmes_explain_example_is_what_the_command_prints(capsys, monkeypatch):
    """The README shows `tpar explain`'s first lines on the sample world; they drifted from the output (a
    walk-through found the method's sentence and a link count changed): each shown line is printed as shown."""
    import re
    import shlex
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```\n\$ (tpar explain .+?)\n(\(Orora Front.+?)\n  \.\.\.\n```", readme, re.S)
    assert block, "the README's explain example is not where this test looks"
    command = shlex.split(block.group(1).replace("\\\n", " "))
    monkeypatch.chdir(root)
    assert main(command[1:]) == 0
    printed = capsys.readouterr().out.splitlines()
    shown = block.group(2).splitlines()
    assert printed[:len(shown)] == shown


@pytest.mark.parametrize("times", [1, 2])
def test_train_on_a_file_at_too_few_times_says_why_valid_is_empty_and_what_to_do(times, tmp_path, capsys):
    """A chronological split never cuts a time step: a file at one or two times has no valid facts, and training
    says so with the way out (hostile audit 38 #6: it said only "a valid split is needed")."""
    rows = [f"E{i},r,E{i + 1},2024-01-0{1 + i % times}" for i in range(12)]
    f = tmp_path / "few.csv"
    f.write_text("subject,relation,object,time\n" + "\n".join(rows) + "\n")
    assert main(["train", "--data", str(f), "--setting", "unified", "--out", str(tmp_path / "m.tpar"), "--epochs", "1",
                 "--dim", "8", "--num-layers", "2", "--threads", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    why = "all its facts share one time (2024-01-01)" if times == 1 else "its facts lie at only 2 distinct times"
    assert why in err and "--split-policy random" in err and "internal error" not in err, err
    assert not (tmp_path / "m.tpar").exists()


def test_train_on_a_folder_without_a_valid_file_says_to_add_one(tmp_path, capsys):
    """A folder of split files: tpar split nothing, so the way out is a valid file, not a random split (review 38)."""
    from helpers import SAMPLE_WORLD

    data = tmp_path / "noval"
    shutil.copytree(SAMPLE_WORLD, data)
    for f in data.glob("valid.*"):
        f.unlink()
    assert main(["train", "--data", str(data), "--setting", "unified", "--out", str(tmp_path / "m.tpar"), "--epochs",
                 "1", "--dim", "8", "--num-layers", "2", "--threads", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"add a valid file (valid.txt or valid.csv, as its train file) to {data}" in err, err
    assert "--split-policy" not in err


def test_every_command_answering_with_an_unfinished_model_says_so(tmp_path, capsys):
    """An interrupted, never-validated run's model: predict, explain and evaluate each warn, as the app marks it
    UNFINISHED everywhere (new-user walk 38: the CLI answered from it without a word)."""
    from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD, rewrite_checkpoint

    def interrupted(meta):
        meta["extra"].update(stopped="interrupted", epochs_trained=0.56, best_epoch=-1)

    cut = rewrite_checkpoint(tmp_path / "cut.tpar", interrupted)
    data = ["--checkpoint", str(cut), "--data", str(SAMPLE_WORLD)]
    question = ["--subject", "Orora Front", "--relation", "Mobilize against", "--time", "2025-12-20"]
    for argv in (["predict", *data, *question], ["explain", *data, *question, "--answer", "Hugo of Zanistan"],
                 ["evaluate", *data, "--setting", "extrapolation", "--max-queries", "20", "--no-calibration",
                  "--threads", "1", "--quiet"]):
        assert main(argv) == 0
        err = capsys.readouterr().err
        assert "warning: this model is UNFINISHED (interrupted after 0.56 of " in err and "never validated" in err, err
        assert "trained and selected" not in err


def test_an_extrapolation_model_asked_to_interpolate_is_shown_the_way_to_ask_it_as_a_forecast(tmp_path, capsys):
    """New-user walk 38 #4: the warning and the answer-set error pointed only to `tpar calibrate`, never to
    `--setting extrapolation`, the setting the model knows."""
    from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD, rewrite_checkpoint

    def extrapolation_only(meta):
        meta["setting"] = "extrapolation"
        meta["config"]["train"]["setting"] = "extrapolation"
        meta["extra"]["calibration"].pop("interpolation")

    ck = rewrite_checkpoint(tmp_path / "ex.tpar", extrapolation_only)
    ask = ["predict", "--checkpoint", str(ck), "--data", str(SAMPLE_WORLD), "--subject", "Orora Front", "--relation",
           "Mobilize against", "--time", "2025-12-20", "--setting", "interpolation"]
    assert main(ask) == 0
    cap = capsys.readouterr()
    assert "Or ask it as a forecast (`--setting extrapolation`" in cap.out + cap.err
    assert main(ask + ["--coverage", "0.9"]) == 2
    err = capsys.readouterr().err
    assert "no calibration for interpolation questions: ask it as extrapolation (`--setting extrapolation`)" in err, err
    assert "`tpar calibrate --setting interpolation`" in err


def test_explain_gives_the_answers_probability_and_predicts_warnings_and_no_rank_without_evidence(capsys):
    """New-user walk 38 #5: explain gave no probability, dropped predict's warnings and ranked an answer predict
    refused to rank (no evidence, a forecast 60 days past the data)."""
    from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD

    base = ["explain", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), "--subject", "Orora Front",
            "--relation", "Mobilize against", "--answer", "Hugo of Zanistan", "--setting", "extrapolation"]
    assert main(base + ["--time", "2026-03-01"]) == 0
    cap = capsys.readouterr()
    assert "warning: 2026-03-01 lies 60 days after the last known fact" in cap.err
    assert "no evidence, no rank (" in cap.out and ", rank " not in cap.out.splitlines()[0]
    assert main(base + ["--time", "2025-12-20", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert 0.9 < d["probability"] < 1 and d["no_evidence"] == "" and isinstance(d["warnings"], list)


def test_explain_gives_an_unreached_answer_its_share_of_the_unreached_probability(capsys):
    """An answer no path reaches is one of the tied unreached entities: explain gives it their probability shared
    out (review 38b), not their sum, and says so in words."""
    from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD
    from tpar.data.loading import load_dataset
    from tpar.model.checkpoint import Checkpoint
    from tpar.reasoning.prediction import Predictor

    kg = load_dataset(SAMPLE_WORLD)
    q = dict(subject="Orora Front", relation="Mobilize against", time="2025-01-06", setting="extrapolation")
    pred = Predictor(Checkpoint.load(SAMPLE_CHECKPOINT), kg, "cpu").predict(**q, top_k=None)
    assert not pred.no_evidence and "Arovia" not in {a.entity for a in pred.answers}  # reached: 11 of 280
    unreached = kg.num_entities - pred.reached
    assert unreached > 100 and pred.unreached_probability > 0.5
    argv = ["explain", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), "--subject", q["subject"],
            "--relation", q["relation"], "--time", q["time"], "--setting", q["setting"], "--answer", "Arovia"]
    assert main(argv + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["probability"] == pytest.approx(pred.unreached_probability / unreached, rel=1e-9)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"probability {d['probability']:.2%}" in out and "no temporal path of length ≤ 3 reaches 'Arovia'" in out


def test_explain_integrates_by_default_and_warns_when_the_gradient_leaves_most_unattributed(capsys):
    """Fidelity review 39 F2: the first-order gradient (Eq. 14) can leave most of f − f₀ unattributed and give a
    decisive fact the wrong sign; the CLI now explains as the Evidence page does, and says so where the gradient
    is asked for and leaves more than half."""
    from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD

    base = ["explain", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), "--subject", "Orora Front",
            "--relation", "Mobilize against", "--time", "2025-12-20", "--answer", "Hugo of Zanistan",
            "--setting", "extrapolation"]
    assert main(base) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith("; integrated importance") and "note: the first-order gradient" not in out
    assert main(base + ["--importance", "gradient"]) == 0
    out = capsys.readouterr().out
    assert "note: the first-order gradient leaves most of f − f₀ unattributed: the paths' importances, even their " \
           "signs, can mislead here" in out
