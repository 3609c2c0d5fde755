"""Questions without evidence are said to be so, never ranked (issue #33): nothing reached, or every entity
about equally likely (a forecast far past the data, a question before it). The CLI and the Ask and Evidence
pages say so instead of listing "1. Island"; showcase forecasts dated inside the known range say they are
forecasts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD
from tpar.cli import main
from tpar.reasoning.prediction import NO_EVIDENCE_RATIO, Predictor, no_evidence_reason

ASK = ["predict", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), "--subject", "Danenn",
       "--relation", "Meet"]


def test_the_rule_no_evidence_means_no_entity_is_told_apart():
    scores = torch.tensor([0.0045, 0.0, 0.0, 0.0], dtype=torch.float64)
    probs = torch.softmax(scores, 0)
    assert float(probs.max() / probs.min()) < NO_EVIDENCE_RATIO
    assert "about 25" in no_evidence_reason(scores, probs, reached=4)
    assert "every entity scores the same" in no_evidence_reason(torch.zeros(4), torch.full((4,), 0.25), reached=4)
    assert "no temporal path" in no_evidence_reason(scores, probs, reached=1)
    strong = torch.tensor([2.5, 0.1, 0.0, 0.0], dtype=torch.float64)
    assert no_evidence_reason(strong, torch.softmax(strong, 0), reached=4) == ""
    # every reached entity below the unreached ones' 0 (walk-through 37: a table of ranks 198-204): no ranking
    below = torch.tensor([-2.0, -1.5, 0.0, 0.0, 0.0], dtype=torch.float64)
    why = no_evidence_reason(below, torch.softmax(below, 0), reached=2, unreached_on_top=3)
    assert "3-way tie of entities it has no evidence about" in why


def test_a_question_whose_reached_entities_all_score_below_the_unreached_is_no_ranking(sample_kg, sample_checkpoint,
                                                                                         monkeypatch):
    """The predictor itself: with every reached entity's score pushed below 0, the unreached entities head the
    ranking as a tie, and the prediction says there is no evidence instead of listing its least likely answers."""
    pred = Predictor(sample_checkpoint, sample_kg, "cpu")
    p = pred.predict("Danenn", "Meet", "2025-12-20")
    assert p.has_evidence
    real = pred.model.scores_and_reach

    def shifted(*a, **k):
        scores, reached = real(*a, **k)
        reached = reached.clone()
        reached[..., 1::2] = False  # half the entities unreached: score 0
        return torch.where(reached, scores - scores.abs().max() - 1.0, torch.zeros_like(scores)), reached

    monkeypatch.setattr(pred.model, "scores_and_reach", shifted)
    p = pred.predict("Danenn", "Meet", "2025-12-20")
    n = p.num_entities - p.reached
    assert p.unreached_rank[0] == 1 and f"{n:,}-way tie" in p.no_evidence


@pytest.mark.slow
@pytest.mark.parametrize("time, why", [("2026-03-01", "60 days after"), ("2024-12-01", "before the first")])
def test_a_question_far_from_the_data_is_no_ranking(sample_kg, sample_checkpoint, capsys, time, why):
    p = Predictor(sample_checkpoint, sample_kg, "cpu").predict("Danenn", "Meet", time)
    probs = [a.probability for a in p.answers]
    assert p.no_evidence and max(probs) <= NO_EVIDENCE_RATIO * min(probs)  # the case the rule names
    assert main(ASK + ["--time", time]) == 0
    out = capsys.readouterr().out
    assert "no evidence:" in out and why in out and "No ranking is shown" in out
    assert not re.search(r"^\s*1\. ", out, re.M)  # no "1. Island"
    assert main(ASK + ["--time", time, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["has_evidence"] is False and d["no_evidence"] == p.no_evidence


def test_a_question_with_evidence_is_still_ranked(sample_kg, sample_checkpoint, capsys):
    p = Predictor(sample_checkpoint, sample_kg, "cpu").predict("Danenn", "Meet", "2025-12-20")
    assert p.has_evidence and p.answers[0].probability > NO_EVIDENCE_RATIO * p.answers[-1].probability
    assert main(ASK + ["--time", "2025-12-20", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "no evidence" not in out and re.search(r"^\s*1\. Island", out, re.M)


@pytest.fixture
def app_test(monkeypatch, tmp_path):
    pytest.importorskip("streamlit")
    from helpers import open_app

    open_app({}, monkeypatch=monkeypatch, tmp_path=tmp_path)  # a fresh app: no benchmarks, nothing cached
    return open_app


def shown(elements) -> str:
    return re.sub(r"\\(.)", r"\1", " ".join(e.value for e in elements)).replace("\u2060", "")


@pytest.mark.slow
def test_the_ask_and_evidence_pages_say_no_evidence_instead_of_ranking(app_test):
    at = app_test({"subject": "Danenn", "relation": "Meet", "time": "2026-03-01"}).run()
    assert not at.exception
    assert "No evidence for this question" in shown(at.info) and not at.dataframe
    at.switch_page("views/evidence.py").run()
    assert not at.exception and "No evidence for this question" in shown(at.info)
    assert "not told apart from the others" in shown(at.info)
    said = shown(at.markdown)
    assert "not ranked, as the question has no evidence" in said and "Why " not in said  # walk-through 37 #8
    picker = at.selectbox(key="w_answer")
    assert not re.match(r"\d", picker.format_func(picker.value))  # no "1. Island" in the answer picker either
    at = app_test({"subject": "Danenn", "relation": "Meet", "time": "2025-12-20"}).run()
    assert "No evidence" not in shown(at.info) and at.dataframe[0].value.iloc[0]["entity"] == "Island"


def test_a_showcase_forecast_inside_the_known_range_says_it_is_one(app_test):
    at = app_test({}).run()  # opens on the escalation showcase: a forecast dated 2025-12-18, inside the range
    assert not at.exception and at.session_state["setting"] == "extrapolation"
    caption = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "Setting: **extrapolation**, chosen although 2025-12-18 lies inside the known time range" in caption
    options = at.selectbox(key="example").options  # each named by what it shows; the caption says the setting
    assert "escalation: a threatened country mobilises against the threatener within 1-3 days" in options
    assert any(o.startswith("reciprocity:") for o in options)


def test_a_question_that_reaches_no_other_entity_does_not_say_1_of_n_reached(capsys):
    """Audit 37: 'tpar predict' said '1 of 1 entities reached by temporal paths' beside 'no temporal path leads from
    the question's entity to any other entity'."""
    assert main(ASK + ["--time", "2025-01-01", "--setting", "extrapolation"]) == 0  # the data's first day
    out = capsys.readouterr().out
    assert "no temporal path leads" in out
    assert "no entity but the question's own reached by temporal paths" in out and " 1 of " not in out
    assert main(ASK + ["--time", "2025-01-02", "--setting", "extrapolation"]) == 0  # one more entity: counted
    assert "2 of 280 entities reached by temporal paths" in capsys.readouterr().out
