"""One entry point for every kind of input: a benchmark folder, a folder of ``train/valid/test.csv``,
or one CSV/TSV file."""

from __future__ import annotations

from pathlib import Path

from tpar.data.benchmarks import load_benchmark
from tpar.data.kg import SPLITS, TemporalKG
from tpar.data.tables import load_csv, load_csv_folder
from tpar.data.textfile import link_problem
from tpar.errors import DataError


def load_dataset(path: str | Path, *, time_format: str = "auto", split_policy: str = "chronological",
                 seed: int = 0, on_bad_rows: str = "raise", day_first: bool | None = None) -> TemporalKG:
    """Load a benchmark folder, a folder of ``train/valid/test.csv``, or one CSV/TSV file.

    ``time_format``, ``split_policy``/``seed`` and ``on_bad_rows`` (``raise`` at the first bad row,
    or ``drop`` bad rows, listed in the data set's notes) and ``day_first`` (the order of dates like
    03/04/2024; ``None``: shown by the file) apply to CSV input only (see :func:`load_csv`).
    """
    if not str(path).strip():  # Path("") is the current folder
        raise DataError("no data given: the data set's path is empty")
    p = Path(path)
    if not p.exists():
        from tpar.data.upload import interrupted_saves

        why = link_problem(p) or "no such file or directory"
        aside = interrupted_saves(p.parent, p.name) if p.name and p.parent.is_dir() else []
        if aside:  # a replacing save killed between its two renames (tpar.data.upload.restore_interrupted_save)
            why += (f"; an interrupted save left its previous copy in {aside[0]}: the next save of this name puts "
                    f"it back, or rename it to {p.name}")
        raise DataError(why, file=p)
    if p.is_dir():
        if any((p / f"{s}.csv").exists() for s in SPLITS):
            return load_csv_folder(p, time_format=time_format, on_bad_rows=on_bad_rows, day_first=day_first)
        return load_benchmark(p)
    return load_csv(p, time_format=time_format, split_policy=split_policy, seed=seed, on_bad_rows=on_bad_rows,
                    day_first=day_first)


def dataset_files(path: str | Path) -> list[Path]:
    """The files :func:`load_dataset` reads for ``path``: the file itself, or a folder's split files
    (``.csv``/``.txt``), vocabulary files (``entity2id.txt``, ``relation2id.txt``) and lineage -- what an output
    of a command must never overwrite (:func:`tpar.data.outputs.refuse_overwriting_inputs`)."""
    from tpar.data.lineage import LINEAGE_FILE

    p = Path(path)
    if not p.is_dir():
        return [p]
    names = [f"{s}.{ext}" for s in SPLITS for ext in ("csv", "txt")] + ["entity2id.txt", "relation2id.txt",
                                                                        LINEAGE_FILE]
    return [p / n for n in names if (p / n).exists()]
