"""The teaching views in tpar: the walk-through names an answer at every stop (never a bare None) and
ends on the model's own answer with its probability; the time-encoding curves are drawn on a dense
grid, so they are smooth, and are the model's own Eqs. 2-3."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tpar.reasoning.explanation import Explainer
from tpar.reasoning.prediction import Predictor
from tpar.reasoning.teaching import EQUATIONS, GRID_PER_STEP, time_encoding_curves, walkthrough


@pytest.fixture(scope="module")
def explainer(sample_kg, sample_checkpoint):
    return Explainer(Predictor(sample_checkpoint, sample_kg, "auto"))


def test_the_walkthrough_starts_at_the_question_and_names_the_answer_at_every_step(explainer, sample_kg):
    q = dict(subject="Keleth", relation="Meet", time="2025-12-20", setting="extrapolation")
    pred = explainer.predictor.answer(_question(**q), 10)
    trace = explainer.trace(q["subject"], q["relation"], q["time"], setting=q["setting"], top=12, answer="Quenara")
    steps = walkthrough(trace, pred)
    L = explainer.predictor.model.cfg.num_layers
    assert [s.step for s in steps] == list(range(L + 1)) and [s.final for s in steps] == [False] * L + [True]
    first = steps[0]
    assert first.title == "The question" and first.best is None and first.reached == 1
    assert "(Keleth, Meet, ?, 2025-12-20)" in first.text and "Eqs. 2-3" in first.text
    assert first.standing().startswith("Nothing reached yet")
    for s, layer in zip(steps[1:], trace.layers):
        assert s.best is not None and "None" not in s.standing() + s.answer_standing()
        assert all(k in EQUATIONS for k in s.equations) and {"5", "7", "8"} <= set(s.equations)
        if not s.final:  # the highest provisional w·h of the step
            assert s.best_score == max(layer.scores.values()) and "provisional" in s.standing()
    last = steps[-1]
    top = pred.answers[0]
    assert (last.best, last.best_score, last.best_probability) == (top.entity, top.score, top.probability)
    assert last.calibrated == (pred.temperature is not None) and "9" in last.equations
    assert f"The model's answer: {top.entity}" in last.standing() and "probability" in last.standing()
    # the answer being explained: where it stands while it is not the leader, nothing when it leads
    for s in steps[1:]:
        if s.best == "Quenara":
            assert s.answer_standing() == ""
        elif s.answer_score is None:
            assert "not reached yet" in s.answer_standing()
        else:
            low, high = s.answer_rank_range
            assert s.answer_rank == (low + high) / 2
            assert f"rank {low if low == high else f'{low}–{high}'} among the entities reached so far" in s.answer_standing()


def test_time_encoding_curves_are_smooth_and_the_models_own(sample_checkpoint):
    model = sample_checkpoint.build_model()
    curves = time_encoding_curves(model, span=30)
    dt = np.array(curves.dt)
    assert dt[0] == -30 and dt[-1] == 30 and np.allclose(np.diff(dt), 1 / GRID_PER_STEP)
    assert set(range(-30, 31)) <= set(np.round(dt[np.isclose(dt, np.round(dt))]).astype(int))  # the integer steps too
    te = model.time_encoding
    per, lin = np.array(curves.periodic), np.array(curves.linear)
    for j, d in enumerate(curves.periodic_dims):
        want = np.sin(te.omega_p[d].item() * dt + te.phi_p[d].item())
        assert np.allclose(per[:, j], want, atol=1e-5)
        # smooth: between neighbouring points a wave of period P moves at most 2π/P per step
        assert np.abs(np.diff(per[:, j])).max() <= 2 * np.pi / curves.periods[j] / GRID_PER_STEP + 1e-5
    for j, d in enumerate(curves.linear_dims):
        assert np.allclose(lin[:, j], te.omega_np[d].item() * dt + te.phi_np[d].item(), atol=1e-4)


def _question(**kw):
    from tpar.graph.queries import Question

    return Question(kw["subject"], kw["relation"], kw["time"], "object", kw["setting"])


def test_a_question_without_evidence_names_no_answer_at_the_last_step(explainer):
    """As the Ask page shows no ranking for it, the walk-through's last step names no answer (the first of entities
    tied at a uniform guess is not one) and says why."""
    q = dict(subject="Torora", relation="Meet", time="2025-01-05", setting="extrapolation")
    pred = explainer.predictor.answer(_question(**q), 10)
    assert pred.no_evidence  # the sample world's first days: nothing before them to reason from
    followed = pred.answers[0].entity  # what the page follows by default: the first of the tied entities
    steps = walkthrough(explainer.trace(q["subject"], q["relation"], q["time"], setting=q["setting"], top=12,
                                        answer=followed), pred)
    last = steps[-1]
    assert last.final and last.no_evidence == pred.no_evidence and last.best is None
    assert last.standing().startswith("No answer: there is no evidence") and "probability" not in last.standing()
    assert last.answer == followed  # the answer followed: not told apart, no rank claimed
    assert "not told apart" in last.answer_standing() and "rank" not in last.answer_standing()


def test_a_step_led_by_the_questions_own_entity_says_that_no_path_explains_it(explainer):
    """Wherever the leading candidate is the question's own entity (its state kept by self-loops), the stop says
    so; where another entity leads, it says nothing of the kind."""
    q = dict(subject="Arovia", relation="Provide aid to", time="2026-01-10", setting="extrapolation")
    pred = explainer.predictor.answer(_question(**q), 10)
    steps = walkthrough(explainer.trace(q["subject"], q["relation"], q["time"], setting=q["setting"], top=12), pred)
    led = [s for s in steps[1:] if s.best == "Arovia"]
    assert led, "the question no longer shows the case: pick another"
    for s in steps[1:]:
        assert ("The best candidate here is Arovia itself" in s.text) == (s.best == "Arovia")


def test_the_time_encoding_of_a_one_dimensional_model_is_drawn_not_an_internal_error():
    """Audit 37: a model of d = 1 (which `tpar train --dim 1` makes) has one periodic dimension, fewer than the two
    periods of interest: the curves draw what there is (the page failed with StopIteration)."""
    from tpar.model.config import ModelConfig
    from tpar.model.network import TPAR

    model = TPAR(ModelConfig(dim=1, attn_dim=1, num_layers=1, num_relations=3, time_span=40))
    curves = time_encoding_curves(model, span=20)
    assert 1 <= len(curves.periodic_dims) <= 1 and len(curves.highlight) == 1
    assert len(curves.periodic[0]) == len(curves.periodic_dims)
