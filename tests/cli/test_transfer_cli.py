"""The CLI with a checkpoint on data with other relations: evaluate, baseline --questions-of, predict,
explain and complete say that they run on other data, and refuse below the coverage asked for."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from tpar.cli import main

from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD, write_renamed_world


@pytest.fixture(scope="module")
def renamed(tmp_path_factory) -> Path:
    """The sample world with its relations spelled otherwise ('Provide aid to' -> 'PROVIDE_AID_TO') and
    6 train facts of a relation the model does not know."""
    return write_renamed_world(tmp_path_factory.mktemp("renamed") / "renamed")


def test_evaluate_on_other_data_states_the_match_and_both_metrics(renamed, tmp_path, capsys):
    out = tmp_path / "m.json"
    rc = main(["evaluate", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(renamed), "--setting",
               "extrapolation", "--max-queries", "40", "--seed", "1", "--threads", "1", "--no-calibration",
               "--quiet", "--json", str(out)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "applied to renamed: 20 of 21 relations matched, 99.9% of facts" in cap.err  # 6 of ~10k facts out
    assert "unmatched: 'Invented relation' (6 facts)" in cap.err
    # every test question is about a matched relation: nothing to count as a miss, and no second figure
    assert "none is counted as a miss, and the metrics above are over a sample of 40 of them" in cap.out
    d = json.loads(out.read_text())
    assert d["num_queries"] == 40 and d["params"]["subset"] == {"queries": 40, "seed": 1}
    assert d["params"]["relation_match"]["unmatched"][0]["data_relation"] == "Invented relation"
    allq = d["params"]["all_questions"]
    assert allq["answerable_questions"] == allq["all_questions"]         # the invented facts are train facts
    assert allq["answerable"]["mrr"] == pytest.approx(d["realistic"]["mrr"])


def test_evaluate_counts_test_questions_of_an_unmatched_relation_as_misses_in_its_second_figure(renamed, tmp_path,
                                                                                                 capsys):
    import csv
    import shutil

    data = tmp_path / "renamed2"
    shutil.copytree(renamed, data)
    rows = list(csv.DictReader((data / "test.csv").open(encoding="utf-8")))
    with (data / "test.csv").open("a", newline="", encoding="utf-8") as f:
        csv.DictWriter(f, fieldnames=list(rows[0])).writerows([dict(rows[i], relation="Invented relation")
                                                                for i in range(2)])
    rc = main(["evaluate", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(data), "--setting", "extrapolation",
               "--max-queries", "40", "--seed", "1", "--threads", "1", "--no-calibration", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0
    total = 2 * len(rows) + 4
    assert (f"metrics above are over the 40 sampled answerable questions; over all {total:,} test questions, the 4 "
            "with an unmatched relation counted as misses (scaled by the split's answerable share): MRR ") in out, out


def test_below_the_minimum_coverage_is_refused(renamed, capsys):
    rc = main(["evaluate", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(renamed), "--min-coverage", "100%",
               "--threads", "1", "--quiet"])
    err = capsys.readouterr().err
    assert rc != 0 and "below the required 100.0%" in err and "'Invented relation' (6 facts)" in err
    assert "Traceback" not in err


def test_baseline_on_the_questions_a_foreign_checkpoint_is_asked(renamed, tmp_path, capsys):
    out = tmp_path / "b.json"
    rc = main(["baseline", "--data", str(renamed), "--method", "frequency", "--setting", "extrapolation",
               "--questions-of", str(SAMPLE_CHECKPOINT), "--max-queries", "40", "--seed", "1", "--quiet",
               "--json", str(out), "--ranks-csv", str(tmp_path / "b.csv")])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "applied to renamed" in cap.err
    d = json.loads(out.read_text())
    assert d["num_queries"] == 40 and d["params"]["relation_match"]["relations"]["matched"] == 20
    # the very questions `tpar evaluate` ranks with the same --max-queries and --seed
    assert main(["evaluate", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(renamed), "--setting",
                 "extrapolation", "--max-queries", "40", "--seed", "1", "--threads", "1", "--no-calibration",
                 "--quiet", "--ranks-csv", str(tmp_path / "m.csv")]) == 0
    capsys.readouterr()
    questions = [[r[c] for c in ("subject", "relation", "object", "time", "direction")]
                 for r in csv.DictReader((tmp_path / "b.csv").open(encoding="utf-8"))]
    assert len(questions) == 40 and questions == [
        [r[c] for c in ("subject", "relation", "object", "time", "direction")]
        for r in csv.DictReader((tmp_path / "m.csv").open(encoding="utf-8"))]


def test_predict_and_explain_say_they_run_on_other_data(renamed, capsys):
    q = ["--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(renamed), "--subject", "Arovia", "--relation",
         "provide aid to", "--time", "2025-12-01"]
    assert main(["predict", *q, "--top", "3", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "(Arovia, PROVIDE_AID_TO, ?, 2025-12-01)" in out and "applied to renamed" in out
    assert "fitted on chronological's valid questions; not calibrated on this data" in out
    assert ("warning: Probabilities are calibrated on chronological, the data the calibration was fitted on, not on "
            "renamed") in out
    assert "model trained on chronological" in out and "answering over renamed" in out  # which model, which data
    first = next(line for line in out.splitlines() if re.match(r"\s*1\. ", line))
    answer = first.split(".", 1)[1].split("  ")[0].strip()
    assert main(["explain", *q, "--answer", answer, "--paths", "2", "--device", "cpu"]) == 0
    assert "applied to renamed" in capsys.readouterr().out
    rc = main(["predict", *q[:6], "--relation", "invented relation", "--time", "2025-12-01", "--device", "cpu"])
    err = capsys.readouterr().err
    assert rc != 0 and "relation 'Invented relation' of renamed has no counterpart" in err


@pytest.mark.slow
def test_complete_on_other_data_with_a_relation_map(renamed, tmp_path, capsys):
    rmap = tmp_path / "map.csv"
    rmap.write_text("data_relation,model_relation\nInvented relation,Threaten\n")
    rows = tmp_path / "rows.csv"
    rows.write_text("subject,relation,object,time\nArovia,PROVIDE_AID_TO,,2025-12-01\nArovia,Invented relation,,2025-12-01\n")
    out = tmp_path / "done.csv"
    rc = main(["complete", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(renamed), "--input", str(rows),
               "--out", str(out), "--relation-map", str(rmap), "--device", "cpu"])
    err = capsys.readouterr().err   # one data relation per model relation: THREATEN loses its match
    assert rc != 0 and "93.0% of the facts, below the required 95.0%; unmatched: 'THREATEN' (1,644 facts)" in err
    rc = main(["complete", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(renamed), "--input", str(rows),
               "--out", str(out), "--relation-map", str(rmap), "--min-coverage", "90%", "--device", "cpu"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "1 by the relation map" in cap.err and "20 of 21 relations matched" in cap.err
    assert "2 incomplete rows" in cap.out and "does not know relation" not in cap.out + cap.err
    assert "row 2: " in cap.out and "row 3: " in cap.out and "Traceback" not in cap.err   # a proposal for both rows


def test_calibrate_refuses_other_data(renamed, capsys):
    """The stored calibration describes the model on its own data: never overwritten from other data."""
    rc = main(["calibrate", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(renamed), "--threads", "1"])
    err = capsys.readouterr().err
    assert rc != 0 and "needs the data the model was trained on (chronological)" in err


@pytest.mark.parametrize("command", ["evaluate", "predict", "explain", "complete", "baseline", "rules"])
def test_a_bad_relation_map_is_named_with_file_and_row_in_every_command(command, renamed, tmp_path, capsys):
    import argparse

    from tpar.cli import build_parser

    takes = {name for name, sp in next(a for a in build_parser()._actions
                                       if isinstance(a, argparse._SubParsersAction)).choices.items()
             if any(a.dest == "relation_map" for a in sp._actions)}
    assert takes == {"evaluate", "predict", "explain", "complete", "baseline", "rules"}   # every command that takes one
    rmap = tmp_path / "map.csv"
    rmap.write_text("Invented relation,Threaten\nInvented relation,Praise\n")
    base = ["--data", str(renamed), "--relation-map", str(rmap)]
    ck = ["--checkpoint", str(SAMPLE_CHECKPOINT)]
    q = ["--subject", "Arovia", "--relation", "provide aid to", "--time", "2025-12-01"]
    argv = {"evaluate": ["evaluate", *ck, *base, "--quiet"], "predict": ["predict", *ck, *base, *q],
            "explain": ["explain", *ck, *base, *q, "--answer", "Arovia"],
            "complete": ["complete", *ck, *base, "--input", str(rmap), "--out", str(tmp_path / "o.csv")],
            "baseline": ["baseline", *base, "--method", "frequency", "--setting", "extrapolation",
                         "--questions-of", str(SAMPLE_CHECKPOINT)],
            "rules": ["rules", *ck, *base, "--questions", "2", "--quiet"]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{rmap}: 1 bad row in the relation map: row 2: 'Invented relation' is mapped again" in err
    assert "Traceback" not in err and "internal error" not in err
