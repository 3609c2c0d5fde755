"""The model ranker and the trainer move a background to their device once and reuse the copy while the caller
passes the same background -- never a copy of another one.

Both once keyed that copy by ``id(background)``; both now use ``tpar.graph.background.DeviceCopy``. CPython reuses a freed object's address, so a background made
right after another was freed (a unified run validates extrapolation, then interpolation, each on a fresh
background) could carry the old one's id and be served its copy: interpolation questions scored on the
extrapolation background (seen as a two-process training run's validation MRR differing from one process's).
Patching ``id`` to a constant in the module makes that collision certain instead of a matter of the allocator."""

from __future__ import annotations

import pytest
import torch

import tpar.graph.background as background_module
import tpar.model.ranker as ranker_module
import tpar.training.trainer as trainer_module
from helpers import small_kg, small_model
from tpar.evaluation.protocol import evaluate, evaluation_queries
from tpar.graph.background import Background
from tpar.model.config import ModelConfig, RunConfig, TrainConfig
from tpar.model.ranker import ModelRanker


@pytest.fixture
def colliding_ids(monkeypatch):
    """Every object has the same id where the device copy is kept (``DeviceCopy``) and in its two users: what
    address reuse does to one pair of objects."""
    for module in (background_module, ranker_module, trainer_module):
        monkeypatch.setattr(module, "id", lambda obj: 0, raising=False)


def test_ranker_scores_each_background_it_is_given(colliding_ids):
    kg = small_kg()
    batch = evaluation_queries(kg, "valid")
    extrap, interp = (Background.for_evaluation(kg, s) for s in ("extrapolation", "interpolation"))
    ranker = ModelRanker(small_model(), "cpu", micro_batch=4)
    first = ranker.score(batch, extrap)
    second = ranker.score(batch, interp)
    fresh = ModelRanker(small_model(), "cpu", micro_batch=4).score(batch, interp)
    assert not torch.equal(first, fresh)  # the two backgrounds do give other scores: the check below can fail
    assert torch.equal(second, fresh)
    assert torch.equal(ranker.score(batch, extrap), first)  # and back


def test_evaluations_in_both_settings_with_one_ranker_match_fresh_rankers(colliding_ids):
    kg = small_kg()
    shared = ModelRanker(small_model(), "cpu", micro_batch=4)
    for setting in ("extrapolation", "interpolation", "extrapolation"):
        ours = evaluate(kg, shared, setting, "valid", progress=False)
        theirs = evaluate(kg, ModelRanker(small_model(), "cpu", micro_batch=4), setting, "valid", progress=False)
        assert (ours.optimistic == theirs.optimistic).all() and (ours.pessimistic == theirs.pessimistic).all()


def test_trainer_moves_each_plan_background_not_an_earlier_one(colliding_ids, tmp_path):
    kg = small_kg()
    run = RunConfig(ModelConfig(dim=6, attn_dim=3, num_layers=2),
                    TrainConfig(setting="unified", epochs=1, max_valid_queries=0, calibrate=False))
    trainer = trainer_module.Trainer(kg, run, tmp_path / "m.tpar", resume=False, progress=False, callbacks=None)
    facts = kg.facts("train")
    one = Background.from_facts(facts[:50], kg.num_entities, kg.num_relations, "interpolation")
    two = Background.from_facts(facts[50:], kg.num_entities, kg.num_relations, "interpolation")
    moved_one, moved_two = trainer._on_device(one), trainer._on_device(two)
    assert moved_two.index.num_edges == two.index.num_edges != moved_one.index.num_edges
    assert trainer._on_device(two) is moved_two  # the same background is moved once
