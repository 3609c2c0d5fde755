"""Baselines against plain per-query Python written here from their definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers import make_kg, random_facts
from tpar.graph.background import Background
from tpar.evaluation.baselines import FrequencyBaseline, RecurrencyBaseline, fit_recurrency
from tpar.evaluation.protocol import evaluate
from tpar.graph.queries import make_queries


def _kg(seed=0):
    rng = np.random.default_rng(seed)
    facts = random_facts(rng, 900, ne=15, nr=3, nt=20)
    facts = facts[np.argsort(facts[:, 3], kind="stable")]
    return make_kg(facts[:700], facts[700:800], facts[800:], num_entities=15, num_relations=3)


def _with_inverse(f, R):
    return np.concatenate([f, f[:, [2, 1, 0, 3]] + [0, R, 0, 0]])


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
def test_frequency_matches_definition(setting):
    kg = _kg()
    bg = Background.for_evaluation(kg, setting)
    batch = make_queries(kg.facts("test"), 3)
    got = FrequencyBaseline().score(batch, bg)
    hist = _with_inverse(kg.all_facts() if setting == "extrapolation" else kg.facts("train"), 3)
    for i in range(len(batch)):
        s, r, t, a = (int(x[i]) for x in (batch.subject, batch.relation, batch.time, batch.answer))
        m = (hist[:, 0] == s) & (hist[:, 1] == r)
        if setting == "extrapolation":
            m &= hist[:, 3] < t
        want = np.bincount(hist[m, 2], minlength=15).astype(float)
        if setting == "interpolation":  # own fact hidden
            want[a] -= ((hist[:, 0] == s) & (hist[:, 1] == r) & (hist[:, 2] == a) & (hist[:, 3] == t)).sum()
        assert got[i].tolist() == want.tolist()


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
def test_recurrency_matches_definition(setting):
    kg = _kg(1)
    bg = Background.for_evaluation(kg, setting)
    batch = make_queries(kg.facts("test"), 3)
    lam, alpha = 0.3, 0.7
    got = RecurrencyBaseline(lmbda=lam, alpha=alpha).score(batch, bg)
    hist = _with_inverse(kg.all_facts() if setting == "extrapolation" else kg.facts("train"), 3)
    tmin, tmax = hist[:, 3].min(), hist[:, 3].max()
    for i in range(len(batch)):
        s, r, t, a = (int(x[i]) for x in (batch.subject, batch.relation, batch.time, batch.answer))
        visible = np.ones(len(hist), bool)
        if setting == "extrapolation":
            visible &= hist[:, 3] < t
        else:
            own = (hist[:, 3] == t) & (((hist[:, 0] == s) & (hist[:, 1] == r) & (hist[:, 2] == a)) |
                                       ((hist[:, 0] == a) & (hist[:, 1] == (r + 3) % 6) & (hist[:, 2] == s)))
            visible &= ~own
        h = hist[visible]
        ks = np.arange(tmin, tmax + 1)
        if setting == "extrapolation":
            ks = ks[ks < t]
        denom = max(np.sum(2.0 ** (-lam * np.abs(t - ks))), 1e-15)
        psi = np.zeros(15)
        for (s2, r2, o2, t2) in h:
            if s2 == s and r2 == r:
                psi[o2] += 2.0 ** (-lam * abs(t - t2)) / denom
        rel = h[h[:, 1] == r]
        xi = np.bincount(rel[:, 2], minlength=15) / len(rel) if len(rel) else np.zeros(15)
        want = alpha * psi + (1 - alpha) * xi
        np.testing.assert_allclose(got[i].numpy(), want, rtol=1e-5, atol=1e-7)


def test_recurrency_per_relation_params_and_fit():
    kg = _kg(2)
    m = fit_recurrency(kg, "extrapolation", lambdas=(0.0, 1.0), alphas=(0.0, 1.0), progress=False, min_relation_queries=1)
    assert m.lmbda in (0.0, 1.0) and m.alpha in (0.0, 1.0)
    assert m.fit_info["queries"] == 2 * len(kg.facts("valid"))
    # the chosen global setting is the best of the grid on valid
    best = max(((l, a) for l in (0.0, 1.0) for a in (0.0, 1.0)),
               key=lambda p: evaluate(kg, RecurrencyBaseline(*p), "extrapolation", "valid", progress=False).metrics().mrr)
    got = evaluate(kg, RecurrencyBaseline(m.lmbda, m.alpha), "extrapolation", "valid", progress=False).metrics().mrr
    want = evaluate(kg, RecurrencyBaseline(*best), "extrapolation", "valid", progress=False).metrics().mrr
    assert got == pytest.approx(want)
    # per-relation parameters override the global ones only for their relation
    r = RecurrencyBaseline(lmbda=0.0, alpha=1.0, per_relation={4: (1.0, 0.0)})
    lam, alp = r._params_for(torch.tensor([0, 4]))
    assert lam.tolist() == [0.0, 1.0] and alp.tolist() == [1.0, 0.0]


def test_the_recency_normaliser_is_the_sum_it_names():
    """ψ's denominator in closed form equals Σ_k 2^(−λ|t − k|) summed step by step (k < t only when extrapolating),
    for λ = 0, tiny and large, and t before, inside and after the background's steps."""
    from tpar.evaluation.baselines import recency_normaliser

    rng = np.random.default_rng(3)
    for _ in range(400):
        first = int(rng.integers(-20, 20))
        last = first + int(rng.integers(0, 30))
        t = int(rng.integers(-40, 60))
        lam = float(rng.choice([0.0, 1e-9, 0.01, 0.3, 2.0, 60.0]))
        for before_only in (True, False):
            ks = np.arange(first, last + 1)
            if before_only:
                ks = ks[ks < t]
            want = float(np.sum(2.0 ** (-lam * np.abs(t - ks))))
            got = float(recency_normaliser(torch.tensor([float(t)], dtype=torch.float64),
                                           torch.tensor([lam], dtype=torch.float64), float(first), float(last),
                                           before_only=before_only)[0])
            assert got == pytest.approx(want, rel=1e-9, abs=1e-12), (first, last, t, lam, before_only)


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
def test_recurrency_cost_does_not_grow_with_the_span_of_the_times(setting):
    """Times 10^11 steps apart (unix milliseconds, say): the old normaliser made a (B × span) matrix -- terabytes.
    The baseline now scores them as it scores the same facts on small steps, up to λ's unit."""
    kg = _kg(1)
    scale = 10 ** 11
    big = make_kg(*(kg.facts(s) * np.array([1, 1, 1, scale]) for s in ("train", "valid", "test")),
                  num_entities=kg.num_entities, num_relations=kg.num_relations)
    lam = 0.3
    small_scores = RecurrencyBaseline(lmbda=lam, alpha=1.0).score(make_queries(kg.facts("test"), 3),
                                                                 Background.for_evaluation(kg, setting))
    big_bg = Background.for_evaluation(big, setting)
    assert big_bg.index.time_span > scale
    got = RecurrencyBaseline(lmbda=lam / scale, alpha=1.0).score(make_queries(big.facts("test"), 3), big_bg)
    # the numerators agree (the same weights); each question's denominator differs by a factor (every step of the
    # span counts): the scores of one question are proportional
    assert torch.isfinite(got).all() and (got.sum(1) > 0).sum() >= 3
    rows = small_scores.sum(1) > 0
    assert torch.equal(rows, got.sum(1) > 0)
    torch.testing.assert_close(got[rows] / got[rows].sum(1, keepdim=True),
                               small_scores[rows] / small_scores[rows].sum(1, keepdim=True), rtol=1e-4, atol=1e-6)


def test_an_index_refuses_times_it_cannot_order_exactly():
    from tpar.errors import DataError
    from tpar.graph.index import TemporalGraphIndex

    facts = np.array([[0, 0, 1, -(2 ** 53)], [1, 0, 2, 2 ** 53]])
    with pytest.raises(DataError, match="use a coarser time unit"):
        TemporalGraphIndex(facts, num_entities=1000, num_relations=1)
    TemporalGraphIndex(facts, num_entities=3, num_relations=1)  # 3 × 2^54 keys fit
