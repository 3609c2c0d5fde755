"""What data sets are available here.

Data sets: the embedded sample data (``sample_data/<world>/<split>/`` folders of train/valid/test
CSVs), the public benchmarks when ``$TPAR_DATA_DIR`` or ``../shared/datasets`` exists, and any
extra folders the caller names (e.g. the app's uploads).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tpar.data.benchmarks import find_data_dir
from tpar.data.kg import SPLITS

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = REPO_ROOT / "sample_data"
DEFAULT_DATASET = "sample: world/chronological"


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
                try:
                    items = json.loads(f.read_text(encoding="utf-8")).get("examples", [])
                except (OSError, ValueError, AttributeError):
                    return []
                keep = ("subject", "relation", "time", "answer", "setting", "rule", "description")
                return [{k: str(x[k]) for k in keep if k in x} for x in items
                        if isinstance(x, dict) and all(k in x for k in ("subject", "relation", "time"))]
        return []


def _has_splits(p: Path) -> bool:
    return p.is_dir() and any((p / f"{s}.csv").is_file() for s in SPLITS)


def find_datasets(extra_dirs: list[tuple[str, Path]] = (), sample_dir: Path = SAMPLE_DIR,
                  data_dir: Path | None | str = "auto") -> list[DataSource]:
    """Every loadable data set: sample folders first (the default one at the top), then benchmark
    folders (``<setting>/<name>``), then each ``(kind, folder)`` of ``extra_dirs`` (its sub-folders
    holding split CSVs)."""
    found: list[DataSource] = []
    if sample_dir.is_dir():
        for p in sorted(sample_dir.glob("*/*")):
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
