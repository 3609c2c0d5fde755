"""A data set that grows (issue #31): new rows are checked as an upload is, placed on the data set's own time axis,
saved atomically with their lineage, and a model trained before them answers over the grown history at once,
saying how far the question lies past its training facts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import SAMPLE_CHECKPOINT, tiny_world_csv
from tpar.cli import main
from tpar.data.growth import grow, save_grown
from tpar.data.lineage import LINEAGE_FILE, lineage_of, trained_until
from tpar.data.loading import load_dataset
from tpar.data.timeaxis import TimeAxis
from tpar.data.upload import inspect_upload, save_dataset
from tpar.errors import DataError

HEADER = "subject,relation,object,time\n"


@pytest.fixture()
def ring(tmp_path):
    """The ring world (six people, 60 days of 2024) saved as an uploaded data set."""
    _, kg = inspect_upload(tiny_world_csv(), "ring.csv")
    return save_dataset(kg, tmp_path, "ring")


def test_new_rows_keep_ids_skip_known_facts_and_name_every_dropped_row(ring):
    kg = load_dataset(ring)
    known = "P0,meets,P1,2024-01-01\n"  # already a fact of the ring
    text = HEADER + known + "P0,meets,Newcomer,2024-03-05\nP0,meets,Newcomer,2024-03-05\n" \
        "P1,calls,P0,2024-03-05T06:30\nonly,three,columns\nP2,befriends,P3,2024-03-06\n"
    report, grown = grow(kg, text, "more.csv")
    assert report.known == 1 and report.duplicates == 1 and report.added == {"train": 2}
    assert report.new_entities == ["Newcomer"] and report.new_relations == [("befriends", 1)]
    rows = dict(report.dropped)
    assert set(rows) == {5, 6}, rows  # file rows: the date-time on a data set of days, the short row
    assert "2024-03-05T06:30" in rows[5] and "as the data set's times are (day steps from 2024-01-01)" in rows[5]
    # every old id means what it meant; new names come after them
    assert grown.entities.names[:kg.num_entities] == kg.entities.names
    assert grown.relations.names[:kg.num_relations] == kg.relations.names
    for split in kg.splits:
        assert np.array_equal(grown.facts(split)[:len(kg.facts(split))], kg.facts(split))
    assert report.time_range == ("2024-03-05", "2024-03-06") and report.data_last == "2024-03-04"
    assert report.extends_by == "2 days"
    text_report = "\n".join(report.lines())
    assert "row 5" in text_report and "'Newcomer'" in text_report and "'befriends'" in text_report


def test_the_growth_report_counts_agree_with_their_nouns(ring):
    """One row read, one fact added, one row dropped, one new entity, a new relation of one fact: each said in the
    singular ("1 rows dropped" and "1 new entities" were printed)."""
    report, _ = grow(load_dataset(ring), HEADER + "P0,greets,Newcomer,2024-03-05\n", "one.csv")
    lines = "\n".join(report.lines())
    assert "1 row read, 1 fact added" in lines and "0 rows dropped" in lines
    assert "1 new entity: 'Newcomer'" in lines and "new relation 'greets' (1 fact)" in lines
    report, _ = grow(load_dataset(ring), HEADER + "P0,meets,P2,2024-03-05\nonly,three,columns\n", "two.csv")
    assert "2 rows read, 1 fact added" in report.lines()[0] and "; 1 row dropped" in report.lines()[1]


def test_a_time_before_the_axis_origin_rebases_the_axis_keeping_every_label(ring):
    kg = load_dataset(ring)
    report, grown = grow(kg, HEADER + "P0,meets,P3,2023-12-25\n", "early.csv")
    assert report.added == {"train": 1} and any("before the data set's first time" in n for n in report.notes)
    assert grown.time_axis.origin.startswith("2023-12-25")
    old = {(kg.entities.name(s), kg.relations.name(r), kg.entities.name(o), kg.time_axis.label(t))
           for s, r, o, t in kg.all_facts().tolist()}
    new = {(grown.entities.name(s), grown.relations.name(r), grown.entities.name(o), grown.time_axis.label(t))
           for s, r, o, t in grown.all_facts().tolist()}
    assert new - old == {("P0", "meets", "P3", "2023-12-25")} and old <= new


def test_an_index_only_axis_refuses_steps_before_zero_and_a_typo_year_is_flagged(ring):
    from tpar.data.kg import TemporalKG
    from tpar.data.vocab import Vocabulary

    kg = TemporalKG("steps", Vocabulary(("a", "b")), Vocabulary(("r",)), TimeAxis("step"),
                    {"train": np.array([[0, 0, 1, 0], [1, 0, 0, 5]])})
    report, grown = grow(kg, HEADER + "a,r,b,-3\na,r,b,7\na,r,b,500\n", "s.csv")
    assert [r for r, _ in report.dropped] == [2] and "before the data set's first step 0" in report.dropped[0][1]
    assert report.added == {"train": 2} and any("more than 5 time steps" in n for n in report.notes)


def test_the_split_of_the_new_rows_is_chosen_or_read_from_the_file(ring):
    kg = load_dataset(ring)
    report, grown = grow(kg, HEADER + "P0,meets,P4,2024-03-01\n", "t.csv", split="test")
    assert report.added == {"test": 1} and len(grown.facts("test")) == len(kg.facts("test")) + 1
    text = "subject,relation,object,time,split\nP0,meets,P4,2024-03-01,valid\nP1,meets,P4,2024-03-02,train\n"
    report, _ = grow(kg, text, "c.csv", split="column")
    assert report.added == {"valid": 1, "train": 1}
    with pytest.raises(DataError, match="no 'split' column"):
        grow(kg, HEADER + "P0,meets,P4,2024-03-01\n", "n.csv", split="column")
    with pytest.raises(DataError, match="unknown split"):
        grow(kg, HEADER, "n.csv", split="history")


def test_saved_growth_records_its_lineage_and_reads_back(ring):
    kg = load_dataset(ring)
    report, grown = grow(kg, HEADER + "P0,meets,Newcomer,2024-03-05\n", "day1.csv")
    save_grown(kg, report, grown, ring.parent, ring.name, overwrite=True)
    once = load_dataset(ring)
    assert once.fingerprint == grown.fingerprint and len(once.lineage) == 1
    step = once.lineage[0]
    assert step["base_fingerprint"] == kg.fingerprint and step["file"] == "day1.csv" and step["added"] == {"train": 1}
    report2, grown2 = grow(once, HEADER + "Newcomer,calls,P0,2024-03-06\n", "day2.csv")
    save_grown(once, report2, grown2, ring.parent, ring.name, overwrite=True)
    twice = load_dataset(ring)
    assert [x["file"] for x in twice.lineage] == ["day1.csv", "day2.csv"]
    assert twice.lineage[1]["base_fingerprint"] == once.fingerprint
    assert any("grown 2 times" in n for n in twice.notes)


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", json.dumps({"steps": "x"}).encode(),
                                     b" " * 2_000_000])
def test_a_broken_or_huge_lineage_file_is_ignored(ring, content):
    (ring / LINEAGE_FILE).write_bytes(content)
    assert lineage_of(ring) == [] and load_dataset(ring).lineage == []


def test_lineage_values_are_cleaned_of_control_characters_and_wrong_kinds(ring):
    steps = [{"file": "a\x1b[31mred\x07.csv", "added": {"train": 3, "evil": 1, "test": -2}, "new_entities": "x",
              "base_name": ["not", "text"], "base_fingerprint": "f" * 300}, "not a step"]
    (ring / LINEAGE_FILE).write_text(json.dumps({"steps": steps}), encoding="utf-8")
    (step,) = lineage_of(ring)
    assert step["file"] == "a[31mred.csv" and step["added"] == {"train": 3}
    assert step["new_entities"] is None and step["base_name"] is None and len(step["base_fingerprint"]) == 200


def test_trained_until_from_the_checkpoint_the_same_data_or_the_lineage(ring):
    kg = load_dataset(ring)
    assert trained_until("x", {"train_time_range": ["2024-01-01", "2024-01-20"]}, kg) == "2024-01-20"
    last_train = kg.time_axis.label(int(kg.facts("train")[:, 3].max()))
    assert trained_until(kg.fingerprint, {}, kg) == last_train
    report, grown = grow(kg, HEADER + "P0,meets,P4,2024-03-01\n", "g.csv")
    save_grown(kg, report, grown, ring.parent, "ring-grown")
    assert trained_until(kg.fingerprint, {}, load_dataset(ring.parent / "ring-grown")) == last_train
    assert trained_until("another", {}, load_dataset(ring.parent / "ring-grown")) is None


def test_a_model_answers_over_the_grown_history_at_once_and_says_so(tmp_path):
    """The sample-world model, trained before the new facts, reaches a new entity through a new fact."""
    from tpar.data.catalog import sample_dir
    from tpar.model.checkpoint import Checkpoint
    from tpar.reasoning.prediction import Predictor

    base = sample_dir() / "world" / "chronological"
    kg = load_dataset(base)
    ck = Checkpoint.load(SAMPLE_CHECKPOINT)
    subject = kg.entities.name(int(kg.facts("test")[0, 0]))
    relation = kg.relations.name(int(kg.facts("test")[0, 1]))
    report, grown = grow(kg, HEADER + f"{subject},{relation},Newland,2026-01-02\n", "jan.csv")
    dest = save_grown(kg, report, grown, tmp_path, "world-grown")
    before = Predictor(ck, kg).predict(subject, relation, "2026-01-04", top_k=None)
    after = Predictor(ck, load_dataset(dest)).predict(subject, relation, "2026-01-04", top_k=None)
    assert "Newland" not in {a.entity for a in before.answers}
    newland = next(a for a in after.answers if a.entity == "Newland")
    assert newland.score > 0 and after.reached == before.reached + 1
    assert "32 days past its training facts" in after.provenance and "grown from chronological" in after.provenance
    assert any("grown since this model was trained" in w for w in after.warnings)
    assert before.provenance.startswith("model trained on this data (chronological, training facts to 2025-12-03)")


def test_cli_grow_in_place_into_a_copy_dry_run_and_refusals(ring, tmp_path, capsys):
    rows = tmp_path / "new.csv"
    rows.write_text(HEADER + "P0,meets,Newcomer,2024-03-05\nbad\n", encoding="utf-8")
    before = load_dataset(ring).fingerprint
    assert main(["grow", "--data", str(ring), "--rows", str(rows), "--dry-run"]) == 0
    assert "dry run: nothing written" in capsys.readouterr().out and load_dataset(ring).fingerprint == before
    assert main(["grow", "--data", str(ring), "--rows", str(rows), "--out", str(tmp_path / "copy")]) == 0
    assert load_dataset(ring).fingerprint == before and len(load_dataset(tmp_path / "copy").lineage) == 1
    assert main(["grow", "--data", str(ring), "--rows", str(rows), "--out", str(tmp_path / "copy")]) == 2
    assert "is already there" in capsys.readouterr().err
    assert main(["grow", "--data", str(ring), "--rows", str(rows)]) == 0
    out = capsys.readouterr().out
    assert "1 fact added" in out and "row 3" in out and load_dataset(ring).fingerprint != before
    assert main(["grow", "--data", str(ring), "--rows", str(rows)]) == 0
    assert "nothing to add" in capsys.readouterr().out
    single = tmp_path / "one.csv"
    single.write_text(tiny_world_csv(), encoding="utf-8")
    assert main(["grow", "--data", str(single), "--rows", str(rows)]) == 2
    assert "never rewritten" in capsys.readouterr().err
    # a dry run reports, then says what the real run would refuse (new-user walk 38 #8: it said only 'nothing written')
    assert main(["grow", "--data", str(single), "--rows", str(rows), "--dry-run"]) == 2
    cap = capsys.readouterr()
    assert "dry run: nothing written" in cap.out and "without --dry-run this would be refused" in cap.err
    assert "never rewritten" in cap.err


def test_checkpoints_record_the_time_range_of_their_training_facts(ring):
    from tpar.model.checkpoint import from_model
    from tpar.model.config import ModelConfig, RunConfig, TrainConfig
    from tpar.model.network import TPAR

    kg = load_dataset(ring)
    cfg = RunConfig(model=ModelConfig(num_relations=kg.num_relations, dim=8, attn_dim=4, num_layers=2),
                    train=TrainConfig())
    ck = from_model(TPAR(cfg.model), cfg, kg, "extrapolation")
    train = kg.facts("train")[:, 3]
    assert ck.extra["train_time_range"] == [kg.time_axis.label(int(train.min())), kg.time_axis.label(int(train.max()))]


@pytest.mark.parametrize("axis", [TimeAxis("year"), TimeAxis("day", "2024-01-01", 7)])
def test_a_time_axis_csv_files_cannot_hold_is_refused_before_anything_is_written(axis):
    """YAGO's year indices (no calendar) would read back from CSV files as plain steps, a week step as days: the
    grown data set would no longer fit any model of the data it grew from."""
    from tpar.data.kg import TemporalKG
    from tpar.data.vocab import Vocabulary

    kg = TemporalKG("yagoish", Vocabulary(("a", "b")), Vocabulary(("r",)), axis,
                    {"train": np.array([[0, 0, 1, 0], [1, 0, 0, 2]])})
    with pytest.raises(DataError, match="cannot be grown") as e:
        grow(kg, HEADER + f"a,r,b,{axis.label(3)}\n", "more.csv")
    assert axis.describe() in str(e.value)


def test_vocabulary_entities_without_facts_do_not_stop_the_save(tmp_path):
    """A benchmark's entity2id may list entities of no fact (YAGO: 38, ICEWS05-15: 3,875): CSV files of facts do
    not hold them, so the grown data set saves without them, and the report says so."""
    from tpar.data.kg import TemporalKG
    from tpar.data.vocab import Vocabulary

    kg = TemporalKG("bench", Vocabulary(("a", "b", "unused")), Vocabulary(("r", "idle")), TimeAxis("day", "2024-01-01"),
                    {"train": np.array([[0, 0, 1, 0], [1, 0, 0, 2]])})
    report, grown = grow(kg, HEADER + "a,r,b,2024-01-05\n", "more.csv")
    assert any("1 entity and 1 relation of the vocabulary" in n for n in report.notes), report.notes
    back = load_dataset(save_grown(kg, report, grown, tmp_path, "bench-grown"))
    assert sorted(back.entities.names) == ["a", "b"] and len(back.all_facts()) == 3


def test_a_grown_data_set_with_a_new_relation_is_still_called_grown_not_other_data(ring, tmp_path):
    """A new relation (or a relation first seen earlier once the new rows are saved) changes the relation order a
    saved data set reads back in: the model is then served through relation matching, and must still be told that
    the data grew from its own -- by the growth since it, not since the first data set -- not that it is zero-shot
    on other data."""
    from tpar.model.checkpoint import from_model
    from tpar.model.config import ModelConfig, RunConfig, TrainConfig
    from tpar.model.network import TPAR
    from tpar.model.registry import CheckpointInfo, matching_checkpoints

    kg = load_dataset(ring)
    report, grown = grow(kg, HEADER + "P0,meets,P5,2024-03-05\n", "first.csv")
    save_grown(kg, report, grown, ring.parent, ring.name, overwrite=True)
    once = load_dataset(ring)
    cfg = RunConfig(model=ModelConfig(num_relations=once.num_relations, dim=8, attn_dim=4, num_layers=2),
                    train=TrainConfig())
    ck = from_model(TPAR(cfg.model), cfg, once, "extrapolation")
    report, grown = grow(once, HEADER + "P0,befriends,P3,2024-03-06\nP1,meets,P2,2024-03-06\n", "second.csv")
    twice = load_dataset(save_grown(once, report, grown, ring.parent, ring.name, overwrite=True))
    assert list(twice.relations.names) != list(ck.relations)
    for warnings in (ck.check_fits(ck.fit(twice)),
                     matching_checkpoints(twice, [CheckpointInfo(tmp_path / "m.tpar", "m", ck)])[0].warnings):
        (w,) = warnings
        assert "grown since this model was trained" in w and "zero-shot" not in w, w
        assert "by 2 facts" in w and "in 2 steps" not in w and "1 of 2 relations" not in w, w
        assert "'befriends'" in w, w
    from tpar.reasoning.prediction import Predictor

    text = Predictor(ck, twice).provenance_text(twice.time_range[1])
    assert "grown from ring by 2 facts)" in text, text


def test_rows_a_model_inferred_stay_marked_inferred_and_never_become_test_facts(ring):
    """New rows with ``completed=true`` (``tpar complete`` writes them) are a model's proposals, not observations:
    the grown data set keeps them marked (with their probability) and in train, as an upload does."""
    kg = load_dataset(ring)
    text = ("subject,relation,object,time,completed,probability\n"
            "P0,meets,P4,2024-03-01,true,0.4\nP1,meets,P3,2024-03-02,false,\n")
    report, grown = grow(kg, text, "completed.csv", split="test")
    assert report.added == {"train": 1, "test": 1} and any("inferred" in n for n in report.notes), report.notes
    fact = (kg.entities.id("P0"), kg.relations.id("meets"), kg.entities.id("P4"), kg.time_axis.parse("2024-03-01"))
    assert grown.inferred == {fact: pytest.approx(0.4)}
    back = load_dataset(save_grown(kg, report, grown, ring.parent, "ring-completed"))
    assert len(back.inferred) == 1 and len(back.facts("test")) == len(kg.facts("test")) + 1


def test_growing_in_place_never_loses_a_file_or_a_column_of_the_folder(ring, tmp_path, capsys):
    """In place, the folder is rewritten as tpar saves a data set: a file of the user's beside the splits, or a
    column tpar does not read, would be deleted silently. Refused, naming them; --out still makes a grown copy."""
    rows = tmp_path / "new.csv"
    rows.write_text(HEADER + "P0,meets,Newcomer,2024-03-05\n", encoding="utf-8")
    (ring / "NOTES.md").write_text("my notes", encoding="utf-8")
    before = load_dataset(ring).fingerprint
    assert main(["grow", "--data", str(ring), "--rows", str(rows)]) == 2
    err = capsys.readouterr().err
    assert "NOTES.md" in err and "--out" in err
    assert (ring / "NOTES.md").read_text(encoding="utf-8") == "my notes" and load_dataset(ring).fingerprint == before
    (ring / "NOTES.md").unlink()
    valid = (ring / "valid.csv").read_text(encoding="utf-8").splitlines()
    (ring / "valid.csv").write_text("\n".join([valid[0] + ",source"] + [v + ",reuters" for v in valid[1:]]) + "\n",
                                    encoding="utf-8")
    assert main(["grow", "--data", str(ring), "--rows", str(rows)]) == 2
    assert "valid.csv column 'source'" in capsys.readouterr().err
    assert main(["grow", "--data", str(ring), "--rows", str(rows), "--out", str(tmp_path / "copy")]) == 0
    assert "reuters" in (ring / "valid.csv").read_text(encoding="utf-8")


def test_a_question_before_the_training_facts_is_not_said_to_lie_inside_them(ring):
    """Rows added before a data set's first time (the axis re-based) make questions before a model's training
    facts possible: the answer must not say they lie inside its training period."""
    from tpar.model.checkpoint import from_model
    from tpar.model.config import ModelConfig, RunConfig, TrainConfig
    from tpar.model.network import TPAR
    from tpar.reasoning.prediction import Predictor

    kg = load_dataset(ring)
    cfg = RunConfig(model=ModelConfig(num_relations=kg.num_relations, dim=8, attn_dim=4, num_layers=2),
                    train=TrainConfig())
    ck = from_model(TPAR(cfg.model), cfg, kg, "extrapolation")
    report, grown = grow(kg, HEADER + "P0,meets,P3,2023-12-01\n", "early.csv")
    pred = Predictor(ck, load_dataset(save_grown(kg, report, grown, ring.parent, "ring-early")))
    text = pred.provenance_text(pred.kg.time_axis.parse("2023-12-25"))
    assert "2023-12-25 lies 7 days before its training facts" in text and "inside" not in text, text
    assert "inside its training period" in pred.provenance_text(pred.kg.time_axis.parse("2024-01-05"))


def test_step_numbers_of_unrelated_data_are_not_compared_with_the_training_facts():
    """Index-only axes (plain steps, YAGO's year indices) have no calendar: step 40 of one data set says nothing
    about step 40 of another, so an answer over unrelated data does not claim how far it lies past the model's
    training facts (calendar axes, and data grown from the training data, still do)."""
    from tpar.data.kg import TemporalKG
    from tpar.data.vocab import Vocabulary
    from tpar.model.checkpoint import from_model
    from tpar.model.config import ModelConfig, RunConfig, TrainConfig
    from tpar.model.network import TPAR
    from tpar.reasoning.prediction import Predictor

    def data(name, axis, shift):
        facts = np.array([[i % 3, i % 2, (i + 1) % 3, i + shift] for i in range(12)])
        return TemporalKG(name, Vocabulary(("a", "b", "c")), Vocabulary(("r", "s")), axis,
                          {"train": facts[:8], "valid": facts[8:10], "test": facts[10:]})

    for axis, known in ((TimeAxis("step"), False), (TimeAxis("day", "2024-01-01"), True)):
        a, b = data("a", axis, 0), data("b", axis, 30)
        cfg = RunConfig(model=ModelConfig(num_relations=2, dim=8, attn_dim=4, num_layers=2), train=TrainConfig())
        text = Predictor(from_model(TPAR(cfg.model), cfg, a, "extrapolation"), b).provenance_text(45)
        assert ("past its training facts" in text) is known and ("is not known" in text) is not known, text


def test_a_deeply_nested_lineage_file_is_ignored_not_a_crash(ring):
    """json.loads recurses per nesting level: a 1 MB file of brackets was a RecursionError (an internal error)."""
    (ring / LINEAGE_FILE).write_text('{"steps": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    assert lineage_of(ring) == [] and load_dataset(ring).lineage == []


def test_years_outside_those_read_as_years_are_not_saved_into_a_data_set_of_years(tmp_path):
    """CSV files read integers as years only when all lie in 1000..2999: a typo year (214) would turn a data set
    of years into one of plain steps, which no model of it fits. The row is dropped and named; a data set whose
    own years lie outside (YAGO11k from -431, WIKIDATA12k from 19) cannot be grown into CSV files at all."""
    from tpar.data.kg import TemporalKG
    from tpar.data.vocab import Vocabulary

    rows = "".join(f"a{i % 4},r{i % 2},a{(i + 1) % 4},{1990 + i % 20}\n" for i in range(60))
    _, kg = inspect_upload(HEADER + rows, "y.csv")
    years = load_dataset(save_dataset(kg, tmp_path, "years"))
    report, grown = grow(years, HEADER + "a0,r0,a1,214\na0,r0,a2,2011\n", "typo.csv")
    assert report.added == {"train": 1} and [r for r, _ in report.dropped] == [2], report.dropped
    assert "1000..2999" in report.dropped[0][1]
    back = load_dataset(save_grown(years, report, grown, tmp_path, "years", overwrite=True))
    assert back.time_axis.granularity == "year"
    old = TemporalKG("yago11kish", Vocabulary(("a", "b")), Vocabulary(("r",)), TimeAxis("year", "0"),
                     {"train": np.array([[0, 0, 1, -431], [1, 0, 0, 1990]])})
    with pytest.raises(DataError, match="cannot be grown.*-431"):
        grow(old, HEADER + "a,r,b,1995\n", "more.csv")


def test_cli_grow_in_place_of_the_current_folder(ring, tmp_path, monkeypatch):
    """``--data .`` names the folder itself: its name, not '', is the data set's."""
    rows = tmp_path / "new.csv"
    rows.write_text(HEADER + "P0,meets,Newcomer,2024-03-05\n", encoding="utf-8")
    monkeypatch.chdir(ring)
    assert main(["grow", "--data", ".", "--rows", str(rows)]) == 0
    assert "Newcomer" in load_dataset(ring).entities


def test_growing_in_place_refuses_a_data_set_that_changed_since_the_rows_were_checked(ring):
    """Two growths read the same data set; the second save would drop the first one's rows: it is refused under
    the save's lock and nothing is written."""
    kg = load_dataset(ring)
    first, grown1 = grow(kg, HEADER + "P0,meets,Ann,2024-03-05\n", "a.csv")
    second, grown2 = grow(kg, HEADER + "P0,meets,Bob,2024-03-06\n", "b.csv")
    save_grown(kg, first, grown1, ring.parent, ring.name, overwrite=True)
    with pytest.raises(DataError, match="changed since the new rows were checked"):
        save_grown(kg, second, grown2, ring.parent, ring.name, overwrite=True)
    now = load_dataset(ring)
    assert "Ann" in now.entities and "Bob" not in now.entities and len(now.lineage) == 1
    # checked again against the data set as it now is, the rows are added
    third, grown3 = grow(now, HEADER + "P0,meets,Bob,2024-03-06\n", "b.csv")
    save_grown(now, third, grown3, ring.parent, ring.name, overwrite=True)
    assert {"Ann", "Bob"} <= set(load_dataset(ring).entities.names)


def test_a_new_relation_spelled_like_an_existing_one_is_flagged(ring):
    report, _ = grow(load_dataset(ring), HEADER + "P0,Meets ,P3,2024-03-05\nP0,CALLS,P3,2024-03-05\n", "s.csv")
    assert dict(report.relation_lookalikes) == {"Meets": "meets", "CALLS": "calls"}
    assert any("spelled like the existing 'meets'" in line for line in report.lines())


def test_an_observed_row_confirms_a_fact_a_model_had_inferred(ring, tmp_path):
    """A fact proposed by a model (marked completed) that a new observed row repeats is no longer inferred; a
    repeated completed row leaves it marked."""
    kg = load_dataset(ring)
    text = "subject,relation,object,time,completed,probability\nP0,meets,P5,2024-03-05,true,0.8\n"
    report, grown = grow(kg, text, "proposals.csv")
    once = load_dataset(save_grown(kg, report, grown, tmp_path, "once"))
    key = (once.entities.id("P0"), once.relations.id("meets"), once.entities.id("P5"),
           once.time_axis.parse("2024-03-05"))
    assert once.is_inferred(*key)
    again, _ = grow(once, text, "proposals.csv")
    assert again.known == 1 and again.confirmed == 0 and not again.changes
    seen, grown2 = grow(once, HEADER + "P0,meets,P5,2024-03-05\n", "observed.csv")
    assert seen.known == 1 and seen.confirmed == 1 and seen.changes and seen.facts_added == 0
    assert any("no longer marked inferred" in n for n in seen.notes)
    back = load_dataset(save_grown(once, seen, grown2, tmp_path, "once", overwrite=True))
    assert not back.is_inferred(*key) and len(back.all_facts()) == len(once.all_facts())


def test_a_saved_data_set_folder_gets_the_umasks_permissions_and_growing_in_place_keeps_the_folders(ring, tmp_path):
    """Hostile audit 36 #6: the new folder was made by mkdtemp (always 0700) and renamed over the old one, so a
    group's shared data set (2775) became unreadable to the group, silently. A new data set gets what the umask
    gives any folder made here; growing in place keeps the folder's own mode, setgid bit included."""
    import os
    import stat

    made = tmp_path / "probe"
    made.mkdir()  # what a folder made here gets
    assert stat.S_IMODE(ring.stat().st_mode) == stat.S_IMODE(made.stat().st_mode)
    os.chmod(ring, 0o2775)
    kg = load_dataset(ring)
    report, grown = grow(kg, HEADER + "P0,meets,Newcomer,2024-03-05\n", "more.csv")
    save_grown(kg, report, grown, ring.parent, ring.name, overwrite=True)
    assert "Newcomer" in load_dataset(ring).entities
    assert stat.S_IMODE(ring.stat().st_mode) == 0o2775


def test_completions_growth_adds_only_the_inferred_facts_and_refuses_other_names(ring):
    """The upload round trip's step: the accepted proposals (inferred training facts) are what is added, with
    their time range and a note; proposals made against another vocabulary are refused, not saved."""
    from tpar.data.growth import completions_growth
    from tpar.reasoning.completion import add_inferred

    kg = load_dataset(ring)
    facts = np.array([[0, 0, 2, kg.time_range[1] + 3], [1, 0, 3, 2]], dtype=np.int64)
    completed = add_inferred(kg, facts, [0.9, 0.4])
    report = completions_growth(kg, completed, "ring.csv")
    assert report.added == {"train": 2} and report.time_range == (kg.time_axis.label(2), kg.time_axis.label(kg.time_range[1] + 3))
    assert report.extends_by and any("inferred" in n for n in report.notes)
    save_grown(kg, report, completed, ring.parent, "ring", overwrite=True)
    grown = load_dataset(ring)
    assert len(grown.inferred) == 2 and lineage_of(ring)[-1]["base_fingerprint"] == kg.fingerprint
    _, other = inspect_upload(tiny_world_csv().replace("P0", "Q0"), "other.csv")
    with pytest.raises(DataError, match="other names"):
        completions_growth(kg, other, "other.csv")


def test_a_save_killed_between_its_two_renames_loses_no_data_set(ring, tmp_path):
    """Replacing a data set moves the old folder aside, then the new one in: a kill between the two left no data set
    under the name and a misleading error (hostile audit 39 #15). Loading names the copy left aside; the next save
    of the name puts it back (under the name's lock) before anything else."""
    import subprocess
    import sys

    kg = load_dataset(ring)
    save_dataset(kg, tmp_path, "ds")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    aside = tmp_path / f".old-ds-{dead.stdout.strip()}"
    (tmp_path / "ds").rename(aside)  # what the killed save left
    with pytest.raises(DataError, match=r"an interrupted save left its previous copy in .*\.old-ds-\d+: the next save"):
        load_dataset(tmp_path / "ds")
    with pytest.raises(DataError, match="already exists"):  # put back first: never replaced without --replace
        save_dataset(kg, tmp_path, "ds")
    assert not aside.exists() and load_dataset(tmp_path / "ds").fingerprint == kg.fingerprint


def test_a_copy_left_aside_is_its_own_data_sets_whoever_has_its_pid_now(ring, tmp_path):
    """Review 39b: the copy of ``a`` left aside was not put back when its pid was alive again (pids are reused), and
    data set ``a``'s hint named ``a-b``'s copy."""
    import os

    kg = load_dataset(ring)
    for name in ("a", "a-b"):
        save_dataset(kg, tmp_path, name)
    (tmp_path / "a-b").rename(tmp_path / ".old-a-b-999999")  # a-b's, not a's
    with pytest.raises(DataError) as e:
        load_dataset(tmp_path / "a-b")
    assert ".old-a-b-999999" in str(e.value)
    (tmp_path / "a").rename(tmp_path / f".old-a-{os.getpid()}")  # a live pid: still a killed save's copy
    with pytest.raises(DataError) as e:
        load_dataset(tmp_path / "a")
    assert f".old-a-{os.getpid()}" in str(e.value) and ".old-a-b" not in str(e.value)
    with pytest.raises(DataError, match="already exists"):
        save_dataset(kg, tmp_path, "a")
    assert (tmp_path / "a").is_dir() and (tmp_path / ".old-a-b-999999").is_dir()  # a-b's copy is a-b's to restore


def test_a_grown_data_sets_own_model_is_offered_before_a_unified_model_of_other_data(ring, tmp_path):
    """A grown benchmark opened with a unified model of other data (zero-shot), its own model second: the model
    ordering sorted unified models first and ignored the lineage (scale audit 40). The model trained on the data the
    set grew from now comes first; among models of other data unified ones still lead."""
    from tpar.model.checkpoint import from_model
    from tpar.model.config import ModelConfig, RunConfig, TrainConfig
    from tpar.model.network import TPAR
    from tpar.model.registry import CheckpointInfo, matching_checkpoints

    kg = load_dataset(ring)
    other = load_dataset(save_dataset(inspect_upload(tiny_world_csv(days=50), "other.csv")[1], tmp_path, "other"))
    assert list(other.relations.names) == list(kg.relations.names) and other.fingerprint != kg.fingerprint

    def model(data, setting):
        cfg = RunConfig(model=ModelConfig(num_relations=data.num_relations, dim=8, attn_dim=4, num_layers=2),
                        train=TrainConfig(setting=setting))
        return from_model(TPAR(cfg.model), cfg, data, setting)

    infos = [CheckpointInfo(tmp_path / "a.tpar", "a-unified-other", model(other, "unified")),
             CheckpointInfo(tmp_path / "b.tpar", "b-own", model(kg, "extrapolation")),
             CheckpointInfo(tmp_path / "c.tpar", "c-other", model(other, "extrapolation"))]
    assert [m.info.name for m in matching_checkpoints(kg, infos)] == ["b-own", "a-unified-other", "c-other"]
    report, grown = grow(kg, HEADER + "P0,meets,P5,2024-03-05\n", "more.csv")
    bigger = load_dataset(save_grown(kg, report, grown, tmp_path, "ring-grown"))
    order = matching_checkpoints(bigger, infos)
    assert [m.info.name for m in order] == ["b-own", "a-unified-other", "c-other"]
    assert not order[0].exact and "grown since this model was trained" in order[0].warnings[0]


def test_a_new_name_that_known_names_hold_as_a_word_is_pointed_out(tmp_path):
    """ICEWS14 names countries' parts ("Government_(Germany)"): a grown file's "Germany" became a new entity with no
    hint that it may be meant as one of those (scale audit 40). The report names up to three such names, for whole
    words only, loosely (case, spaces and underscores aside)."""
    from tpar.data.growth import relatives, relatives_text

    kg = load_dataset(save_dataset(inspect_upload(
        HEADER + "Government_(Germany),meets,Naval (germany),2024-01-01\nP1,meets,Germanyland,2024-01-02\n"
        "P2,meets,Police_(Germany),2024-01-03\nP1,meets,P2,2024-01-04\n", "g.csv")[1], tmp_path, "g"))
    report, _ = grow(kg, HEADER + "Germany,meets,P1,2024-01-05\nUS,meets,P2,2024-01-05\nGermanic,meets,P1,2024-01-05\n",
                     "more.csv")
    assert report.relatives == [("Germany", ["Government_(Germany)", "Naval (germany)", "Police_(Germany)"])]
    assert ("  new entity 'Germany' is part of existing names ('Government_(Germany)', 'Naval (germany)', "
            "'Police_(Germany)'): check it is meant as a new entity, not one of them") in report.lines()
    assert relatives(["germany"], ["Germanyland"]) == [] and relatives(["US"], ["US_Army"]) == []  # words, 3+ chars
    assert relatives_text("A", ["A_(x)"]) == ("new entity 'A' is part of existing names ('A_(x)'): check it is meant "
                                              "as a new entity, not one of them")
    four = relatives(["Bank"], ["X Bank", "Y Bank", "Z Bank", "W Bank"])  # "…" only when there are more than shown
    assert four == [("Bank", ["X Bank", "Y Bank", "Z Bank", "W Bank"])]
    assert relatives_text(*four[0]).startswith("new entity 'Bank' is part of existing names ('X Bank', 'Y Bank', "
                                               "'Z Bank', …)")
    # a name equal to a known one but for case, spaces or underscores is the same name to the lookup: it is a
    # look-alike to check the spelling of, not a new name "part of" the known one (hostile 40)
    report, _ = grow(kg, HEADER + "GOVERNMENT (germany),meets,P1,2024-01-05\nNaval_Germany,meets,P2,2024-01-05\n",
                     "same.csv")
    assert report.lookalikes == [("GOVERNMENT (germany)", "Government_(Germany)")]
    assert ("  new entity 'GOVERNMENT (germany)' differs from the existing 'Government_(Germany)' only in case, spaces "
            "or underscores: check the spelling") in report.lines()
    assert [n for n, _ in report.relatives] == []  # 'Naval_Germany' holds no known name's words as a whole


def test_rows_on_a_data_sets_own_negative_steps_are_added_not_dropped(tmp_path):
    """A data set of plain integer steps from -100 to -5: rows at -60 and -3 were dropped as lying "before the data
    set's first step 0" (hostile 40). Its own first step is the bound; before it a row is still dropped, named."""
    folder = tmp_path / "neg"
    folder.mkdir()
    (folder / "train.csv").write_text(HEADER + "A,r,B,-100\nB,r,C,-50\nA,r,B,-40\nC,s,A,-30\n")
    (folder / "valid.csv").write_text(HEADER + "A,r,C,-10\n")
    (folder / "test.csv").write_text(HEADER + "A,r,B,-5\n")
    kg = load_dataset(folder)
    assert kg.time_range == (-100, -5)
    report, grown = grow(kg, HEADER + "B,s,A,-60\nC,r,A,-3\nA,s,C,-101\n", "rows.csv")
    assert report.facts_added == 2 and [row for row, _ in report.dropped] == [4]
    assert "lies before the data set's first step -100" in report.dropped[0][1]
