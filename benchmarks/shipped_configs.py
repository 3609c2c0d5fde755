"""Write ``tpar/configs/shipped/<name>.json``: the recipe of every checkpoint in ``checkpoints/``.

Each stage's ``tpar train`` options come from the training log (``benchmarks/results/tpar.md``); the
configuration stored for a stage is what ``tpar train`` builds from them (``tpar.cli.train_run_config``,
a warm start continuing from the stage before), and the last stage's must equal the checkpoint's own
configuration -- the script refuses to write a recipe that disagrees with its checkpoint, or whose stage
count differs from the warm-start chain the checkpoint records.

    python benchmarks/shipped_configs.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tpar.cli import build_parser, train_run_config  # noqa: E402
from tpar.model.checkpoint import Checkpoint  # noqa: E402
from tpar.training.recipes import SHIPPED_DIR, Recipe, Stage, recipe_path  # noqa: E402

CPU = "tpar/configs/cpu"
EXACT = ["--propagation", "exact"]  # trained before the sparse default existed
U_GATE = ("u-gate", None, ["--setting", "unified", "--config", f"{CPU}/icews14-unified.json", "--gate",
                           "--lr-schedule", "cosine", "--epochs", "4", "--patience", "2", *EXACT],
          "valid 52.41, 53.41, 53.66, 44.33: epoch 3 selected")
U_TAIL = ("u-tail", "u-gate", ["--setting", "unified", "--lr", "5e-4", "--lr-schedule", "cosine", "--epochs", "2",
                               "--patience", "2"], "")
I14X = ["--setting", "extrapolation", "--config", f"{CPU}/icews14-extrapolation.json", "--gate", "--dim", "64",
        "--lr-schedule", "cosine", "--epochs", "6", "--patience", "3", "--max-train-queries", "60000",
        "--max-valid-queries", "0"]
I14I = ["--setting", "interpolation", "--config", f"{CPU}/icews14-interpolation.json", "--gate", "--lr-schedule",
        "cosine", "--epochs", "3", "--patience", "3", "--max-train-queries", "0", "--max-valid-queries", "0"]
#: the sparse default of extrapolation until 2026-11-26 (cap 24, repeats once, first step exact), without the top-K
#: 256 it has since: named in full so the recipes of the models trained with it still build them
CAP24 = ["--recent-repeats", "1", "--link-cap", "24", "--exact-steps", "1", "--top-k", "0"]
#: the sparse default of interpolation and unified models until 2026-11-26 (cap 32, repeats once, first step exact)
CAP32 = ["--recent-repeats", "1", "--link-cap", "32", "--exact-steps", "1", "--top-k", "0"]
#: name -> (data folder, [(stage, init, train_args, note)], calibrate_args[, ensemble]); the last stage is the
#: checkpoint, or with an ensemble {"members": [stage names], "args": [...]} the composite of those stages
RECIPES = {
    "icews14-extrapolation": ("extrapolation/ICEWS14", [
        ("icews14-extrapolation-topk256", None, I14X,
         "the sparse default since 2026-11-26 (cap 24 + top-K 256 from step 2): valid 43.16, 45.92, 46.77, 47.34, "
         "47.56, 47.71; 2,139 s of steps, one thread, the machine shared with other runs (runs/sparse/topk256.tpar)"),
        ("icews14-extrapolation-topk256-s1", None, [*I14X, "--train-seed", "1"],
         "the same recipe, training seed 1: valid 47.25 (runs/sparse-seeds/seed1.tpar)"),
        ("icews14-extrapolation-topk256-s2", None, [*I14X, "--train-seed", "2"],
         "the same recipe, training seed 2: valid 46.74 (runs/sparse-seeds/seed2.tpar); the weight search leaves it "
         "out"),
        ("icews14-extrapolation-l5d64", None, [*I14X, "--num-layers", "5", "--lr", "1e-3", "--epochs", "4"],
         "L=5: valid 42.51, 44.88, 46.13, 46.35, 13.6 ms per training question on one thread "
         "(runs/sparse-seeds/l5d64.tpar); the weight search leaves it out, its tail below is kept"),
        ("icews14-extrapolation-l5d64-tail", "icews14-extrapolation-l5d64", [
            "--setting", "extrapolation", "--lr", "5e-4", "--lr-schedule", "cosine", "--batch-size", "32",
            "--micro-batch", "32", "--epochs", "3", "--patience", "3", "--max-train-queries", "50000",
            "--max-valid-queries", "0", "--train-seed", "3"],
         "trained on a lent H200 (4.0 min, three runs sharing the GPU; benchmarks/gpu/issue28_29_members.sh): valid "
         "46.58, 46.80, 46.91; test 45.44 alone (runs/gpu-members/i14-l5-tail.tpar); on a CPU about 35 min of one "
         "thread")], ["--max-queries", "0"],
        {"members": ["icews14-extrapolation-topk256", "icews14-extrapolation-topk256-s1",
                     "icews14-extrapolation-topk256-s2", "icews14-extrapolation-l5d64",
                     "icews14-extrapolation-l5d64-tail"],
         "args": ["--prior", "--weights", "--seed", "7", "--betas", "0.0125", "0.025", "0.05", "0.1", "0.2", "--eps",
                  "0.000000000001", "0.00000000001", "0.0000000001", "0.000000001", "0.00000001", "0.0000001",
                  "0.000001"]}),
    "icews14-extrapolation-sparse": ("extrapolation/ICEWS14", [
        ("icews14-extrapolation-sparse", None, ["--setting", "extrapolation", "--config",
                                                f"{CPU}/icews14-extrapolation.json", "--gate", "--dim", "64",
                                                "--lr-schedule", "cosine", "--epochs", "6", "--patience", "3",
                                                "--max-train-queries", "60000", "--max-valid-queries", "0", *CAP24],
         "the sparse default propagation until 2026-11-26 (cap 24); 2,507 s of steps on a quiet machine, one thread")],
        ["--max-queries", "0"]),
    "icews14-unified": ("interpolation/ICEWS14", [U_GATE, ("icews14-unified", *U_TAIL[1:])], ["--max-queries", "0"]),
    "icews14-interpolation": ("interpolation/ICEWS14", [
        U_GATE, U_TAIL,
        ("icews14-interpolation-l3", "u-tail", ["--setting", "interpolation", "--lr", "5e-4", "--lr-schedule",
                                                "cosine", "--epochs", "3", "--patience", "3", "--max-valid-queries",
                                                "0"],
         "the model shipped alone until 2026-11-26 (git show 84ac7a3:checkpoints/icews14-interpolation.tpar): "
         "valid 64.19, 64.38, 64.50; test 63.64"),
        ("icews14-interpolation-l5d64", None, [
            "--setting", "interpolation", "--config", f"{CPU}/icews14-interpolation.json", "--gate", "--dim", "64",
            "--num-layers", "5", "--lr", "1e-3", "--lr-schedule", "cosine", "--epochs", "6", "--patience", "3",
            "--max-train-queries", "0", "--max-valid-queries", "3000", *CAP32],
         "valid 57.84, 62.54, 64.20, 64.56, 64.90, 64.90 on 3,000 seeded questions; 25-45 min per epoch on one "
         "shared thread, two sessions, resumed once (runs/icews14-interp-l5/)"),
        ("icews14-interpolation-l5d64-tail", "icews14-interpolation-l5d64", [
            "--setting", "interpolation", "--propagation", "sparse", "--lr", "5e-4", "--lr-schedule", "cosine",
            "--epochs", "3", "--patience", "3", "--max-valid-queries", "0"],
         "the sparse default from here on (cap 24 + top-K 256): valid 64.66, 64.86, 65.22 on all valid questions; "
         "33.9 min on one shared thread"),
        ("icews14-interpolation-l5d64-tail2", "icews14-interpolation-l5d64-tail", [
            "--setting", "interpolation", "--lr", "3e-4", "--lr-schedule", "cosine", "--epochs", "3", "--patience",
            "3", "--max-valid-queries", "0"],
         "valid 65.05, 65.23, 65.35; about 37 min on one shared thread"),
        ("icews14-interpolation-l5d64-tail3", "icews14-interpolation-l5d64-tail2", [
            "--setting", "interpolation", "--lr", "2e-4", "--lr-schedule", "cosine", "--epochs", "3", "--patience",
            "3", "--max-valid-queries", "0"],
         "valid 65.34, 65.37, 65.46; about 40 min on one shared thread, over two sessions (resumed once)"),
        ("icews14-interpolation-topk256", None, I14I,
         "the sparse default since 2026-11-26 (cap 24 + top-K 256 from step 2): valid 61.93, 63.20, 63.93; test "
         "62.72 (runs/sparse/interp-cap24-topk256.tpar)")],
        ["--max-queries", "0"],
        {"members": ["icews14-interpolation-l3", "icews14-interpolation-l5d64-tail3", "icews14-interpolation-topk256"],
         "args": ["--prior", "--weights", "--betas", "0.025", "0.05", "0.1", "0.2", "0.4", "--eps", "0.000000001",
                  "0.00000001", "0.0000001", "0.000001", "0.00001", "0.0001"]}),
    "yago11k-interpolation": ("interpolation/YAGO11k", [
        ("y11-gate-L5d64", None, ["--setting", "interpolation", "--config", f"{CPU}/yago11k-interpolation.json",
                                  "--gate", "--num-layers", "5", "--dim", "64", "--epochs", "30", "--patience", "6",
                                  *EXACT],
         "the shipped chain's first run was stopped by hand in epoch 26 (best valid at epoch 24); this runs on to "
         "epoch 30 or early stopping"),
        ("y11-tail", "y11-gate-L5d64", ["--setting", "interpolation", "--lr", "5e-4", "--lr-schedule", "cosine",
                                        "--epochs", "4", "--patience", "4"], ""),
        ("yago11k-interpolation", "y11-tail", ["--setting", "interpolation", "--lr", "3e-4", "--lr-schedule", "cosine",
                                               "--epochs", "4", "--patience", "4"], "")], ["--max-queries", "0"]),
    "wikidata12k-interpolation": ("interpolation/WIKIDATA12k", [
        ("wd12k-gL5d64", None, ["--setting", "interpolation", "--config", f"{CPU}/yago11k-interpolation.json", "--gate",
                                "--num-layers", "5", "--dim", "64", "--epochs", "30", "--patience", "6",
                                "--max-valid-queries", "0", *CAP32],
         "the sparse default propagation of interpolation until 2026-11-26 (cap 32); the shipped chain's run was "
         "stopped by hand in epoch 20 (best valid 34.48 at "
         "epoch 18, two sessions, resumed once); this runs on to epoch 30 or early stopping"),
        ("wd12k-tail", "wd12k-gL5d64", ["--setting", "interpolation", "--lr", "3e-4", "--lr-schedule", "cosine",
                                        "--epochs", "4", "--patience", "4", "--max-valid-queries", "0"],
         "valid 35.01, 35.10, 35.21, 35.04; alone: test 34.82"),
        ("wd12k-s1-gL5d64", None, ["--setting", "interpolation", "--config", f"{CPU}/yago11k-interpolation.json",
                                   "--gate", "--num-layers", "5", "--dim", "64", "--epochs", "30", "--patience", "6",
                                   "--max-valid-queries", "0", "--train-seed", "1", *CAP32],
         "the same recipe with training seed 1; the shipped chain's run was stopped by hand in epoch 16 (best valid "
         "35.09 at epoch 15, two sessions, resumed once); this runs on to epoch 30 or early stopping"),
        ("wd12k-s1-tail", "wd12k-s1-gL5d64", ["--setting", "interpolation", "--lr", "3e-4", "--lr-schedule", "cosine",
                                              "--epochs", "4", "--patience", "4", "--max-valid-queries", "0",
                                              "--train-seed", "1"],
         "valid 35.35, 35.39, 35.57, 35.58")], ["--max-queries", "0"],
        {"members": ["wd12k-tail", "wd12k-s1-tail"], "args": ["--prior"]}),
    "yago-extrapolation": ("extrapolation/YAGO", [
        ("yago-extrapolation", None, ["--setting", "extrapolation", "--config", f"{CPU}/yago-extrapolation.json",
                                      *EXACT], "")], []),
    "sample-world-unified": ("sample_data/world/chronological", [
        ("sample-world-unified", None, ["--setting", "unified", "--config", f"{CPU}/sample-world-unified.json",
                                        *EXACT], "")], []),
}


#: configuration fields that say where a run ran, not what it trained: a stage trained on a lent GPU is
#: retrained with the device ``tpar train`` chooses (``auto``: a GPU when there is one)
WHERE_IT_RAN = {("train", "device")}


def stage_config(train_args: list[str], kg_name: str, before, ckpt: Checkpoint):
    """The configuration ``tpar train`` builds from ``train_args`` (warm-started from ``before``'s
    configuration when given), its data-dependent fields taken from the checkpoint."""
    args = build_parser().parse_args(["train", "--data", "-", "--out", "-", *train_args,
                                      *(["--init", "-"] if before is not None else [])])
    run, _ = train_run_config(args, kg_name, None, SimpleNamespace(config=before) if before is not None else None)
    run.model.num_relations = ckpt.config.model.num_relations
    run.model.time_span = ckpt.config.model.time_span
    return run


def kept_positions(ckpt: Checkpoint, given: int) -> list[int]:
    """Which of the ``given`` models a checkpoint is made of (0-based, its members' order): a composite whose
    weights were searched records them (``selection["kept"]``); otherwise all of them."""
    kept = (ckpt.selection or {}).get("kept") if ckpt.kind == "composite" else None
    return list(kept) if kept is not None else list(range(given))


def build(name: str) -> Recipe:
    data, stages, calibrate_args, *rest = RECIPES[name]
    ensemble = rest[0] if rest else None
    ckpt = Checkpoint.load(ROOT / "checkpoints" / f"{name}.tpar")
    built, configs = [], {}
    for stage, init, args, note in stages:
        run = stage_config(args, ckpt.data_name, configs.get(init), ckpt)
        configs[stage] = run
        built.append(Stage(name=stage, init=init, train_args=args, config=run, note=note))
    recipe = Recipe(name=name, data=data, stages=built, calibrate_args=calibrate_args,
                    generated_by="python benchmarks/shipped_configs.py", ensemble=ensemble)
    given = recipe.member_stages
    kept = kept_positions(ckpt, len(given))
    if len(kept) != len(ckpt.member_checkpoints) or not all(0 <= i < len(given) for i in kept):
        raise SystemExit(f"{name}: {len(given)} member stage(s) given, the checkpoint keeps models {kept} of "
                         f"{len(ckpt.member_checkpoints)}")
    # each kept model's recorded warm-start chain is its stage's chain in the recipe, and every stage trains a
    # model given to the ensemble or one it warm-starts from (a stage may start two of them)
    needed = {st.name for s in given for st in recipe.chain(s)}
    if needed != {st.name for st in built}:
        raise SystemExit(f"{name}: stages {sorted({st.name for st in built} - needed)} train no model of the checkpoint")
    for i, member in zip(kept, ckpt.member_checkpoints):
        if len(member.warm_starts()) + 1 != len(recipe.chain(given[i])):
            raise SystemExit(f"{name}: stage {given[i].name} is a chain of {len(recipe.chain(given[i]))} stage(s), "
                             f"but its model records {len(member.warm_starts()) + 1}")
    for stage, member in zip([given[i] for i in kept], ckpt.member_checkpoints):
        mine, theirs = stage.config.to_dict(), member.config.to_dict()
        differ = [f"{part}.{k}: recipe {mine[part].get(k)!r}, checkpoint {theirs[part].get(k)!r}"
                  for part in ("model", "train") for k in sorted(set(mine[part]) | set(theirs[part]))
                  if mine[part].get(k) != theirs[part].get(k) and (part, k) not in WHERE_IT_RAN]
        if differ:
            raise SystemExit(f"{name}: stage {stage.name} is not its model's configuration:\n  " + "\n  ".join(differ))
    return recipe


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the files written, write nothing")
    args = ap.parse_args()
    shipped = sorted(p.stem for p in (ROOT / "checkpoints").glob("*.tpar"))
    missing = sorted(set(shipped) - set(RECIPES))
    if missing:
        raise SystemExit(f"no recipe for {', '.join(missing)}: add its stages to RECIPES")
    SHIPPED_DIR.mkdir(parents=True, exist_ok=True)
    stale = 0
    for name in shipped:
        recipe = build(name)
        path = recipe_path(name)
        if args.check:
            same = path.is_file() and json.loads(path.read_text(encoding="utf-8")) == recipe.to_dict()
            stale += not same
            print(f"{name}: {'up to date' if same else 'STALE'}")
        else:
            recipe.save(path)
            print(f"{name}: {len(recipe.stages)} stage(s) -> {path.relative_to(ROOT)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
