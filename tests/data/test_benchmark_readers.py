"""Loaders on every data set in ../shared/datasets, checked against the counts in its README."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tpar.data.loading import load_dataset

# (folder, {split: facts after de-duplication}, entities in vocabulary, relations, missing splits)
EXPECTED = [
    ("extrapolation/ICEWS14", {"train": 74845, "valid": 8514, "test": 7371}, 7128, 230, ()),
    ("extrapolation/ICEWS18", {"train": 373018, "valid": 45995, "test": 49545}, 23033, 256, ()),
    ("extrapolation/YAGO", {"train": 161540, "valid": 19523, "test": 20026}, 10623, 10, ()),
    # WIKI: valid has 1,045 and test 1,226 exact duplicate lines (README); train is not available
    ("extrapolation/WIKI", {"valid": 67538 - 1045, "test": 63110 - 1226}, 12554, 24, ("train",)),
    ("interpolation/ICEWS14", {"train": 72826, "valid": 8941, "test": 8963}, 7128, 230, ()),
    ("interpolation/ICEWS05-15", {"valid": 46275, "test": 46092}, 10488, 251, ("train",)),
]


@pytest.mark.parametrize("folder,counts,ents,rels,missing", EXPECTED, ids=[e[0] for e in EXPECTED])
def test_point_benchmarks(data_dir, folder, counts, ents, rels, missing):
    kg = load_dataset(data_dir / folder)
    assert kg.num_entities == ents
    assert kg.num_relations == rels
    assert kg.missing_splits == missing
    for split, n in counts.items():
        assert len(kg.facts(split)) == n, split


def test_icews14_extrapolation_time_axis(data_dir):
    kg = load_dataset(data_dir / "extrapolation/ICEWS14")
    ax = kg.time_axis
    # train t = 1..304, valid 305..334, test 335..365 with 1 = 2014-01-01
    assert ax.label(kg.facts("train")[:, 3].min()) == "2014-01-01"
    assert ax.label(kg.facts("valid")[:, 3].min()) == "2014-11-01"
    assert ax.label(kg.facts("test")[:, 3].min()) == "2014-12-01"
    assert ax.label(kg.facts("test")[:, 3].max()) == "2014-12-31"
    assert kg.entities.name(0) == "China" and kg.relations.name(0) == "Make_statement"
    # every entity of the vocabulary occurs in some split (7,128, not the paper's 6,869)
    assert len(np.unique(kg.all_facts()[:, [0, 2]])) == 7128


def test_icews18_hours_become_days(data_dir):
    kg = load_dataset(data_dir / "extrapolation/ICEWS18")
    assert kg.time_axis.granularity == "day"
    assert kg.time_axis.label(kg.facts("test")[:, 3].min()) == "2018-09-28"  # hour 6480
    assert kg.time_axis.label(kg.facts("test")[:, 3].max()) == "2018-10-31"  # hour 7272


def test_icews14_interpolation_names_bom_crlf(data_dir):
    kg = load_dataset(data_dir / "interpolation/ICEWS14")
    # the BOM artefact in entity2id.txt/valid.txt is one entity, not two
    assert "Lawyer/Attorney (Germany)" in kg.entities
    assert not any(n.startswith("\ufeff") for n in kg.entities.names)
    # CRLF in relation2id.txt leaves no '\r' in names
    assert not any("\r" in n for n in kg.relations.names)
    e, r = kg.entities, kg.relations
    fact = [e.id("John Kerry"), r.id("Express intent to meet or negotiate"), e.id("China"),
            kg.time_axis.parse("2014-11-04")]
    assert (kg.facts("test") == fact).all(1).any()
    assert kg.time_axis.origin == "2014-01-01"


@pytest.mark.parametrize("folder,ents,base_rels", [("interpolation/YAGO11k", 10623, 10),
                                                    ("interpolation/WIKIDATA12k", 12554, 24)])
def test_interval_benchmarks(data_dir, folder, ents, base_rels):
    kg = load_dataset(data_dir / folder)
    assert kg.num_entities == ents
    assert kg.num_relations == 2 * base_rels  # "[since]" and "[until]" variants
    assert kg.time_axis.granularity == "year" and kg.time_axis.label(1952) == "1952"
    # every entity still occurs in some fact after the interval policy
    assert len(np.unique(kg.all_facts()[:, [0, 2]])) == ents
    assert any("policy" in n for n in kg.notes)


def test_yago11k_interval_rows(data_dir):
    kg = load_dataset(data_dir / "interpolation/YAGO11k")
    names = kg.relations.names
    # first train line: 6464 5 6465 1952-##-## 1964-##-##
    since, until = 2 * 5, 2 * 5 + 1
    assert names[since].endswith("[since]") and names[until].endswith("[until]")
    tr = kg.facts("train")
    assert (tr == [6464, since, 6465, 1952]).all(1).any()
    assert (tr == [6464, until, 6465, 1964]).all(1).any()
    # a negative year survives: '-405-##-##' style bounds
    assert tr[:, 3].min() < 0


def test_fingerprint_stable_and_sensitive(data_dir):
    a = load_dataset(data_dir / "extrapolation/ICEWS14")
    b = load_dataset(data_dir / "extrapolation/ICEWS14")
    assert a.fingerprint == b.fingerprint
    b.splits["test"] = b.splits["test"][1:]
    b.__dict__.pop("fingerprint", None)
    assert a.fingerprint != b.fingerprint


def test_a_benchmark_files_names_lose_controls_and_direction_overrides(tmp_path):
    """A name with a terminal escape or a right-to-left override (shown as another name) in entity2id.txt is
    cleaned as a CSV's would be, and the loading notes say which rows (no shipped benchmark has one)."""
    (tmp_path / "entity2id.txt").write_text("A\x1b[31mRED\t0\nB\t1\nC\u202eevil\t2\n", encoding="utf-8")
    (tmp_path / "relation2id.txt").write_text("r\t0\n")
    (tmp_path / "train.txt").write_text("0\t0\t1\t0\n1\t0\t2\t1\n2\t0\t0\t2\n0\t0\t2\t3\n")
    (tmp_path / "valid.txt").write_text("0\t0\t1\t4\n")
    (tmp_path / "test.txt").write_text("0\t0\t2\t5\n")
    kg = load_dataset(tmp_path)
    assert kg.entities.names == ("A[31mRED", "B", "Cevil")
    assert "entity2id.txt, rows 1 and 3: names cleaned as a CSV's names are (invisible, control or text-direction " \
           "characters removed, accents composed, surrounding spaces stripped)" in kg.notes


def test_fact_files_that_name_their_entities_are_cleaned_the_same_way(tmp_path):
    """Named facts (no ids) with a terminal escape or a direction override in a name: the same names as the
    vocabulary's, with or without vocabulary files."""
    facts = ["A\x1b[31mRED\tr\tB\t0", "B\tr\tC\u202eevil\t1", "C\u202eevil\tr\tA\x1b[31mRED\t2", "A\x1b[31mRED\tr\tB\t3"]
    (tmp_path / "train.txt").write_text("\n".join(facts) + "\n", encoding="utf-8")
    (tmp_path / "valid.txt").write_text("A\x1b[31mRED\tr\tB\t4\n", encoding="utf-8")
    (tmp_path / "test.txt").write_text("B\tr\tC\u202eevil\t5\n", encoding="utf-8")
    kg = load_dataset(tmp_path)
    assert sorted(kg.entities.names) == ["A[31mRED", "B", "Cevil"]
    (tmp_path / "entity2id.txt").write_text("A\x1b[31mRED\t0\nB\t1\nC\u202eevil\t2\n", encoding="utf-8")
    (tmp_path / "relation2id.txt").write_text("r\t0\n")
    assert sorted(load_dataset(tmp_path).entities.names) == ["A[31mRED", "B", "Cevil"]


@pytest.mark.parametrize("name, said", [("", "empty subject"), ("\u200b", "holds only invisible"),
                                        ("X" * 5000, "5,000 characters long (at most 1,000)")],
                         ids=["empty", "invisible", "long"])
def test_a_benchmark_refuses_names_a_table_refuses(tmp_path, capsys, name, said):
    """Named facts with an empty, invisible-only or over-long name were read (hostile audit), and `tpar grow` then
    failed on its own output with an error naming a deleted temporary folder: the benchmark reader refuses them as
    a CSV's reader does, naming its own file and row, without offering --drop-bad-rows (a folder is read whole)."""
    from tpar.cli import main
    from tpar.data.benchmarks import BenchmarkFileError

    (tmp_path / "train.txt").write_text(f"A\tR\tB\t2014-01-01\n{name}\tR\tC\t2014-01-03\n", encoding="utf-8")
    (tmp_path / "valid.txt").write_text("A\tR\tC\t2014-01-06\n")
    (tmp_path / "test.txt").write_text("B\tR\tA\t2014-01-07\n")
    with pytest.raises(BenchmarkFileError, match=f"train.txt, row 2: .*{re.escape(said)}"):
        load_dataset(tmp_path)
    assert main(["info", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert said in err and "--drop-bad-rows" not in err


@pytest.mark.parametrize("spelling, other", [("A\u200b", "A"), ("Cafe\u0301", "Caf\u00e9")], ids=["zero-width", "decomposed"])
def test_a_benchmark_reads_names_as_a_csv_does_so_it_grows_and_reads_back(tmp_path, capsys, spelling, other):
    """Hostile audit 36: a benchmark kept a zero-width character or a decomposed accent (names copied from macOS)
    that a CSV's reader removes or composes, so `tpar grow` failed on its own output ("does not read back as
    uploaded (please report this)"). Named facts and vocabulary files are cleaned as a CSV's names are -- two
    spellings of one name read as one, said in a note naming the rows -- and the data set grows."""
    from tpar.cli import main

    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "train.txt").write_text(f"{other}\tR\tB\t2014-03-01\n{spelling}\tR\tC\t2014-03-02\n", encoding="utf-8")
    kg = load_dataset(bench)
    assert sorted(kg.entities.names) == sorted([other, "B", "C"])
    assert "train.txt, row 2: names cleaned as a CSV's names are" in " ".join(kg.notes)
    rows = tmp_path / "rows.csv"
    rows.write_text("subject,relation,object,time\nB,R,C,2014-03-03\n")
    assert main(["grow", "--data", str(bench), "--rows", str(rows), "--out", str(tmp_path / "grown")]) == 0
    assert sorted(load_dataset(tmp_path / "grown").entities.names) == sorted([other, "B", "C"])
    (bench / "entity2id.txt").write_text(f"{other}\t0\nB\t1\nC\t2\n{spelling}\t3\n", encoding="utf-8")
    (bench / "relation2id.txt").write_text("R\t0\n")
    (bench / "train.txt").write_text("0\t0\t1\t0\n3\t0\t2\t1\n")
    kg = load_dataset(bench)
    assert kg.entities.names == (other, "B", "C")
    assert any("declared under two ids, read as one" in n for n in kg.notes)


def test_a_data_set_that_does_not_read_back_names_the_first_name_that_differs(tmp_path):
    """The save's read-back check named nothing ("please report this"): it now says which name came back as what."""
    from helpers import SAMPLE_WORLD

    from tpar.data.upload import save_dataset
    from tpar.errors import DataError

    kg = load_dataset(SAMPLE_WORLD)
    names = list(kg.entities.names)
    names[0] = names[0] + "\u200b"  # a name no reader would keep: the CSV reads it back without the character
    kg.entities = type(kg.entities)(tuple(names))
    with pytest.raises(DataError, match=r"does not read back as it was: entity '.*\\u200b' reads back as '"):
        save_dataset(kg, tmp_path, "x")
    assert not (tmp_path / "x").exists()
