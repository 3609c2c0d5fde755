"""The recipe of a shipped checkpoint: every ``tpar train`` stage that made it, with the exact
configuration each trained with, so one command (``tpar retrain NAME``) trains it again.

A recipe lives in ``tpar/configs/shipped/<name>.json`` (written by ``python
benchmarks/shipped_configs.py`` from the checkpoint itself: the last stage's configuration is the
checkpoint's own, the warm-start chain recorded in the checkpoint gives the earlier stages, whose
commands come from the training log in ``benchmarks/results/tpar.md``)::

    {"name": "yago11k-interpolation", "data": "interpolation/YAGO11k",
     "stages": [{"name": "...", "init": null | "<earlier stage>", "train_args": ["--setting", ...],
                 "config": {"model": {...}, "train": {...}}, "note": "..."}, ...],
     "calibrate_args": ["--max-queries", "0"], "generated_by": "..."}

``train_args`` are ``tpar train``'s options without ``--data``, ``--out`` and ``--init`` (the recipe
supplies those); ``config`` is what they build (``tpar.cli.train_run_config``; a test checks both
agree and that the last stage's equals the checkpoint's).

A composite checkpoint (:mod:`tpar.model.composite`) has an ``ensemble`` section besides its stages::

    "ensemble": {"members": ["<stage>", "<stage>", ...], "args": ["--prior", "--seed", "7"]}

its members are the named stages' models (each its own chain, so several stages may train from scratch),
each calibrated with ``calibrate_args``, then combined by ``tpar ensemble --checkpoints ... <args>``; each
member stage's configuration is that member's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tpar.data.names import NAME_RULE, is_valid_name
from tpar.errors import DataError
from tpar.model.config import RunConfig

#: the shipped recipes, one per checkpoint in checkpoints/
SHIPPED_DIR = Path(__file__).resolve().parents[1] / "configs" / "shipped"
#: options a stage's ``train_args`` may not hold (the recipe sets them)
RESERVED_ARGS = ("--data", "--out", "--init", "--resume", "--replace")
#: options the ``ensemble`` section's ``args`` may not hold (the recipe sets them)
RESERVED_ENSEMBLE_ARGS = ("--checkpoints", "--data", "--out")


@dataclass(kw_only=True)
class Stage:
    """One ``tpar train`` run of a recipe: from scratch (``init`` None) or warm-started from the named
    earlier stage's output."""

    name: str
    init: str | None
    train_args: list[str]
    config: RunConfig
    note: str = ""

    def to_dict(self) -> dict:
        return {"name": self.name, "init": self.init, "train_args": list(self.train_args),
                "config": self.config.to_dict(), "note": self.note}


@dataclass(kw_only=True)
class Recipe:
    name: str
    data: str                      # the data folder, relative to the benchmarks folder (or a path)
    stages: list[Stage]
    calibrate_args: list[str] = field(default_factory=list)
    generated_by: str = ""
    #: a composite: {"members": [stage names], "args": [tpar ensemble options]}; None for one model
    ensemble: dict | None = None

    @property
    def final(self) -> Stage:
        return self.stages[-1]

    @property
    def member_stages(self) -> list[Stage]:
        """The stages whose models the checkpoint is made of: the models given to ``tpar ensemble`` for a
        composite (a weight search may leave some out: the checkpoint's ``selection["kept"]`` says which), else
        the last stage."""
        if self.ensemble is None:
            return [self.final]
        by_name = {s.name: s for s in self.stages}
        return [by_name[n] for n in self.ensemble["members"]]

    def chain(self, stage: Stage) -> list[Stage]:
        """The stages that train ``stage``'s model, earliest first, ending with ``stage`` (its warm starts)."""
        by_name, out = {s.name: s for s in self.stages}, [stage]
        while out[0].init:
            out.insert(0, by_name[out[0].init])
        return out

    def to_dict(self) -> dict:
        d = {"name": self.name, "data": self.data, "stages": [s.to_dict() for s in self.stages],
             "calibrate_args": list(self.calibrate_args), "generated_by": self.generated_by}
        if self.ensemble is not None:
            d["ensemble"] = {"members": list(self.ensemble["members"]), "args": list(self.ensemble["args"])}
        return d

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path

    @classmethod
    def from_dict(cls, d: dict, source: str) -> Recipe:
        """A recipe read from ``source``; a :class:`DataError` naming what is wrong otherwise."""
        if not isinstance(d, dict) or not isinstance(d.get("stages"), list) or not d["stages"]:
            raise DataError("not a recipe: it needs a non-empty 'stages' list", file=source)
        ensemble = d.get("ensemble")
        stages, seen = [], set()
        for i, s in enumerate(d["stages"]):
            where = f"stage {i + 1}"
            if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not s["name"]:
                raise DataError(f"{where} needs a name", file=source)
            if not is_valid_name(s["name"]):  # it names the stage's file: never a path (hostile audit 39 #10)
                raise DataError(f"{where}: name {s['name'][:80]!r}: {NAME_RULE}", file=source)
            if s["name"] in seen:
                raise DataError(f"{where}: name {s['name']!r} is an earlier stage's (each stage writes its own "
                                "file)", file=source)
            args = s.get("train_args", [])
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise DataError(f"{where}: train_args must be a list of strings", file=source)
            bad = [a for a in args if a.split("=")[0] in RESERVED_ARGS]
            if bad:
                raise DataError(f"{where}: train_args may not set {bad[0]} (the recipe sets it)", file=source)
            init = s.get("init")
            if init is not None and init not in seen:
                raise DataError(f"{where}: starts from {init!r}, which is not an earlier stage", file=source)
            if i > 0 and init is None and ensemble is None:  # a composite's members each start a chain
                raise DataError(f"{where}: only the first stage trains from scratch", file=source)
            stages.append(Stage(name=s["name"], init=init, train_args=list(args),
                                config=RunConfig.from_dict(s.get("config", {}), f"{source}, {where}"),
                                note=str(s.get("note", ""))))
            seen.add(s["name"])
        if not isinstance(d.get("name"), str) or not isinstance(d.get("data"), str):
            raise DataError("a recipe needs a 'name' and a 'data' folder", file=source)
        if not is_valid_name(d["name"]):  # it names the recipe's folder under --out-dir
            raise DataError(f"recipe name {d['name'][:80]!r}: {NAME_RULE}", file=source)
        if ensemble is not None:
            members, args = (ensemble.get("members"), ensemble.get("args", [])) if isinstance(ensemble, dict) else (0, 0)
            if not isinstance(members, list) or not members or not all(m in seen for m in members):
                raise DataError("ensemble: 'members' must name stages of this recipe", file=source)
            if len(set(members)) != len(members):
                raise DataError("ensemble: a stage is named twice among the members", file=source)
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise DataError("ensemble: args must be a list of strings", file=source)
            bad = [a for a in args if a.split("=")[0] in RESERVED_ENSEMBLE_ARGS]
            if bad:
                raise DataError(f"ensemble: args may not set {bad[0]} (the recipe sets it)", file=source)
            ensemble = {"members": list(members), "args": list(args)}
        return cls(name=d["name"], data=d["data"], stages=stages,
                   calibrate_args=[str(a) for a in d.get("calibrate_args", [])],
                   generated_by=str(d.get("generated_by", "")), ensemble=ensemble)


def recipe_path(name: str, folder: Path = SHIPPED_DIR) -> Path:
    return folder / f"{name}.json"


def shipped_recipes(folder: Path = SHIPPED_DIR) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.json"))


def load_recipe(name_or_path: str | Path, folder: Path = SHIPPED_DIR) -> Recipe:
    """A shipped recipe by name, or a recipe file by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = recipe_path(str(name_or_path), folder)
        if not path.is_file():
            raise DataError(f"no shipped recipe {str(name_or_path)!r}; shipped: {', '.join(shipped_recipes(folder))}")
    from tpar.data.textfile import read_small_json

    d = read_small_json(path, "recipe")
    if not isinstance(d, dict):
        raise DataError("a recipe is a JSON object", file=path)
    return Recipe.from_dict(d, str(path))


#: the package's folder: a recipe names its config files as in the repository ("tpar/configs/cpu/x.json")
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def stage_train_args(stage: Stage) -> list[str]:
    """``stage.train_args`` with a config file named as in the repository (``--config tpar/configs/...``) and not
    found from here given by its place in the installed package, so that ``tpar retrain`` runs from any folder
    (hostile audit 39 #9)."""
    out, args = [], list(stage.train_args)
    for i, a in enumerate(args):
        flag, eq, value = a.partition("=")
        if flag == "--config" and eq:
            out.append(f"--config={_package_config(value)}")
        elif i > 0 and args[i - 1] == "--config":
            out.append(_package_config(a))
        else:
            out.append(a)
    return out


def _package_config(value: str) -> str:
    """``value`` as written where a file is there from here (run in the repository, or a user's own edited copy:
    what the recipe names, as ``tpar train --config`` reads it), else the package's file by its whole path."""
    prefix = "tpar/configs/"
    if not value.startswith(prefix) or Path(value).is_file():
        return value
    return str(PACKAGE_DIR / "configs" / value.removeprefix(prefix))


def stage_outputs(recipe: Recipe, out_dir: Path) -> dict[str, Path]:
    """Where each stage writes its model: ``<out_dir>/<recipe>/<stage>.tpar``."""
    return {s.name: out_dir / recipe.name / f"{s.name}.tpar" for s in recipe.stages}


def composite_output(recipe: Recipe, out_dir: Path) -> Path:
    """Where a composite recipe's ``tpar ensemble`` writes: ``<out_dir>/<recipe>/<recipe>.composite.tpar``."""
    return out_dir / recipe.name / f"{recipe.name}.composite.tpar"
