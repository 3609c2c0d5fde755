"""Temporal rules distilled from a checkpoint (``tpar rules``) and the rules as a predictor: the planted rules
of the sample world come back among the top 3 of their heads, time buckets, the JSON and CSV contract, the
rule ranker against a brute-force grounding and its leakage rules, and the command line's refusals."""

from __future__ import annotations

import csv
import json
import re
from itertools import product

import numpy as np
import pytest
import torch

from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD, make_kg
from tpar.cli import main
from tpar.data.timeaxis import TimeAxis
from tpar.errors import DataError
from tpar.graph.background import Background
from tpar.graph.queries import QueryBatch, Question, Setting, make_queries
from tpar.reasoning.distilled_rules import (BodyAtom, DistilledRule, GapScale, HeadSummary, RuleExample, RuleSet,
                                            bucket_from_bounds, follows_planted, planted_ranks, wilson_lower)
from tpar.reasoning.rule_ranker import RuleRanker

PLANTED = json.loads((SAMPLE_WORLD.parent / "rules.json").read_text(encoding="utf-8"))["rules"]
PLANTED_HEADS = sorted({p["head"].split(",")[1].strip() for p in PLANTED})


# ---------------------------------------------------------------- time buckets and the score
def test_day_buckets_same_day_then_1_3_4_10_11_40_older_and_mirrored_after():
    scale = GapScale.of(TimeAxis("day", "2025-01-01"))
    gaps = [0, 1, 3, 4, 10, 11, 40, 41, 400, -1, -3, -4, -10, -11, -40, -41]
    assert scale.buckets(np.array(gaps)).tolist() == [0, 1, 1, 2, 2, 3, 3, 4, 4, -1, -1, -2, -2, -3, -3, -4]
    assert [scale.bounds(b) for b in range(5)] == [(0, 0), (1, 3), (4, 10), (11, 40), (41, None)]
    assert [scale.bounds(-b) for b in range(1, 5)] == [(-3, -1), (-10, -4), (-40, -11), (None, -41)]
    assert [scale.text(b) for b in (0, 1, 4, -1, -4)] == ["t", "t-3..-1", "t-∞..-41", "t+1..+3", "t+41..+∞"]
    for b in range(-4, 5):
        assert bucket_from_bounds(*scale.bounds(b)) == b
    with pytest.raises(DataError, match="not one of the rule buckets"):
        bucket_from_bounds(2, 5)


def test_other_time_units_are_scaled_to_days_or_bucketed_in_their_own_unit():
    hours = GapScale.of(TimeAxis("hour", "2025-01-01T00:00", step=6))  # 4 steps a day
    assert hours.days and hours.unit == "d"
    assert hours.buckets(np.array([0, 3, 4, 15, 16, 44, 164])).tolist() == [0, 0, 1, 1, 2, 3, 4]
    days2 = GapScale.of(TimeAxis("day", "2025-01-01", step=2))
    assert days2.buckets(np.array([1, 2, 5, 6])).tolist() == [1, 2, 2, 3]
    years = GapScale.of(TimeAxis("year", "0"))
    assert not years.days and years.unit == "y"
    assert years.buckets(np.array([0, 2, 7, 30, 100])).tolist() == [0, 1, 2, 3, 4]
    assert years.text(1) == "t-3..-1y" and years.text(0) == "t (same y)"


def test_buckets_and_rules_read_out_in_words():
    days = GapScale.of(TimeAxis("day", "2025-01-01"))
    assert [days.words(b) for b in (0, 1, 2, 4, -1, -4)] == [
        "at t", "1 to 3 days before t", "4 to 10 days before t", "41 or more days before t", "1 to 3 days after t",
        "41 or more days after t"]
    years = GapScale.of(TimeAxis("year", "0"))
    assert years.words(0) == "in the same year as t" and years.words(-3) == "11 to 40 years after t"
    steps = GapScale.of(TimeAxis("step"))
    assert steps.words(1) == "1 to 3 steps before t"
    rule = DistilledRule("Consult", True, 1, [BodyAtom("Form alliance with", False, 4), BodyAtom("Threaten", True, 1)],
                         10, 9, 1.0, 0.5, 10)
    assert rule.text(days) == ("(X, Form alliance with, Z1, t-∞..-41) ∧ (Y, Threaten, Z1, t-3..-1) => "
                               "(Y, Consult, X, t)")
    assert rule.words(days) == ("if X Form alliance with Z1 41 or more days before t, and Y Threaten Z1 1 to 3 days "
                                "before t, then Y Consult X at t")


def test_wilson_lower_bound():
    assert wilson_lower(0, 0) == 0.0 and wilson_lower(0, 7) == 0.0
    assert wilson_lower(2, 2) == pytest.approx(0.3424, abs=1e-4)
    assert wilson_lower(40, 50) == pytest.approx(0.6696, abs=1e-4)
    assert wilson_lower(1000, 1000) > 0.99
    assert wilson_lower(2, 2) < wilson_lower(40, 50) < 40 / 50


# ---------------------------------------------------------------- the planted rules come back (done-when of #30)
@pytest.fixture(scope="module")
def sample_rules(tmp_path_factory):
    """``tpar rules --json`` on the shipped sample checkpoint, defaults, for the planted rules' heads (each head's
    questions are seeded per relation: the same as in a run over every relation)."""
    out = tmp_path_factory.mktemp("rules") / "rules.json"
    argv = ["rules", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), "--json", str(out),
            "--csv", str(out.with_suffix(".csv")), "--threads", "1", "--quiet"]
    for head in PLANTED_HEADS:
        argv += ["--relation", head]
    assert main(argv) == 0
    return json.loads(out.read_text(encoding="utf-8")), out


def test_every_planted_rule_is_among_the_top_3_rules_of_its_head_in_both_directions(sample_rules):
    data, _ = sample_rules
    rules = RuleSet.from_dict(data)
    rows = planted_ranks(rules, PLANTED, top=3)
    assert len(rows) == 2 * len(PLANTED)
    missed = [r for r in rows if not r["in_top"]]
    assert not missed, missed
    for row in rows:  # a learned rule, not a pattern seen once: most of the head's questions use it
        assert row["support"] >= 0.25 * row["questions"], row


def test_the_learned_planted_rules_have_the_planted_relations_directions_and_gaps(sample_rules):
    """Independent of :func:`follows_planted`: the JSON rules spelt out for three planted rules, and their
    examples' links at the rule's times (:func:`tpar.reasoning.rules.rule_followed`)."""
    from tpar.reasoning.rules import rule_followed

    data, _ = sample_rules
    top3 = {}
    for r in data["rules"]:
        if r["rank"] <= 3:
            top3.setdefault((r["head"], r["head_inverse"]), []).append(
                [(a["relation"], a["inverse"], tuple(a["days_before"])) for a in r["body"]])
    assert [("Threaten", False, (1, 3))] in top3[("Mobilize against", True)]   # (X, Threaten, Y) => (Y, Mob., X)
    assert [("Threaten", True, (1, 3))] in top3[("Mobilize against", False)]   # walked back from the head's subject
    assert [("Meet", False, (4, 10))] in top3[("Meet", False)]                # 7 days before, not 14
    assert [("Make a visit", True, (0, 0))] in top3[("Host a visit", False)]  # same day (interpolation)
    assert any(body[0][:2] == ("Form alliance with", False) and body[1] == ("Sign agreement with", False, (1, 3))
               for body in top3[("Consult", False)])
    by_id = {p["id"]: p for p in PLANTED}
    text = {r["text"] for r in data["rules"]}
    assert "(X, Threaten, Y, t-3..-1) => (Y, Mobilize against, X, t)" in text  # the example, verbatim
    for rule_id, head, inverse in (("escalation", "Mobilize against", True), ("weekly_meetings", "Meet", False),
                                   ("accusation_recency", "Criticize", False)):
        best = next(r for r in data["rules"] if r["head"] == head and r["head_inverse"] == inverse and r["rank"] == 1)
        assert best["examples"], best
        for ex in best["examples"]:
            assert rule_followed(ex["links"], by_id[rule_id], ex["direction"], ex["time_step"]).fits, ex


def test_follows_planted_tells_the_planted_rule_from_look_alikes():
    scale = GapScale.of(TimeAxis("day", "2025-01-01"))
    by_id = {p["id"]: p for p in PLANTED}

    def rule(head, inverse, *body):
        return DistilledRule(head, inverse, 1, [BodyAtom(*a) for a in body], 10, 9, 1.0, 0.5, 10)

    assert follows_planted(rule("Meet", False, ("Meet", False, 2)), by_id["weekly_meetings"], scale)
    assert not follows_planted(rule("Meet", False, ("Meet", False, 3)), by_id["weekly_meetings"], scale)  # 11-40 d
    assert not follows_planted(rule("Meet", False, ("Meet", True, 2)), by_id["weekly_meetings"], scale)   # direction
    assert follows_planted(rule("Mobilize against", False, ("Threaten", True, 1)), by_id["escalation"], scale)
    assert not follows_planted(rule("Mobilize against", True, ("Threaten", True, 1)), by_id["escalation"], scale)
    assert not follows_planted(rule("Mobilize against", False, ("Threaten", True, 0)), by_id["escalation"], scale)
    comp = by_id["composition"]
    assert follows_planted(rule("Consult", False, ("Form alliance with", False, 4), ("Sign agreement with", False, 1)),
                           comp, scale)  # the alliance 41-62 days back: within 60 days of the agreement
    assert not follows_planted(rule("Consult", False, ("Form alliance with", False, 3),
                                    ("Sign agreement with", False, 2)), comp, scale)  # the agreement 4-10 d back
    assert follows_planted(rule("Host a visit", False, ("Make a visit", True, 0)), by_id["reciprocity"], scale)
    assert not follows_planted(rule("Host a visit", False, ("Make a visit", True, -1)), by_id["reciprocity"], scale)


def test_json_schema_ranks_from_1_within_each_head_and_direction(sample_rules):
    data, _ = sample_rules
    assert set(data) >= {"rules", "heads", "meta", "time_unit"}
    assert data["time_unit"] == "d" and data["meta"]["setting"] == "interpolation"
    assert data["meta"]["data_fingerprint"] and data["meta"]["config"]["seed"] == 0
    groups: dict = {}
    for r in data["rules"]:
        assert set(r) >= {"head", "head_inverse", "rank", "body", "support", "confidence", "importance", "examples"}
        assert isinstance(r["head_inverse"], bool) and r["head"] in PLANTED_HEADS
        assert 0 <= r["confidence"] <= 1 and r["support"] >= 2 and r["correct"] == round(r["confidence"] * r["support"])
        for a in r["body"]:
            assert set(a) >= {"relation", "inverse", "days_before"} and isinstance(a["inverse"], bool)
            assert len(a["days_before"]) == 2
        assert len(r["examples"]) <= 2
        for ex in r["examples"]:
            assert {"entity", "relation", "time", "direction", "answer", "correct", "question"} <= set(ex)
            assert ex["relation"] == r["head"] and ex["direction"] == ("subject" if r["head_inverse"] else "object")
        groups.setdefault((r["head"], r["head_inverse"]), []).append(r)
    assert len(groups) == 2 * len(PLANTED_HEADS)
    for rules in groups.values():
        assert [r["rank"] for r in rules] == list(range(1, len(rules) + 1))
        scores = [r["score"] for r in rules]
        assert scores == sorted(scores, reverse=True)
    assert RuleSet.from_dict(data).to_dict()["rules"] == data["rules"]  # read back unchanged


def test_csv_has_one_row_per_rule(sample_rules):
    data, path = sample_rules
    with open(path.with_suffix(".csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(data["rules"])
    assert rows[0]["rule"] == data["rules"][0]["text"] and int(rows[0]["rank"]) == data["rules"][0]["rank"]


# ---------------------------------------------------------------- the cheap path search is explain's
def test_top_paths_lists_the_paths_and_importances_that_explain_does(sample_kg, sample_checkpoint):
    from tpar.reasoning.explanation import Explainer
    from tpar.reasoning.prediction import Predictor

    ex = Explainer(Predictor(sample_checkpoint, sample_kg, "cpu"))
    for s, r, o, t in sample_kg.facts("valid")[::120][:4].tolist():
        for direction, entity in (("object", s), ("subject", o)):
            q = Question(sample_kg.entities.name(entity), sample_kg.relations.name(r), sample_kg.time_axis.label(t),
                         direction, "interpolation")
            top = ex.top_paths(q, 2, num_paths=3)
            assert len(top.answers) == 2 and top.answers[0].score >= top.answers[1].score
            for ans in top.answers:
                e = ex.explain(q.subject, q.relation, q.time, ans.answer, direction=direction, setting="interpolation",
                               num_paths=3, top_facts=0)
                assert e.rank == ans.rank and e.score == pytest.approx(ans.score)
                assert [(p.describe(), p.importance, p.meaningful) for p in e.paths] == \
                       [(p.describe(), pytest.approx(p.importance), p.meaningful) for p in ans.paths]


def test_top_paths_of_a_composite_are_its_explanations_paths(sample_composite, sample_kg):
    """A composite (two models and the history prior): its answers by the composite score, and per answer the
    members' paths scaled and merged as its explanation lists them."""
    from tpar.model.checkpoint import Checkpoint
    from tpar.reasoning.explanation import Explainer
    from tpar.reasoning.prediction import Predictor

    ex = Explainer(Predictor(Checkpoint.load(sample_composite), sample_kg, "cpu"))
    q = Question("Orora Front", "Mobilize against", "2025-12-20", "object", "extrapolation")
    top = ex.top_paths(q, 2, num_paths=3)
    pred = ex.predictor.predict(q.subject, q.relation, q.time, setting="extrapolation", top_k=3)
    assert [a.answer for a in top.answers] == [a.entity for a in pred.answers if a.entity != q.subject][:2]
    for ans in top.answers:
        e = ex.explain(q.subject, q.relation, q.time, ans.answer, setting="extrapolation", num_paths=3, top_facts=0,
                       importance="gradient")
        assert e.score == pytest.approx(ans.score) and e.rank == ans.rank
        assert [(p.describe(), p.models) for p in e.paths] == [(p.describe(), p.models) for p in ans.paths]
        assert [p.importance for p in e.paths] == pytest.approx([p.importance for p in ans.paths])


# ---------------------------------------------------------------- the rule ranker
def _rule(head: str, inverse: bool, body, correct=9, support=10) -> DistilledRule:
    return DistilledRule(head, inverse, 1, [BodyAtom(*a) for a in body], support, correct, 1.0, 0.5, 10)


def _rule_set(rules, axis=TimeAxis("step")) -> RuleSet:
    ranked = {}
    for r in rules:
        ranked.setdefault((r.head, r.head_inverse), []).append(r)
    for group in ranked.values():
        for i, r in enumerate(group, start=1):
            r.rank = i
    return RuleSet(rules, [HeadSummary(h, inv, 10, 0.5, len(g)) for (h, inv), g in ranked.items()], GapScale.of(axis))


def _reference_scores(kg, rules: RuleSet, facts: np.ndarray, query, setting: Setting, top: int, a: float = 1.0,
                      lam: float = 0.1) -> np.ndarray:
    """1 − Π over rules reaching c of (1 − a·W⁻(confidence) − (1 − a)·max over groundings exp(−λ·|t_q − t₁|)), t₁ the
    grounding's first link, over brute-force groundings: every sequence of facts, one per body atom, walked in the
    atom's direction with its gap in the atom's bucket, admitted by the setting's rule (t < t_q; interpolation: not
    the question's own fact nor its inverse), never entering the question's entity."""
    s, r, answer, t_q = query
    R = kg.num_relations
    scale = GapScale.of(kg.time_axis)
    head, inverse = (r - R, True) if r >= R else (r, False)
    own = (s, r, answer, t_q) if not inverse else (answer, r - R, s, t_q)
    links = []  # (src, relation walked, dst, time)
    for f in facts.tolist():
        if setting is Setting.EXTRAPOLATION and f[3] >= t_q:
            continue
        if setting is Setting.INTERPOLATION and tuple(f) == own:
            continue
        links += [(f[0], f[1], f[2], f[3]), (f[2], f[1] + R, f[0], f[3])]
    chosen = [x for x in rules.for_head(kg.relations.name(head), inverse)
              if wilson_lower(x.correct, x.support) > 0
              and (setting is Setting.INTERPOLATION or all(b.bucket > 0 for b in x.body))][:top]
    log_miss = np.zeros(kg.num_entities)
    for rule in chosen:
        hops = [(kg.relations.id(b.relation) + (R if b.inverse else 0), b.bucket) for b in rule.body]
        frontier = {s: 1.0}  # entity -> the best recency of the groundings reaching it
        for d, (rel, bucket) in enumerate(hops):
            nxt: dict = {}
            for src, rl, dst, t in links:
                if src in frontier and rl == rel and dst != s and scale.bucket(t_q - t) == bucket:
                    rec = np.exp(-lam * abs(t_q - t)) if d == 0 else frontier[src]
                    nxt[dst] = max(nxt.get(dst, 0.0), rec)
            frontier = nxt
        w = wilson_lower(rule.correct, rule.support)
        for c, rec in frontier.items():
            log_miss[c] += np.log1p(-(a * w + (1 - a) * rec))
    return -np.expm1(log_miss)


@pytest.mark.parametrize("a, lam", [(1.0, 0.1), (0.5, 0.3)])
@pytest.mark.parametrize("setting", [Setting.EXTRAPOLATION, Setting.INTERPOLATION])
def test_rule_ranker_matches_a_brute_force_grounding(setting, a, lam):
    rng = np.random.default_rng(3)
    n_e, n_r, n_t = 9, 3, 30
    facts = np.unique(np.stack([rng.integers(0, n_e, 160), rng.integers(0, n_r, 160), rng.integers(0, n_e, 160),
                                rng.integers(0, n_t, 160)], 1), axis=0)
    facts = facts[facts[:, 0] != facts[:, 2]]
    kg = make_kg(facts[facts[:, 3] < 24], (), facts[facts[:, 3] >= 24], num_entities=n_e, num_relations=n_r)
    rules = []
    for head, inverse in product(range(n_r), (False, True)):
        for _ in range(4):
            length = int(rng.integers(1, 4))
            body = [(f"r{int(rng.integers(0, n_r))}", bool(rng.integers(0, 2)),
                     int(rng.integers(-2, 4) if setting is Setting.INTERPOLATION else rng.integers(1, 4)))
                    for _ in range(length)]
            support = int(rng.integers(2, 30))
            rules.append(_rule(f"r{head}", inverse, body, int(rng.integers(0, support + 1)), support))
    rs = _rule_set(rules)
    queries = make_queries(kg.facts("test"), n_r)
    background = Background.from_facts(kg.all_facts(), n_e, n_r, setting)
    ranker = RuleRanker(rs, kg, top=3, confidence_share=a, decay=lam, chunk=5)
    got = ranker.score(queries, background).numpy()
    assert (got > 0).any(axis=1).mean() > 0.3  # the rules do ground: the comparison is not vacuous
    for i in range(len(queries)):
        q = (int(queries.subject[i]), int(queries.relation[i]), int(queries.answer[i]), int(queries.time[i]))
        want = _reference_scores(kg, rs, kg.all_facts(), q, setting, top=3, a=a, lam=lam)
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-6, err_msg=str(q))


def test_a_question_never_grounds_on_its_own_fact_in_interpolation():
    # (e0, r0, e1, 5) is asked; (e0, r0, e2, 5) is another answer at the same time. Rule: "r0 the same day"
    kg = make_kg([(0, 0, 1, 5), (0, 0, 2, 5), (3, 1, 4, 2)], num_entities=5, num_relations=2)
    rs = _rule_set([_rule("r0", False, [("r0", False, 0)]), _rule("r0", True, [("r0", True, 0)])])
    bg = Background.from_facts(kg.all_facts(), 5, 2, Setting.INTERPOLATION)
    batch = QueryBatch(*(torch.tensor(x) for x in ([0, 1], [0, 2], [5, 5], [1, 0], [0, 1])))  # (e0, r0, ?) and (?, r0, e1)
    scores = RuleRanker(rs, kg).score(batch, bg)
    assert scores[0, 1] == 0 and scores[0, 2] > 0  # its own fact is hidden, the other answer's fact is not
    assert scores[1, 0] == 0                       # the subject question: the own fact's inverse is hidden too


def test_extrapolation_never_grounds_at_or_after_the_question_time():
    # facts at t_q - 2 (usable), at t_q and after it (not): rules for each of those gaps
    kg = make_kg([(0, 0, 1, 8), (0, 0, 2, 10), (0, 0, 3, 12)], num_entities=4, num_relations=1)
    rs = _rule_set([_rule("r0", False, [("r0", False, 1)]), _rule("r0", False, [("r0", False, 0)]),
                    _rule("r0", False, [("r0", False, -1)])])
    bg = Background.from_facts(kg.all_facts(), 4, 1, Setting.EXTRAPOLATION)
    batch = QueryBatch(*(torch.tensor([x]) for x in (0, 0, 10, 2, 0)))
    scores = RuleRanker(rs, kg).score(batch, bg)[0]
    assert scores[1] > 0 and scores[2] == 0 and scores[3] == 0
    seen = []
    real = Background.edges_from

    def spy(self, nodes, query, b, *a, **kw):
        edges, owner = real(self, nodes, query, b, *a, **kw)
        seen.extend(self.index.time[edges].tolist())
        return edges, owner

    Background.edges_from = spy
    try:
        RuleRanker(rs, kg).score(batch, bg)
    finally:
        Background.edges_from = real
    assert seen and max(seen) < 10


def test_rules_predict_the_sample_world_better_than_frequency(sample_rules, sample_kg):
    from tpar.evaluation.baselines import FrequencyBaseline
    from tpar.evaluation.protocol import evaluate

    rules = RuleSet.from_dict(sample_rules[0])
    ranker = RuleRanker(rules, sample_kg)
    facts = sample_kg.facts("test")
    heads = [sample_kg.relations.id(h) for h in PLANTED_HEADS]
    mask = np.isin(facts[:, 1], heads)
    assert mask.mean() > 0.3
    res = evaluate(sample_kg, ranker, "interpolation", "test", progress=False)
    freq = evaluate(sample_kg, FrequencyBaseline(), "interpolation", "test", progress=False)
    rel = res.queries[:, 1] % sample_kg.num_relations
    on = np.isin(rel, heads)
    assert res.metrics(mask=on).mrr > freq.metrics(mask=on).mrr + 0.02


# ---------------------------------------------------------------- files and the command line
def test_csv_cells_that_would_be_formulas_are_escaped(tmp_path):
    from tpar.data.outputs import write_csv

    rule = _rule("=HYPERLINK(\"http://x\")", False, [("+cmd|' /C calc'!A0", True, 1)])
    rule.examples = [RuleExample("@SUM(1)", "=HYPERLINK(\"http://x\")", "3", 3, "object", "extrapolation", "-2", True,
                                 "-2", 0.5, "@SUM(1) —[...]→ -2")]
    out = write_csv(tmp_path / "r.csv", _rule_set([rule]).csv_rows())
    with open(out, encoding="utf-8", newline="") as f:
        row = next(csv.DictReader(f))
    assert row["head"] == "'=HYPERLINK(\"http://x\")"
    assert row["body"].startswith("'+cmd")
    assert row["example_1"].startswith("(")  # the question text starts with a bracket: harmless as it is
    for value in row.values():
        assert not value.startswith(("=", "+", "-", "@")), value


def test_rules_read_from_a_file_are_evaluated_without_a_checkpoint(sample_rules, tmp_path, capsys):
    _, path = sample_rules
    out = tmp_path / "m.json"
    assert main(["rules", "--data", str(SAMPLE_WORLD), "--rules", str(path), "--relation", "meet", "--show", "1",
                 "--evaluate", "valid", "--max-queries", "300", "--metrics-json", str(out), "--quiet"]) == 0
    text = capsys.readouterr()
    assert "(X, Meet, ?, t)" in text.out and "Consult" not in text.out  # only the asked head is printed
    assert "no rules for" in text.err  # the heads without rules are said to tie
    m = json.loads(out.read_text())
    assert m["method"] == "rules" and m["num_queries"] == 300 and m["params"]["rules_per_head"] == 100


@pytest.mark.parametrize("argv, says", [
    (["--relation", "Mobilise agianst"], "unknown relation 'Mobilise agianst'; did you mean 'Mobilize against'"),
    (["--questions", "0"], "must be at least 1"),
])
def test_bad_options_are_refused_with_a_message(argv, says, capsys):
    rc = None
    try:
        rc = main(["rules", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), *argv, "--quiet"])
    except SystemExit as e:  # argparse's own refusal
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and "internal error" not in err


def test_a_checkpoint_of_other_data_and_a_bad_rules_file_are_refused(tmp_path, capsys):
    data = tmp_path / "events.csv"
    data.write_text("subject,relation,object,time\n" + "\n".join(
        f"A{i % 3},calls,B{i % 4},2024-02-{i + 1:02d}" for i in range(20)) + "\n")
    assert main(["rules", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(data), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "relation" in err and "Traceback" not in err
    bad = tmp_path / "rules.json"
    bad.write_text("{not json")
    assert main(["rules", "--data", str(data), "--rules", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"error: {bad}, row 1: not valid JSON" in err
    bad.write_text(json.dumps({"rules": [{"head": "calls"}]}))
    assert main(["rules", "--data", str(data), "--rules", str(bad)]) == 2
    assert "not a rules file of `tpar rules --json`" in capsys.readouterr().err
    assert main(["rules", "--data", str(data)]) == 2
    assert "give --checkpoint" in capsys.readouterr().err


def _edit(d: dict, path: str, value) -> dict:
    import copy

    d = copy.deepcopy(d)
    *keys, last = path.split(".")
    node = d
    for k in keys:
        node = node[int(k)] if isinstance(node, list) else node[k]
    if value is KeyError:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return d


@pytest.mark.parametrize("path,value,says", [
    ("rules.0.body.0.inverse", "false", "rule 1: ValueError: 'inverse' must be true or false, not 'false'"),
    ("rules.0.head_inverse", 0, "'head_inverse' must be true or false"),
    ("rules.0.rank", 10 ** 30, "'rank' must be a finite whole number"),
    ("rules.0.support", -3, "'support' must be at least 1"),
    ("rules.0.correct", 10 ** 6, "more than its support"),
    ("rules.0.body", [], "a rule's body holds 1 to 64 links, not 0"),
    ("rules.0.body.0.before", [1, 999], "rule 1: time gap [1, 999] is not one of the rule buckets"),
    ("rules.0.head", "", "'head' must be a name"),
    ("rules.0.score", KeyError, "'score' is missing"),
    ("rules.0.examples", [{"entity": 3}], "an example's 'entity' must be text"),
    ("heads.0.questions", 1.5, "head 1: ValueError: 'questions' must be a finite whole number"),
    ("scale.per_step", 0, "per_step must be above 0"),
    ("scale.days", False, "the scale's days is False but its unit is 'd'"),
    ("scale.unit", "mo", "the scale's days is True but its unit is 'mo'"),
    ("meta", [], "'meta' must be an object"),
    ("meta.config", [], "meta: ValueError: 'config' must be a dict"),
    ("meta.seconds", "12", "meta: ValueError: 'seconds' must be a finite number"),
    ("meta.questions", "many", "meta: ValueError: 'questions' must be a finite whole number"),
    ("meta.checkpoint", ["m.tpar"], "meta: ValueError: 'checkpoint' must be text"),
])
def test_a_hand_edited_rules_file_is_refused_naming_the_rule_and_field(sample_rules, tmp_path, capsys, path, value,
                                                                         says):
    d, _ = sample_rules
    bad = tmp_path / "rules.json"
    bad.write_text(json.dumps(_edit(d, path, value)))
    with pytest.raises(DataError, match=re.escape(says)) as e:
        RuleSet.read(bad)
    assert str(bad) in str(e.value)
    assert main(["rules", "--data", str(SAMPLE_WORLD), "--rules", str(bad), "--quiet"]) == 2
    assert says in capsys.readouterr().err


def test_rules_of_relations_the_data_lacks_are_said_to_be_set_aside(sample_rules, tmp_path, capsys):
    d, _ = sample_rules
    renamed = _edit(d, "rules.0.head", "A relation of elsewhere")
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(renamed))
    assert main(["rules", "--data", str(SAMPLE_WORLD), "--rules", str(path), "--evaluate", "valid",
                 "--max-queries", "20", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "1 of the" in err and "'A relation of elsewhere'" in err and "set aside" in err


def test_rules_are_read_in_another_data_sets_relation_names(sample_rules, tmp_path, capsys):
    """``--rules`` on data that spells the rules' relations otherwise: names are matched as a checkpoint's are
    (case, spaces and punctuation forgiven; ``--relation-map`` for the rest), so the same facts under other names
    are ranked exactly as the original: the same metrics; without the map, the unmapped relation's rules are set
    aside and said."""
    _, path = sample_rules
    other = tmp_path / "renamed"
    other.mkdir()
    for split in ("train", "valid", "test"):
        rows = (SAMPLE_WORLD / f"{split}.csv").read_text(encoding="utf-8").splitlines()
        out = [rows[0]]
        for row in rows[1:]:
            s, r, o, t = next(csv.reader([row]))
            r = "Rendezvous" if r == "Meet" else r.upper().replace(" ", "_")
            out.append(",".join(f'"{x}"' for x in (s, r, o, t)))
        (other / f"{split}.csv").write_text("\n".join(out) + "\n", encoding="utf-8")
    rmap = tmp_path / "map.csv"
    rmap.write_text("data relation,model relation\nRendezvous,Meet\n")

    def metrics(data, *extra) -> dict:
        out = tmp_path / "m.json"
        assert main(["rules", "--data", str(data), "--rules", str(path), "--evaluate", "valid", "--metrics-json",
                     str(out), "--quiet", *extra]) == 0
        return json.loads(out.read_text())

    same = metrics(SAMPLE_WORLD)
    assert "read in" not in capsys.readouterr().err  # the rules' own names: nothing to say
    mapped = metrics(other, "--relation-map", str(rmap))
    err = capsys.readouterr().err
    assert "by normalised name, 1 by the relation map" in err and "set aside" not in err
    for mode in ("realistic", "optimistic", "pessimistic"):
        assert mapped[mode] == same[mode]
    unmapped = metrics(other)
    err = capsys.readouterr().err
    assert "'Meet'" in err and "set aside" in err and "1 not in" in err
    assert unmapped["realistic"]["mrr"] < same["realistic"]["mrr"]
    bad = tmp_path / "bad.csv"
    bad.write_text("Rendezvous,Tea party\n")
    assert main(["rules", "--data", str(other), "--rules", str(path), "--relation-map", str(bad), "--quiet"]) == 2
    got = capsys.readouterr()
    assert str(bad) in got.err and "row 1: 'Tea party' is not a relation of the rules (distilled on chronological)" in got.err, got


def test_a_map_row_that_takes_a_relation_another_rules_relation_is_spelled_as_leaves_that_one_unmatched(sample_rules,
                                                                                                      tmp_path):
    """Map the data's Meet to the rules' Consult: the rules' own Meet is then matched to nothing, and its rules must
    not score under the data's Meet beside Consult's -- they are set aside and said."""
    from tpar.data.loading import load_dataset
    from tpar.data.relation_matching import RelationMap

    rules = RuleSet.read(sample_rules[1])
    kg = load_dataset(SAMPLE_WORLD)
    fitted, note = rules.fit(kg, RelationMap({"Meet": "Consult"}))
    heads = {r.head for r in fitted.rules}
    assert "Meet (not matched)" in heads and "Consult" not in heads and "Meet" in heads
    assert sum(r.head == "Meet" for r in fitted.rules) == sum(r.head == "Consult" for r in rules.rules)
    assert "1 by the relation map" in note and "not in" in note
