"""Building a composite model (:mod:`tpar.model.composite`) and choosing it on valid: ``tpar ensemble``.

Given n trained checkpoints of one data set (the same relations and data fingerprint) and a setting:

1. each member's temperature T_i is its stored calibration's for the setting (``tpar calibrate``), else fitted
   now on (a seeded subset of) valid;
2. with ``prior``: the history prior's ψ is the recurrency baseline fitted on valid as ``tpar baseline`` fits
   it (:func:`tpar.evaluation.baselines.fit_recurrency`: λ and α per relation, on a seeded subset);
3. every candidate is scored on the same valid questions in one pass (each member and the prior score each
   batch once; :func:`score_candidates`): each member alone, each member with the prior at every (ε, β) of
   :data:`EPS_GRID` × :data:`BETA_GRID` (or the grids given), and with several members their ensemble, alone and
   with the prior (the candidates of ``benchmarks/posthoc_levers.py``);
4. the composite written is the candidate *that uses every member given* with the best valid MRR
   (realistic ties, time-aware filter, both directions) -- the plain ensemble, or the ensemble with the prior
   at its best (ε, β); the other candidates' valid figures are kept in the selection record, test is never
   looked at;
4b. with ``weights``: the members' weights are searched on the same valid questions (:func:`search_weights`:
   whole-number weights 0..:data:`MAX_WEIGHT`, greedy steps of one from the equal weights, then the prior's
   (ε, β) grid again at the weights found), each member's scores kept in memory (at most
   :data:`WEIGHT_SEARCH_BYTES`); the weighted candidate replaces the equal one only when its valid MRR is higher,
   and a member whose weight falls to 0 is left out of the composite (said in the report);
5. the composite's own temperature and answer-set thresholds are fitted on valid
   (:func:`tpar.evaluation.calibration.calibrate`).

Every candidate's score is :func:`tpar.model.composite.combine_scores` of the same parts, so the valid MRR
recorded for the chosen candidate is the composite's own (``tpar evaluate --split valid`` reproduces it).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from tpar.data.kg import TemporalKG
from tpar.errors import DataError
from tpar.evaluation.baselines import RecurrencyBaseline, fit_recurrency
from tpar.evaluation.calibration import (UNBOUNDED_SHARPENING, calibrate, collect, fit_temperature, stored,
                                         trusted_temperature)
from tpar.evaluation.protocol import evaluate
from tpar.evaluation.ranks import HITS_AT, filtered_ranks
from tpar.graph.background import Background
from tpar.graph.queries import QueryBatch, Setting
from tpar.model.checkpoint import Checkpoint, hardware
from tpar.model.composite import (BETA_RANGE, EPS_RANGE, CompositeCheckpoint, HistoryPrior, combine_scores,
                                  member_coefficients, normalised_weights)
from tpar.model.device import resolve_device
from tpar.model.ranker import ModelRanker

#: the prior's ε and β tried on valid
EPS_GRID = (1e-4, 1e-3, 1e-2, 1e-1)
BETA_GRID = (0.05, 0.1, 0.2, 0.4, 0.8)
#: valid questions the recurrency prior is fitted on (a seeded subset), as benchmarks/posthoc_levers.py fits it
PRIOR_QUERIES = 5000
#: the weight search (``weights``): each member's weight a whole number from 0 to this (then normalised)
MAX_WEIGHT = 4
#: ... and at most this many greedy steps
MAX_WEIGHT_STEPS = 24
#: ... keeping every member's scores (float32) and ψ (float64) of the valid questions in at most this many bytes
WEIGHT_SEARCH_BYTES = 6 * 2 ** 30


@dataclass(frozen=True)
class Candidate:
    """One combination tried on valid: the members it averages (0-based) and the prior's (ε, β) or none."""

    members: tuple[int, ...]
    eps: float | None = None
    beta: float | None = None
    weights: tuple[int, ...] | None = None  # whole-number weights of ``members`` (searched on valid), or equal

    @property
    def name(self) -> str:
        if self.weights is not None:
            who = "weighted (" + ", ".join(f"{w}×model {i + 1}" for i, w in zip(self.members, self.weights)) + ")"
        else:
            who = "ensemble" if len(self.members) > 1 else f"model {self.members[0] + 1}"
        return who + (f" + prior(eps={self.eps:g}, beta={self.beta:g})" if self.eps is not None else "")

    @property
    def shares(self) -> tuple[float, ...] | None:
        """The weights a composite of this candidate stores (Σ = 1), None for equal ones."""
        return normalised_weights(self.weights) if self.weights is not None else None

    def scores(self, f: list[torch.Tensor], temperatures: list[float], psi: torch.Tensor | None) -> torch.Tensor:
        coef = member_coefficients([temperatures[i] for i in self.members], self.shares)
        with_prior = self.eps is not None
        return combine_scores([f[i] for i in self.members], coef, psi if with_prior else None,
                              self.eps if with_prior else 1.0, self.beta if with_prior else 0.0)


def candidates(n: int, prior: bool, eps_grid: tuple[float, ...] = EPS_GRID,
               beta_grid: tuple[float, ...] = BETA_GRID) -> list[Candidate]:
    """Each member alone and (``prior``) with the prior at every (ε, β) of the grids; with n > 1 the ensemble of
    all, alone and with the prior."""
    grid = list(itertools.product(eps_grid, beta_grid)) if prior else []
    groups = [(i,) for i in range(n)] + ([tuple(range(n))] if n > 1 else [])
    return [c for g in groups for c in [Candidate(g)] + [Candidate(g, e, b) for e, b in grid]]


class PartsRanker:
    """Scores each batch with every member and each named extra once and keeps them in :attr:`last`
    (``{"f": [member scores (B, E)], name: extra(batch, background)}``) for a callback of
    :func:`~tpar.evaluation.protocol.evaluate`'s ``on_scores``; the evaluator gets the first member's scores.
    What :func:`score_candidates` (extras: the prior's ψ) and the prior-mix experiment (more features) read."""

    name = "parts"

    def __init__(self, rankers: list[ModelRanker],
                 extras: dict[str, Callable[[QueryBatch, Background], torch.Tensor]] | None = None) -> None:
        self.rankers, self.extras = rankers, dict(extras or {})
        self.last: dict | None = None

    def score(self, batch: QueryBatch, background: Background) -> torch.Tensor:
        f = [r.score(batch, background) for r in self.rankers]
        self.last = {"f": f, **{k: fn(batch, background) for k, fn in self.extras.items()}}
        return f[0]


class _Tally:
    """One candidate's realistic ranks gathered batch by batch, and its MRR and Hits@k (fractions) over them:
    the one computation behind :func:`score_candidates` and :func:`cached_figures`."""

    def __init__(self) -> None:
        self.rr: list[np.ndarray] = []
        self.hits: dict[int, list[np.ndarray]] = {k: [] for k in HITS_AT}

    def add(self, scores: torch.Tensor, answer: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> None:
        o, p = filtered_ranks(scores, answer, rows, cols)
        real = (o + p) / 2
        self.rr.append((1.0 / real).numpy())
        for k in HITS_AT:
            self.hits[k].append((real <= k).numpy())

    def figures(self, queries: int) -> dict:
        return {"mrr": float(np.concatenate(self.rr).mean()),
                **{f"hits@{k}": float(np.concatenate(self.hits[k]).mean()) for k in HITS_AT}, "queries": queries}


def score_candidates(kg: TemporalKG, members: list, temperatures: list[float], prior: RecurrencyBaseline | None,
                     cands: list[Candidate], setting: Setting | str, split: str = "valid", *, max_queries: int = 0,
                     seed: int = 0, micro_batch: int = 16, progress: bool = False,
                     on_batch: Callable[[int, int], None] | None = None,
                     keep_parts: list | None = None, device: str | torch.device = "cpu") -> dict[str, dict]:
    """Every candidate's realistic MRR and Hits@k (fractions) on ``split`` (a seeded subset of ``max_queries``
    when > 0), from one pass in which each member (a TPAR model) and the prior score each batch once.
    ``keep_parts``: a list that receives each batch's (f, ψ, answers, filter rows, filter cols), for
    :func:`search_weights`. ``device``: where the members run (their scores come back to the CPU, where the
    prior and the candidates are computed)."""
    rankers = [ModelRanker(m, device, micro_batch=micro_batch) for m in members]
    parts = PartsRanker(rankers, {"psi": lambda b, bg: prior.score(b, bg).double()} if prior is not None else {})
    tallies = {c.name: _Tally() for c in cands}

    def keep(batch: QueryBatch, _scores: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> None:
        f, psi = parts.last["f"], parts.last.get("psi")
        if keep_parts is not None:
            keep_parts.append((f, psi, batch.answer, rows, cols))
        for c in cands:
            tallies[c.name].add(c.scores(f, temperatures, psi), batch.answer, rows, cols)

    res = evaluate(kg, parts, setting, split, batch_size=64, progress=progress, max_queries=max_queries, seed=seed,
                   on_scores=keep, on_batch=on_batch)
    return {c.name: tallies[c.name].figures(res.num_queries) for c in cands}


def cached_figures(cache: list, cand: Candidate, temperatures: list[float]) -> dict:
    """A candidate's realistic MRR and Hits@k on the questions of ``cache`` (:func:`score_candidates`'
    ``keep_parts``), computed as :func:`score_candidates` computes them."""
    tally = _Tally()
    for f, psi, answer, rows, cols in cache:
        tally.add(cand.scores(f, temperatures, psi), answer, rows, cols)
    return tally.figures(int(sum(len(a) for _, _, a, _, _ in cache)))


def search_weights(cache: list, temperatures: list[float], start: Candidate,
                   prior_grid: list[tuple[float, float]], say: Callable[[str], None] = lambda text: None
                   ) -> tuple[Candidate, dict[str, dict]]:
    """Member weights chosen on the cached valid questions: from ``start`` (the equal ensemble, with or without
    the prior), each step tries every member's weight one up or one down (whole numbers 0..:data:`MAX_WEIGHT`,
    not all 0; proportional ones tried once) and keeps the best when it raises the valid MRR; then the prior's
    (ε, β) of ``prior_grid`` are tried again at the weights found. Without the prior (``start`` has none and
    ``prior_grid`` is empty) at least two models keep a weight: one model alone is that model, not a composite.
    Returns (the best candidate, the figures of every candidate tried, by name)."""
    n = len(start.members)
    least = 1 if (start.eps is not None or prior_grid) else min(2, n)
    tried: dict[str, dict] = {}
    seen: set[tuple[int, ...]] = set()

    def candidate(w: tuple[int, ...], eps, beta) -> Candidate:
        idx = tuple(i for i in range(n) if w[i] > 0)
        return Candidate(idx, eps, beta, tuple(w[i] for i in idx))

    def score(c: Candidate) -> float:
        if c.name not in tried:
            tried[c.name] = cached_figures(cache, c, temperatures)
        return tried[c.name]["mrr"]

    def reduced(w: tuple[int, ...]) -> tuple[int, ...]:
        g = np.gcd.reduce([x for x in w if x])
        return tuple(x // g for x in w)

    w = (1,) * n
    seen.add(w)
    best = candidate(w, start.eps, start.beta)
    best_mrr = score(best)
    for step in range(MAX_WEIGHT_STEPS):
        moves = []
        for i in range(n):
            for d in (1, -1):
                w2 = list(w)
                w2[i] += d
                w2 = tuple(w2)
                if not (0 <= w2[i] <= MAX_WEIGHT) or sum(x > 0 for x in w2) < least or reduced(w2) in seen:
                    continue
                seen.add(reduced(w2))
                moves.append(candidate(w2, start.eps, start.beta))
        if not moves:
            break
        top = max(moves, key=score)
        if score(top) <= best_mrr:
            break
        best, best_mrr = top, score(top)
        w = tuple(dict(zip(top.members, top.weights)).get(i, 0) for i in range(n))
        say(f"weights step {step + 1}: {best.name} (valid MRR {100 * best_mrr:.2f})")
    for eps, beta in prior_grid:
        c = Candidate(best.members, eps, beta, best.weights)
        if score(c) > best_mrr:
            best, best_mrr = c, score(c)
    return best, tried


def member_temperature(ck: Checkpoint, kg: TemporalKG, setting: str, *, max_queries: int = 2000,
                       seed: int = 0, device: str | torch.device = "cpu",
                       micro_batch: int = 16) -> tuple[float, str]:
    """(T, where it comes from): the stored calibration's temperature for ``setting``, else one fitted now on
    valid (a seeded subset of ``max_queries``)."""
    cal = stored(ck.extra, setting)
    if cal is not None:
        return cal.temperature, f"stored calibration (fitted on {cal.queries:,} {cal.split} questions)"
    logits, answers = collect(kg, ModelRanker(ck.build_model("cpu"), device, micro_batch=micro_batch), setting, "valid",
                              max_queries=max_queries, seed=seed)
    t, refused = trusted_temperature(fit_temperature(logits, answers), logits, answers)
    return t, (f"fitted now on {len(answers):,} valid questions (seed {seed})"
               + (f"; {UNBOUNDED_SHARPENING}, so T = 1 is used" if refused else ""))


@dataclass
class EnsembleReport:
    """What :func:`build_composite` did: every candidate's valid figures, the choice, the timings."""

    candidates: dict[str, dict]
    chosen: str
    eligible: list[str]
    temperatures: list[float]  # of every model given, in the order given (the composite keeps those in ``kept``)
    temperature_sources: list[str]
    seconds: dict[str, float]
    eps: float | None = None
    beta: float | None = None
    eps_grid: tuple[float, ...] = ()
    beta_grid: tuple[float, ...] = ()
    dropped: list[str] = field(default_factory=list)  # members the weight search gave weight 0 (left out)
    names: list[str] = field(default_factory=list)  # the models as given: "model i" of a candidate is names[i - 1]
    kept: list[int] = field(default_factory=list)  # 0-based given positions the composite keeps, in its order

    def legend(self) -> list[str]:
        """One line per model given, tying the candidates' numbering (as given) to the composite's formula
        (fᵢ numbers the kept models), e.g. ``"model 2 = b.tpar (temperature 0.972): f₁ of the composite"``."""
        sub = "₁₂₃₄₅₆₇₈₉"
        out = []
        for i, name in enumerate(self.names):
            t = f" (temperature {self.temperatures[i]:.3g})" if i < len(self.temperatures) else ""
            if i in self.kept:
                j = self.kept.index(i)
                role = f"f{sub[j] if j < 9 else j + 1} of the composite"
            else:
                role = "left out of the composite"
            out.append(f"model {i + 1} = {name}{t}: {role}")
        return out

    def grid_edges(self) -> list[str]:
        """Where the chosen prior lies on an edge of a grid that has more than one value -- a value beyond it
        may do better on valid -- e.g. ``["β = 0.8 is the largest tried"]``; empty without a prior."""
        out = []
        for sym, v, grid in (("β", self.beta, self.beta_grid), ("ε", self.eps, self.eps_grid)):
            if v is None or len(grid) < 2:
                continue
            if v == max(grid):
                out.append(f"{sym} = {v:g} is the largest tried")
            elif v == min(grid):
                out.append(f"{sym} = {v:g} is the smallest tried")
        return out

    def best_other(self) -> tuple[str, dict] | None:
        """The best candidate that is not eligible (a single member, alone or with the prior), when it beats the
        chosen one on valid: worth saying, since the composite was asked to use every member."""
        others = {k: v for k, v in self.candidates.items() if k not in self.eligible}
        if not others:
            return None
        k = max(others, key=lambda n: others[n]["mrr"])
        return (k, others[k]) if others[k]["mrr"] > self.candidates[self.chosen]["mrr"] else None


def build_composite(kg: TemporalKG, checkpoints: list[Checkpoint], names: list[str], setting: Setting | str, *,
                    prior: bool = True, valid_queries: int = 0, prior_queries: int = PRIOR_QUERIES, seed: int = 0,
                    calibration_queries: int = 2000, progress: bool = False, command: str = "",
                    on_step: Callable[[str], None] | None = None, eps_grid: tuple[float, ...] = EPS_GRID,
                    beta_grid: tuple[float, ...] = BETA_GRID,
                    weights: bool = False, device: str | torch.device = "cpu",
                    micro_batch: int = 16) -> tuple[CompositeCheckpoint, EnsembleReport]:
    """The composite of ``checkpoints`` chosen on ``kg``'s valid split (the module docstring), and its report.
    Refused (:class:`DataError`) when a checkpoint was not trained on ``kg`` (its valid split would not be the
    one it was selected on) or ``kg`` has no valid facts. ``eps_grid`` / ``beta_grid``: the prior's (ε, β) tried
    (positive; the report's :meth:`EnsembleReport.grid_edges` says when the choice lies on an edge). ``weights``:
    search the members' weights on valid too (step 4b of the module docstring; refused before any scoring when
    the scores it keeps would pass :data:`WEIGHT_SEARCH_BYTES`). ``device`` / ``micro_batch``: where and in what
    micro-batches the models score (a GPU chooses the same composite as the CPU, faster)."""
    setting = Setting.parse(setting)
    device = resolve_device(device)  # a GPU asked for where there is none: refused before any work
    eps_grid, beta_grid = check_grid(eps_grid, "ε"), check_grid(beta_grid, "β")
    check_inputs(kg, checkpoints, names, micro_batch)
    say = on_step or (lambda text: None)
    n, search = len(checkpoints), weights and len(checkpoints) > 1
    if search:
        check_search_memory(kg, n, prior, valid_queries)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    temps, sources = [], []
    for name, ck in zip(names, checkpoints):
        t, src = member_temperature(ck, kg, setting.value, seed=seed, device=device, micro_batch=micro_batch)
        temps.append(t)
        sources.append(src)
        say(f"{name}: temperature {t:.3f} ({src})")
    seconds["temperatures"] = time.perf_counter() - t0
    rec = None
    if prior:
        t0 = time.perf_counter()
        rec = fit_recurrency(kg, setting, split="valid", max_queries=prior_queries, seed=seed, progress=progress)
        seconds["prior_fit"] = time.perf_counter() - t0
        say(f"history prior: recurrency fitted on {rec.fit_info.get('queries', 0):,} valid questions "
            f"(λ {rec.lmbda:g}, α {rec.alpha:g}, {len(rec.per_relation)} relations with their own)")
    cands = candidates(len(checkpoints), prior, eps_grid, beta_grid)
    eligible = [c.name for c in cands if len(c.members) == n]
    t0 = time.perf_counter()
    cache: list | None = [] if search else None  # each batch's scores, for the weight search
    scored = score_candidates(kg, [ck.build_model("cpu") for ck in checkpoints], temps, rec, cands, setting, "valid",
                              max_queries=valid_queries, seed=seed, progress=progress, keep_parts=cache,
                              device=device, micro_batch=micro_batch)
    seconds["selection"] = time.perf_counter() - t0
    chosen = max(eligible, key=lambda k: scored[k]["mrr"])
    pick = next(c for c in cands if c.name == chosen)
    if search:
        t0 = time.perf_counter()
        say(f"searching the models' weights on the same {scored[chosen]['queries']:,} valid questions, from "
            f"{chosen} (MRR {100 * scored[chosen]['mrr']:.2f})")
        grid = list(itertools.product(eps_grid, beta_grid)) if prior else []
        best, tried = search_weights(cache, temps, pick, grid, say)
        cache.clear()
        scored.update(tried)
        eligible += [k for k in tried if k not in eligible]  # a weighted candidate chooses its members itself
        unequal = best.weights is not None and (len(best.members) < n or len(set(best.weights)) > 1)
        if unequal and tried[best.name]["mrr"] > scored[chosen]["mrr"]:
            chosen, pick = best.name, best
        seconds["weight_search"] = time.perf_counter() - t0
    keep = list(pick.members) if pick.weights is not None else list(range(n))  # member i is given model keep[i]
    dropped = [names[i] for i in range(n) if i not in keep]
    say(f"chosen on valid: {chosen} (MRR {100 * scored[chosen]['mrr']:.2f})"
        + (f"; left out (weight 0): {', '.join(dropped)}" if dropped else ""))
    history = HistoryPrior(rec, pick.eps, pick.beta) if pick.eps is not None else None
    selection = {"split": "valid", "queries": next(iter(scored.values()))["queries"],
                 "subset": valid_queries or 0, "seed": seed, "metric": "realistic MRR, time-aware filter, both directions",
                 "chosen": chosen, "eligible": "candidates that use every member" + (
                     ", or whose weights were searched (those may leave a member out)" if search else ""),
                 "candidates": scored,
                 "eps_grid": list(eps_grid) if prior else [], "beta_grid": list(beta_grid) if prior else [],
                 "prior_asked": bool(prior), "weights_searched": bool(search),
                 "given": list(names), "kept": keep, "left_out": dropped, "temperature_sources": sources}
    extra = {"seed": seed, "hardware": hardware(), "device": str(device), "command": command,
             "prior_fit": rec.fit_info if rec is not None else None,
             "member_digests": [checkpoints[i].digest for i in keep]}
    composite = CompositeCheckpoint.assemble([checkpoints[i] for i in keep], [temps[i] for i in keep], history,
                                             setting=setting.value, selection=selection,
                                             member_names=[names[i] for i in keep], extra=extra,
                                             member_weights=list(pick.weights) if pick.weights is not None else None)
    t0 = time.perf_counter()
    ranker = ModelRanker(composite.build_model("cpu"), device, micro_batch=micro_batch)
    cal = calibrate(kg, ranker, setting, split="valid", max_queries=calibration_queries, seed=seed)
    composite.extra["calibration"] = {setting.value: cal.to_dict()}
    seconds["calibration"] = time.perf_counter() - t0
    composite.extra["seconds"] = sum(seconds.values())
    composite.extra["build_seconds"] = dict(seconds)
    say(f"composite calibrated on {cal.queries:,} valid questions: temperature {cal.temperature:.3f}")
    return composite, EnsembleReport(scored, chosen, eligible, temps, sources, seconds,
                                     pick.eps, pick.beta, eps_grid if prior else (), beta_grid if prior else (),
                                     dropped, list(names), keep)


def check_inputs(kg: TemporalKG, checkpoints: list[Checkpoint], names: list[str], micro_batch: int) -> None:
    """Refuse (:class:`DataError`) what cannot make a composite of ``kg``, before any scoring: no model, a
    composite given as a model, a model of other data, no valid facts to choose on, a micro-batch below 1."""
    if micro_batch < 1:
        raise DataError(f"the micro-batch must be 1 or more questions, not {micro_batch}")
    if not checkpoints:
        raise DataError("no checkpoint to combine")
    if "valid" in kg.missing_splits or not len(kg.facts("valid")):
        raise DataError(f"{kg.name} has no valid facts: a composite is chosen and calibrated on valid")
    for name, ck in zip(names, checkpoints):
        if ck.kind != "single":
            raise DataError(f"{name} is itself a composite: combine its members instead", file=name)
        if ck.data_fingerprint != kg.fingerprint:
            raise DataError(f"{name} was trained on {ck.data_name} (fingerprint {ck.data_fingerprint[:12]}), not on "
                            f"this data ({kg.name}, {kg.fingerprint[:12]}): a composite is chosen on the valid split of "
                            "the data its models were trained on", file=name)
        ck.check_fits(kg)


def check_search_memory(kg: TemporalKG, n: int, prior: bool, valid_queries: int) -> None:
    """Refuse (:class:`DataError`, naming the ``--valid-queries`` that would fit) a weight search whose kept
    scores -- each of ``n`` members' float32 scores and, with the prior, ψ in float64, of every valid question
    (both directions; ``valid_queries`` of them when > 0) -- would pass :data:`WEIGHT_SEARCH_BYTES`."""
    q = 2 * len(kg.facts("valid"))
    q = min(q, valid_queries) if valid_queries else q
    per_query = kg.num_entities * (4 * n + (8 if prior else 0))
    if q * per_query > WEIGHT_SEARCH_BYTES:
        fits = max(1, int(WEIGHT_SEARCH_BYTES / per_query))
        raise DataError(f"the weight search keeps every model's scores of the {q:,} valid questions in memory: "
                        f"{q * per_query / 2 ** 30:.1f} GB, more than the {WEIGHT_SEARCH_BYTES / 2 ** 30:.0f} GB "
                        f"allowed; choose on a seeded subset (--valid-queries {fits:,} or fewer) or leave the weights "
                        "equal")


def check_grid(values, what: str) -> tuple[float, ...]:
    """A grid of the prior's ε or β: finite positive numbers, sorted, each once (a :class:`DataError` otherwise,
    also for two values that print alike to 6 significant digits: candidates are named by them)."""
    out = []
    for v in values:
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise DataError(f"the prior's {what} grid holds {v!r}, which is not a number") from None
        if not (np.isfinite(x) and x > 0):
            raise DataError(f"the prior's {what} grid holds {v!r}: each value must be a finite number above 0")
        lo, hi = EPS_RANGE if what == "ε" else BETA_RANGE  # what a composite file may store (HistoryPrior)
        if not lo <= x <= hi:
            raise DataError(f"the prior's {what} grid holds {v!r}: each value must lie in {lo:g}..{hi:g}, as a "
                            "composite stores it")
        out.append(x)
    if not out:
        raise DataError(f"the prior's {what} grid is empty")
    grid = tuple(sorted(set(out)))
    for a, b in zip(grid, grid[1:]):
        if f"{a:g}" == f"{b:g}":
            raise DataError(f"the prior's {what} grid holds {a!r} and {b!r}, which both print as {a:g}: give values "
                            "that differ within 6 significant digits")
    return grid
