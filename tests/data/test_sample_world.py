"""The embedded sample world: deterministic, committed output equals the generator's, rules present
at their stated rates, sizes as specified, loadable by the CSV readers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tpar.data.loading import load_dataset
from tpar.data.sample_world import RULES, generate, measure_rule_rates, write_world
from helpers import ROOT

COMMITTED = ROOT / "sample_data" / "world"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("w") / "world"
    write_world(out, seed=7)
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and p.name != "README.md"}


@pytest.mark.slow
def test_same_seed_same_bytes_and_committed_copy_matches(generated, tmp_path):
    again = tmp_path / "again"
    write_world(again, seed=7)
    assert _files(generated) == _files(again)
    assert _files(generated) == _files(COMMITTED), "sample_data/world differs from `tpar sample-world --seed 7`"
    other = tmp_path / "other"
    write_world(other, seed=8)
    assert _files(other)["facts.csv"] != _files(generated)["facts.csv"]


def test_every_rule_at_its_stated_rate():
    rows, rules = generate(seed=7)
    rates = measure_rule_rates(rows)
    assert set(rates) == {r.id for r in rules}
    for r in rules:
        n, k, rate = rates[r.id]
        assert n >= 200, f"{r.id}: too few body instances ({n})"
        assert abs(rate - r.rate) < 0.05, f"{r.id}: measured {rate:.3f}, stated {r.rate}"
    # noise bodies dilute but never inflate: the all-bodies rate is lower or equal
    diluted = measure_rule_rates(rows, include_noise_bodies=True)
    assert all(diluted[k][2] <= rates[k][2] + 1e-9 for k in rates)


@pytest.mark.slow
def test_sizes_noise_and_loading(generated):
    meta = json.loads((generated / "rules.json").read_text())
    s = meta["summary"]
    assert 15_000 <= s["facts"] <= 40_000 and 15 <= s["relations"] <= 30 and 200 <= s["entities"] <= 600
    assert 0.12 <= s["noise"] / s["facts"] <= 0.18
    assert [r["id"] for r in meta["rules"]] == [r.id for r in RULES]
    for split in ("chronological", "random"):
        kg = load_dataset(generated / split)
        assert sum(len(kg.facts(x)) for x in ("train", "valid", "test")) == s["facts"]
        assert kg.time_axis.granularity == "day" and kg.time_axis.origin == "2025-01-01"
    chrono = load_dataset(generated / "chronological")
    assert chrono.facts("train")[:, 3].max() < chrono.facts("valid")[:, 3].min()
    assert chrono.facts("valid")[:, 3].max() < chrono.facts("test")[:, 3].min()
    flat = load_dataset(generated / "facts.csv")
    assert flat.num_entities == s["entities"]
    prov = (generated / "provenance.csv").read_text().splitlines()
    assert prov[0] == "subject,relation,object,time,rule" and len(prov) == s["facts"] + 1
