"""Calibration and answer sets: the temperature fit recovers a known miscalibration, ECE/Brier/NLL
match hand computations, split-conformal sets cover at their level on exchangeable data, and a
trained checkpoint carries its calibration into predictions and `tpar evaluate --json`."""

from __future__ import annotations

import json
import math

import pytest
import torch

from tpar.evaluation.calibration import (Calibration, conformal_threshold, filtered_logits, fit_temperature, held_out,
                                         metrics, stored)
from tpar.reasoning.prediction import probability_text


def synthetic(n: int, E: int, true_t: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits whose answers are drawn from softmax(logits / true_t): a model over-confident by true_t."""
    g = torch.Generator().manual_seed(seed)
    logits = 3 * torch.randn(n, E, generator=g, dtype=torch.float64)
    answers = torch.multinomial(torch.softmax(logits / true_t, 1), 1, generator=g).squeeze(1)
    return logits, answers


@pytest.mark.parametrize("true_t", [0.5, 1.0, 2.5])
def test_the_temperature_fit_recovers_a_known_miscalibration(true_t):
    logits, answers = synthetic(6000, 20, true_t, seed=1)
    assert fit_temperature(logits, answers) == pytest.approx(true_t, rel=0.08)


def test_scaling_lowers_nll_and_ece_of_a_miscalibrated_model():
    logits, answers = synthetic(6000, 20, 2.5, seed=2)
    t = fit_temperature(logits, answers)
    before, _ = metrics(logits, answers, 1.0)
    after, _ = metrics(logits, answers, t)
    assert after.nll < before.nll and after.ece < before.ece and after.ece < 0.03


def test_metrics_by_hand_on_a_tiny_case():
    # two questions, three entities; probabilities at T = 1: [0.7, 0.2, 0.1] and [0.5, 0.25, 0.25]
    p = torch.tensor([[0.7, 0.2, 0.1], [0.5, 0.25, 0.25]], dtype=torch.float64)
    logits, answers = p.log(), torch.tensor([0, 2])
    m, rel = metrics(logits, answers, 1.0, bins=10)
    assert m.nll == pytest.approx(-(math.log(0.7) + math.log(0.25)) / 2)
    brier_1 = 0.3 ** 2 + 0.2 ** 2 + 0.1 ** 2
    brier_2 = 0.5 ** 2 + 0.25 ** 2 + 0.75 ** 2
    assert m.brier == pytest.approx((brier_1 + brier_2) / 2)
    # top-1: question 1 right at confidence 0.7 (bin 7), question 2 wrong at 0.5 (bin 5)
    assert m.accuracy == 0.5 and m.confidence == pytest.approx(0.6)
    assert m.ece == pytest.approx(0.5 * abs(1 - 0.7) + 0.5 * abs(0 - 0.5))
    assert rel.counts[5] == 1 and rel.counts[6] + rel.counts[7] == 1 and sum(rel.counts) == 2  # 0.7 sits on an edge


def test_the_filter_removes_other_true_answers_from_the_distribution():
    scores = torch.tensor([[2.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    out = filtered_logits(scores, torch.tensor([0]), torch.tensor([0]))
    assert out[0, 0] == -math.inf and torch.isfinite(out[1]).all()
    m, _ = metrics(out, torch.tensor([1, 2]))
    assert m.nll == pytest.approx(-(math.log(math.e / (math.e + 1)) + math.log(1 / 3)) / 2)


@pytest.mark.parametrize("level", [0.8, 0.9, 0.95])
def test_conformal_sets_cover_at_their_level_on_exchangeable_data(level):
    logits, answers = synthetic(8000, 30, 1.0, seed=3)
    cal_l, cal_a, test_l, test_a = logits[:3000], answers[:3000], logits[3000:], answers[3000:]
    thr = conformal_threshold(cal_l, cal_a, 1.0, level)
    p = torch.softmax(test_l, 1)
    covered = float((p[torch.arange(len(test_a)), test_a] >= thr).double().mean())
    assert level - 0.02 <= covered <= level + 0.025
    sizes = (p >= thr).sum(1).double().mean()
    assert 1 <= sizes < 30  # informative: not every entity


def test_too_few_questions_for_a_level_give_the_whole_set():
    logits, answers = synthetic(5, 4, 1.0, seed=4)
    assert conformal_threshold(logits, answers, 1.0, 0.95) == 0.0  # ⌈6 · 0.95⌉ = 6 > 5


def test_a_calibration_round_trips_and_a_bad_one_is_ignored():
    logits, answers = synthetic(500, 10, 1.5, seed=5)
    from tpar.evaluation.calibration import CalibrationMetrics

    m, _ = metrics(logits, answers)
    cal = Calibration("extrapolation", 1.5, "valid", 500, 0, m, m, {"0.9": 0.01})
    assert Calibration.from_dict(json.loads(json.dumps(cal.to_dict()))) == cal
    assert stored({"calibration": {"extrapolation": cal.to_dict()}}, "extrapolation") == cal
    assert stored({"calibration": {"extrapolation": {"temperature": "x"}}}, "extrapolation") is None
    assert stored({}, "interpolation") is None
    assert isinstance(m, CalibrationMetrics)


def test_a_calibration_says_when_it_is_rough_or_the_model_guesses():
    from tpar.evaluation.calibration import MIN_RELIABLE_QUERIES

    def fitted(logits, answers):
        t = fit_temperature(logits, answers)
        m, _ = metrics(logits, answers, t)
        return Calibration("extrapolation", t, "valid", len(answers), 0, m, m, {}, logits.shape[1])

    good = fitted(*synthetic(2000, 20, 1.5, seed=6))
    assert good.caveats() == []
    few = fitted(*synthetic(MIN_RELIABLE_QUERIES - 1, 20, 1.5, seed=7))
    assert len(few.caveats()) == 1 and f"only {MIN_RELIABLE_QUERIES - 1} valid questions" in few.caveats()[0]
    g = torch.Generator().manual_seed(8)  # scores unrelated to the answers: softmax(f / T) tends to uniform
    noise = fitted(torch.randn(500, 12, generator=g, dtype=torch.float64), torch.randint(0, 12, (500,), generator=g))
    assert noise.temperature > 10 and any("guessing" in c for c in noise.caveats())
    assert fitted(*synthetic(200, 12, 1.0, seed=9)).caveats() == []  # informative scores, 12 entities: no caveat


def test_training_calibrates_and_predictions_and_evaluate_use_it(tmp_path, capsys):
    from helpers import tiny_world_csv
    from tpar.cli import main
    from tpar.data.loading import load_dataset
    from tpar.graph.queries import Question
    from tpar.model.checkpoint import Checkpoint
    from tpar.model.config import ModelConfig, RunConfig, TrainConfig
    from tpar.training.trainer import train
    from tpar.reasoning.prediction import Predictor

    data = tmp_path / "ring.csv"
    data.write_text(tiny_world_csv(days=80))
    kg = load_dataset(data)
    run = RunConfig(ModelConfig(dim=8, attn_dim=3, num_layers=2, dropout=0.0),
                    TrainConfig(setting="extrapolation", lr=5e-3, batch_size=8, micro_batch=8, epochs=1,
                                max_valid_queries=0))
    train(kg, run, tmp_path / "m.tpar", progress=False)
    ck = Checkpoint.load(tmp_path / "m.tpar")
    cal = stored(ck.extra, "extrapolation")
    assert cal is not None and cal.temperature > 0 and set(cal.thresholds) == {"0.8", "0.9", "0.95"}
    assert cal.queries < 100 and cal.caveats()  # the tiny ring's valid split is small, and the note says so
    p = Predictor(ck, kg, "cpu")
    pred = p.predict("P0", "meets", "2024-03-25", setting="extrapolation", top_k=None, coverage=0.9)
    assert pred.temperature == cal.temperature
    assert all(c in pred.warnings for c in cal.caveats())  # e.g. few valid questions: shown with every answer
    prepared = p.prepare(Question("P0", "meets", "2024-03-25", "object", "extrapolation"))
    with torch.no_grad():
        scores = p.model(prepared.batch, prepared.background)[0].double()
    calibrated = torch.softmax(scores / cal.temperature, 0)
    for a in pred.answers:
        assert a.probability == pytest.approx(float(calibrated[a.entity_id]), rel=1e-6)
    members = {kg.entities.name(int(e)) for e in torch.nonzero(calibrated >= cal.thresholds["0.9"]).squeeze(1)}
    assert set(pred.answer_set) == members and pred.answer_set_size == len(members)
    # what the set holds of this question's probability, computed from the paper's softmax, not the predictor's
    mass = float(calibrated[calibrated >= cal.thresholds["0.9"]].sum())
    assert pred.answer_set_probability == pytest.approx(mass, rel=1e-6)
    assert pred.answer_set_threshold == pytest.approx(cal.thresholds["0.9"])
    note = pred.answer_set_note()
    assert "on average over questions, not for each one" in note and probability_text(mass) in note
    assert ("less than 90%: it is unsure here" in note) == (mass < 0.9 and len(members) < kg.num_entities)
    capsys.readouterr()
    assert main(["evaluate", "--checkpoint", str(tmp_path / "m.tpar"), "--data", str(data), "--quiet",
                 "--json", str(tmp_path / "e.json")]) == 0
    block = json.loads((tmp_path / "e.json").read_text())["calibration"]
    assert block["temperature"] == cal.temperature and block["fitted_on"]["source"].startswith("stored in the checkpoint (fitted on ")
    for k in ("ece", "brier", "nll"):
        assert k in block["before"] and k in block["after"]
    assert set(block["coverage"]) == {"0.8", "0.9", "0.95"}
    # the sets' size distribution beside their coverage: on valid (stored) and on the evaluated split
    assert set(cal.set_sizes) == set(cal.thresholds) and set(block["set_sizes"]) == set(block["coverage"])
    for k, st in list(cal.set_sizes.items()) + list(block["set_sizes"].items()):
        assert 0 <= st["median"] <= st["p90"] <= kg.num_entities
    assert all(block["set_sizes"][k]["mean"] == pytest.approx(block["mean_set_size"][k]) for k in block["coverage"])
    assert main(["predict", "--checkpoint", str(tmp_path / "m.tpar"), "--data", str(data), "--subject", "P0",
                 "--relation", "meets", "--time", "2024-03-25", "--coverage", "0.9"]) == 0
    out = capsys.readouterr().out
    assert f"such sets held median {cal.set_sizes['0.9']['median']:,.0f}, 90th percentile" in out
    # how many questions the probabilities were calibrated on, as the Ask page says (walk-through 36 F11)
    assert f"fitted on {cal.queries:,} valid question" in out.split("probabilities: ")[1].splitlines()[0]


def test_answer_set_sizes_on_valid_are_reported_beside_coverage():
    """Issue #33: a mean set size hides how sizes vary; the calibration keeps the median and 90th percentile
    of the sets' sizes on its own split, recomputed here from the thresholds, and round-trips them."""
    from tpar.evaluation.calibration import probabilities, set_size_stats, set_size_text

    assert set_size_stats(torch.tensor([1, 1, 2, 3, 100])) == {"mean": 21.4, "median": 2.0, "p90": 100.0}
    assert set_size_stats(torch.tensor(list(range(1, 11)))) == {"mean": 5.5, "median": 5.0, "p90": 9.0}
    assert set_size_text({"mean": 32.46, "median": 4.0, "p90": 140.0}, 7128) == \
        "median 4, 90th percentile 140, mean 32.5 (of 7,128)"
    # a set of every candidate rules nothing out: how often that happens is said beside the sizes
    every = set_size_stats(torch.tensor([3, 5, 5, 2]), candidates=torch.tensor([3, 5, 6, 4]))
    assert every == {"mean": 3.75, "median": 3.0, "p90": 5.0, "every": 0.5}
    assert set_size_text(every, 6, "entities") == \
        "median 3, 90th percentile 5, mean 3.8 entities (of 6); every candidate on 50.0% of the questions"
    logits, answers = synthetic(3000, 30, 1.0, seed=11)
    t = fit_temperature(logits, answers)
    m, _ = metrics(logits, answers, t)
    thresholds = {f"{lv:g}": conformal_threshold(logits, answers, t, lv) for lv in (0.8, 0.9)}
    p = probabilities(logits, t)
    for k, thr in thresholds.items():
        sizes = sorted((p >= thr).sum(1).tolist())
        want = set_size_stats(torch.tensor(sizes))
        assert want["median"] == sizes[(len(sizes) - 1) // 2] and want["p90"] == sizes[int(0.9 * len(sizes)) - 1]
        assert want["median"] < want["p90"] < 30  # sizes vary: the distribution says so, a mean alone does not
    cal = Calibration("extrapolation", t, "valid", 3000, 0, m, m, thresholds, 30,
                      {k: set_size_stats((p >= thr).sum(1)) for k, thr in thresholds.items()})
    assert Calibration.from_dict(json.loads(json.dumps(cal.to_dict()))) == cal
    old = cal.to_dict()
    del old["set_sizes"]  # calibrations stored before: no sizes, still read
    assert Calibration.from_dict(old).set_sizes == {}


def test_a_top_answer_map_fixes_what_temperature_cannot_and_keeps_the_order():
    """Scores whose top answer is right far more often than any temperature can say: the isotonic map of the
    top probability brings the ECE down on held-out questions, never changes which answer is on top, leaves a
    tied top alone, and the probabilities still sum to 1."""
    from tpar.evaluation.calibration import (apply_top_map, cross_fitted_gain, fit_temperature, fit_top_map,
                                             metrics, probabilities)

    g = torch.Generator().manual_seed(3)
    n, E = 4000, 30
    logits = torch.randn(n, E, generator=g, dtype=torch.float64)
    answers = torch.randint(0, E, (n,), generator=g)
    margin = torch.rand(n, generator=g, dtype=torch.float64)
    right = torch.rand(n, generator=g, dtype=torch.float64) < 0.2 + 0.75 * margin  # accuracy grows with the margin
    top = torch.where(right, answers, (answers + 1) % E)
    logits[torch.arange(n), top] = logits.max(1).values + 0.3 * margin  # a small lead: low confidence, often right
    fit, check = slice(0, n // 2), slice(n // 2, n)
    t = fit_temperature(logits[fit], answers[fit])
    p = probabilities(logits[fit], t)
    knots = fit_top_map(p.max(1).values, (p.argmax(1) == answers[fit]).double())
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(knots, knots[1:])) and len(knots) <= 200
    scaled, _ = metrics(logits[check], answers[check], t)
    mapped, _ = metrics(logits[check], answers[check], t, top_map=knots)
    assert mapped.ece < scaled.ece - 0.02, (scaled.ece, mapped.ece)
    q = probabilities(logits[check], t, knots)
    assert torch.equal(q.argmax(1), probabilities(logits[check], t).argmax(1))
    assert torch.allclose(q.sum(1), torch.ones(len(q), dtype=torch.float64))
    assert cross_fitted_gain(logits, answers, t) > 0.005
    tied = torch.tensor([[0.4, 0.4, 0.2]], dtype=torch.float64)
    assert torch.equal(apply_top_map(tied, [(0.0, 0.9), (1.0, 1.0)]), tied)


def test_a_stored_top_answer_map_round_trips_and_a_broken_one_is_refused(sample_checkpoint):
    from tpar.evaluation.calibration import Calibration

    d = dict(sample_checkpoint.extra["calibration"]["extrapolation"])
    d |= {"top_map": [[0.1, 0.05], [0.5, 0.6], [0.9, 0.95]], "top_map_gain": 0.02}
    cal = Calibration.from_dict(d)
    assert cal.top_map == [(0.1, 0.05), (0.5, 0.6), (0.9, 0.95)] and "top answer" in cal.method
    assert Calibration.from_dict(cal.to_dict()) == cal
    for broken in ([[0.5, 0.6], [0.1, 0.7]], [[0.2, 1.5]], [[float("nan"), 0.2]]):
        with pytest.raises(ValueError, match="top-answer map"):
            Calibration.from_dict(d | {"top_map": broken})


def _nll(logits: torch.Tensor, answers: torch.Tensor, t: float) -> float:
    """Mean −log softmax(logits / t)[answer], straight from the definition (−inf entries: probability 0)."""
    lp = torch.log_softmax(logits.double() / t, dim=1)
    return float(-lp.gather(1, answers.view(-1, 1)).mean())


def _brute_force_temperature(logits: torch.Tensor, answers: torch.Tensor) -> float:
    """A grid over log T in T_BOUNDS, then golden-section search around the best grid point."""
    from tpar.evaluation.calibration import T_BOUNDS

    grid = torch.linspace(math.log(T_BOUNDS[0]), math.log(T_BOUNDS[1]), 241).tolist()
    k = min(range(len(grid)), key=lambda i: _nll(logits, answers, math.exp(grid[i])))
    a, b = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
    r = (math.sqrt(5) - 1) / 2
    for _ in range(60):
        c, d = b - r * (b - a), a + r * (b - a)
        if _nll(logits, answers, math.exp(c)) < _nll(logits, answers, math.exp(d)):
            b = d
        else:
            a = c
    return math.exp((a + b) / 2)


@pytest.mark.parametrize("case", ["over-confident", "under-confident", "sharp", "unreachable entries",
                                  "answers at random", "answers always on top"])
def test_the_temperature_is_the_nll_minimum_found_by_brute_force(case):
    """Newton on β = 1/T against a grid + golden-section search of the NLL itself, including the bounds (answers
    at random: T → its upper bound; answers always on top by a margin: T → its lower bound) and −inf entries."""
    g = torch.Generator().manual_seed(11)
    logits = 3 * torch.randn(800, 60, generator=g, dtype=torch.float64)
    true_t = {"over-confident": 2.5, "under-confident": 0.4, "sharp": 0.05}.get(case, 1.0)
    answers = torch.multinomial(torch.softmax(logits / true_t, 1), 1, generator=g).squeeze(1)
    if case == "unreachable entries":
        mask = torch.rand(logits.shape, generator=g) < 0.3
        mask[torch.arange(len(answers)), answers] = False
        logits = logits.masked_fill(mask, float("-inf"))
    elif case == "answers at random":
        answers = torch.randint(0, 60, (800,), generator=g)
    elif case == "answers always on top":
        logits[torch.arange(800), answers] = logits.max(1).values + 1.0
    t = fit_temperature(logits, answers)
    ref = _brute_force_temperature(logits, answers)
    assert _nll(logits, answers, t) <= _nll(logits, answers, ref) + 1e-9
    if case == "answers always on top":  # the NLL falls to 0 (in float64, below T ≈ 0.03): T is not identified
        assert t < 0.05 and ref < 0.05
    else:
        assert t == pytest.approx(ref, rel=1e-3)


@pytest.mark.parametrize("offset", [0.0, 3.7, 1e6])
def test_a_flat_nll_keeps_temperature_one(offset):
    """Every logit of a question equal (rows at different levels too): the NLL is log E whatever T, and the fit
    stays at T = 1 (no drift on rounding noise: before rows were shifted, 3.7·q gave T 0.67 and 1e6 gave 1.9)."""
    rows = offset * torch.arange(50, dtype=torch.float64).view(-1, 1)
    assert fit_temperature(rows.repeat(1, 7), torch.arange(50) % 7) == 1.0


def test_the_temperature_ignores_a_common_offset_and_rows_without_a_finite_logit():
    """softmax is shift-invariant per question, so the fit is too (an offset of 1e7 once gave T ≈ 1.01 instead
    of 2.5, the moments losing their precision); a question whose every logit is −inf says nothing about T and
    is left out (it once made every moment NaN and the fit return T ≈ 1); nothing left: T = 1."""
    g = torch.Generator().manual_seed(0)
    logits = 3 * torch.randn(400, 30, generator=g, dtype=torch.float64)
    answers = torch.multinomial(torch.softmax(logits / 2.5, 1), 1, generator=g).squeeze(1)
    t = fit_temperature(logits, answers)
    assert 2.0 < t < 3.0
    for shift in (1e7, 1e9, 1e6 * torch.randn(400, 1, generator=g, dtype=torch.float64)):
        assert fit_temperature(logits + shift, answers) == pytest.approx(t, rel=1e-6)
    dead = torch.cat([logits, torch.full((3, 30), float("-inf"), dtype=torch.float64)])
    assert fit_temperature(dead, torch.cat([answers, torch.tensor([0, 4, 9])])) == pytest.approx(t, rel=1e-9)
    assert fit_temperature(torch.full((5, 30), float("-inf")), torch.arange(5)) == 1.0
    assert fit_temperature(torch.zeros(0, 30, dtype=torch.float64), torch.zeros(0, dtype=torch.long)) == 1.0


def test_evaluate_gathers_ranks_and_calibration_in_one_scoring_pass(tmp_path, monkeypatch, sample_kg,
                                                                    sample_checkpoint):
    """`tpar evaluate` on test scores each question once (the calibration figures ride on the ranking pass) and
    reports what a separate held-out pass computes."""
    from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD
    from tpar.cli import main
    from tpar.evaluation.protocol import evaluation_queries
    from tpar.model.ranker import ModelRanker

    scored = []
    real = ModelRanker.score
    monkeypatch.setattr(ModelRanker, "score", lambda self, batch, bg: scored.append(len(batch)) or real(self, batch, bg))
    out = tmp_path / "e.json"
    assert main(["evaluate", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), "--setting",
                 "extrapolation", "--quiet", "--json", str(out)]) == 0
    n = len(evaluation_queries(sample_kg, "test"))
    assert sum(scored) == n  # once each: before, the calibration report scored the split a second time
    block = json.loads(out.read_text())["calibration"]
    cal = stored(sample_checkpoint.extra, "extrapolation")
    assert cal is not None and block["fitted_on"]["source"].startswith("stored in the checkpoint (fitted on ")
    alone = held_out(sample_kg, ModelRanker(sample_checkpoint.build_model(), "cpu"), cal, "test").to_dict()
    assert sum(scored) == 2 * n  # the separate pass did score
    for part in ("before", "after"):
        for k, v in alone[part].items():
            assert block[part][k] == pytest.approx(v, rel=1e-9, abs=1e-12), (part, k)
    assert block["coverage"] == pytest.approx(alone["coverage"]) and block["set_sizes"] == alone["set_sizes"]


def test_evaluate_reports_calibration_on_the_questions_it_ranks(tmp_path, sample_kg, sample_checkpoint):
    """With --max-queries the calibration figures are those of the ranked subset (not the whole split), and
    they are the figures :func:`metrics` gives on that subset's logits -- a check apart from the collector."""
    from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD
    from tpar.cli import main
    from tpar.evaluation.calibration import collect
    from tpar.model.ranker import ModelRanker

    out = tmp_path / "e.json"
    assert main(["evaluate", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), "--setting",
                 "extrapolation", "--max-queries", "60", "--seed", "3", "--quiet", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    block = d["calibration"]
    assert d["num_queries"] == 60 and block["before"]["queries"] == block["after"]["queries"] == 60
    cal = stored(sample_checkpoint.extra, "extrapolation")
    logits, answers = collect(sample_kg, ModelRanker(sample_checkpoint.build_model(), "cpu"), "extrapolation", "test",
                              max_queries=60, seed=3)
    for part, (temp, top_map) in (("before", (1.0, None)), ("after", (cal.temperature, cal.top_map))):
        want = metrics(logits, answers, temp, top_map=top_map)[0].to_dict()
        for k, v in want.items():
            assert block[part][k] == pytest.approx(v, rel=1e-9, abs=1e-12), (part, k)


def test_no_calibration_is_fitted_that_cannot_be_reported(monkeypatch, sample_kg, sample_checkpoint):
    """The one rule of the CLI and the app (``held_out_collector``): no calibration is fitted on valid for a
    split without questions (the evaluation refuses it, at once), none is reported on valid itself (in-sample),
    and a checkpoint without a stored calibration on data without valid questions gets no report, with the
    reason, instead of a failed command; a stored one is used, else one is fitted on valid and said so."""
    from dataclasses import replace

    import tpar.evaluation.calibration as calibration
    from tpar.evaluation.calibration import held_out_collector

    monkeypatch.setattr(calibration, "calibrate", lambda *a, **k: pytest.fail("calibrated on valid"))
    no_test = replace(sample_kg, splits={k: v for k, v in sample_kg.splits.items() if k != "test"})
    assert held_out_collector(no_test, None, {}, "extrapolation", "test") == (None, "")
    no_valid = replace(sample_kg, splits={k: v for k, v in sample_kg.splits.items() if k != "valid"})
    collector, note = held_out_collector(no_valid, None, {}, "extrapolation", "test")
    assert collector is None and "no calibration figures for extrapolation" in note
    collector, note = held_out_collector(sample_kg, None, sample_checkpoint.extra, "extrapolation", "valid")
    assert collector is None and "fitted there" in note
    collector, note = held_out_collector(sample_kg, None, sample_checkpoint.extra, "extrapolation", "test")
    assert note == "" and collector.source.startswith("stored in the checkpoint (fitted on ")
    assert collector.calibration.temperature == stored(sample_checkpoint.extra, "extrapolation").temperature
    fitted, said = stored(sample_checkpoint.extra, "extrapolation"), []
    monkeypatch.setattr(calibration, "calibrate", lambda kg, ranker, setting, **k: (said.append(k), fitted)[1])
    collector, note = held_out_collector(sample_kg, None, {}, "extrapolation", "test", on_fit=lambda: said.append("on"))
    assert said == ["on", {"split": "valid", "max_queries": calibration.FIT_QUERIES}] and note == ""
    assert collector.calibration is fitted and "fitted now" in collector.source


def test_the_answer_set_text_for_empty_single_and_foreign_sets():
    """The lead and note say what the set holds whatever its size: none (no entity reaches the threshold),
    one entity, or a level calibrated on other data (named right after "answer set")."""
    from tpar.reasoning.prediction import Prediction

    BASE = dict(subject="s", relation="r", direction="object", time="t", time_step=0, setting="extrapolation",
                answers=[], reached=5)

    def pred(size: int, mass: float | None, **kw) -> Prediction:
        return Prediction(**BASE, num_entities=280, coverage=0.9,
                          answer_set=["x"] * size, answer_set_size=size, answer_set_probability=mass,
                          answer_set_threshold=0.004, **kw)

    empty = pred(0, 0.0)
    assert empty.answer_set_lead() == "the 90% answer set: empty (no entity reaches its threshold)"
    assert "no entity reaches p ≥ 0.40%: the set is empty" in empty.answer_set_note()  # a % as in the answers table
    one = pred(1, 0.3)
    assert one.answer_set_lead() == "the 90% answer set: 1 of 280 entities"
    assert "279 entities left out share the other 70.0%" in one.answer_set_note()
    all_but_one = pred(279, 0.5)
    assert "the 1 entity left out has the other 50.0%" in all_but_one.answer_set_note()
    assert pred(3, 0.95).answer_set_note().endswith("puts 95.0% of its probability on the set.")
    every = pred(280, 0.9999999).answer_set_note()  # a float sum a hair under 1: not "> 99.9%"
    assert "the set holds every entity, so all of the model's probability" in every and "99.9" not in every
    assert pred(3, 0.2).answer_set_lead("ICEWS14") == "the 90% answer set of ICEWS14: 3 of 280 entities"
    none = Prediction(**BASE, num_entities=280)
    assert none.answer_set_note() == "" and none.answer_set_lead() == ""


def test_a_fit_that_sharpens_without_limit_is_not_used(monkeypatch, sample_kg):
    """Each valid answer tied at the top with others (a guessing model whose unreached entities all score 0): the NLL
    keeps falling as T -> 0, so the fit runs to its lower bound -- which then gave "> 99.9%" to a score of 0.02 on
    other questions (walk-through 37). Such a fit is refused: T = 1 (raw softmax), said in the caveats, stored and
    read back; a calibration stored with T at the bound (made before) is not used at all."""
    import tpar.evaluation.calibration as calibration
    from tpar.evaluation.calibration import T_BOUNDS, calibrate

    g = torch.Generator().manual_seed(3)
    n, E = 40, 30
    logits = -torch.rand(n, E, generator=g, dtype=torch.float64) - 0.5
    logits[:, :10] = 0.0  # ten entities tied at the top score on every question ...
    answers = torch.randint(0, 10, (n,), generator=g)  # ... and the answer always one of them
    assert fit_temperature(logits, answers) < 0.01  # what the fit alone does: towards its bound, as far as it gets
    monkeypatch.setattr(calibration, "collect", lambda *a, **k: (logits, answers))
    cal = calibrate(sample_kg, None, "extrapolation")
    assert cal.temperature == 1.0 and cal.sharpening_refused
    assert any("sharpened the scores without limit" in c and "T = 1" in c for c in cal.caveats())
    assert torch.allclose(cal.probabilities(logits), torch.softmax(logits, 1))
    back = Calibration.from_dict(json.loads(json.dumps(cal.to_dict())))
    assert back == cal and back.sharpening_refused
    old = {**cal.to_dict(), "temperature": T_BOUNDS[0], "sharpening_refused": False}
    assert stored({"calibration": {"extrapolation": old}}, "extrapolation") is None
    with pytest.raises(ValueError, match="lower bound"):
        Calibration.from_dict(old)
