"""Figures beside chance: a uniform guess's MRR and Hits@k computed from their definitions, and the caveats said
where a model guesses, where Hits@k is all but free, where few questions were measured, and where a calibration
fitted on valid fails on test."""

from __future__ import annotations

import itertools
import math

import pytest

from tpar.evaluation.calibration import CalibrationMetrics, HeldOutReport, Reliability, held_out_caveats
from tpar.evaluation.chance import chance_text, ranking_caveats, uniform_hits, uniform_mrr


@pytest.mark.parametrize("n", [1, 2, 5, 11, 280, 1000, 1001, 23_033, 1_000_003])
def test_a_uniform_guess_scores_the_mean_over_every_rank(n):
    ranks = range(1, n + 1)  # the true answer equally likely at each rank
    assert uniform_mrr(n) == pytest.approx(math.fsum(1 / r for r in ranks) / n, rel=1e-14)  # the series past 1,000
    for k in (1, 3, 10):
        assert uniform_hits(k, n) == pytest.approx(sum(r <= k for r in ranks) / n)
    assert uniform_mrr(0) == 0.0 and uniform_hits(10, 0) == 0.0


def test_caveats_are_said_only_where_they_hold():
    assert ranking_caveats(0.30, 280, 5_000) == []  # far above chance, many entities, many questions
    guessing = ranking_caveats(0.28, 11, 5_000)  # 11 entities: a uniform guess scores 27.5%
    assert guessing[0].startswith("the model scores MRR 28.00%, no better than a uniform guess among the 11 entities")
    assert "H@10 91%" in guessing[1] and "whatever" not in guessing[1]  # 10/11: all but free, not certain
    tiny = " ".join(ranking_caveats(0.9, 6, 24))
    assert "H@10 is 100% whatever the model does" in tiny and "measured on only 24 questions" in tiny
    assert ranking_caveats(0.9, 6, None)[-1].startswith("with 6 entities")  # no count: nothing said of it
    assert "MRR about 2.2% and H@10 about 4%" in chance_text(280)


def test_a_calibration_that_fails_on_test_is_said_to():
    def metrics(nll: float, ece: float, n: int = 42) -> CalibrationMetrics:
        return CalibrationMetrics(ece, 0.5, nll, 0.3, 0.3, n)

    reliability = Reliability([0.0], [42], [0.3], [0.3])
    good = HeldOutReport(metrics(2.0, 0.05), metrics(1.5, 0.03), reliability, {"0.9": 0.9}, {"0.9": 3.0}, 1.2)
    assert held_out_caveats(good, 280) == []
    bad = HeldOutReport(metrics(2.386, 0.0277), metrics(2.4211, 0.0650), reliability, {"0.8": 0.857, "0.9": 0.762},
                        {"0.8": 9.0, "0.9": 9.0}, 0.9)
    said = held_out_caveats(bad, 11)
    assert said[0].startswith("the temperature, fitted on valid, made NLL and ECE worse on test")
    assert said[1].startswith(f"test NLL 2.421 is above a uniform guess's (ln 11 = {math.log(11):.3f})")
    assert said[2] == "the 90% answer sets held the answer for only 76.2% of the 42 test questions, below their level"
    assert len(said) == 3  # 85.7% of 42 for the 80% sets is within sampling error
    # another data set's calibration: named as such, not blamed on too few valid questions (walk-through 38 #7)
    elsewhere = held_out_caveats(bad, 11, fitted_on="chronological")[0]
    assert elsewhere.startswith("the temperature, fitted on the valid questions of chronological, other data than "
                                "these, made NLL and ECE worse on test") and "too few" not in elsewhere
    unnamed = held_out_caveats(bad, 11, fitted_on="other data")[0]
    assert unnamed.startswith("the temperature, fitted on the valid questions of other data, made NLL")


def test_relations_below_a_uniform_guess_are_named_and_every_relation_below_is_said_as_such():
    """Review 38 #4: when every relation lay below, the note still said the overall figure came from the others."""
    from tpar.evaluation.chance import below_chance_relations, uniform_mrr

    chance = uniform_mrr(20)  # about 18%
    some = below_chance_relations({"Supply": (1.0, 26), "Meet with": (0.075, 12), "Invest in": (0.054, 2)}, 20, "TPAR")
    assert some == ("TPAR scores below a uniform guess (MRR about 18.0%) on 2 of 3 relations (Meet with, Invest in): "
                    "14 of the 40 questions. Its overall figure comes from the other relations; on these its answers "
                    "do no better than a guess")
    every = below_chance_relations({"a": (0.01, 3), "b": (0.02, 5)}, 20)
    assert every.startswith("the model scores below a uniform guess") and "every one of its 2 relations (8 questions)" \
        in every and "other relations" not in every
    assert "its only relation (1 question)" in below_chance_relations({"a": (0.01, 1)}, 20)
    assert below_chance_relations({"a": (chance, 3)}, 20) == "" and below_chance_relations({"a": (0.0, 3)}, 1) == ""
