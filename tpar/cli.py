"""The ``tpar`` command line. Bad input ends with a clear message and a non-zero exit, never a traceback."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tpar.errors import DataError

EXIT_BAD_INPUT = 2


def _load(args):
    from tpar.readers import load_dataset

    return load_dataset(args.data, time_format=args.time_format, split_policy=args.split_policy, seed=args.seed)


def cmd_info(args) -> int:
    kg = _load(args)
    st = kg.stats()
    if args.json:
        print(json.dumps(st, indent=2))
        return 0
    print(f"{st['name']}  ({st['source']})")
    print(f"  entities   {st['num_entities']:>9,}  ({st['entities_in_facts']:,} occur in facts)")
    print(f"  relations  {st['num_relations']:>9,}  (+ {st['num_relations']:,} inverse relations in the index)")
    print(f"  time       {st['time_axis']}")
    for split, info in st["splits"].items():
        extra = ""
        if info["facts"]:
            extra = (f"  {info['entities']:,} entities, {info['relations']} relations, {info['time_steps']} time steps, "
                     f"{info['time_range'][0]} .. {info['time_range'][1]}")
        print(f"  {split:6s} {info['facts']:>9,} facts{extra}")
    for s in st["missing_splits"]:
        print(f"  {s:6s}   missing")
    print(f"  fingerprint {st['fingerprint'][:16]}")
    for note in st["notes"]:
        print(f"  note: {note}")
    return 0


def cmd_baseline(args) -> int:
    from tpar.baselines import FrequencyBaseline, fit_recurrency
    from tpar.evaluation import evaluate

    kg = _load(args)
    progress = not args.quiet
    if args.method == "frequency":
        ranker = FrequencyBaseline()
    else:
        fit_split = "valid" if "valid" not in kg.missing_splits else args.split
        ranker = fit_recurrency(kg, args.setting, split=fit_split, per_relation=not args.global_params,
                                progress=progress, seed=args.seed)
    for w in _warnings(kg, args.setting):
        print(f"warning: {w}", file=sys.stderr)
    result = evaluate(kg, ranker, args.setting, args.split, progress=progress, params=ranker.params())
    print(result.summary())
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tpar", description="TPAR Explorer: temporal-path reasoning over temporal KGs")
    sub = p.add_subparsers(dest="command", required=True)

    def data_args(sp):
        sp.add_argument("--time-format", default="auto",
                        choices=["auto", "date", "datetime", "month", "year", "int"],
                        help="how the time column of a CSV file is read (default: auto)")
        sp.add_argument("--split-policy", default="chronological", choices=["chronological", "random"],
                        help="how a CSV file without a split column is split (default: chronological)")
        sp.add_argument("--seed", type=int, default=0, help="seed for random splits and subsampling")

    sp = sub.add_parser("info", help="statistics of a data set (benchmark folder or CSV file)")
    sp.add_argument("data", help="benchmark folder, folder of train/valid/test.csv, or a CSV/TSV file")
    sp.add_argument("--json", action="store_true", help="print JSON")
    data_args(sp)
    sp.set_defaults(func=cmd_info)

    sp = sub.add_parser("baseline", help="rank a split with a baseline under the evaluation protocol")
    sp.add_argument("--data", required=True, help="benchmark folder, folder of train/valid/test.csv, or a CSV file")
    sp.add_argument("--method", required=True, choices=["frequency", "recurrency"])
    sp.add_argument("--setting", required=True, choices=["extrapolation", "interpolation"])
    sp.add_argument("--split", default="test", choices=["valid", "test"])
    sp.add_argument("--json", metavar="FILE", help="write the metrics as JSON")
    sp.add_argument("--global-params", action="store_true",
                    help="recurrency: one (lambda, alpha) for all relations instead of per relation")
    sp.add_argument("--quiet", action="store_true", help="no progress bars")
    data_args(sp)
    sp.set_defaults(func=cmd_baseline)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ValueError as e:  # protocol refusals (missing split, unknown setting) are user errors too
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
