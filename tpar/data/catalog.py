"""What data sets (and shipped checkpoints) are available here, and where they live.

Data sets: the embedded sample data (``sample_data/<world>/<split>/`` folders of train/valid/test
CSVs), the public benchmarks when ``$TPAR_DATA_DIR`` or ``../shared/datasets`` exists, and any
extra folders the caller names (e.g. the app's uploads).

Locations come from settings, with the repository as the default, so an installed (non-editable)
package works too: :func:`sample_dir` is ``$TPAR_SAMPLE_DIR``, else the checkout's ``sample_data/``,
else a per-user folder where the sample world is generated on first use (deterministic: the same bytes
as the shipped copy); :func:`checkpoint_dir` is ``$TPAR_CHECKPOINT_DIR``, else the checkout's
``checkpoints/`` (None when neither exists).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tpar.data.benchmarks import find_data_dir
from tpar.data.kg import SPLITS
from tpar.data.textfile import read_small_json
from tpar.errors import DataError

#: the checkout this package was loaded from (an installed package's parent holds no sample_data/)
REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_ENV, CHECKPOINT_ENV = "TPAR_SAMPLE_DIR", "TPAR_CHECKPOINT_DIR"
DEFAULT_DATASET = "sample: world/chronological"


def user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tpar"


def sample_dir(repo_root: Path = REPO_ROOT) -> Path:
    """The folder of sample data sets (``<world>/<split>/``): ``$TPAR_SAMPLE_DIR``, else the checkout's
    ``sample_data/``, else ``~/.cache/tpar/sample_data`` with the sample world generated into it on
    first use (about two seconds)."""
    env = os.environ.get(SAMPLE_ENV)
    if env:
        return Path(env)
    if (repo_root / "sample_data").is_dir():
        return repo_root / "sample_data"
    cached = user_cache() / "sample_data"
    if not (cached / "world" / "rules.json").is_file():
        from tpar.data.sample_world import write_world

        tmp = cached / ".world-generating"
        write_world(tmp)
        (cached / "world").parent.mkdir(parents=True, exist_ok=True)
        if not (cached / "world").exists():
            tmp.rename(cached / "world")
    return cached


def checkpoint_dir(repo_root: Path = REPO_ROOT) -> Path | None:
    """The shipped checkpoints: ``$TPAR_CHECKPOINT_DIR``, else the checkout's ``checkpoints/``, else None."""
    env = os.environ.get(CHECKPOINT_ENV)
    if env:
        return Path(env)
    return repo_root / "checkpoints" if (repo_root / "checkpoints").is_dir() else None


@dataclass(frozen=True)
class DataSource:
    label: str   # e.g. "sample: world/chronological", "benchmark: extrapolation/ICEWS14"
    path: Path
    kind: str    # "sample" | "benchmark" | "upload"

    def examples(self) -> list[dict]:
        """Showcase questions from an ``examples.json`` in the folder or its parent (the sample
        world's generator writes one): dicts with subject, relation, time and optionally answer,
        setting, rule, description. Unreadable or malformed files give no examples."""
        for f in (self.path / "examples.json", self.path.parent / "examples.json"):
            if f.is_file():
                try:  # a size-bounded read: a data folder is anyone's
                    items = read_small_json(f, "examples file").get("examples", [])
                except (DataError, AttributeError):
                    return []
                if not isinstance(items, list):
                    return []
                keep = ("subject", "relation", "time", "answer", "setting", "rule", "description")
                return [{k: str(x[k]) for k in keep if k in x} for x in items
                        if isinstance(x, dict) and all(k in x for k in ("subject", "relation", "time"))]
        return []


def _has_splits(p: Path) -> bool:
    return p.is_dir() and any((p / f"{s}.csv").is_file() for s in SPLITS)


def find_datasets(extra_dirs: list[tuple[str, Path]] = (), samples: Path | None = None,
                  data_dir: Path | None | str = "auto") -> list[DataSource]:
    """Every loadable data set: sample folders first (the default one at the top), then benchmark
    folders (``<setting>/<name>``), then each ``(kind, folder)`` of ``extra_dirs`` (its sub-folders
    holding split CSVs)."""
    found: list[DataSource] = []
    samples = sample_dir() if samples is None else samples
    if samples.is_dir():
        for p in sorted(samples.glob("*/*")):
            if _has_splits(p):
                found.append(DataSource(f"sample: {p.parent.name}/{p.name}", p, "sample"))
    found.sort(key=lambda d: d.label != DEFAULT_DATASET)
    root = find_data_dir() if data_dir == "auto" else (Path(data_dir) if data_dir else None)
    if root is not None and root.is_dir():
        for p in sorted(root.glob("*/*")):
            if p.is_dir():
                found.append(DataSource(f"benchmark: {p.parent.name}/{p.name}", p, "benchmark"))
    for kind, folder in extra_dirs:
        folder = Path(folder)
        if folder.is_dir():
            for p in sorted(folder.iterdir()):
                if not p.name.startswith(".") and _has_splits(p):  # dot folders: saves in progress
                    found.append(DataSource(f"{kind}: {p.name}", p, kind))
    return found
