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
    assert "realistic" in capsys.readouterr().out


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
    assert cli.main(["app", "--port", "0"]) == 2 and "not a TCP port" in capsys.readouterr().err


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
    assert root == bench.SAMPLE_WORLD and (root / "train.csv").is_file()
    assert [c[1:] for c in configs] == bench.shapes(True) and "sample world" in note
    with pytest.raises(DataError, match="no benchmark data set here"):
        bench.plan(data_dir=str(tmp_path), quick=True)
    root, configs, note = bench.plan(data=str(tmp_path), quick=False)
    assert root == tmp_path and len(configs) == len(bench.shapes(False)) == 4 and note == ""
    with pytest.raises(DataError, match="no such file"):
        bench.plan(data=str(tmp_path / "nope.csv"))


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
