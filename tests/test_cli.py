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
