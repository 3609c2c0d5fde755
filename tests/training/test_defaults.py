"""One training-defaults policy, sized to the data, shared by ``tpar train`` and the Train page."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import ROOT, tiny_world_csv
from tpar.cli import main
from tpar.evaluation.baselines import FrequencyBaseline
from tpar.evaluation.protocol import evaluate
from tpar.data.loading import load_dataset
from tpar.model.checkpoint import Checkpoint
from tpar.model.config import sparse_propagation
from tpar.training.defaults import LARGE_FACTS, SMALL_FACTS, defaults_for_size, size_class, training_defaults
from tpar.model.ranker import ModelRanker

APP_TRAIN = ROOT / "app" / "views" / "train.py"


def test_the_size_classes_scale_the_model_the_schedule_and_validation():
    assert [size_class(n) for n in (0, SMALL_FACTS, SMALL_FACTS + 1, LARGE_FACTS, LARGE_FACTS + 1)] == [
        "small", "small", "medium", "medium", "large"]
    small, medium, large = (defaults_for_size(n, "extrapolation").run for n in (320, 21_600, 300_000))
    for run in (small, medium, large):
        assert (run.model.num_layers, run.model.dim) == (3, 32) and run.train.setting == "extrapolation"
        assert 0 < run.train.max_valid_queries <= 1000  # validation on a bounded sample, never all of valid
    assert small.train.max_train_queries == 0 and small.train.epochs > medium.train.epochs  # many short epochs
    assert medium.train.max_train_queries == large.train.max_train_queries == 20_000
    for run in (small, medium, large):  # the sparse default at every size
        assert all(getattr(run.model, k) == v for k, v in sparse_propagation("extrapolation").items())


def test_the_train_page_takes_its_defaults_from_the_policy():
    text = APP_TRAIN.read_text()
    assert "defaults_for_size(" in text and "app/train-page" not in text


def small_world_csv(path: Path, rows: int = 400) -> Path:
    """A 400-row CSV cut from a generated sample world (6 countries: 15 entities, 20 relations), every
    k-th fact over the whole year: the size of a user's first upload."""
    import csv

    from tpar.data.sample_world import write_world

    write_world(path.parent / "world", n_countries=6)
    with open(path.parent / "world" / "facts.csv", newline="") as f:
        facts = list(csv.reader(f))
    head, body = facts[0], facts[1:]
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([head] + body[:: len(body) // rows][:rows])
    return path


@pytest.mark.slow
def test_tpar_train_prints_the_whole_configuration_first_and_beats_the_frequency_baseline(tmp_path, capsys):
    """On a 400-row CSV the CLI's defaults train a model that beats the frequency baseline on test
    (measured: MRR 27 against 14), and the run's configuration is printed in full before it starts."""
    data = small_world_csv(tmp_path / "small.csv")
    out = tmp_path / "m.tpar"
    assert main(["train", "--data", str(data), "--setting", "extrapolation", "--out", str(out), "--quiet",
                 "--threads", "1"]) == 0
    err = capsys.readouterr().err
    assert "config: defaults for a small data set" in err
    for field in ("num_layers=3", "dim=32", "epochs=30", "max_valid_queries=500", "batch_size=5", "lr=0.002"):
        assert field in err, field
    kg = load_dataset(data)
    model = Checkpoint.load(out).build_model()
    tpar_mrr = evaluate(kg, ModelRanker(model, "cpu"), "extrapolation", "test", progress=False).metrics("realistic").mrr
    freq_mrr = evaluate(kg, FrequencyBaseline(), "extrapolation", "test", progress=False).metrics("realistic").mrr
    assert tpar_mrr > freq_mrr, (tpar_mrr, freq_mrr)


def test_an_evaluated_run_is_compared_with_the_frequency_baseline(tmp_path, capsys):
    """With --eval-test the summary names the frequency baseline's test MRR and, where the model does
    not beat it (a deterministic ring: frequency is perfect), says so and what to try."""
    data = tmp_path / "ring.csv"
    data.write_text(tiny_world_csv(days=60))
    assert main(["train", "--data", str(data), "--setting", "extrapolation", "--out", str(tmp_path / "m.tpar"),
                 "--quiet", "--threads", "1", "--epochs", "1", "--eval-test"]) == 0
    out = capsys.readouterr().out
    assert "frequency baseline scores test MRR 100.00%" in out and "does not beat it" in out
    # the run stores the bar beside its own figure, so the Train page (and the card's reader) can say it too
    from tpar.evaluation.baselines import frequency_comparison
    from tpar.model.checkpoint import Checkpoint

    ck = Checkpoint.load(tmp_path / "m.tpar")
    assert ck.extra["baseline_test"] == {"extrapolation": {"method": "frequency", "mrr": 1.0}}
    ((setting, model, base),) = frequency_comparison(ck.metrics, ck.extra["baseline_test"])
    assert setting == "extrapolation" and base == 1.0 and model == ck.metrics["test_extrapolation"]["realistic"]["mrr"]


def test_paper_config_is_opt_in_and_named_when_missing(tmp_path, capsys):
    data = tmp_path / "ring.csv"
    data.write_text(tiny_world_csv(days=20))
    assert main(["train", "--data", str(data), "--setting", "extrapolation", "--out", str(tmp_path / "m.tpar"),
                 "--config", "paper"]) == 2
    assert "no paper configuration" in capsys.readouterr().err


def test_training_defaults_reads_the_data_sets_training_facts(sample_kg):
    d = training_defaults(sample_kg, "unified")
    assert d.size == "medium" and f"{len(sample_kg.facts('train')):,} training facts" in d.reason
    assert "max_valid_queries=1000" in d.describe() and d.run.train.setting == "unified"


def test_tpar_train_prints_its_estimate_first_and_the_time_left_after_each_epoch(tmp_path, capsys):
    """The CLI says before the first step how long the run should take (timed on this machine) and, after each
    epoch but the last, how long it has left at most -- the same functions as the app's Train page."""
    data = tmp_path / "ring.csv"
    data.write_text(tiny_world_csv(days=60))
    assert main(["train", "--data", str(data), "--setting", "extrapolation", "--out", str(tmp_path / "m.tpar"),
                 "--threads", "1", "--epochs", "3", "--patience", "3", "--max-train-queries", "40"]) == 0
    captured = capsys.readouterr()
    err, out = captured.err, captured.out
    assert "estimate on this machine: 40 training questions per epoch at " in err
    assert "at most" in err and "for 3 epochs (early stopping may end sooner)" in err
    lines = [line for line in out.splitlines() if line.startswith("epoch ") and ": loss" in line]
    assert len(lines) == 3, out
    assert all("left at most" in line for line in lines[:2]) and "left" not in lines[2], lines
    quiet = tmp_path / "q.tpar"
    assert main(["train", "--data", str(data), "--setting", "extrapolation", "--out", str(quiet), "--threads", "1",
                 "--epochs", "1", "--max-train-queries", "20", "--quiet"]) == 0
    assert "estimate" not in capsys.readouterr().err  # --quiet: no timing run
