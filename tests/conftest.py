from __future__ import annotations

import numpy as np
import pytest

from tpar.data.kg import TemporalKG
from tpar.data.benchmarks import find_data_dir
from tpar.data.timeaxis import TimeAxis
from tpar.data.vocab import Vocabulary


@pytest.fixture(scope="session")
def data_dir():
    d = find_data_dir()
    if d is None:
        pytest.skip("benchmarks not found: set $TPAR_DATA_DIR or place them in ../shared/datasets")
    return d


def make_kg(train, valid=(), test=(), num_entities=None, num_relations=None, name="toy") -> TemporalKG:
    """A TemporalKG from lists of (s, r, o, t) tuples; entity i is named 'e{i}', relation j 'r{j}'."""
    arrs = {k: np.array(v, dtype=np.int64).reshape(-1, 4) for k, v in (("train", train), ("valid", valid), ("test", test))}
    allf = np.concatenate(list(arrs.values()))
    ne = num_entities or int(allf[:, [0, 2]].max()) + 1
    nr = num_relations or int(allf[:, 1].max()) + 1
    return TemporalKG(name=name, entities=Vocabulary(tuple(f"e{i}" for i in range(ne))),
                      relations=Vocabulary(tuple(f"r{j}" for j in range(nr))), time_axis=TimeAxis("step"),
                      splits={k: v for k, v in arrs.items()})


def random_facts(rng: np.random.Generator, n: int, ne: int, nr: int, nt: int) -> np.ndarray:
    f = np.stack([rng.integers(0, ne, n), rng.integers(0, nr, n), rng.integers(0, ne, n), rng.integers(0, nt, n)], 1)
    return np.unique(f, axis=0)
