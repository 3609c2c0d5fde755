"""Spreadsheet and news-feed exports of one clean quadruple table (issue #33): other separators, a BOM or
UTF-16, header synonyms, extra columns, dates in six forms. Each reads -- through the CLI's loader and the
Upload page's report alike -- to exactly the facts of its clean source; a file whose date order nothing
shows is refused with a message saying how to choose it; a file losing many rows asks before it is saved."""

from __future__ import annotations

import codecs
import re
import csv
import datetime as dt
import io

import numpy as np
import pytest

from tpar.cli import main
from tpar.data.loading import load_dataset
from tpar.data.tables import AmbiguousDates, read_quadruple_csv
from tpar.data.textfile import decode_text
from tpar.data.upload import DROP_CONFIRM_SHARE, inspect_upload
from tpar.errors import DataError

NAMES = ["Iran", "China", "Korea, South", "Côte d'Ivoire", "Port \"Dunmore\"", "Harbor Express"]
RELATIONS = ["Make statement", "Consult", "Fine; sanction", "Express intent | to meet"]


def clean_facts(n: int = 80, seed: int = 3) -> list[tuple[str, str, str, dt.date]]:
    """``n`` distinct facts over 2024 (days both above and below 12, so the order of every date form shows)."""
    rng = np.random.default_rng(seed)
    out: set[tuple[str, str, str, dt.date]] = set()
    while len(out) < n:
        s, o = rng.choice(len(NAMES), 2, replace=False)
        day = dt.date(2024, 1, 1) + dt.timedelta(days=int(rng.integers(0, 366)))
        out.add((NAMES[s], RELATIONS[rng.integers(len(RELATIONS))], NAMES[o], day))
    return sorted(out, key=lambda f: (f[3], f))


def render(facts, header: list[str], date, sep: str = ",", extra: dict[int, str] | None = None,
           trailing: str = "", line_end: str = "\n") -> str:
    """A CSV of ``facts`` with ``header`` (its first four names are subject, relation, object, time), each
    date written by ``date``, ``extra`` columns (position -> value) inserted, and ``trailing`` after each row."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=sep, lineterminator=line_end)
    extra = extra or {}
    cols = list(header)
    w.writerow(cols)
    for s, r, o, d in facts:
        row = [s, r, o, date(d)]
        for at, value in sorted(extra.items()):
            row.insert(at, value)
        w.writerow(row)
    text = buf.getvalue()
    if trailing:
        text = line_end.join(line + trailing for line in text.split(line_end)[:-1]) + line_end
    return text


def as_facts(kg) -> set[tuple[str, str, str, str]]:
    ax = kg.time_axis
    return {(kg.entities.name(s), kg.relations.name(r), kg.entities.name(o), ax.label(t))
            for s, r, o, t in kg.all_facts().tolist()}


FACTS = clean_facts()
CLEAN = render(FACTS, ["subject", "relation", "object", "time"], dt.date.isoformat)

#: name -> (bytes of the export, the date order it needs when nothing in it shows it)
EXPORTS = {
    # a European spreadsheet: ';', a UTF-8 BOM, CRLF, a 'Date' header, DD/MM/YYYY
    "semicolon-bom-ddmm": ("\ufeff" + render(FACTS, ["Actor", "Event", "Target", "Date"],
                                             lambda d: d.strftime("%d/%m/%Y"), ";", line_end="\r\n")).encode(),
    # "Unicode text" from a spreadsheet: UTF-16 with a BOM, tabs, ISO with a time of day
    "utf16-tab-iso-time": render(FACTS, ["head", "predicate", "tail", "timestamp"],
                                 lambda d: f"{d.isoformat()}T00:00:00", "\t").encode("utf-16"),
    # a news feed: pipes, ICEWS-style names, a story id and a publisher column, YYYY/MM/DD
    "pipe-feed-ymd": render(FACTS, ["Story ID", "Source Name", "Event Text", "Target Name", "Event Date", "Publisher"],
                            lambda d: d.strftime("%Y/%m/%d"), "|", extra={0: "48213", 5: ""}).encode(),
    # a US spreadsheet: MM/DD/YYYY, a trailing comma after each row
    "comma-mmdd-trailing": render(FACTS, ["Source", "Relation", "Target", "Day"],
                                  lambda d: f"{d.month}/{d.day}/{d.year}", ",", trailing=",").encode(),
    # a German spreadsheet: DD.MM.YYYY, semicolons, an empty notes column in the middle
    "semicolon-dotted": render(FACTS, ["Subject", "Notes", "Predicate", "Object", "Date"],
                               lambda d: d.strftime("%d.%m.%Y"), ";", extra={1: ""}).encode("utf-8-sig"),
    # UTF-16 without a BOM (little-endian), dashes: DD-MM-YYYY with a time of day
    "utf16le-dashes-time": render(FACTS, ["subject", "relation", "object", "date"],
                                  lambda d: d.strftime("%d-%m-%Y 00:00"), ",").encode("utf-16-le"),
}


def test_the_clean_source_reads_to_its_facts(tmp_path):
    p = tmp_path / "clean.csv"
    p.write_text(CLEAN, encoding="utf-8")
    assert as_facts(load_dataset(p)) == {(s, r, o, d.isoformat()) for s, r, o, d in FACTS}


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_a_messy_export_reads_to_the_facts_of_its_clean_source(tmp_path, name):
    clean = tmp_path / "clean.csv"
    clean.write_text(CLEAN, encoding="utf-8")
    raw = EXPORTS[name]
    messy = tmp_path / f"{name}.csv"
    messy.write_bytes(raw)
    want = as_facts(load_dataset(clean))
    kg = load_dataset(messy)  # the CLI's loader: raises at any bad row
    assert as_facts(kg) == want
    assert kg.time_axis == load_dataset(clean).time_axis
    report, upload_kg = inspect_upload(decode_text(raw, messy.name), messy.name)  # the Upload page's reader
    assert as_facts(upload_kg) == want and not report.dropped and not report.needs_confirmation


def test_the_report_says_how_an_export_was_read():
    q = read_quadruple_csv("feed.csv", text=decode_text(EXPORTS["pipe-feed-ymd"], "feed.csv"))
    assert q.report.separator == "pipe"
    assert ("Event Date", "time") in q.report.columns_renamed and ("Source Name", "subject") in q.report.columns_renamed
    assert q.report.ignored_columns == ["Story ID", "Publisher"]
    q = read_quadruple_csv("eu.csv", text=decode_text(EXPORTS["semicolon-bom-ddmm"], "eu.csv"))
    assert q.report.day_first is True and "day first" in q.report.date_order
    row, text = int(q.report.date_order.split("row ")[1].split()[0]), q.report.date_order.split("'")[1]
    assert int(text.split("/")[0]) > 12  # the value named is the one that shows the order, on the row named
    assert text in decode_text(EXPORTS["semicolon-bom-ddmm"], "eu.csv").split("\r\n")[row - 1]
    q = read_quadruple_csv("us.csv", text=EXPORTS["comma-mmdd-trailing"].decode())
    assert q.report.day_first is False and "month first" in q.report.date_order


def early_facts():
    """Facts on the first 12 days of months only: no date shows whether it is day or month first."""
    return [f for f in FACTS if f[3].day <= 12 and f[3].day != f[3].month]


def test_a_file_whose_date_order_nothing_shows_asks_for_it_and_reads_either_way(tmp_path, capsys):
    facts = early_facts()
    assert len(facts) >= 10
    p = tmp_path / "ambiguous.csv"
    p.write_text(render(facts, ["subject", "relation", "object", "date"], lambda d: d.strftime("%d/%m/%Y")))
    with pytest.raises(AmbiguousDates, match=r"ambiguous.csv, row \d+: dates such as '\d\d/\d\d/2024' read as either "
                                             r"day/month or month/day.*--day-first or --month-first"):
        load_dataset(p)
    day_first = as_facts(load_dataset(p, day_first=True))
    assert day_first == {(s, r, o, d.isoformat()) for s, r, o, d in facts}
    month_first = as_facts(load_dataset(p, day_first=False))  # the same file read the other way: other dates
    assert month_first == {(s, r, o, dt.date(d.year, d.day, d.month).isoformat()) for s, r, o, d in facts}
    # the CLI: a message, no traceback and no --drop-bad-rows hint; then each option reads it
    assert main(["info", str(p)]) == 2
    err = capsys.readouterr().err
    assert "--day-first or --month-first" in err and "Traceback" not in err and "--drop-bad-rows" not in err
    assert main(["info", str(p), "--day-first", "--json"]) == 0
    assert main(["info", str(p), "--month-first", "--json"]) == 0
    with pytest.raises(SystemExit):  # one or the other
        main(["info", str(p), "--day-first", "--month-first"])


def test_dates_in_both_orders_name_a_row_of_each(tmp_path):
    p = tmp_path / "mixed.csv"
    p.write_text("subject,relation,object,time\na,r,b,25/03/2024\nb,r,c,03/25/2024\n")
    with pytest.raises(DataError, match=r"both orders: row 2 \('25/03/2024'\) has its day first, row 3 \('03/25/2024'\)"):
        load_dataset(p)
    q = read_quadruple_csv(p, day_first=True, on_bad_rows="drop")  # chosen: the other order's rows are bad rows
    assert q.raw_times == ["2024-03-25"] and [r for r, _ in q.report.problems] == [3]
    assert "'03/25/2024' is not a real date read as day, month, year" in q.report.problems[0][1]


def test_a_folder_of_splits_takes_the_date_order_one_of_its_files_shows(tmp_path):
    early = early_facts()
    (tmp_path / "train.csv").write_text(render(early[:10], ["subject", "relation", "object", "date"],
                                               lambda d: d.strftime("%d/%m/%Y")))
    late = [f for f in FACTS if f[3].day > 12][:5]
    (tmp_path / "valid.csv").write_text(render(late, ["subject", "relation", "object", "date"],
                                               lambda d: d.strftime("%d/%m/%Y")))
    kg = load_dataset(tmp_path)
    assert as_facts(kg) == {(s, r, o, d.isoformat()) for s, r, o, d in early[:10] + late}


def test_an_undecodable_utf16_file_is_a_message_naming_the_file():
    with pytest.raises(DataError, match="x.csv, row 1: starts as UTF-16 text"):
        decode_text(codecs.BOM_UTF16_LE + b"subject", "x.csv")
    with pytest.raises(DataError, match="x.csv, row 2: not UTF-8 text"):
        decode_text("subject\nMünchen".encode("latin-1"), "x.csv")


def test_an_upload_losing_more_than_the_share_says_how_many_rows_and_why():
    rows = CLEAN.splitlines()
    n = len(rows) - 1
    bad = [f"x,r,y,soon {i}" for i in range(int(n * DROP_CONFIRM_SHARE) + 1)]  # just over the share
    report, kg = inspect_upload("\n".join(rows + bad + ["z,r"]) + "\n", "lossy.csv")
    assert report.needs_confirmation and len(report.dropped) == len(bad) + 1
    text = report.loss_text()
    assert text.startswith(f"{len(bad) + 1} of {n + len(bad) + 1} rows")
    assert f"{len(bad)} × time '…' is not an ISO date" in text and "expected 4 columns, found 2: 'z,r' (row " in text
    # every lost row is counted, a kind of one row shows its value: two such kinds, then a third and a fourth
    odd = ["x,r,y,2024-02-30", "x,r,y,", "x,r,y,2024-13-40", "x,r"]
    for extra, says in ((odd[:3], "time '2024-13-40' is not a real date (month"), (odd, "and 2 rows of 2 other kinds")):
        report, _ = inspect_upload("\n".join(rows + bad + extra) + "\n", "mixed.csv")
        text = report.loss_text()
        assert f"{len(bad)} × time '…' is not an ISO date" in text and says in text
        assert "time '2024-02-30' is not a real date" in text  # one row of its kind: its value, not '…'
        counted = sum(int(m.replace(",", "")) for m in re.findall(r"(\d[\d,]*) × ", text)) + text.count("(row ") + \
            sum(int(m) for m in re.findall(r"and (\d+) rows? of", text))
        assert counted == len(report.dropped) == len(bad) + len(extra)
    report, _ = inspect_upload("\n".join(rows + bad[:1]) + "\n", "fine.csv")  # one row in 81: under the share
    assert report.dropped and not report.needs_confirmation
