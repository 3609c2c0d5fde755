"""Values a configuration file or the command line may hold that no run can mean -- a section that is a list, a
float dimension, NaN, a thousand-fold layer count, zero epochs, a negative seed or micro-batch, a billion threads or
paths -- each end in a message naming the value (exit 2) before any work, never an internal error, a hang, a memory
exhaustion or a run that "trains" nothing and exits 0."""

from __future__ import annotations

import json

import pytest

from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD
from tpar.cli import main
from tpar.errors import DataError
from tpar.model.config import ModelConfig, RunConfig, TrainConfig

QUESTION = ["--subject", "Orora Front", "--relation", "Mobilize against", "--time", "2025-12-20"]


def _exit(argv) -> int:
    try:
        return main(argv)
    except SystemExit as e:  # argparse's own refusal
        return int(e.code)


@pytest.mark.parametrize("text,words", [
    ("[]", "a configuration is a JSON object"),
    ('{"train": []}', "the 'train' section must be a JSON object"),
    ('{"model": 3}', "the 'model' section must be a JSON object"),
    ('{"model": {"dim": 64.5}}', "dim must be a whole number, got 64.5"),
    ('{"model": {"dim": "64"}}', "dim must be a whole number, got '64'"),
    ('{"model": {"dim": true}}', "dim must be a whole number, got True"),
    ('{"model": {"dim": 1000000000}}', "dim must be between 1 and 4,096"),
    ('{"model": {"num_layers": 100000}}', "num_layers must be between 1 and 64"),
    ('{"model": {"activation": 3}}', "activation must be one of identity, tanh, relu"),
    ('{"train": {"lr": NaN}}', "NaN is not a JSON number"),
    ('{"train": {"epochs": 1e999}}', "1e999 is beyond any float"),
    ('{"train": {"epochs": -1}}', "epochs must be between 1"),
    ('{"train": {"epochs": 0}}', "epochs must be between 1"),
    ('{"train": {"lr": -1}}', "lr must be between"),
    ('{"train": {"calibrate": "false"}}', "calibrate must be true or false"),
    ('{"train": {"seed": -3}}', "seed must be between 0"),
    ('{"train": {"background_fraction": 1}}', "background_fraction must be between 1e-09 and 0.999999999, got 1"),
    ('{"model": {"history_window": -1}}', "history_window must be between 0 and 4,611,686,018,427,387,904, got -1"),
    ("[" * 50_000 + "]" * 50_000, "nested too deeply"),
])
def test_a_config_file_that_no_run_can_mean_is_refused_by_name(tmp_path, capsys, text, words):
    cfg = tmp_path / "run.json"
    cfg.write_text(text)
    with pytest.raises(DataError, match=words):
        RunConfig.load(cfg)
    argv = ["train", "--data", str(SAMPLE_WORLD), "--setting", "extrapolation", "--config", str(cfg),
            "--out", str(tmp_path / "m.tpar"), "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words.split(",")[0].replace("\\", "") in err and str(cfg) in err and "bug" not in err
    assert not (tmp_path / "m.tpar").exists()


@pytest.mark.parametrize("flags,words", [
    (["--epochs", "0"], "--epochs must be between 1"),
    (["--lr", "nan"], "--lr must be a finite number"),
    (["--lr", "-1"], "--lr must be between"),
    (["--dim", "0"], "--dim must be between 1"),
    (["--train-seed", "-1"], "--train-seed must be between 0"),
    (["--micro-batch", "0"], "--micro-batch must be between 1"),
])
def test_train_overrides_are_checked_as_the_config_is(tmp_path, capsys, flags, words):
    argv = ["train", "--data", str(SAMPLE_WORLD), "--setting", "extrapolation", "--out", str(tmp_path / "m.tpar"),
            "--quiet", *flags]
    assert main(argv) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "m.tpar").exists()


@pytest.mark.parametrize("argv,words", [
    (["evaluate", "--micro-batch", "0"], "--micro-batch: 0: below 1"),
    (["evaluate", "--micro-batch", "-4"], "--micro-batch: -4: below 1"),
    (["evaluate", "--seed", "-1"], "--seed: -1: below 0"),
    (["evaluate", "--threads", "100000000"], "--threads: 100000000: above 1,024"),
    (["rules", "--seed", "-1"], "--seed: -1: below 0"),
    (["explain", *QUESTION, "--answer", "Hugo of Zanistan", "--paths", "1000000000"], "--paths: 1000000000: above 1,000"),
    (["rules", "--paths", "1000000000"], "--paths: 1000000000: above 1,000"),
    (["rules", "--answers", "5000"], "--answers: 5000: above 1,000"),
    (["ensemble", "--prior", "--eps", "1e-20", "--out", "OUT"], "ε grid holds 1e-20: each value must lie in 1e-12..1000"),
    (["ensemble", "--prior", "--betas", "5000", "--out", "OUT"], "β grid holds 5000.0: each value must lie in"),
])
def test_command_line_values_outside_what_a_run_takes_are_refused(tmp_path, capsys, argv, words):
    checkpoint = "--checkpoints" if argv[0] == "ensemble" else "--checkpoint"
    argv = [a.replace("OUT", str(tmp_path / "c.tpar")) for a in argv]
    assert _exit([argv[0], checkpoint, str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), *argv[1:]]) == 2
    assert words in capsys.readouterr().err


def test_every_shipped_configuration_passes_the_field_checks():
    """The limits leave room for every configuration the project ships or trained with."""
    from tpar.model.config import CONFIG_DIR

    checked = 0
    for path in CONFIG_DIR.rglob("*.json"):
        d = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(d, dict) and ("model" in d or "train" in d):
            RunConfig.load(path)
            checked += 1
    assert checked >= 5
    ModelConfig(dim=4096, num_layers=64)
    TrainConfig(lr=1, epochs=1, seed=2 ** 63 - 1)
    assert isinstance(TrainConfig(lr=1).lr, float)  # an int given for a float option is taken as one


def test_a_sample_world_larger_than_its_names_allow_is_refused_not_drawn_for_ever(tmp_path, capsys):
    """Country names come from 5,200 syllable combinations drawn at random: 5,201 countries drew for ever."""
    from tpar.data.sample_world import MAX_COUNTRIES, generate

    assert _exit(["sample-world", "--out", str(tmp_path / "w"), "--countries", "5201"]) == 2
    assert "--countries: 5201: above 2,000" in capsys.readouterr().err
    with pytest.raises(DataError, match="1 to 2,000 countries"):
        generate(7, MAX_COUNTRIES + 1)


def test_bench_fails_when_no_measurement_succeeded(tmp_path, capsys, monkeypatch):
    from tpar.runtime import bench

    monkeypatch.setattr(bench, "run_benchmarks", lambda **kw: {"machine": {}, "results": [
        {"data": "x", "L": 3, "d": 32, "error": "ValueError: too few questions to time"}]})
    assert main(["bench", "--quick"]) == 2
    assert "no measurement succeeded" in capsys.readouterr().err


def test_building_the_parser_imports_no_torch_and_bench_bounds_match():
    """Every command builds the whole parser: it may not import torch (seconds; ``tpar --version`` and ``--help``
    paid them), so bench's bounds are written out in the CLI -- and must equal the bench's own."""
    import subprocess
    import sys

    code = "import sys, tpar.cli as c; c.build_parser(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr[-500:]
    from tpar import cli
    from tpar.runtime import bench

    assert (cli.MIN_TIMED, cli.MAX_TIMED) == (bench.MIN_TIMED, bench.MAX_TIMED)


@pytest.mark.parametrize("argv,words", [
    (["rules", "--data", str(SAMPLE_WORLD), "--evaluate", "valid", "--decay", "nan"], "argument --decay: nan"),
    (["rules", "--data", str(SAMPLE_WORLD), "--evaluate", "valid", "--decay", "-1"], "argument --decay: -1"),
    (["rules", "--data", str(SAMPLE_WORLD), "--confidence-share", "2"], "argument --confidence-share: 2"),
    (["rules", "--data", str(SAMPLE_WORLD), "--confidence-share", "inf"], "argument --confidence-share: inf"),
    (["sample-world", "--out", "{tmp}/w", "--countries", "1"], "argument --countries: 1"),
])
def test_rule_scoring_and_sample_world_options_are_checked_before_any_work(tmp_path, capsys, argv, words):
    """Audit 37: --decay nan ended in an internal error after every rule was distilled (its range check let NaN
    through and named no option); --countries 1 ended in an internal error, leaving an empty folder."""
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert _exit(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "bug" not in err
    assert not (tmp_path / "w").exists()


def test_the_rule_ranker_refuses_nan_by_name(sample_kg):
    from tpar.reasoning.distilled_rules import RuleSet
    from tpar.reasoning.rule_ranker import RuleRanker

    with pytest.raises(DataError, match="--decay"):
        RuleRanker(RuleSet.__new__(RuleSet), sample_kg, decay=float("nan"))
    with pytest.raises(DataError, match="--confidence-share"):
        RuleRanker(RuleSet.__new__(RuleSet), sample_kg, confidence_share=float("nan"))


def test_an_evaluation_with_a_direction_of_no_questions_writes_json_null_not_nan(tmp_path, capsys):
    """Audit 37: --max-queries 1 left one direction without questions, and the JSON held bare NaN (not JSON: strict
    readers refuse it) while the table printed 'nan'."""
    out = tmp_path / "ev.json"
    assert main(["evaluate", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), "--split", "test",
                 "--max-queries", "1", "--json", str(out), "--threads", "1"]) == 0
    printed = capsys.readouterr().out
    assert "nan" not in printed and "no questions" in printed and "(realistic, 1 query)" in printed
    d = json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    empty = [k for k, modes in d["by_direction"].items() if modes["realistic"]["count"] == 0]
    assert len(empty) == 1 and d["by_direction"][empty[0]]["realistic"]["mrr"] is None


def test_a_bad_row_of_a_what_if_file_gets_no_hint_that_does_not_apply(tmp_path, capsys):
    """Audit 37: an error in a --with file ended with 'hint: --drop-bad-rows drops such rows', which does not apply
    to what-if files (following it gave the same error)."""
    facts = tmp_path / "w.csv"
    facts.write_text("subject,relation,object,time\nArovia,Provide aid to,Pelia,2025-06-01\n"
                     "Arovia,Provide aid to,,2025-06-01\n")
    argv = ["predict", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), "--subject", "Arovia",
            "--relation", "Provide aid to", "--time", "2025-06-02", "--with", str(facts)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{facts}, row 3" in err and "--drop-bad-rows" not in err


def test_a_thin_calibration_does_not_silently_replace_a_better_founded_one(tmp_path, capsys):
    """Audit 37: `tpar calibrate --max-queries 1` replaced a calibration fitted on 1,870 valid questions in place;
    now it is refused (naming both counts) unless --replace, and the checkpoint is untouched."""
    import shutil

    from tpar.evaluation.calibration import stored
    from tpar.model.checkpoint import Checkpoint

    ck = tmp_path / "m.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, ck)
    before = ck.read_bytes()
    queries = stored(Checkpoint.load(ck).extra, "extrapolation").queries
    argv = ["calibrate", "--checkpoint", str(ck), "--data", str(SAMPLE_WORLD), "--max-queries", "1", "--threads", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"fitted on {queries:,} valid questions, this one would rest on 1" in err and "--replace" in err
    assert ck.read_bytes() == before
    assert main(argv + ["--replace", "--setting", "extrapolation"]) == 0
    assert stored(Checkpoint.load(ck).extra, "extrapolation").queries == 1
