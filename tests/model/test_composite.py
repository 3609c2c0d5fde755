"""The composite model kind (issue #29): several checkpoints and the history prior ranked as one.

The composite's score is checked against the formula computed straight from the members' raw outputs (each
member's own TPAR built from its own file, the recurrency baseline built from the stored parameters), never from
the composite's parts; its file round-trips and refuses tampering; the prior sees exactly the model's background;
predict, explain, the CLI and the app work with it. All on the sample world (no benchmark data needed)."""

from __future__ import annotations

import json
import re
import math
import shutil
import zipfile
from pathlib import Path

import pytest
import torch

from helpers import ROOT, SAMPLE_CHECKPOINT, SAMPLE_WORLD, make_kg, rewrite_checkpoint
from tpar.cli import main
from tpar.data.loading import load_dataset
from tpar.errors import DataError
from tpar.evaluation.baselines import RecurrencyBaseline
from tpar.evaluation.protocol import evaluate, evaluation_queries
from tpar.graph.background import Background
from tpar.graph.queries import QueryBatch, Setting
from tpar.model import checkpoint as ckmod
from tpar.model.checkpoint import Checkpoint
from tpar.model.composite import CompositeCheckpoint, CompositeModel, HistoryPrior
from tpar.model.ranker import ModelRanker
from tpar.reasoning.explanation import Explainer
from tpar.reasoning.prediction import Predictor

QUESTION = ("Orora Front", "Mobilize against", "2025-12-20")


@pytest.fixture(scope="module")
def kg():
    return load_dataset(SAMPLE_WORLD)


@pytest.fixture(scope="module")
def composite(sample_composite) -> CompositeCheckpoint:
    return Checkpoint.load(sample_composite)


# ------------------------------------------------------------------------------------------------- the score
def test_the_composite_scores_as_the_formula_on_the_members_raw_outputs(composite, sample_composite, kg):
    """S = Σ f_i/(n·T_i) + β·log(ε + ψ) − β·log ε, and it ranks as the mean of the calibrated log-softmaxes plus
    β·log(ε + ψ) (posthoc_levers' formula): the difference is one constant per question."""
    ck = composite
    assert ck.kind == "composite" and len(ck.members) == 2 and ck.prior is not None
    members = [Checkpoint.load(SAMPLE_CHECKPOINT).build_model(),
               Checkpoint.load(sample_composite.parent / "sample-perturbed.member").build_model()]
    T = ck.temperatures
    eps, beta = ck.prior["eps"], ck.prior["beta"]
    rec = ck.prior["recurrency"]
    psi_model = RecurrencyBaseline(rec["lambda"], rec["alpha"],
                                   {int(r): (v["lambda"], v["alpha"]) for r, v in rec["per_relation"].items()})
    queries = evaluation_queries(kg, "test")[torch.arange(0, 600, 7)]
    facts = kg.all_facts()
    sparse = facts[facts[:, 3] < facts[:, 3].min() + 4]  # a short history: most entities have no evidence at all
    for bg in (Background.for_evaluation(kg, "extrapolation"),
               Background.from_facts(sparse, kg.num_entities, kg.num_relations, "extrapolation")):
        with torch.no_grad():
            f = [m(queries, bg).double() for m in members]
            got = ck.build_model()(queries, bg).double()
        psi = psi_model.score(queries, bg).double()
        n = len(f)
        direct = sum(fi / (n * t) for fi, t in zip(f, T)) + beta * torch.log(eps + psi) - beta * math.log(eps)
        assert torch.allclose(got, direct, atol=1e-4, rtol=1e-5)
        mean_log_probs = sum(torch.log_softmax(fi / t, dim=1) for fi, t in zip(f, T)) / n + beta * torch.log(eps + psi)
        shift = got - mean_log_probs
        assert float((shift.max(1).values - shift.min(1).values).max()) < 1e-3  # one constant per question
    # an entity with no path of any member and ψ = 0 scores exactly 0, as in a single model
    nothing = (psi == 0) & torch.stack([fi == 0 for fi in f]).all(0)
    assert nothing.any() and bool((got[nothing] == 0).all()) and bool((got[~nothing] != 0).any())


def test_the_valid_mrr_recorded_for_the_choice_is_the_composites_own(composite, kg):
    sel = composite.selection
    assert sel["split"] == "valid" and sel["chosen"] in sel["candidates"]
    assert set(sel["candidates"]) >= {"model 1", "model 2", "ensemble"}  # every candidate tried is kept
    assert all(k.startswith("ensemble") for k in [sel["chosen"]])  # it uses every member
    res = evaluate(kg, ModelRanker(composite.build_model(), "cpu"), "extrapolation", "valid", batch_size=64,
                   max_queries=sel["subset"], seed=sel["seed"], progress=False)
    assert res.metrics("realistic").mrr == pytest.approx(sel["candidates"][sel["chosen"]]["mrr"], abs=1e-9)
    assert composite.extra["calibration"]["extrapolation"]["split"] == "valid"


# ------------------------------------------------------------------------------------------------- the file
def test_round_trip_and_old_single_checkpoints_load_unchanged(composite, sample_composite, tmp_path, kg):
    again = tmp_path / "again.tpar"
    composite.save(again)
    back = Checkpoint.load(again)
    assert isinstance(back, CompositeCheckpoint) and back.digest == composite.digest
    assert back.temperatures == composite.temperatures and back.prior == composite.prior
    assert back.selection == composite.selection and back.member_names == composite.member_names
    assert [m.digest for m in back.members] == [m.digest for m in composite.members]
    assert back.members[0].digest == Checkpoint.load(SAMPLE_CHECKPOINT).digest  # the member's own fingerprint
    model = back.build_model()
    assert isinstance(model, CompositeModel) and model.state_dict().keys() == back.weights.keys()
    assert all(torch.equal(model.state_dict()[k], back.weights[k]) for k in back.weights)
    q = evaluation_queries(kg, "test")[:20]
    bg = Background.for_evaluation(kg, "extrapolation")
    with torch.no_grad():
        assert torch.equal(model(q, bg), composite.build_model()(q, bg))
    single = Checkpoint.load(SAMPLE_CHECKPOINT)
    assert type(single) is Checkpoint and single.kind == "single" and single.member_checkpoints == [single]
    with pytest.raises(DataError, match="not a training run's resume file"):
        Checkpoint.load(sample_composite, with_state=True)


def _tamper(src: Path, dst: Path, edit, member_digests: bool = True) -> Path:
    """``src`` with its metadata edited, every digest recomputed as a careful tamperer would (so only the values'
    own checks can catch it); ``member_digests=False`` leaves the members' own digests as they were."""
    def edit_meta(meta):
        edit(meta)
        if member_digests:
            for i, mm in enumerate(meta["members"]):
                payload_w = {k[len(f"members.{i}."):]: v for k, v in weights.items() if k.startswith(f"members.{i}.")}
                mm["sha256"] = ckmod.content_digest(mm, payload_w)

    weights = torch.load(src, weights_only=True)["weights"]
    return rewrite_checkpoint(dst, edit_meta, src=src)


@pytest.mark.parametrize("edit,why", [
    (lambda m: m["temperatures"].__setitem__(0, -1.0), "temperature of model 1"),
    (lambda m: m["temperatures"].pop(), "one temperature per member"),
    (lambda m: m["prior"].__setitem__("eps", 0.0), "prior eps"),
    (lambda m: m["prior"].__setitem__("beta", float("nan")), "prior beta"),
    (lambda m: m["prior"]["recurrency"].__setitem__("alpha", 2.0), "alpha"),
    (lambda m: m["prior"]["recurrency"]["per_relation"].__setitem__("999", {"lambda": 0.1, "alpha": 0.5}),
     "not a relation id"),
    (lambda m: m["selection"]["candidates"]["ensemble"].__setitem__("mrr", 1.7), "selection.candidates.ensemble.mrr"),
    (lambda m: m["members"][1]["relations"].reverse(), "model 2's relations"),
    (lambda m: m["members"][0]["metrics"].__setitem__("valid_mrr", -3), "model 1: refused: stored figures"),
    (lambda m: m.__setitem__("members", []), "members must be a list of 1 to"),
    (lambda m: m.__setitem__("kind", "single"), "kind must be 'composite'"),
    # numbers no float holds (math.isfinite would overflow), wrong settings, parts that do not belong together
    (lambda m: m["temperatures"].__setitem__(0, 10 ** 400), "temperature of model 1"),
    (lambda m: m["prior"].__setitem__("eps", 10 ** 400), "prior eps"),
    (lambda m: m["prior"]["recurrency"].__setitem__("lambda", 10 ** 400), "lambda"),
    (lambda m: m["metrics"].__setitem__("valid_mrr", 10 ** 400), "integer of 1,329 bits"),
    (lambda m: m.__setitem__("setting", "bogus"), "setting 'bogus' is not one of"),
    (lambda m: m.__setitem__("setting", "unified"), "'unified' is not one"),
    (lambda m: m["members"][0].__setitem__("kind", "composite"), "model 1 is not a single trained model"),
    (lambda m: m["members"][1].__setitem__("data_fingerprint", "0" * 64), "model 2 was trained on other data"),
    (lambda m: m.__setitem__("member_names", ["only-one.tpar"]), "one name per member"),
    (lambda m: m["extra"].__setitem__("member_digests", ["0" * 64, "1" * 64]), "member digests recorded do not match"),
    # a selection record the card and the app read: each field of its type
    (lambda m: m["selection"].__setitem__("candidates", []), "selection.candidates must be a dict"),
    (lambda m: m["selection"]["candidates"]["ensemble"].pop("mrr"), "has no number mrr"),
    (lambda m: m["selection"].__setitem__("subset", "300"), "selection.subset must be a int"),
    (lambda m: m["selection"].__setitem__("temperature_sources", {"a": 1}), "temperature_sources must be a list"),
    (lambda m: m["selection"].__setitem__("kept", [0, -1]), "selection.kept must hold positions"),
    (lambda m: m["prior"]["recurrency"].__setitem__("fit", {"queries": "many"}), "fit queries 'many'"),
])
def test_a_tampered_composite_is_refused_by_name(sample_composite, tmp_path, edit, why):
    bad = _tamper(sample_composite, tmp_path / "bad.tpar", edit)
    with pytest.raises(DataError, match=why.replace("(", r"\(").replace(")", r"\)")):
        Checkpoint.load(bad)


def test_a_null_or_odd_calibration_is_set_aside_with_a_note(sample_composite, tmp_path):
    """``calibration: null`` (or a calibration naming a split or setting this code never writes: it is shown to
    users) loads with a note, and every reader of the stored calibration sees none."""
    from tpar.evaluation.calibration import stored

    for name, edit in (("null", lambda m: m["extra"].__setitem__("calibration", None)),
                       ("split", lambda m: m["extra"]["calibration"]["extrapolation"].__setitem__(
                           "split", "valid [x](http://evil.example)"))):
        ck = Checkpoint.load(_tamper(sample_composite, tmp_path / f"{name}.tpar", edit))
        assert stored(ck.extra, "extrapolation") is None, name
        assert any("calibration" in n for n in ck.load_notes), name


def test_metadata_too_large_is_refused_before_it_is_parsed(sample_composite, tmp_path, monkeypatch):
    monkeypatch.setattr(ckmod, "MAX_META_CHARS", 1000)
    monkeypatch.setattr(json, "loads", lambda *a, **k: pytest.fail("parsed"))
    for path in (sample_composite, SAMPLE_CHECKPOINT):
        with pytest.raises(DataError, match="more than a checkpoint's may be"):
            Checkpoint.load(path)


def test_a_member_altered_behind_its_own_digest_is_refused(sample_composite, tmp_path):
    bad = _tamper(sample_composite, tmp_path / "bad.tpar", lambda m: m["members"][1]["history"].clear(),
                  member_digests=False)
    with pytest.raises(DataError, match="model 2's metadata or weights do not match its recorded sha256"):
        Checkpoint.load(bad)


def test_corrupt_weights_and_files_are_refused(sample_composite, tmp_path):
    payload = torch.load(sample_composite, weights_only=True)
    key = next(k for k in payload["weights"] if k.startswith("members.1.") and payload["weights"][k].is_floating_point())
    altered = dict(payload, weights={**payload["weights"], key: payload["weights"][key] + 1})
    torch.save(altered, tmp_path / "w.tpar")
    with pytest.raises(DataError, match="do not match their recorded sha256"):
        Checkpoint.load(tmp_path / "w.tpar")

    def nan(p):
        p["weights"][key] = torch.full_like(p["weights"][key], float("nan"))
    with pytest.raises(DataError, match="NaN"):
        Checkpoint.load(_tamper_payload(sample_composite, tmp_path / "nan.tpar", nan))

    def stray(p):
        p["weights"]["members.7.extra"] = torch.zeros(3)
    with pytest.raises(DataError, match="weights of no member"):
        Checkpoint.load(_tamper_payload(sample_composite, tmp_path / "stray.tpar", stray))

    data = sample_composite.read_bytes()
    (tmp_path / "cut.tpar").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="not a readable checkpoint"):
        Checkpoint.load(tmp_path / "cut.tpar")
    torch.save(dict(payload, format="tpar-composite-v9"), tmp_path / "new.tpar")
    with pytest.raises(DataError, match="composite model of format version '9'.*newer tpar"):
        Checkpoint.load(tmp_path / "new.tpar")


def _tamper_payload(src: Path, dst: Path, edit) -> Path:
    """``src`` with its payload edited and every digest recomputed over the edited weights."""
    payload = torch.load(src, weights_only=True)
    edit(payload)
    meta = json.loads(payload["meta"])
    for i, mm in enumerate(meta["members"]):
        mm["sha256"] = ckmod.content_digest(mm, {k[len(f"members.{i}."):]: v for k, v in payload["weights"].items()
                                                 if k.startswith(f"members.{i}.")})
    meta["sha256"] = ckmod.content_digest(meta, payload["weights"])
    payload["meta"] = json.dumps(meta)
    torch.save(payload, dst)
    return dst


def test_the_composite_fits_in_one_small_file(sample_composite):
    with zipfile.ZipFile(sample_composite) as z:
        assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
    assert sample_composite.stat().st_size < 2 * 2 ** 20


# ------------------------------------------------------------------------------------------------- no leakage
def test_the_prior_never_sees_the_future_when_forecasting(kg):
    """Extrapolation: ψ of a question at t_q is the same whether the facts at and after t_q (its own fact
    included) are in the data or not."""
    prior = HistoryPrior(RecurrencyBaseline(0.1, 0.7), 0.01, 0.4)
    queries = evaluation_queries(kg, "test")[:64]
    facts = kg.all_facts()
    full = Background.from_facts(facts, kg.num_entities, kg.num_relations, "extrapolation")
    t_min = int(queries.time.min())
    past = Background.from_facts(facts[facts[:, 3] < t_min], kg.num_entities, kg.num_relations, "extrapolation")
    same = queries.time == t_min
    rows = torch.nonzero(same).squeeze(1)
    assert len(rows) > 2
    a, b = prior.psi(queries[rows], full), prior.psi(queries[rows], past)
    assert torch.equal(a, b) and bool((a > 0).any())


def test_the_prior_never_sees_the_questions_own_fact_or_its_inverse():
    """Interpolation: a question whose own fact (and so its inverse) sits in the background gets the ψ of the
    background without them -- the model's rule (Background.edges_from), not one of its own."""
    train = [(0, 0, 1, 3), (0, 0, 2, 1), (0, 0, 1, 5), (2, 0, 1, 4), (1, 1, 0, 2)]
    kg = make_kg(train, valid=[(0, 0, 1, 4)], test=[(0, 0, 1, 4)], num_entities=4, num_relations=2)
    own = [(0, 0, 1, 4)]
    prior = HistoryPrior(RecurrencyBaseline(0.5, 0.6), 0.01, 0.4)
    q = QueryBatch(*(torch.tensor(x) for x in ([0, 1], [0, 2], [4, 4], [1, 0], [0, 1])))  # (0, r, ?) and (1, r⁻¹, ?)
    with_own = Background.from_facts(torch.tensor(train + own).numpy(), 4, 2, "interpolation")
    without = Background.from_facts(torch.tensor(train).numpy(), 4, 2, "interpolation")
    assert torch.allclose(prior.psi(q, with_own), prior.psi(q, without), atol=1e-7)
    assert bool((prior.psi(q, without)[0, 1] > 0))  # the earlier repeats still count


def test_a_composite_forecast_is_blind_to_facts_at_or_after_its_time(composite, kg):
    """The whole composite (members and prior): adding facts at and after t_q, the answer's own among them,
    changes no score of a forecast."""
    p = Predictor(composite, kg, "cpu")
    before = p.predict(*QUESTION, setting="extrapolation", top_k=None)
    future = [("Orora Front", "Mobilize against", "Pelmorara", "2025-12-20"),
              ("Pelmorara", "Threaten", "Orora Front", "2025-12-20"),
              ("Orora Front", "Mobilize against", "Velara Agency", "2025-12-24")]
    after = p.predict(*QUESTION, setting="extrapolation", top_k=None, extra=future)
    assert [(a.entity, a.score) for a in before.answers] == [(a.entity, a.score) for a in after.answers]


# ------------------------------------------------------------------------------------------------- consumers
def test_predict_says_what_the_ranking_combines(composite, kg):
    p = Predictor(composite, kg, "cpu")
    pred = p.predict(*QUESTION, setting="extrapolation", top_k=5)
    assert pred.combines == "2 models and the history prior" and pred.formula.startswith("S = f₁/(2·")
    assert pred.answers[0].entity == "Hugo of Zanistan"
    assert pred.temperature == pytest.approx(composite.extra["calibration"]["extrapolation"]["temperature"])
    assert sum(a.probability for a in p.predict(*QUESTION, setting="extrapolation", top_k=None).answers) \
        + pred.unreached_probability == pytest.approx(1.0, abs=1e-6)


def test_the_explanation_adds_up_to_the_composite_score(composite, kg):
    ex = Explainer(Predictor(composite, kg, "cpu"))
    for importance in ("gradient", "integrated"):
        e = ex.explain(*QUESTION, "Hugo of Zanistan", setting="extrapolation", importance=importance, num_paths=4,
                       measure_facts=1)
        assert e.combines and len(e.members) == 2 and e.prior is not None
        # the parts the screen lists are what ranked the answer: the models' scaled scores plus the prior's term
        assert sum(m.contribution for m in e.members) + e.prior.contribution == pytest.approx(e.score, abs=1e-4)
        d = e.decomposition
        assert d.composite and d.prior == e.prior.contribution
        assert d.paths + d.rest + d.prior == pytest.approx(d.target, abs=1e-3 * max(1, abs(d.target)))
        assert sum(p.importance for p in e.paths) == pytest.approx(d.paths)
        assert e.paths[0].models == (1, 2) and "Threaten⁻¹ @ 2025-12-19" in e.paths[0].describe()
        assert e.facts[0].removal is not None and e.facts[0].removal > 0  # measured on the composite
        assert "never answered this question before" in e.prior.text() or e.prior.count > 0
        assert "S − S₀" in d.text() and "history prior" in d.text()
        assert not [w for w in e.warnings if "add up to" in w]
    tr = ex.trace(*QUESTION, setting="extrapolation", answer="Hugo of Zanistan", member=1)
    assert "model 2 of the 2" in tr.note and len(tr.layers) == 3
    cf = ex.counterfactual(*QUESTION, "Hugo of Zanistan", setting="extrapolation")
    assert cf.flipped and cf.removed == [("Hugo of Zanistan", "Threaten", "Orora Front", "2025-12-19")]


def test_the_history_prior_term_is_reported_from_the_questions_own_history(composite, kg):
    """The prior's account of an answer counts the earlier (s, r, answer, t') the question may see, nothing later."""
    facts = kg.all_facts()
    times: dict[tuple, list[int]] = {}
    for s, r, o, t in facts.tolist():
        times.setdefault((s, r, o), []).append(t)
    s, r, o, t = next(tuple(f) for f in kg.facts("test").tolist()
                      if len([x for x in times[tuple(f[:3])] if x < f[3]]) >= 2)
    earlier = sorted(x for x in times[(s, r, o)] if x < t)
    e = Explainer(Predictor(composite, kg, "cpu")).explain(
        kg.entities.name(s), kg.relations.name(r), kg.time_axis.label(t), kg.entities.name(o), setting="extrapolation",
        num_paths=1)
    assert e.prior.count == len(earlier) and e.prior.last_time == kg.time_axis.label(earlier[-1])
    assert e.prior.times[0] == kg.time_axis.label(earlier[-1]) and e.prior.contribution > 0
    assert f"answered this question {len(earlier)} times before" in e.prior.text()


def test_cli_ensemble_evaluate_predict_explain(tmp_path, capsys):
    other = tmp_path / "other.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, tmp_path / "a.tpar")
    from helpers import perturbed_sample_checkpoint

    perturbed_sample_checkpoint(other)
    out = tmp_path / "comp.tpar"
    assert main(["ensemble", "--checkpoints", str(tmp_path / "a.tpar"), str(other), "--data", str(SAMPLE_WORLD),
                 "--out", str(out), "--prior", "--setting", "extrapolation", "--valid-queries", "200",
                 "--prior-queries", "200", "--calibration-queries", "200", "--quiet", "--threads", "1"]) == 0
    text = capsys.readouterr().out
    assert "chosen: ensemble" in text and "* " in text and f"wrote {out}" in text
    assert "model 1 = a.tpar (temperature " in text and "model 2 = other.tpar (temperature " in text
    assert ": f₁ of the composite" in text and ": f₂ of the composite" in text
    assert main(["evaluate", "--checkpoint", str(out), "--data", str(SAMPLE_WORLD), "--split", "valid",
                 "--max-queries", "200", "--quiet", "--threads", "1"]) == 0
    captured = capsys.readouterr()
    assert "composite of 2 models" in captured.err
    chosen = Checkpoint.load(out).selection
    assert f"{100 * chosen['candidates'][chosen['chosen']]['mrr']:7.2f}" in captured.out  # the recorded valid MRR
    assert main(["predict", "--checkpoint", str(out), "--data", str(SAMPLE_WORLD), "--subject", QUESTION[0],
                 "--relation", QUESTION[1], "--time", QUESTION[2], "--setting", "extrapolation", "--top", "3"]) == 0
    assert "the ranking combines 2 models and the history prior" in capsys.readouterr().out
    assert main(["explain", "--checkpoint", str(out), "--data", str(SAMPLE_WORLD), "--subject", QUESTION[0],
                 "--relation", QUESTION[1], "--time", QUESTION[2], "--setting", "extrapolation",
                 "--answer", "Hugo of Zanistan", "--paths", "2", "--trace"]) == 0
    text = capsys.readouterr().out
    assert "history prior:" in text and "S − S₀" in text and "[models 1, 2]" in text and "trace: This traces model 1" in text


@pytest.mark.parametrize("args,why", [
    (["--checkpoints", "A"], "one checkpoint without --prior"),
    (["--checkpoints", "A", "A", "--prior"], "the same checkpoint is given twice"),
    (["--checkpoints", "A", "--prior", "--out", "A"], "--out is --checkpoints's file"),
    (["--checkpoints", "A", "--prior", "--weights"], "--weights chooses the models' weights: give two or more"),
    (["--checkpoints", "A", "--betas", "1"], "--betas and --eps are the history prior's grids: add --prior"),
    (["--checkpoints", "A", "--prior", "--betas", "0.4", "-1"], "--betas: the prior's β grid holds -1.0"),
    (["--checkpoints", "A", "--prior", "--eps", "nan"], "--eps: the prior's ε grid holds nan"),
    (["--checkpoints", "A", "--prior", "--betas", "inf"], "each value must be a finite number above 0"),
    # candidates are named by 6 significant digits: two such values would share one name (and one MRR)
    (["--checkpoints", "A", "--prior", "--betas", "0.1", "0.1000001"],
     "--betas: the prior's β grid holds 0.1 and 0.1000001, which both print as 0.1"),
])
def test_cli_ensemble_refuses_what_cannot_be_a_composite(tmp_path, capsys, args, why):
    shutil.copy(SAMPLE_CHECKPOINT, tmp_path / "A")
    args = [str(tmp_path / a) if a == "A" else a for a in args]
    out = [] if "--out" in args else ["--out", str(tmp_path / "c.tpar")]
    assert main(["ensemble", *args, "--data", str(SAMPLE_WORLD), *out]) == 2
    assert why in capsys.readouterr().err
    assert Checkpoint.load(tmp_path / "A").kind == "single"  # nothing given was replaced


@pytest.mark.parametrize("flag", ["--valid-queries", "--prior-queries", "--calibration-queries", "--threads"])
def test_cli_ensemble_refuses_a_negative_count(tmp_path, capsys, flag):
    with pytest.raises(SystemExit) as e:
        main(["ensemble", "--checkpoints", str(SAMPLE_CHECKPOINT), "--prior", "--data", str(SAMPLE_WORLD),
              "--out", str(tmp_path / "c.tpar"), flag, "-5"])
    assert e.value.code == 2 and f"argument {flag}: -5: below 0" in capsys.readouterr().err
    assert not (tmp_path / "c.tpar").exists()


def test_the_card_keeps_strings_from_the_file_as_text(composite):
    """Names and records read from a file (member names, the candidates, the choice, the command, the data name)
    never become links, images, code breaking out of its span or table cells in the card's Markdown."""
    import copy

    from tpar.model.card import render

    evil = "x`](http://evil.example) ![p](http://evil.example/p.png) | cell"
    ck = copy.copy(composite)
    ck.member_names = [evil] * len(composite.members)
    ck.data_name = evil
    ck.extra = {**composite.extra, "command": evil}
    ck.selection = {**composite.selection, "chosen": evil, "left_out": [evil],
                    "candidates": {**composite.selection["candidates"], evil: {"mrr": 0.99}}}
    text = render(ck, "[card](http://evil.example)")
    ticks = lambda line: len(re.findall(r"(?<!\\)`", line))  # noqa: E731 -- unescaped backticks
    assert all(ticks(line) % 2 == 0 for line in text.splitlines())  # no code span left open
    outside = re.sub(r"(?<!\\)`[^`\n]*`", "", text)  # in a code span a link is text
    assert not re.search(r"(?<!\\)\]\(", outside) and not re.search(r"(?<!\\)!\[", outside)
    assert "# Model card: \\[card\\]" in text and "`x'](http://evil.example)" in text  # ` shown as '
    cells = lambda line: len(re.findall(r"(?<!\\)\|", line))  # noqa: E731
    header = next(line for line in text.splitlines() if line.startswith("| model | file |"))
    rows = [line for line in text.splitlines() if line.startswith(("| 1 |", "| 2 |"))]
    assert rows and all(cells(r) == cells(header) for r in rows)
    chosen = next(line for line in text.splitlines() if line.startswith("| x\\`"))  # the candidate's row
    assert cells(chosen) == 5


@pytest.mark.parametrize("flag", ["--betas", "--eps"])
def test_cli_ensemble_grid_flag_without_a_value_is_refused(tmp_path, capsys, flag):
    with pytest.raises(SystemExit) as e:
        main(["ensemble", "--checkpoints", str(SAMPLE_CHECKPOINT), "--prior", "--data", str(SAMPLE_WORLD),
              "--out", str(tmp_path / "c.tpar"), flag])
    assert e.value.code == 2 and f"argument {flag}: expected at least one argument" in capsys.readouterr().err


def test_cli_ensemble_refuses_a_model_of_other_data(tmp_path, capsys):
    from helpers import tiny_world_csv

    (tmp_path / "mine.csv").write_text(tiny_world_csv())
    assert main(["ensemble", "--checkpoints", str(SAMPLE_CHECKPOINT), "--prior", "--setting", "extrapolation",
                 "--data", str(tmp_path / "mine.csv"), "--out", str(tmp_path / "c.tpar")]) == 2
    assert "not on this data" in capsys.readouterr().err


def test_the_card_says_what_it_combines_and_how_it_was_chosen(composite, sample_composite, tmp_path):
    from tpar.model.card import card_for, render, write_card

    text = render(composite, "mine")
    assert "kind: **composite**" in text and "## Models" in text and "## History prior" in text
    assert "## Selection on valid" in text and "(chosen)" in text and "Test was never looked at" in text
    shutil.copy(sample_composite, tmp_path / "c.tpar")
    write_card(tmp_path / "c.tpar")
    assert card_for(Checkpoint.load(tmp_path / "c.tpar"), tmp_path / "c.tpar")[1] == ""


def test_one_model_with_the_prior_is_a_composite_too(kg, tmp_path):
    """A single model with the copy prior: S = f/T + β·log(1 + ψ/ε), chosen on valid among that model alone and
    with the prior; calibrating it again (``tpar calibrate``) rewrites the composite file in place."""
    from tpar.model.ensemble import build_composite

    single = Checkpoint.load(SAMPLE_CHECKPOINT)
    ck, report = build_composite(kg, [single], ["sample-world-unified.tpar"], "extrapolation", valid_queries=200,
                                 prior_queries=200, calibration_queries=200)
    assert set(report.eligible) == set(report.candidates) and "model 1" in report.candidates
    path = tmp_path / "one.tpar"
    ck.save(path)
    back = Checkpoint.load(path)
    assert back.combination_text() == ("1 model and the history prior" if back.prior else "1 model")
    q = evaluation_queries(kg, "test")[:30]
    bg = Background.for_evaluation(kg, "extrapolation")
    with torch.no_grad():
        f = single.build_model()(q, bg).double()
        got = back.build_model()(q, bg).double()
    T = back.temperatures[0]
    want = f / T
    if back.prior is not None:
        rec = back.prior["recurrency"]
        psi = RecurrencyBaseline(rec["lambda"], rec["alpha"], {int(r): (v["lambda"], v["alpha"])
                                                              for r, v in rec["per_relation"].items()}).score(q, bg)
        want = want + back.prior["beta"] * torch.log1p(psi.double() / back.prior["eps"])
    assert torch.allclose(got, want, atol=1e-4, rtol=1e-5)
    assert main(["calibrate", "--checkpoint", str(path), "--data", str(SAMPLE_WORLD), "--max-queries", "100",
                 "--threads", "1"]) == 2  # its stored calibration rests on more questions: kept unless --replace
    assert main(["calibrate", "--checkpoint", str(path), "--data", str(SAMPLE_WORLD), "--max-queries", "100",
                 "--threads", "1", "--replace"]) == 0
    again = Checkpoint.load(path)
    assert again.kind == "composite" and again.extra["calibration"]["extrapolation"]["queries"] == 100


def test_the_prior_grids_are_the_ones_asked_for_and_an_edge_choice_is_said(kg, tmp_path, capsys, monkeypatch):
    """``--betas`` / ``--eps``: exactly those (ε, β) are tried (the selection record keeps them); a choice on a
    grid's edge is said (and listed under --json), since a value beyond it may do better on valid."""
    from tpar.model import ensemble
    from tpar.model.ensemble import EnsembleReport, build_composite

    single = Checkpoint.load(SAMPLE_CHECKPOINT)
    ck, report = build_composite(kg, [single], ["s.tpar"], "extrapolation", valid_queries=150, prior_queries=150,
                                 calibration_queries=150, eps_grid=(0.5, 0.01), beta_grid=(3.0,))
    assert set(report.candidates) == {"model 1", "model 1 + prior(eps=0.01, beta=3)", "model 1 + prior(eps=0.5, beta=3)"}
    assert ck.selection["eps_grid"] == [0.01, 0.5] and ck.selection["beta_grid"] == [3.0]
    edges = EnsembleReport({}, "x", [], [], [], {}, eps=0.01, beta=0.8, eps_grid=(0.01, 0.1), beta_grid=(0.2, 0.8))
    assert edges.grid_edges() == ["β = 0.8 is the largest tried", "ε = 0.01 is the smallest tried"]
    inner = EnsembleReport({}, "x", [], [], [], {}, eps=0.05, beta=0.4, eps_grid=(0.01, 0.05, 0.1),
                           beta_grid=(0.2, 0.4, 0.8))
    assert inner.grid_edges() == [] and EnsembleReport({}, "x", [], [], [], {}).grid_edges() == []
    # the sample world alone prefers no prior at β 8 or 16: the candidate at (ε 0.01, β 16) is made the best, so
    # the note's path runs (it never did: the check stood under "if chosen.prior is not None")
    real = ensemble.score_candidates

    def favour_the_edge(*args, **kwargs):
        scored = real(*args, **kwargs)
        scored["model 1 + prior(eps=0.01, beta=16)"]["mrr"] = 1.0
        return scored

    monkeypatch.setattr(ensemble, "score_candidates", favour_the_edge)
    out = tmp_path / "c.tpar"
    cmd = ["ensemble", "--checkpoints", str(SAMPLE_CHECKPOINT), "--prior", "--setting", "extrapolation", "--data",
           str(SAMPLE_WORLD), "--out", str(out), "--valid-queries", "150", "--prior-queries", "150",
           "--calibration-queries", "150", "--betas", "8", "16", "--eps", "0.01", "--quiet", "--threads", "1"]
    assert main(cmd) == 0
    text = capsys.readouterr().out
    chosen = Checkpoint.load(out)
    assert chosen.prior is not None and chosen.prior["beta"] == 16
    (note,) = [line for line in text.splitlines() if line.startswith("note: the chosen prior's")]
    assert note == ("note: the chosen prior's β = 16 is the largest tried: a value beyond it may do better on valid "
                    "(--betas / --eps widen the grids)")  # ε's grid has one value: no edge
    assert main(cmd + ["--json", "--replace"]) == 0  # the first run's composite is replaced only when asked
    assert json.loads(capsys.readouterr().out)["grid_edges"] == ["β = 16 is the largest tried"]


# ------------------------------------------------------------------------------------------------- weights
def test_weights_chosen_on_valid_rank_as_the_weighted_formula_and_leave_a_model_out(kg, tmp_path, monkeypatch):
    """``weights=True``: the members' weights are searched on valid (a model that adds nothing gets weight 0 and
    is left out, said so); the composite written ranks as S = Σ w_i f_i/T_i + β·log(1 + ψ/ε) computed from the members' raw
    outputs; the valid MRR recorded for it is its own; the file (format v2) round-trips its weights; an equal-weight
    composite keeps format v1; a search that would not fit in memory is refused before any scoring."""
    from helpers import perturbed_sample_checkpoint
    from tpar.model import ensemble
    from tpar.model.composite import COMPOSITE_FORMAT, COMPOSITE_FORMATS
    from tpar.model.ensemble import build_composite

    paths = [SAMPLE_CHECKPOINT, perturbed_sample_checkpoint(tmp_path / "near.tpar", seed=1, scale=0.05),
             perturbed_sample_checkpoint(tmp_path / "bad.tpar", seed=2, scale=1.5)]
    cks = [Checkpoint.load(p) for p in paths]
    names = [p.name for p in paths]
    said = []
    ck, report = build_composite(kg, cks, names, "extrapolation", valid_queries=300, prior_queries=300,
                                 calibration_queries=300, weights=True, on_step=said.append,
                                 eps_grid=(0.01, 0.1), beta_grid=(0.2, 0.8))
    sel = ck.selection
    assert sel["weights_searched"] and sel["chosen"] == report.chosen and report.chosen.startswith("weighted (")
    equal = max((k for k in sel["candidates"] if k.startswith("ensemble")), key=lambda k: sel["candidates"][k]["mrr"])
    assert sel["candidates"][report.chosen]["mrr"] > sel["candidates"][equal]["mrr"]
    # here the near copy adds least (the damaged one has T ≈ 25, so little say already): it is left out
    kept = [i for i, n in enumerate(names) if n in ck.member_names]
    assert sel["kept"] == kept  # by position: the card numbers each member as given, whatever its file name
    assert report.dropped == sel["left_out"] == [n for n in names if n not in ck.member_names] and report.dropped
    assert sel["given"] == names and any(f"left out (weight 0): {', '.join(report.dropped)}" in s for s in said)
    # the legend ties the candidates' "model i" (as given) to the formula's f_j (as kept)
    sub = "₁₂₃₄₅₆₇₈₉"
    legend = report.legend()
    assert len(legend) == len(names) and report.kept == kept
    for i, line in enumerate(legend):
        assert line.startswith(f"model {i + 1} = {names[i]} (temperature {report.temperatures[i]:.3g})")
        assert line.endswith(f"f{sub[kept.index(i)]} of the composite" if i in kept else "left out of the composite")
    w = ck.member_weights
    assert len(w) == len(kept) and abs(sum(w) - 1) < 1e-12
    assert [m.digest for m in ck.members] == [cks[i].digest for i in kept]
    # the score, from the members' raw outputs
    queries = evaluation_queries(kg, "valid")[torch.arange(0, 300, 5)]
    bg = Background.for_evaluation(kg, "extrapolation")
    rec = ck.prior["recurrency"]
    psi = RecurrencyBaseline(rec["lambda"], rec["alpha"], {int(r): (v["lambda"], v["alpha"]) for r, v in
                                                           rec["per_relation"].items()}).score(queries, bg).double()
    with torch.no_grad():
        f = [cks[i].build_model()(queries, bg).double() for i in kept]
        got = ck.build_model()(queries, bg).double()
    direct = sum(wi * fi / t for wi, fi, t in zip(w, f, ck.temperatures)) + ck.prior["beta"] * torch.log1p(
        psi / ck.prior["eps"])
    assert torch.allclose(got, direct, atol=1e-4, rtol=1e-5)
    assert "weighted" in ck.describe() and f"{w[0]:.3g}·f₁/" in ck.build_model().formula()
    # its recorded valid MRR is its own, and the file keeps the weights
    out = tmp_path / "weighted.tpar"
    ck.save(out)
    assert torch.load(out, weights_only=True)["format"] == COMPOSITE_FORMAT == COMPOSITE_FORMATS[-1]
    back = Checkpoint.load(out)
    assert back.member_weights == w
    res = evaluate(kg, ModelRanker(back.build_model(), "cpu"), "extrapolation", "valid", batch_size=64,
                   max_queries=300, seed=0, progress=False)
    assert res.metrics("realistic").mrr == pytest.approx(sel["candidates"][report.chosen]["mrr"], abs=1e-9)
    from tpar.model.card import render_composite
    card = render_composite(back, "weighted.tpar")
    assert "Σᵢ wᵢ·fᵢ(q, e) / Tᵢ" in card and "weight w; factor w/T" in card and f"{w[0]:.4f}; " in card
    assert f"left out (weight 0 on valid): `{report.dropped[0]}`" in card and "weights were searched" in card
    for i, name in enumerate(back.member_names):  # each model's own valid MRR alone, by its number when given
        alone = sel["candidates"][f"model {names.index(name) + 1}"]["mrr"]
        # a model left out renumbers the rest: each row says which given model it is, as the candidates count
        assert f"| {i + 1} (given {kept[i] + 1}) | `{name}` |" in card and f"| {100 * alone:.2f} |" in card
    assert (f"models {', '.join(str(i + 1) for i in range(len(kept)))} above are given models "
            f"{', '.join(str(j + 1) for j in kept)}.") in card
    # equal weights: format v1, as every composite written before
    plain, _ = build_composite(kg, cks[:2], names[:2], "extrapolation", prior=False, valid_queries=100,
                               calibration_queries=100)
    plain.save(tmp_path / "plain.tpar")
    assert torch.load(tmp_path / "plain.tpar", weights_only=True)["format"] == COMPOSITE_FORMATS[0]
    assert Checkpoint.load(tmp_path / "plain.tpar").member_weights is None
    # too large to keep in memory: refused at once, naming the way out
    monkeypatch.setattr(ensemble, "WEIGHT_SEARCH_BYTES", 1000)
    monkeypatch.setattr(ensemble, "score_candidates", lambda *a, **k: pytest.fail("scored"))
    with pytest.raises(DataError, match="--valid-queries"):
        build_composite(kg, cks, names, "extrapolation", weights=True)


def test_without_the_prior_the_weight_search_keeps_two_models(kg, tmp_path):
    """One model alone is that model, not a composite (``tpar ensemble`` refuses one checkpoint without --prior):
    without the prior no weighted candidate leaves fewer than two models, even when one adds nothing."""
    from helpers import perturbed_sample_checkpoint
    from tpar.model.ensemble import build_composite

    paths = [SAMPLE_CHECKPOINT, perturbed_sample_checkpoint(tmp_path / "bad.tpar", seed=2, scale=1.5)]
    ck, report = build_composite(kg, [Checkpoint.load(p) for p in paths], [p.name for p in paths], "extrapolation",
                                 prior=False, valid_queries=200, calibration_queries=200, weights=True)
    weighted = [k for k in ck.selection["candidates"] if k.startswith("weighted (")]
    assert weighted and all(k.count("×model") >= 2 for k in weighted)
    assert len(ck.members) == 2 and ck.prior is None and not report.dropped


@pytest.mark.parametrize("weights,fmt,why", [
    ([0.25, 0.75], "v1", "member weights belong to format"),           # weights a v1 reader would ignore
    (None, "v2", "member weights belong to format"),                   # v2 without its weights
    ([float("nan"), 0.5], "v2", "member weights"),
    ([-0.25, 1.25], "v2", "member weights"),
    ([0.0, 1.0], "v2", "member weights"),
    ([1.0], "v2", "member weights"),
    ([0.25, 0.25, 0.5], "v2", "member weights"),
    ([True, False], "v2", "member weights"),
    ([0.3, 0.3], "v2", "member weights"),
    ({"0": 0.5, "1": 0.5}, "v2", "member weights"),
    (["0.5", "0.5"], "v2", "member weights"),
    ([float("inf"), 0.5], "v2", "member weights"),
    ([5e-324, 1.0], "v2", "member weights"),                           # a share that counts for nothing
    ([10 ** 400, 0.5], "v2", "member weights"),                        # an integer no float holds
])
def test_a_tampered_weighted_composite_is_refused(sample_composite, tmp_path, weights, fmt, why):
    """v1 files never carry weights and v2 files always do; the weights are one finite positive share per model
    summing to 1 (no NaN, infinity, bool, string, or missing/extra share), else the file is refused by name."""
    from tpar.model.composite import COMPOSITE_FORMATS

    def edit(p):
        meta = json.loads(p["meta"])
        if weights is not None:
            meta["member_weights"] = weights
        p["meta"] = json.dumps(meta)
        p["format"] = COMPOSITE_FORMATS[0 if fmt == "v1" else 1]
    bad = _tamper_payload(sample_composite, tmp_path / "bad.tpar", edit)
    with pytest.raises(DataError, match=why):
        Checkpoint.load(bad)


def test_a_v2_file_with_good_weights_loads_and_ranks_with_them(sample_composite, tmp_path, kg):
    from tpar.model.composite import COMPOSITE_FORMATS

    def edit(p):
        meta = json.loads(p["meta"])
        meta["member_weights"] = [0.25, 0.75]
        p["meta"] = json.dumps(meta)
        p["format"] = COMPOSITE_FORMATS[1]
    ck = Checkpoint.load(_tamper_payload(sample_composite, tmp_path / "w.tpar", edit))
    assert ck.member_weights == [0.25, 0.75]
    assert ck.build_model().coefficients == (0.25 / ck.temperatures[0], 0.75 / ck.temperatures[1])
    plain = Checkpoint.load(sample_composite)
    assert plain.member_weights is None and torch.load(sample_composite, weights_only=True)["format"] == COMPOSITE_FORMATS[0]


def test_the_card_numbers_each_model_as_given_even_when_two_files_share_a_name(composite):
    """Members are named by file name (``runs/a/best.tpar`` and ``runs/b/best.tpar`` are both ``best.tpar``): each
    row of the card shows its own model's valid MRR alone and temperature source, not the first namesake's."""
    from dataclasses import replace

    from tpar.model.card import render_composite

    sel = json.loads(json.dumps(composite.selection))
    sel["candidates"]["model 1"]["mrr"], sel["candidates"]["model 2"]["mrr"] = 0.1111, 0.2222
    sel["temperature_sources"] = ["source one", "source two"]
    for extra in ({}, {"given": ["best.tpar", "best.tpar"], "left_out": []}):
        twins = replace(composite, member_names=["best.tpar", "best.tpar"], selection={**sel, **extra})
        card = render_composite(twins, "twins.tpar")
        row = [line for line in card.splitlines() if line.startswith("| 2 | `best.tpar` |")]
        assert len(row) == 1 and "| 22.22 |" in row[0] and "source two" in row[0], row


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_a_composite_chosen_on_the_gpu_is_the_one_chosen_on_the_cpu(kg, tmp_path):
    """``build_composite(device="cuda")`` (``tpar ensemble --device cuda``): the members score on the GPU, the
    prior and the candidates on the CPU; every candidate's valid MRR, the choice, the weights and the temperatures
    equal the CPU run's (scores agree to float32 rounding; ranks of ties may differ only below 1e-4 MRR)."""
    from helpers import perturbed_sample_checkpoint
    from tpar.model.ensemble import build_composite

    paths = [SAMPLE_CHECKPOINT, perturbed_sample_checkpoint(tmp_path / "near.tpar", seed=1, scale=0.05)]
    names = [p.name for p in paths]
    runs = {}
    torch.cuda.reset_peak_memory_stats()
    for device in ("cpu", "cuda"):
        runs[device] = build_composite(kg, [Checkpoint.load(p) for p in paths], names, "extrapolation",
                                       valid_queries=300, prior_queries=300, calibration_queries=300, weights=True,
                                       eps_grid=(0.01, 0.1), beta_grid=(0.2, 0.8), device=device, micro_batch=64)
        if device == "cuda":
            assert torch.cuda.max_memory_allocated() > 0  # the members did run there
    (cpu, cpu_report), (gpu, gpu_report) = runs["cpu"], runs["cuda"]
    assert (cpu.extra["device"], gpu.extra["device"]) == ("cpu", "cuda")
    assert gpu_report.chosen == cpu_report.chosen and gpu.member_weights == cpu.member_weights
    assert gpu.temperatures == pytest.approx(cpu.temperatures, rel=1e-4)
    for name, fig in cpu_report.candidates.items():
        assert gpu_report.candidates[name]["mrr"] == pytest.approx(fig["mrr"], abs=1e-4), name


def test_the_device_and_micro_batch_asked_for_reach_every_scoring_of_the_ensemble(kg, tmp_path, monkeypatch, capsys):
    """``tpar ensemble --device D --micro-batch M``: the members' temperatures, the candidates' valid pass and the
    composite's calibration all score with D and M (recorded here on the CPU; the GPU run is the test above);
    the composite records where it was chosen; a GPU asked for where there is none is refused before any work."""
    from helpers import perturbed_sample_checkpoint
    from tpar.model import ensemble

    seen = []
    real = ensemble.ModelRanker

    def recording(model, device="auto", micro_batch=16, **kw):
        seen.append((str(device), micro_batch))
        return real(model, device, micro_batch=micro_batch, **kw)

    monkeypatch.setattr(ensemble, "ModelRanker", recording)
    other = perturbed_sample_checkpoint(tmp_path / "near.tpar", seed=1, scale=0.05)
    out = tmp_path / "c.tpar"
    assert main(["ensemble", "--checkpoints", str(SAMPLE_CHECKPOINT), str(other), "--data", str(SAMPLE_WORLD),
                 "--setting", "extrapolation", "--valid-queries", "100", "--calibration-queries", "100",
                 "--prior-queries", "100", "--device", "cpu", "--micro-batch", "7", "--quiet",
                 "--out", str(out)]) == 0
    assert len(seen) >= 2 and set(seen) == {("cpu", 7)}  # candidates' pass and calibration (and any fitted T)
    assert CompositeCheckpoint.load(out).extra["device"] == "cpu"
    if not torch.cuda.is_available():
        seen.clear()
        rc = main(["ensemble", "--checkpoints", str(SAMPLE_CHECKPOINT), str(other), "--data", str(SAMPLE_WORLD),
                   "--setting", "extrapolation", "--device", "cuda", "--quiet", "--out", str(tmp_path / "g.tpar")])
        assert rc != 0 and "no GPU" in capsys.readouterr().err and not seen
    with pytest.raises(SystemExit) as e:  # argparse refuses it by name
        main(["ensemble", "--checkpoints", str(SAMPLE_CHECKPOINT), str(other), "--data", str(SAMPLE_WORLD),
              "--setting", "extrapolation", "--micro-batch", "0", "--quiet", "--out", str(tmp_path / "z.tpar")])
    assert e.value.code == 2 and "--micro-batch: 0: below 1" in capsys.readouterr().err


def test_the_card_names_the_sparse_default_only_when_every_run_used_it(composite):
    """``ModelConfig.is_sparse_default`` is today's default and nothing else; a composite card says "every model
    trained with the sparse default" only when each model and each of its warm starts was, and names the
    propagation of the warm starts otherwise."""
    import copy
    import dataclasses

    from tpar.model.card import propagation_of_members as escaped

    def propagation_of_members(ck) -> str:  # as a reader sees it (the card escapes what it read from the file)
        return re.sub(r"\\(.)", r"\1", escaped(ck)).replace("\u2060", "")
    from tpar.model.config import SPARSE_DEFAULT, ModelConfig

    assert ModelConfig(**SPARSE_DEFAULT).is_sparse_default
    for change in ({"top_k": 128}, {"history_window": 30}, {"priority": "learned"}, {"link_cap": 32},
                   {"exact_steps": 0}, {"recent_repeats": 0}):
        assert not ModelConfig(**{**SPARSE_DEFAULT, **change}).is_sparse_default, change
    ck = copy.deepcopy(composite)
    for m in ck.members:
        m.config.model = dataclasses.replace(m.config.model, **SPARSE_DEFAULT, history_window=0, priority="score")
        m.extra.pop("warm_start", None)
    assert "every model trained (warm starts included)" in propagation_of_members(ck)
    exact = dataclasses.asdict(dataclasses.replace(ck.members[0].config.model, link_cap=0, recent_repeats=0,
                                                   exact_steps=0, top_k=0))
    ck.members[0].extra["warm_start"] = {"from": "exact.tpar", "epochs": 3, "config": {"model": exact}}
    line = propagation_of_members(ck)
    assert "every model" not in line
    # each model is named with its own propagation: the one warm-started from an exact model says so
    assert "model 1: cap=24+repeats=1+top_k=256(score) from step 2 (the sparse default; its warm starts also exact)" \
        in line and "model 2: cap=24+repeats=1+top_k=256(score) from step 2 (the sparse default)" in line
    ck.members[0].config.model = ck.members[1].config.model = dataclasses.replace(ck.members[1].config.model,
                                                                                   link_cap=32, top_k=0)
    ck.members[0].extra.pop("warm_start")
    assert propagation_of_members(ck) == ("- propagation: every model trained, selected on valid and tested with "
                                          "cap=32+repeats=1 from step 2")
    ck.members[0].extra["warm_start"] = {"from": "old.tpar", "epochs": 2}  # a warm start whose config was not kept
    line = propagation_of_members(ck)
    assert "model 1: cap=32+repeats=1 from step 2 (a warm start's propagation not recorded)" in line
    assert "model 2: cap=32+repeats=1 from step 2" in line and "every model" not in line


def test_a_composite_card_numbers_each_model_as_it_was_given(composite):
    """The selection's candidates say "model j" for the j-th model given to ``tpar ensemble``: each row of the card
    names that number when models were left out before it, the selection says how the numbers map, and a
    composite written before the selection recorded ``kept`` is mapped by file name; when only the last models
    were left out the numbers agree and nothing more is said."""
    import copy

    from tpar.model.card import kept_positions, render_composite

    names = list(composite.member_names)
    assert len(names) == 2 and len(set(names)) == 2

    def row(card: str, label: str) -> str:
        return next(line for line in card.splitlines() if line.startswith(f"| {label} | "))

    ck = copy.deepcopy(composite)
    cands = {f"model {j}": {"mrr": 0.1 * j, "queries": 10} for j in (1, 2, 3, 4)}
    ck.selection = {**composite.selection, "given": ["a.tpar", names[0], "b.tpar", names[1]], "kept": [1, 3],
                    "left_out": ["a.tpar", "b.tpar"], "candidates": {**composite.selection["candidates"], **cands},
                    "temperature_sources": ["src a", "src 1", "src b", "src 2"]}
    card = render_composite(ck, "c")
    # row i carries given model kept[i]'s own figures: its valid MRR alone and its temperature's source
    assert f"`{names[0]}`" in row(card, "1 (given 2)") and "| 20.00 |" in row(card, "1 (given 2)")
    assert "src 1" in row(card, "1 (given 2)") and "src 2" in row(card, "2 (given 4)")
    assert f"`{names[1]}`" in row(card, "2 (given 4)") and "| 40.00 |" in row(card, "2 (given 4)")
    assert "models 1, 2 above are given models 2, 4." in card
    # written before `kept` was recorded: found by file name among the models given
    del ck.selection["kept"]
    assert kept_positions(ck.selection, names, 2) == [1, 3] and render_composite(ck, "c") == card
    # a name given twice cannot be placed: every model counts as kept, in order
    assert kept_positions({"given": [names[0], names[0], names[1]]}, names, 2) == [0, 1]
    # only the last model left out: the numbers agree, no label, no sentence
    ck.selection = {**ck.selection, "given": [names[0], names[1], "c.tpar"], "kept": [0, 1], "left_out": ["c.tpar"]}
    card = render_composite(ck, "c")
    assert f"`{names[0]}`" in row(card, "1") and f"`{names[1]}`" in row(card, "2")
    assert "(given" not in card and "above are given models" not in card


@pytest.mark.parametrize("replace", [False, True])
def test_cli_ensemble_waits_for_no_training_run_writing_its_output(tmp_path, capsys, replace):
    """Hostile audit 36 #8: `tpar train --out X` reserves X's lock and writes X only at its first validation; an
    ensemble onto X checked only that X did not exist yet, wrote its composite, and the run then replaced it
    without a word (with --replace, the composite replaced the run's model mid-training). The ensemble takes the
    same lock and is refused while it is held, before any work."""
    import subprocess
    import sys

    from tpar.data.locks import lock_path

    out = tmp_path / "x.tpar"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock_path(out).write_text(str(holder.pid))  # as a running `tpar train --out x.tpar` holds it
        argv = ["ensemble", "--checkpoints", str(SAMPLE_CHECKPOINT), "--prior", "--setting", "extrapolation",
                "--data", str(SAMPLE_WORLD), "--out", str(out)] + (["--replace"] if replace else [])
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "checkpoint x.tpar is in use by another process" in err, err
        assert not out.exists()
    finally:
        holder.kill()
