"""What data sets and checkpoints are available here, and which checkpoint serves which data set.

Data sets: the embedded sample data (``sample_data/<world>/<split>/`` folders of train/valid/test
CSVs), the public benchmarks when ``$TPAR_DATA_DIR`` or ``../shared/datasets`` exists, and any
extra folders the caller names (e.g. the app's uploads). Checkpoints: ``.tpar`` files in the given
folders (default: the repository's ``checkpoints/``). A checkpoint serves a data set when
:meth:`tpar.checkpoint.Checkpoint.check_fits` accepts it (same relations and time unit); one trained
on exactly that data (same fingerprint) comes first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tpar.checkpoint import Checkpoint
from tpar.data import TemporalKG
from tpar.errors import DataError
from tpar.readers import SPLITS, find_data_dir

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = REPO_ROOT / "sample_data"
CHECKPOINT_DIR = REPO_ROOT / "checkpoints"
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


@dataclass
class CheckpointInfo:
    path: Path
    name: str
    checkpoint: Checkpoint

    @property
    def setting(self) -> str:
        return self.checkpoint.setting

    def summary(self) -> str:
        c = self.checkpoint.config.model
        return f"{self.name} ({self.setting}, L={c.num_layers}, d={c.dim}, trained on {self.checkpoint.data_name})"


@dataclass
class Match:
    info: CheckpointInfo
    exact: bool                  # trained on this very data (same fingerprint)
    warnings: list[str] = field(default_factory=list)


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


def find_checkpoints(dirs: list[Path] | None = None) -> tuple[list[CheckpointInfo], list[str]]:
    """Loadable checkpoints in ``dirs`` (default: the repository's ``checkpoints/``), and one problem
    line per file that could not be loaded (it is skipped, never executed)."""
    infos, problems = [], []
    for d in dirs or [CHECKPOINT_DIR]:
        d = Path(d)
        if not d.is_dir():
            continue
        for p in sorted(d.glob("*.tpar")):
            try:
                infos.append(CheckpointInfo(p, p.stem, Checkpoint.load(p)))
            except DataError as e:
                problems.append(str(e))
    return infos, problems


def matching_checkpoints(kg: TemporalKG, infos: list[CheckpointInfo]) -> list[Match]:
    """Checkpoints that can serve ``kg``: exact fingerprint first, then unified ones, then by name."""
    out = []
    for info in infos:
        try:
            warnings = info.checkpoint.check_fits(kg)
        except DataError:
            continue
        out.append(Match(info, info.checkpoint.data_fingerprint == kg.fingerprint, warnings))
    out.sort(key=lambda m: (not m.exact, m.info.setting != "unified", m.info.name))
    return out
