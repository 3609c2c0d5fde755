"""The TPAR model: vectorised propagation against a plain per-query, per-link reference written
here from the paper's equations; both kernels (and proof that the C++ one was built and ran);
gradients; leakage; determinism."""

from __future__ import annotations

import dataclasses
import json
import importlib.util
import shutil
from collections import defaultdict
from contextlib import contextmanager

import numpy as np

import pytest
import torch

from helpers import E, R, make_kg, small_kg, small_model
from tpar.graph.background import Background
from tpar.graph.queries import make_queries
from tpar.model import kernel_build, kernels
from tpar.model.config import ModelConfig
from tpar.model.network import TPAR, PropagationTrace, multiclass_log_loss

build = small_model


def paper_attention(layer, h_s: torch.Tensor, h_r: torch.Tensor, h_rq: torch.Tensor, h_t: torch.Tensor) -> torch.Tensor:
    """Eqs. 6-7 as the paper writes them: U = [h_{e_s} ‖ h_r ‖ h_{r_q} ‖ h_t] (4d), one W_α (d_a × 4d),
    α = σ(w_αᵀ ReLU(W_α U + bias)). W_α is assembled from the layer's parameters; the model computes
    the same product as four separate terms added per link, which this checks."""
    d, da = h_s.shape[0], layer.att_rel.weight.shape[0]
    w_node = layer.att_node.weight if layer.att_node is not None else torch.zeros(da, d, dtype=h_s.dtype)
    W_alpha = torch.cat([w_node, layer.att_rel.weight, layer.att_query.weight, layer.att_time.weight], dim=1)
    assert W_alpha.shape == (da, 4 * d)
    U = torch.cat([h_s, h_r, h_rq, h_t])
    z = layer.att_out.weight[0] @ torch.relu(W_alpha @ U + layer.att_query.bias) + layer.att_out.bias[0]
    return torch.sigmoid(z)


def paper_time(model: TPAR, dt: int) -> torch.Tensor:
    """Eqs. 2-3: sin(ω_p Δt + φ_p) + ω_np Δt + φ_np."""
    te = model.time_encoding
    return torch.sin(te.omega_p * dt + te.phi_p) + te.omega_np * dt + te.phi_np


def reference_scores(model: TPAR, bg_facts: np.ndarray, setting: str, queries, chronological=False) -> torch.Tensor:
    """Per query, per link, in plain Python: Eqs. 2-3 (time), 5 (message), 6-7 (attention), 8
    (aggregation), 9 (score), with self-loops (identity relation 2R, Δt = 0); and the pruning of the
    model's config, from its definitions: a history window W, a cap of M links per entity nearest t_q
    (ties in time broken by relation, then entity, as the index sorts them; in interpolation the question's own
    fact and its inverse are hidden first, so they never take a place), the m repeats of a fact
    (s, r, o) nearest t_q on each side of it, and top-K expansion by the provisional score w·h^ℓ (ties by
    entity id); none of them in the first ``exact_steps`` steps."""
    cfg = model.cfg
    links = sorted([(s, r, o, t) for s, r, o, t in bg_facts.tolist()] + [(o, r + R, s, t) for s, r, o, t in bg_facts.tolist()],
                   key=lambda x: (x[0], x[3], x[1], x[2]))
    act = {"identity": lambda x: x, "tanh": torch.tanh, "relu": torch.relu}[cfg.activation]
    out = torch.zeros(len(queries), E, dtype=torch.float64)
    ident = 2 * R
    for qi, (s_q, r_q, a_q, t_q) in enumerate(queries):
        r_inv = r_q + R if r_q < R else r_q - R

        def recent(x: tuple[int, int, int, int]) -> bool:
            """x is among the m repeats of its fact nearest t_q on its side (strictly: t_q itself never counts)."""
            if x[3] == t_q:
                return True
            lo, hi = sorted((x[3], t_q))
            between = [y for y in links if y[:3] == x[:3] and lo < y[3] < hi]
            return len(between) < cfg.recent_repeats

        def admitted(e: int, bound: int, step: int) -> list[tuple[int, int, int, int]]:
            mine = [x for x in links if x[0] == e]
            if step < cfg.exact_steps:  # exact leading steps: every admitted link
                if setting == "extrapolation":
                    return [x for x in mine if x[3] < min(t_q, bound)]
                own = {(s_q, r_q, a_q, t_q), (a_q, r_inv, s_q, t_q)}
                return [x for x in mine if x not in own]
            # window and cap cut the node's time-sorted links; the repeat limit then thins what they kept
            if setting == "extrapolation":
                mine = [x for x in mine if x[3] < min(t_q, bound)]
                if cfg.history_window:
                    mine = [x for x in mine if x[3] >= t_q - cfg.history_window]
                if cfg.link_cap:
                    mine = mine[max(0, len(mine) - cfg.link_cap):]
                return [x for x in mine if recent(x)] if cfg.recent_repeats else mine
            own = {(s_q, r_q, a_q, t_q), (a_q, r_inv, s_q, t_q)}
            mine = [x for x in mine if x not in own]  # hidden before any limit: it never takes a place in the cap
            if cfg.history_window:
                mine = [x for x in mine if abs(x[3] - t_q) <= cfg.history_window]
            if cfg.link_cap:
                before = [x for x in mine if x[3] < t_q]
                after = [x for x in mine if x[3] >= t_q]
                mine = before[max(0, len(before) - cfg.link_cap // 2):] + after[:cfg.link_cap - cfg.link_cap // 2]
            return [x for x in mine if recent(x)] if cfg.recent_repeats else mine

        states = {(s_q, t_q): torch.zeros(cfg.dim, dtype=torch.float64)}
        sending = set(states)
        for step, layer in enumerate(model.layers):
            new = defaultdict(lambda: torch.zeros(cfg.dim, dtype=torch.float64))

            def send(h, rel, dt, dest):
                ht = paper_time(model, dt)
                hr, hq = layer.rel_emb.weight[rel], layer.rel_emb.weight[r_q]
                new[dest] += paper_attention(layer, h, hr, hq, ht) * (h + hr + ht)  # α · M (Eqs. 5, 7)

            for (e, bound), h in states.items():
                send(h, ident, 0, (e, bound))  # self-loop
                if (e, bound) in sending:
                    for (_, rel, v, t) in admitted(e, bound, step):
                        send(h, rel, t - t_q, (v, t + 1 if chronological else bound))
            states = {k: act(layer.W.weight @ v) for k, v in new.items()}  # Eq. 8
            sending = set(states)
            if cfg.top_k and step + 1 >= cfg.exact_steps:  # the K best provisional scores w·h^ℓ send next
                best = sorted(states, key=lambda k: (-float(model.score.weight[0] @ states[k]), k))
                sending = set(best[:cfg.top_k])
        for (e, _), h in states.items():
            out[qi, e] += model.score.weight[0] @ h  # Eq. 9
    return out


def pruned(model: TPAR, **options) -> TPAR:
    """The same weights with other propagation options."""
    other = TPAR(dataclasses.replace(model.cfg, **options)).double().eval()
    other.load_state_dict(model.state_dict(), strict=False)
    return other


def compiler_available() -> bool:
    return shutil.which("c++") is not None and importlib.util.find_spec("ninja") is not None


KERNELS = ["cpp", "torch"]


@pytest.fixture(params=KERNELS)
def kernel(request):
    """Run the test with each kernel selected; ``cpp`` is skipped only where no compiler exists."""
    if request.param == "cpp" and not compiler_available():
        pytest.skip("no C++ compiler or ninja here: the fused kernel cannot be built")
    mp = pytest.MonkeyPatch()
    mp.setenv("TPAR_KERNEL", request.param)  # every model the test builds runs this kernel
    yield request.param
    mp.undo()


@contextmanager
def using(name: str, *models: TPAR):
    """Run ``models`` with kernel ``name`` inside the block."""
    before = [m.kernel for m in models]
    for m in models:
        m.kernel = name
    try:
        yield
    finally:
        for m, k in zip(models, before):
            m.kernel = k


def test_cpp_kernel_is_built_and_used_where_a_compiler_exists():
    """On this machine and in CI (compiler and ninja installed) the fused step must build, and a CPU
    forward pass must run it -- a failed build may not silently turn the comparison into torch vs torch."""
    if not compiler_available():
        pytest.skip("no C++ compiler or ninja here")
    assert kernel_build.cpp_kernel() is not None, kernels.kernel_status()
    kg = small_kg(8)
    model = build()
    batch = make_queries(kg.facts("test"), R)[:6]
    bg = Background.for_evaluation(kg, "interpolation")
    with using("auto", model):
        before = kernels.steps_run["cpp"]
        with torch.no_grad():
            fused = model(batch, bg)
        assert kernels.steps_run["cpp"] - before == model.cfg.num_layers
    with using("torch", model):
        before = kernels.steps_run["cpp"], kernels.steps_run["torch"]
        with torch.no_grad():
            plain = model(batch, bg)
        assert kernels.steps_run["cpp"] == before[0]
        assert kernels.steps_run["torch"] - before[1] == model.cfg.num_layers
    assert torch.allclose(fused, plain, atol=1e-10)


def test_an_evaluation_says_which_kernel_scored():
    """``ModelRanker.kernel_text`` names the kernel whose steps actually ran (the two may break an exact tie
    differently, so a figure must say which computed it)."""
    from tpar.model.ranker import ModelRanker

    kg = small_kg(8)
    batch = make_queries(kg.facts("test"), R)[:4]
    bg = Background.for_evaluation(kg, "interpolation")
    ranker = ModelRanker(build(), "cpu")
    assert ranker.kernel_text() == "no kernel (nothing scored)"
    with using("torch", ranker.model):
        ranker.score(batch, bg)
    assert ranker.kernel_text() == "the torch kernel"
    if compiler_available() and kernel_build.cpp_kernel() is not None:
        with using("cpp", ranker.model):
            ranker.score(batch, bg)
        assert ranker.kernel_text() == "the C++ kernel (50% of steps) and the torch kernel (50% of steps)"


def test_a_background_build_lets_auto_answer_with_torch_meanwhile(monkeypatch):
    """While the C++ kernel builds in the background (an app's start), ``auto`` answers with the
    torch kernel at once instead of waiting; once built, the C++ kernel serves."""
    import threading

    release = threading.Event()
    built = object()

    def slow_build():
        release.wait(30)
        monkeypatch.setattr(kernel_build.BUILD, "module", built)
        return built

    monkeypatch.setattr(kernel_build, "BUILD", kernel_build.KernelBuild())
    monkeypatch.setattr(kernel_build.BUILD, "get", slow_build)
    assert kernel_build.build_in_background() is True and kernel_build.kernel_building()
    assert kernels.use_fused("auto", torch.device("cpu"), torch.float32, per_link_output=False) is False  # no wait
    kg = small_kg(8)
    model = build()
    model.kernel = "auto"
    before = kernels.steps_run["torch"]
    with torch.no_grad():
        model(make_queries(kg.facts("test"), R)[:2], Background.for_evaluation(kg, "extrapolation"))
    assert kernels.steps_run["torch"] - before == model.cfg.num_layers
    release.set()
    kernel_build.BUILD.thread.join(10)
    assert not kernel_build.kernel_building()
    assert kernels.use_fused("auto", torch.device("cpu"), torch.float32, per_link_output=False) is True
    assert kernel_build.build_in_background() is False  # built: nothing to start


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
def test_forward_equals_reference(setting, kernel):
    kg = small_kg(dup_test_in_train=True)
    model = build()
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


def test_gradients_reach_every_parameter(kernel):
    kg = small_kg(2)
    model = build(activation="relu").train()
    batch = make_queries(kg.facts("test"), R)[:8]
    loss = multiclass_log_loss(model(batch, Background.for_evaluation(kg, "interpolation")), batch.answer)
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, f"no gradient reaches {name}"


def test_extrapolation_links_are_strictly_before_query_time():
    kg = small_kg(4)
    model = build()
    bg = Background.for_evaluation(kg, "extrapolation")
    batch = make_queries(kg.facts("test"), R)
    tr = PropagationTrace()
    with torch.no_grad():
        model(batch, bg, trace=tr)
    assert sum(tr.num_links) > 0
    for links in tr.links:
        q, t = links[:, 0], links[:, 4]
        assert (t < batch.time[q]).all()


def own_fact_in_train_or_not(kg, num_queries: int):
    """(the data with test fact 0 also in train, the data without it, a (num_queries,) mask of that fact's
    object and subject questions) for :func:`small_kg` data built with ``dup_test_in_train=True``."""
    clean = make_kg(kg.facts("train")[:-3], kg.facts("valid"), kg.facts("test"), num_entities=E, num_relations=R)
    one = make_kg(np.concatenate([clean.facts("train"), kg.facts("test")[:1]]), kg.facts("valid"), kg.facts("test"),
                  num_entities=E, num_relations=R)
    own = torch.zeros(num_queries, dtype=torch.bool)
    own[[0, len(kg.facts("test"))]] = True  # object and subject question of test fact 0
    return one, clean, own


def test_interpolation_never_sees_own_fact_or_inverse():
    kg = small_kg(5, dup_test_in_train=True)
    model = build()
    bg = Background.for_evaluation(kg, "interpolation")
    batch = make_queries(kg.facts("test"), R)
    tr = PropagationTrace()
    with torch.no_grad():
        scores = model(batch, bg, trace=tr)
    assert sum(tr.num_links) > 0  # the checks below see links
    for links in tr.links:
        q = links[:, 0]
        own = (links[:, 1] == batch.subject[q]) & (links[:, 2] == batch.relation[q]) & (links[:, 3] == batch.answer[q])
        r_inv = torch.where(batch.relation[q] < R, batch.relation[q] + R, batch.relation[q] - R)
        inv = (links[:, 1] == batch.answer[q]) & (links[:, 2] == r_inv) & (links[:, 3] == batch.subject[q])
        assert not ((own | inv) & (links[:, 4] == batch.time[q])).any()
    # a test fact duplicated in train is invisible to its own two queries: removing it from train
    # changes nothing for them (both kernels), while it does matter to other queries
    one, clean, own = own_fact_in_train_or_not(kg, len(batch))
    with torch.no_grad():
        for name in KERNELS if compiler_available() else ["torch"]:
            with using(name, model):
                a = model(batch, Background.for_evaluation(one, "interpolation"))
                b = model(batch, Background.for_evaluation(clean, "interpolation"))
            assert torch.allclose(a[own], b[own], atol=1e-12), name
            assert not torch.allclose(a[~own], b[~own], atol=1e-12), name  # the fact is not hidden from others
    assert scores.shape == (len(batch), E)


def test_unreached_entities_score_zero():
    kg = make_kg(train=[[0, 0, 1, 1]], test=[[0, 0, 1, 5]], num_entities=5, num_relations=1)
    torch.manual_seed(0)
    m = TPAR(ModelConfig(dim=4, num_layers=2, num_relations=1, dropout=0.0)).eval()
    with torch.no_grad():
        s = m(make_queries(kg.facts("test"), 1), Background.for_evaluation(kg, "extrapolation"))
    assert (s[:, 2:] == 0).all()
    assert (s[:, :2] != 0).all()  # entities 0 and 1 are reached (self-loop, the link at t=1) and do score


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


PRUNINGS = [dict(history_window=3), dict(link_cap=2), dict(top_k=3), dict(history_window=4, link_cap=3, top_k=2),
            dict(recent_repeats=1), dict(recent_repeats=2, top_k=3), dict(recent_repeats=1, top_k=2, exact_steps=1),
            dict(history_window=3, recent_repeats=1, exact_steps=2),
            dict(recent_repeats=1, link_cap=2, exact_steps=1), dict(recent_repeats=1, link_cap=3)]


def repeating_kg(seed: int = 9, dense: bool = False):
    """small_kg plus 30 facts (s, r, o) each repeated at 2-6 times: what ``recent_repeats`` prunes.
    A repeat of a test fact lies in train, before and after it, so the own fact's neighbours count.
    ``dense``: also runs of copies just before a fact, so a cap's most recent links hold repeats."""
    kg = small_kg(seed, dup_test_in_train=True)
    rng = np.random.default_rng(seed)
    extra = []
    for s_, r_, o_, _ in list(kg.facts("train")[rng.choice(120, 26, replace=False)]) + list(kg.facts("test")[:4]):
        for t in rng.choice(12, rng.integers(2, 7), replace=False):
            extra.append((s_, r_, o_, t))
    if dense:  # runs of copies at consecutive times: the most recent links of a node repeat each other
        for s_, r_, o_, t_ in list(kg.facts("train")[rng.choice(120, 20, replace=False)]) + list(kg.facts("test")[:10]):
            extra += [(s_, r_, o_, t) for t in range(max(0, t_ - 3), t_)]
    train = np.unique(np.concatenate([kg.facts("train"), np.array(extra)]), axis=0)
    return make_kg(train, kg.facts("valid"), kg.facts("test"), num_entities=E, num_relations=R)


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
@pytest.mark.parametrize("options", PRUNINGS, ids=lambda o: "+".join(f"{k}={v}" for k, v in o.items()))
def test_pruned_forward_equals_reference(setting, options, kernel):
    """Window, cap, repeat limit, top-K (score priority) and exact leading steps as the reference
    defines them, in both kernels."""
    kg = repeating_kg(9, dense=bool(options.get("link_cap") and options.get("recent_repeats")))
    model = pruned(build(), **options)
    bg = Background.for_evaluation(kg, setting)
    batch = make_queries(kg.facts("test"), R)[:10]
    with torch.no_grad():
        got = model(batch, bg)
        exact = build()(batch, bg)
    with torch.no_grad():
        ref = reference_scores(model, kg.all_facts() if setting == "extrapolation" else kg.facts("train"), setting,
                               list(zip(*(x.tolist() for x in (batch.subject, batch.relation, batch.answer, batch.time)))))
    assert torch.allclose(got, ref, atol=1e-5), (got - ref).abs().max()
    assert not torch.allclose(got, exact)  # the pruning changed something here


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
def test_loose_pruning_is_exact(setting, kernel):
    """W ≥ the data's span, M ≥ every degree and K ≥ the number of entities give the exact scores."""
    kg = small_kg(10)
    model = build()
    loose = pruned(model, history_window=100, link_cap=10_000, top_k=E)
    bg = Background.for_evaluation(kg, setting)
    batch = make_queries(kg.facts("test"), R)[:12]
    with torch.no_grad():
        assert torch.equal(loose(batch, bg), model(batch, bg))


def test_window_admits_only_links_inside_it():
    kg = small_kg(11, dup_test_in_train=True)
    for setting in ("extrapolation", "interpolation"):
        model = pruned(build(), history_window=2)
        batch = make_queries(kg.facts("test"), R)
        tr = PropagationTrace()
        with torch.no_grad():
            model(batch, Background.for_evaluation(kg, setting), trace=tr)
        assert sum(tr.num_links) > 0
        for links in tr.links:
            dt = links[:, 4] - batch.time[links[:, 0]]
            assert (dt.abs() <= 2).all()
            if setting == "extrapolation":
                assert (dt < 0).all()


def test_top_k_expands_at_most_k_entities_per_query():
    kg = small_kg(12)
    model = pruned(build(), top_k=2)
    batch = make_queries(kg.facts("test"), R)
    tr = PropagationTrace()
    with torch.no_grad():
        model(batch, Background.for_evaluation(kg, "interpolation"), trace=tr)
    assert len(tr.links) == 3 and tr.num_links[1] > 0
    reached_more = False
    for l, links in enumerate(tr.links[1:], start=1):
        senders = {(q, e) for q, e in links[:, :2].tolist()}
        per_query = defaultdict(int)
        for q, _ in senders:
            per_query[q] += 1
        assert max(per_query.values()) <= 2
        reached = defaultdict(int)
        for q, _ in tr.nodes[l - 1].tolist():
            reached[q] += 1
        reached_more |= max(reached.values()) > 2  # more entities were reached than expanded
    assert reached_more


@pytest.mark.parametrize("options", [{}] + PRUNINGS + [dict(top_k=3, priority="learned")],
                         ids=lambda o: "+".join(f"{k}={v}" for k, v in o.items()) or "exact")
def test_kernels_agree_on_scores_and_gradients(options):
    """C++ and torch kernels: the same scores and gradients, exact and with every pruning option."""
    if not compiler_available():
        pytest.skip("no C++ compiler or ninja here")
    kg = repeating_kg(13)
    batch = make_queries(kg.facts("test"), R)[:10]
    results = {}
    for name in KERNELS:
        torch.manual_seed(5)
        model = pruned(build(), **options)
        with using(name, model):
            before = kernels.steps_run[name]
            scores = model(batch, Background.for_evaluation(kg, "interpolation"))
            scores.pow(2).sum().backward()
            assert kernels.steps_run[name] > before
        results[name] = (scores.detach(), {n: p.grad for n, p in model.named_parameters()})
    assert torch.allclose(results["cpp"][0], results["torch"][0], atol=1e-10)
    for n, g in results["cpp"][1].items():
        assert g is not None and torch.allclose(g, results["torch"][1][n], atol=1e-8), n
    if options.get("priority") == "learned":  # the priority learns through the gate on kept messages
        assert results["cpp"][1]["priority.out.weight"].abs().sum() > 0


CUDA_CASES = [dict(), *PRUNINGS, dict(top_k=3, priority="learned"), "sparse-default", "gate", "chronological"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
@pytest.mark.parametrize("case", CUDA_CASES, ids=lambda o: o if isinstance(o, str) else (
    "+".join(f"{k}={v}" for k, v in o.items()) or "exact"))
def test_cuda_scores_and_gradients_equal_the_cpu(case, setting):
    """The CUDA path (torch ops on the GPU) against the CPU's, float64, for every propagation option, the
    shipped sparse default, the gate and chronological mode: the same scores, reach and gradients."""
    from tpar.model.config import SPARSE_PROPAGATION

    kg = repeating_kg(13)
    batch = make_queries(kg.facts("test"), R)[:10]
    bg = Background.for_evaluation(kg, setting)
    if case == "gate":
        base, options = build(gate=True), {}
    elif case == "chronological":
        base, options = build(activation="identity", chronological=True), {}
    else:
        base, options = build(), (dict(SPARSE_PROPAGATION) if case == "sparse-default" else case)
    results = {}
    for dev in ("cpu", "cuda"):
        torch.manual_seed(5)
        model = pruned(base, **options).to(dev)
        scores, reached = model.scores_and_reach(batch.to(dev), bg.to(dev))
        scores.pow(2).sum().backward()
        results[dev] = (scores.detach().cpu(), reached.cpu(), {n: p.grad.cpu() for n, p in model.named_parameters()
                                                               if p.grad is not None})
    assert results["cuda"][0].abs().sum() > 0
    assert torch.allclose(results["cpu"][0], results["cuda"][0], atol=1e-9)
    assert torch.equal(results["cpu"][1], results["cuda"][1])
    assert results["cpu"][2].keys() == results["cuda"][2].keys() and results["cpu"][2]
    for n, g in results["cpu"][2].items():
        assert torch.allclose(g, results["cuda"][2][n], atol=1e-8), n


def sparse_time_kg(seed: int = 14, scale: int = 10_000):
    """small_kg with its 12 time steps spread 10,000 steps apart: a huge span with few distinct times."""
    kg = small_kg(seed, dup_test_in_train=True)
    return make_kg(*(kg.facts(s) * np.array([1, 1, 1, scale]) for s in ("train", "valid", "test")),
                   num_entities=E, num_relations=R)


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
def test_sparse_time_axis_uses_the_rank_layout_and_equals_the_reference(setting, kernel):
    from tpar.model.network import TimeRows

    kg = sparse_time_kg()
    model = build()
    bg = Background.for_evaluation(kg, setting)
    batch = make_queries(kg.facts("test"), R)[:10]
    rows = TimeRows.for_batch(bg.index, batch.time)
    assert rows.layout == "rank" and rows.dt.shape[0] <= 12 * len(batch) + 1
    with torch.no_grad():
        got = model(batch, bg)
        ref = reference_scores(model, kg.all_facts() if setting == "extrapolation" else kg.facts("train"), setting,
                               list(zip(*(x.tolist() for x in (batch.subject, batch.relation, batch.answer, batch.time)))))
    assert torch.allclose(got, ref, atol=1e-5), (got - ref).abs().max()


def test_time_table_is_bounded_whatever_the_span_or_the_question_time():
    """The time encodings a batch allocates never grow with the data's span nor with how far the
    question lies from the data (asserted on the table's size, not on timing)."""
    from tpar.model.network import TimeRows

    huge = make_kg(train=[[0, 0, 1, 0], [1, 0, 2, 10 ** 12]], test=[[0, 0, 2, 10 ** 12 + 1]], num_entities=3,
                   num_relations=1)
    bg = Background.for_evaluation(huge, "extrapolation")
    far = torch.tensor([10 ** 12 + 1, 5 * 10 ** 15])
    rows = TimeRows.for_batch(bg.index, far)
    assert rows.dt.shape[0] <= 3 * 2 + 1  # 3 distinct link times x 2 question times + the self-loop row
    model = TPAR(ModelConfig(dim=4, num_layers=2, num_relations=1, dropout=0.0)).eval()
    batch = make_queries(huge.facts("test"), 1)[:1]
    with torch.no_grad():
        scores = model(batch, bg)
    assert scores[0, 1] != 0  # the link at t = 0 reaches entity 1 across the 10^12-step span
    dense = small_kg(15)
    q = torch.tensor([11, 10 ** 9])  # a question a billion steps after the data
    rows = TimeRows.for_batch(Background.for_evaluation(dense, "extrapolation").index, q)
    assert rows.dt.shape[0] <= 12 * 2 + 1


def test_the_kernel_cache_key_follows_what_the_build_depends_on(tmp_path, monkeypatch):
    """Source, torch version, compiler flags, compiler and Python ABI each change the key; the checkout's
    location does not (two checkouts of the same source share one build)."""
    inputs = kernel_build.build_inputs()
    assert set(inputs) >= {"source_sha256", "torch", "flags", "python_abi", "compiler", "cpu_sha1"}
    key = kernel_build.build_key(inputs)
    for field, value in (("source_sha256", "0" * 64), ("torch", "0.0.1"), ("flags", "-O0"),
                         ("python_abi", "cpython-39"), ("compiler", "clang++")):
        assert kernel_build.build_key({**inputs, field: value}) != key, field
    copy = tmp_path / "elsewhere" / "links.cpp"
    copy.parent.mkdir()
    copy.write_bytes(kernel_build.CPP_SOURCE.read_bytes())
    assert kernel_build.build_key(kernel_build.build_inputs(copy)) == key
    copy.write_text(copy.read_text() + "\n// changed\n")
    assert kernel_build.build_key(kernel_build.build_inputs(copy)) != key
    monkeypatch.setenv(kernel_build.CACHE_ENV, str(tmp_path / "cache"))
    assert kernel_build.cache_root() == tmp_path / "cache"


def test_many_concurrent_builders_build_once_and_a_killed_build_is_cleaned(tmp_path):
    """Eight builders (threads: each takes the file lock through its own open file, as processes do)
    ask at once: one compiles, the others wait and load its finished folder. A temporary folder left by
    a killed build is removed by the next build and never served."""
    import threading
    import time

    root, name = tmp_path / "cache", "tpar_links_test"
    root.mkdir()
    stale = root / f"{name}.build-dead"
    stale.mkdir()
    (stale / "half.so").write_text("half")
    compiled = []

    def compile_into(tmp):
        compiled.append(tmp)
        time.sleep(0.3)
        (tmp / "lib.so").write_text("built")
        return "module from " + tmp.name

    def load_built(folder):
        assert (folder / "build.json").is_file()
        return "module: " + (folder / "lib.so").read_text()

    results = []
    threads = [threading.Thread(target=lambda: results.append(
        kernel_build.build_once(root, name, compile_into, load_built, {"k": "v"}))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(compiled) == 1 and len(results) == 8
    assert results.count("module: built") == 7 and not stale.exists()
    assert sorted(x.name for x in root.iterdir()) == [name, f"{name}.lock"]
    assert json.loads((root / name / "build.json").read_text()) == {"k": "v"}
    # a failed build leaves nothing behind, and the next call tries again
    def failing(tmp):
        raise RuntimeError("no compiler")
    with pytest.raises(RuntimeError):
        kernel_build.build_once(root, "other", failing, load_built)
    assert not any(x.name.startswith("other.build-") for x in root.iterdir()) and not (root / "other").exists()


def gated(model: TPAR) -> TPAR:
    """The same weights with a GRU gate added (its own weights left to the caller)."""
    other = TPAR(dataclasses.replace(model.cfg, gate=True)).double().eval()
    other.load_state_dict(model.state_dict(), strict=False)
    return other


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
def test_gate_carries_each_nodes_previous_state(setting, kernel):
    """GRUCell(x, h_prev) = (1 − z)·n + z·h_prev. With z → 1 every state stays h^0 = 0, so every score
    is 0; with z → 0, W_hn = 0, W_in = I and zero biases, h^ℓ = tanh(x^ℓ): the gated model with δ =
    identity equals the ungated one with δ = tanh, which pins where the gate sits (after Eq. 8)."""
    kg = small_kg(11)
    bg = Background.for_evaluation(kg, setting)
    batch = make_queries(kg.facts("test"), R)[:10]
    d = 6
    tanh_model = small_model("tanh", seed=3)
    ident = TPAR(dataclasses.replace(tanh_model.cfg, activation="identity")).double().eval()
    ident.load_state_dict(tanh_model.state_dict())
    g = gated(ident)
    with torch.no_grad():
        g.gate.weight_ih.zero_()
        g.gate.weight_hh.zero_()
        g.gate.bias_ih.zero_()
        g.gate.bias_hh.zero_()
        g.gate.weight_ih[2 * d:].copy_(torch.eye(d))  # W_in = I (rows: reset, update, new)
        g.gate.bias_ih[d:2 * d] = -60.0  # z = σ(−60) ≈ 0
        assert torch.allclose(g(batch, bg), tanh_model(batch, bg), atol=1e-10)
        g.gate.bias_ih[d:2 * d] = 60.0  # z ≈ 1: the previous state (0 at the start) is kept
        assert g(batch, bg).abs().max() < 1e-12
    # and a trained-like gate changes the scores and takes gradients
    g2 = gated(ident).train()
    loss = multiclass_log_loss(g2(batch, bg), batch.answer)
    loss.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in g2.gate.parameters())


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
def test_fused_gate_equals_the_gru_cell(setting):
    """The C++ gate pass (element-wise GRU; W_hh only for nodes that existed before the step, since a
    new node's h_prev is 0) gives GRUCell's scores and every parameter's gradient, and it is the one
    that ran: ``cpp-gate`` counts one call per step, and none under the torch kernel."""
    if not compiler_available():
        pytest.skip("no C++ compiler or ninja here")
    kg = small_kg(12)
    bg = Background.for_evaluation(kg, setting)
    batch = make_queries(kg.facts("test"), R)[:10]
    results = {}
    for name in KERNELS:
        torch.manual_seed(7)
        model = gated(small_model("tanh", seed=5)).train()
        with torch.no_grad():  # a gate far from its initialisation: every term matters
            for p in model.gate.parameters():
                p.normal_(0, 0.7)
        with using(name, model):
            before = kernels.steps_run["cpp-gate"]
            scores = model(batch, bg)
            (scores.pow(2) * torch.linspace(0.5, 2, scores.shape[1], dtype=scores.dtype)).sum().backward()
            assert kernels.steps_run["cpp-gate"] - before == (model.cfg.num_layers if name == "cpp" else 0)
        results[name] = (scores.detach(), {n: p.grad for n, p in model.named_parameters()})
    assert results["cpp"][0].abs().max() > 0
    assert torch.allclose(results["cpp"][0], results["torch"][0], atol=1e-10)
    for n, g in results["cpp"][1].items():
        assert g is not None and torch.allclose(g, results["torch"][1][n], atol=1e-8), n
    # the autograd function alone, new and old rows mixed: analytical gradients match numerical ones
    cell = torch.nn.GRUCell(4, 4).double()
    x = torch.randn(9, 4, dtype=torch.double, requires_grad=True)
    h_old = torch.randn(4, 4, dtype=torch.double, requires_grad=True)
    old_row = torch.full((9,), -1, dtype=torch.long).index_copy(0, torch.tensor([0, 3, 4, 8]), torch.arange(4))
    assert torch.autograd.gradcheck(lambda x, h, *w: kernels._GateStep.apply(x, h, old_row, *w),
                                    (x, h_old, *cell.parameters()))


def test_torch_kernel_chunks_do_not_change_the_result(monkeypatch):
    """The torch kernel processes links in chunks (larger on a GPU): any chunk size, same scores and gradients."""
    kg = small_kg(12)
    bg = Background.for_evaluation(kg, "extrapolation")
    batch = make_queries(kg.facts("test"), R)[:10]
    out = []
    for chunk in (kernels._CHUNK, 3):
        monkeypatch.setattr(kernels, "_CHUNK", chunk)
        model = small_model("tanh", seed=4)
        with using("torch", model):
            s = model(batch, bg)
            s.sum().backward()
        out.append((s.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    assert torch.allclose(out[0][0], out[1][0], atol=1e-12)
    assert all(torch.allclose(a, b, atol=1e-10) for a, b in zip(out[0][1], out[1][1]))
    assert kernels._chunk(torch.zeros(1)) == 3  # CPU tensors use the CPU chunk


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation"])
def test_repeat_limit_reaches_exactly_the_entities_exact_propagation_reaches(setting, kernel):
    """``recent_repeats`` drops older copies of a fact, never a fact: every entity exact propagation
    reaches is reached, with fewer links walked."""
    kg = repeating_kg(15)
    batch = make_queries(kg.facts("test"), R)
    bg = Background.for_evaluation(kg, setting)
    exact, limited = build(), pruned(build(), recent_repeats=1)
    with torch.no_grad():
        _, reach_exact = exact.scores_and_reach(batch, bg)
        _, reach_limited = limited.scores_and_reach(batch, bg)
        tr_exact, tr_limited = PropagationTrace(), PropagationTrace()
        with using("torch", exact, limited):
            exact(batch, bg, trace=tr_exact)
            limited(batch, bg, trace=tr_limited)
    assert torch.equal(reach_exact, reach_limited)
    assert sum(tr_limited.num_links) < sum(tr_exact.num_links)


def test_exact_leading_steps_keep_every_direct_fact_of_the_subject():
    """With ``exact_steps=1`` the first step walks every link of the subject however old, whatever the
    window; the window applies from the second step on."""
    kg = repeating_kg(16)
    batch = make_queries(kg.facts("test"), R)
    bg = Background.for_evaluation(kg, "extrapolation")
    tr_exact, tr_first = PropagationTrace(), PropagationTrace()
    with torch.no_grad():
        build()(batch, bg, trace=tr_exact)
        pruned(build(), history_window=1, exact_steps=1)(batch, bg, trace=tr_first)
    assert torch.equal(tr_first.links[0], tr_exact.links[0])
    later = torch.cat(tr_first.links[1:])
    assert ((batch.time[later[:, 0]] - later[:, 4]) <= 1).all()
    assert sum(tr_first.num_links[1:]) < sum(tr_exact.num_links[1:])


def test_a_model_can_be_tested_without_the_pruning_it_was_trained_with(tmp_path):
    """``Checkpoint.build_model(exact_propagation=True)``: the same weights with every pruning off
    (a learned priority's weights are set aside), equal to a model built exact from those weights."""
    from tpar.model.checkpoint import from_model
    from tpar.model.config import RunConfig, TrainConfig

    kg = repeating_kg(17)
    model = pruned(build(), history_window=2, top_k=2, priority="learned", exact_steps=1).float()
    ck = from_model(model, RunConfig(model.cfg, TrainConfig()), kg, "extrapolation")
    exact = ck.build_model(exact_propagation=True)
    assert exact.cfg.propagation == "exact" and exact.priority is None
    assert ck.build_model().cfg.propagation == "window=2+top_k=2(learned) from step 2"
    batch = make_queries(kg.facts("test"), R)[:8]
    bg = Background.for_evaluation(kg, "extrapolation")
    reference = pruned(build(), history_window=0).float()
    with torch.no_grad():
        assert torch.allclose(exact(batch, bg), reference(batch, bg), atol=1e-5)


def test_dropout_drops_a_share_p_and_keeps_the_mean():
    """The layers' dropout: inactive in evaluation; while training it zeroes a share p of the values
    and scales the rest by 1/(1 − p), so the expectation is unchanged; gradients follow the mask."""
    from tpar.model.layers import dropout

    torch.manual_seed(0)
    x = torch.rand(400, 250, dtype=torch.double) + 1.0
    assert dropout(x, 0.2, training=False) is x
    assert dropout(x, 0.0, training=True) is x
    y = dropout(x.requires_grad_(), 0.2, training=True)
    dropped = (y == 0).double().mean().item()
    assert abs(dropped - 0.2) < 0.005
    kept = y != 0
    assert torch.allclose(y[kept], x[kept] / 0.8)
    assert abs(y.mean().item() / x.mean().item() - 1) < 0.01
    y.sum().backward()
    assert torch.equal(x.grad != 0, kept) and torch.allclose(x.grad[kept], torch.full_like(x.grad[kept], 1.25))
    assert (dropout(x.detach(), 1.0, training=True) == 0).all()


PRUNED_OPTIONS = {
    "sparse default, top-K 2": {"recent_repeats": 1, "link_cap": 2, "exact_steps": 1, "top_k": 2},
    "window 3 + top-K 2, learned priority": {"history_window": 3, "top_k": 2, "priority": "learned"},
    "first step exact, window 3 + top-K 2, learned priority": {"exact_steps": 1, "history_window": 3, "top_k": 2,
                                                               "priority": "learned"},
}


@pytest.mark.parametrize("options", PRUNED_OPTIONS.values(), ids=PRUNED_OPTIONS.keys())
def test_pruned_and_learned_priority_propagation_keep_the_leakage_rules(options):
    """The leakage rules hold for every pruning option, the learned priority (whose σ gates messages) included:
    a forecast walks only links before the question's time, and an interpolation question's own fact and its
    inverse are invisible to it -- adding that fact to train changes nothing for its own two questions (while it
    changes other questions' scores), whatever the pruning keeps."""
    torch.manual_seed(1)
    model = TPAR(ModelConfig(dim=6, attn_dim=3, num_layers=3, dropout=0.0, num_relations=R, time_span=12,
                             **options)).double()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    model.eval()
    assert model.cfg.top_k == 2 and (model.priority is not None) == (options.get("priority") == "learned")
    kg = small_kg(5, dup_test_in_train=True)
    batch = make_queries(kg.facts("test"), R)
    tr = PropagationTrace()
    with torch.no_grad():
        model(batch, Background.for_evaluation(kg, "extrapolation"), trace=tr)
    assert sum(tr.num_links) > 0
    for links in tr.links:
        assert (links[:, 4] < batch.time[links[:, 0]]).all()
    exact, tr_exact = TPAR(dataclasses.replace(model.cfg, history_window=0, link_cap=0, recent_repeats=0,
                                               exact_steps=0, top_k=0)).double().eval(), PropagationTrace()
    exact.load_state_dict(model.state_dict(), strict=False)
    with torch.no_grad():
        exact(batch, Background.for_evaluation(kg, "extrapolation"), trace=tr_exact)
    assert sum(tr.num_links) < sum(tr_exact.num_links)  # the pruning does prune here
    one, clean, own = own_fact_in_train_or_not(kg, len(batch))
    with torch.no_grad():
        a = model(batch, Background.for_evaluation(one, "interpolation"))
        b = model(batch, Background.for_evaluation(clean, "interpolation"))
    assert torch.allclose(a[own], b[own], atol=1e-12)
    assert not torch.allclose(a[~own], b[~own], atol=1e-12)


def test_a_propagation_is_said_in_plain_words_with_each_limit_it_holds():
    """The card's words on a propagation name every limit with its value (and nothing for a limit that is off), say
    whether it is the sparse default, and give the short form after them."""
    from dataclasses import replace

    from tpar.model.card import propagation_note
    from tpar.model.config import SPARSE_DEFAULT, ModelConfig

    exact = ModelConfig()
    assert propagation_note(exact) == "propagation: " + exact.propagation_words and exact.propagation_words.startswith("exact (")
    sparse = ModelConfig(**SPARSE_DEFAULT)
    words = sparse.propagation_words
    assert words.startswith("the sparse default (") and f"at most its {SPARSE_DEFAULT['link_cap']} links" in words
    assert f"at most {SPARSE_DEFAULT['top_k']} entities" in words and "the first step exact" in words
    assert "latest time only" in words and "within" not in words
    other = replace(sparse, link_cap=0, history_window=30, recent_repeats=3, exact_steps=2, priority="learned")
    words = other.propagation_words
    assert words.startswith("pruned (") and "within 30 time steps" in words and "its 3 latest times" in words
    assert "links nearest" not in words and "learned priority" in words and "the first 2 steps exact" in words
    assert f"`{other.propagation}` for short" in propagation_note(other)


def test_a_cards_test_figures_carry_their_verdicts(tmp_path):
    """The walk-through: the card kept the figures and lost the verdicts the Train page gave (baseline, chance, the
    number of questions). A run tested with `--eval-test` records the frequency baseline's MRR and the data's entity
    count; the card says the questions measured, the baseline verdict and what limits the figures."""
    from helpers import SAMPLE_CHECKPOINT

    from tpar.model import card
    from tpar.model.checkpoint import Checkpoint

    ck = Checkpoint.load(SAMPLE_CHECKPOINT)
    ck.metrics = {"test_extrapolation": {"realistic": {"mrr": 0.28, "hits@1": 0.1, "hits@3": 0.3, "hits@10": 1.0,
                                                       "count": 42}}}
    ck.extra = {**ck.extra, "entities": 11, "baseline_test": {"extrapolation": {"method": "frequency", "mrr": 0.225}}}
    text = card.render(ck, "m").replace("\\", "").replace("\u2060", "")
    assert "the frequency baseline scores MRR 22.50% on them: the model beats it by 5.50 points" in text
    assert "no better than a uniform guess among the 11 entities (about 27.5%)" in text
    assert "H@10 91%" in text and "measured on only 42 questions" in text
    plain = Checkpoint.load(SAMPLE_CHECKPOINT)  # a run that recorded none of it: the card says nothing more
    assert "frequency baseline scores" not in card.render(plain, "p") and "uniform guess" not in card.render(plain, "p")


@pytest.mark.parametrize("entities, count", [(10 ** 12, 14_742), (10 ** 5000, 10 ** 5000), (-3, -1), (True, True)],
                         ids=["trillion", "5000-digits", "negative", "bool"])
def test_a_forged_entity_or_question_count_neither_hangs_nor_breaks_the_card(entities, count):
    """Hostile audit 36: a checkpoint's extra["entities"] is read from the file, and a uniform guess's MRR summed H_n
    term by term (10^12 entities: some 15 hours, on every visit to Data and model); a 5,000-digit count is beyond
    what Python prints. H_n takes constant time, and a count no run could have is left out of the card."""
    import time

    from helpers import SAMPLE_CHECKPOINT

    from tpar.evaluation.chance import uniform_mrr
    from tpar.model import card
    from tpar.model.checkpoint import Checkpoint

    ck = Checkpoint.load(SAMPLE_CHECKPOINT)
    ck.metrics = {"test_extrapolation": {"realistic": {"mrr": 0.28, "hits@1": 0.1, "hits@3": 0.3, "hits@10": 0.5,
                                                       "count": count}}}
    ck.extra = {**ck.extra, "entities": entities}
    start = time.perf_counter()
    text = card.render(ck, "m").replace("\\", "").replace("\u2060", "")
    assert time.perf_counter() - start < 5
    sane = entities == 10 ** 12
    assert ("measured on 14,742 test questions" in text) == sane and "uniform guess" not in text
    assert "measured on" in text or not sane
    assert abs(uniform_mrr(10 ** 12) - 28.2082367808 / 10 ** 12) < 1e-20 and uniform_mrr(10 ** 5000) == 0


def test_a_card_file_larger_than_a_page_is_not_read_and_the_page_says_why(tmp_path):
    """Hostile audit 36: a 60 MB card beside a checkpoint (with a valid mark) was escaped and sent whole on every
    visit to Data and model (13 s, 1.4 GB each). A card file over a MB is not read; the card shown is written from
    the checkpoint, and the note says why the file was left."""
    import shutil

    from helpers import SAMPLE_CHECKPOINT

    from tpar.model import card
    from tpar.model.checkpoint import Checkpoint

    ck_path = tmp_path / "big.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, ck_path)
    ck = Checkpoint.load(ck_path)
    mark = f"<!-- tpar model card of the checkpoint with sha256 {ck.digest} -->"
    (tmp_path / "big.md").write_text("# Forged\n" + "hello [x](y) $z$\n" * 70_000 + mark + "\n")
    assert (tmp_path / "big.md").stat().st_size > card.MAX_CARD_BYTES
    text, why = card.card_for(ck, ck_path)
    assert "# Forged" not in text and text.startswith("# Model card: big")
    assert why.startswith("big.md was not read (") and "larger than tpar reads" in why
    (tmp_path / "big.md").write_text("# Small\n" + mark + "\n")
    assert card.card_for(ck, ck_path) == ("# Small\n", "")


def test_a_margin_over_the_frequency_baseline_within_a_tenth_of_a_point_is_level_not_a_win():
    """Walk-through 37: 'this model beats it by 0.03 points' stood beside 'no better than a uniform guess'."""
    from tpar.evaluation.baselines import ahead_text

    assert ahead_text(0.0100, 0.0097) == "is level with it (0.03 points ahead)"
    assert ahead_text(0.2800, 0.2250) == "beats it by 5.50 points"


def test_the_window_admits_its_edges_both_sides_in_interpolation_and_the_past_only_in_extrapolation():
    """Fidelity review 39 F4: with W = 2 and t_q = 5, links at t_q ± W are in, those at t_q ± (W + 1) out; the
    upper edge (t_q + W) was never exercised (an off-by-one there passed every test)."""
    facts = np.array([[0, 0, 1, 3], [0, 0, 2, 2], [0, 0, 3, 7], [0, 0, 4, 8], [5, 1, 6, 5]])
    query = make_queries(np.array([[0, 1, 6, 5]]), R, "object")  # (0, r1, ?, 5): not a fact of the background
    model = pruned(small_model("tanh", seed=1), history_window=2)
    for setting, want in (("interpolation", {3, 7}), ("extrapolation", {3})):
        tr = PropagationTrace()
        with torch.no_grad():
            model(query, Background.from_facts(facts, E, R, setting), trace=tr)
        assert {int(t) for t in tr.links[0][:, 4]} == want, setting


def test_the_loss_is_eq_10_and_dropout_acts_in_training_only():
    """Fidelity review 39 F5: Eq. 10's multi-class log-loss, -f(q, a) + log Σ_e exp f(q, e) (averaged over the
    questions), written out here; dropout changes a training forward pass and never an evaluation one."""
    torch.manual_seed(0)
    scores, answers = torch.randn(4, 7, dtype=torch.float64), torch.tensor([0, 3, 6, 2])
    by_hand = (-scores[torch.arange(4), answers] + torch.log(torch.exp(scores).sum(1))).mean()
    assert torch.allclose(multiclass_log_loss(scores, answers), by_hand)
    kg = small_kg(13)
    model = TPAR(dataclasses.replace(small_model("tanh", seed=2).cfg, dropout=0.5)).double()
    model.load_state_dict(small_model("tanh", seed=2).state_dict())
    batch, bg = make_queries(kg.facts("test"), R), Background.for_evaluation(kg, "interpolation")
    with torch.no_grad():
        evaluated = [model.eval()(batch, bg) for _ in range(2)]
        torch.manual_seed(1)
        trained = model.train()(batch, bg)
    assert torch.equal(evaluated[0], evaluated[1]) and not torch.allclose(trained, evaluated[0])
