"""pytest fixtures shared by the test modules (helpers they import live in ``helpers.py``) and the
``slow`` / ``browser`` markers: ``pytest -m "not slow"`` is the quick loop."""

from __future__ import annotations

import pytest

from pathlib import Path

from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD, build_sample_composite
from tpar.data.benchmarks import find_data_dir
from tpar.data.kg import TemporalKG


@pytest.fixture(scope="session")
def data_dir():
    d = find_data_dir()
    if d is None:
        pytest.skip("benchmarks not found: set $TPAR_DATA_DIR or place them in ../shared/datasets")
    return d


@pytest.fixture(scope="session")
def sample_kg() -> TemporalKG:
    from tpar.data.loading import load_dataset

    return load_dataset(SAMPLE_WORLD)


@pytest.fixture(scope="session")
def sample_checkpoint():
    from tpar.model.checkpoint import Checkpoint

    return Checkpoint.load(SAMPLE_CHECKPOINT)


@pytest.fixture(scope="session")
def sample_composite(tmp_path_factory) -> Path:
    """The path of :func:`helpers.build_sample_composite`'s composite (built once per session); its perturbed
    member's file lies beside it as ``sample-perturbed.member``."""
    return build_sample_composite(tmp_path_factory.mktemp("composite"))
