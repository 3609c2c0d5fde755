"""The speed benchmark measures exact and pruned propagation side by side, and says which it measured."""

from __future__ import annotations

import pytest

from helpers import tiny_world_csv
from tpar.data.upload import inspect_upload, save_dataset
from tpar.runtime.bench import run_benchmarks


@pytest.mark.slow
def test_bench_rows_name_their_propagation(tmp_path):
    _, kg = inspect_upload(tiny_world_csv(days=80), "tiny.csv")
    save_dataset(kg, tmp_path / "extrapolation", "tiny")
    configs = [("extrapolation/tiny", 3, 8, {}), ("extrapolation/tiny", 3, 8, {"history_window": 3, "top_k": 1})]
    report = run_benchmarks(data_dir=str(tmp_path), configs=configs, queries=10, progress=False, threads=1)
    exact, pruned = report["results"]
    assert "error" not in exact and "error" not in pruned, report
    assert exact["propagation"] == "exact" and pruned["propagation"] == "window=3+top_k=1(score)"
    for row in (exact, pruned):
        assert row["threads"] == 1 and row["queries_timed"] == 10
        assert row["train_ms_per_query"] > 0 and row["infer_queries_per_s"] > 0
        assert len(row["links_per_query_per_layer_test"]) == 3
    # the pruned pass sends along fewer links from the second step on (one entity per query, last 3 days)
    assert sum(pruned["links_per_query_per_layer_test"][1:]) < sum(exact["links_per_query_per_layer_test"][1:])


@pytest.mark.slow
def test_bench_times_the_batch_sizes_it_was_given(tmp_path):
    """``--train-batch`` / ``--infer-batch``: each row records them; the questions asked for are timed after
    one warm-up batch, in batches of that size (the last one partial)."""
    _, kg = inspect_upload(tiny_world_csv(days=80), "tiny.csv")
    save_dataset(kg, tmp_path / "extrapolation", "tiny")
    report = run_benchmarks(data_dir=str(tmp_path), configs=[("extrapolation/tiny", 2, 8, {})], queries=5,
                            progress=False, threads=1, train_batch=7, infer_batch=9)
    (row,) = report["results"]
    assert "error" not in row, row
    assert (row["train_batch"], row["infer_batch"]) == (7, 9)
    assert row["queries_timed"] == 5 and row["train_ms_per_query"] > 0 and row["infer_queries_per_s"] > 0
    # the batch alone is too large for the data (queries=5 is enough on its own)
    too_big = run_benchmarks(data_dir=str(tmp_path), configs=[("extrapolation/tiny", 2, 8, {})], queries=5,
                             progress=False, threads=1, train_batch=10 ** 6)
    assert "too few questions to time" in too_big["results"][0]["error"]


def test_bench_times_exactly_the_questions_asked_for_in_batches(tmp_path, monkeypatch):
    """Each forward pass the measurement makes: one warm-up batch, then ``queries`` questions in batches of the
    size given (the last one partial) -- in training and in inference, none more, none fewer."""
    from tpar.model.network import TPAR
    from tpar.runtime import bench

    _, kg = inspect_upload(tiny_world_csv(days=80), "tiny.csv")
    save_dataset(kg, tmp_path / "extrapolation", "tiny")
    calls = []
    forward = TPAR.forward

    def counted(self, batch, background, trace=None):
        if trace is None:  # the links-per-layer passes after the timing carry a trace
            calls.append(("train" if self.training else "infer", len(batch)))
        return forward(self, batch, background, trace)

    monkeypatch.setattr(TPAR, "forward", counted)
    row = bench._measure(str(tmp_path / "extrapolation" / "tiny"), 2, 8, {}, 20, "cpu", threads=1, train_batch=7,
                         infer_batch=9)
    assert row["queries_timed"] == 20
    assert [n for k, n in calls if k == "train"] == [7, 7, 7, 6]
    assert [n for k, n in calls if k == "infer"] == [9, 9, 9, 2]
    for bad in ({"queries": 4}, {"train_batch": 0}, {"infer_batch": 0}):
        args = {"queries": 20, "train_batch": 7, "infer_batch": 9} | bad
        with pytest.raises(ValueError, match="at least 5 questions are timed"):
            bench._measure(str(tmp_path / "extrapolation" / "tiny"), 2, 8, {}, args.pop("queries"), "cpu", threads=1,
                           **args)


def test_bench_measures_interpolation_over_the_interpolation_backgrounds(tmp_path, monkeypatch):
    """A folder under ``interpolation/`` (or ``setting="interpolation"``) is timed in interpolation: training
    questions over a background of 3/4 of train (the trainer's draw: no question's fact in it), test questions
    over the interpolation evaluation background; the row says which setting it measured."""
    from tpar.graph.background import Background
    from tpar.runtime import bench

    _, kg = inspect_upload(tiny_world_csv(days=80), "tiny.csv")
    save_dataset(kg, tmp_path / "interpolation", "tiny")
    folder = str(tmp_path / "interpolation" / "tiny")
    assert bench.setting_of("interpolation/tiny") == "interpolation" and bench.setting_of("extrapolation/x") == (
        "extrapolation") and bench.setting_of(".", "interpolation") == "interpolation"
    made = []
    from_facts, for_evaluation = Background.from_facts.__func__, Background.for_evaluation.__func__

    def spy_facts(cls, facts, ne, nr, setting):
        made.append(("train", str(setting), len(facts)))
        return from_facts(cls, facts, ne, nr, setting)

    def spy_eval(cls, kg_, setting):
        made.append(("eval", str(setting), 0))
        return for_evaluation(cls, kg_, setting)

    monkeypatch.setattr(Background, "from_facts", classmethod(spy_facts))
    monkeypatch.setattr(Background, "for_evaluation", classmethod(spy_eval))
    n_train = len(kg.facts("train"))
    for setting in bench.SETTINGS:
        made.clear()
        row = bench._measure(folder, 2, 8, {}, 10, "cpu", threads=1, setting=setting)
        assert row["setting"] == setting and row["queries_timed"] == 10
        (_, train_setting, n_bg), (_, eval_setting, _) = [m for m in made if m[0] == "train"][:1] + \
            [m for m in made if m[0] == "eval"][:1]
        assert setting in train_setting and setting in eval_setting
        assert n_bg == (round(0.75 * n_train) if setting == "interpolation" else n_train)
    with pytest.raises(ValueError, match="one of extrapolation, interpolation"):
        bench._measure(folder, 2, 8, {}, 10, "cpu", threads=1, setting="unified")
