"""Completing incomplete rows (`tpar complete`, the Upload page's completion): the reader keeps them
aside, a trained model fills a planted rule's masked entity, nothing hidden leaks into the
background, known answers are never proposed, and the completed CSV reads back with its inferred
flags (kept through save_dataset, shown on the timeline)."""

from __future__ import annotations

import csv
import random

import numpy as np
import pytest
import torch

from tpar.cli import main
from tpar.data.loading import load_dataset
from tpar.data.tables import IncompleteRow, load_csv, read_quadruple_csv
from tpar.data.upload import inspect_upload, save_dataset
from tpar.errors import DataError
from tpar.model.checkpoint import Checkpoint
from tpar.model.config import ModelConfig, RunConfig, TrainConfig
from tpar.model.ranker import ModelRanker
from tpar.training.trainer import train
from tpar.reasoning.completion import complete, completed_rows, with_completions, write_completed_csv

PEOPLE = [f"P{i}" for i in range(12)]


def planted_rows(days: int = 40, seed: int = 0) -> list[tuple[str, str, str, str]]:
    """Each day three random pairs: a meets b, and b calls a back the same day (the planted rule)."""
    rng = random.Random(seed)
    rows = []
    for day in range(days):
        date = f"2024-{1 + day // 28:02d}-{1 + day % 28:02d}"
        for a, b in zip(*[iter(rng.sample(PEOPLE, 6))] * 2):
            rows += [(a, "meets", b, date), (b, "calls", a, date)]
    return rows


def write_csv(path, rows, header=("subject", "relation", "object", "time")):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The planted world's data (the 'calls' facts of the last 8 days removed: they are the rows to
    complete) and a small model trained on it in interpolation (a few seconds)."""
    d = tmp_path_factory.mktemp("planted")
    rows = planted_rows()
    last_days = {r[3] for r in rows[-8 * 6:]}
    hidden = [r for r in rows if r[1] == "calls" and r[3] in last_days]
    known = [r for r in rows if r not in hidden]
    data = write_csv(d / "known.csv", known)
    kg = load_csv(data, split_policy="random", seed=0)
    torch.manual_seed(0)
    run = RunConfig(ModelConfig(dim=8, attn_dim=3, num_layers=1, dropout=0.0),  # the rule is one hop
                    TrainConfig(setting="interpolation", lr=1e-2, batch_size=8, micro_batch=8, epochs=10, patience=10,
                                max_valid_queries=0, checkpoint_every=1e9, seed=0))
    train(kg, run, d / "model.tpar")
    return {"dir": d, "data": data, "kg": kg, "hidden": hidden, "checkpoint": d / "model.tpar"}


def test_reader_keeps_incomplete_rows_aside_and_reads_marks(tmp_path):
    text = ("subject,relation,object,time,completed,probability\n"
            "A,r,B,2020-01-01,,\nA,r,,2020-01-02,,\n,r,B,2020-01-03,,\nC,r,D,2020-01-04,TRUE,0.93\n"
            ",r,,2020-01-05,,\nC,r,D,2020-01-06,maybe,\nC,r,D,2020-01-07,true,1.5\nA,,,2020-01-08,,\n")
    q = read_quadruple_csv("x.csv", text=text, incomplete="keep", on_bad_rows="drop")
    assert q.subjects == ["A", "C"] and q.inferred == [False, True]
    assert np.isnan(q.probabilities[0]) and q.probabilities[1] == pytest.approx(0.93)
    assert q.incomplete == [IncompleteRow(3, "A", "r", None, "2020-01-02"), IncompleteRow(4, None, "r", "B", "2020-01-03")]
    assert q.incomplete[0].missing == "object" and q.incomplete[1].known == "B"
    problems = dict(q.report.problems)
    assert "empty subject, object" in problems[6]
    assert "completed 'maybe'" in problems[7] and "probability '1.5'" in problems[8]
    assert "empty relation" in problems[9]
    with pytest.raises(DataError, match=r"row 3.*empty object \(an incomplete fact: `tpar complete`"):
        read_quadruple_csv("x.csv", text=text)  # without incomplete="keep" they are bad rows, said how to fix


def test_a_file_of_only_incomplete_rows_is_read_for_completion_but_is_no_data_set():
    text = "subject,relation,object,time\nA,r,,2020-01-02\n,r,B,2020-01-03\n"
    q = read_quadruple_csv("x.csv", text=text, incomplete="keep")
    assert q.subjects == [] and len(q.incomplete) == 2
    with pytest.raises(DataError, match="every row lacks"):
        inspect_upload(text, "x.csv")


def test_a_trained_model_fills_the_planted_rule(planted):
    kg, hidden = planted["kg"], planted["hidden"]
    ck = Checkpoint.load(planted["checkpoint"])
    rows = [IncompleteRow(i + 2, s, r, None, t) for i, (s, r, o, t) in enumerate(hidden)]
    comps = complete(kg, ModelRanker(ck.build_model("cpu"), "cpu"), rows)
    assert all(c.setting == "interpolation" and c.problem == "" for c in comps)
    right = sum(c.entity == o for c, (_, _, o, _) in zip(comps, hidden))
    assert right / len(hidden) >= 0.9, [c.note() for c in comps]
    # the subject direction: (?, calls, a, t) is asked as (a, calls⁻¹, ?, t)
    rows = [IncompleteRow(i + 2, None, r, o, t) for i, (s, r, o, t) in enumerate(hidden)]
    comps = complete(kg, ModelRanker(ck.build_model("cpu"), "cpu"), rows)
    assert sum(c.entity == s for c, (s, _, _, _) in zip(comps, hidden)) / len(hidden) >= 0.9
    assert all(0 < c.probability <= 1 and len(c.alternatives) == 3 for c in comps)


class Spy:
    """A ranker that records every background it is given and scores entity e by e (no ties)."""

    def __init__(self):
        self.backgrounds = []

    def score(self, batch, background):
        self.backgrounds.append(background)
        return torch.arange(background.num_entities, dtype=torch.float32).repeat(len(batch), 1)


def test_masked_rows_never_reach_the_background_and_known_answers_are_not_proposed(planted):
    kg, hidden = planted["kg"], planted["hidden"]
    rows = [IncompleteRow(i + 2, s, r, None, t) for i, (s, r, o, t) in enumerate(hidden)]
    spy = Spy()
    comps = complete(kg, spy, rows)
    ix = spy.backgrounds[0].index
    links = {(int(a), int(r), int(b), int(t)) for a, r, b, t in zip(ix.src, ix.rel, ix.dst, ix.time)}
    R = kg.num_relations
    for s, r, o, t in hidden:
        ids = kg.entities.id(s), kg.relations.id(r), kg.entities.id(o), kg.time_axis.parse(t)
        assert (ids[0], ids[1], ids[2], ids[3]) not in links and (ids[2], ids[1] + R, ids[0], ids[3]) not in links
    # a row whose question already has a known answer: that answer is never the proposal
    s, r, o, t = next(f for f in kg.all_facts().tolist())
    row = IncompleteRow(99, kg.entities.name(s), kg.relations.name(r), None, kg.time_axis.label(t))
    top_by_spy = kg.num_entities - 1
    known_objects = {b for a, rr, b, tt in kg.all_facts().tolist() if (a, rr, tt) == (s, r, t)}
    (c,) = complete(kg, Spy(), [row])
    assert c.known_answers == len(known_objects) and kg.entities.id(c.entity) not in known_objects
    if top_by_spy in known_objects:
        assert kg.entities.id(c.entity) != top_by_spy


def test_the_rows_own_entity_is_never_proposed_where_no_fact_links_an_entity_to_itself(planted):
    """New-user walk 38: 'Fernholt, Impose sanctions, Fernholt' was filled at 99.9998% from a candidate predict gave
    < 0.0001%: the row's own entity, which the model scores by staying there. It is not proposed, and the note says
    what was left out and that the probability is over the others."""
    kg = planted["kg"]
    assert not any(a == b for a, _, b, _ in kg.all_facts().tolist())  # no self-facts in this data

    class SelfFirst:
        def score(self, batch, background):
            out = torch.arange(background.num_entities, dtype=torch.float32).repeat(len(batch), 1)
            out[torch.arange(len(batch)), batch.subject] = 1e3  # the question's own entity far on top
            return out

    row = IncompleteRow(7, "P1", "calls", None, "2024-01-05")
    (c,) = complete(kg, SelfFirst(), [row])
    assert c.own_left_out and c.entity not in (None, "P1")
    assert "the row's own entity not proposed (the probability is over the other entities)" \
        in c.note(), c.note()


def test_unknown_names_and_ties_give_no_proposal(planted):
    kg = planted["kg"]

    class Flat:
        def score(self, batch, background):
            return torch.zeros(len(batch), background.num_entities)

    rows = [IncompleteRow(2, "Nobody", "calls", None, "2024-01-05"), IncompleteRow(3, "P1", "hugs", None, "2024-01-05"),
            IncompleteRow(4, "P1", "calls", None, "2024-01-05"), IncompleteRow(5, "P1", "calls", None, "2031-01-05"),
            IncompleteRow(6, "P1", "calls", None, "not a date")]
    a, b, c, far, bad = complete(kg, Flat(), rows)
    assert far.entity is None and "row 5: time '2031-01-05' lies" in far.problem and "are refused" in far.problem
    assert bad.entity is None and bad.problem.startswith("row 6: ")
    assert a.entity is None and "unknown entity 'Nobody'" in a.problem
    assert b.entity is None and "unknown relation 'hugs'" in b.problem
    assert c.entity is None and "every candidate scores the same" in c.problem


def test_completed_csv_round_trips_with_inferred_flags(planted, tmp_path):
    kg, hidden = planted["kg"], planted["hidden"]
    rows = [(s, r, "", t) if i % 2 else ("", r, o, t) for i, (s, r, o, t) in enumerate(hidden)]
    extra = [("P0", "meets", "P1", "2024-02-20")]
    inp = write_csv(tmp_path / "in.csv", extra + rows)
    q = read_quadruple_csv(inp, incomplete="keep")
    ck = Checkpoint.load(planted["checkpoint"])
    comps = complete(kg, ModelRanker(ck.build_model("cpu"), "cpu"), q.incomplete)
    threshold = sorted(c.probability for c in comps)[len(comps) // 2]
    out = tmp_path / "out.csv"
    assert write_completed_csv(out, q, comps, threshold) == len(rows) + 1
    back = read_quadruple_csv(out, incomplete="keep")
    accepted = [c for c in comps if c.probability >= threshold]
    assert sum(back.inferred) == len(accepted) and len(back.incomplete) == len(comps) - len(accepted)
    assert back.subjects[0] == "P0" and back.inferred[0] is False  # complete rows pass through, unmarked
    for c in accepted:
        i = back.rows.index(c.row.row)
        assert (back.subjects[i], back.relations[i], back.objects[i], back.raw_times[i]) == c.fact
        assert back.inferred[i] and back.probabilities[i] == pytest.approx(c.probability, rel=1e-5)
    # rows below the threshold stay incomplete, their proposal first among the alternatives
    below = [d for d in completed_rows(q, comps, threshold) if d["completed"] == "false" and d["alternatives"]]
    assert len(below) == len(comps) - len(accepted)


def test_with_completions_marks_train_facts_only_and_survives_save(planted, tmp_path):
    kg, hidden = planted["kg"], planted["hidden"]
    ck = Checkpoint.load(planted["checkpoint"])
    rows = [IncompleteRow(i + 2, s, r, None, t) for i, (s, r, o, t) in enumerate(hidden)]
    comps = complete(kg, ModelRanker(ck.build_model("cpu"), "cpu"), rows)
    done = with_completions(kg, comps, 0.0)
    n = len({c.fact for c in comps})
    assert len(done.inferred) == n and len(done.facts("train")) == len(kg.facts("train")) + n
    assert {s: len(done.facts(s)) for s in ("valid", "test")} == {s: len(kg.facts(s)) for s in ("valid", "test")}
    assert done.fingerprint != kg.fingerprint
    f = next(iter(done.inferred))
    assert done.is_inferred(*f) and "inferred by a model" in done.inferred_text(*f)
    # the probability reads as everywhere else in the product (one formatter: 1.0%, not 1%)
    from tpar.errors import probability_text
    assert done.inferred_text(*f) == f"inferred by a model (p = {probability_text(done.inferred[f])}), not observed"
    person = done.entities.name(f[0])
    assert any(e.inferred for e in done.entity_facts(person))
    saved = save_dataset(done, tmp_path, "completed")
    back = load_dataset(saved)
    assert back.inferred.keys() == done.inferred.keys() and back.fingerprint == done.fingerprint
    assert all(abs(back.inferred[k] - done.inferred[k]) < 1e-5 for k in done.inferred)


def test_cli_complete(planted, tmp_path, capsys):
    hidden = planted["hidden"]
    inp = write_csv(tmp_path / "in.csv", [(s, r, "", t) for s, r, o, t in hidden])
    out = tmp_path / "out.csv"
    argv = ["complete", "--checkpoint", str(planted["checkpoint"]), "--data", str(planted["data"]),
            "--split-policy", "random", "--input", str(inp), "--out", str(out)]
    assert main(argv + ["--min-probability", "0.5"]) == 0
    text = capsys.readouterr().out
    assert f"{len(hidden)} incomplete rows" in text and "completed with p ≥ 0.5" in text
    back = read_quadruple_csv(out, incomplete="keep")
    assert len(back.subjects) + len(back.incomplete) == len(hidden)
    assert main(argv + ["--min-probability", "1.5"]) == 2
    assert "between 0 and 1" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("subject,relation,object,time\nP1,calls,,not-a-date\n")
    assert main(argv[:-4] + ["--input", str(bad), "--out", str(out)]) == 2
    assert "bad.csv, row 2" in capsys.readouterr().err
    unknown = tmp_path / "unknown.csv"
    unknown.write_text(f"subject,relation,object,time\nNobody,calls,,{hidden[0][3]}\n")
    assert main(argv[:-4] + ["--input", str(unknown), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "  row 2: unknown entity 'Nobody'" in said and "row 2: row 2" not in said  # the row named once


def test_an_evidence_path_through_an_inferred_fact_says_so(planted):
    from tpar.reasoning.explanation import Explainer
    from tpar.reasoning.prediction import Predictor

    kg, hidden = planted["kg"], planted["hidden"]
    ck = Checkpoint.load(planted["checkpoint"])
    rows = [IncompleteRow(i + 2, s, r, None, t) for i, (s, r, o, t) in enumerate(hidden)]
    done = with_completions(kg, complete(kg, ModelRanker(ck.build_model("cpu"), "cpu"), rows), 0.0)
    b, _, a, t = hidden[0]  # b calls a (inferred now); ask who a met that day: b, through the inferred call
    e = Explainer(Predictor(ck, done, "cpu")).explain(a, "meets", t, b, setting="interpolation", num_paths=3)
    links = [x for p in e.paths for x in p.links]
    through = [x for x in links if x.relation == "calls"]
    assert through and all("inferred by a model" in x.inferred and "inferred by a model" in x.sentence()
                           for x in through)
    assert all(not x.inferred for x in links if x.relation == "meets")


def test_train_evidence_keeps_valid_and_test_out_of_the_completer(planted):
    kg = planted["kg"]
    rows = [IncompleteRow(2, "P1", "calls", None, "2024-01-05")]
    spy = Spy()
    complete(kg, spy, rows, evidence="train")
    ix = spy.backgrounds[0].index
    links = {(int(a), int(r), int(b), int(t)) for a, r, b, t in zip(ix.src, ix.rel, ix.dst, ix.time)}
    assert not links & {tuple(f) for s in ("valid", "test") for f in kg.facts(s).tolist()}
    assert {tuple(f) for f in kg.facts("train").tolist()} <= links
    spy = Spy()
    complete(kg, spy, rows)  # the default: every known fact is evidence
    ix = spy.backgrounds[0].index
    links = {(int(a), int(r), int(b), int(t)) for a, r, b, t in zip(ix.src, ix.rel, ix.dst, ix.time)}
    assert {tuple(f) for s in ("valid", "test") for f in kg.facts(s).tolist()} <= links
    with pytest.raises(ValueError):
        complete(kg, spy, rows, evidence="test")


def test_inferred_facts_never_land_in_valid_or_test(tmp_path):
    text = ("subject,relation,object,time,split,completed,probability\n"
            "A,r,B,2020-01-01,train,false,\nB,r,C,2020-01-02,train,false,\nC,r,D,2020-01-03,valid,false,\n"
            "D,r,A,2020-01-04,test,true,0.9\nA,r,C,2020-01-05,test,false,\nB,r,D,2020-01-06,valid,true,0.8\n")
    (tmp_path / "x.csv").write_text(text)
    kg = load_csv(tmp_path / "x.csv")
    for split in ("valid", "test"):
        assert not any(kg.is_inferred(*f) for f in kg.facts(split).tolist())
    assert len(kg.facts("train")) == 4 and len(kg.inferred) == 2
    assert any("2 of them moved from valid/test to train" in n for n in kg.notes)
    _, up = inspect_upload(text.replace(",split", ",split"), "x.csv", split_policy="random", seed=3)
    assert all(up.is_inferred(*f) is False for s in ("valid", "test") for f in up.facts(s).tolist())


def test_outlier_exclusion_keeps_each_inferred_mark_on_its_row():
    rows = ["subject,relation,object,time,completed,probability", "X,r,Y,1990-01-01,false,"]
    rows += [f"A{i},r,B{i},2020-01-{1 + i:02d},{'true' if i == 3 else 'false'},{'0.7' if i == 3 else ''}" for i in range(20)]
    report, kg = inspect_upload("\n".join(rows) + "\n", "x.csv", exclude_outliers=True)
    assert report.outliers and report.outliers_excluded
    (fact,) = kg.inferred
    assert (kg.entities.name(fact[0]), kg.entities.name(fact[2])) == ("A3", "B3")


def test_saved_probabilities_keep_the_fingerprint(planted, tmp_path):
    from dataclasses import replace

    kg = planted["kg"]
    f = kg.facts("train")[:3].tolist()
    marked = replace(kg, inferred={tuple(f[0]): 0.0123456789, tuple(f[1]): 0.0, tuple(f[2]): float("nan")})
    back = load_dataset(save_dataset(marked, tmp_path, "p"))
    assert back.fingerprint == marked.fingerprint and back.inferred[tuple(f[1])] == 0.0


def test_rows_are_completed_in_the_datas_own_spelling(planted):
    kg = planted["kg"]
    (c,) = complete(kg, Spy(), [IncompleteRow(2, "p1", "CALLS", None, "2024-01-05")])
    assert c.fact[:2] == ("P1", "calls") and c.entity in kg.entities


# ---------------------------------------------------------------- confident proposals only (issue #33)
def test_the_precision_threshold_is_the_lowest_probability_whose_proposals_are_right_often_enough():
    from tpar.evaluation.calibration import precision_threshold

    # 40 questions over 3 entities; question i's top probability falls with i (entity 0 proposed), and the
    # answer is entity 0 except at i = 3, 7 and from 20 on every other question
    n = 40
    logits = torch.zeros(n, 3, dtype=torch.float64)
    logits[:, 0] = torch.linspace(6.0, 0.5, n)
    wrong = {3, 7} | {i for i in range(20, n) if i % 2}
    answers = torch.tensor([1 if i in wrong else 0 for i in range(n)])
    fit = precision_threshold(logits, answers, 1.0, 0.9, setting="interpolation")
    conf = torch.softmax(logits, 1)[:, 0]
    right = np.cumsum([i not in wrong for i in range(n)]) / np.arange(1, n + 1)
    k = max(i for i in range(n) if right[i] >= 0.9 and i + 1 >= 10)  # the largest prefix that is 90% right
    assert fit.threshold == pytest.approx(float(conf[k])) and fit.filled == k + 1 and fit.questions == n
    assert fit.precision == pytest.approx(right[k]) and fit.precision >= 0.9
    assert fit.text().startswith(f"interpolation: p ≥ {float(conf[k]):.3g}, fitted on 40 valid questions for 90% ")
    assert not precision_threshold(logits, answers, 1.0, 1.0).reached  # question 3 is wrong: 100% needs < 10
    assert precision_threshold(logits, answers, 1.0, 1.0, min_support=3).filled == 3
    tied = torch.zeros(n, 3, dtype=torch.float64)  # all tied at 1/3: all in (28 of 40 right) or all out
    assert not precision_threshold(tied, answers, 1.0, 0.9).reached
    assert precision_threshold(tied, answers, 1.0, 0.7).filled == n


def test_cli_complete_fills_only_proposals_above_the_threshold_fitted_on_valid(planted, tmp_path, capsys):
    import json

    from tpar.evaluation.calibration import collect, precision_threshold, stored

    hidden = planted["hidden"]
    # half the rows ask who a call came from: answerable from the meeting; the other half ask about 'meets'
    # at a time nobody met (no evidence of any meeting that day)
    rows = [(s, r, "", t) for s, r, o, t in hidden] + [("P0", "meets", "", "2024-01-02")]
    inp = write_csv(tmp_path / "in.csv", rows)
    out = tmp_path / "out.csv"
    argv = ["complete", "--checkpoint", str(planted["checkpoint"]), "--data", str(planted["data"]),
            "--split-policy", "random", "--input", str(inp), "--out", str(out)]
    assert main(argv + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    fit = d["thresholds"]["interpolation"]
    ck = Checkpoint.load(planted["checkpoint"])
    # fitted as the proposals are made: each question's own entity left out (no fact links an entity to itself)
    logits, answers = collect(planted["kg"], ModelRanker(ck.build_model("cpu"), "cpu"), "interpolation", "valid",
                              self_linked=planted["kg"].self_linked())
    want = precision_threshold(logits, answers, stored(ck.extra, "interpolation").temperature, 0.9)
    assert fit["threshold"] == pytest.approx(want.threshold) and fit["questions"] == len(answers)
    for r in d["rows"]:
        assert r["accepted"] == (r["probability"] is not None and r["probability"] >= fit["threshold"])
    assert main(argv + ["--json", "--precision", "0.95"]) == 0  # stricter: a higher threshold, some rows left empty
    d = json.loads(capsys.readouterr().out)
    strict = d["thresholds"]["interpolation"]
    assert strict["threshold"] > fit["threshold"] and strict["precision"] >= 0.95
    for r in d["rows"]:
        assert r["accepted"] == (r["probability"] is not None and r["probability"] >= strict["threshold"])
    assert any(r["accepted"] for r in d["rows"]) and any(not r["accepted"] and r["probability"] for r in d["rows"])
    back = read_quadruple_csv(out, incomplete="keep")
    assert len(back.subjects) == sum(r["accepted"] for r in d["rows"])  # filled rows are facts, the rest empty
    with open(out, newline="", encoding="utf-8") as fh:
        written = list(csv.DictReader(fh))
    for r, w in zip(d["rows"], written):
        if not r["accepted"] and r["fact"]:  # left empty, its best guess listed first
            assert w["object"] == "" and w["alternatives"].startswith(r["fact"][2])
    assert main(argv + ["--precision", "0.95", "--show", "50"]) == 0
    text = capsys.readouterr().out
    assert "completed confidently (a threshold fitted on valid for 95% precision)" in text
    assert "threshold interpolation: p ≥" in text and "left empty, best guess" in text
    assert main(argv + ["--precision", "0"]) == 2 and "--precision 0.0 is not" in capsys.readouterr().err
    assert main(argv + ["--min-probability", "0"]) == 0  # explicitly: every proposal
    assert "completed with p ≥ 0 (--min-probability)" in capsys.readouterr().out


def test_a_model_whose_relations_cover_the_rows_completes_them(planted, tmp_path):
    """A data set with a relation the model never saw: its facts are no evidence to the model, its rows are
    refused by name, and the other rows get exactly the proposals they get on the data without it."""
    from tpar.reasoning.completion import complete_with_checkpoint, relation_view

    ck = Checkpoint.load(planted["checkpoint"])
    kg = planted["kg"]
    extra = [(a, "fines", b, t) for a, _, b, t in planted_rows(days=40, seed=5)[:30:2]]
    known = [r for r in planted_rows() if r not in planted["hidden"]]
    wider = load_csv(write_csv(tmp_path / "wider.csv", known + extra), split_policy="random", seed=0)
    assert "fines" in wider.relations and list(wider.relations.names) != list(ck.relations)
    with pytest.raises(DataError, match="its relations differ"):
        ck.check_fits(wider)  # the exact-match rule this completion no longer needs
    view = relation_view(wider, ck.relations)
    assert "fines" not in view.relations and len(view.all_facts()) == len(wider.all_facts()) - len(extra)
    rows = [IncompleteRow(i + 2, s, r, None, t) for i, (s, r, o, t) in enumerate(planted["hidden"][:10])]
    rows.append(IncompleteRow(99, "P1", "fines", None, planted["hidden"][0][3]))
    got = complete_with_checkpoint(ck, wider, rows, device="cpu")
    assert "does not know relation 'fines'" in got[-1].problem and got[-1].entity is None
    base = complete_with_checkpoint(ck, kg, rows[:-1], device="cpu")
    for a, b in zip(got[:-1], base):
        assert (a.entity, a.setting) == (b.entity, b.setting)
        assert a.probability == pytest.approx(b.probability, rel=1e-5)
    # a data set with fewer relations than the model (only the calls): the model serves it too
    calls = load_csv(write_csv(tmp_path / "calls.csv", [r for r in known if r[1] == "calls"]), split_policy="random")
    assert complete_with_checkpoint(ck, calls, rows[:3], device="cpu")[0].entity is not None


def test_without_valid_facts_to_fit_on_no_row_is_filled_by_default(planted, tmp_path, capsys):
    folder = tmp_path / "train-only"
    folder.mkdir()
    write_csv(folder / "train.csv", [r for r in planted_rows() if r not in planted["hidden"]])
    inp = write_csv(tmp_path / "in.csv", [(s, r, "", t) for s, r, o, t in planted["hidden"][:6]])
    out = tmp_path / "out.csv"
    argv = ["complete", "--checkpoint", str(planted["checkpoint"]), "--data", str(folder), "--input", str(inp),
            "--out", str(out), "--setting", "interpolation"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "0 completed confidently" in text and "no valid questions to fit a threshold on" in text
    assert "--min-probability P fills" in text
    back = read_quadruple_csv(out, incomplete="keep")
    assert not back.subjects and len(back.incomplete) == 6  # nothing guessed into the data


def test_completed_csv_cells_never_start_a_formula_and_read_back_as_written(planted, tmp_path):
    """Names from untrusted files (the input's and the proposals') pass through the one formula-safe
    CSV writer; the table reader takes the apostrophe off, so the file still reads back as data."""
    from tpar.reasoning.completion import Completion, Proposal

    hostile = ["=HYPERLINK(\"http://evil.example\")", "+44 20 7946 0000", "-1", "@SUM(A1)"]
    inp = write_csv(tmp_path / "in.csv", [(hostile[0], "meets", "", "2024-02-20"), (hostile[1], "calls", "P1", "2024-02-21")])
    q = read_quadruple_csv(inp, incomplete="keep")
    c = Completion(q.incomplete[0], entity=hostile[2], probability=0.9, calibrated=False, setting="interpolation",
                   alternatives=[Proposal(hostile[3], 0.05)])
    out = tmp_path / "out.csv"
    assert write_completed_csv(out, q, [c]) == 2
    cells = [cell for row in csv.reader(out.read_text(encoding="utf-8").splitlines()) for cell in row]
    assert not [x for x in cells if x.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert "'=HYPERLINK(\"http://evil.example\")" in cells and "'-1" in cells
    assert any(x.startswith("'@SUM(A1)") for x in cells)
    back = read_quadruple_csv(out, incomplete="keep")
    assert set(back.subjects) == {hostile[0], hostile[1]} and hostile[2] in back.objects


def test_complete_states_its_row_limit_and_reports_progress(planted, tmp_path, monkeypatch, capsys):
    from tpar.reasoning import completion
    from tpar.reasoning.completion import MAX_ROWS, complete_with_checkpoint

    assert MAX_ROWS == 20_000
    hidden = planted["hidden"]
    inp = write_csv(tmp_path / "in.csv", [(s, r, "", t) for s, r, o, t in hidden])
    out = tmp_path / "out.csv"
    argv = ["complete", "--checkpoint", str(planted["checkpoint"]), "--data", str(planted["data"]),
            "--split-policy", "random", "--input", str(inp), "--out", str(out)]
    monkeypatch.setattr(completion, "MAX_ROWS", len(hidden) - 1)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"in.csv: {len(hidden):,} incomplete rows; at most {len(hidden) - 1:,} are completed at once" in err
    assert "split the file" in err and not out.exists()
    monkeypatch.undo()
    seen = []
    q = read_quadruple_csv(inp, incomplete="keep")
    complete_with_checkpoint(Checkpoint.load(planted["checkpoint"]), planted["kg"], q.incomplete,
                             on_progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (len(hidden), len(hidden)) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert main(argv) == 0
    assert "completing" in capsys.readouterr().err  # the progress bar, on stderr
