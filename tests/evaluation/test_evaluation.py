"""The evaluation protocol: ranks with ties, the time-aware filter, backgrounds (leakage), metrics."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from helpers import make_kg, random_facts
from tpar.graph.background import Background
from tpar.evaluation.baselines import FrequencyBaseline
from tpar.errors import DataError
from tpar.evaluation.filtering import TimeAwareFilter
from tpar.evaluation.protocol import evaluate
from tpar.evaluation.ranks import filtered_ranks
from tpar.graph.queries import QueryBatch, Setting, make_queries


def test_rank_arithmetic_with_ties():
    scores = torch.tensor([
        [0.9, 0.5, 0.5, 0.5, 0.1],   # answer 1: one better, two tied -> opt 2, pess 4, real 3
        [0.0, 0.0, 0.0, 0.0, 0.0],   # never reached: all tie -> opt 1, pess 5, real 3
        [0.2, 0.9, 0.9, 0.1, 0.0],   # answer 0, entities 1 and 2 filtered -> opt 1, pess 1
        [0.3, 0.3, 0.7, 0.3, 0.3],   # answer 3; entity 2 filtered; ties 0,1,4 -> opt 1, pess 4
    ])
    answer = torch.tensor([1, 2, 0, 3])
    rows, cols = torch.tensor([2, 2, 3]), torch.tensor([1, 2, 2])
    opt, pes = filtered_ranks(scores, answer, rows, cols)
    assert opt.tolist() == [2, 1, 1, 1]
    assert pes.tolist() == [4, 5, 1, 4]


def test_nan_scores_refused():
    with pytest.raises(ValueError, match="NaN"):
        filtered_ranks(torch.tensor([[float("nan"), 1.0]]), torch.tensor([0]), torch.tensor([], dtype=torch.long),
                       torch.tensor([], dtype=torch.long))


def test_time_aware_filter_by_hand():
    facts = np.array([[0, 0, 1, 5], [0, 0, 2, 5], [0, 0, 3, 6], [4, 0, 0, 5]])
    f = TimeAwareFilter(facts, 5, 1)
    q = make_queries(np.array([[0, 0, 1, 5]]), 1)  # object query (0,0,?,5)->1, subject query (1,0^-1,?,5)->0
    rows, cols = f.pairs(q)
    pairs = sorted(zip(rows.tolist(), cols.tolist()))
    # object query: 2 is another answer at t=5 (3 is at t=6: not filtered); subject query: none
    assert pairs == [(0, 2)]
    q2 = QueryBatch(torch.tensor([0]), torch.tensor([1]), torch.tensor([5]), torch.tensor([4]), torch.tensor([1]))
    rows, cols = f.pairs(q2)  # (0, r^-1, ?, 5) -> 4 : no other subject
    assert rows.numel() == 0
    q3 = QueryBatch(torch.tensor([0]), torch.tensor([0]), torch.tensor([9]), torch.tensor([1]), torch.tensor([0]))
    assert f.pairs(q3)[0].numel() == 0  # unknown time: nothing filtered


def test_a_fact_given_twice_is_filtered_once():
    """The filter's pairs are unique even when a caller passes a fact twice: filtered_ranks subtracts each pair, so a
    duplicated competitor would make the answer's rank one better than it is."""
    facts = np.array([[0, 0, 1, 5], [0, 0, 2, 5], [0, 0, 3, 5]])
    twice = np.concatenate([facts, facts[1:2]])
    q = make_queries(facts[:1], 1)
    for given in (facts, twice):
        rows, cols = TimeAwareFilter(given, 5, 1).pairs(q)
        assert sorted(zip(rows.tolist(), cols.tolist())) == [(0, 2), (0, 3)]
    scores = torch.tensor([[0.0, 1.0, 3.0, 0.5, 2.0]] * 2)  # the object query's answer 1: behind 2 (filtered) and 4
    rows, cols = TimeAwareFilter(twice, 5, 1).pairs(q)
    opt, pess = filtered_ranks(scores, q.answer, rows, cols)
    assert opt[0] == pess[0] == 2  # entity 4 alone outscores it once entity 2 is filtered


def _visible(background, batch):
    b = len(batch)
    seen = []
    for i in range(b):
        e, _ = background.edges_from(batch.subject[i:i + 1], torch.zeros(1, dtype=torch.long), batch[i:i + 1])
        ix = background.index
        seen.append({(ix.src[j].item(), ix.rel[j].item(), ix.dst[j].item(), ix.time[j].item()) for j in e})
    return seen


def test_extrapolation_never_sees_now_or_future():
    rng = np.random.default_rng(1)
    facts = random_facts(rng, 600, ne=20, nr=3, nt=30)
    kg = make_kg(facts[:400], facts[400:500], facts[500:], num_entities=20, num_relations=3)
    bg = Background.for_evaluation(kg, "extrapolation")
    batch = make_queries(kg.facts("test"), 3)
    nodes = torch.as_tensor(rng.integers(0, 20, len(batch)))
    edges, owner = bg.edges_from(nodes, torch.arange(len(batch)), batch)
    assert edges.numel() > 0  # the time check below is not vacuous
    assert (bg.index.time[edges] < batch.time[owner]).all()
    # and it sees *all* earlier facts, from every split
    allf = kg.all_facts()
    allf = np.concatenate([allf, allf[:, [2, 1, 0, 3]] + [0, 3, 0, 0]])
    for p in range(0, len(batch), 37):
        want = int(((allf[:, 0] == nodes[p].item()) & (allf[:, 3] < batch.time[p].item())).sum())
        assert int((owner == p).sum()) == want


def test_interpolation_hides_own_fact_and_inverse_even_if_in_train():
    # the test fact (0, 0, 1, 5) also appears in train: it must still be hidden from its own queries
    kg = make_kg(train=[[0, 0, 1, 5], [0, 0, 2, 9], [1, 0, 2, 5]], test=[[0, 0, 1, 5]], num_entities=3)
    bg = Background.for_evaluation(kg, "interpolation")
    batch = make_queries(kg.facts("test"), 1)
    obj_q, sub_q = _visible(bg, batch)
    assert (0, 0, 1, 5) not in obj_q and obj_q == {(0, 0, 2, 9)}  # future link allowed
    assert (1, 1, 0, 5) not in sub_q and sub_q == {(1, 0, 2, 5)}
    assert bg.own_fact_present(batch).tolist() == [True, True]
    # interpolation background is train only: valid/test facts are invisible
    kg2 = make_kg(train=[[0, 0, 1, 5]], valid=[[0, 0, 2, 6]], test=[[0, 0, 2, 7]], num_entities=3)
    seen = _visible(Background.for_evaluation(kg2, "interpolation"), make_queries(kg2.facts("test"), 1))
    assert seen[0] == {(0, 0, 1, 5)}


@pytest.mark.parametrize("cap", [1, 2, 3, 4, 6])
def test_a_cap_keeps_the_same_links_whether_or_not_the_questions_own_fact_is_in_the_data(cap):
    """Composite audit 36: interpolation's cap keeps a node's links nearest t_q, M - M // 2 at or after it; the
    question's own fact (at t_q, hidden afterwards) took one of those places, so its presence pushed another link
    out -- what a question saw depended on its answer (WIKIDATA12k: 108 test questions scored otherwise). The links
    admitted, by the flat list and by the ranges the kernels read, are the same with the fact and without it, at
    the subject (the fact), at the answer (its inverse) and at a self-loop's one node (both)."""
    from tpar.graph.background import LinkLimits

    t_q = 5
    base = [[0, 1, 3, 4], [0, 2, 4, 5], [0, 3, 5, 5], [0, 0, 6, 6], [0, 1, 7, 7], [1, 2, 5, 5], [1, 0, 6, 6],
            [1, 3, 8, 7], [2, 1, 8, 3], [2, 0, 9, 5], [2, 2, 8, 6]]
    limits = LinkLimits(cap=cap)
    for own in ([0, 1, 1, t_q], [1, 0, 3, t_q], [2, 1, 2, t_q]):  # two facts at t_q; a self-loop at node 2
        for dup in (1, 2):  # the fact once, or twice (a data set may repeat a fact)
            seen = []
            for train in (base + [own] * dup, base):
                kg = make_kg(train=train, test=[own], num_entities=10)
                bg = Background.for_evaluation(kg, "interpolation")
                batch = make_queries(np.asarray([own]), 4)
                nodes = torch.arange(10).repeat(len(batch))
                query = torch.arange(len(batch)).repeat_interleave(10)
                edges, owner = bg.edges_from(nodes, query, batch, limits=limits)
                links = {(int(o), *(int(x) for x in (bg.index.src[e], bg.index.rel[e], bg.index.dst[e], bg.index.time[e])))
                         for e, o in zip(edges, owner)}
                start, end, own_t = bg.link_ranges(nodes, query, batch, limits=limits)
                e2, o2 = bg.index.expand(start, end)
                keep = ~bg._is_own_fact(e2, query[o2], batch) if own_t is not None and e2.numel() else torch.ones_like(e2, dtype=torch.bool)
                ranged = {(int(o), *(int(x) for x in (bg.index.src[e], bg.index.rel[e], bg.index.dst[e], bg.index.time[e])))
                          for e, o in zip(e2[keep], o2[keep])}
                assert ranged == links
                seen.append(links)
            assert seen[0] == seen[1], (own, dup, seen[0] ^ seen[1])


def test_frequency_never_counts_own_fact():
    kg = make_kg(train=[[0, 0, 1, 5]], test=[[0, 0, 1, 5]], num_entities=3)
    res = evaluate(kg, FrequencyBaseline(), "interpolation", "test", progress=False)
    # with the own fact hidden, nothing is known: the answer ties with both other entities
    assert res.optimistic.tolist() == [1, 1] and res.pessimistic.tolist() == [3, 3]


def test_tiny_graph_mrr_by_hand(tmp_path):
    """Extrapolation, frequency baseline. History (t < 3):
        (A, r, B, 0), (A, r, B, 1), (A, r, C, 1), (D, r, C, 2)
    Test at t = 3: (A, r, B, 3) and (A, r, C, 3).
      object (A, r, ?, 3) -> B: scores B=2, C=1; C is another answer at t=3 -> filtered. rank 1.
      object (A, r, ?, 3) -> C: B=2 filtered, C=1, others 0 -> rank 1.
      subject (B, r^-1, ?, 3) -> A: A=2, others 0 -> rank 1.
      subject (C, r^-1, ?, 3) -> A: A=1, D=1 (tie), others 0 -> opt 1, pess 2, realistic 1.5.
    Realistic MRR = (1 + 1 + 1 + 1/1.5) / 4 = 0.916666..., optimistic 1, pessimistic (3 + 1/2) / 4.
    Hits@1 realistic = 3/4 (rank 1.5 is not <= 1).
    """
    A, B, C, D, E = range(5)
    kg = make_kg(train=[[A, 0, B, 0], [A, 0, B, 1], [A, 0, C, 1], [D, 0, C, 2]],
                 test=[[A, 0, B, 3], [A, 0, C, 3]], num_entities=5)
    res = evaluate(kg, FrequencyBaseline(), "extrapolation", "test", progress=False)
    d = res.to_dict()
    assert d["num_queries"] == 4
    assert d["realistic"]["mrr"] == pytest.approx((3 + 1 / 1.5) / 4)
    assert d["optimistic"]["mrr"] == pytest.approx(1.0)
    assert d["pessimistic"]["mrr"] == pytest.approx(3.5 / 4)
    assert d["realistic"]["hits@1"] == pytest.approx(0.75)
    assert d["realistic"]["hits@3"] == pytest.approx(1.0)
    assert d["by_direction"]["object"]["realistic"]["mrr"] == pytest.approx(1.0)
    assert d["by_direction"]["subject"]["realistic"]["mrr"] == pytest.approx((1 + 1 / 1.5) / 2)
    assert set(d["by_relation"]) == {"r0"}
    p = tmp_path / "r.json"
    res.write_json(p)
    j = json.loads(p.read_text())
    for key in ("setting", "split", "num_queries", "realistic", "optimistic", "pessimistic"):
        assert key in j
    assert set(j["realistic"]) == {"mrr", "hits@1", "hits@3", "hits@10"}


def test_interpolation_refused_without_train():
    kg = make_kg(train=[], valid=[[0, 0, 1, 1]], test=[[0, 0, 1, 2]], num_entities=2, num_relations=1)
    del kg.splits["train"]
    with pytest.raises(DataError, match="train split is missing"):
        evaluate(kg, FrequencyBaseline(), Setting.INTERPOLATION, "test", progress=False)


def test_csv_written_for_people_has_no_live_formula(tmp_path):
    """Names from an untrusted file never become spreadsheet formulas in a CSV the project writes."""
    import csv

    from tpar.data.kg import TemporalKG
    from tpar.data.timeaxis import TimeAxis
    from tpar.data.vocab import Vocabulary
    from tpar.evaluation.reports import csv_text, spreadsheet_safe, write_ranks_csv

    hostile = ["=HYPERLINK(\"http://x\")", "+1+2", "-3", "@SUM(A1)", "\tTAB", "\rCR", "plain"]
    assert [spreadsheet_safe(x) for x in hostile] == ["'" + x for x in hostile[:-1]] + ["plain"]
    assert spreadsheet_safe(-3.5) == -3.5  # numbers stay numbers
    kg = TemporalKG("evil", Vocabulary(tuple(hostile)), Vocabulary(("=cmd|' /C calc'!A0",)), TimeAxis("step"),
                    {"train": np.array([[0, 0, 1, 0], [2, 0, 3, 1]]), "test": np.array([[4, 0, 5, 2], [6, 0, 0, 3]])})
    res = evaluate(kg, FrequencyBaseline(), Setting.EXTRAPOLATION, "test", progress=False)
    out = tmp_path / "ranks.csv"
    write_ranks_csv(res, kg, out)
    cells = [c for row in csv.reader(open(out, newline="", encoding="utf-8")) for c in row]
    assert len(cells) == 8 * 5
    assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells)
    assert "'=cmd|' /C calc'!A0" in cells and "'=HYPERLINK(\"http://x\")" in cells
    text = csv_text([{"name": "=1+1", "score": -2.0}])
    assert text == "name,score\r\n'=1+1,-2.0\r\n"
