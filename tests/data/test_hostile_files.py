"""Input files a hostile or careless user gives: a device that never ends, a pipe that blocks, a folder where a file
belongs, a file larger than tpar reads, JSON nested too deep or holding numbers no float holds, and vocabulary files
whose ids are not line positions. Each ends in a clear message naming the file (and the row), never a traceback, a
hang or memory exhausted -- or, for the vocabulary, in facts mapped by their declared ids."""

from __future__ import annotations

import json
import re
import os

import numpy as np
from pathlib import Path

import pytest

from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD
from tpar.cli import main
from tpar.data import textfile
from tpar.data.loading import load_dataset
from tpar.data.tables import read_quadruple_csv
from tpar.data.textfile import PRIVATE_USE, decode_text
from tpar.data.upload import row_texts
from tpar.errors import DataError

QUESTION = ["--subject", "Orora Front", "--relation", "Mobilize against", "--time", "2025-12-20"]


@pytest.fixture()
def specials(tmp_path):
    """A symlink to /dev/zero, a FIFO and a folder, each named like an input file."""
    (tmp_path / "zero.csv").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "pipe.csv")
    (tmp_path / "folder.csv").mkdir()
    return {"zero.csv": "is a device", "pipe.csv": "is a pipe", "folder.csv": "is a folder"}


def test_every_single_file_input_refuses_devices_pipes_and_folders(tmp_path, specials, capsys):
    """Each command that reads one file is given each special: a message naming it, exit 2, at once (a FIFO would
    block the reader forever; /dev/zero would fill the memory)."""
    data, ck = str(SAMPLE_WORLD), str(SAMPLE_CHECKPOINT)
    for name, words in specials.items():
        f = str(tmp_path / name)
        commands = [
            ["predict", "--checkpoint", ck, "--data", data, *QUESTION, "--with", f],
            ["predict", "--checkpoint", ck, "--data", data, *QUESTION, "--without", f],
            ["complete", "--checkpoint", ck, "--data", data, "--input", f, "--out", str(tmp_path / "out.csv")],
            ["rules", "--data", data, "--rules", f],
            ["train", "--data", data, "--setting", "extrapolation", "--config", f, "--out", str(tmp_path / "m.tpar"),
             "--quiet"],
            ["baseline", "--data", data, "--method", "frequency", "--setting", "extrapolation", "--questions-of", ck,
             "--relation-map", f, "--quiet"],
        ]
        if name != "folder.csv":  # a folder is a data set's own form for --data (and says what it lacks)
            commands += [["info", f], ["grow", "--data", data, "--rows", f, "--dry-run"]]
        for argv in commands:
            assert main(argv) == 2, argv
            err = capsys.readouterr().err
            assert name in err and words in err and "Traceback" not in err, (argv, err)


def test_a_split_file_that_is_not_a_regular_file_is_named_not_missing(tmp_path, capsys):
    for ext, other in (("csv", "subject,relation,object,time\nA,r,B,2024-01-01\n"), ("txt", "0\t0\t1\t1\n")):
        d = tmp_path / ext
        d.mkdir()
        (d / f"train.{ext}").write_text(other)
        if ext == "txt":
            (d / "entity2id.txt").write_text("A\t0\nB\t1\n")
            (d / "relation2id.txt").write_text("r\t0\n")
        os.mkfifo(d / f"valid.{ext}")
        (d / f"test.{ext}").mkdir()
        with pytest.raises(DataError, match=rf"valid.{ext}: is a pipe|test.{ext}: is a folder"):
            load_dataset(d)
        assert main(["info", str(d)]) == 2
        err = capsys.readouterr().err
        assert "is a pipe" in err or "is a folder" in err, err


def test_a_file_larger_than_tpar_reads_is_refused_before_it_is_held(tmp_path, monkeypatch):
    monkeypatch.setattr(textfile, "MAX_TEXT_BYTES", 1000)
    big = tmp_path / "big.csv"
    big.write_text("subject,relation,object,time\n" + "A,r,B,2024-01-01\n" * 200)
    with pytest.raises(DataError, match=r"big.csv: the file is 0 MB or more, larger than tpar reads"):
        textfile.read_text(big, textfile.MAX_TEXT_BYTES)
    with pytest.raises(DataError, match="larger than tpar reads"):
        textfile.read_bytes(big, 1000)


@pytest.mark.parametrize("text,words", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"model": {"dim": Infinity}}', "Infinity is not a JSON number"),
    ('{"model": {"dim": NaN}}', "NaN is not a JSON number"),
    ('{"train": {"lr": 1e999}}', "1e999 is beyond any float"),
    ('{"model": {"dim": ' + "9" * 5000 + "}}", r"an integer of 5,000 digits"),
    ('{"model": {"dim": -' + "9" * 101 + "}}", r"an integer of 101 digits"),
    ('{"train": {"lr": 0.' + "1" * 500 + "}}", r"a number of 502 characters"),
    ('{"model": {"dim": 32, "dim": 64}}', r"the key 'dim' is given twice in one object"),
    ('{"model": {"dim": 32}, "model": {}}', r"the key 'model' is given twice"),
    ('{"model": ', "row 1: not valid JSON"),
])
def test_small_json_files_refuse_what_json_cannot_mean(tmp_path, text, words):
    p = tmp_path / "x.json"
    p.write_text(text)
    with pytest.raises(DataError, match=words) as e:
        textfile.read_small_json(p)
    assert str(p) in str(e.value) and "set_int_max_str_digits" not in str(e.value)


def test_strict_json_keeps_what_json_means():
    """The refusals above take nothing from ordinary JSON: numbers up to the digit bound, the same key in
    different objects, nested lists."""
    text = '{"a": [1, -2.5e-3, {"a": 1, "b": %s}], "b": {"a": 2}}' % ("9" * textfile.MAX_INT_DIGITS)
    assert textfile.strict_json(text) == {"a": [1, -2.5e-3, {"a": 1, "b": int("9" * textfile.MAX_INT_DIGITS)}],
                                          "b": {"a": 2}}


def test_a_checkpoint_whose_metadata_gives_a_key_twice_is_refused(tmp_path):
    """A second "setting" after the first would silently win; an integer beyond Python's digit limit is named
    as such (the other numbers are checked by field, tests/model/test_hostile_checkpoints.py)."""
    import torch

    from tpar.model.checkpoint import Checkpoint

    payload = torch.load(SAMPLE_CHECKPOINT, weights_only=True)
    payload["meta"] = payload["meta"][:-1] + ', "setting": "extrapolation"}'
    bad = tmp_path / "twice.tpar"
    torch.save(payload, bad)
    with pytest.raises(DataError, match="'setting' is given twice") as e:
        Checkpoint.load(bad)
    assert str(bad) in str(e.value)
    payload["meta"] = payload["meta"][:-1] + ', "huge": ' + "9" * 5000 + "}"
    torch.save(payload, bad)
    with pytest.raises(DataError, match="an integer of 5,000 digits") as e:
        Checkpoint.load(bad)
    assert "set_int_max_str_digits" not in str(e.value)


def test_planted_rules_and_examples_of_a_data_folder_are_read_within_bounds(tmp_path, monkeypatch):
    """A data folder's rules.json / examples.json are anyone's files: one larger than a small file may be is not
    read (the folder then has no planted rules / showcase questions)."""
    from tpar.data.catalog import DataSource
    from tpar.reasoning.rules import PlantedRules

    (tmp_path / "rules.json").write_text('{"rules": [{"id": "R1"}]}')
    (tmp_path / "provenance.csv").write_text("subject,relation,object,time,rule\na,r,b,1,R1\n")
    (tmp_path / "examples.json").write_text('{"examples": [{"subject": "a", "relation": "r", "time": "1"}]}')
    assert PlantedRules.find(tmp_path) is not None
    choice = DataSource("x", tmp_path, "upload")
    assert choice.examples() == [{"subject": "a", "relation": "r", "time": "1"}]
    monkeypatch.setattr(textfile, "MAX_SMALL_BYTES", 10)
    assert PlantedRules.find(tmp_path) is None and choice.examples() == []


def _benchmark(folder, entities: str, facts: str, relations: str = "r\t0\ns\t1\n"):
    folder.mkdir()
    (folder / "entity2id.txt").write_text(entities)
    (folder / "relation2id.txt").write_text(relations)
    (folder / "train.txt").write_text(facts)
    return folder


def _named(kg) -> set:
    return {(kg.entities.name(s), kg.relations.name(r), kg.entities.name(o), int(t))
            for s, r, o, t in kg.all_facts().tolist()}


def test_vocabulary_ids_are_ids_not_line_positions(tmp_path):
    """entity2id.txt with gaps, out of order, and one name under two ids (a BOM artefact): each fact names the
    entity its id declares. Reading ids as positions (the old reader) shifted every id after a gap."""
    gaps = _benchmark(tmp_path / "gaps", "A\t0\nC\t7\nB\t3\n", "0\t0\t3\t1\n3\t5\t7\t2\n7\t0\t0\t3\n",
                      relations="r\t0\ns\t5\n")
    kg = load_dataset(gaps)
    assert _named(kg) == {("A", "r", "B", 1), ("B", "s", "C", 2), ("C", "r", "A", 3)}
    assert any("ids run 0..7 with 5 unused" in n for n in kg.notes) and any("relation2id.txt" in n for n in kg.notes)
    twice = _benchmark(tmp_path / "twice", "A\t0\n\ufeffB\t1\nB\t2\nC\t3\n", "0\t0\t1\t1\n0\t0\t2\t2\n1\t1\t3\t3\n")
    kg = load_dataset(twice)
    assert kg.entities.names == ("A", "B", "C")
    assert _named(kg) == {("A", "r", "B", 1), ("A", "r", "B", 2), ("B", "s", "C", 3)}
    assert any("declared under two ids, read as one: 'B' (ids 1 and 2)" in n for n in kg.notes)
    undeclared = _benchmark(tmp_path / "undeclared", "A\t0\nC\t7\n", "0\t0\t7\t1\n0\t0\t1\t2\n")
    with pytest.raises(DataError, match=r"train.txt, row 2: unknown entity id 1 \(not declared in entity2id.txt"):
        load_dataset(undeclared)
    negative = _benchmark(tmp_path / "negative", "A\t0\nB\t-1\n", "0\t0\t0\t1\n")
    with pytest.raises(DataError, match=r"entity2id.txt, row 2: id -1 is negative"):
        load_dataset(negative)


def test_interval_ids_are_ids_too(tmp_path):
    d = _benchmark(tmp_path / "yago", "<A>\t0\n<B>\t5\n", "0\t3\t5\t1990-##-##\t1995-##-##\n",
                   relations="<r>\t0\n<s>\t3\n")
    kg = load_dataset(d)
    assert _named(kg) == {("<A>", "<s> [since]", "<B>", 1990), ("<A>", "<s> [until]", "<B>", 1995)}


def test_benchmark_integer_times_beyond_2_53_are_refused_by_row(tmp_path):
    d = _benchmark(tmp_path / "huge", "A\t0\nB\t1\n", "0\t0\t1\t1\n0\t0\t1\t99999999999999999999\n")
    with pytest.raises(DataError, match=r"train.txt, row 2: time 99999999999999999999 is beyond"):
        load_dataset(d)
    assert np.iinfo(np.int64).max < 99999999999999999999


@pytest.mark.parametrize("year", ["99999999999999999999999", "-9999999999999999", "9" * 5000])
def test_interval_years_beyond_2_53_are_refused_by_row(tmp_path, year):
    """A HyTE bound's year is held to ±2^53 like a point time: never an int64 overflow, Python's 4300-digit limit or a
    year silently kept beyond what a time step may be."""
    d = _benchmark(tmp_path / "iv", "A\t0\nB\t1\n", f"0\t0\t1\t1990-01-01\t1995-##-##\n0\t0\t1\t{year}-01-01\t2000-01-01\n")
    with pytest.raises(DataError, match=r"train.txt, row 2: year -?9{16,30}(\.\.\.)? is beyond ±2\^53"):
        load_dataset(d)


@pytest.mark.parametrize("time", ["20240102", "2024-W01-3", "2024-002", "２０２４-01-02"])
def test_benchmark_dates_are_exactly_yyyy_mm_dd(tmp_path, time):
    """The benchmark reader's dates follow the one grammar every reader keeps: Python's fromisoformat alone would
    take a basic or week date."""
    (tmp_path / "pt").mkdir()
    (tmp_path / "pt" / "train.txt").write_text(f"A\tr\tB\t2024-01-05\nA\tr\tB\t{time}\n")
    with pytest.raises(DataError, match=r"train.txt, row 2: time .* is neither an integer nor an ISO date"):
        load_dataset(tmp_path / "pt")


@pytest.mark.parametrize("time", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:00-05:00"])
def test_a_utc_offset_that_leaves_the_calendar_is_a_row_problem(tmp_path, time, capsys):
    """Shifted into UTC, these leave the years 1-9999 a date-time can hold: the row is named (in a file, and as a
    question's --time), never an OverflowError."""
    from tpar.data.timeaxis import TimeAxis

    f = tmp_path / "tz.csv"
    f.write_text(f"subject,relation,object,time\nA,r,B,{time}\nB,r,C,2024-01-01T00:00:00Z\n")
    with pytest.raises(DataError, match=r"tz.csv, row 2: time .* lies outside the years 1-9999 once its UTC offset"):
        load_dataset(f)
    with pytest.raises(ValueError, match="lies outside the years 1-9999"):
        TimeAxis("hour", "2024-01-01T00:00:00").parse(time)
    assert main(["predict", "--checkpoint", str(SAMPLE_CHECKPOINT), "--data", str(SAMPLE_WORLD), "--subject",
                 "Arovia", "--relation", "Accuse", "--time", time]) == 2
    assert "lies outside the years 1-9999" in capsys.readouterr().err


@pytest.mark.parametrize("ascii_time, time", [("7", "١٢"), ("7", "１２"), ("13/04/2024", "١٣/٠٤/٢٠٢٤"),
                                              ("2024-01-01", "2024-01-0٣")])
def test_times_are_read_in_ascii_digits_only(tmp_path, ascii_time, time):
    """Other scripts' digits are not silently read as numbers (Python's \\d and int() take them): the row is named."""
    f = tmp_path / "digits.csv"
    f.write_text(f"subject,relation,object,time\nA,r,B,{ascii_time}\nB,r,C,{time}\n")
    with pytest.raises(DataError, match="row 3"):
        load_dataset(f)


def test_reading_a_table_costs_bounded_memory_per_row_and_per_line(tmp_path):
    """Reading holds each distinct cell text once and never a second copy of the file: 100,000 short rows cost
    well under 1 kB each at the peak (they cost ~2 kB before: a StringIO copy of the text and one string object per
    cell), and a 4 MB line is one bad row that is never split into its two million cells."""
    import tracemalloc

    from tpar.data.tables import read_quadruple_csv

    rows = tmp_path / "rows.csv"
    rows.write_text("subject,relation,object,time\n" + "".join(f"a{i % 1000},r,b{i % 777},{i}\n" for i in range(100_000)))
    line = tmp_path / "line.csv"
    line.write_text("subject,relation,object,time\na,r,b,1\n" + "A," * 2_000_000 + "\nb,r,c,2\n")
    tracemalloc.start()
    try:
        assert len(read_quadruple_csv(rows).subjects) == 100_000
        per_row = tracemalloc.get_traced_memory()[1] / 100_000
        tracemalloc.reset_peak()
        q = read_quadruple_csv(line, on_bad_rows="drop")
        per_byte = tracemalloc.get_traced_memory()[1] / line.stat().st_size
    finally:
        tracemalloc.stop()
    assert per_row < 1000, per_row
    assert per_byte < 8, per_byte
    assert q.report.problems == [(3, "the row is 4,000,000 characters long (at most 1,000,000 are read)")]
    assert q.rows == [2, 4]


def test_more_rows_than_tpar_reads_are_refused_before_they_are_held(tmp_path, monkeypatch):
    from tpar.data import textfile

    monkeypatch.setattr(textfile, "MAX_ROWS", 3)
    f = tmp_path / "many.csv"
    f.write_text("subject,relation,object,time\na,r,b,1\nb,r,c,2\nc,r,d,3\n")
    assert len(load_dataset(f).all_facts()) == 3  # the header and three rows: within the limit
    f.write_text(f.read_text() + "d,r,e,4\n")
    with pytest.raises(DataError, match=r"many.csv: more than 3 rows, more than tpar reads from one file"):
        load_dataset(f)
    assert len(load_dataset(_benchmark(tmp_path / "three", "A\t0\nB\t1\n", "0\t0\t1\t1\n" * 3)).all_facts()) == 1
    d = _benchmark(tmp_path / "bench", "A\t0\nB\t1\n", "0\t0\t1\t1\n" * 4)  # no header: four rows
    with pytest.raises(DataError, match=r"train.txt: more than 3 rows"):
        load_dataset(d)
    # empty lines are no rows (hostile audit 36: 2 facts and 5,000,000 empty lines were refused as too many rows)
    f.write_text("subject,relation,object,time\na,r,b,1\n" + "\n" * 20 + "b,r,c,2\n\n\n")
    assert len(load_dataset(f).all_facts()) == 2


def test_a_benchmark_line_longer_than_tpar_reads_is_named_by_row(tmp_path):
    d = _benchmark(tmp_path / "bench", "A\t0\nB\t1\n", "0\t0\t1\t1\n" + "0\t" * 600_000 + "\n")
    with pytest.raises(DataError, match=r"train.txt, row 2: the line is 1,200,000 characters long"):
        load_dataset(d)


def test_running_out_of_memory_while_reading_names_the_file(tmp_path, monkeypatch, capsys):
    """Under the byte and row limits a machine may still run short: the reader's MemoryError is a message naming
    the file, never 'internal error'."""
    from tpar.data import tables

    def exhausted(*a, **kw):
        raise MemoryError()

    f = tmp_path / "big.csv"
    f.write_text("subject,relation,object,time\na,r,b,1\n")
    monkeypatch.setattr(tables, "_read_rows", exhausted)
    assert main(["info", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}: this machine ran out of memory reading it" in err and "internal error" not in err


def test_a_byte_that_is_not_utf8_is_a_bad_row_dropping_drops(tmp_path, capsys):
    """One bad byte refuses the file naming its row (and says --drop-bad-rows helps, which it does: the row is
    dropped and reported, the others kept); in the header it refuses the file. A file that starts as UTF-16 and
    breaks off, or is UTF-32, is the whole file's problem: no hint that dropping rows would help."""
    import codecs

    f = tmp_path / "bytes.csv"
    f.write_bytes(b"subject,relation,object,time\nA,r,B,2024-01-01\nD,r,\xff\xfe,2024-01-05\nC,r,D,2024-01-03\n")
    assert main(["info", str(f)]) == 2
    err = capsys.readouterr().err
    assert "bytes.csv, row 3: not UTF-8 text (invalid byte 0xff)" in err and "hint: --drop-bad-rows" in err
    kg = load_dataset(f, on_bad_rows="drop")
    assert sorted(kg.entities.names) == ["A", "B", "C", "D"] and len(kg.all_facts()) == 2
    assert any("row 3 dropped: not UTF-8 text (invalid byte 0xff)" in n for n in kg.notes)
    f.write_bytes(b"subj\xffect,relation,object,time\nA,r,B,2024-01-01\n")
    with pytest.raises(DataError, match=r"bytes.csv, row 1: not UTF-8 text \(invalid byte 0xff\)"):
        load_dataset(f, on_bad_rows="drop")
    whole_file = {"utf16.csv": codecs.BOM_UTF16_LE + "subject,relation,object,time\nA,r,B,1\n".encode("utf-16-le")[:-1],
                  "utf32le.csv": codecs.BOM_UTF32_LE + "subject,relation,object,time\n".encode("utf-32-le"),
                  "utf32be.csv": codecs.BOM_UTF32_BE + "subject,relation,object,time\n".encode("utf-32-be")}
    for name, raw in whole_file.items():
        (tmp_path / name).write_bytes(raw)
        assert main(["info", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert ("is UTF-32 text" if "32" in name else "starts as UTF-16 text") in err, err
        assert "hint" not in err


def test_a_header_longer_than_pythons_csv_field_limit_is_read(tmp_path, capsys):
    """Python's csv module stops at 131,072 characters a field with an error naming nothing; a long header column
    is an unread column, a long cell a row problem naming its row."""
    wide = tmp_path / "wide.csv"
    wide.write_text("subject,relation,object,time," + "x" * 200_000 + "\nA,r,B,2024-01-01,1\nB,r,C,2024-01-02,1\n")
    assert main(["info", str(wide)]) == 0
    assert "not read" in capsys.readouterr().out
    cell = tmp_path / "cell.csv"
    cell.write_text("subject,relation,object,time\nA,r,B" + "y" * 200_000 + ",2024-01-01\n")
    assert main(["info", str(cell)]) == 2
    assert "row 2: object is 200,001 characters long" in capsys.readouterr().err
    rmap = tmp_path / "map.csv"
    rmap.write_text("r," + "z" * 200_000 + "\n")
    from tpar.data.relation_matching import read_relation_map

    assert read_relation_map(rmap)  # read (the long name is then simply a name no model has)


def test_a_name_several_names_match_loosely_is_called_ambiguous_not_unknown():
    from tpar.data.vocab import Vocabulary

    v = Vocabulary(("Make statement", "Make_statement", "Other"))
    with pytest.raises(DataError, match=r"relation 'make statement' is ambiguous: the data has 'Make statement', "
                                        r"'Make_statement'; give the exact spelling"):
        v.resolve("make statement", "relation")
    assert v.resolve("Make_statement") == "Make_statement"
    with pytest.raises(DataError, match="unknown relation 'Elsewhere'"):
        v.resolve("Elsewhere", "relation")


def test_a_file_that_is_no_table_is_not_echoed_whole_in_the_error(tmp_path, capsys):
    blob = tmp_path / "facts.json"
    blob.write_text('{"facts": [' + ", ".join(f'"{"x" * 50}{i}"' for i in range(20000)) + "]}")
    assert main(["info", str(blob)]) == 2
    err = capsys.readouterr().err
    assert "the header line is 1,168,901 characters long" in err and len(err) < 2000, len(err)


def test_a_vocabulary_name_longer_than_a_csv_name_may_be_is_refused_by_row(tmp_path):
    d = _benchmark(tmp_path / "long", "A\t0\n" + "B" * 5000 + "\t1\n", "0\t0\t1\t1\n")
    with pytest.raises(DataError, match=r"entity2id.txt, row 2: name is 5,000 characters long"):
        load_dataset(d)


def test_a_vocabulary_file_that_is_a_pipe_is_named_so(tmp_path):
    d = _benchmark(tmp_path / "pipe", "A\t0\nB\t1\n", "0\t0\t1\t1\n")
    (d / "entity2id.txt").unlink()
    os.mkfifo(d / "entity2id.txt")
    with pytest.raises(DataError, match=r"entity2id.txt: is a pipe"):
        load_dataset(d)


def test_a_lineage_file_that_gives_a_key_twice_is_not_read(tmp_path):
    """lineage.json is anyone's file too: a second "steps" after the first is not silently the lineage."""
    from tpar.data.lineage import LINEAGE_FILE, lineage_of

    (tmp_path / LINEAGE_FILE).write_text('{"steps": [{"date": "2024-01-01"}]}')
    assert len(lineage_of(tmp_path)) == 1
    (tmp_path / LINEAGE_FILE).write_text('{"steps": [{"date": "2024-01-01"}], "steps": []}')
    assert lineage_of(tmp_path) == []


def test_a_lone_carriage_return_in_a_benchmark_file_ends_no_line(tmp_path):
    """A lone CR inside a line of a LF (or CR LF) file is no line break: the name loses it as a control character
    and every later row keeps its own number; a file whose lines all end in CR (classic Mac) is still read by line."""
    d = _benchmark(tmp_path / "stray", "A\t0\nB\rX\t1\r\n", "0\t0\t1\t1\n0\t0\t1\t2\r\n1\t1\t0\t3\r\n0\t0\t9\t4\n")
    with pytest.raises(DataError, match=r"train.txt, row 4: unknown entity id 9"):
        load_dataset(d)
    (d / "train.txt").write_text("0\t0\t1\t1\n0\t0\t1\t2\r\n1\t1\t0\t3\r\n")
    kg = load_dataset(d)
    assert kg.entities.names == ("A", "BX")
    assert "entity2id.txt, row 2: names cleaned as a CSV's names are (invisible, control or text-direction characters " \
           "removed, accents composed, surrounding spaces stripped)" in kg.notes
    mac = _benchmark(tmp_path / "mac", "A\t0\rB\t1\r", "0\t0\t1\t1\r1\t1\t0\t2\r")
    assert _named(load_dataset(mac)) == {("A", "r", "B", 1), ("B", "s", "A", 2)}


def test_a_name_of_only_invisible_characters_is_no_missing_name(tmp_path):
    """A cell of nothing but zero-width or direction characters is named as such, never offered as an incomplete
    fact to complete (even where incomplete rows are kept); an empty cell still is one."""
    from tpar.data.tables import read_quadruple_csv

    f = tmp_path / "zw.csv"
    f.write_text("subject,relation,object,time\nA,r,B,2024-01-01\n\u200b,r,B,2024-01-02\nC,r,\u202e\u200b,2024-01-03\n"
                 ",r,D,2024-01-04\n", encoding="utf-8")
    q = read_quadruple_csv(f, on_bad_rows="drop", incomplete="keep")
    assert q.report.problems == [(3, "subject '\\u200b' holds only invisible or direction characters, no name"),
                                 (4, "object '\\u202e\\u200b' holds only invisible or direction characters, no name")]
    assert [r.row for r in q.incomplete] == [5]


def test_an_unclosed_quote_that_swallows_more_than_a_million_characters_names_every_row(tmp_path):
    """A quoted field joins lines until its quote closes: the field limit is the file's length, so a quote left
    open on row 3 of a large file is reported there, with every row it swallowed (not a later csv error)."""
    f = tmp_path / "quote.csv"
    rows = ["subject,relation,object,time", "A,r,B,2024-01-01", 'C,r,"D,2024-01-02'] + \
        [f"E{i},r,F{i},2024-01-03" for i in range(60_000)]
    f.write_text("\n".join(rows) + "\n")
    assert f.stat().st_size > 1_000_000
    with pytest.raises(DataError, match=r"quote.csv, row 3: a quote opened on this row is not closed before row "
                                        r"60003 .*rows 3-60003 dropped \(and 60,000 more bad rows"):
        load_dataset(f)


def test_valid_text_holding_the_bad_byte_marks_is_read_as_it_is(tmp_path):
    """The private-use characters that mark a byte that is not UTF-8 are searched for only in text where bytes were
    marked: a valid file that holds them is read, in either mode."""
    f = tmp_path / "pua.csv"
    f.write_text("subject,relation,object,time\nA\U000F0080,r,B,2024-01-01\nB,r,C,2024-01-02\n", encoding="utf-8")
    for mode in ("raise", "drop"):
        kg = load_dataset(f, on_bad_rows=mode)
        assert "A\U000F0080" in kg.entities.names and len(kg.all_facts()) == 2


@pytest.mark.parametrize("names", [["Acc\U000F0080use"], ["Ar\ue00dx", "\ue00a7"], ["\ue000", "\ue07f"],
                                   ["".join(map(chr, range(0xE000, 0xE000 + 600)))]],
                         ids=["old-bad-byte-mark", "old-cr-and-long-line-marks", "first-block", "census"])
def test_private_use_characters_are_names_even_beside_the_readers_own_marks(tmp_path, names):
    """A valid file may hold any private-use character (a font's icons, a legacy encoding's extras): the reader
    marks a byte that is not UTF-8, a carriage return inside a row and an overlong line with characters the file
    does not hold, so a name is never taken for a mark -- even when the same file has a bad byte, a stray CR and an
    overlong line (which are still each reported, on their own rows)."""
    rows = [f"{n},Accuse,B,2025-01-0{i + 1}" for i, n in enumerate(names)]
    raw = ("subject,relation,object,time\n" + "\n".join(rows) + "\n").encode() + b"Bad\xffName,r,B,2025-01-05\n" \
        + b"Stray\rCR,r,B,2025-01-06\n" + b"x" * 1_000_001 + b"\nC,r,D,2025-01-07\n"
    f = tmp_path / "pua.csv"
    f.write_bytes(raw)
    q = read_quadruple_csv(f, on_bad_rows="drop")
    assert q.subjects == names + ["C"]
    first = len(names) + 2
    assert q.report.problems == [(first, "not UTF-8 text (invalid byte 0xff)"),
                                 (first + 1, "a carriage return (shown ␍) inside the row, where only a line break may "
                                             "end it: the row is dropped whole, not split"),
                                 (first + 2, "the row is 1,000,001 characters long (at most 1,000,000 are read)")]
    shown = row_texts(decode_text(raw, f, mark_bad_bytes=True), [first, first + 1])
    assert shown == {first: "Bad\ufffdName,r,B,2025-01-05", first + 1: "Stray\u240dCR,r,B,2025-01-06"}


def test_a_file_holding_every_private_use_character_is_refused_by_name_not_misread(tmp_path):
    """Only a file made for it leaves no private-use character free to mark its bad bytes with: it is refused,
    naming the file, rather than read with a mark that is also a name."""
    every = "".join(chr(c) for block in PRIVATE_USE for c in block)
    f = tmp_path / "every.csv"
    f.write_bytes(f"subject,relation,object,time\n{every},r,B,2025-01-01\n".encode() + b"X\xff,r,B,2025-01-02\n")
    with pytest.raises(DataError, match="every.csv: is not UTF-8 text and holds private-use characters of every kind"):
        read_quadruple_csv(f, on_bad_rows="drop")


@pytest.mark.parametrize("line, says", [("\u0661\t0\t1\t1", "entity id '\u0661' is not a whole number"),
                                        ("1_0\t0\t1\t1", "entity id '1_0' is not a whole number"),
                                        ("0\t0\t1\t" + "9" * 5000, "time " + "9" * 30 + " is beyond ±2^53, which no time step may be")],
                         ids=["arabic-indic", "underscore", "5000-digits"])
def test_benchmark_numbers_are_ascii_whole_numbers_within_2_53(tmp_path, line, says):
    """Python's int() takes other scripts' digits and underscores, and stops at 4,300 digits with advice about
    sys.set_int_max_str_digits: ids and times are read as the grammar says, with the row named."""
    d = _benchmark(tmp_path / "ids", "A\t0\nB\t1\n", f"0\t0\t1\t1\n{line}\n")
    with pytest.raises(DataError, match=r"train.txt, row 2: " + re.escape(says)):
        load_dataset(d)


def test_a_question_time_of_thousands_of_digits_is_named_not_a_python_limit():
    from tpar.data.timeaxis import TimeAxis

    for axis in (TimeAxis("year", "0"), TimeAxis("step")):
        with pytest.raises(ValueError, match=r"\(5,000 characters\) is beyond ±2\^53"):
            axis.parse("9" * 5000)
        with pytest.raises(ValueError, match="is not"):
            axis.parse("1_0")
    assert TimeAxis("year", "0").parse("0001990") == 1990


@pytest.mark.parametrize("raw, kind", [(b"PK\x03\x04rest of a zip", "a zip archive"),
                                       (b"\x1f\x8b\x08\x00gzip", "gzip-compressed"),
                                       (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1xls", "an Office document")])
def test_a_binary_file_is_named_by_its_kind_not_called_bad_utf8(tmp_path, capsys, raw, kind):
    """A checkpoint, a gzip or an old workbook given as a table was 'not UTF-8 text (invalid byte 0x80); save the
    file as UTF-8' (hostile audit), and the Upload page would have dropped its 'rows' one by one: its kind is named,
    with what to do, whether or not bad rows are dropped."""
    f = tmp_path / "facts.csv"
    f.write_bytes(raw + bytes(range(256)))
    for extra in ([], ["--drop-bad-rows"]):
        assert main(["info", str(f), *extra]) == 2
        err = capsys.readouterr().err
        assert f"is {kind} (its first bytes say so), not a text table of facts" in err and "UTF-8" not in err


def test_a_fraction_below_the_microsecond_is_no_more_dropped_than_any_other(tmp_path):
    """fromisoformat reads six digits of a fraction and drops the rest: '…00.0000000000001' was read as '…00'."""
    from tpar.data.tables import parse_time

    with pytest.raises(ValueError, match="has a fraction of a second"):
        parse_time("2024-01-01T00:00:00.0000000000001", "datetime")
    assert parse_time("2024-01-01T00:00:00.000000000Z", "datetime") == parse_time("2024-01-01T00:00:00", "datetime")
    with pytest.raises(ValueError, match=r"'9999999999.*' \(5,000 characters\) is beyond ±2\^53"):
        parse_time("9" * 5000, "int")  # the value quoted and cut, never echoed whole nor left to int()'s own limit


def test_links_to_nothing_and_an_empty_path_are_named_as_such(tmp_path, capsys):
    """A loop of symbolic links was 'no such file or directory', and `tpar info ""` read the current folder."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "gone").symlink_to(tmp_path / "nothing-here.csv")
    for path, said in ((tmp_path / "a", "is a loop of symbolic links"),
                       (tmp_path / "gone", "is a symbolic link to nothing"), ("", "no data given")):
        assert main(["info", str(path)]) == 2
        assert said in capsys.readouterr().err
    with pytest.raises(DataError, match="is a loop of symbolic links, not a file"):
        textfile.check_regular(tmp_path / "a")
