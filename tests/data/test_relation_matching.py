"""Relation matching: a checkpoint on data with another relation vocabulary (tpar.data.relation_matching)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tpar.data.kg import TemporalKG
from tpar.data.relation_matching import (MatchedKG, match_relations, normalise_relation, read_relation_map)
from tpar.data.vocab import Vocabulary
from tpar.errors import DataError
from tpar.evaluation.protocol import evaluate
from tpar.model.ranker import ModelRanker
from tpar.reasoning.prediction import Predictor

from helpers import make_kg


def test_normalisation_ignores_case_underscores_spaces_and_punctuation():
    assert normalise_relation("Make_statement") == "make statement"
    assert normalise_relation("  make   STATEMENT. ") == "make statement"
    assert normalise_relation("Make-statement") == normalise_relation("make_statement")
    assert normalise_relation("Demand (economic) aid, e.g.") == "demand economic aid e g"
    assert normalise_relation("Ｍａｋｅ statement") == "make statement"       # NFKC: full-width letters
    assert normalise_relation("Reject") != normalise_relation("Rejects")


def test_match_report_counts_matches_unmatched_facts_and_questions():
    # data relations: r0 'make statement' (normalised), r1 'Consult' (exact), r2 'impose curfew' (unknown)
    kg = make_kg(train=[(0, 0, 1, 0), (1, 0, 2, 1), (2, 1, 0, 1), (0, 2, 1, 2)],
                 test=[(0, 0, 1, 3), (1, 2, 2, 3)], name="other")
    kg = TemporalKG(kg.name, kg.entities, Vocabulary(("make statement", "Consult", "impose curfew")),
                    kg.time_axis, kg.splits)
    m = match_relations(["Consult", "Make_statement", "Threaten"], kg, model_name="ICEWS14")
    assert m.data_to_model.tolist() == [1, 0, -1]
    assert [(x.data_relation, x.model_relation, x.how, x.facts) for x in m.matched] == [
        ("make statement", "Make_statement", "normalised", 3), ("Consult", "Consult", "exact", 1)]
    assert [(u.data_relation, u.facts) for u in m.unmatched] == [("impose curfew", 2)]
    assert (m.facts_covered, m.facts_total) == (4, 6)
    assert m.questions("test") == (2, 4) and m.question_coverage("test") == 0.5
    assert m.describe() == "trained on ICEWS14, applied to other: 2 of 3 relations matched, 66.7% of facts"
    assert "'impose curfew' (2 facts)" in m.report()
    # refused below the coverage the user sets; accepted at or above it
    with pytest.raises(DataError, match=r"66.7% of the facts, below the required 95.0%.*'impose curfew' \(2 facts\)"):
        m.check()
    m.check(0.6)
    # applied: the model's ids, the data's names, unmatched facts out, entities untouched
    a = m.apply(kg)
    assert isinstance(a, MatchedKG) and a.entities is kg.entities
    assert a.relations.names == ("Consult", "make statement", "Threaten (model only)")
    assert a.facts("train").tolist() == [[0, 1, 1, 0], [1, 1, 2, 1], [2, 0, 0, 1]]
    assert a.facts("test").tolist() == [[0, 1, 1, 3]]
    # a question about the unmatched relation is answered by a message naming it
    with pytest.raises(DataError, match="relation 'impose curfew' of other has no counterpart.*ICEWS14"):
        a.relations.resolve("Impose_Curfew", "relation")
    assert a.relations.resolve("Make Statement", "relation") == "make statement"


def test_ambiguous_and_taken_names_stay_unmatched_with_a_reason():
    kg = make_kg(train=[(0, 0, 1, 0), (0, 1, 1, 0), (0, 2, 1, 0)])
    kg = TemporalKG(kg.name, kg.entities, Vocabulary(("Meet", "meet", "PRAISE")), kg.time_axis, kg.splits)
    m = match_relations(["MEET", "Praise", "praise_"], kg)
    reasons = {u.data_relation: u.reason for u in m.unmatched}
    assert "fits 2 model relations" in reasons["PRAISE"]
    assert "already matched to 'Meet'" in reasons["meet"]
    assert [x.data_relation for x in m.matched] == ["Meet"]


def test_relation_map_csv_and_its_bad_rows(tmp_path):
    kg = make_kg(train=[(0, 0, 1, 0), (0, 1, 1, 0)])   # relations r0, r1
    good = tmp_path / "map.csv"
    good.write_text("data_relation,model_relation\n# a comment\n\nr0, Threaten\n")
    rm = read_relation_map(good)
    assert rm.pairs == {"r0": "Threaten"} and rm.rows == {"r0": 4}
    m = match_relations(["Threaten", "R1"], kg, mapping=rm)
    assert [(x.data_relation, x.model_relation, x.how) for x in m.matched] == [
        ("r0", "Threaten", "mapping"), ("r1", "R1", "normalised")]

    bad = tmp_path / "bad.csv"
    bad.write_text("r0,Threaten,extra\n,Meet\nr1,Meet\nr1,Praise\n")
    with pytest.raises(DataError) as e:
        read_relation_map(bad)
    msg = str(e.value)
    assert msg.startswith(f"{bad}: 3 bad rows")
    assert "row 1: expected 2 fields" in msg and "row 2: empty data relation" in msg
    assert "row 4: 'r1' is mapped again, to 'Praise' (row 3 maps it to 'Meet')" in msg

    unknown = tmp_path / "unknown.csv"
    unknown.write_text("r0,Threaten\nnope,Threaten\nr1,Nothing\n")
    with pytest.raises(DataError) as e:
        match_relations(["Threaten", "R1"], kg, mapping=read_relation_map(unknown))
    msg = str(e.value)
    assert msg.startswith(f"{unknown}: 2 bad rows")
    assert "row 2: 'nope' is not a relation of toy" in msg and "row 3: 'Nothing' is not a relation of the model" in msg
    with pytest.raises(DataError, match="no such relation map"):
        read_relation_map(tmp_path / "missing.csv")

    # rows end at line ends only: a form feed, U+2028 or U+0085 inside a name, or a lone CR in a LF file, ends no
    # row, so the rows after it keep their numbers; CR LF and classic Mac CR files read row by row
    odd = tmp_path / "odd.csv"
    odd.write_bytes("r0,Threa\u2028ten\nr1,Me\x0cet\u0085\rX\nr1,Praise\n".encode())
    with pytest.raises(DataError) as e:
        read_relation_map(odd)
    assert "1 bad row" in str(e.value) and "row 3: 'r1' is mapped again" in str(e.value)
    for end in ("\r\n", "\r"):
        crlf = tmp_path / "ends.csv"
        crlf.write_bytes(end.join(["data_relation,model_relation", "r0,Threaten", "r1,Meet", ""]).encode())
        assert read_relation_map(crlf).rows == {"r0": 2, "r1": 3}


def _renamed(kg: TemporalKG, extra_facts: int = 0) -> TemporalKG:
    """``kg`` with its relations spelled otherwise (case, underscores, punctuation) and in another order,
    plus ``extra_facts`` train facts of one relation no model knows, among the data's entities."""
    R = kg.num_relations
    perm = np.random.default_rng(0).permutation(R)                  # new id of old relation i: perm[i]
    names = [""] * R
    for old, name in enumerate(kg.relations.names):
        names[perm[old]] = name.upper().replace(" ", "_") + "."
    names.append("Invented relation")
    splits = {}
    for split, arr in kg.splits.items():
        out = arr.copy()
        out[:, 1] = perm[arr[:, 1]]
        splits[split] = out
    if extra_facts:
        train = splits["train"]
        extra = train[:extra_facts].copy()
        extra[:, 1] = R
        splits["train"] = np.concatenate([train, extra])
    return TemporalKG("renamed", kg.entities, Vocabulary(tuple(names)), kg.time_axis, splits)


def test_remapped_facts_give_the_same_scores_as_the_original_vocabulary(sample_kg, sample_checkpoint):
    torch.set_num_threads(1)
    other = _renamed(sample_kg, extra_facts=5)
    with pytest.raises(DataError, match="its relations differ"):
        sample_checkpoint.check_fits(other)
    fitted = sample_checkpoint.fit(other)
    assert isinstance(fitted, MatchedKG) and fitted.match.facts_total - fitted.match.facts_covered == 5
    for split in ("train", "valid", "test"):                       # the very facts, in the model's ids
        assert np.array_equal(np.unique(fitted.facts(split), axis=0), np.unique(sample_kg.facts(split), axis=0))
    assert any("applied to renamed" in w for w in sample_checkpoint.check_fits(fitted))
    model = sample_checkpoint.build_model()
    a = evaluate(sample_kg, ModelRanker(model, "cpu"), "extrapolation", "test", max_queries=64, seed=3, progress=False)
    b = evaluate(fitted, ModelRanker(model, "cpu"), "extrapolation", "test", max_queries=64, seed=3, progress=False)
    assert np.array_equal(a.queries, b.queries)
    assert np.array_equal(a.optimistic, b.optimistic) and np.array_equal(a.pessimistic, b.pessimistic)
    # a question asked in the new spelling gets the answers of the original data
    s, r, o, t = sample_kg.facts("test")[0].tolist()
    rel_other = other.relations.names[int(np.flatnonzero(fitted.match.data_to_model == r)[0])]
    p_old = Predictor(sample_checkpoint, sample_kg, "cpu").predict(
        sample_kg.entities.name(s), sample_kg.relations.name(r), sample_kg.time_axis.label(t), top_k=5)
    p_new = Predictor(sample_checkpoint, other, "cpu").predict(
        sample_kg.entities.name(s), rel_other, sample_kg.time_axis.label(t), top_k=5)
    assert [(x.entity, x.score) for x in p_old.answers] == [(x.entity, x.score) for x in p_new.answers]
    assert any("applied to renamed" in w for w in Predictor(sample_checkpoint, other, "cpu").warnings)
    with pytest.raises(DataError, match="'Invented relation' of renamed has no counterpart"):
        Predictor(sample_checkpoint, other, "cpu").predict(sample_kg.entities.name(s), "invented relation",
                                                           sample_kg.time_axis.label(t))


def test_fit_refuses_below_the_coverage_and_accepts_a_lower_minimum(sample_kg, sample_checkpoint):
    other = _renamed(sample_kg, extra_facts=len(sample_kg.facts("train")) // 10)
    with pytest.raises(DataError, match="below the required 95.0%"):
        sample_checkpoint.fit(other)
    fitted = sample_checkpoint.fit(other, min_coverage=0.8)
    assert 0.8 < fitted.match.fact_coverage < 0.95
    assert sample_checkpoint.fit(sample_kg) is sample_kg            # its own vocabulary: served as it is


def test_the_card_says_what_the_model_was_trained_on_and_how_it_serves_other_data(sample_checkpoint):
    from tpar.model.card import render

    card = render(sample_checkpoint, "m")
    assert f"- trained on `{sample_checkpoint.data_name}` only. Other data:" in card
    assert "match its 20 by name" in card and "`--relation-map`" in card


def test_an_unmatched_relation_is_reported_under_the_name_typed_when_it_exists():
    """Two unmatched relations that differ only in case: the one typed exactly is the one named, not the first
    look-alike (``accuse`` was reported as 'ACCUSE')."""
    from tpar.data.relation_matching import MatchedVocabulary

    vocab = MatchedVocabulary(("Accuse",), {"ACCUSE": "relation 'ACCUSE' has no counterpart",
                                            "accuse": "relation 'accuse' has no counterpart"})
    for typed in ("accuse", "ACCUSE"):
        with pytest.raises(DataError, match=f"relation '{typed}' has no"):
            vocab.resolve(typed)
    with pytest.raises(DataError, match="relation 'ACCUSE' has no"):  # no exact one: the first look-alike
        vocab.resolve(" Accuse_ ".upper())
    assert vocab.resolve("Accuse") == "Accuse"
