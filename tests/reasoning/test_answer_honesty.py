"""Answers say how sure they are: tied answers carry the model's rank range, entities no path reaches
are counted apart and never fill the list, and a question outside the model's training setting, far
from the data or reaching nothing is flagged. Ranks and probabilities are recomputed here by brute
force from the model's raw scores, not from the predictor's helpers."""

from __future__ import annotations

import math

import pytest
import torch

from helpers import E, R, make_kg, small_model
from tpar.data.vocab import Vocabulary
from tpar.errors import DataError
from tpar.graph.queries import Question
from tpar.model.checkpoint import from_model
from tpar.model.config import RunConfig, TrainConfig
from tpar.reasoning.prediction import TIE_ATOL, TIE_RTOL, Predictor, probability_text

# e0 -r0-> e1 and e0 -r0-> e2 on the same day (identical paths: e1 and e2 must tie); e3..e5 a chain
# from e0; e6 -r1-> e7 far away from e0 (never reached from e0); e8..e13 appear in no fact at all
FACTS = [(0, 0, 1, 2), (0, 0, 2, 2), (0, 1, 3, 3), (3, 2, 4, 4), (4, 0, 5, 5), (6, 1, 7, 3), (5, 2, 0, 6)]


def predictor(setting: str = "unified") -> Predictor:
    kg = make_kg(FACTS[:5], FACTS[5:6], FACTS[6:], num_entities=E, num_relations=R)
    model = small_model(seed=2)
    return Predictor(from_model(model, RunConfig(model.cfg, TrainConfig(setting=setting)), kg, setting), kg, "cpu")


def raw_scores(p: Predictor, q: Question) -> torch.Tensor:
    prepared = p.prepare(q)
    return p.model(prepared.batch, prepared.background)[0].float().detach()


def test_ties_show_the_models_rank_range():
    p = predictor()
    q = Question("e0", "r0", "8", "object", "extrapolation")
    pred = p.answer(q, top_k=None)
    scores = raw_scores(p, q).detach()
    assert torch.isclose(scores[1], scores[2], rtol=1e-6, atol=0)  # the two identical paths (float noise aside)
    by_name = {a.entity: a for a in pred.answers}
    for a in pred.answers:  # rank range = (1 + clearly higher, higher or the same up to float noise)
        s = scores[a.entity_id]
        same = (scores - s).abs() <= TIE_ATOL + TIE_RTOL * s.abs()
        assert a.rank_low == 1 + int((scores > s).sum() - (same & (scores > s)).sum())
        assert a.rank_high == a.rank_low + int(same.sum()) - 1
        assert a.ties == int(same.sum()) - 1
        assert math.isclose(a.probability, float(torch.softmax(scores.double(), 0)[a.entity_id]), rel_tol=1e-6)
    e1, e2 = by_name["e1"], by_name["e2"]
    assert e1.ties >= 1 and e1.rank_text() == e2.rank_text() and "–" in e1.rank_text()
    assert pred.to_dict()["answers"][0]["rank_text"] == pred.answers[0].rank_text()


def test_unreached_entities_are_counted_apart_and_never_listed():
    p = predictor()
    q = Question("e0", "r0", "8", "object", "extrapolation")
    pred = p.answer(q, top_k=50)
    prepared = p.prepare(q)
    with torch.no_grad():
        scores, reached = p.model.scores_and_reach(prepared.batch, prepared.background)
    scores, reached = scores[0].float(), reached[0]
    listed = {a.entity_id for a in pred.answers}
    assert listed == set(torch.nonzero(reached).squeeze(1).tolist())
    assert not listed & {6, 7, 8, 9, 10, 11, 12, 13}  # no path from e0 reaches them
    assert pred.reached == len(listed) and pred.unreached == E - len(listed) == pred.num_entities - pred.reached
    assert (scores[~reached] == 0).all()
    lo, hi = pred.unreached_rank  # the tie of all unreached entities at score 0, among all entities
    assert lo == 1 + int((scores > TIE_ATOL).sum()) and hi == int((scores >= -TIE_ATOL).sum())
    assert math.isclose(pred.unreached_probability, float(torch.softmax(scores.double(), 0)[~reached].sum()),
                        rel_tol=1e-6)
    assert pred.to_dict()["unreached"] == pred.unreached


def test_top_k_lists_reached_entities_only_in_score_order():
    p = predictor()
    pred = p.answer(Question("e0", "r0", "8", "object", "extrapolation"), top_k=3)
    assert len(pred.answers) == 3 and [a.rank for a in pred.answers] == [1, 2, 3]
    assert all(a.reached for a in pred.answers)
    assert [a.score for a in pred.answers] == sorted((a.score for a in pred.answers), reverse=True)


def test_a_setting_the_model_was_not_trained_for_is_flagged():
    q = Question("e0", "r0", "3", "object", "interpolation")
    assert any("trained for extrapolation only" in w for w in predictor("extrapolation").answer(q).warnings)
    assert not any("trained for" in w for w in predictor("interpolation").answer(q).warnings)
    assert not any("trained for" in w for w in predictor("unified").answer(q).warnings)
    q = Question("e0", "r0", "8", "object", "extrapolation")
    assert any("trained for interpolation only" in w for w in predictor("interpolation").answer(q).warnings)


def test_a_time_far_after_the_data_is_flagged_and_a_near_one_is_not():
    p = predictor()
    near = p.answer(Question("e0", "r0", "7", "object", "extrapolation"))
    far = p.answer(Question("e0", "r0", "10", "object", "extrapolation"))
    assert not any("after the last known fact" in w for w in near.warnings)
    assert any("after the last known fact" in w for w in far.warnings)


def test_nothing_reached_says_the_ranking_carries_no_information():
    p = predictor()
    pred = p.answer(Question("e9", "r0", "8", "object", "extrapolation"), top_k=10)  # e9 is in no fact
    assert pred.reached == 1 and [a.entity for a in pred.answers] == ["e9"]  # only itself, by its self-loop
    assert pred.no_evidence.startswith("no temporal path leads from the question's entity to any other entity")
    assert not any("no temporal path" in w.lower() for w in pred.warnings)  # said once, as the reason, not twice


@pytest.mark.parametrize("p, text", [(0.4123, "41.2%"), (0.0038, "0.38%"), (0.000021, "0.0021%"), (0.0, "0%"),
                                     (1e-9, "< 0.0001%"), (0.9999, "> 99.9%"), (1.0, "> 99.9%"), (0.05, "5.0%")])
def test_probabilities_keep_enough_digits_to_differ(p, text):
    assert probability_text(p) == text


def test_probabilities_below_the_top_answer_are_not_all_shown_as_zero():
    assert len({probability_text(p) for p in (0.0041, 0.0032, 0.0011, 0.00052)}) == 4


def test_names_match_ignoring_case_space_and_underscores():
    v = Vocabulary(("Make_statement", "Host a visit", "Iran"))
    assert v.resolve("make statement", "relation") == "Make_statement"
    assert v.resolve("HOST_A_VISIT ", "relation") == "Host a visit"
    with pytest.raises(DataError, match="did you mean 'Iran'"):
        v.resolve("Irun", "entity")


def test_a_calibration_fitted_on_other_data_is_never_called_calibrated_here():
    """Probabilities are calibrated only on the data the calibration was fitted on (or data grown from it): on any
    other data the answer says whose calibration it is, and the answer set's level is not promised."""
    from dataclasses import replace

    from helpers import a_calibration
    from tpar.evaluation.calibration import Calibration

    p = predictor("extrapolation")
    ck = p.checkpoint
    ck.extra["calibration"] = {"extrapolation": a_calibration("extrapolation", 0)}  # records no data: the model's own
    q = Question("e0", "r0", "8", "object", "extrapolation")
    home = Predictor(ck, p.kg, "cpu").answer(q)
    assert home.temperature is not None and home.calibrated and home.calibrated_elsewhere == ""
    other_kg = make_kg(FACTS[:5] + [(6, 2, 8, 4)], FACTS[5:6], FACTS[6:], num_entities=E, num_relations=R, name="other")
    assert other_kg.fingerprint != p.kg.fingerprint
    away = Predictor(ck, other_kg, "cpu").answer(q, coverage=0.9)
    assert away.temperature is not None and not away.calibrated and away.calibrated_elsewhere == ck.data_name
    assert any(w.startswith(f"Probabilities are calibrated on {ck.data_name}") and "not on other" in w
               and "not a guarantee" in w for w in away.warnings)
    # a calibration that records the data it was fitted on: calibrated there, and only there
    fitted = replace(Calibration.from_dict(a_calibration("extrapolation", 0)), data_fingerprint=other_kg.fingerprint)
    ck.extra["calibration"] = {"extrapolation": fitted.to_dict()}
    assert Predictor(ck, other_kg, "cpu").answer(q).calibrated
    assert Predictor(ck, p.kg, "cpu").answer(q).calibrated_elsewhere == "other data"


def test_a_what_if_fact_the_question_cannot_see_is_said_to_change_nothing():
    p = predictor()
    forecast = Question("e0", "r0", "5", "object", "extrapolation")
    pred = p.answer(forecast, without=[("e4", "r0", "e5", "5")], extra=[("e0", "r1", "e9", "7")])
    unseen = [w for w in pred.warnings if "changes nothing" in w]
    assert unseen == pred.unseen_changes and len(unseen) == 2 and all("a forecast (extrapolation) for 5 sees only facts before it" in w for w in unseen)
    assert unseen[0].startswith("Removing (e4, r0, e5, 5)") and unseen[1].startswith("Adding (e0, r1, e9, 7)")
    # an earlier fact counts: nothing said
    assert not [w for w in p.answer(forecast, extra=[("e0", "r1", "e9", "3")]).warnings if "changes nothing" in w]
    # a fact given twice (any spelling) is one change, said once: the lines follow the facts the data set counted
    twice = p.answer(forecast, without=[("e4", "r0", "e5", "5"), ("E4", "R0", "E5", "5")],
                     extra=[("e0", "r1", "e9", "7"), ("e0", "r1", "e9", "7")])
    assert twice.unseen_changes == unseen and sum("given twice" in n for n in twice.hypothetical) == 2
    gap = Question("e0", "r0", "2", "object", "interpolation")
    pred = p.answer(gap, extra=[("e0", "r0", "e9", "2"), ("e0", "r1", "e10", "40")])
    assert any(w.startswith("Adding (e0, r0, e9, 2) changes nothing: interpolation hides") for w in pred.warnings)
    assert any(w.startswith("The added fact (e0, r1, e10, 40) lies outside the data's time range (2 to 6)")
               for w in pred.warnings)


def test_rank_range_of_one_value_agrees_with_the_ranks_of_sorted_scores():
    """``rank_range`` (one value, counted) and ``rank_ranges`` (many values, searched in sorted scores) give the
    same bounds, exact ties and float-noise ties included, in float32 and float64."""
    from tpar.reasoning.prediction import rank_range, rank_ranges

    g = torch.Generator().manual_seed(5)
    for dtype in (torch.float32, torch.float64):
        scores = torch.randint(0, 6, (300,), generator=g).to(dtype) * 0.25  # many exact ties
        scores[:20] += 1e-9  # ties only up to float noise (float64), exact ones in float32
        scores = scores[torch.randperm(len(scores), generator=g)]
        for value in scores[::7].tolist():
            low, high = rank_ranges(torch.sort(scores).values, torch.tensor([value], dtype=dtype))
            assert rank_range(scores, value) == (int(low[0]), int(high[0]))
            s = torch.tensor(value, dtype=dtype)
            same = (scores - s).abs() <= TIE_ATOL + TIE_RTOL * s.abs()
            assert rank_range(scores, value) == (1 + int((scores > s).sum() - (same & (scores > s)).sum()),
                                                 int((scores > s).sum() - (same & (scores > s)).sum() + same.sum()))


def test_a_top_answer_that_is_the_questions_own_entity_is_said_to_be_no_evidence():
    """The sample model ranks Faora Bank first for (Faora Bank, Make a visit, ?, 2025-12-18): no path of links
    leads there (its score is the subject's own state), and the answer says so; a question whose top answer is
    another entity has no such note."""
    from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD
    from tpar.data.loading import load_dataset
    from tpar.model.checkpoint import Checkpoint

    p = Predictor(Checkpoint.load(SAMPLE_CHECKPOINT), load_dataset(SAMPLE_WORLD), "cpu")
    q = Question("Faora Bank", "Make a visit", "2025-12-18", "object", "extrapolation")
    scores = raw_scores(p, q)
    subject = p.kg.entities.id("Faora Bank")
    assert int(scores.argmax()) == subject  # the model's own ranking, not the predictor's
    said = [w for w in p.answer(q, top_k=3).warnings if "is the question's own subject" in w]
    assert len(said) == 1 and said[0].startswith("The top answer 'Faora Bank'")
    assert "no fact of the data links it to itself" in said[0]
    assert p.kg.entities.id("Faora Bank") not in p.self_linked  # what the warning claims, checked on the facts
    # a subject question (?, r, X, t) led by X itself: X is the question's own object
    back = Question("Sami of Lumzanenn", "Host a visit", "2025-12-18", "subject", "extrapolation")
    assert int(raw_scores(p, back).argmax()) == p.kg.entities.id("Sami of Lumzanenn")
    said = [w for w in p.answer(back, top_k=3).warnings if "question's own" in w]
    assert len(said) == 1 and said[0].startswith("The top answer 'Sami of Lumzanenn' is the question's own object")
    other = Question("Arovia", "Provide aid to", "2026-01-10", "object", "extrapolation")
    assert int(raw_scores(p, other).argmax()) != p.kg.entities.id("Arovia")
    shown = p.answer(other, top_k=3)
    assert "Arovia" not in [a.entity for a in shown.answers]
    assert not any("question's own" in w for w in shown.warnings)
    # further down the list, the question's own entity is said too (walk-through: 'Theta sanctions Theta' at rank 3)
    lower = p.answer(Question("Corquenovia", "Make a visit", "2025-12-18", "object", "extrapolation"), top_k=5)
    assert [a.entity for a in lower.answers].index("Corquenovia") == 1
    said = [w for w in lower.warnings if "question's own" in w]
    assert said == ["Answer 2, 'Corquenovia', is the question's own subject, and no fact of the data links it to "
                    "itself: its score comes from staying there (self-loops) and from walks that leave and come "
                    "back, not from evidence for such a fact."]
    # far down and less likely than a uniform guess, it is no answer anyone takes for one: no warning about it
    # (walk-through 38 #11: a warning box for answer 7 at 0.003%)
    far = p.answer(Question("Aristan", "Criticize", "2025-12-18", "object", "extrapolation"), top_k=20)
    own = next(a for a in far.answers if a.entity == "Aristan")
    assert own.probability < 1 / p.kg.num_entities and not any("question's own" in w for w in far.warnings)


def test_no_own_entity_note_where_a_fact_links_the_entity_to_itself():
    """A fact (e0, r, e0, t) is a link a path can walk back to e0 (and a history prior can count): the
    'no fact links it to itself' note is then never given, and the entity is known as self-linked."""
    base = predictor()
    assert 0 not in base.self_linked and base.own_entity_leads(0, 0) and not base.own_entity_leads(1, 0)
    kg = make_kg(FACTS[:5] + [(0, 1, 0, 4)], FACTS[5:6], FACTS[6:], num_entities=E, num_relations=R)
    model = small_model(seed=2)
    p = Predictor(from_model(model, RunConfig(model.cfg, TrainConfig(setting="unified")), kg, "unified"), kg, "cpu")
    assert p.self_linked == {0} and not p.own_entity_leads(0, 0)
    pred = p.answer(Question("e0", "r0", "8", "object", "extrapolation"), top_k=None)
    assert pred.entity_self_linked and not any("links it to itself" in w for w in pred.warnings)


def test_an_answer_says_when_its_model_lost_to_counting_on_its_own_test_split():
    """Walk-through 36 F4: the Train page, the CLI and the card said this model scores below the frequency baseline
    on interpolation test questions (37.09 vs 59.48), but Ask served its interpolation answers as calibrated with
    no word of it. The training run's stored verdict is said with every answer of that setting, not of the other."""
    p = predictor()
    ck = p.checkpoint
    ck.metrics = {"test_interpolation": {"realistic": {"mrr": 0.3709}}, "test_extrapolation": {"realistic": {"mrr": 0.6}}}
    ck.extra = {**ck.extra, "baseline_test": {"interpolation": {"method": "frequency", "mrr": 0.5948},
                                              "extrapolation": {"method": "frequency", "mrr": 0.5}}}
    inside = p.answer(Question("e0", "r0", "3", "object", "interpolation"))
    said = " ".join(inside.warnings)
    assert ("On its own test split this model ranks interpolation questions worse than counting: MRR 37.09% against the "
            "frequency baseline's 59.48%") in said
    forecast = p.answer(Question("e0", "r0", "8", "object", "extrapolation"))
    assert not any("worse than counting" in w for w in forecast.warnings)  # it beat counting there
    assert any("`tpar calibrate --setting extrapolation`" in w for w in forecast.warnings)  # names the setting to fit


def test_the_library_refuses_counts_no_question_can_mean(sample_kg, sample_checkpoint):
    """Audit 37: top_k=-1 returned every answer but the last (a slice), 1.5 a bare TypeError, beam=-1 no paths
    without a word, steps=0 a ValueError the pages do not catch, member=5 on a single model was ignored."""
    from tpar.errors import DataError
    from tpar.reasoning.explanation import Explainer
    from tpar.reasoning.prediction import Predictor

    pred = Predictor(sample_checkpoint, sample_kg, "cpu")
    for bad in (-1, 0, 1.5, True, "3"):
        with pytest.raises(DataError, match="top_k must be a whole number of at least 1"):
            pred.predict("Danenn", "Meet", "2025-12-20", top_k=bad)
    assert len(pred.predict("Danenn", "Meet", "2025-12-20", top_k=None).answers) > 10  # None: all, as documented
    ex = Explainer(pred)
    for kw in ({"beam": -1}, {"steps": 0}, {"num_paths": 0}, {"top_facts": -2}):
        with pytest.raises(DataError, match=f"{next(iter(kw))} must be a whole number"):
            ex.explain("Danenn", "Meet", "2025-12-20", "Island", **kw)
    with pytest.raises(DataError, match="not a composite"):
        ex.trace("Danenn", "Meet", "2025-12-20", member=5)


def test_the_unreached_tie_names_the_reached_entities_that_share_it(sample_kg, sample_checkpoint, monkeypatch):
    """Walk-through 37: '251 entities at score 0 (tied at ranks 14-276)' did not add up -- 12 reached entities with
    scores 0 to float precision shared the tie; the text now says so."""
    from tpar.reasoning.prediction import Predictor

    pred = Predictor(sample_checkpoint, sample_kg, "cpu")
    real = pred.model.scores_and_reach

    def shaped(*a, **k):
        scores, reached = real(*a, **k)
        reached, scores = reached.clone(), torch.zeros_like(scores)
        reached[..., :] = True
        reached[..., 100:] = False           # 180 unreached at 0
        scores[..., :10] = 5.0 + torch.arange(10, dtype=scores.dtype)  # ten clear answers
        scores[..., 10:13] = 1e-12           # three reached, 0 to float precision
        scores[..., 13:100] = -1.0
        return scores, reached

    monkeypatch.setattr(pred.model, "scores_and_reach", shaped)
    p = pred.predict("Danenn", "Meet", "2025-12-20")
    n = p.num_entities - 100
    assert p.unreached == n and p.unreached_rank == (11, 13 + n)
    assert p.unreached_rank_text == f"ranks 11–{13 + n}, with 3 reached entities whose scores are 0 to float precision"


def test_an_answer_set_whose_members_are_in_by_a_hair_says_so(sample_kg, sample_checkpoint):
    """Walk-through 37: a '90% answer set' of 22 entities held 8.9% of the probability, its members in by the 4th
    significant digit (0.36% against 0.353% left out); the note says membership is close to chance there, and a
    confident set gets no such words."""
    from tpar.reasoning.prediction import SET_MARGIN_RATIO, Predictor

    pred = Predictor(sample_checkpoint, sample_kg, "cpu")
    p = pred.predict("Faro of Corbeleth", "Mobilize against", "2025-06-15", setting="interpolation", coverage=0.9)
    inside, outside = p.answer_set_margin
    assert inside >= p.answer_set_threshold > outside and inside <= SET_MARGIN_RATIO * outside
    assert "about equally likely: which entities are in is close to chance here" in p.answer_set_note()
    sure = pred.predict("Orora Front", "Mobilize against", "2025-12-20", coverage=0.9)
    assert "close to chance" not in sure.answer_set_note()


def test_an_unknown_name_with_nothing_close_lists_the_few_names_there_are():
    """New-user walk 38: 'unknown relation Invade' with 20 relations gave no way on; a few names are listed, many are
    not (a did-you-mean stays the answer where something is close)."""
    few = Vocabulary(("Supply", "Meet with", "Invest in"))
    with pytest.raises(DataError, match=r"unknown relation 'Invade'; the data's relations are 'Invest in', 'Meet "
                                        r"with', 'Supply'$"):
        few.resolve("Invade", "relation")
    with pytest.raises(DataError, match=r"did you mean 'Supply'\?$"):
        few.resolve("Suply", "relation")
    with pytest.raises(DataError, match=r"the data's only relation is 'Supply'$"):
        Vocabulary(("Supply",)).resolve("Invade", "relation")
    many = Vocabulary(tuple(f"E{i}" for i in range(40)))
    with pytest.raises(DataError, match=r"^unknown entity 'Nobody'$"):
        many.resolve("Nobody", "entity")


def test_reached_entities_that_score_below_the_unreached_tie_are_counted_and_said():
    """Entities some path reaches can score below 0, and so rank after the unreached entities' tie at 0: "6,544 have
    evidence" beside a tie at 6543–7126 did not add up (scale audit 40). The prediction counts them, the CLI and the
    Ask page say so, and each one's rank range lies after the tie."""
    kg = make_kg(FACTS[:5], FACTS[5:6], FACTS[6:], num_entities=E, num_relations=R)
    model = small_model(seed=5)
    p = Predictor(from_model(model, RunConfig(model.cfg, TrainConfig(setting="unified")), kg, "unified"), kg, "cpu")
    pred = p.predict("e0", "r0", "8", setting="extrapolation", top_k=None)
    below = [a for a in pred.answers if a.score < 0]
    assert pred.reached_below == len(below) == 1 and pred.unreached == 8 and pred.unreached_rank == (6, 13)
    assert all(a.rank_low > pred.unreached_rank[1] for a in below)
    assert pred.reached_below_text == "1 reached entity scores below 0 and ranks after them"
    assert pred.reached - pred.reached_below + pred.unreached == pred.unreached_rank[1]  # the ranks add up now
    assert pred.to_dict()["reached_below"] == 1
    above = Predictor(from_model(small_model(seed=4), RunConfig(model.cfg, TrainConfig(setting="unified")), kg,
                                 "unified"), kg, "cpu").predict("e0", "r0", "8", setting="extrapolation", top_k=None)
    assert above.reached_below == 0 and above.reached_below_text == ""


def test_the_groups_above_in_and_below_the_tie_at_0_add_up_to_the_reached_entities(tmp_path, sample_checkpoint):
    """Rank ranges within float tolerance need not nest: an entity at ranks 87–88, overlapping the tie at 2–87,
    fell in neither the tie nor the entities below it, and 1 + 2 + 1 did not make the 5 reached (hostile 40). Every
    entity ranked after the tie is counted below it, so the three groups add up."""
    from helpers import SAMPLE_WORLD
    from tpar.data.loading import load_dataset

    lines = (SAMPLE_WORLD / "train.csv").read_text().splitlines()
    small = tmp_path / "small.csv"
    small.write_text("\n".join([lines[0]] + [x for i, x in enumerate(lines[1:400], start=1) if i % 7 == 0]) + "\n")
    kg = load_dataset(small)
    pred = Predictor(sample_checkpoint, kg, "cpu").predict("Rhea of Halistan", "Sign agreement with", "2025-01-01",
                                                           direction="subject", top_k=None)
    lo, hi = pred.unreached_rank
    above = sum(1 for a in pred.answers if a.rank_high < lo)
    shared = (hi - lo + 1) - pred.unreached
    assert pred.reached == 5 and above + shared + pred.reached_below == pred.reached, (above, shared, pred.reached_below)
    assert pred.reached_below == pred.num_entities - hi
