"""Paths to the sample data and the shipped checkpoints come from settings (environment), with the
repository as the default; an installed package without the repository generates the sample world."""

from __future__ import annotations

import filecmp

from helpers import ROOT
from tpar.data import catalog
from tpar.model.registry import find_checkpoints


def test_the_repository_is_the_default():
    assert catalog.sample_dir() == ROOT / "sample_data"
    assert catalog.checkpoint_dir() == ROOT / "checkpoints"
    assert {i.name for i in find_checkpoints()[0]} >= {"sample-world-unified"}


def test_the_environment_names_other_folders(tmp_path, monkeypatch):
    monkeypatch.setenv(catalog.SAMPLE_ENV, str(tmp_path / "samples"))
    monkeypatch.setenv(catalog.CHECKPOINT_ENV, str(tmp_path / "models"))
    assert catalog.sample_dir() == tmp_path / "samples"
    assert catalog.checkpoint_dir() == tmp_path / "models"
    assert find_checkpoints() == ([], [])  # an empty (or absent) folder: no checkpoint, no error


def test_an_installed_package_generates_the_sample_world_once_into_the_user_cache(tmp_path, monkeypatch):
    """Installed with ``pip install .`` the package's parent holds no sample_data/ or checkpoints/: the
    sample world is generated into the cache on first use -- the same bytes as the shipped copy."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    samples = catalog.sample_dir(repo_root=site)
    assert samples == tmp_path / "cache" / "tpar" / "sample_data"
    for name in ("facts.csv", "rules.json", "chronological/train.csv", "random/test.csv"):
        assert filecmp.cmp(samples / "world" / name, ROOT / "sample_data" / "world" / name, shallow=False), name
    stamp = (samples / "world" / "facts.csv").stat().st_mtime_ns
    assert catalog.sample_dir(repo_root=site) == samples
    assert (samples / "world" / "facts.csv").stat().st_mtime_ns == stamp  # generated once
    assert catalog.checkpoint_dir(repo_root=site) is None
    monkeypatch.setattr(catalog.sample_dir, "__defaults__", (site,))
    found = catalog.find_datasets(data_dir=None)
    assert found[0].label == catalog.DEFAULT_DATASET and found[0].path == samples / "world" / "chronological"
