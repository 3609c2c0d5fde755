"""The ``tpar`` command line. Bad input ends with a clear message and a non-zero exit, never a traceback."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from tpar.errors import DataError, describe_internal_error, log_internal_error, plural

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1
#: seconds a calibration waits for another writer of its checkpoint (a calibration's write takes
#: well under a second; a training run holds the file far longer and is reported instead)
CALIBRATION_LOCK_WAIT = 30.0
DATA_HELP = "a data set: benchmark folder, folder of train/valid/test.csv, or one CSV/TSV file"
CHECKPOINT_HELP = "a trained model (.tpar file from tpar train or checkpoints/)"
SETTING_HELP = "extrapolation: questions after the known facts (forecasting); interpolation: within them"
DEVICE_HELP = "auto: CUDA when available, else the CPU"
#: ``tpar rules --evaluate``: rules per head and TLogic's a and λ, chosen on ICEWS14 valid (benchmarks/results/rules.md)
RULES_PER_HEAD, RULE_CONFIDENCE_SHARE, RULE_DECAY = 100, 0.9, 0.01


def _output(path: str | None, what: str, **kw) -> None:
    """Refuse an output that cannot be written (a folder, a missing folder, a read-only file system ...)
    before any work is done: one check for every command that writes (``tpar.data.outputs``)."""
    if path is not None:
        from tpar.data.outputs import check_output

        check_output(path, what, **kw)


def _keep_existing(path: str, what: str, replace: bool, resume: bool | None = None) -> None:
    """An existing ``--out`` is a model someone saved: replaced only with ``--replace`` (or continued with
    ``--resume`` where the command has one), refused before any work otherwise -- nothing saved is lost."""
    if replace and resume:
        raise DataError("--resume continues an interrupted run and --replace starts one over: give one of them")
    if resume is not None and not (replace or resume):  # a command that can resume: its interrupted run's progress
        from tpar.training.snapshots import resume_path

        progress = resume_path(Path(path))
        if progress.exists():
            raise DataError(f"an interrupted run left its progress in {progress.name}, which a new run would "
                            "overwrite: add --resume to continue it, or --replace to start over", file=path)
    if replace or resume or not Path(path).exists():
        return
    # no progress file beside it (checked above): nothing to --resume, so that is not offered (new-user walk 38)
    raise DataError(f"a {what} is already there and is kept: choose another --out, or add --replace to replace it",
                    file=path)


#: arguments naming files a command reads, and those naming what it writes (``tpar grow --out``: a folder it
#: replaces); :func:`_spare_inputs` checks every command's pairs before it runs
INPUT_ARGS = {"data": "--data", "checkpoint": "--checkpoint", "checkpoints": "--checkpoints", "init": "--init",
              "questions_of": "--questions-of", "relation_map": "--relation-map", "input": "--input",
              "rules_file": "--rules", "config": "--config", "without": "--without", "with_facts": "--with",
              "rows": "--rows", "recipe": "recipe"}
OUTPUT_ARGS = {"out": "--out", "json": "--json", "ranks_csv": "--ranks-csv", "rules_csv": "--csv",
               "metrics_json": "--metrics-json"}


def _spare_inputs(args) -> None:
    """Refuse, before any work, a command whose output would overwrite one of its own inputs (``evaluate --json
    M.tpar``, ``train --init M --out M``, ``complete --input X --out X``, ``--ranks-csv`` onto a split file, a
    grown data set replacing the folder that holds ``--data``) or whose two outputs are one file."""
    from tpar.data.loading import dataset_files
    from tpar.data.outputs import refuse_overwriting_inputs

    inputs: dict[str, list[Path]] = {}
    for attr, flag in INPUT_ARGS.items():
        value = getattr(args, attr, None)
        if not isinstance(value, (str, list)) or (attr == "config" and value == "paper"):
            continue
        values = value if isinstance(value, list) else [value]
        inputs[flag] = [f for v in values for f in (dataset_files(v) if attr == "data" else [Path(v)])]
    if args.command == "bench" and not args.data:  # bench reads every benchmark folder below its root
        from tpar.data.benchmarks import find_data_dir

        root = Path(args.data_dir) if args.data_dir else find_data_dir()
        if root is not None and root.is_dir():
            inputs["--data-dir"] = [f for d in sorted(root.glob("*/*")) if d.is_dir() for f in dataset_files(d)]
    outputs = {flag: getattr(args, attr) for attr, flag in OUTPUT_ARGS.items()
               if isinstance(getattr(args, attr, None), str)}
    empty = next((flag for flag, value in outputs.items() if not value.strip()), None)
    if empty is not None:  # an empty name is no file (it was an internal error: hostile audit 39)
        raise DataError(f"{empty} is empty: give the file to write")
    if args.command in ("train", "calibrate"):  # the files written beside a checkpoint: its resume file and lock
        from tpar.data.locks import lock_path
        from tpar.training.snapshots import resume_path

        if args.command == "train":
            outputs.update({"--out's resume file": resume_path(Path(args.out)), "--out's lock file": lock_path(args.out)})
        else:
            outputs["--checkpoint's lock file"] = lock_path(args.checkpoint)
    refuse_overwriting_inputs(outputs, inputs)


def _load(args):
    from tpar.data.loading import load_dataset

    kg = load_dataset(args.data, time_format=args.time_format, split_policy=args.split_policy, seed=args.seed,
                      on_bad_rows="drop" if args.drop_bad_rows else "raise", day_first=args.day_first)
    if getattr(args, "command", "") != "info":  # info lists every note itself
        for note in kg.notes:  # what reading did to rows: said by every command, as tpar info and Upload say it
            if " dropped" in note:
                print(f"warning: {note}", file=sys.stderr)
            elif any(k in note for k in ROW_NOTES):
                print(f"note: {note}", file=sys.stderr)
    return kg


#: words of the loading notes that say what reading did to rows other than dropping them (printed by every command)
ROW_NOTES = ("duplicate row", "nothing but separators", "normalised", "look alike")


def cmd_info(args) -> int:
    kg = _load(args)
    st = kg.stats()
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    print(f"{st['name']}  ({st['source']})")
    print(f"  entities   {st['num_entities']:>9,}  ({st['entities_in_facts']:,} occur in facts)")
    inverse = plural(st['num_relations'], 'inverse relation')
    print(f"  relations  {st['num_relations']:>9,}  (+ {inverse} in the index)")
    print(f"  time       {st['time_axis']}")
    for split, info in st["splits"].items():
        extra = ""
        if info["facts"]:
            extra = (f"  {plural(info['entities'], 'entity', 'entities')}, {plural(info['relations'], 'relation')}, "
                     f"{plural(info['time_steps'], 'time step')}, "
                     f"{info['time_range'][0]} .. {info['time_range'][1]}")
        print(f"  {split:6s} {info['facts']:>9,} {'fact ' if info['facts'] == 1 else 'facts'}{extra}")
    for s in st["missing_splits"]:
        print(f"  {s:6s}   missing")
    print(f"  fingerprint {st['fingerprint'][:16]}")
    for note in st["notes"]:
        print(f"  note: {note}")
    return 0


def _ranking_notes(result, kg, what: str, per_relation: bool = True) -> None:
    """What limits a ranking's figures (a uniform guess, few questions, and with ``per_relation`` the relations
    below chance), printed as notes after its table, as `tpar evaluate` prints them for a model (new-user walk 38:
    baseline and rules gave none)."""
    from tpar.evaluation.chance import below_chance_relations, ranking_caveats

    notes = ranking_caveats(result.metrics("realistic").mrr, kg.num_entities, result.num_queries, what)
    below = below_chance_relations({r: (m["realistic"].mrr, m["realistic"].count) for r, m in
                                    result.by_relation().items()}, kg.num_entities, what) if per_relation else ""
    for note in notes + ([below] if below else []):
        print(f"note: {note}")


def cmd_baseline(args) -> int:
    from tpar.evaluation.baselines import FrequencyBaseline, fit_recurrency
    from tpar.evaluation.protocol import evaluate

    _output(args.json, "JSON file")
    _output(args.ranks_csv, "ranks CSV")
    kg = _load(args)
    if args.questions_of:  # the questions (and background) a checkpoint from other data is asked on this data
        from tpar.data.relation_matching import read_relation_map
        from tpar.model.checkpoint import Checkpoint

        ck = Checkpoint.load(args.questions_of)
        kg = ck.fit(kg, read_relation_map(args.relation_map) if args.relation_map else None, args.min_coverage)
        if getattr(kg, "match", None) is not None:
            print(kg.match.report(args.split), file=sys.stderr)
            print(f"note: ranking the questions {args.questions_of} can be asked on {kg.name} (relations matched "
                  "to its own); facts with an unmatched relation are left out", file=sys.stderr)
    progress = not args.quiet
    if args.method == "frequency":
        ranker = FrequencyBaseline()
    else:
        fit_split = "valid" if "valid" not in kg.missing_splits else args.split
        ranker = fit_recurrency(kg, args.setting, split=fit_split, per_relation=not args.global_params,
                                progress=progress, seed=args.seed)
    for w in _warnings(kg, args.setting):
        print(f"warning: {w}", file=sys.stderr)
    result = evaluate(kg, ranker, args.setting, args.split, progress=progress, params=ranker.params(),
                      max_queries=args.max_queries, seed=args.seed)
    print(result.summary())
    _ranking_notes(result, kg, f"the {args.method} baseline")
    if getattr(kg, "match", None) is not None:
        result.params["relation_match"] = kg.match.to_dict()
        result.params["all_questions"] = kg.match.all_question_metrics(result, args.split)
        print(result.params["all_questions"]["text"])
    if args.ranks_csv:
        from tpar.evaluation.reports import write_ranks_csv

        write_ranks_csv(result, kg, args.ranks_csv)
        print(f"wrote {args.ranks_csv}")
    if args.json:
        result.write_json(args.json)
        print(f"wrote {args.json}")
    return 0


def _warnings(kg, setting: str) -> list[str]:
    out = []
    if setting == "extrapolation" and "train" in kg.missing_splits:
        out.append(f"{kg.name} has no train split here: extrapolation queries see only valid/test history, "
                   "so figures are not comparable with published ones")
    return out


def cmd_train(args) -> int:
    """``tpar train``: the output is reserved first (its lock, shared with ``tpar calibrate``), so a
    second run on the same output is refused before it loads anything or says it starts."""
    from tpar.data.locks import acquire, lock_path, release
    from tpar.training.distributed import current

    _output(args.out, "checkpoint", make_parents=True)
    dist = current()
    if dist is not None and not dist.main:
        _keep_existing(args.out, "checkpoint", args.replace, args.resume)
        return _train(args, reserved=False)
    # reserved before the existing output is judged: a run still writing it is "in use", not an interrupted one
    lock = acquire(lock_path(args.out), f"checkpoint {Path(args.out).name}")
    try:
        _keep_existing(args.out, "checkpoint", args.replace, args.resume)
        return _train(args, reserved=True)
    finally:
        release(lock)


TRAIN_OVERRIDES = ("epochs", "lr", "batch_size", "micro_batch", "max_train_queries", "max_valid_queries", "patience",
                   "device", "lr_schedule", "background_fraction")
MODEL_OVERRIDES = ("dim", "num_layers", "history_window", "link_cap", "recent_repeats", "top_k", "exact_steps",
                   "priority", "gate", "activation")


def train_run_config(args, kg_name: str, kg=None, init=None):
    """The run configuration ``tpar train`` builds from its arguments -- a config file (``paper``: the
    paper's for ``kg_name``), a warm start's own, or the defaults sized to ``kg`` -- with the command
    line's overrides and the propagation choice applied and validated. Returns (run, description of
    where it came from). Needs no data unless neither a config nor a warm start is given."""
    from tpar.model.config import RunConfig, apply_propagation, config_for_new_model, paper_config_path
    from tpar.training.defaults import training_defaults

    config_file = None
    if args.config == "paper":
        config_file = paper_config_path(kg_name, "extrapolation" if args.setting == "unified" else args.setting)
        if config_file is None:
            raise DataError(f"no paper configuration for {kg_name!r} ({args.setting}); the paper's are for its "
                            "benchmarks (tpar/configs/paper/)")
    elif args.config:
        config_file = Path(args.config)
    if config_file is not None:  # a new model: as the Python API reads it (its propagation, else the sparse default)
        run, sparse = (config_for_new_model(config_file, args.setting) if init is None
                       else (RunConfig.load(config_file), False))  # a warm start keeps the file as written
        source = str(config_file)
    elif init is not None:  # a warm start continues with the checkpoint's own configuration
        run, source = RunConfig.from_dict(init.config.to_dict(), str(args.init)), f"{args.init} (warm start)"
    else:
        if kg is None:
            raise DataError("the training defaults are sized to the data: give --config or --init")
        defaults = training_defaults(kg, args.setting)
        run, source = defaults.run, f"defaults for a {defaults.size} data set: {defaults.reason}"
    run.train.setting = args.setting
    # propagation: --propagation, else the config file's own choice (config_for_new_model applied the sparse
    # default where it names none), else (a new model from the defaults) the sparse default
    choice = args.propagation
    if choice is None and init is None and config_file is None:
        choice = "sparse"
    if choice is not None:
        run.model = apply_propagation(run.model, args.setting, choice)
    elif config_file is not None and sparse:
        choice = "sparse"
    for key in TRAIN_OVERRIDES:
        val = getattr(args, key, None)
        if val is not None:
            setattr(run.train, key, val)
    for key in MODEL_OVERRIDES:
        val = getattr(args, key, None)
        if val is not None:
            setattr(run.model, key, val)
    if args.train_seed is not None:
        run.train.seed = args.train_seed
    try:
        run = RunConfig.from_dict(run.to_dict(), "the command line")  # validates the overrides (DataError)
    except DataError as e:  # an option given on the command line is named as its flag there ("lr must be ...")
        field, _, rest = e.problem.partition(" ")
        if field == "seed" and args.train_seed is not None:
            field = "train_seed"
        elif field not in TRAIN_OVERRIDES + MODEL_OVERRIDES or getattr(args, field, None) is None:
            raise
        raise DataError(f"--{field.replace('_', '-')} {rest}") from None
    overridden = [k for k in vars(args) if getattr(args, k) is not None
                  and k in TRAIN_OVERRIDES + MODEL_OVERRIDES + ("train_seed", "propagation")]
    if choice == "sparse" and args.propagation is None:
        source += "; propagation: the sparse default (--propagation exact walks every link)"
    return run, source + (f"; from the command line: {', '.join(overridden)}" if overridden else "")


def _resumed_run(args, kg, run, source: str):
    """(the configuration a ``--resume`` runs: the interrupted run's, from its resume file; where it came from),
    with a note on stderr naming what this command asked otherwise, which is not used (hostile audit 39 #3: the
    printed configuration was the command line's, the one that ran the resume file's). An unreadable or missing
    resume file: ``run`` as it is (the trainer then says why it cannot resume)."""
    from tpar.model.checkpoint import Checkpoint
    from tpar.model.config import PROPAGATION_FIELDS
    from tpar.training.plan import model_config_for
    from tpar.training.snapshots import resume_path

    rpath = resume_path(Path(args.out))
    try:
        resumed = Checkpoint.load(rpath, with_state=True)[0].config
    except (DataError, OSError):
        return run, source
    asked, kept = model_config_for(kg, run).to_dict(), resumed.to_dict()
    flags = [("train", k, k) for k in TRAIN_OVERRIDES if getattr(args, k, None) is not None and k != "device"]
    flags += [("model", k, k) for k in MODEL_OVERRIDES if getattr(args, k, None) is not None]
    flags += [("train", "seed", "train_seed")] * (args.train_seed is not None) + [("train", "setting", "setting")]
    flags += [("model", k, "propagation") for k in PROPAGATION_FIELDS if args.propagation is not None]
    differ = list(dict.fromkeys(  # the options this command gives that the run does not have, as typed
        f"--{flag.replace('_', '-')} " + (str(getattr(args, flag)) if flag != "propagation" else args.propagation)
        + ("" if flag == "propagation" else f" (the run's: {kept[part][k]})")
        for part, k, flag in flags if asked[part].get(k) != kept[part].get(k)))
    if args.config and any(asked[part] != kept[part] for part in ("model", "train")) and not differ:
        differ.append(f"--config {args.config}")
    if args.init:
        differ.append(f"--init {args.init} (a resume goes on from its own weights)")
    if differ:
        print(f"note: --resume continues the interrupted run as it was configured, so this command's "
              f"{'; '.join(differ)} {'is' if len(differ) == 1 else 'are'} not used (to train with "
              f"{'it' if len(differ) == 1 else 'them'}, start a new run: --replace, or another --out)", file=sys.stderr)
    resumed.train.device = run.train.device  # where it runs is this command's (Trainer._restore does the same)
    return resumed, f"the interrupted run's own, from {rpath}"


def _train(args, reserved: bool) -> int:
    from tpar.training.defaults import describe_run
    from tpar.training.trainer import train

    kg = _load(args)
    init = None
    if args.init:
        from tpar.model.checkpoint import Checkpoint
        init = Checkpoint.load(args.init)
    run, source = train_run_config(args, kg.name, kg, init)
    if args.resume:  # the interrupted run goes on as it was configured: say so, and what of this command is unused
        run, source = _resumed_run(args, kg, run, source)
    # the whole configuration, before any time is spent (on stderr: --json output stays clean)
    print(describe_run(run, source), file=sys.stderr, flush=True)
    if init is not None and not args.resume and init.data_fingerprint != kg.fingerprint:
        same = list(kg.relations.names) == list(init.relations)
        print(f"fine-tuning a model trained on {init.data_name} on {kg.name}: "
              + ("the same relations" if same else init.match(kg).describe() + " (an unmatched relation starts from "
                                                   "a fresh embedding)"), file=sys.stderr, flush=True)
    estimate = None
    from tpar.training.distributed import current

    dist = current()
    if not args.quiet and not args.resume and (dist is None or dist.main):  # timed here: a few steps and answers
        from tpar.training.estimate import estimate_training
        from tpar.training.timing import describe_estimate

        estimate = estimate_training(kg, run, eval_test=args.eval_test)
        print(describe_estimate(estimate), file=sys.stderr, flush=True)
    from tpar.training.snapshots import resume_path

    again = args.continue_hint or ("continue with the same command, --resume in place of --replace" if args.replace
                                   else "continue with the same command" if args.resume
                                   else "continue with the same command and --resume")
    try:
        result = train(kg, run, args.out, resume=args.resume, progress=not args.quiet, eval_test=args.eval_test,
                       init=init, init_name=Path(args.init).name if args.init else "", reserved=reserved,
                       estimate=estimate)
    except DataError as e:  # a write that failed mid-run (a full disk): what is kept, and how to go on
        rpath = resume_path(Path(args.out))
        if e.problem.startswith("cannot write") and rpath.is_file():
            fix = ("free space" if "space" in e.problem.lower() or "quota" in e.problem.lower()
                   else "mend the cause in brackets")
            raise DataError(f"{e.problem}; the last resume file, {rpath}, is kept: {fix}, then {again}",
                            file=e.file) from None
        raise
    except KeyboardInterrupt:  # a second Ctrl-C: stopped at once, the last resume file is what is left
        rpath = resume_path(Path(args.out))
        print(f"interrupted at once: the last resume file, {rpath}, is kept: {again}" if rpath.is_file()
              else "interrupted", file=sys.stderr)
        return 130
    if result.kept:
        print(f"{result.stopped} before its first validation: {result.path} (the model it was to replace) is kept as "
              f"it was; this run's progress is in {resume_path(result.path)}: {again}", file=sys.stderr)
        return 130 if result.stopped == "interrupted" else 1
    if result.checkpoint is None:  # a rank > 0 of a distributed run: rank 0 reports
        return 0
    if result.stopped == "interrupted":
        print(f"interrupted: the model so far is in {result.path}; {again}", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps({"stopped": result.stopped, "best_epoch": result.best_epoch, "seconds": result.seconds,
                          "checkpoint": str(result.path), "history": result.history,
                          "metrics": result.checkpoint.metrics}, indent=2))
        return 0
    print(train_summary(result))
    if args.eval_test:
        for line in baseline_comparison(kg, result.checkpoint.metrics, result.checkpoint.extra.get("baseline_test")):
            print(line)
        for line in chance_lines(result.checkpoint.metrics, kg.num_entities):
            print(line)
    return 0


def cmd_retrain(args) -> int:
    """``tpar retrain NAME``: every stage of a shipped checkpoint's recipe (tpar/configs/shipped/), each
    warm-started from the one before as the original was, then the calibration on valid. A stage whose
    model is written and has no resume file is done and skipped; one with a resume file continues
    (so rerunning the command after an interruption goes on where it stopped)."""
    import shlex

    from tpar.data.benchmarks import find_data_dir
    from tpar.training.recipes import load_recipe, stage_outputs, stage_train_args
    from tpar.training.snapshots import resume_path

    from tpar.data.outputs import check_output_folder

    if not args.dry_run:  # a dry run writes nothing, not even the folder (hostile audit 39)
        check_output_folder(args.out_dir, "retrain folder")  # before any work
    recipe = load_recipe(args.recipe)
    if args.data:
        data = Path(args.data)
    elif recipe.data.startswith("sample_data/"):  # the embedded sample world, shipped with the repository
        from tpar.data.catalog import sample_dir
        data = sample_dir() / recipe.data.removeprefix("sample_data/")
    else:
        root = find_data_dir()
        if root is None:
            raise DataError(f"the recipe trains on {recipe.data!r} under the benchmarks folder, which is not here: "
                            "set $TPAR_DATA_DIR or give --data")
        data = root / recipe.data
    if not data.exists():  # the real run would stop at its first stage: the dry run says so too
        raise DataError("no such data set (file or folder)", file=data)
    outs = stage_outputs(recipe, Path(args.out_dir))
    threads = ["--threads", str(args.threads)] if args.threads is not None else []
    again = ["retrain", str(args.recipe), "--out-dir", str(args.out_dir), *(["--data", str(data)] if args.data else []),
             *threads]  # this command, to continue after an interruption
    fingerprints: dict[tuple, str] = {}  # the data's, per way of reading it, loaded only to skip a finished stage

    def trained_here(out: Path, stage_argv: list[str]) -> None:
        """A finished stage's model is skipped only when it was trained on this data, read as the stage reads it
        (its --split-policy, --time-format ...: hostile audit 39 and review 39b: a rerun into the same --out-dir with
        other data skipped every stage, then failed in calibration)."""
        from tpar.model.checkpoint import Checkpoint

        t = build_parser().parse_args(stage_argv)
        how = (t.time_format, t.split_policy, t.seed, t.drop_bad_rows, t.day_first)
        if how not in fingerprints:
            fingerprints[how] = _load(t).fingerprint  # as the stage's `tpar train` reads it
        ck = Checkpoint.load(out)
        if ck.data_fingerprint != fingerprints[how]:
            raise DataError(f"is a finished stage's model trained on other data ({ck.data_name}, fingerprint "
                            f"{ck.data_fingerprint[:12]}), not on {data}: remove it, or give another --out-dir",
                            file=out)

    for i, stage in enumerate(recipe.stages):
        out = outs[stage.name]
        argv = ["train", "--data", str(data), "--out", str(out), *stage_train_args(stage), *threads]
        if out.is_file() and not resume_path(out).exists():
            if not args.dry_run:
                trained_here(out, argv)
            print(f"stage {i + 1}/{len(recipe.stages)} {stage.name}: done ({out})", file=sys.stderr)
            continue
        if stage.init:
            argv += ["--init", str(outs[stage.init])]
        if resume_path(out).exists():
            argv.append("--resume")
        print(f"stage {i + 1}/{len(recipe.stages)} {stage.name}: tpar {shlex.join(argv)}"
              + (f"  ({stage.note})" if stage.note else ""), file=sys.stderr, flush=True)
        if args.dry_run:
            continue
        rc = main(argv + ["--continue-hint", f"rerun `tpar {shlex.join(again)}` to continue (a stage with a "
                                             "resume file goes on from it)"])
        if rc != 0:
            return rc
    for stage in recipe.member_stages:  # one model, or each member of a composite
        argv = ["calibrate", "--checkpoint", str(outs[stage.name]), "--data", str(data), "--replace",
                *recipe.calibrate_args, *threads]
        print(f"calibration: tpar {shlex.join(argv)}", file=sys.stderr, flush=True)
        rc = 0 if args.dry_run else main(argv)
        if rc != 0:
            return rc
    final = outs[recipe.final.name]
    if recipe.ensemble is not None:  # a composite: its members combined and chosen on valid
        from tpar.training.recipes import composite_output

        final = composite_output(recipe, Path(args.out_dir))
        argv = ["ensemble", "--checkpoints", *(str(outs[s.name]) for s in recipe.member_stages), "--data", str(data),
                "--out", str(final), "--replace", *recipe.ensemble["args"], *threads]
        print(f"composite: tpar {shlex.join(argv)}", file=sys.stderr, flush=True)
        rc = 0 if args.dry_run else main(argv)
        if rc != 0:
            return rc
    if args.dry_run:
        return 0
    print(f"{recipe.name}: retrained into {final} (compare: tpar evaluate --checkpoint {final} --data {data} "
          "--split test)")
    return 0


def baseline_comparison(kg, metrics: dict, stored: dict | None = None) -> list[str]:
    """The model's test MRR beside the frequency baseline's, per tested setting, and what to do when the
    model does not beat it."""
    from tpar.evaluation.baselines import ahead_text, frequency_comparison

    lines = []
    for setting, model, base in frequency_comparison(metrics, stored, kg):
        lines.append(f"{setting}: the frequency baseline scores test MRR {_pct(base).strip()}%; the model "
                     + (ahead_text(model, base) if model > base else
                        f"does not beat it ({100 * (model - base):+.2f} points): on this data the answers repeat "
                        "earlier facts more than temporal paths explain them. If valid MRR was still rising when the "
                        "run ended, try more epochs (--epochs, --patience); else answer with `tpar baseline` here"))
    return lines


def chance_lines(metrics: dict, entities: int) -> list[str]:
    """``note:`` lines for what limits a checkpoint's test figures (:func:`tpar.evaluation.chance.ranking_caveats`):
    a model no better than a uniform guess, Hits@k all but free on few entities, few test questions."""
    from tpar.evaluation.chance import figure_caveats, test_figures

    return [f"note: {setting}: {c}" for setting, m in test_figures(metrics).items() for c in figure_caveats(m, entities)]


def _pct(x) -> str:
    return f"{100 * x:6.2f}" if isinstance(x, (int, float)) else "     –"


def train_summary(result) -> str:
    """A training run in words and small tables (``tpar train``; ``--json`` prints the data instead)."""
    from tpar.training.trainer import STOPPED_TEXT

    why = STOPPED_TEXT.get(result.stopped, result.stopped)
    lines = [f"Training done ({why}). Best epoch {result.best_epoch} of {len(result.history)}, "
             f"{result.seconds / 60:.1f} min of training. Model: {result.path}", "",
             "epoch   loss   questions   valid MRR %"]
    for h in result.history:
        lines.append(f"{h['epoch']:5d} {h['loss']:7.4f} {h.get('queries', 0):10,d}   {_pct(h.get('valid_mrr'))}"
                     + ("   <- best" if h["epoch"] == result.best_epoch else ""))
    tests = {k[len("test_"):]: v for k, v in result.checkpoint.metrics.items() if k.startswith("test_")}
    if tests:
        lines += ["", "test (both directions, time-aware filter, realistic ties), %:",
                  "setting            MRR    H@1    H@3   H@10  questions"]
        for setting, modes in tests.items():
            m = modes.get("realistic", {})
            lines.append(f"{setting:15s} {_pct(m.get('mrr'))} {_pct(m.get('hits@1'))} {_pct(m.get('hits@3'))} "
                         f"{_pct(m.get('hits@10'))} {m.get('count', 0):10,d}")
    return "\n".join(lines)


def _unfinished_warning(ckpt) -> None:
    """Say, on every command that answers with ``ckpt``, that it comes from a cancelled or interrupted run (the app
    marks such a model UNFINISHED everywhere; the CLI said nothing: new-user walk 38)."""
    why = ckpt.unfinished()
    if why:
        print(f"warning: this model is UNFINISHED ({why}): its answers and figures come from a model that did not "
              "finish training", file=sys.stderr)


def _checkpoint_and_data(args, warn: bool = True):
    """The checkpoint and the data, the data's relations matched to the model's when they differ
    (``--relation-map``, ``--min-coverage``): the match's report goes to stderr, and (``warn``) what limits the
    model on this data."""
    from tpar.data.relation_matching import MatchedKG, read_relation_map
    from tpar.model.checkpoint import Checkpoint

    ckpt = Checkpoint.load(args.checkpoint)
    _unfinished_warning(ckpt)
    kg = _load(args)
    rmap = read_relation_map(args.relation_map) if getattr(args, "relation_map", None) else None
    kg = ckpt.fit(kg, rmap, getattr(args, "min_coverage", 0.95))
    if isinstance(kg, MatchedKG):
        print(kg.match.report(getattr(args, "split", "test")), file=sys.stderr)
    for w in (ckpt.load_notes + ckpt.check_fits(kg)) if warn else ():
        if not (isinstance(kg, MatchedKG) and w.startswith(kg.match.describe())):  # reported just above
            print(f"warning: {w}", file=sys.stderr)
    return ckpt, kg


def cmd_evaluate(args) -> int:
    from tpar.evaluation.reports import write_ranks_csv
    from tpar.model.ranker import ModelRanker

    _output(args.json, "JSON file")
    _output(args.ranks_csv, "ranks CSV")
    ckpt, kg = _checkpoint_and_data(args)
    from tpar.graph.queries import settings_of

    settings = [args.setting] if args.setting else settings_of(ckpt.setting)
    if args.setting is None and ckpt.setting == "unified" and (args.json or args.ranks_csv):
        settings = ["extrapolation"]
        print("note: unified checkpoint: evaluating the extrapolation setting (use --setting for the other)",
              file=sys.stderr)
    model = ckpt.build_model(exact_propagation=args.propagation == "exact")
    trained = "; ".join(m.config.model.propagation for m in ckpt.member_checkpoints)
    used = "; ".join(m.cfg.propagation for m in (model.members if ckpt.kind == "composite" else [model]))
    if ckpt.kind == "composite":
        print(f"model: {ckpt.describe()}, chosen on valid: {model.formula()}", file=sys.stderr)
    how = "trained" if ckpt.unfinished() else "trained and selected"  # an unfinished run selected nothing
    print(f"propagation: {used}" + (f" (as {how})" if used == trained
                                     else f" (the model was {how} with {trained})"), file=sys.stderr)
    from tpar.evaluation.calibration import held_out_caveats, held_out_collector
    from tpar.training.distributed import current, evaluate_everywhere

    dist = current()
    for setting in settings:
        ranker = ModelRanker(model, args.device, micro_batch=args.micro_batch)
        params = {"checkpoint": str(args.checkpoint), "trained_setting": ckpt.setting,
                  "trained_on": ckpt.data_name, "config": ckpt.config.to_dict(),
                  "propagation": used, "trained_propagation": trained}
        if ckpt.kind == "composite":
            params["config"] = [m.config.to_dict() for m in ckpt.members]
            params["composite"] = {"members": ckpt.member_names, "member_sha256": [m.digest for m in ckpt.members],
                                   "temperatures": ckpt.temperatures, "prior": ckpt.prior, "formula": model.formula(),
                                   "chosen_on_valid": ckpt.selection.get("chosen"), "sha256": ckpt.digest}
        match = getattr(kg, "match", None)
        if match is not None:
            params["relation_match"] = match.to_dict()
        # the calibration on this split is gathered from the same scoring pass as the ranks (one pass, not two)
        collector = None
        if not args.no_calibration and dist is None:
            collector, note = held_out_collector(kg, ranker, ckpt.extra, setting, args.split, on_fit=lambda: print(
                f"calibrating {setting} on valid (the checkpoint stores no calibration of it)…", file=sys.stderr))
            if note:
                print(f"note: {note}", file=sys.stderr)
        res = evaluate_everywhere(kg, ranker, setting, args.split, progress=not args.quiet, batch_size=64,
                                  max_queries=args.max_queries, seed=args.seed, params=params,
                                  **({"on_scores": collector.keep} if collector is not None else {}))
        res.params["kernel"] = ranker.kernel_text()
        print(res.summary())
        _ranking_notes(res, kg, "the model")
        print(f"scored with {res.params['kernel']}", file=sys.stderr)
        if match is not None:
            res.params["all_questions"] = match.all_question_metrics(res, args.split)
            print(res.params["all_questions"]["text"])
        if dist is not None and not dist.main:
            continue
        if collector is not None:
            held = collector.report()  # concatenates every kept batch: once
            res.calibration = collector_report(collector, held)
            print(calibration_text(res.calibration))
            for caveat in collector.calibration.caveats():
                print(f"note: {caveat}")
            from tpar.reasoning.prediction import calibrated_elsewhere

            for caveat in held_out_caveats(held, kg.num_entities, args.split,
                                           calibrated_elsewhere(ckpt, kg, collector.calibration)):
                print(f"note: {caveat}")
        if args.json:
            res.write_json(args.json)
            print(f"wrote {args.json}")
        if args.ranks_csv:
            write_ranks_csv(res, kg, args.ranks_csv)
            print(f"wrote {args.ranks_csv}")
    return 0


def cmd_ensemble(args) -> int:
    """``tpar ensemble``: a composite model (several checkpoints and, with --prior, the history prior) chosen
    and calibrated on valid (tpar.model.ensemble), written as one checkpoint file. The output is reserved first,
    with the lock ``tpar train`` and ``tpar calibrate`` take: a run training into it is never overwritten, nor
    overwrites the composite later."""
    from tpar.data.locks import exclusive, lock_path

    _output(args.out, "checkpoint", make_parents=True)
    _keep_existing(args.out, "checkpoint", args.replace)
    with exclusive(lock_path(args.out), f"checkpoint {Path(args.out).name}"):
        _keep_existing(args.out, "checkpoint", args.replace)  # written while the lock was being taken
        return _ensemble(args)


def _ensemble(args) -> int:
    from tpar.model.checkpoint import Checkpoint
    from tpar.model.ensemble import build_composite

    if (args.betas or args.eps) and not args.prior:
        raise DataError("--betas and --eps are the history prior's grids: add --prior")
    if len(args.checkpoints) < 2 and not args.prior:
        raise DataError("one checkpoint without --prior is that checkpoint: give two or more, or add --prior")
    if args.weights and len(args.checkpoints) < 2:
        raise DataError("--weights chooses the models' weights: give two or more checkpoints")
    from tpar.model.ensemble import check_grid

    grids = {}  # the prior's grids asked for, checked here so that an error names its flag
    for key, flag, values, sym in (("beta_grid", "--betas", args.betas, "β"), ("eps_grid", "--eps", args.eps, "ε")):
        if values:
            try:
                grids[key] = check_grid(values, sym)
            except DataError as e:
                raise DataError(f"{flag}: {e}") from None
    from tpar.data.outputs import same_file

    given = args.checkpoints  # --out is none of them: checked with every command's outputs (_spare_inputs)
    if any(same_file(a, b) for i, a in enumerate(given) for b in given[i + 1:]):
        raise DataError("the same checkpoint is given twice: a composite averages different models")
    cks = [Checkpoint.load(p) for p in args.checkpoints]
    from tpar.model.composite import same_model

    twin = same_model(cks)
    if twin is not None:  # a copy under another name (audit 39: the composite written was refused when loaded)
        raise DataError(f"{args.checkpoints[twin[1]]} holds the same weights as {args.checkpoints[twin[0]]}: a "
                        "composite averages different models")
    kg = _load(args)
    setting = args.setting or cks[0].setting
    if setting == "unified":
        raise DataError("the checkpoints are unified models: choose the setting the composite is chosen for "
                        "(--setting extrapolation or interpolation)")
    for p, ck in zip(args.checkpoints, cks):  # a member trained for the other kind of question (hostile audit 39)
        if ck.setting not in (setting, "unified"):
            print(f"warning: {p} was trained for {ck.setting} questions; the composite answers {setting} ones "
                  "(expect lower accuracy from it: the weight search on valid may leave it out)", file=sys.stderr)
    for p, ck in zip(args.checkpoints, cks):
        for note in ck.load_notes:
            print(f"warning: {p}: {note}", file=sys.stderr)
    command = "tpar " + " ".join(sys.argv[1:]) if sys.argv and sys.argv[0].endswith(("tpar", "__main__.py")) else ""
    composite, report = build_composite(
        kg, cks, [Path(p).name for p in args.checkpoints], setting, prior=args.prior, valid_queries=args.valid_queries,
        prior_queries=args.prior_queries, seed=args.seed, calibration_queries=args.calibration_queries,
        progress=not args.quiet, command=command, on_step=lambda text: print(text, file=sys.stderr),
        weights=args.weights, device=args.device, micro_batch=args.micro_batch, **grids)
    composite.save(args.out)
    if args.json:
        print(json.dumps({"out": str(args.out), "chosen": report.chosen, "temperatures": composite.temperatures,
                          "prior": composite.prior, "members": composite.member_names,
                          "member_weights": composite.member_weights,
                          "left_out": report.dropped, "given": report.names,
                          "given_temperatures": report.temperatures, "legend": report.legend(),
                          "valid": report.candidates, "seconds": report.seconds,
                          "grid_edges": report.grid_edges()}, indent=2))
        return 0
    ranked = sorted(report.candidates.items(), key=lambda kv: -kv[1]["mrr"])
    q = next(iter(report.candidates.values()))["queries"]
    print("models (numbered as given):")
    for line in report.legend():
        print(f"  {line}")
    print(f"valid MRR of the candidates ({q:,} valid questions, realistic; * eligible: "
          + ("uses every model, or its weights were searched):" if args.weights else "uses every model):"))
    for name, m in ranked[:args.show]:
        print(f"  {'*' if name in report.eligible else ' '} {100 * m['mrr']:6.2f}  {name}")
    if len(ranked) > args.show:
        print(f"    … {len(ranked) - args.show} more (all in the file's selection record, --json)")
    print(f"chosen: {report.chosen} (valid MRR {100 * report.candidates[report.chosen]['mrr']:.2f})")
    other = report.best_other()
    if other:
        print(f"note: {other[0]} scores higher on valid ({100 * other[1]['mrr']:.2f}) but does not use every model "
              "given; leave the others out to get it")
    if report.dropped:
        print(f"note: the weight search gave {', '.join(report.dropped)} weight 0 on valid: left out of the composite")
    if args.prior and composite.prior is None:
        print("note: the history prior did not help on valid: the composite has none")
    edges = report.grid_edges()
    if edges:
        print(f"note: the chosen prior's {' and '.join(edges)}: a value beyond it may do better on valid "
              "(--betas / --eps widen the grids)")
    print(f"{composite.describe()}; {composite.formula()}")
    print(f"wrote {args.out}")
    return 0


def cmd_calibrate(args) -> int:
    from tpar.evaluation.calibration import calibrate, set_size_text
    from tpar.model.ranker import ModelRanker

    if not Path(args.checkpoint).is_file():  # an input first: "not found" rather than an output's complaint
        raise DataError("checkpoint not found", file=args.checkpoint)
    _output(args.checkpoint, "checkpoint")  # written back at the end: refused now, not after the fit
    ckpt, kg = _checkpoint_and_data(args)
    if getattr(kg, "match", None) is not None:  # the stored calibration describes the model on its own data
        raise DataError(f"calibrate stores the calibration in the checkpoint, so it needs the data the model was "
                        f"trained on ({ckpt.data_name}); {kg.name} has other relations ({kg.match.describe()})",
                        file=args.data)
    from tpar.graph.queries import settings_of

    settings = [args.setting] if args.setting else settings_of(ckpt.setting)
    available = 2 * len(kg.facts("valid")) if "valid" in kg.splits else 0  # both directions of each valid fact
    planned = available if not args.max_queries else min(args.max_queries, available)
    from tpar.evaluation.calibration import stored

    for s in settings:  # a thin fit must not silently replace a better-founded one (audit 37: 1 question over 1,870)
        old = stored(ckpt.extra, s)
        if old is not None and old.queries > planned and not args.replace:
            raise DataError(f"the checkpoint's {s} calibration was fitted on {old.queries:,} valid questions, this one "
                            f"would rest on {planned:,}: add --replace to replace it anyway, or raise --max-queries "
                            "(0 = all)", file=args.checkpoint)
    ranker = ModelRanker(ckpt.build_model(), args.device, micro_batch=args.micro_batch)
    fitted = {s: calibrate(kg, ranker, s, split="valid", max_queries=args.max_queries, seed=args.seed)
              for s in settings}
    store_calibration(args.checkpoint, ckpt, {s: c.to_dict() for s, c in fitted.items()})
    if args.json:
        print(json.dumps({s: c.to_dict() for s, c in fitted.items()}, indent=2))
        return 0
    for s, c in fitted.items():
        print(f"{s}: {c.method}, fitted on {c.queries:,} valid questions (seed {c.seed})")
        print("            ECE    Brier    NLL   top-1 acc  mean conf")
        for tag, m in (("before", c.before), ("after", c.after)):
            print(f"  {tag:7s} {m.ece:7.4f} {m.brier:7.4f} {m.nll:7.3f}   {100 * m.accuracy:6.2f}%   {100 * m.confidence:6.2f}%")
        print("  answer sets (sizes on valid): " + "; ".join(
            f"{100 * float(k):g}% -> p ≥ {v:.2e}, {set_size_text(c.set_sizes[k], c.entities)}"
            for k, v in c.thresholds.items()))
        if c.after.ece > c.before.ece:  # the fit minimises NLL; ECE can rise while NLL falls
            print("  (the temperature minimises NLL on these questions, not ECE: ECE may rise as NLL falls)")
        for caveat in c.caveats():  # too few questions, a model that guesses, a temperature at a bound
            print(f"note: {caveat}")
    print(f"wrote the calibration into {args.checkpoint}")
    return 0


def store_calibration(path: str, fitted_on, calibration: dict) -> None:
    """Add ``calibration`` (per setting) to the checkpoint at ``path``: read fresh, changed and written
    under the checkpoint's lock (the one training holds), so a concurrent calibration waits its turn
    and both are kept; refused when the weights there are no longer those it was fitted on."""
    from tpar.data.locks import exclusive, lock_path
    from tpar.model.checkpoint import Checkpoint, weights_digest

    with exclusive(lock_path(path), f"checkpoint {Path(path).name}", wait=CALIBRATION_LOCK_WAIT):
        target = Checkpoint.load(path)
        if weights_digest(target.weights) != weights_digest(fitted_on.weights):
            raise DataError("the checkpoint was replaced while it was being calibrated (its weights differ "
                            "from those the calibration was fitted on); nothing written, run tpar calibrate "
                            "again", file=path)
        target.extra.setdefault("calibration", {}).update(calibration)
        target.save(path)


def collector_report(collector, report) -> dict:
    """The calibration figures a collector gathered (``report``, its :meth:`report`), with where its calibration was
    fitted."""
    cal = collector.calibration
    out = report.to_dict()
    out["fitted_on"] = {"split": cal.split, "queries": cal.queries, "seed": cal.seed, "source": collector.source}
    return out


def calibration_text(c: dict) -> str:
    b, a = c["before"], c["after"]
    from tpar.evaluation.calibration import set_size_text

    cover = "; ".join(f"{100 * float(k):g}% sets: coverage {100 * v:.1f}%, size "
                      + (set_size_text(c["set_sizes"][k], every_after=", ") if k in c.get("set_sizes", {})
                         else f"mean {c['mean_set_size'][k]:.1f}")
                      for k, v in c["coverage"].items())
    return (f"calibration (T = {c['temperature']:.3f}, {c['fitted_on']['source']}): ECE {b['ece']:.4f} -> {a['ece']:.4f}, "
            f"Brier {b['brier']:.4f} -> {a['brier']:.4f}, NLL {b['nll']:.3f} -> {a['nll']:.3f}; {cover}")


def _fact_file(path: str | None, day_first: bool | None = None) -> list[tuple[str, str, str, str]]:
    """Facts for a what-if: a CSV/TSV with the header subject, relation, object, time, read by the
    data sets' own reader (a :class:`DataError` naming the file and row); at most 10,000."""
    if not path:
        return []
    from tpar.data.tables import read_quadruple_csv
    from tpar.reasoning.prediction import FactRows

    q = read_quadruple_csv(path, day_first=day_first)
    if len(q.subjects) > 10_000:
        raise DataError(f"{len(q.subjects):,} facts; a what-if takes at most 10,000", file=path)
    return FactRows(zip(q.subjects, q.relations, q.objects, q.raw_times), file=path, rows=q.rows)


def cmd_predict(args) -> int:
    from tpar.reasoning.prediction import Predictor, probability_text

    ckpt, kg = _checkpoint_and_data(args, warn=False)  # the prediction's warnings hold them
    pred = Predictor(ckpt, kg, args.device)
    top = None if args.top == "all" else args.top
    p = pred.predict(args.subject, args.relation, args.time, direction=args.direction, setting=args.setting, top_k=top,
                     coverage=args.coverage, without=_fact_file(args.without, args.day_first),
                     extra=_fact_file(args.with_facts, args.day_first))
    if args.json:
        print(json.dumps(p.to_dict(), indent=2))
        return 0
    if p.hypothetical:
        print("HYPOTHETICAL: " + "; ".join(p.hypothetical))
    arrow = f"({p.subject}, {p.relation}, ?, {p.time})" if p.direction == "object" else f"(?, {p.relation}, {p.subject}, {p.time})"
    reach = ("have evidence: a temporal path of one of its models or a history prior" if p.combines
             else "reached by temporal paths")
    reached = (f"{p.reached:,} of {p.num_entities:,} entities {reach}" if p.reached > 1 else
               f"no entity but the question's own {reach}")  # "1 of 1 entities reached" beside "no path" (audit 37)
    print(f"{arrow}  setting: {p.setting} (model trained for {p.model_setting}); {reached}")
    print(p.provenance)
    if p.combines:
        print(f"the ranking combines {p.combines}: {p.formula}")
    for w in p.warnings:
        print(f"warning: {w}")
    if p.no_evidence:  # a ranking would present a guess as an answer
        print(f"no evidence: {p.no_evidence}. No ranking is shown (--json still lists the scores).")
        return 0
    width = max([len(a.rank_text()) for a in p.answers] + [4])
    for a in p.answers:
        tie = f"  tied with {a.ties}" if a.ties else ""
        print(f"{a.rank_text():>{width}}. {a.entity:40s} p {probability_text(a.probability):>10s}  score {a.score:9.4f}"
              f"{tie}{'  (known fact)' if a.known else ''}")
    if p.unreached:
        print(("no evidence (no path of any model, no history)" if p.combines else "not reached by any temporal path")
              + f": {plural(p.unreached, 'entity', 'entities')} at score 0 "
              f"({p.unreached_rank_text}, {'' if p.unreached == 1 else 'together '}p "
              f"{probability_text(p.unreached_probability)}); not listed"
              + (f"; {p.reached_below_text}" if p.reached_below else ""))
    if p.calibrated_elsewhere:
        print(f"probabilities: temperature {p.temperature:.3f} fitted on {p.calibrated_elsewhere}'s valid questions; "
              "not calibrated on this data: read them as a ranking, not as frequencies")
    else:
        cal = pred.calibration(p.setting) if p.temperature else None
        fitted = (f"fitted on {plural(cal.queries, f'{cal.split} question')}" if cal is not None and cal.queries
                  else "fitted on valid")
        print("probabilities: " + (f"calibrated ({p.calibrator}, {fitted})" if p.temperature
                                   else "raw softmax, not calibrated"))
    if p.coverage is not None:
        shown = ", ".join(p.answer_set[:20]) + (" …" if p.answer_set_size > 20 else "")
        shown = f": {shown}" if p.answer_set_size else ""
        print(f"{p.answer_set_lead(p.calibrated_elsewhere)}{shown}\n  " + (
            f"on {p.calibrated_elsewhere} such sets held the answer {100 * p.coverage:g}% of the time; on this data "
            "their level is not known" if p.calibrated_elsewhere else p.answer_set_note()))
        from tpar.evaluation.calibration import set_size_text, set_sizes_elsewhere_text

        cal = pred.calibration(p.setting)
        sizes = cal.set_sizes.get(f"{p.coverage:g}") if cal else None
        if sizes and p.calibrated_elsewhere:  # among another data set's entities
            print(f"  {set_sizes_elsewhere_text(cal, p.coverage, p.calibrated_elsewhere)}")
        elif sizes:
            print(f"  on the {cal.queries:,} {cal.split} questions the calibration was fitted on, such sets held "
                  f"{set_size_text(sizes, p.num_entities, 'entities')}")
    return 0


def cmd_complete(args) -> int:
    from tpar.data.tables import read_quadruple_csv
    from tpar.model.checkpoint import Checkpoint
    from tpar.data.relation_matching import read_relation_map
    from tpar.reasoning.completion import (apply_thresholds, complete_with_checkpoint, fit_thresholds,
                                           model_view, write_completed_csv)
    from tpar.reasoning.prediction import probability_text

    if args.min_probability is not None and not 0.0 <= args.min_probability <= 1.0:
        raise DataError(f"--min-probability {args.min_probability} is not between 0 and 1")
    if not 0.0 < args.precision <= 1.0:
        raise DataError(f"--precision {args.precision} is not between 0 (excluded) and 1")
    _output(args.out, "completed CSV")
    ckpt, kg = Checkpoint.load(args.checkpoint), _load(args)
    _unfinished_warning(ckpt)
    rmap = read_relation_map(args.relation_map) if args.relation_map else None
    if rmap is not None or not set(kg.relations.names) <= set(ckpt.relations):
        kg = ckpt.fit(kg, rmap, args.min_coverage)  # other relations: matched by name, refused below the coverage
        if getattr(kg, "match", None) is not None:
            print(kg.match.report(), file=sys.stderr)
    for w in ckpt.load_notes + ckpt.check_fits(model_view(kg, ckpt)[0]):  # relations cover the rows'
        print(f"warning: {w}", file=sys.stderr)
    q = read_quadruple_csv(args.input, time_format=args.time_format, incomplete="keep",
                           on_bad_rows="drop" if args.drop_bad_rows else "raise", day_first=args.day_first)
    for r, problem in q.report.problems:
        print(f"warning: {args.input}, row {r} dropped: {problem}", file=sys.stderr)
    if not q.incomplete:
        print(f"warning: {args.input} has no incomplete rows (a row lacking its subject or its object): "
              "nothing to complete; the output repeats the input", file=sys.stderr)
    from tqdm.auto import tqdm

    from tpar.reasoning.completion import check_row_limit

    check_row_limit(len(q.incomplete), args.input)

    with tqdm(total=len(q.incomplete), desc="completing", unit="row", disable=args.quiet or not q.incomplete,
              mininterval=1.0, file=sys.stderr) as bar:
        comps = complete_with_checkpoint(ckpt, kg, q.incomplete, setting=args.setting, device=args.device,
                                         evidence=args.evidence, on_progress=lambda done, total: bar.update(done - bar.n))
    fits = {}
    if args.min_probability is None:  # only confident proposals: a threshold fitted on valid per setting used
        fits = fit_thresholds(ckpt, kg, [c.setting for c in comps if c.entity is not None], args.precision,
                              device=args.device, seed=args.seed)
        apply_thresholds(comps, fits)
    else:
        for c in comps:
            c.threshold = args.min_probability
    n = write_completed_csv(args.out, q, comps)
    if args.json:
        print(json.dumps({"thresholds": {s: f.to_dict() for s, f in fits.items()},
                          "min_probability": args.min_probability,
                          "rows": [{"row": c.row.row, "missing": c.row.missing, "fact": c.fact,
                                    "probability": c.probability, "calibrated": c.calibrated, "setting": c.setting,
                                    "ties": c.ties, "known_answers": c.known_answers, "accepted": c.accepted(),
                                    "threshold": c.threshold if c.threshold != float("inf") else None,
                                    "alternatives": [[a.entity, a.probability] for a in c.alternatives],
                                    "problem": c.problem} for c in comps]}, indent=2))
        return 0
    accepted = [c for c in comps if c.accepted()]
    unanswerable = [c for c in comps if c.entity is None]
    how = (f"with p ≥ {args.min_probability:g} (--min-probability)" if args.min_probability is not None else
           f"confidently (a threshold fitted on valid for {100 * args.precision:g}% precision)")
    print(f"{plural(len(comps), 'incomplete row')} in {args.input}: {len(accepted):,} completed {how}, "
          f"{len(comps) - len(accepted) - len(unanswerable):,} left empty (below the threshold: their best guesses "
          f"are in the alternatives column), {len(unanswerable):,} without a proposal; {plural(n, 'row')} written to "
          f"{args.out}")
    for fit in fits.values():
        print(f"  threshold {fit.text()}")
    if any(not f.questions for f in fits.values()):
        print("  (no valid facts to fit on: --min-probability P fills every proposal at least P likely)")
    elif any(not f.reached for f in fits.values()):
        print("  (a lower --precision, or --min-probability P to fill every proposal at least P likely, fills more)")
    outside = [c for c in comps if c.setting and ckpt.setting not in (c.setting, "unified")]
    if outside:
        print(f"warning: {plural(len(outside), 'row')} asked as {outside[0].setting} questions, a setting this "
              f"{ckpt.setting} model was not trained for: expect lower accuracy")
    if any(c.entity for c in comps) and not any(c.calibrated for c in comps if c.entity):
        print("warning: probabilities are the raw softmax of the scores, not calibrated: run `tpar calibrate`")
    for c in comps[: args.show]:
        alt = ", ".join(f"{a.entity} {probability_text(a.probability)}" for a in c.alternatives)
        state = "" if c.entity is None else "filled: " if c.accepted() else "left empty, best guess "
        said = c.note() if c.entity is None else f"row {c.row.row}: {state}{c.note()}"  # a problem names its row
        print(f"  {said}" + (f"  (then: {alt})" if alt else ""))
    if len(comps) > args.show:
        print(f"  … {len(comps) - args.show:,} more in {args.out}")
    return 0


def cmd_explain(args) -> int:
    from tpar.reasoning.explanation import RANKING_TEXT, Explainer
    from tpar.reasoning.prediction import Predictor, probability_text

    ckpt, kg = _checkpoint_and_data(args)
    ex = Explainer(Predictor(ckpt, kg, args.device))
    e = ex.explain(args.subject, args.relation, args.time, args.answer, direction=args.direction,
                   setting=args.setting, num_paths=args.paths, importance=args.importance)
    trace = ex.trace(args.subject, args.relation, args.time, direction=args.direction, setting=args.setting,
                     top=args.top_links) if args.trace else None
    cf = ex.counterfactual(args.subject, args.relation, args.time, args.answer, direction=args.direction,
                           setting=args.setting) if args.counterfactual else None
    # what `tpar predict` says of the same question: its warnings, the answer's probability, no evidence (new-user
    # walk 38: explain gave a rank where predict refused one, and no probability)
    pred = ex.predictor.predict(args.subject, args.relation, args.time, direction=args.direction,
                                setting=args.setting, top_k=None)
    mine = next((a for a in pred.answers if a.entity == e.answer), None)
    unreached = max(1, kg.num_entities - pred.reached)  # unreached_probability is their sum; one gets its share
    probability = None if pred.no_evidence else (mine.probability if mine else pred.unreached_probability / unreached)
    if args.json:
        d = e.to_dict()
        d.update(probability=probability, no_evidence=pred.no_evidence, warnings=list(pred.warnings))
        if trace is not None:
            d["trace"] = trace.to_dict()
        if cf is not None:
            d["counterfactual"] = cf.to_dict()
        print(json.dumps(d, indent=2, ensure_ascii=False))
        return 0
    q = f"({e.subject}, {e.relation}, ?, {e.time})" if e.direction == "object" else f"(?, {e.relation}, {e.subject}, {e.time})"
    for w in pred.warnings:
        print(f"warning: {w}", file=sys.stderr)
    sure = (f"no evidence, no rank ({pred.no_evidence})" if pred.no_evidence else
            f"rank {e.rank_text()}, probability {probability_text(probability)}")
    print(f"{q} -> {e.answer}   setting: {e.setting}; score {e.score:.4f}, {sure}; {e.importance} importance")
    if e.importance != "integrated":  # the app's Evidence page explains with integrated gradients by default
        print("  (the app's Evidence page weighs paths by integrated gradients, --importance integrated: its paths "
              "and shares can differ from these)")
    print(f"  {RANKING_TEXT[e.ranking]}")
    if e.combines:
        print(f"  the ranking combines {e.combines}: {e.formula}; each model's paths are scaled by its weight "
              "w/T (1/(n·T) with equal weights) and paths over the same facts merged")
        for m in e.members:
            print(f"    model {m.model} ({m.name}): f {m.score:.4f} × {m.weight:.4f} = {m.contribution:+.4f} "
                  f"(rank {m.rank_text()} alone)")
        if e.prior is not None:
            print(f"    history prior: {e.prior.text()}")
    if e.importance == "integrated":
        print(f"  integrated over {e.integration_steps} points (gap {e.completeness_gap:+.2g})")
    if e.decomposition is not None:
        print(f"  {e.decomposition.text()}")
        if e.stays_note():
            print(f"  {e.stays_note()}")
    for w in e.warnings:
        print(f"  note: {w}")
    for i, path in enumerate(e.paths, 1):
        print(f"{i:3d}. adds {path.importance:+.4f} (alone {path.total:+.4f})  {path.describe()}"
              + (f"  [model{'s' if len(path.models) > 1 else ''} {', '.join(map(str, path.models))}]"
                 if e.combines else "")
              + ("" if path.meaningful else "  (≈ 0: no meaningful evidence)"))
    if e.facts:
        print(f"facts by their share of the score ({e.importance}):")
        for x in e.facts[:args.paths]:
            print(f"     {x.share:+.4f}  ({x.subject}, {x.relation}, {x.object}, {x.time})"
                  + (f"  [{x.links} links]" if x.links > 1 else ""))
    if cf is not None:
        if cf.flipped:
            print(f"counterfactual: without {'this fact' if len(cf.removed) == 1 else f'these {len(cf.removed)} facts'} {cf.answer} drops to rank {cf.rank_after_text()} "
                  f"(first: {cf.top_after}):")
            for f in cf.removed:
                print(f"      ({', '.join(f)})")
        else:
            print(f"counterfactual: none found ({cf.reason})")
    if trace is not None:
        if trace.note:
            print(f"trace: {trace.note}")
        for layer in trace.layers:
            print(f"layer {layer.layer}: {plural(layer.entities_reached, 'entity', 'entities')} reached, "
                  f"{plural(layer.num_links, 'temporal link')}")
            for x in layer.top_links:
                print(f"      α {x.attention:.3f}  {x.source} —[{x.relation_label} @ {x.time} ({x.delta_label})]→ {x.target}")
    return 0


def cmd_rules(args) -> int:
    """Temporal rules distilled from a checkpoint's top paths (``tpar.reasoning.distilled_rules``), and, with
    ``--evaluate``, the rules as a predictor under the evaluation protocol (``tpar.reasoning.rule_ranker``)."""
    from tpar.reasoning.distilled_rules import RuleConfig, RuleSet, distill_rules, head_relations, resolve_setting

    _output(args.json, "JSON file")
    _output(args.rules_csv, "CSV file")
    _output(args.metrics_json, "metrics JSON file")
    if args.rules_file is None and args.checkpoint is None:
        raise DataError("give --checkpoint (the model to distil rules from), or --rules FILE (rules written by "
                        "tpar rules --json)")
    if args.rules_file is not None:
        if args.checkpoint is not None:
            print("note: --rules given: the checkpoint is not asked again (the rules file says what it came from)",
                  file=sys.stderr)
        from tpar.data.relation_matching import read_relation_map

        kg = _load(args)
        rules, matched = RuleSet.read(args.rules_file).fit(
            kg, read_relation_map(args.relation_map) if args.relation_map else None)
        if matched:
            print(f"note: {matched}", file=sys.stderr)
        if rules.meta.get("data_fingerprint") not in (None, kg.fingerprint):
            print(f"warning: {args.rules_file} was distilled on {rules.meta.get('data', '?')} (fingerprint "
                  f"{str(rules.meta.get('data_fingerprint'))[:12]}), not on this data ({kg.fingerprint[:12]})",
                  file=sys.stderr)
        setting = args.setting if args.setting != "auto" else rules.meta.get("setting", "extrapolation")
        shown = [kg.relations.resolve(r, "relation") for r in args.relation or ()]
    else:
        from tqdm.auto import tqdm

        from tpar.reasoning.explanation import Explainer
        from tpar.reasoning.prediction import Predictor

        ckpt, kg = _checkpoint_and_data(args)
        config = RuleConfig(questions=args.questions, source=args.source, setting=args.setting, answers=args.answers,
                            paths=args.paths, relations=tuple(args.relation or ()), max_rules=args.max_rules,
                            min_support=args.min_support, seed=args.seed)
        shown = [kg.relations.name(r) for r in head_relations(kg, config)] if config.relations else []
        setting = resolve_setting(ckpt.setting, config.setting)
        explainer = Explainer(Predictor(ckpt, kg, args.device))
        with tqdm(desc="distilling rules", unit="q", disable=args.quiet, mininterval=1.0) as bar:
            def tick(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            rules = distill_rules(explainer, config, on_progress=tick)
        rules.meta["checkpoint"] = str(args.checkpoint)
    print(rules_summary(rules, shown, args.show))
    if args.json:
        from tpar.data.outputs import write_text

        write_text(args.json, rules.to_json(), "JSON file")
        print(f"wrote {args.json}")
    if args.rules_csv:
        from tpar.data.outputs import write_csv

        write_csv(args.rules_csv, rules.csv_rows(), what="CSV file")
        print(f"wrote {args.rules_csv}")
    if args.evaluate:
        from tpar.evaluation.protocol import evaluate
        from tpar.reasoning.rule_ranker import RuleRanker

        ranker = RuleRanker(rules, kg, top=args.rules_per_head, confidence_share=args.confidence_share,
                            decay=args.decay)
        for w in _warnings(kg, setting) + ranker.coverage_notes(kg, args.evaluate):
            print(f"warning: {w}", file=sys.stderr)
        res = evaluate(kg, ranker, setting, args.evaluate, progress=not args.quiet, params=ranker.params(),
                       max_queries=args.max_queries, seed=args.seed, batch_size=64)
        print(res.summary())
        _ranking_notes(res, kg, "the rule ranking", per_relation=False)  # the coverage notes name relations without rules
        if args.metrics_json:
            res.write_json(args.metrics_json)
            print(f"wrote {args.metrics_json}")
    return 0


def rules_summary(rules, heads: list[str] | None = None, show: int = 3) -> str:
    """The rules as text, ``show`` per head relation and direction (``heads``: only these; [] = all)."""
    m = rules.meta
    c = m.get("config", {})
    lines = [f"rules of {m.get('checkpoint', '?')} on {m.get('data', '?')} ({m.get('setting', '?')}): "
             f"{m.get('questions', 0):,} questions from {c.get('source', '?')}, up to {c.get('questions', '?')} facts "
             f"per relation asked both ways, the model's {c.get('answers', '?')} best answers and "
             f"{c.get('paths', '?')} top paths each ({m.get('importance', '')}); {m.get('seconds', 0):g} s",
             f"  {m.get('score', '')}; X: the question's entity, Y: the answer"]
    for h in rules.heads:
        if heads and h.head not in heads:
            continue
        q = f"(?, {h.head}, X, t)" if h.head_inverse else f"(X, {h.head}, ?, t)"
        kept = rules.for_head(h.head, h.head_inverse)
        lines.append(f"{q}: {h.questions:,} questions, the model's first answer right for {100 * h.answered_first:.0f}%; "
                     f"{h.patterns:,} patterns" + ("" if kept else ", none seen in enough questions to keep"))
        for r in kept[:show]:
            lines.append(f"  {r.rank:2d}. {r.text(rules.scale)}   support {r.support}, confidence "
                         f"{100 * r.confidence:.0f}%, importance {r.importance:.3g}, score {r.score:.3f}")
    return "\n".join(lines)


def cmd_bench(args) -> int:
    from tpar.runtime.bench import run_benchmarks

    _output(args.json, "JSON file")
    report = run_benchmarks(data_dir=args.data_dir, quick=args.quick, device=args.device, queries=args.queries,
                            progress=not args.quiet, threads=args.threads, data=args.data,
                            train_batch=args.train_batch, infer_batch=args.infer_batch, setting=args.setting)
    text = json.dumps(report, indent=2)
    if args.json:
        from tpar.data.outputs import write_text

        write_text(args.json, text, "JSON file")
    print(bench_summary(report) + (f"\nwrote {args.json}" if args.json else ""))
    rows = report.get("results", [])
    if any("error" in r for r in rows) and all("error" in r or "skipped" in r for r in rows):  # nothing measured
        print("error: no measurement succeeded (each row above says why)", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def bench_summary(report: dict) -> str:
    """The benchmark rows as a table (``tpar bench``; ``--json FILE`` keeps every measurement)."""
    m = report.get("machine", {})
    w = max([40] + [len(str(r.get("propagation", "exact"))) for r in report.get("results", [])])
    lines = [f"machine: {m.get('platform', '?')}, {m.get('cpu_threads', '?')} CPU threads, torch {m.get('torch', '?')}"
             + (f", CUDA {m['cuda']}" if m.get("cuda") else ""), "",
             f"{'data':26s} {'setting':13s} {'L':>2s} {'d':>4s} {'propagation':{w}s} {'kernel':7s} {'train ms/q':>10s} "
             f"{'answers/s':>9s} {'peak MB':>8s} {'batches':>7s} threads"]
    for r in report.get("results", []):
        if "error" in r or "skipped" in r:
            lines.append(f"{r.get('data', '?'):26s} {r.get('setting', ''):13s} {r.get('L', '?'):>2} {r.get('d', '?'):>4}  "
                         + (f"error: {r['error']}" if "error" in r else f"skipped: {r['skipped']}"))
            continue
        lines.append(f"{r['data']:26s} {r.get('setting', 'extrapolation'):13s} {r['L']:2d} {r['d']:4d} "
                     f"{r.get('propagation', 'exact'):{w}s} "
                     f"{r.get('kernel', '?'):7s} {r['train_ms_per_query']:10.2f} {r['infer_queries_per_s']:9.1f} "
                     f"{r['peak_memory_mb']:8.0f} {str(r.get('train_batch', '?')) + '/' + str(r.get('infer_batch', '?')):>7s} "
                     f"{r.get('threads', '?')}")
    if report.get("note"):
        lines += ["", f"note: {report['note']}"]
    return "\n".join(lines)


def cmd_grow(args) -> int:
    from tpar.data.growth import grow, in_place_losses, save_grown
    from tpar.data.kg import SPLITS
    from tpar.data.lineage import LINEAGE_FILE
    from tpar.data.loading import load_dataset
    from tpar.data.textfile import read_text

    data = Path(args.data)
    csv_folder = data.is_dir() and any((data / f"{s}.csv").is_file() for s in SPLITS)
    refusal = None  # what the real run refuses: before any work, or (a dry run) after its report
    if not args.out and not csv_folder:
        refusal = DataError("only a folder of train/valid/test.csv is grown in place (a benchmark folder or a single "
                            "file is never rewritten): give --out FOLDER for the grown copy", file=data)
    elif args.out:
        _check_grown_out(Path(args.out), data, args.replace)
    else:
        lost = in_place_losses(data)
        if lost:
            refusal = DataError("growing in place rewrites the folder as tpar saves a data set (train/valid/test.csv "
                                f"and {LINEAGE_FILE} only), which would lose " + ", ".join(lost[:5])
                                + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
                                + ": give --out FOLDER for the grown copy", file=data)
    if refusal is not None and not args.dry_run:
        raise refusal
    kg = load_dataset(data)
    rows = Path(args.rows)
    report, grown = grow(kg, read_text(rows, mark_bad_bytes=True), str(rows), split=args.split, day_first=args.day_first)
    print("\n".join(report.lines()))
    if args.dry_run:
        print("dry run: nothing written")
        if refusal is not None:  # the dry run says what the real run would do (new-user walk 38 #8)
            raise DataError(f"without --dry-run this would be refused: {refusal.problem}", file=data)
        return 0
    if not report.changes:
        print("nothing to add: the data set is unchanged")
        return 0
    out = Path(args.out) if args.out else data.resolve()  # in place: `--data .` is the folder of its own name
    dest = save_grown(kg, report, grown, out.parent, out.name, overwrite=bool(args.replace or not args.out))
    print(f"saved {dest}: {len(grown.all_facts()):,} facts ({len(kg.all_facts()):,} before), "
          f"{grown.num_entities:,} entities; a model answers over it at once (tpar predict --data {dest})")
    return 0


def _check_grown_out(out: Path, data: Path, replace: bool) -> None:
    """``--out`` of ``tpar grow``: a new data set folder (or one to replace) whose parent can be written, checked
    before any data is read."""
    from tpar.data.names import check_name
    from tpar.data.outputs import check_output_folder

    if out.resolve() == data.resolve():
        raise DataError("--out is the data set itself: leave --out out to grow it in place", file=out)
    if out.exists() and not out.is_dir():
        raise DataError("exists and is not a folder: the grown data set is a folder", file=out)
    if out.exists() and not replace:
        raise DataError("a data set (or folder) is already there: choose another --out, or add --replace", file=out)
    if out.exists():  # --replace: only a data set as tpar saves one, whose every file the new one replaces
        from tpar.data.growth import in_place_losses
        from tpar.data.kg import SPLITS

        if not any((out / f"{s}.csv").is_file() for s in SPLITS):
            raise DataError("--replace replaces a data set folder (train/valid/test.csv), and this folder is not one: "
                            "nothing was deleted; choose another --out", file=out)
        lost = in_place_losses(out)
        if lost:
            raise DataError("--replace would delete what a saved data set does not hold: " + ", ".join(lost[:5])
                            + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
                            + "; nothing was deleted: move them or choose another --out", file=out)
    try:
        check_name("data set", out.name)
        check_output_folder(out.parent, "folder of the grown data set")
    except DataError as e:
        raise DataError(f"cannot write the grown data set there ({e})", file=out) from None


def cmd_sample_world(args) -> int:
    from tpar.data.sample_world import write_world

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise DataError("exists and is not a folder", file=out)
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise DataError("the folder is not empty: writing the sample world there would overwrite its files; "
                        "choose an empty or new folder, or add --force to overwrite", file=out)
    from tpar.data.outputs import check_output_folder

    check_output_folder(out, "sample world's folder")
    summary = write_world(out, seed=args.seed, n_countries=args.countries)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(sample_world_summary(summary, out))
    return 0


def sample_world_summary(summary: dict, out: Path) -> str:
    """A few lines on a generated sample world (``--json`` prints every figure)."""
    splits = summary.get("splits", {})
    parts = "; ".join(f"{name}/: " + ", ".join(f"{k} {v:,}" for k, v in sp.items()) for name, sp in splits.items())
    rules = summary.get("facts_per_rule", {})
    return "\n".join([
        f"wrote the sample world to {out} (seed {summary.get('seed')}, {summary.get('countries')} countries)",
        f"  {summary.get('facts', 0):,} facts, {summary.get('entities', 0):,} entities, "
        f"{summary.get('relations', 0)} relations; {len(rules)} planted rules, {summary.get('noise', 0):,} noise facts",
        f"  splits: {parts}",
        f"  rules and their measured rates: {out / 'rules.json'}; every figure: --json"])


def app_script() -> Path:
    """The Streamlit app's entry script of this checkout (``app/streamlit_app.py`` beside ``tpar/``)."""
    return Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"


def cmd_app(args) -> int:
    """Replace this process by ``python -m streamlit run app/streamlit_app.py``, run from the checkout's
    root so that its ``.streamlit/config.toml`` applies (local address, headless); the sample world opens."""
    import importlib.util

    script = app_script()
    if not script.is_file():
        raise DataError("the app is not here: `tpar app` runs from a source checkout (pip install -e .)", file=script)
    if importlib.util.find_spec("streamlit") is None:
        raise DataError("streamlit is not installed: pip install -r requirements.txt")
    cmd = [sys.executable, "-m", "streamlit", "run", str(script)]
    if args.port is not None:
        cmd += ["--server.port", str(args.port)]
    if args.address:
        cmd += ["--server.address", args.address]
    for var in ("TPAR_WORKSPACE", "TPAR_DATA_DIR"):  # relative paths keep their meaning after the chdir
        if os.environ.get(var):
            os.environ[var] = str(Path(os.environ[var]).resolve())
    root = script.parents[1]
    print(f"starting the app: {' '.join(cmd[1:])} (in {root}; Ctrl+C stops it)", file=sys.stderr, flush=True)
    os.chdir(root)
    os.execv(sys.executable, cmd)
    return 0  # not reached


def top_answers(text: str) -> int | str:
    """``--top``: a positive number of answers, or ``all``."""
    if text.strip().lower() == "all":
        return "all"
    return _at_least_one(text, "a number of answers (a positive number, or 'all')", "at least 1 answer (or 'all')")


def coverage_share(text: str) -> float:
    """A share for --min-coverage: '95%', '95' (a percentage above 1) or 0.95."""
    t = text.strip()
    try:
        x = float(t.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a share: {text!r} (e.g. 95%, 0.95)") from None
    share = x / 100 if t.endswith("%") or x > 1 else x
    if not 0.0 <= share <= 1.0:
        raise argparse.ArgumentTypeError(f"not between 0% and 100%: {text!r}")
    return share


def positive_int(text: str) -> int:
    """An option that counts something: 1 or more."""
    return _at_least_one(text, "a whole number", "must be at least 1")


def _at_least_one(text: str, kind: str, minimum: str, least: int = 1) -> int:
    """``text`` as a whole number at least ``least`` (an argparse error naming the value and ``minimum`` else)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {kind}") from None
    if n < least:
        raise argparse.ArgumentTypeError(f"{n}: {minimum}")
    return n


DEVICE_CHOICES = ("auto", "cpu", "cuda")
#: the most CPU threads a command is given (torch refuses or thrashes far beyond any machine's cores)
MAX_THREADS = 1024


def within(least: int, most: int, kind: str = "a whole number"):
    """An argparse type: a whole number from ``least`` to ``most`` (argparse names the option and the value
    otherwise) -- for options whose size is work or memory (threads, batch sizes, paths, a seed)."""
    def parse(text: str) -> int:
        n = _at_least_one(text, kind, f"below {least}", least=least)
        if n > most:
            raise argparse.ArgumentTypeError(f"{n}: above {most:,}, the most this option takes")
        return n

    parse.__name__ = kind  # argparse's "invalid <name> value" message
    return parse


def number_within(least: float, most: float, kind: str = "a number"):
    """An argparse type: a finite number from ``least`` to ``most`` (NaN and infinities refused: argparse names the
    option and the value) -- checked before any work, not after it."""
    def parse(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(x) or not least <= x <= most:
            raise argparse.ArgumentTypeError(f"{text}: not a finite number from {least:g} to {most:g}")
        return x

    parse.__name__ = kind
    return parse


SEED = within(0, 2 ** 63 - 1, "a seed (a whole number from 0)")
BATCH = within(1, 10 ** 6)
THREADS = within(0, MAX_THREADS)


def command(sub, name: str, func, **kw) -> argparse.ArgumentParser:
    """The sub-command ``name``, run by ``func(args)``."""
    sp = sub.add_parser(name, **kw)
    sp.set_defaults(func=func)
    return sp


def count(text: str) -> int:
    """An argparse type: a whole number at least 0 (argparse names the option and the value otherwise)."""
    return _at_least_one(text, "a whole number", "below 0: give a count (0 usually means all)", least=0)


def count_arg(sp, flag: str, default: int, help: str) -> None:
    """An option counting questions (0 usually meaning all of them; negative numbers refused)."""
    sp.add_argument(flag, type=count, default=default, metavar="N", help=help)


def threads_arg(sp) -> None:
    sp.add_argument("--threads", type=THREADS, default=0, metavar="N",
                    help="CPU threads (default: the idle cores, so a busy machine slows this in proportion)")


def subset_arg(sp) -> None:
    """``--max-queries``: a seeded subset of the questions (the ``--seed`` of :func:`data_args`)."""
    count_arg(sp, "--max-queries", 0, "rank a random subset of N questions, drawn with --seed (default 0: all)")


def run_args(sp, json_help: str, quiet_help: str = "no progress bars") -> None:
    """A long run on one data set: threads, ``--json`` (printing ``json_help``), progress bars, the data's reading."""
    threads_arg(sp)
    sp.add_argument("--json", action="store_true", help=json_help)
    sp.add_argument("--quiet", action="store_true", help=quiet_help)
    data_args(sp)


def answer_args(sp, json_help: str) -> None:
    """How an answering command prints (``--json``: ``json_help``), where the model runs, and the data's reading."""
    sp.add_argument("--json", action="store_true", help=json_help)
    device_arg(sp)
    data_args(sp)


def ranking_args(sp) -> None:
    """What ranking a split takes besides the ranker: a subset, other data's relations, the data's reading."""
    subset_arg(sp)
    transfer_args(sp)
    sp.add_argument("--quiet", action="store_true", help="no progress bars")
    data_args(sp)


def device_arg(sp, default: str | None = "auto") -> None:
    """``--device``: where the model runs (the same choices for every command)."""
    sp.add_argument("--device", default=default, choices=DEVICE_CHOICES, help=DEVICE_HELP)


def data_args(sp) -> None:
    """How a CSV file is read (every command that loads data)."""
    sp.add_argument("--time-format", default="auto",
                    choices=["auto", "date", "datetime", "month", "year", "int"],
                    help="how the time column of a CSV file is read (default: auto)")
    sp.add_argument("--split-policy", default="chronological", choices=["chronological", "random"],
                    help="how a CSV file without a split column is split (default: chronological)")
    sp.add_argument("--seed", type=SEED, default=0, help="seed for random splits and subsampling")
    sp.add_argument("--drop-bad-rows", action="store_true",
                    help="CSV input: drop rows that cannot be read (each is reported) instead of stopping at "
                         "the first")
    order = sp.add_mutually_exclusive_group()
    order.add_argument("--day-first", dest="day_first", action="store_true", default=None,
                       help="CSV input: read dates like 03/04/2024 as DD/MM/YYYY (default: as the file shows "
                            "by a day over 12; asked for when nothing shows it)")
    order.add_argument("--month-first", dest="day_first", action="store_false",
                       help="CSV input: read dates like 03/04/2024 as MM/DD/YYYY")

def transfer_args(sp) -> None:
    """A checkpoint on data with other relations: how they are matched and how much must match."""
    sp.add_argument("--relation-map", metavar="MAP_CSV",
                    help="CSV of 'data relation, model relation' rows for relations whose names do not match "
                         "(names are otherwise matched ignoring case, underscores, spaces and punctuation)")
    sp.add_argument("--min-coverage", type=coverage_share, default=0.95, metavar="SHARE",
                    help="refuse data whose facts use the model's relations less than this (default 95%%; "
                         "'90%%' or 0.9)")

def question_args(sp) -> None:
    """A question (subject, relation, ?, time) on a data set, answered by a checkpoint."""
    sp.add_argument("--checkpoint", required=True, help=CHECKPOINT_HELP)
    sp.add_argument("--data", required=True, help=DATA_HELP)
    sp.add_argument("--subject", required=True, help="entity name (the object, with --direction subject)")
    sp.add_argument("--relation", required=True, help="relation name (as in the data; case and spaces are "
                    "forgiven, and a near miss is suggested)")
    sp.add_argument("--time", required=True, help="a time label of the data: a date, a year or a step")
    sp.add_argument("--direction", default="object", choices=["object", "subject"],
                    help="object: (subject, r, ?, t); subject: (?, r, subject, t)")
    sp.add_argument("--setting", default="auto", choices=["auto", "extrapolation", "interpolation"],
                    help="auto: interpolation for times within the data, extrapolation after it")
    transfer_args(sp)


def _add_info(sub) -> None:
    sp = command(sub, "info", cmd_info, help="statistics of a data set (benchmark folder or CSV file)")
    sp.add_argument("data", help="benchmark folder, folder of train/valid/test.csv, or a CSV/TSV file")
    sp.add_argument("--json", action="store_true", help="print JSON")
    data_args(sp)


def _add_baseline(sub) -> None:
    sp = command(sub, "baseline", cmd_baseline, help="rank a split with a baseline under the evaluation protocol")
    sp.add_argument("--data", required=True, help=DATA_HELP)
    sp.add_argument("--method", required=True, choices=["frequency", "recurrency"],
                    help="frequency: how often each answer occurred with the question's entity and relation before; "
                         "recurrency: recency-weighted repeats, (lambda, alpha) fitted on valid")
    sp.add_argument("--setting", required=True, choices=["extrapolation", "interpolation"], help=SETTING_HELP)
    sp.add_argument("--split", default="test", choices=["valid", "test"], help="split to rank (default: test)")
    sp.add_argument("--json", metavar="FILE", help="write the metrics as JSON")
    sp.add_argument("--global-params", action="store_true",
                    help="recurrency: one (lambda, alpha) for all relations instead of per relation")
    sp.add_argument("--ranks-csv", metavar="FILE", help="one row per query with its three ranks")
    sp.add_argument("--questions-of", metavar="CHECKPOINT",
                    help="rank only the questions this checkpoint (trained on other data) can be asked here, on the "
                         "background it sees: a baseline beside a transferred model on the same questions")
    ranking_args(sp)


def _add_train(sub) -> None:
    sp = command(sub, "train", cmd_train, help="train a TPAR model")
    sp.add_argument("--data", required=True, help=DATA_HELP)
    sp.add_argument("--setting", required=True, choices=["extrapolation", "interpolation", "unified"],
                    help=SETTING_HELP + "; unified: both kinds of questions")
    sp.add_argument("--config", help="JSON with 'model' and 'train' sections, or 'paper' for the paper's configuration "
                    "of a known benchmark (default: sized to the data, tpar.training.defaults; printed at the start)")
    sp.add_argument("--out", required=True, help="checkpoint file to write (the best model)")
    sp.add_argument("--resume", action="store_true", help="continue an interrupted run from OUT.resume")
    sp.add_argument("--replace", action="store_true", help="replace a checkpoint already at --out (refused without)")
    sp.add_argument("--continue-hint", help=argparse.SUPPRESS)  # tpar retrain: how to go on after an interruption
    sp.add_argument("--init", metavar="CHECKPOINT",
                    help="warm start: begin with this checkpoint's weights (same model configuration, but "
                         "--propagation may change it; without --config its configuration is used) and a fresh "
                         "optimiser. Other data fine-tunes it: "
                         "relations matched by name (as tpar evaluate matches them), an unmatched one starts fresh")
    sp.add_argument("--epochs", type=int, help="maximum epochs (default: the config's)")
    sp.add_argument("--lr", type=float, help="Adam learning rate (default: the config's)")
    sp.add_argument("--batch-size", type=int, help="questions per optimiser step (default: the config's)")
    sp.add_argument("--micro-batch", type=int, help="questions per forward/backward pass (bounds memory; gradients "
                    "are accumulated up to --batch-size)")
    sp.add_argument("--max-train-queries", type=int, help="queries sampled per epoch (0 = all)")
    sp.add_argument("--max-valid-queries", type=int, help="validation queries per epoch (0 = all)")
    sp.add_argument("--patience", type=int, help="epochs without a better valid MRR before stopping early")
    sp.add_argument("--dim", type=int, help="override the model dimension d")
    sp.add_argument("--num-layers", type=int, help="override L")
    sp.add_argument("--propagation", choices=["sparse", "exact"],
                    help="sparse (the default for a new model whose config names no propagation): the first step "
                         "exact, then each entity's 24 links nearest the question's time, repeats thinned, and "
                         "only the 256 best-scoring entities of each question send, in every setting "
                         "(benchmarks/results/propagation.md); exact: every link. The options below refine either")
    sp.add_argument("--history-window", type=int, metavar="W",
                    help="propagation: only links within W time steps of the question's time (0 = exact)")
    sp.add_argument("--link-cap", type=int, metavar="M", help="propagation: at most M links per entity, those nearest "
                    "the question's time (0 = exact)")
    sp.add_argument("--recent-repeats", type=int, metavar="M", help="propagation: of a fact repeated at several times, "
                    "only the M repeats nearest the question's time (0 = every repeat)")
    sp.add_argument("--top-k", type=int, metavar="K", help="propagation: only the K highest-priority entities of each "
                    "step send messages in the next (0 = exact)")
    sp.add_argument("--exact-steps", type=int, metavar="N", help="propagation: the first N steps walk every link "
                    "(no window, cap, repeat limit or top-K); the pruning applies from step N+1 (0 = from the first)")
    sp.add_argument("--priority", choices=["score", "learned"], help="how --top-k ranks entities (default: score)")
    sp.add_argument("--activation", choices=["identity", "tanh", "relu"], help="δ of Eq. 8 (default: the config's)")
    sp.add_argument("--gate", action="store_true", default=None,
                    help="a GRU-style gate between steps (not in the paper; in code attributed to its authors)")
    sp.add_argument("--lr-schedule", choices=["constant", "cosine", "plateau"],
                    help="cosine: down to lr/10 over the planned epochs; plateau: lr halved per epoch that did "
                         "not improve valid MRR (default: the config's, constant when it names none)")
    sp.add_argument("--background-fraction", type=float, metavar="F",
                    help="interpolation: share of training facts kept as background each epoch, the rest "
                         "asked as questions (paper 0.75)")
    device_arg(sp, default=None)
    sp.add_argument("--train-seed", type=int, help="training seed (default: the config's)")
    sp.add_argument("--eval-test", action="store_true", help="evaluate the best model on the test split at the end")
    run_args(sp, json_help="print the run's history and metrics as JSON",
             quiet_help="no progress bars and no time estimate before the first step (timing one costs a few "
                        "seconds; without --quiet it is printed first)")


def _add_evaluate(sub) -> None:
    sp = command(sub, "evaluate", cmd_evaluate, help="evaluate a checkpoint on a split (same JSON as tpar baseline)")
    sp.add_argument("--checkpoint", required=True, help=CHECKPOINT_HELP)
    sp.add_argument("--data", required=True, help=DATA_HELP)
    sp.add_argument("--split", default="test", choices=["valid", "test"], help="split to evaluate (default: test)")
    sp.add_argument("--setting", choices=["extrapolation", "interpolation"], help="default: the checkpoint's")
    sp.add_argument("--json", metavar="FILE", help="write the metrics as JSON (same format as tpar baseline)")
    sp.add_argument("--ranks-csv", metavar="FILE", help="one row per query with its three ranks")
    device_arg(sp)
    sp.add_argument("--micro-batch", type=BATCH, default=16, help="questions per forward pass (default 16)")
    sp.add_argument("--propagation", default="trained", choices=["trained", "exact"],
                    help="trained: the propagation the checkpoint was trained and selected with (its card names it); "
                         "exact: every temporal link, no pruning")
    sp.add_argument("--no-calibration", action="store_true",
                    help="skip the calibration figures (ECE, Brier, NLL, answer-set coverage) on the questions "
                         "evaluated (the --max-queries subset when one is given)")
    threads_arg(sp)
    ranking_args(sp)


def _add_retrain(sub) -> None:
    sp = command(sub, "retrain", cmd_retrain, help="train a shipped checkpoint again from its recipe (tpar/configs/shipped/)")
    sp.add_argument("recipe", help="a shipped checkpoint's name (e.g. yago-extrapolation) or a recipe .json file")
    sp.add_argument("--data", help="the data folder (default: the recipe's folder under $TPAR_DATA_DIR or "
                                   "../shared/datasets)")
    sp.add_argument("--out-dir", default="runs/retrain", help="each stage writes <out-dir>/<name>/<stage>.tpar "
                                                             "(default runs/retrain)")
    sp.add_argument("--threads", type=THREADS, metavar="N", help="CPU threads for every stage")
    sp.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")


def _add_ensemble(sub) -> None:
    sp = command(sub, "ensemble", cmd_ensemble, help="combine checkpoints (and, with --prior, a history prior) into "
                 "one composite model chosen and calibrated on valid")
    sp.add_argument("--checkpoints", nargs="+", required=True, metavar="CHECKPOINT",
                    help="trained models of the same data (one with --prior: that model with the history prior)")
    sp.add_argument("--data", required=True, help=DATA_HELP + " (the one the checkpoints were trained on)")
    sp.add_argument("--out", required=True, help="the composite checkpoint to write (.tpar)")
    sp.add_argument("--replace", action="store_true", help="replace a checkpoint already at --out (refused without)")
    sp.add_argument("--prior", action="store_true",
                    help="add the history prior beta*log(1 + psi/eps) (psi: the recurrency baseline fitted on valid; "
                         "eps and beta chosen on valid)")
    sp.add_argument("--setting", choices=["extrapolation", "interpolation"],
                    help="the setting it is chosen for (default: the checkpoints')")
    count_arg(sp, "--valid-queries", 0, "choose on a seeded subset of N valid questions (default 0: all)")
    count_arg(sp, "--prior-queries", 5000, "valid questions the prior's recurrency parameters are fitted on (seeded subset; default 5000; 0: all)")
    sp.add_argument("--betas", type=float, nargs="+", metavar="B", help="the prior's weights β tried on valid "
                    "(default 0.05 0.1 0.2 0.4 0.8)")
    sp.add_argument("--eps", type=float, nargs="+", metavar="E", help="the prior's ε tried on valid "
                    "(default 0.0001 0.001 0.01 0.1)")
    count_arg(sp, "--calibration-queries", 2000, "valid questions the composite's temperature is fitted on (seeded subset; default 2000)")
    sp.add_argument("--weights", action="store_true",
                    help="also choose the models' weights on valid (whole numbers 0-4, greedy steps from equal "
                         "weights; a model weighted 0 is left out); keeps every model's valid scores in memory")
    sp.add_argument("--show", type=count, default=10, help="candidates printed (default 10)")
    device_arg(sp)
    sp.add_argument("--micro-batch", type=BATCH, default=16, help="questions per forward pass (default 16)")
    run_args(sp, json_help="print every candidate's valid figures as JSON")


def _add_calibrate(sub) -> None:
    sp = command(sub, "calibrate", cmd_calibrate, help="fit a checkpoint's temperature and answer-set thresholds on valid")
    sp.add_argument("--checkpoint", required=True, help="the checkpoint to calibrate (rewritten with the calibration)")
    sp.add_argument("--data", required=True, help=DATA_HELP + " (the checkpoint's)")
    sp.add_argument("--setting", choices=["extrapolation", "interpolation"],
                    help="default: the checkpoint's setting(s)")
    sp.add_argument("--max-queries", type=count, default=2000,
                    help="valid questions used (a seeded subset; 0 = all; default 2000)")
    threads_arg(sp)
    sp.add_argument("--micro-batch", type=BATCH, default=16, help="questions per forward pass (default 16)")
    device_arg(sp)
    sp.add_argument("--json", action="store_true", help="print the fitted calibration as JSON")
    sp.add_argument("--replace", action="store_true",
                    help="replace a stored calibration even when it was fitted on more valid questions than this one")
    data_args(sp)


def _add_predict(sub) -> None:
    sp = command(sub, "predict", cmd_predict, help="rank answers of (subject, relation, ?, time)")
    question_args(sp)
    sp.add_argument("--top", default=10, type=top_answers, help="number of answers to list (at least 1), or 'all' "
                    "(default 10)")
    sp.add_argument("--without", metavar="FILE", help="what-if: answer as if these facts (CSV: subject, relation, "
                    "object, time) were not in the data")
    sp.add_argument("--with", dest="with_facts", metavar="FILE", help="what-if: answer as if these facts were added")
    sp.add_argument("--coverage", type=float, choices=[0.8, 0.9, 0.95],
                    help="also the answer set of this level: over questions like the valid ones, such sets hold the "
                         "answer this often, on average, not for each question (split conformal; needs a calibrated "
                         "checkpoint)")
    answer_args(sp, json_help="print the prediction as JSON")


def _add_complete(sub) -> None:
    sp = command(sub, "complete", cmd_complete, help="propose the missing subject or object of incomplete rows of a CSV "
                        "(the interpolation half of the paper's pipeline)")
    sp.add_argument("--checkpoint", required=True, help=CHECKPOINT_HELP)
    sp.add_argument("--data", required=True, help="the data set whose facts the proposals are reasoned from")
    sp.add_argument("--input", required=True, metavar="FILE",
                    help="CSV/TSV: subject, relation, object, time; a row with an empty subject or object is completed")
    sp.add_argument("--out", required=True, metavar="FILE", help="the completed CSV (same rows, the missing field "
                    "filled, plus probability, completed and alternatives columns)")
    sp.add_argument("--precision", type=float, default=0.9,
                    help="fill only confident proposals: those at or above the probability threshold at which the "
                         "model's first proposals on the data's valid questions were right this often (default "
                         "0.9); the others stay empty, their best guesses listed")
    sp.add_argument("--min-probability", type=float, default=None,
                    help="instead of the fitted threshold, fill every proposal at least this probable (0: all)")
    sp.add_argument("--setting", default="auto", choices=["auto", "extrapolation", "interpolation"],
                    help="auto: interpolation for times within the data, extrapolation after it")
    sp.add_argument("--evidence", default="all", choices=["all", "train"],
                    help="facts the proposals are reasoned from: all known facts (default), or the training facts "
                         "only (when the completed facts will join this data set's training facts, so that its "
                         "valid and test facts cannot leak into training)")
    transfer_args(sp)
    sp.add_argument("--show", type=count, default=20, help="proposals printed (default 20)")
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    answer_args(sp, json_help="print every proposal as JSON")


def _add_explain(sub) -> None:
    sp = command(sub, "explain", cmd_explain, help="top temporal paths from the query entity to an answer (paper Sec. 5.4)")
    question_args(sp)
    sp.add_argument("--answer", required=True, help="the answer entity to explain")
    sp.add_argument("--paths", type=within(1, 1000), default=5, help="number of paths (default 5, at most 1000)")
    sp.add_argument("--importance", default="integrated", choices=["gradient", "integrated"],
                    help="path importance: integrated gradients (the default, as on the app's Evidence page; 16 "
                         "passes or more; complete: they sum to the score) or the gradient of Eq. 14 (one backward "
                         "pass; it can leave most of the score unattributed and give a decisive fact the wrong sign)")
    sp.add_argument("--trace", action="store_true", help="also show the per-layer reasoning trace")
    sp.add_argument("--counterfactual", action="store_true",
                    help="also the smallest set of evidence facts whose removal takes the answer off rank 1")
    sp.add_argument("--top-links", type=within(1, 1000), default=5, help="links per layer in --trace (default 5)")
    answer_args(sp, json_help="print the explanation as JSON")


def _add_rules(sub) -> None:
    sp = command(sub, "rules", cmd_rules, help="temporal rules distilled from a checkpoint's top paths; --evaluate: "
                 "the rules as a predictor")
    sp.add_argument("--checkpoint", help=CHECKPOINT_HELP + " (not needed with --rules)")
    sp.add_argument("--data", required=True, help=DATA_HELP)
    sp.add_argument("--relation", action="append", metavar="R",
                    help="a head relation to distil (repeat for more; default: every relation with questions)")
    sp.add_argument("--questions", type=positive_int, default=50, metavar="N",
                    help="facts per head relation, each asked in both directions (default 50; a seeded sample)")
    sp.add_argument("--from", dest="source", default="valid", choices=["valid", "train", "test"],
                    help="the split the questions' facts come from (default valid; train: sampled training facts)")
    sp.add_argument("--setting", default="auto", choices=["auto", "extrapolation", "interpolation"],
                    help="auto: the checkpoint's; a unified model's rules are read in interpolation")
    sp.add_argument("--answers", type=within(1, 1000), default=2, help="the model's best answers explained per question "
                    "(default 2)")
    sp.add_argument("--paths", type=within(1, 1000), default=3, help="top paths per answer (default 3, at most 1000)")
    sp.add_argument("--max-rules", type=positive_int, default=50, help="rules kept per head and direction (default 50)")
    sp.add_argument("--min-support", type=positive_int, default=2,
                    help="rules seen in fewer questions are dropped (default 2)")
    sp.add_argument("--show", type=count, default=3, metavar="N", help="rules printed per head and direction (default 3)")
    sp.add_argument("--json", metavar="FILE", help="write every rule as JSON")
    sp.add_argument("--csv", dest="rules_csv", metavar="FILE", help="write every rule as CSV (formula-safe)")
    sp.add_argument("--rules", dest="rules_file", metavar="RULES_JSON",
                    help="read rules written by --json instead of distilling them (e.g. to --evaluate them); their "
                         "relations are matched to the data's as a checkpoint's are (--relation-map for the rest)")
    sp.add_argument("--evaluate", choices=["valid", "test"],
                    help="rank this split with the rules (time-aware filter, both directions, realistic ties)")
    sp.add_argument("--rules-per-head", type=positive_int, default=RULES_PER_HEAD, metavar="K",
                    help=f"--evaluate: the K best rules of each head and direction are applied (default {RULES_PER_HEAD})")
    sp.add_argument("--confidence-share", type=number_within(0.0, 1.0, "a share from 0 to 1"),
                    default=RULE_CONFIDENCE_SHARE, metavar="A",
                    help=f"--evaluate: a rule adds A x its confidence (Wilson lower bound) + (1 - A) x exp(-decay x "
                         f"days since its first link) to a noisy-or (TLogic's score; default {RULE_CONFIDENCE_SHARE}, "
                         "chosen on ICEWS14 valid)")
    sp.add_argument("--decay", type=number_within(0.0, 1e6, "a decay rate (at least 0)"), default=RULE_DECAY,
                    metavar="LAMBDA",
                    help=f"--evaluate: the recency decay per day (per unit) of --confidence-share (default {RULE_DECAY})")
    count_arg(sp, "--max-queries", 0, "--evaluate: a seeded random subset of N queries (0 = all)")
    sp.add_argument("--metrics-json", metavar="FILE", help="--evaluate: write the metrics as JSON")
    device_arg(sp)
    threads_arg(sp)
    sp.add_argument("--quiet", action="store_true", help="no progress bars")
    transfer_args(sp)
    data_args(sp)


def _add_grow(sub) -> None:
    sp = command(sub, "grow", cmd_grow, help="add the rows of a CSV file to a data set (models answer over the grown "
                 "history at once)")
    sp.add_argument("--data", required=True, help="the data set: a folder of train/valid/test.csv (grown in place "
                    "unless --out) or a benchmark folder (with --out)")
    sp.add_argument("--rows", required=True, help="CSV/TSV of new quadruples (header subject, relation, object, time "
                    "and optionally split), times as the data set's own")
    sp.add_argument("--split", default="train", choices=["train", "valid", "test", "column"],
                    help="where the new facts go: train (default: the history every model reads), valid, test, or "
                         "the file's split column")
    sp.add_argument("--out", help="write the grown data set to this new folder instead (required for a benchmark)")
    sp.add_argument("--replace", action="store_true", help="with --out: replace an existing data set there")
    sp.add_argument("--dry-run", action="store_true", help="print the report only; write nothing")
    order = sp.add_mutually_exclusive_group()
    order.add_argument("--day-first", dest="day_first", action="store_true", default=None,
                       help="read dates like 03/04/2024 as DD/MM/YYYY (default: as the file shows)")
    order.add_argument("--month-first", dest="day_first", action="store_false",
                       help="read dates like 03/04/2024 as MM/DD/YYYY")


def _add_sample_world(sub) -> None:
    sp = command(sub, "sample-world", cmd_sample_world, help="generate the embedded sample world (deterministic)")
    sp.add_argument("--out", required=True, help="folder to write, new or empty (e.g. /tmp/world)")
    sp.add_argument("--force", action="store_true", help="write into a folder that is not empty, overwriting its files")
    sp.add_argument("--seed", type=SEED, default=7, help="generator seed (default 7: the shipped world)")
    sp.add_argument("--countries", type=within(2, 2000), default=120, help="number of countries (default 120, at "
                    "most 2000)")
    sp.add_argument("--json", action="store_true", help="print the full summary (rule rates, splits) as JSON")


def _add_app(sub) -> None:
    sp = command(sub, "app", cmd_app, help="start the Streamlit app (it opens on the sample world)")
    sp.add_argument("--port", type=within(1, 65535, "a TCP port (1-65535)"),
                    help="port to serve on (default: .streamlit/config.toml's, 8501)")
    sp.add_argument("--address", help="address to serve on (default 127.0.0.1: this machine only)")


#: ``bench --queries``' bounds: tpar.runtime.bench's MIN_TIMED and MAX_TIMED (written out here: building the parser
#: must not import torch, which that module does; a test keeps the two equal)
MIN_TIMED, MAX_TIMED = 5, 100_000


def _add_bench(sub) -> None:
    sp = command(sub, "bench", cmd_bench, help="speed benchmark: training ms/query, inference q/s, memory, links")
    sp.add_argument("--data", help="benchmark this data set (" + DATA_HELP + ") in every shape")
    sp.add_argument("--data-dir", help="benchmark root holding extrapolation/ICEWS14 etc. (default: $TPAR_DATA_DIR or "
                    "../shared/datasets, else the sample world)")
    sp.add_argument("--quick", action="store_true", help="one small shape only (L=3, d=32, exact and pruned)")
    sp.add_argument("--setting", choices=["extrapolation", "interpolation"], default="extrapolation",
                    help="the setting measured for --data (the benchmark list's interpolation/ folders are always "
                         "measured in interpolation: training questions over a background of 3/4 of train, test "
                         "questions over all training facts)")
    sp.add_argument("--queries", type=within(MIN_TIMED, MAX_TIMED), default=200, metavar="N",
                    help=f"questions timed per measurement (default 200, from {MIN_TIMED} to {MAX_TIMED:,}; the last "
                         "batch may be partial)")
    sp.add_argument("--train-batch", type=BATCH, default=5, metavar="N", help="questions per training step (default "
                    "5; larger batches launch fewer kernels, the lever on a GPU)")
    sp.add_argument("--infer-batch", type=BATCH, default=16, metavar="N",
                    help="questions per inference pass (default 16)")
    sp.add_argument("--threads", type=THREADS, default=0, help="torch threads per measurement (default: the idle cores "
                    "when the bench starts, so another busy process slows it in proportion)")
    device_arg(sp)
    sp.add_argument("--json", metavar="FILE", help="write every measurement as JSON")
    sp.add_argument("--quiet", action="store_true", help="no progress lines")


def build_parser() -> argparse.ArgumentParser:
    from tpar import __version__

    p = argparse.ArgumentParser(prog="tpar", description="TPAR Explorer: temporal-path reasoning over temporal KGs")
    p.add_argument("--version", action="version",
                   version=f"tpar {__version__} (Python {sys.version.split()[0]}, {Path(__file__).resolve().parent})",
                   help="print the version and where the package is, then exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_info, _add_baseline, _add_train, _add_evaluate, _add_retrain, _add_ensemble, _add_calibrate,
                _add_predict, _add_complete, _add_explain, _add_rules, _add_grow, _add_sample_world, _add_app, _add_bench):
        add(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    from tpar.runtime.memory import bound_heap_growth

    bound_heap_growth()  # a long scoring pass must not grow the heap without bound (tpar.runtime.memory)
    from tpar.runtime.terminal import printable_output

    args = build_parser().parse_args(argv)
    torchrun = int(os.environ.get("WORLD_SIZE", "1")) > 1
    with printable_output():  # names read from files never reach the terminal as escape sequences
        rc = _run(args, torchrun)
    if torchrun:  # a worker whose group _run has destroyed: leave without interpreter finalisation
        from tpar.training.distributed import exit_worker

        exit_worker(rc)
    return rc


def _run(args, torchrun: bool) -> int:
    dist = None
    try:
        if torchrun:  # join the process group
            from tpar.training.distributed import init_from_env

            if args.command not in ("train", "evaluate"):
                raise DataError(f"`tpar {args.command}` runs in one process; under torchrun only train and evaluate do")
            dist = init_from_env()
            if getattr(args, "threads", None):  # asked (N > 0): each rank's own; else the cores / the local ranks
                import torch

                torch.set_num_threads(args.threads)
            if not dist.main:  # one voice: rank 0 prints, the others stay silent unless they fail
                sys.stdout = open(os.devnull, "w")
        elif getattr(args, "threads", None) is not None and args.command != "bench":  # bench: per measurement
            from tpar.runtime.threads import apply_threads

            apply_threads(args.threads)
        _spare_inputs(args)
        return args.func(args)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        what_if = {str(getattr(args, k)) for k in ("without", "with_facts") if getattr(args, k, None)}
        if e.row is not None and e.row > 1 and hasattr(args, "drop_bad_rows") and not args.drop_bad_rows \
                and e.file not in what_if \
                and type(e).__name__ not in ("AmbiguousDates", "EncodingError", "BenchmarkFileError"):  # not a row to drop
            print("hint: --drop-bad-rows drops such rows (each is reported) and goes on", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader stopped early (`tpar predict ... | head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own flush at exit stays quiet
        return 141
    except Exception as e:  # a bug: one line naming the log, the traceback in the log
        if isinstance(e, OSError) and e.filename is not None:  # the file system refused a named file: not a bug
            print(f"error: {e.filename}: {e.strerror or e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if dist is not None and type(e).__name__ in ("RuntimeError", "DistBackendError", "DistNetworkError"):
            print(f"error: rank {dist.rank} of {dist.world}: the process group broke ({str(e).splitlines()[0][:300]}); "
                  "another process probably ended. Rank 0's last resume file is kept: rerun with --resume",
                  file=sys.stderr)
            return EXIT_INTERNAL
        log, ref = log_internal_error(e, os.environ.get("TPAR_LOG_DIR") or Path.home() / ".cache" / "tpar")
        print(f"error: {describe_internal_error(e, log, ref)}", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        if dist is not None:
            from tpar.training.distributed import shutdown

            shutdown()


if __name__ == "__main__":
    sys.exit(main())
