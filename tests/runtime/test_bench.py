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
    too_big = run_benchmarks(data_dir=str(tmp_path), configs=[("extrapolation/tiny", 2, 8, {})], queries=4,
                             progress=False, threads=1, train_batch=10 ** 6)
    assert "too few questions to time" in too_big["results"][0]["error"]
