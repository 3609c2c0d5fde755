"""Issue #29: does a richer, learned mix of a composite's parts with history features beat the grid-chosen
prior, on valid questions the mix was *not* chosen on?

A composite scores S = Σ_i c_i·f_i + β·log(1 + ψ/ε) (:mod:`tpar.model.composite`) with one (ε, β) chosen on
valid from a grid. This benchmark scores a composite's members, its ψ and two more history features once on a
seeded subset of valid questions, keeps them in memory, and compares mixes by **two-fold cross-validation**
(each mix chosen on one half, its MRR measured on the other; realistic ties, time-aware filter, both
directions, the ranks of :func:`tpar.evaluation.ranks.filtered_ranks`):

- ``grid``: the composite's own form, (ε, β) from the composite's grids, members at their stored coefficients;
- ``grid+pair``: + β₂·log(1 + φ_pair/ε₂), φ_pair(e) = Σ 2^(−λ·(t_q − t')) over *any* earlier link s → e
  (the pair's history whatever the relation: the signal of the copy mechanisms of CENET and TiRGN, wider);
- ``grid+recip``: + β₃·log(1 + φ_recip/ε₃), φ_recip(e) = the same over links with the question's inverse
  relation (e did r to s before: reciprocity);
- ``grid+both``: both;
- ``per-relation β``: the prior's β chosen per relation (relations with at least ``--min-per-relation``
  questions in the half; the others keep the global β);
- ``grid+rules`` (with ``--rules FILE``): + β₄·log(1 + φ_rules/ε₄), φ_rules the score of temporal rules
  applied as TLogic does (:class:`tpar.reasoning.rule_ranker.RuleRanker` at ``tpar rules --evaluate``'s
  defaults, the rules of ``tpar rules --json``): multi-hop rules grounded in the whole background, which the
  members' pruned propagation (top-K, links per node) may not reach.

Each extra (ε, β) is chosen by coordinate search over the grids, on MRR, on the choosing half only.
Nothing here is shipped: a mix that wins on held-out questions would become a composite option (then selected
on valid and tested once, as every composite is).

    OMP_NUM_THREADS=1 python benchmarks/prior_mix.py --checkpoint runs/icews18-gpu3/i18-comp.tpar \\
        --data ../shared/datasets/extrapolation/ICEWS18 --queries 6000 --seed 11 --cache /tmp/i18-mix.pt
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
import torch

from tpar.data.loading import load_dataset
from tpar.evaluation.protocol import evaluate
from tpar.evaluation.ranks import filtered_ranks
from tpar.graph.background import Background
from tpar.graph.queries import QueryBatch
from tpar.model.checkpoint import Checkpoint
from tpar.model.composite import CompositeCheckpoint
from tpar.model.ensemble import PartsRanker
from tpar.model.ranker import ModelRanker

EPS_GRID = (1e-12, 1e-9, 1e-6, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
BETA_GRID = (0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
#: λ (per time step) of the pair and reciprocity features: the recurrency fit's most common choice on ICEWS
FEATURE_LAMBDA = 0.03


def history_feature(batch: QueryBatch, background: Background, relation: torch.Tensor | None,
                    lmbda: float) -> torch.Tensor:
    """(B, E) Σ 2^(−λ·|t_q − t'|) over the admitted links s → e of the question's background (only those of
    ``relation`` (B,) when given). The background admits exactly what the members see (never t' ≥ t_q when
    forecasting, never the question's own fact)."""
    b = len(batch)
    edges, owner = background.edges_from(batch.subject, torch.arange(b), batch)
    ix = background.index
    if relation is not None:
        keep = ix.rel[edges] == relation[owner]
        edges, owner = edges[keep], owner[keep]
    dt = (batch.time[owner] - ix.time[edges]).abs().double()
    out = torch.zeros(b, background.num_entities, dtype=torch.float64)
    out.index_put_((owner, ix.dst[edges]), torch.pow(2.0, -lmbda * dt), accumulate=True)
    return out.float()


#: per-question tensors a cache holds besides the members' scores and the filter pairs
FEATURES = ("psi", "pair", "recip", "rules")
PER_QUESTION = (*FEATURES, "relation", "answer")


def collect(ck: CompositeCheckpoint, data: str, queries: int, seed: int, micro_batch: int,
            rules_file: str = "") -> dict:
    kg = load_dataset(data)
    model = ck.build_model("cpu")
    R = kg.num_relations
    extras = {
        "psi": lambda b, bg: model.prior.psi(b, bg).float(),
        "pair": lambda b, bg: history_feature(b, bg, None, FEATURE_LAMBDA),
        "recip": lambda b, bg: history_feature(b, bg, (b.relation + R) % (2 * R), FEATURE_LAMBDA),
        "relation": lambda b, _: b.relation.clone(), "answer": lambda b, _: b.answer.clone()}
    if rules_file:
        from tpar.cli import RULE_CONFIDENCE_SHARE, RULE_DECAY, RULES_PER_HEAD
        from tpar.reasoning.distilled_rules import RuleSet
        from tpar.reasoning.rule_ranker import RuleRanker

        rules = RuleSet.read(rules_file)
        if rules.meta.get("data_fingerprint") not in (None, kg.fingerprint):
            raise SystemExit(f"{rules_file}: distilled on other data than {data}")
        ranker = RuleRanker(rules, kg, top=RULES_PER_HEAD, confidence_share=RULE_CONFIDENCE_SHARE, decay=RULE_DECAY)
        extras["rules"] = lambda b, bg: ranker.score(b, bg).float()
    parts = PartsRanker([ModelRanker(m, "cpu", micro_batch=micro_batch) for m in model.members], extras)
    kept: list[dict] = []

    def keep(batch, _scores, rows, cols) -> None:
        d = dict(parts.last)
        d["rows"], d["cols"] = rows.clone(), cols.clone()
        kept.append(d)

    t0 = time.perf_counter()
    evaluate(kg, parts, ck.setting, "valid", batch_size=64, progress=False, max_queries=queries, seed=seed,
             on_scores=keep)
    return {"batches": kept, "coefficients": model.coefficients, "eps": model.prior.eps,
            "beta": model.prior.beta, "seconds": time.perf_counter() - t0, "queries": queries, "seed": seed}


def _stack(batches: list[dict]) -> dict:
    out = {k: torch.cat([b[k] for b in batches]) for k in PER_QUESTION if k in batches[0]}
    out["f"] = [torch.cat([b["f"][i] for b in batches]) for i in range(len(batches[0]["f"]))]
    rows, cols, off = [], [], 0
    for b in batches:
        rows.append(b["rows"] + off)
        cols.append(b["cols"])
        off += len(b["answer"])
    out["rows"], out["cols"] = torch.cat(rows), torch.cat(cols)
    return out


def _subset(d: dict, idx: torch.Tensor) -> dict:
    """The questions ``idx`` of a stacked cache, with their filter pairs renumbered."""
    pos = torch.full((len(d["answer"]),), -1, dtype=torch.long)
    pos[idx] = torch.arange(len(idx))
    keep = pos[d["rows"]] >= 0
    out = {k: d[k][idx] for k in PER_QUESTION if k in d}
    out["f"] = [x[idx] for x in d["f"]]
    out["rows"], out["cols"] = pos[d["rows"][keep]], d["cols"][keep]
    return out


class Mix:
    """S = base + Σ_k β_k·log1p(φ_k/ε_k), φ_k in :data:`FEATURES`; β of psi optionally per relation."""

    def __init__(self, d: dict, coefficients) -> None:
        self.d = d
        self.base = sum(c * x.double() for c, x in zip(coefficients, d["f"]))

    def term(self, feature: str, eps: float) -> torch.Tensor:
        """log1p(φ/ε) (B, E), recomputed each time: one cached per (feature, ε) would hold gigabytes."""
        return torch.log1p(self.d[feature].double() / eps)

    def scores(self, params: dict, per_relation: dict | None = None) -> torch.Tensor:
        s = self.base.clone()
        for feat, (eps, beta) in params.items():
            if beta:
                if feat == "psi" and per_relation:
                    b = torch.full((len(s),), float(beta), dtype=torch.float64)
                    for r, br in per_relation.items():
                        b[self.d["relation"] == r] = br
                    s += b.unsqueeze(1) * self.term(feat, eps)
                else:
                    s += beta * self.term(feat, eps)
        return s

    def reciprocal_ranks_of(self, scores: torch.Tensor) -> torch.Tensor:
        """(B,) realistic reciprocal ranks of any (B, E) scores of these questions (time-aware filter)."""
        o, p = filtered_ranks(scores, self.d["answer"], self.d["rows"], self.d["cols"])
        return 1.0 / ((o + p) / 2)

    def reciprocal_ranks(self, params: dict, per_relation: dict | None = None) -> torch.Tensor:
        return self.reciprocal_ranks_of(self.scores(params, per_relation))

    def mrr(self, params: dict, per_relation: dict | None = None) -> float:
        return float(self.reciprocal_ranks(params, per_relation).double().mean())

    def mrr_of(self, scores: torch.Tensor) -> float:
        """MRR of any (B, E) scores of these questions (one member alone, ψ alone)."""
        return float(self.reciprocal_ranks_of(scores).double().mean())


def choose(mix: Mix, features: list[str], start: dict) -> dict:
    """Coordinate search over (ε, β) of each feature in turn, on MRR, at most two rounds (or until no change
    raises it)."""
    params = dict(start)
    for f in features:
        params.setdefault(f, (1e-2, 0.0))
    best = mix.mrr(params)
    for _ in range(2):
        changed = False
        for f in features:
            for eps, beta in itertools.product(EPS_GRID, BETA_GRID):
                trial = {**params, f: (eps, beta)}
                m = mix.mrr(trial)
                if m > best + 1e-9:
                    best, params, changed = m, trial, True
        if not changed:
            break
    return params


def choose_per_relation(mix: Mix, params: dict, min_q: int) -> dict:
    """β of ψ per relation (ε fixed): each relation with ≥ ``min_q`` questions takes the β of BETA_GRID that
    maximises its own questions' MRR (other relations' ranks do not depend on it)."""
    eps, beta = params["psi"]
    rel = mix.d["relation"]
    per: dict[int, float] = {}
    rr_by_beta = {b: mix.reciprocal_ranks({**params, "psi": (eps, b)}) for b in BETA_GRID}
    for r in torch.unique(rel).tolist():
        mask = rel == r
        if int(mask.sum()) < min_q:
            continue
        best = max(BETA_GRID, key=lambda b: (float(rr_by_beta[b][mask].mean()), -abs(b - beta)))
        per[r] = best
    return per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--queries", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--micro-batch", type=int, default=16)
    ap.add_argument("--cache", default="", help="keep the scored parts here (and read them if present)")
    ap.add_argument("--min-per-relation", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="")
    ap.add_argument("--variants", nargs="*", default=[], help="only these rows (names as printed)")
    ap.add_argument("--rules", default="", help="rules of `tpar rules --json` on this data: adds the grid+rules row")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ck = Checkpoint.load(args.checkpoint)
    if not isinstance(ck, CompositeCheckpoint) or ck.history_prior() is None:
        raise SystemExit(f"{args.checkpoint}: not a composite with a history prior")
    if args.cache and Path(args.cache).exists():
        cache = torch.load(args.cache, weights_only=True)
    else:
        cache = collect(ck, args.data, args.queries, args.seed, args.micro_batch, args.rules)
        if args.cache:
            torch.save(cache, args.cache)
    d = _stack(cache["batches"])
    n = len(d["answer"])
    order = torch.from_numpy(np.random.default_rng(args.seed).permutation(n))
    halves = [order[: n // 2], order[n // 2:]]
    coef = cache["coefficients"]
    stored = {"psi": (cache["eps"], cache["beta"])}  # chosen by the composite on its own valid subset
    variants = {"stored": None, "grid": ["psi"], "grid+pair": ["psi", "pair"], "grid+recip": ["psi", "recip"],
                "grid+both": ["psi", "pair", "recip"]}
    has_rules = "rules" in d
    if has_rules:
        variants["grid+rules"] = ["psi", "rules"]
    rows = []
    seconds = cache["seconds"]
    halves_mix = [Mix(_subset(d, h), coef) for h in halves]
    del cache, d  # the halves hold copies: keep memory to about twice the parts
    mixes = [(halves_mix[0], halves_mix[1]), (halves_mix[1], halves_mix[0])]
    context = {"members": [[100 * m.mrr_of(m.d["f"][i]) for m in halves_mix] for i in range(len(coef))],
               "ensemble without prior": [100 * m.mrr({}) for m in halves_mix],
               "prior alone": [100 * m.mrr_of(m.d["psi"]) for m in halves_mix],
               **({"rules alone": [100 * m.mrr_of(m.d["rules"]) for m in halves_mix]} if has_rules else {})}
    print("on half 1, half 2 (nothing chosen):", json.dumps(context), flush=True)
    grid = [choose(mixes[a][0], ["psi"], {}) for a in range(2)]  # the composite's form, chosen on each half
    for name, feats in list(variants.items()) + [("per-relation β", "per")]:
        if args.variants and name not in args.variants:
            continue
        held = []
        chosen = []
        for a in range(2):
            pick, judge = mixes[a]
            if feats is None:
                params, per = stored, None
            elif feats == "per":
                params, per = grid[a], choose_per_relation(pick, grid[a], args.min_per_relation)
            elif feats == ["psi"]:
                params, per = grid[a], None
            else:  # the extra features searched with ψ's (ε, β) of the grid row as the start
                params, per = choose(pick, feats[1:] + ["psi"], grid[a]), None
            held.append(judge.mrr(params, per))
            chosen.append({"params": {k: list(v) for k, v in params.items()},
                           "per_relation": len(per) if per else 0, "mrr_on_choosing_half": pick.mrr(params, per)})
        rows.append({"mix": name, "held_out_mrr (on half 2 chosen on half 1, on half 1 chosen on half 2)":
                     [100 * h for h in held], "mean": 50 * sum(held), "chosen": chosen})
        print(f"{name:16s} held-out MRR {100 * held[0]:.2f} / {100 * held[1]:.2f}  mean {50 * sum(held):.2f}  "
              f"{chosen}", flush=True)
    result = {"checkpoint": args.checkpoint, "data": args.data, "queries": n, "seed": args.seed,
              "scoring_seconds": seconds, "feature_lambda": FEATURE_LAMBDA,
              "context": context, "rows": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
