"""Every shipped checkpoint has its recipe in tpar/configs/shipped/, the recipe reproduces the exact
configuration the checkpoint was trained with, and ``tpar retrain`` runs a recipe's stages in order."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers import ROOT, SAMPLE_WORLD
from tpar.cli import build_parser, main, train_run_config
from tpar.errors import DataError
from tpar.model.checkpoint import Checkpoint
from tpar.training.recipes import Recipe, load_recipe, shipped_recipes

CHECKPOINTS = sorted(p.stem for p in (ROOT / "checkpoints").glob("*.tpar"))


def test_every_shipped_checkpoint_has_a_recipe_and_no_recipe_is_stale():
    assert shipped_recipes() == CHECKPOINTS


def warm_start_chain(ckpt: Checkpoint) -> list[dict]:
    return ckpt.warm_starts()[::-1]  # earliest first


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_the_recipe_is_the_configuration_the_checkpoint_was_trained_with(name):
    recipe = load_recipe(name)
    ckpt = Checkpoint.load(ROOT / "checkpoints" / f"{name}.tpar")
    # one model, or each model of a composite (its recipe's ensemble names the stage that made each)
    assert (recipe.ensemble is not None) == (ckpt.kind == "composite")
    given = recipe.member_stages
    # a weight search may leave a given model out: the composite records which it kept, as given positions
    sel = ckpt.selection if ckpt.kind == "composite" else {}
    kept = sel.get("kept", list(range(len(given))))
    assert len(kept) == len(ckpt.member_checkpoints) and sorted(set(kept)) == kept and kept[-1] < len(given)
    if "given" in sel:  # composites built since the weight search record the models given
        assert len(sel["given"]) == len(given)
        assert sel.get("left_out", []) == [sel["given"][i] for i in range(len(given)) if i not in kept]
    # every stage trains a model given to the ensemble or one it warm-starts from (a left-out model may be the
    # warm start of a kept one: its stage is then shared), and nothing else
    assert {st.name for s in given for st in recipe.chain(s)} == {s.name for s in recipe.stages}
    for i, member in zip(kept, ckpt.member_checkpoints):
        assert len(recipe.chain(given[i])) == len(warm_start_chain(member)) + 1, \
            "one stage per run of each kept model's warm-start chain"
    by_name = {s.name: s for s in recipe.stages}
    for final, member in zip([given[i] for i in kept], ckpt.member_checkpoints):
        mine, theirs = final.config.to_dict(), member.config.to_dict()
        # where it ran is not what it trained: a stage run on a lent GPU is retrained with `--device auto`
        mine["train"].pop("device"), theirs["train"].pop("device")
        assert mine == theirs
        stages, s = [], final
        while s.init:
            s = by_name[s.init]
            stages.insert(0, s)
        chain = warm_start_chain(member)
        assert len(stages) == len(chain)
        for stage, record in zip(stages, chain):  # each earlier run: its setting, and at least the epochs it ran
            assert stage.config.train.setting == record["setting"]
            assert stage.config.train.epochs >= record["epochs"]
        for stage in [*stages, final]:  # warm starts keep the model: the same L and d everywhere
            assert (stage.config.model.num_layers, stage.config.model.dim) == \
                (member.config.model.num_layers, member.config.model.dim)


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_each_stage_config_is_what_tpar_train_builds_from_its_options(name):
    recipe = load_recipe(name)
    before = {}
    for stage in recipe.stages:
        args = build_parser().parse_args(["train", "--data", "-", "--out", "-", *stage.train_args,
                                          *(["--init", "-"] if stage.init else [])])
        init = SimpleNamespace(config=before[stage.init]) if stage.init else None
        run, _ = train_run_config(args, "any", None, init)
        run.model.num_relations, run.model.time_span = stage.config.model.num_relations, stage.config.model.time_span
        assert run.to_dict() == stage.config.to_dict(), stage.name
        before[stage.name] = stage.config


def test_a_broken_recipe_is_refused_with_its_file_named(tmp_path):
    good = load_recipe("yago11k-interpolation").to_dict()
    cases = {"no stages": {**good, "stages": []},
             "unknown init": {**good, "stages": [good["stages"][0], {**good["stages"][1], "init": "elsewhere"}]},
             "reserved option": {**good, "stages": [{**good["stages"][0], "train_args": ["--out", "x.tpar"]}]},
             "bad config": {**good, "stages": [{**good["stages"][0], "config": {"model": {"dim": -3}}}]}}
    for what, d in cases.items():
        path = tmp_path / f"{what.replace(' ', '-')}.json"
        path.write_text(json.dumps(d))
        with pytest.raises(DataError) as e:
            load_recipe(path)
        assert path.name in str(e.value), what
    assert main(["retrain", "no-such-model", "--dry-run"]) == 2


def test_retrain_runs_the_stages_in_order_each_warm_started_from_the_one_before(tmp_path, capsys):
    base = load_recipe("sample-world-unified")
    tiny = ["--epochs", "1", "--max-train-queries", "24", "--max-valid-queries", "16", "--dim", "8",
            "--num-layers", "2"]
    first = [*base.final.train_args, *tiny]
    second = ["--setting", "extrapolation", "--lr", "1e-3", "--epochs", "1", "--max-train-queries", "24",
              "--max-valid-queries", "16"]
    d = {"name": "tiny", "data": str(SAMPLE_WORLD), "calibrate_args": ["--max-queries", "32"], "stages": [
        {"name": "one", "init": None, "train_args": first, "config": base.final.config.to_dict()},
        {"name": "two", "init": "one", "train_args": second, "config": base.final.config.to_dict()}]}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(d))
    out = tmp_path / "runs"
    assert main(["retrain", str(path), "--data", str(SAMPLE_WORLD), "--out-dir", str(out), "--threads", "1"]) == 0
    final = Checkpoint.load(out / "tiny" / "two.tpar")
    assert final.setting == "extrapolation" and final.config.train.lr == 1e-3
    record = final.extra["warm_start"]
    assert record["from"] == "one.tpar" and record["setting"] == "unified"
    assert record["config"]["model"]["dim"] == 8  # the earlier stage's configuration travels with the model
    assert "calibration" in final.extra
    capsys.readouterr()
    assert main(["retrain", str(path), "--data", str(SAMPLE_WORLD), "--out-dir", str(out), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "stage 1/2 one: done" in err and "stage 2/2 two: done" in err  # a finished stage is not run again
    assert isinstance(Recipe.from_dict(d, "x"), Recipe)


def test_retrain_of_a_composite_recipe_trains_each_member_then_combines_them(tmp_path, capsys):
    """A composite's recipe: its member stages each train from scratch and are calibrated, then ``tpar ensemble``
    combines them (chosen on valid) into one composite checkpoint."""
    base = load_recipe("sample-world-unified")
    tiny = ["--epochs", "1", "--max-train-queries", "24", "--max-valid-queries", "16", "--dim", "8", "--num-layers", "2"]
    d = {"name": "duo", "data": str(SAMPLE_WORLD), "calibrate_args": ["--max-queries", "32"],
         "stages": [{"name": "a", "init": None, "train_args": [*base.final.train_args, *tiny],
                     "config": base.final.config.to_dict()},
                    {"name": "b", "init": None, "train_args": [*base.final.train_args, *tiny, "--train-seed", "3"],
                     "config": base.final.config.to_dict()}],
         "ensemble": {"members": ["a", "b"], "args": ["--prior", "--setting", "extrapolation", "--valid-queries", "40",
                                                      "--prior-queries", "40", "--calibration-queries", "40"]}}
    path = tmp_path / "duo.json"
    path.write_text(json.dumps(d))
    out = tmp_path / "runs"
    assert main(["retrain", str(path), "--data", str(SAMPLE_WORLD), "--out-dir", str(out), "--threads", "1"]) == 0
    composite = Checkpoint.load(out / "duo" / "duo.composite.tpar")
    assert composite.kind == "composite" and composite.member_names == ["a.tpar", "b.tpar"]
    assert all("calibration" in m.extra for m in composite.members)
    bad = {**d, "ensemble": {"members": ["a", "nowhere"], "args": []}}
    with pytest.raises(DataError, match="must name stages"):
        Recipe.from_dict(bad, "x")
    with pytest.raises(DataError, match="may not set --out"):
        Recipe.from_dict({**d, "ensemble": {"members": ["a"], "args": ["--out", "x"]}}, "x")
    with pytest.raises(DataError, match="only the first stage trains from scratch"):
        Recipe.from_dict({k: v for k, v in d.items() if k != "ensemble"}, "x")


def test_the_paper_configs_train_the_papers_exact_model():
    """``tpar train --config paper`` trained the sparse default while the files said "Propagation: exact" (paper
    fidelity review 39 F1): each file names its propagation, exact as in the paper (Eqs. 4 and 8 over every
    temporal path), with the hyper-parameters of Appendix E."""
    from tpar.model.config import config_for_new_model, paper_config_path

    folder = Path(__file__).resolve().parents[2] / "tpar" / "configs" / "paper"
    files = sorted(folder.glob("*.json"))
    assert len(files) == 8
    for f in files:
        data, setting = f.stem.rsplit("-", 1)
        assert paper_config_path(data, setting) == f
        run, sparse = config_for_new_model(f, setting)
        assert not sparse and run.model.propagation == "exact", f
        assert run.model.num_layers == 5 and run.model.attn_dim == 5 and run.model.dropout == 0.2, f
