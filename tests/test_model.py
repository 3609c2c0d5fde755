"""The TPAR model: vectorised propagation against a plain per-query, per-link reference written
here from the paper's equations; gradients; leakage; determinism."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import torch

from conftest import make_kg, random_facts
from tpar.graph.background import Background
from tpar.model.config import ModelConfig
from tpar.model.network import TPAR, PropagationTrace, multiclass_log_loss
from tpar.graph.queries import make_queries

R, E = 3, 14


def small_kg(seed=0, dup_test_in_train=False):
    rng = np.random.default_rng(seed)
    f = random_facts(rng, 160, ne=E, nr=R, nt=12)
    f = f[np.argsort(f[:, 3], kind="stable")]
    train, valid, test = f[:120], f[120:140], f[140:]
    if dup_test_in_train:  # a test fact that also sits in train must still stay hidden from its query
        train = np.concatenate([train, test[:3]])
    return make_kg(train, valid, test, num_entities=E, num_relations=R)


def build(activation="tanh", chronological=False, seed=0):
    torch.manual_seed(seed)
    m = TPAR(ModelConfig(dim=6, attn_dim=3, num_layers=3, dropout=0.0, activation=activation,
                         chronological=chronological, num_relations=R, time_span=12)).double()
    with torch.no_grad():  # make attention and states non-trivial
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def reference_scores(model: TPAR, bg_facts: np.ndarray, setting: str, queries, chronological=False) -> torch.Tensor:
    """Per query, per link, in plain Python: Eqs. 2-3 (time), 4 (message), 6 (attention), 7, 8."""
    links = [(s, r, o, t) for s, r, o, t in bg_facts.tolist()] + [(o, r + R, s, t) for s, r, o, t in bg_facts.tolist()]
    act = {"identity": lambda x: x, "tanh": torch.tanh, "relu": torch.relu}[model.cfg.activation]
    out = torch.zeros(len(queries), E, dtype=torch.float64)
    ident = 2 * R
    for qi, (s_q, r_q, a_q, t_q) in enumerate(queries):
        states = {(s_q, t_q): torch.zeros(model.cfg.dim, dtype=torch.float64)}
        for layer in model.layers:
            new = defaultdict(lambda: torch.zeros(model.cfg.dim, dtype=torch.float64))

            def send(h, rel, dt, dest):
                ht = model.time_encoding(torch.tensor([dt]))[0]
                hr, hq = layer.rel_emb.weight[rel], layer.rel_emb.weight[r_q]
                u = (layer.att_node(h) if layer.att_node is not None else 0) + layer.att_rel(hr) + layer.att_query(hq) + layer.att_time(ht)
                alpha = torch.sigmoid(layer.att_out(torch.relu(u)))[0]
                new[dest] += alpha * (h + hr + ht)

            for (e, bound), h in states.items():
                send(h, ident, 0, (e, bound))  # self-loop
                for (u_, rel, v, t) in links:
                    if u_ != e:
                        continue
                    if setting == "extrapolation" and not t < min(t_q, bound):
                        continue
                    r_inv = r_q + R if r_q < R else r_q - R
                    if setting == "interpolation" and t == t_q and (
                            (u_, rel, v) == (s_q, r_q, a_q) or (u_, rel, v) == (a_q, r_inv, s_q)):
                        continue
                    send(h, rel, t - t_q, (v, t + 1 if chronological else bound))
            states = {k: act(layer.W(v)) for k, v in new.items()}
        for (e, _), h in states.items():
            out[qi, e] += model.score(h)[0]
    return out


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
@pytest.mark.parametrize("kernel", ["auto", "torch"])
def test_forward_equals_reference(setting, kernel):
    kg = small_kg(dup_test_in_train=True)
    model = build()
    model.kernel = kernel
    bg = Background.for_evaluation(kg, setting)
    batch = make_queries(kg.facts("test"), R)[:10]
    with torch.no_grad():
        got = model(batch, bg)
        ref = reference_scores(model, kg.all_facts() if setting == "extrapolation" else kg.facts("train"), setting,
                               list(zip(*(x.tolist() for x in (batch.subject, batch.relation, batch.answer, batch.time)))))
    assert got.shape == (10, E)
    assert torch.allclose(got, ref, atol=1e-5), (got - ref).abs().max()
    assert (ref != 0).any()


def test_chronological_mode_equals_reference():
    kg = small_kg(1)
    model = build(activation="identity", chronological=True)
    bg = Background.for_evaluation(kg, "extrapolation")
    batch = make_queries(kg.facts("test"), R)[:8]
    with torch.no_grad():
        got = model(batch, bg)
        ref = reference_scores(model, kg.all_facts(), "extrapolation",
                               list(zip(*(x.tolist() for x in (batch.subject, batch.relation, batch.answer, batch.time)))),
                               chronological=True)
        relaxed = build(activation="identity")(batch, bg)
    assert torch.allclose(got, ref, atol=1e-5)
    assert not torch.allclose(got, relaxed)  # the order constraint changes what is reachable


@pytest.mark.parametrize("kernel", ["auto", "torch"])
def test_gradients_reach_every_parameter(kernel):
    kg = small_kg(2)
    model = build(activation="relu").train()
    model.kernel = kernel
    batch = make_queries(kg.facts("test"), R)[:8]
    loss = multiclass_log_loss(model(batch, Background.for_evaluation(kg, "interpolation")), batch.answer)
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, f"no gradient reaches {name}"


def test_cpp_and_torch_backends_agree_on_gradients():
    kg = small_kg(3, dup_test_in_train=True)
    batch = make_queries(kg.facts("test"), R)[:10]
    grads = {}
    for kernel in ("auto", "torch"):
        model = build()
        model.kernel = kernel
        model(batch, Background.for_evaluation(kg, "interpolation")).pow(2).sum().backward()
        grads[kernel] = {n: p.grad for n, p in model.named_parameters()}
    for n in grads["auto"]:
        assert torch.allclose(grads["auto"][n], grads["torch"][n], atol=1e-8), n


def test_extrapolation_links_are_strictly_before_query_time():
    kg = small_kg(4)
    model = build()
    bg = Background.for_evaluation(kg, "extrapolation")
    batch = make_queries(kg.facts("test"), R)
    tr = PropagationTrace([], [], [], [])
    with torch.no_grad():
        model(batch, bg, trace=tr)
    assert sum(tr.num_links) > 0
    for links in tr.links:
        q, t = links[:, 0], links[:, 4]
        assert (t < batch.time[q]).all()


def test_interpolation_never_sees_own_fact_or_inverse():
    kg = small_kg(5, dup_test_in_train=True)
    model = build()
    bg = Background.for_evaluation(kg, "interpolation")
    batch = make_queries(kg.facts("test"), R)
    tr = PropagationTrace([], [], [], [])
    with torch.no_grad():
        scores = model(batch, bg, trace=tr)
    for links in tr.links:
        q = links[:, 0]
        own = (links[:, 1] == batch.subject[q]) & (links[:, 2] == batch.relation[q]) & (links[:, 3] == batch.answer[q])
        r_inv = torch.where(batch.relation[q] < R, batch.relation[q] + R, batch.relation[q] - R)
        inv = (links[:, 1] == batch.answer[q]) & (links[:, 2] == r_inv) & (links[:, 3] == batch.subject[q])
        assert not ((own | inv) & (links[:, 4] == batch.time[q])).any()
    # a test fact duplicated in train is invisible to its own two queries: removing it from train
    # changes nothing for them (both kernels), while it does matter to other queries
    clean = make_kg(kg.facts("train")[:-3], kg.facts("valid"), kg.facts("test"), num_entities=E, num_relations=R)
    one = make_kg(np.concatenate([clean.facts("train"), kg.facts("test")[:1]]), kg.facts("valid"), kg.facts("test"),
                  num_entities=E, num_relations=R)
    n = len(kg.facts("test"))
    own_queries = batch[torch.tensor([0, n])]  # object and subject query of test fact 0
    with torch.no_grad():
        for kernel in ("auto", "torch"):
            model.kernel = kernel
            a = model(own_queries, Background.for_evaluation(one, "interpolation"))
            b = model(own_queries, Background.for_evaluation(clean, "interpolation"))
            assert torch.allclose(a, b, atol=1e-12), kernel
    assert scores.shape == (len(batch), E)


def test_unreached_entities_score_zero():
    kg = make_kg(train=[[0, 0, 1, 1]], test=[[0, 0, 1, 5]], num_entities=5, num_relations=1)
    m = TPAR(ModelConfig(dim=4, num_layers=2, num_relations=1, dropout=0.0)).eval()
    with torch.no_grad():
        s = m(make_queries(kg.facts("test"), 1), Background.for_evaluation(kg, "extrapolation"))
    assert (s[:, 2:] == 0).all()


def test_same_seed_same_result():
    kg = small_kg(6)
    batch = make_queries(kg.facts("train"), R)[:10]
    bg = Background.from_facts(kg.facts("train"), E, R, "extrapolation")
    out = []
    for _ in range(2):
        torch.manual_seed(123)
        m = TPAR(ModelConfig(dim=6, num_layers=3, num_relations=R, dropout=0.2))
        opt = torch.optim.Adam(m.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            multiclass_log_loss(m(batch, bg), batch.answer).backward()
            opt.step()
        out.append(torch.cat([p.detach().flatten() for p in m.parameters()]))
    assert torch.equal(out[0], out[1])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_cuda_matches_cpu():
    kg = small_kg(7)
    model = build().float()
    batch = make_queries(kg.facts("test"), R)[:10]
    bg = Background.for_evaluation(kg, "extrapolation")
    with torch.no_grad():
        cpu = model(batch, bg)
        gpu = model.cuda()(batch.to("cuda"), bg.to("cuda")).cpu()
    assert torch.allclose(cpu, gpu, atol=1e-4)
