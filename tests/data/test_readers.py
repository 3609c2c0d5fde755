"""Readers on small hand-made files: every format quirk and every kind of bad input."""

from __future__ import annotations

import numpy as np
import pytest

from tpar.cli import main
from tpar.errors import DataError
from tpar.data.loading import load_dataset
from tpar.data.tables import read_quadruple_csv, split_assignment
from tpar.data.timeaxis import TimeAxis


def write(path, text, encoding="utf-8"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


# ---------------------------------------------------------------- benchmark layouts
def test_padded_five_column_ids(tmp_path):
    d = tmp_path / "ICEWS18"
    write(d / "entity2id.txt", "A\t0\nB\t1\nC\t2\n")
    write(d / "relation2id.txt", "likes\t0\nhates\t1\n")
    write(d / "train.txt", "0    \t0    \t1  \t0  \t0\n1 \t1 \t2\t24\t0\n")
    write(d / "valid.txt", "2\t0\t0\t48\t0\n")
    write(d / "test.txt", "0\t1\t2\t72\t0\n0\t1\t2\t72\t0\n")
    kg = load_dataset(d)
    assert kg.facts("train").tolist() == [[0, 0, 1, 0], [1, 1, 2, 1]]  # hours / 24
    assert kg.facts("test").tolist() == [[0, 1, 2, 3]]  # duplicate removed
    assert any("duplicate" in n for n in kg.notes)
    assert kg.time_axis.label(3) == "2018-01-04"


def test_name_based_with_bom_and_crlf(tmp_path):
    d = tmp_path / "names"
    write(d / "entity2id.txt", "Ann\t0\nBob\t1\n\ufeffAnn\t2\nCid\t3\n")
    write(d / "relation2id.txt", "Meet\t0\r\nCall\t1\r\n")
    write(d / "train.txt", "Ann\tMeet\tBob\t2014-01-02\r\nBob\tCall\tCid\t2014-01-05\r\n")
    write(d / "valid.txt", "\ufeffAnn\tCall\tCid\t2014-01-03\n")
    write(d / "test.txt", "Cid\tMeet\tAnn\t2014-01-01\n")
    kg = load_dataset(d)
    assert kg.entities.names == ("Ann", "Bob", "Cid")
    assert kg.relations.names == ("Meet", "Call")
    assert kg.time_axis == TimeAxis("day", "2014-01-01")
    assert kg.facts("valid").tolist() == [[0, 1, 2, 2]]
    assert kg.facts("test").tolist() == [[2, 0, 0, 0]]


def test_hyte_intervals_policy(tmp_path):
    d = tmp_path / "hyte"
    write(d / "entity2id.txt", "<a>\t0\t1900-##-##\t####-##-##\n<b>\t1\t####-##-##\t####-##-##\n<c>\t2\t-##-##\t####-##-##\n")
    write(d / "relation2id.txt", "<isMarriedTo>\t0\n<playsFor>\t1\n")
    write(d / "train.txt", "0\t0\t1\t1952-##-##\t1964-03-##\n"   # both bounds -> since 1952, until 1964
                           "1\t1\t2\t-405-##-##\t####-##-##\n"   # negative year, open end -> since only
                           "2\t1\t0\t####-##-##\t2001-05-06\n"   # unknown start -> until only
                           "0\t1\t2\t19##-##-##\t19##-##-##\n"   # partly known: 1900 .. 1999
                           "1\t0\t0\t####-##-##\t####-##-##\n")  # nothing known -> dropped
    kg = load_dataset(d)
    assert kg.relations.names == ("<isMarriedTo> [since]", "<isMarriedTo> [until]", "<playsFor> [since]", "<playsFor> [until]")
    assert sorted(kg.facts("train").tolist()) == sorted([
        [0, 0, 1, 1952], [0, 1, 1, 1964], [1, 2, 2, -405], [2, 3, 0, 2001], [0, 2, 2, 1900], [0, 3, 2, 1999]])
    assert kg.time_axis.label(-405) == "-405"
    assert any("dropped" in n for n in kg.notes)
    assert kg.missing_splits == ("valid", "test")
    # a typo or a word is not an unknown year (audit 37: '199O-01-01' and 'present' dropped a bound silently)
    for bad in ("199O-01-01", "present", "1990"):
        write(d / "train.txt", f"0\t0\t1\t1952-##-##\t1964-03-##\n1\t1\t2\t{bad}\t2001-##-##\n")
        with pytest.raises(DataError, match=rf"train.txt, row 2: time bound '{bad}' is not a HyTE date"):
            load_dataset(d)


def test_benchmark_bad_inputs(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    with pytest.raises(DataError, match="none of train.txt"):
        load_dataset(d)
    write(d / "entity2id.txt", "A\t0\nB\t1\n")
    write(d / "relation2id.txt", "r\t0\n")
    write(d / "train.txt", "0\t0\t1\t1\n0\t0\t7\t2\n")
    with pytest.raises(DataError, match=r"train.txt, row 2: unknown entity id 7") as e:
        load_dataset(d)
    assert e.value.row == 2
    write(d / "train.txt", "0\t0\t1\t1\n0\t0\n")
    with pytest.raises(DataError, match="row 2: expected 4 or 5 tab-separated columns, found 2"):
        load_dataset(d)
    write(d / "train.txt", b"0\t0\t1\t1\n0\t0\t1\t\xff\n")
    with pytest.raises(DataError, match="row 2: not UTF-8"):
        load_dataset(d)
    write(d / "train.txt", "0\t0\t1\tyesterday\n")
    with pytest.raises(DataError, match="row 1: time 'yesterday' is neither an integer nor an ISO date"):
        load_dataset(d)


# ---------------------------------------------------------------- user CSV
GOOD = "Subject,RELATION,object,Time\nIran,Negotiate,China,2014-02-02\nChina,Negotiate,Iran,2014-02-03\n" \
       "Iran,Visit,\"Korea, South\",2014-02-10\n"


def test_csv_good_comma_and_tab(tmp_path):
    kg = load_dataset(write(tmp_path / "a.csv", GOOD))
    assert kg.entities.names == ("Iran", "China", "Korea, South")
    assert kg.time_axis == TimeAxis("day", "2014-02-02")
    assert kg.num_relations == 2
    tsv = GOOD.replace(",", "\t").replace('"Korea\t South"', "Korea, South")
    kg2 = load_dataset(write(tmp_path / "a.tsv", tsv))
    assert kg2.entities.names == kg.entities.names


@pytest.mark.parametrize("times,fmt,gran,origin,steps", [
    (["2014-02-02", "2014-02-05"], "date", "day", "2014-02-02", [0, 3]),
    (["2014-02-02T06:00", "2014-02-02 09:00:00"], "datetime", "hour", "2014-02-02 06:00:00", [0, 3]),
    (["2014-02-02T00:00", "2014-02-04"], "datetime", "day", "2014-02-02", [0, 2]),
    (["2014-02", "2014-05"], "month", "month", "2014-02", [0, 3]),
    (["1990", "2001"], "year", "year", "0", [1990, 2001]),
    (["3", "17"], "int", "step", None, [3, 17]),
])
def test_csv_time_formats(tmp_path, times, fmt, gran, origin, steps):
    text = "subject,relation,object,time\n" + "".join(f"a,r,b{i},{t}\n" for i, t in enumerate(times))
    q = read_quadruple_csv(write(tmp_path / "t.csv", text))
    assert q.report.time_format == fmt
    assert q.time_axis.granularity == gran and q.time_axis.origin == origin
    assert q.times.tolist() == steps
    for t, s in zip(times, steps):  # labels parse back to the same step
        assert q.time_axis.parse(q.time_axis.label(s)) == s


def test_spaces_around_names_are_trimmed_and_said(tmp_path):
    """' Alpha ' and 'Alpha' name one entity: the trimming merges them, and the notes say in how many rows (a
    walk-through found it silent); a file without such spaces gets no such note."""
    from tpar.data.tables import reading_notes

    text = HEADER + " Iran ,Negotiate,China,2014-02-02\nIran,Negotiate, China,2014-02-03\nIran,Negotiate,China,2014-02-04\n"
    q = read_quadruple_csv(write(tmp_path / "s.csv", text))
    assert set(q.subjects) == {"Iran"} and set(q.objects) == {"China"}
    assert q.report.trimmed_count == 2 and q.report.trimmed == [(2, " Iran "), (3, " China")]
    assert any("spaces around names trimmed in 2 rows" in n and "row 2: ' Iran ' -> 'Iran'" in n
               for n in reading_notes(q.report))
    clean = read_quadruple_csv(write(tmp_path / "c.csv", HEADER + "Iran,Negotiate,China,2014-02-02\n"))
    assert clean.report.trimmed_count == 0 and not any("trimmed" in n for n in reading_notes(clean.report))


def test_csv_duplicates_counted(tmp_path):
    q = read_quadruple_csv(write(tmp_path / "d.csv", GOOD + "Iran,Negotiate,China,2014-02-02\n"))
    assert q.report.duplicates == 1 and len(q.subjects) == 3
    first = next(r for r, v in zip(q.rows, q.subjects) if v == "Iran")
    # which row repeats which, and the fact itself (walk-throughs: only a count was said; then rows without content)
    assert q.report.duplicate_rows == [(5, first, "Iran, Negotiate, China, 2014-02-02")]


def test_rows_of_only_separators_are_counted_and_named_never_silently_skipped(tmp_path):
    """A spreadsheet's empty row (',,,') is skipped as empty, but counted among the rows read and named by a note
    (walk-through: 'Rows read 44' for 45 rows, the ',,,' row gone without a word); a blank line stays unremarked."""
    from tpar.data.tables import duplicates_note, reading_notes

    path = write(tmp_path / "e.csv", GOOD + ",,,\n\n  , ,\t,\nIran,Negotiate,China,2014-02-02\n")
    q = read_quadruple_csv(path)
    assert q.report.empty_count == 2 and q.report.empty_rows == [5, 7] and q.report.rows_read == 6
    notes = reading_notes(q.report)
    assert "rows 5 and 7 hold nothing but separators (an empty row, e.g. ',,,'): skipped" in notes
    assert duplicates_note(q.report).startswith("1 duplicate row removed (the fact of an earlier row again): row 8 "
                                                "repeats row ")
    kg = load_dataset(path)
    assert any("hold nothing but separators" in n for n in kg.notes) and any("1 duplicate row removed" in n
                                                                               for n in kg.notes)


def test_every_command_says_what_reading_did_to_rows_in_the_files_order(tmp_path, capsys):
    """The walk-through: `tpar train` warned of dropped rows only (not duplicates, empty rows, renamed names, which
    `tpar info` and Upload list), and row 41 came before row 21."""
    rows = [f"a{i},r,b{i},2024-01-{1 + i % 28:02d}" for i in range(40)]
    rows[30] = "x,r,y,2024-13-01"  # a time problem (row 32), found after ...
    rows[35] = "x,,y,2024-01-02"   # ... this empty relation (row 37) in the reader's passes
    path = write(tmp_path / "f.csv", HEADER + "\n".join(rows) + "\n,,,\na0,r,b0,2024-01-01\n")
    assert main(["baseline", "--data", str(path), "--drop-bad-rows", "--method", "frequency", "--setting",
                 "extrapolation", "--max-queries", "5", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.index("row 32 dropped") < err.index("row 37 dropped")
    assert "note: 1 duplicate row removed (the fact of an earlier row again): row 43 repeats row 2" in err
    assert "note: row 42 holds nothing but separators" in err


@pytest.mark.parametrize("text,match", [
    ("", "file is empty"),
    ("subject,relation,object\na,b,c\n", r"row 1: header lacks column time"),
    ("who,what,when,time\na,r,b,2014-01-01\n", r"row 1: header lacks columns subject, relation, object"),
    ("subject,relation,object,time\na,r,b,2014-01-01\na,r,2014-01-02\n", "row 3: expected 4 columns, found 3"),
    ("subject,relation,object,time\na,r,b,2014-01-01,x\n", "row 2: expected 4 columns, found 5"),
    ("subject,relation,object,time\na,r,b,2014-01-01\na,r,c,next tuesday\n", r"row 3: time 'next tuesday' is not an ISO date"),
    ("subject,relation,object,time\na,,b,2014-01-01\n", "row 2: empty relation"),
    ("subject,relation,object,time,split\na,r,b,2014-01-01,dev\n", "row 2: split 'dev' is not one of train"),
    ("subject,relation,object,time\n", "no valid rows"),
])
def test_csv_bad_inputs(tmp_path, text, match):
    with pytest.raises(DataError, match=match):
        load_dataset(write(tmp_path / "bad.csv", text))


def test_csv_not_utf8(tmp_path):
    p = write(tmp_path / "latin.csv", "subject,relation,object,time\nMünchen,r,b,2014-01-01\n", encoding="latin-1")
    with pytest.raises(DataError, match="latin.csv, row 2: not UTF-8"):
        load_dataset(p)


def test_csv_drop_mode_reports_rows(tmp_path):
    text = "subject,relation,object,time\na,r,b,2014-01-01\na,r,c,soon\nx,y\n"
    q = read_quadruple_csv(write(tmp_path / "m.csv", text), on_bad_rows="drop")
    assert len(q.subjects) == 1
    assert sorted(r for r, _ in q.report.problems) == [3, 4]


def test_csv_split_column_and_folder(tmp_path):
    text = "subject,relation,object,time,split\na,r,b,2014-01-01,train\nb,r,c,2014-01-02,valid\nc,r,a,2014-01-03,TEST\n"
    kg = load_dataset(write(tmp_path / "s.csv", text))
    assert {k: len(v) for k, v in kg.splits.items()} == {"train": 1, "valid": 1, "test": 1}
    d = tmp_path / "folder"
    write(d / "train.csv", "subject,relation,object,time\na,r,b,2014-01-05\na,r,b,2014-01-06\n")
    write(d / "valid.csv", "subject,relation,object,time\nb,r,c,2014-01-07\n")
    write(d / "test.csv", "subject,relation,object,time\na,r,b,2014-01-05\n")  # same fact as train: kept
    kg = load_dataset(d)
    assert kg.time_axis.origin == "2014-01-05"
    assert kg.facts("test").tolist() == [[0, 0, 1, 0]]
    assert len(kg.facts("train")) == 2


def test_chronological_split_never_cuts_a_time_step():
    times = np.repeat(np.arange(20), 5)
    a = split_assignment(times, "chronological")
    for t in range(20):
        assert len(set(a[times == t])) == 1
    assert (np.diff(a) >= 0).all() and set(a) == {0, 1, 2}
    r = split_assignment(times, "random", seed=1)
    assert (r == split_assignment(times, "random", seed=1)).all()
    assert np.bincount(r).tolist() == [80, 10, 10]


# ---------------------------------------------------------------- CLI on bad input: message, exit 2, no traceback
def test_cli_bad_input_clear_message(tmp_path, capsys):
    p = write(tmp_path / "bad.csv", "subject,relation,object,time\na,r,b,2014-01-01\na,r,c,never\n")
    assert main(["info", str(p)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv, row 3: time 'never'" in err and "Traceback" not in err
    assert main(["info", str(tmp_path / "nope")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


# ---------------------------------------------------------------- hostile CSV rows and times
HEADER = "subject,relation,object,time\n"


def test_unbalanced_quote_names_the_row_where_it_opened_and_drops_every_swallowed_row(tmp_path):
    text = HEADER + "a,r,b,2024-01-01\n\"c,r,d,2024-01-02\ne,r,f,2024-01-03\ng,r,h,2024-01-04\n"
    q = read_quadruple_csv(write(tmp_path / "q.csv", text), on_bad_rows="drop")
    assert q.subjects == ["a"]
    assert q.report.rows_read == 4 and q.report.rows_dropped == 3  # nothing lost silently
    rows = dict(q.report.problems)
    assert "quote opened on this row is not closed before row 5" in rows[3]
    assert "unclosed quote opened on row 3" in rows[4] and "unclosed quote opened on row 3" in rows[5]
    with pytest.raises(DataError, match=r"q.csv, row 3: a quote opened on this row"):
        read_quadruple_csv(tmp_path / "q.csv")


def test_fields_beyond_the_csv_modules_limit_are_row_problems(tmp_path):
    huge = "x" * 200_000  # the csv module's default limit is 131,072
    text = HEADER + f"{huge},r,b,2024-01-01\na,r,b,2024-01-02\n"
    q = read_quadruple_csv(write(tmp_path / "long.csv", text), on_bad_rows="drop")
    assert q.subjects == ["a"]
    assert q.report.problems == [(2, "subject is 200,000 characters long (at most 1,000)")]


@pytest.mark.parametrize("bad, fmt, why", [
    ("2025-02-30", "auto", "not a real date"),
    ("2025-01-01T25:00", "auto", "not a real date or date-time"),
    ("2024-13", "auto", "not a real month"),
    ("2024-00", "auto", "not a real month"),
    ("99999999999999999999", "int", "is beyond"),
])
def test_impossible_times_are_row_problems_never_shifted(tmp_path, bad, fmt, why):
    good = {"2025-02-30": "2025-02-28", "2025-01-01T25:00": "2025-01-01T10:00", "2024-13": "2024-12",
            "2024-00": "2024-01", "99999999999999999999": "5"}[bad]
    text = HEADER + f"a,r,b,{good}\nc,r,d,{bad}\ne,r,f,{good}\n"
    path = write(tmp_path / "t.csv", text)
    q = read_quadruple_csv(path, time_format=fmt, on_bad_rows="drop")
    assert q.subjects == ["a", "e"] and len(q.times) == 2
    assert q.report.problems[0][0] == 3 and why in q.report.problems[0][1] and bad in q.report.problems[0][1]
    with pytest.raises(DataError, match=f"t.csv, row 3: .*{why}"):
        load_dataset(path, time_format=fmt)


def test_time_zone_offsets_are_read_on_the_datas_utc_clock(tmp_path):
    text = HEADER + "a,r,b,2024-01-01T10:00+02:00\nc,r,d,2024-01-01T08:00Z\ne,r,f,2024-01-01T09:00\n"
    kg = load_dataset(write(tmp_path / "tz.csv", text), split_policy="random")
    times = sorted(kg.time_axis.label(int(t)) for t in kg.all_facts()[:, 3])
    assert times == ["2024-01-01 08:00", "2024-01-01 08:00", "2024-01-01 09:00"]
    # a question's time with an offset is converted the same way (not a TypeError on aware - naive)
    axis = TimeAxis("hour", "2024-01-01 08:00:00")
    assert axis.parse("2024-01-01T11:00+02:00") == 1 and axis.parse("2024-01-01T09:00Z") == 1


def test_question_times_that_are_not_real_are_refused():
    day, month = TimeAxis("day", "2014-01-01"), TimeAxis("month", "2014-01")
    for axis, bad in ((day, "2014-02-30"), (day, "2014-01-01T25:00"), (month, "2014-13"), (month, "2014-00")):
        with pytest.raises(ValueError, match="not a real"):
            axis.parse(bad)


def test_look_alike_names_are_normalised_or_flagged(tmp_path):
    """Invisible and direction-changing characters are removed, Unicode forms unified (NFC); names that
    still only look alike (compatibility forms, case) are flagged with their group."""
    from tpar.data.upload import inspect_upload

    text = HEADER + ("Ir\u200ban,meets,Caf\u0065\u0301,2024-01-01\n"       # zero-width space; NFD e + accent
                     "Iran,meets,Caf\u00e9,2024-01-02\n"                     # the same two names, clean
                     "\u202eIraq,meets,\uff29\uff32\uff21\uff2e,2024-01-03\n"  # RTL override; fullwidth IRAN
                     "iran,meets,Iraq,2024-01-04\n")
    report, kg = inspect_upload(text, "names.csv", split_policy="random")
    assert sorted(kg.entities.names) == sorted(["Iran", "Café", "Iraq", "ＩＲＡＮ", "iran"])
    assert [r for r, _, _ in report.normalised] == [2, 2, 4]
    assert report.lookalikes == [["Iran", "iran", "ＩＲＡＮ"]]
    # how the file was read is information, not a warning; look-alike names have their own warning on the page
    assert any("names normalised" in n for n in report.info) and not any("look alike" in n for n in report.info)
    assert not any("normalised" in n or "look alike" in n for n in report.notes)
    assert any("look alike" in n for n in kg.notes)  # the data set's notes keep both


def test_other_columns_are_not_read_and_the_report_says_so(tmp_path):
    """An export's extra columns (here a source, a weight, one twice) are skipped; every row must still
    have the header's width; the known columns are read wherever they stand."""
    from tpar.data.tables import reading_notes

    text = ("source,subject,weight,relation,object,time,weight\n"
            "wire,Iran,1,Negotiate,China,2014-02-02,x\n"
            "<b>web</b>,China,2,Negotiate,Iran,2014-02-03,y\n")
    q = read_quadruple_csv(write(tmp_path / "x.csv", text))
    assert q.report.ignored_columns == ["source", "weight", "weight"]
    assert q.subjects == ["Iran", "China"] and q.relations == ["Negotiate"] * 2 and q.objects == ["China", "Iran"]
    assert any("'source', 'weight', 'weight' not read" in n for n in reading_notes(q.report))
    short = read_quadruple_csv(write(tmp_path / "y.csv", text + "Iran,Negotiate,China,2014-02-04\n"),
                               on_bad_rows="drop")
    assert [p for _, p in short.report.problems] == ["expected 7 columns, found 4: 'Iran,Negotiate,China,2014-02-04'"]


def test_times_with_a_utc_offset_are_read_as_utc_and_the_report_says_so(tmp_path):
    from tpar.data.tables import reading_notes

    text = ("subject,relation,object,time\n"
            "a,r,b,2024-01-01T05:00+02:00\n"
            "b,r,c,2024-01-02T05:00Z\n"
            "c,r,a,2024-01-03T05:00\n")
    q = read_quadruple_csv(write(tmp_path / "tz.csv", text))
    assert [q.time_axis.label(int(t)) for t in q.times][:2] == ["2024-01-01 03:00", "2024-01-02 05:00"]
    assert q.report.utc_converted == [(2, "2024-01-01T05:00+02:00"), (3, "2024-01-02T05:00Z")]
    assert any("2 times carry a UTC offset and were read as UTC" in n for n in reading_notes(q.report))
    plain = read_quadruple_csv(write(tmp_path / "plain.csv", "subject,relation,object,time\na,r,b,2024-01-01T05:00\n"))
    assert plain.report.utc_converted == [] and not reading_notes(plain.report)
    one = read_quadruple_csv(write(tmp_path / "one.csv", text.replace("05:00Z", "05:00")))
    assert any("1 time carries a UTC offset and was read as UTC" in n for n in reading_notes(one.report))  # agreeing


def test_a_file_with_many_bad_rows_is_refused_once_naming_the_first_and_counting_the_rest(tmp_path):
    """Without --drop-bad-rows the error names the first bad row and numbers the others (structure and
    time problems alike), so a user mends the file in one go instead of one row per try."""
    rows = ["a,r,b,2024-01-01", "a,r,,2024-01-02", "a,r,b", "a,r,c,yesterday"] + ["x,r,y"] * 12 + ["a,r,d,2024-01-05"]
    path = write(tmp_path / "many.csv", HEADER + "\n".join(rows) + "\n")
    with pytest.raises(DataError) as e:
        read_quadruple_csv(path)
    assert e.value.row == 3 and "empty object" in e.value.problem
    assert "and 14 more bad rows: 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 …" in e.value.problem
    # the time problem on row 5 is counted although it is found in the second pass
    assert read_quadruple_csv(path, on_bad_rows="drop").report.rows_dropped == 15
    with pytest.raises(DataError, match=r"row 3: empty object.*\(and 1 more bad row: 4\)$"):
        read_quadruple_csv(write(tmp_path / "two.csv", HEADER + "\n".join(rows[:2] + rows[3:4] + rows[-1:]) + "\n"))


@pytest.mark.parametrize("granularity, origin, step, last", [
    ("day", "2025-01-01", 1, "9999-12-31"), ("day", "2025-01-01", 7, "9999-12-29"),
    ("second", "1970-01-01T00:00:00", 1, "9999-12-31 23:59:59"), ("hour", "2000-01-01", 6, "9999-12-31 18:00"),
    ("month", "2000-01", 1, "9999-12"), ("month", "2000-01", 5, "9999-08")])
def test_a_calendar_axis_knows_its_last_step(granularity, origin, step, last):
    """The last step a calendar can label (9999-12-31): the one before it labels and parses back, the next
    does not, and a question asked one step past data ending there is asked at that last step instead."""
    from tpar.data.timeaxis import TimeAxis

    axis = TimeAxis(granularity, origin, step)
    assert axis.label(axis.last_step) == last and axis.parse(last) == axis.last_step
    with pytest.raises((OverflowError, ValueError)):
        axis.parse(axis.label(axis.last_step + 1))
    assert TimeAxis("year", "0", 1).last_step > 10 ** 18 and TimeAxis("step", None, 1).last_step > 10 ** 18


def test_the_default_question_stays_on_the_calendar(tmp_path):
    from tpar.data.loading import load_dataset
    from tpar.graph.queries import default_question

    f = tmp_path / "late.csv"
    f.write_text("subject,relation,object,time\n" + "".join(f"a{i},r,b{i},2024-01-{i + 1:02d}\n" for i in range(9))
                 + "a,r,b,9999-12-31\n")
    kg = load_dataset(f)
    assert default_question(kg).time == "9999-12-31"  # one step past it has no date: asked at the last one


@pytest.mark.parametrize("text", ["2025-W50", "2025-W50-1", "20251209", "2025-12-09T05:00:01.5"])
def test_a_question_time_follows_the_data_files_grammar(text):
    """Python's fromisoformat takes ISO week dates, '20251209' and fractions of a second; a data file may hold
    none of them, so a question's time may not either (an audit found them accepted on one side only)."""
    from tpar.data.timeaxis import TimeAxis

    axis = TimeAxis("second", "2025-01-01 00:00:00", 1)
    with pytest.raises(ValueError, match="is not a real ISO date or date-time"):
        axis.parse(text)
    assert axis.parse("2025-01-01T05:00:01.000") == axis.parse("2025-01-01 05:00:01") == 18001  # a whole second
    with pytest.raises(ValueError, match=r"\(30,000 characters\) is not a real"):  # echoed cut
        axis.parse("9" * 30_000)


def test_a_fraction_of_a_second_in_a_file_is_a_row_problem_not_dropped_silently(tmp_path):
    from tpar.data.tables import read_quadruple_csv

    f = tmp_path / "frac.csv"
    f.write_text("subject,relation,object,time\na,r,b,2024-01-01T05:00:01.5\nb,r,c,2024-01-01T05:00:02\n"
                 "c,r,a,2024-01-01T05:00:03.000\n")
    q = read_quadruple_csv(f, on_bad_rows="drop")
    assert [(r, p) for r, p in q.report.problems] == [
        (2, "time '2024-01-01T05:00:01.5' has a fraction of a second (times are read to the whole second)")]
    assert q.time_axis.granularity == "second" and len(q.subjects) == 2  # '.000' is a whole second


def test_file_and_question_times_share_one_grammar_for_offsets_and_case(tmp_path):
    """RFC 3339's lower-case 't' and 'z' read in a file and in a question alike; a UTC offset belongs to a time
    of day, so '2024-01-02+05:00' is refused on both sides (an audit found the question side took it)."""
    from tpar.data.tables import read_quadruple_csv
    from tpar.data.timeaxis import TimeAxis

    f = tmp_path / "case.csv"
    f.write_text("subject,relation,object,time\na,r,b,2024-01-01T05:00:00Z\nb,r,c,2024-01-02t05:00:00z\n"
                 "c,r,a,2024-01-03+05:00\n")
    q = read_quadruple_csv(f, on_bad_rows="drop")
    assert len(q.subjects) == 2 and [r for r, _ in q.report.problems] == [4]
    axis = q.time_axis
    assert axis.parse("2024-01-02t05:00:00z") == axis.parse("2024-01-02T05:00:00Z") == 24
    with pytest.raises(ValueError, match="is not a real ISO date or date-time"):
        axis.parse("2024-01-03+05:00")
    day = TimeAxis("day", "2024-01-01", 1)
    with pytest.raises(ValueError, match="is not a real ISO date or date-time"):
        day.parse("2024-01-03+05:00")
    assert day.parse("2024-01-03 05:00+05:00") == 2  # an offset after a time of day: read into UTC


def test_names_that_differ_only_by_spaces_are_look_alikes():
    """Removing an invisible space made 'ΩmegaCorp' a new entity beside the file's 'Ωmega Corp' (walk-through):
    such pairs are named as look-alikes, with case and compatibility forms as before."""
    from tpar.data.tables import lookalike_groups

    assert lookalike_groups(["Ωmega Corp", "ΩmegaCorp", "Iran", "ＩＲＡＮ", "Iraq"]) == [["Iran", "ＩＲＡＮ"],
                                                                                        ["Ωmega Corp", "ΩmegaCorp"]]


def test_a_renamed_name_is_shown_as_written_readably():
    """The Upload page showed 'Ωmega\\u200bCorp' as '\\u03a9mega\\u200bCorp' (ascii() escapes every non-ASCII letter):
    only what reading removed is written as an escape; a decomposed spelling is said to be one."""
    from tpar.data.tables import show_invisible

    assert show_invisible("Ωmega\u200bCorp") == "Ωmega\\u200bCorp"
    assert show_invisible("Zoe\u0308") == "Zoe\u0308 (decomposed: Zoe\\u0308)"
    assert show_invisible("Café") == "Café" and show_invisible("a\x1b[31m") == "a\\x1b[31m"


def test_the_normalised_names_note_writes_each_escape_once(tmp_path):
    """Hostile audit 36: the note formatted show_invisible's text with !r, so its one backslash showed as two
    ('Omega\\\\u200bCorp')."""
    from tpar.data.tables import read_quadruple_csv, reading_notes

    f = tmp_path / "inv.csv"
    f.write_text("subject,relation,object,time\nOmega\u200bCorp,r,B,2024-01-01\n", encoding="utf-8")
    notes = " ".join(reading_notes(read_quadruple_csv(f).report))
    assert "row 2: 'Omega\\u200bCorp' -> 'OmegaCorp'" in notes and "\\\\" not in notes, notes


def test_evaluation_facts_that_are_training_facts_too_are_said(tmp_path):
    """Hostile audit 36 #9: a test fact that repeats a training fact passed without a word (the duplicate key holds
    the split), and WIKIDATA12k's test split repeats 132 training facts whose 264 questions score MRR 99.1. A CSV
    folder, one file with a split column and a benchmark each say how many and show one."""
    from tpar.data.loading import load_dataset

    head = "subject,relation,object,time\n"
    folder = tmp_path / "csvs"
    folder.mkdir()
    (folder / "train.csv").write_text(head + "A,r,B,2024-01-01\nB,r,C,2024-01-02\n")
    (folder / "valid.csv").write_text(head + "C,r,A,2024-01-03\n")
    (folder / "test.csv").write_text(head + "A,r,B,2024-01-01\nC,r,B,2024-01-04\n")
    said = [n for n in load_dataset(folder).notes if "training fact" in n]
    assert said == ["1 of the 2 test facts is a training fact too (e.g. (A, r, B, 2024-01-01)): a model trains on it "
                    "before it is asked it, so its test figures count facts it has seen (a question never reads its own "
                    "fact, but training did)"]
    one = tmp_path / "split.csv"
    one.write_text("subject,relation,object,time,split\nA,r,B,2024-01-01,train\nB,r,C,2024-01-02,train\n"
                   "A,r,B,2024-01-01,valid\nC,r,A,2024-01-03,test\n")
    assert [n[:45] for n in load_dataset(one).notes if "training fact" in n] == ["1 of the 1 valid facts is a training fact too"]
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "train.txt").write_text("A\tr\tB\t1\nB\tr\tC\t2\n")
    (bench / "valid.txt").write_text("C\tr\tA\t3\n")
    (bench / "test.txt").write_text("B\tr\tC\t2\n")
    assert any(n.startswith("1 of the 1 test facts is a training fact too") for n in load_dataset(bench).notes)
    (folder / "test.csv").write_text(head + "C,r,B,2024-01-04\n")
    assert not [n for n in load_dataset(folder).notes if "training fact" in n]


def test_names_apart_only_by_accents_are_flagged_with_how_many_rows_name_each():
    """Walk-through 36: "Minister Zoë Halvorsen" written "Minister Zoe Halvorsen" in some rows became two entities
    without a word, and one person's probability was split between two answers in every question. Accents are
    folded for the look-alike check (never merged: an accent can tell names apart), and the report counts rows."""
    from tpar.data.tables import lookalike_groups
    from tpar.data.upload import inspect_upload

    assert lookalike_groups(["Zoë", "Zoe", "ZOE", "Zoé", "Ann"]) == [["ZOE", "Zoe", "Zoé", "Zoë"]]
    # a Cyrillic 'а' / 'К' or a Greek 'Ο' drawn like the Latin letter (walk-through 37: not flagged before)
    assert lookalike_groups(["Kira of Coreth", "Kir\u0430 of Coreth", "\u041aira of Coreth", "Kiro"]) == [
        ["Kira of Coreth", "Kir\u0430 of Coreth", "\u041aira of Coreth"]]
    assert lookalike_groups(["\u039fmega", "Omega", "Kira", "Кира"]) == [["Omega", "\u039fmega"]]  # Кира: a name
    csv = "subject,relation,object,time\n" + "".join(f"Minister Zoë Halvorsen,meets,B{i},2024-01-{i + 1:02d}\n"
                                                      for i in range(5)) \
        + "".join(f"Minister Zoe Halvorsen,meets,C{i},2024-02-{i + 1:02d}\n" for i in range(3))
    report, _ = inspect_upload(csv, "x.csv")
    assert report.lookalikes == [["Minister Zoe Halvorsen", "Minister Zoë Halvorsen"]]
    assert report.lookalike_text(report.lookalikes[0]) == "'Minister Zoe Halvorsen' (3 rows) and 'Minister Zoë Halvorsen' (5 rows)"
    assert not any("look alike" in n for n in report.info + report.notes)  # the page's own warning says it


def test_the_cli_sets_incomplete_rows_aside_as_the_upload_page_does(tmp_path, capsys):
    """Walk-through 36 F9: the Upload page set rows lacking their subject or object aside as facts to complete,
    while every command refused the same file as holding bad rows until --drop-bad-rows. Both now set them aside,
    naming the rows and the command that completes them; a truly bad row still needs the flag."""
    from tpar.cli import main
    from tpar.data.loading import load_dataset

    f = write(tmp_path / "inc.csv", HEADER + "A,r,B,2024-01-01\n,r,C,2024-01-02\nB,r,,2024-01-03\nC,r,A,2024-01-04\n"
                                             "A,r,C,2024-01-05\n")
    kg = load_dataset(f)
    assert len(kg.all_facts()) == 3
    assert ("inc.csv, rows 3 and 4: 2 incomplete rows (subject or object empty) set aside, not read as facts; "
            "`tpar complete --input inc.csv --checkpoint MODEL --out FILLED.csv` proposes the missing entities") in kg.notes
    assert main(["info", str(f)]) == 0 and "2 incomplete rows" in capsys.readouterr().out
    folder = tmp_path / "csvs"
    folder.mkdir()
    write(folder / "train.csv", HEADER + "A,r,B,2024-01-01\n,r,C,2024-01-02\nB,r,C,2024-01-03\n")
    write(folder / "test.csv", HEADER + "C,r,A,2024-01-04\n")
    assert any(n.startswith("train.csv, row 3: 1 incomplete row") for n in load_dataset(folder).notes)
    write(tmp_path / "bad.csv", HEADER + "A,r,B,2024-01-01\nA,r,B,yesterday\n")
    assert main(["info", str(tmp_path / "bad.csv")]) == 2  # a bad row is still refused without --drop-bad-rows


def test_a_name_asked_for_is_normalised_as_the_datas_names_were():
    """Audit 37: 'Zoë' typed as 'e' + a combining diaeresis (macOS input), or with a zero-width space or a direction
    mark, was 'unknown entity' -- printed exactly like the data's name; the reader had normalised the data's."""
    from tpar.data.vocab import Vocabulary

    v = Vocabulary(("Zo\u00eb", "Bob", "Make_statement"))
    assert v.resolve("Zoe\u0308") == "Zo\u00eb" and v.resolve("Zo\u00eb\u200b") == "Zo\u00eb"
    assert v.resolve("\u202eBob") == "Bob" and v.resolve("make  statement\u200b") == "Make_statement"
    with pytest.raises(DataError, match="unknown name"):
        v.resolve("\u200b")


def test_a_row_written_with_another_separator_is_named_with_its_content_and_the_likely_cause(tmp_path):
    """Audit 37: a tab-separated row in a comma file was 'expected 4 columns, found 1', without the row or why."""
    text = GOOD + "Iran\tNegotiate\tChina\t2014-02-05\nIran;Negotiate;China;2014-02-06\n"
    q = read_quadruple_csv(write(tmp_path / "t.csv", text), on_bad_rows="drop")
    problems = dict(q.report.problems)
    assert problems[5] == ("expected 4 columns, found 1: 'Iran\\tNegotiate\\tChina\\t2014-02-05' (the row seems "
                           "tab-separated; the header is comma-separated)")
    assert "the row seems semicolon-separated" in problems[6]


def test_a_few_times_of_day_among_dates_are_named_as_what_made_the_file_hourly(tmp_path):
    """Walk-through 37: one '2025-03-05T10:00:00' row among 187 dates read every time as a date-time (hour steps)
    without naming it; the note names the row, the count, and how to read the file as dates. The upload report has
    it as a warning (to act on), not as information."""
    from tpar.data.tables import reading_notes
    from tpar.data.upload import inspect_upload

    rows = "".join(f"E{i % 5},r,E{(i + 1) % 5},2024-01-{i + 1:02d}\n" for i in range(28)) + "E1,r,E3,2024-01-29T10:00:00\n"
    q = read_quadruple_csv(write(tmp_path / "h.csv", HEADER + rows))
    assert q.time_axis.granularity in ("hour", "minute", "second")
    said = " ".join(reading_notes(q.report))
    assert "1 row carries a time of day (row 30: '2024-01-29T10:00:00') beside 28 plain dates" in said
    report, kg = inspect_upload(HEADER + rows, "h.csv")
    assert any("carries a time of day" in n for n in report.notes) and not any("time of day" in n for n in report.info)
    assert sum("carries a time of day" in n for n in kg.notes) == 1  # the saved data set's notes say it once
    plain = read_quadruple_csv(write(tmp_path / "d.csv", HEADER + rows.replace("T10:00:00", "")))
    assert not plain.report.time_of_day_count
    hourly = HEADER + "".join(f"E{i % 5},r,E{(i + 1) % 5},2024-01-01T{i:02d}:00\n" for i in range(20)) + "E1,r,E2,2024-01-02\n"
    assert not read_quadruple_csv(write(tmp_path / "t.csv", hourly)).report.time_of_day_count  # date-times dominate


def test_a_quoted_cell_that_goes_on_after_its_quote_is_a_bad_row_not_a_silent_rewrite(tmp_path):
    """Audit 37: '"The Rock" Johnson' became 'The Rock Johnson' without a word (the csv module drops the quotes);
    now its row is dropped naming the cell and the fix. Quotes inside an unquoted cell, a doubled quote inside a
    quoted one, and spaces after a closing quote read as before."""
    text = (HEADER + '"The Rock" Johnson,r,E1,2024-01-05\nDwayne "The Rock" Johnson,r,E2,2024-01-05\n'
            '"Spaced" ,r,E2,2024-01-06\n"a,b",r,"x""y",2024-01-07\n')
    q = read_quadruple_csv(write(tmp_path / "q.csv", text), on_bad_rows="drop")
    assert [r for r, _ in q.report.problems] == [2]
    assert "the cell '\"The Rock\" Johnson' goes on after its closing quote" in q.report.problems[0][1]
    assert set(q.subjects) == {'Dwayne "The Rock" Johnson', "Spaced", "a,b"} and 'x"y' in q.objects
    tsv = read_quadruple_csv(write(tmp_path / "q.tsv", text.replace(",", "\t").replace('"a\tb"', '"a,b"')),
                             on_bad_rows="drop")
    assert [r for r, _ in tsv.report.problems] == [2]
    with pytest.raises(DataError, match="row 2: the cell"):
        read_quadruple_csv(write(tmp_path / "r.csv", text))


def test_the_default_question_has_evidence_and_is_in_the_models_setting():
    """YAGO opened on the first fact's subject at the last time, which had no evidence, and interpolation-only models
    opened on a forecast, outside their setting (scale audit 40). The default forecast asks about the busiest
    subject among the last time's facts; an interpolation model's default asks about a gap: a test fact's subject
    and time, at the middle of the test split's times."""
    from helpers import make_kg
    from tpar.graph.queries import default_question

    train = [(1, 0, 2, 0), (1, 1, 3, 1), (2, 0, 1, 2), (3, 1, 1, 3), (0, 0, 4, 5)]
    test = [(4, 1, 1, 6), (1, 0, 3, 7), (2, 1, 4, 7), (1, 1, 2, 8)]
    last = [(5, 0, 6, 9), (1, 0, 6, 9)]  # e5 is new at the last time; e1 takes part in most facts
    kg = make_kg(train, [(0, 0, 1, 4)], test + last, num_entities=7, num_relations=2)
    q = default_question(kg)
    assert (q.subject, q.relation, q.time) == ("e1", "r0", kg.time_axis.label(10))
    gap = default_question(kg, "interpolation")
    middle = sorted(t for *_, t in test + last)[len(test + last) // 2]
    assert middle == 8 and (gap.subject, gap.relation, gap.time) == ("e1", "r1", kg.time_axis.label(8))
    assert kg.time_range[0] < 8 < kg.time_range[1]  # inside the data: a gap, as the model was trained for
    assert default_question(kg, "unified") == q
    # a fact that repeats an earlier one is a pattern a forecast builds on: the latest such fact is asked about
    # (YAGO's one fact at its last time was new, and its question had no evidence)
    again = make_kg(train + [(2, 1, 4, 2)], [(0, 0, 1, 4)], test + last, num_entities=7, num_relations=2)
    q = default_question(again)
    assert (q.subject, q.relation, q.time) == ("e2", "r1", kg.time_axis.label(10))


def test_names_that_are_bare_wikidata_ids_are_said_to_be_searched_by_id():
    """WIKIDATA12k names entities Q… and relations P… [since]: nothing on the page said a search finds them by id
    only (scale audit 40). Nine in ten such names give the note; ordinary names do not."""
    from helpers import make_kg
    from tpar.data.vocab import Vocabulary

    kg = make_kg([(0, 0, 1, 0), (1, 1, 2, 1)], num_entities=12, num_relations=10)
    assert not any("Wikidata" in n for n in kg.stats()["notes"])
    kg.relations = Vocabulary(("P1", "P2", "P3"))  # three priority levels, say: too few names to tell
    assert not any("Wikidata" in n for n in kg.stats()["notes"])
    kg.entities = Vocabulary(tuple(f"Q{i}" for i in range(11)) + ("Douglas Adams",))  # nine in ten and more
    kg.relations = Vocabulary(tuple(f"P{i} [since]" for i in range(5)) + tuple(f"P{i} [end time]" for i in range(5)))
    notes = [n for n in kg.stats()["notes"] if "Wikidata" in n]
    assert notes == ["the entities are named by bare Wikidata ids (Q…, no labels in the data): search for them by id",
                     "the relations are named by bare Wikidata ids (P…, no labels in the data): search for them by id"]
