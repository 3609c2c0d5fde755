"""The temporal graph index: inverse edges and per-node time slices, against brute force."""

from __future__ import annotations

import numpy as np
import torch

from helpers import random_facts
from tpar.graph.index import TemporalGraphIndex


def test_inverse_edges_added():
    facts = np.array([[0, 1, 2, 5], [2, 0, 1, 3]])
    ix = TemporalGraphIndex(facts, num_entities=3, num_relations=2)
    edges = {tuple(x) for x in torch.stack([ix.src, ix.rel, ix.dst, ix.time], 1).tolist()}
    assert edges == {(0, 1, 2, 5), (2, 3, 0, 5), (2, 0, 1, 3), (1, 2, 2, 3)}
    assert ix.num_edges == 4
    assert ix.indptr.tolist() == [0, 1, 2, 4]
    # node 2's edges are sorted by time
    s, e = ix.slices(torch.tensor([2]))
    assert ix.time[s.item():e.item()].tolist() == [3, 5]


def test_time_slices_match_brute_force():
    rng = np.random.default_rng(0)
    facts = random_facts(rng, 400, ne=30, nr=4, nt=25)
    ix = TemporalGraphIndex(facts, 30, 4)
    allf = np.concatenate([facts, facts[:, [2, 1, 0, 3]] + [0, 4, 0, 0]])
    nodes = torch.as_tensor(rng.integers(0, 30, 200))
    tq = torch.as_tensor(rng.integers(-2, 28, 200))
    start, end = ix.slices(nodes, tq)
    edges, owner = ix.expand(start, end)
    got = {(int(owner[j]), int(edges[j])) for j in range(len(edges))}
    for p in range(200):
        n, t = int(nodes[p]), int(tq[p])
        mine = {(ix.src[e].item(), ix.rel[e].item(), ix.dst[e].item(), ix.time[e].item())
                for (q, e) in got if q == p}
        want = {tuple(x) for x in allf[(allf[:, 0] == n) & (allf[:, 3] < t)].tolist()}
        assert mine == want
    # without a time bound: the whole segment, i.e. every edge leaving the node at any time
    s2, e2 = ix.slices(nodes)
    want_degree = torch.as_tensor([int((allf[:, 0] == int(n)).sum()) for n in nodes])
    assert ((e2 - s2) == want_degree).all()
    assert (ix.degree(nodes) == want_degree).all()
    for p in range(200):
        seg = {(ix.src[e].item(), ix.rel[e].item(), ix.dst[e].item(), ix.time[e].item())
               for e in range(int(s2[p]), int(e2[p]))}
        assert seg == {tuple(x) for x in allf[allf[:, 0] == int(nodes[p])].tolist()}


def test_expand_empty_and_find():
    ix = TemporalGraphIndex(np.array([[0, 0, 1, 2]]), 3, 1)
    e, o = ix.expand(torch.tensor([0, 0]), torch.tensor([0, 0]))
    assert e.numel() == 0 and o.numel() == 0
    hit = ix.find(torch.tensor([0, 1, 0, 0]), torch.tensor([0, 1, 0, 0]), torch.tensor([1, 0, 1, 2]), torch.tensor([2, 2, 3, 2]))
    assert hit.tolist() == [True, True, False, False]


def test_repeat_bounds_name_the_mth_later_and_earlier_repeat_of_each_fact():
    """For every edge, the time of the m-th later / earlier edge of the same (src, rel, dst), checked
    against a per-edge count in plain Python (both directions of every fact)."""
    import numpy as np

    from tpar.graph.index import TemporalGraphIndex

    rng = np.random.default_rng(3)
    base = rng.integers(0, 4, size=(12, 3))
    facts = np.unique(np.array([(s, r % 2, o, t) for s, r, o in base for t in rng.choice(20, 4, replace=False)]), axis=0)
    ix = TemporalGraphIndex(facts, 4, 2)
    edges = list(zip(ix.src.tolist(), ix.rel.tolist(), ix.dst.tolist(), ix.time.tolist()))
    for m in (1, 2, 3):
        nxt, prv = ix.repeat_bounds(m)
        for i, (s, r, o, t) in enumerate(edges):
            same = sorted(x[3] for x in edges if x[:3] == (s, r, o))
            later, earlier = [x for x in same if x > t], [x for x in same if x < t][::-1]
            assert nxt[i] == (later[m - 1] if len(later) >= m else ix.NO_LATER_REPEAT)
            assert prv[i] == (earlier[m - 1] if len(earlier) >= m else ix.NO_EARLIER_REPEAT)


def test_edges_are_in_src_time_rel_dst_order_equal_edges_in_fact_order_by_either_sort(monkeypatch):
    """The edge order against Python's sort of (src, time, rel, dst, fact row) -- with repeated facts and negative
    times -- through the one combined-key sort and through the successive sorts it falls back to where the combined
    key would not fit in int64."""
    rng = np.random.default_rng(3)
    facts = np.stack([rng.integers(0, 9, 300), rng.integers(0, 4, 300), rng.integers(0, 9, 300),
                      rng.integers(-5, 12, 300)], 1)
    facts = np.concatenate([facts, facts[:40]])  # the same facts again: kept in their rows' order
    n = len(facts)
    expected = sorted([(s, t, r, o, i) for i, (s, r, o, t) in enumerate(facts.tolist())]
                      + [(o, t, r + 4, s, i) for i, (s, r, o, t) in enumerate(facts.tolist())])
    orders = []
    for fits in (True, False):
        if not fits:  # a data set too large for one key: the successive sorts
            monkeypatch.setattr(TemporalGraphIndex, "_edge_order", staticmethod(
                lambda *a, _f=TemporalGraphIndex._edge_order: _f(*a[:5], 2 ** 40, a[6])))
        ix = TemporalGraphIndex(facts, num_entities=9, num_relations=4)
        got = list(zip(ix.src.tolist(), ix.time.tolist(), ix.rel.tolist(), ix.dst.tolist(), ix.fact.tolist()))
        assert got == [(s, t, r, o, i % n) for s, t, r, o, i in expected]
        orders.append(got)
    assert orders[0] == orders[1]
