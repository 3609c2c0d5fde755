"""How sure is "p = 0.7"? Temperature scaling and split-conformal answer sets for TPAR's answer
distribution (Eq. 10's softmax over the scores f(q, e) of Eq. 9).

The distribution calibrated is the one the evaluation ranks with: per query (s, r, ?, t) with answer
a, the softmax over every entity except the query's *other* known answers (the time-aware filter;
they are right too, so they are not competitors). With a temperature T:
``p_e = exp(f_e / T) / Σ_e' exp(f_e' / T)``.

* **Temperature** (Guo et al. 2017): the T > 0 minimising the negative log-likelihood of the true
  answers of (a seeded subset of) the valid split; one per setting.
* **Top-answer map**, where temperature scaling is not enough (the NLL-optimal T need not make the top
  answer's probability match how often it is right): a monotone map g of the top probability, fitted on
  the same valid questions by isotonic regression of "the top answer is right" on it (pool adjacent
  violators, then blocks merged to at least :data:`TOP_MAP_MIN_BLOCK` questions each; linear between
  the blocks' (mean probability, accuracy) knots). Applied, the top answer gets g(p₁) and every other
  entity its share of the rest (p_e · (1 − g) / (1 − p₁)): the order of the answers is kept (g never
  drops the top below the second) and a top tied with another answer is left alone. Kept only when it
  helps on questions it was not fitted on: fitted on one half of the split and measured on the other,
  both ways, it must lower the ECE by :data:`TOP_MAP_GAIN` on average. The calibration says which
  calibrator the probabilities come from (:attr:`Calibration.method`).
* **Metrics**: NLL = mean −log p_a; multi-class Brier = mean Σ_e (p_e − [e = a])²; top-1 ECE with
  15 equal-width bins = Σ_b (n_b / n)·|accuracy_b − confidence_b|, where confidence = max_e p_e and
  accuracy = [argmax_e p_e = a].
* **Conformal sets** (split conformal, Vovk et al.; Angelopoulos & Bates 2021): nonconformity
  1 − p_a on the valid queries; for a level 1 − α the threshold q̂ is their ⌈(n + 1)(1 − α)⌉-th
  smallest; a new question's set is {e : 1 − p_e ≤ q̂}, i.e. p_e ≥ 1 − q̂. If valid and test
  questions are exchangeable, the answer lies in the set with probability ≥ 1 − α. Beside the coverage,
  the sets' size distribution on the split (mean, median, 90th percentile: :func:`set_size_stats`) says
  what a user gets: a mean of 325 can hide a median of 4.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch

from tpar.data.kg import TemporalKG
from tpar.data.relation_matching import as_loaded
from tpar.evaluation.protocol import Ranker, evaluate
from tpar.graph.queries import QueryBatch, Setting
from tpar.errors import plural

ECE_BINS = 15
#: the temperature is fitted within these bounds (projected Newton on 1/T: :func:`fit_temperature`)
T_BOUNDS = (1e-3, 1e3)
#: a fit that runs to T_BOUNDS[0] is not used: the fitting questions' NLL kept falling as T -> 0 (each answer was
#: a top-scored one, often tied with others at the same score), which says nothing about how sure the model is on
#: other questions -- a guessing model got "> 99.9%" on a score of 0.02 (walk-through 37); T = 1 (raw softmax) instead
UNBOUNDED_SHARPENING = "the fit sharpened the scores without limit (T -> 0)"


def at_lower_bound(t: float) -> bool:
    """Whether a temperature is :data:`T_BOUNDS`' lower bound (up to the fit's last step): a fit that went there."""
    return t <= 1.001 * T_BOUNDS[0]


#: below this many fitting questions a calibration is reported as rough
MIN_RELIABLE_QUERIES = 100
#: a calibrated NLL above (1 − this) · log E (the uniform guess's) is reported as guessing
UNINFORMATIVE_GAIN = 0.05
#: a top-answer map is kept when its cross-fitted ECE gain on the split is at least this
TOP_MAP_GAIN = 0.005
#: each knot of a top-answer map rests on at least this many questions
TOP_MAP_MIN_BLOCK = 50
#: at most this many knots are stored
TOP_MAP_MAX_KNOTS = 200
#: coverage levels stored with a calibration (the app and ``tpar predict --coverage`` choose among them)
LEVELS = (0.8, 0.9, 0.95)


@dataclass
class CalibrationMetrics:
    ece: float
    brier: float
    nll: float
    accuracy: float         # top-1 accuracy (Hits@1 with ties broken by entity order)
    confidence: float       # mean top-1 probability
    queries: int

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Reliability:
    """Per ECE bin: lower edge, queries, mean confidence, accuracy (for a reliability diagram)."""

    edges: list[float]
    counts: list[int]
    confidence: list[float]
    accuracy: list[float]


@dataclass
class Calibration:
    """A fitted temperature for one setting, with its valid figures before and after scaling and the
    conformal thresholds (probability a set member needs, per coverage level)."""

    setting: str
    temperature: float
    split: str
    queries: int
    seed: int
    before: CalibrationMetrics
    after: CalibrationMetrics
    thresholds: dict[str, float] = field(default_factory=dict)   # "0.9" -> minimum calibrated probability
    entities: int = 0       # candidate answers per question (0: not recorded, in calibrations made before)
    set_sizes: dict[str, dict[str, float]] = field(default_factory=dict)  # level -> size stats on ``split``
    top_map: list[tuple[float, float]] = field(default_factory=list)  # (top probability, accuracy) knots; [] = none
    top_map_gain: float = 0.0   # the map's cross-fitted ECE gain on ``split`` (whether kept or not)
    data_fingerprint: str = ""  # the data it was fitted on ("": not recorded -- the model's training data)
    sharpening_refused: bool = False  # the fit ran to T_BOUNDS[0] and T = 1 is used instead (UNBOUNDED_SHARPENING)

    @property
    def method(self) -> str:
        """Which calibrator the probabilities come from, in words."""
        if self.top_map:
            return (f"temperature T = {self.temperature:.3f}, then a map of the top answer's probability "
                    f"({len(self.top_map)} knots; cross-fitted ECE gain {self.top_map_gain:.3f})")
        return f"temperature T = {self.temperature:.3f}"

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """The calibrated probabilities of ``logits`` (…, E): softmax(f / T), then the top-answer map when fitted."""
        return probabilities(logits, self.temperature, self.top_map)

    def to_dict(self) -> dict:
        return {"setting": self.setting, "temperature": self.temperature, "split": self.split,
                "queries": self.queries, "seed": self.seed, "before": self.before.to_dict(),
                "after": self.after.to_dict(), "thresholds": dict(self.thresholds), "entities": self.entities,
                "set_sizes": {k: dict(v) for k, v in self.set_sizes.items()},
                "top_map": [[x, y] for x, y in self.top_map], "top_map_gain": self.top_map_gain,
                "data_fingerprint": self.data_fingerprint, "sharpening_refused": self.sharpening_refused}

    @classmethod
    def from_dict(cls, d: dict) -> "Calibration":
        """A stored calibration, every number checked (a ValueError names the first that is not finite or
        out of its range: a temperature within T_BOUNDS, thresholds and shares 0..1, counts at least 0)."""
        for key, names in (("setting", ("extrapolation", "interpolation")), ("split", ("train", "valid", "test"))):
            if d[key] not in names:  # shown to users: only names this code writes
                raise ValueError(f"{key} {str(d[key])[:40]!r} is not one of {', '.join(names)}")
        c = cls(d["setting"], float(d["temperature"]), d["split"], int(d["queries"]), int(d.get("seed", 0)),
                CalibrationMetrics(**d["before"]), CalibrationMetrics(**d["after"]),
                {str(k): float(v) for k, v in d.get("thresholds", {}).items()}, int(d.get("entities", 0)),
                {str(k): {str(a): float(b) for a, b in v.items()} for k, v in d.get("set_sizes", {}).items()},
                [(float(x), float(y)) for x, y in d.get("top_map", [])[:TOP_MAP_MAX_KNOTS + 1]],
                float(d.get("top_map_gain", 0.0)), str(d.get("data_fingerprint", ""))[:64],
                d.get("sharpening_refused", False) is True)
        c.check()
        if at_lower_bound(c.temperature):  # stored before such fits were refused: its thresholds assume it
            raise ValueError(f"temperature {c.temperature:g} is at its lower bound: {UNBOUNDED_SHARPENING}, which is "
                             "not trusted")
        return c

    def check(self) -> None:
        """ValueError naming the first stored number that is not finite or not in its range."""
        def need(name: str, value: float, lo: float, hi: float = math.inf) -> None:
            if not (math.isfinite(value) and lo <= value <= hi):
                raise ValueError(f"{name} {value!r} is not a finite number in {lo:g}..{hi:g}")

        need("temperature", self.temperature, T_BOUNDS[0], T_BOUNDS[1])
        need("queries", self.queries, 0)
        need("entities", self.entities, 0)
        for level, p in self.thresholds.items():
            if level not in {f"{lv:g}" for lv in LEVELS}:
                raise ValueError(f"coverage level {level!r} is not one of {', '.join(f'{lv:g}' for lv in LEVELS)}")
            need(f"threshold {level}", p, 0.0, 1.0)
        for level, sizes in self.set_sizes.items():
            for name, value in sizes.items():
                need(f"set size {name} at {level}", value, 0.0)
        previous = (-1.0, -1.0)
        for i, (x, y) in enumerate(self.top_map):
            need(f"top-answer map knot {i + 1} probability", x, 0.0, 1.0)
            need(f"top-answer map knot {i + 1} accuracy", y, 0.0, 1.0)
            if x < previous[0] or y < previous[1]:
                raise ValueError(f"top-answer map knot {i + 1} ({x:g}, {y:g}) is not monotone")
            previous = (x, y)
        if len(self.top_map) > TOP_MAP_MAX_KNOTS:
            raise ValueError(f"top-answer map has more than {TOP_MAP_MAX_KNOTS} knots")
        need("top-answer map gain", self.top_map_gain, -1.0, 1.0)
        for tag, m in (("before", self.before), ("after", self.after)):
            for name in ("ece", "brier", "accuracy", "confidence"):
                need(f"{tag} {name}", float(getattr(m, name)), 0.0, 2.0 if name == "brier" else 1.0)
            need(f"{tag} nll", float(m.nll), 0.0)
            need(f"{tag} queries", float(m.queries), 0.0)

    def caveats(self) -> list[str]:
        """What limits these probabilities, in words: too few valid questions to fit on; scores that
        tell the answer apart hardly better than chance (the calibrated NLL within 5% of log E, the
        uniform guess's: the fit then flattens softmax(f / T) towards 1/E); a temperature at a bound."""
        notes = []
        if self.queries < MIN_RELIABLE_QUERIES:
            notes.append(f"The probabilities were calibrated on only {self.queries:,} {self.split} question"
                         f"{'' if self.queries == 1 else 's'} (fewer than {MIN_RELIABLE_QUERIES}): take them as "
                         "rough, and the answer sets as loose.")
        if self.entities > 1 and self.after.nll > (1 - UNINFORMATIVE_GAIN) * math.log(self.entities):
            notes.append(f"On the {self.split} questions the model's scores pick the answer hardly better than a "
                         f"uniform guess among the {self.entities:,} entities (calibrated NLL {self.after.nll:.2f} "
                         f"against {math.log(self.entities):.2f}): the probabilities are near-uniform because the "
                         "model is guessing.")
        elif self.temperature >= 0.999 * T_BOUNDS[1]:
            notes.append(f"Calibration flattened the scores as far as it may (T = {self.temperature:g}, its upper "
                         "bound): the scores carry little information about the answer.")
        if self.sharpening_refused:
            notes.append(f"On the {self.queries:,} {self.split} questions {UNBOUNDED_SHARPENING}: each answer was "
                         "among the top-scored entities, often tied with others, which says nothing about how sure "
                         "the model is elsewhere, so no temperature is applied (T = 1, the raw softmax).")
        if at_lower_bound(self.temperature):
            notes.append(f"Calibration sharpened the scores as far as it may (T = {self.temperature:g}, its lower "
                         "bound): the probabilities are near 0 or 1 and likely overconfident.")
        return notes

    def threshold(self, level: float) -> float:
        """The probability threshold of the stored level nearest ``level`` (exactly one of LEVELS)."""
        key = f"{level:g}"
        if key not in self.thresholds:
            raise KeyError(f"coverage level {level:g} not calibrated (available: {', '.join(self.thresholds)})")
        return self.thresholds[key]


def filtered_logits(scores: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """``scores`` (B, E) with each query's other known answers set to −inf (the time-aware filter)."""
    out = scores.double().clone()
    out[rows, cols] = -math.inf
    return out


def mask_own_entities(z: torch.Tensor, entities: torch.Tensor, self_linked: frozenset[int]) -> list[int]:
    """In place: -inf at each row's own entity (``entities`` (B,), the questions' entities) outside ``self_linked``
    (:meth:`~tpar.data.kg.TemporalKG.self_linked`), in ``z`` (B, E); the rows masked. No fact links such an entity
    to itself, so it is no answer to propose (its score comes from staying there)."""
    own = [b for b, e in enumerate(entities.tolist()) if e not in self_linked]
    z[own, entities[own]] = float("-inf")
    return own


def collect(kg: TemporalKG, ranker: Ranker, setting: Setting | str, split: str, *, max_queries: int = 0,
            seed: int = 0, self_linked: frozenset[int] | None = None,
            on_batch: Callable[[int, int], None] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(filtered scores (n, E) float64, answers (n,)) of ``split``'s queries (a seeded subset of
    ``max_queries`` when > 0), the same queries the evaluation protocol ranks. With ``self_linked`` (the entities
    some fact links to themselves), each question's own entity outside it is left out too, as completion leaves
    it out (:func:`tpar.reasoning.completion.complete`). ``on_batch(done, total)`` after each batch (it may raise
    to stop, e.g. a cancelled training run's calibration)."""
    logits, answers = [], []

    def keep(batch: QueryBatch, scores: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> None:
        z = filtered_logits(scores, rows, cols)
        if self_linked is not None:
            mask_own_entities(z, batch.subject, self_linked)
        logits.append(z)
        answers.append(batch.answer.clone())

    evaluate(kg, ranker, setting, split, progress=False, batch_size=64, max_queries=max_queries, seed=seed,
             on_scores=keep, on_batch=on_batch)
    return torch.cat(logits), torch.cat(answers)


def fit_temperature(logits: torch.Tensor, answers: torch.Tensor, tol: float = 1e-9, max_iter: int = 100) -> float:
    """The temperature T minimising the mean NLL of ``answers`` under softmax(logits / T), within T_BOUNDS.

    With β = 1/T the NLL  L(β) = mean_q [logsumexp_e(β·z_qe) − β·z_qa]  is convex in β, with
    L'(β) = mean_q (E_p[z] − z_a) and L''(β) = mean_q Var_p[z] (p = softmax(β·z)): projected Newton steps on
    β (halved while the loss would rise) reach the minimum in a few passes over the (n, E) logits (L-BFGS on
    log T took up to 58 s for 2,000 × 12,554 logits on one thread, this 5 s, the same T). Each row is shifted
    by its largest finite logit first (L is unchanged; the moments keep their precision under a large common
    offset). Entries that are not finite (−inf: never an answer) get probability 0; an answer whose logit is
    not finite counts as far below every other (−1e30), which drives T to its upper bound; a row with no
    finite entry says nothing about T and is left out (none left: T = 1)."""
    z = logits.detach().double()
    finite = torch.isfinite(z)
    rows = finite.any(1)
    z, finite, answers = z[rows], finite[rows], answers[rows]
    if not len(z):
        return 1.0
    neg_inf = torch.full_like(z, float("-inf"))
    z = z - torch.where(finite, z, neg_inf).max(1, keepdim=True).values
    z0 = torch.where(finite, z, torch.zeros_like(z))
    za = torch.where(finite, z, torch.full_like(z, -1e30)).gather(1, answers.long().view(-1, 1)).squeeze(1)
    lo, hi = 1.0 / T_BOUNDS[1], 1.0 / T_BOUNDS[0]

    def loss_grad_hess(beta: float) -> tuple[float, float, float]:
        s = torch.where(finite, beta * z0, neg_inf)
        lse = torch.logsumexp(s, dim=1)
        p = torch.exp(s - lse.unsqueeze(1))
        m1 = (p * z0).sum(1)
        var = (p * (z0 - m1.unsqueeze(1)) ** 2).sum(1)
        return float((lse - beta * za).mean()), float((m1 - za).mean()), float(var.mean())

    beta = 1.0
    loss, g, h = loss_grad_hess(beta)
    for _ in range(max_iter):
        if g == 0.0:  # flat (e.g. every logit equal): any T fits as well as the current one
            break
        # no curvature left (probabilities all on one entity): head for the bound the slope points to
        step = g / h if h > 1e-300 else (-hi if g < 0 else hi)
        new = min(max(beta - step, lo), hi)
        for _ in range(200):  # backtrack: never accept a higher loss (L is convex: a short enough step descends)
            new_loss, new_g, new_h = loss_grad_hess(new)
            if new_loss <= loss + 1e-15 * abs(loss) or abs(new - beta) <= tol * beta:
                break
            new = beta + (new - beta) / 2
        moved = abs(new - beta)
        beta, loss, g, h = new, new_loss, new_g, new_h
        if moved <= tol * beta:
            break
    return float(min(max(1.0 / beta, T_BOUNDS[0]), T_BOUNDS[1]))


def probabilities(logits: torch.Tensor, temperature: float | None = 1.0,
                  top_map: list[tuple[float, float]] | None = None) -> torch.Tensor:
    """softmax(logits / T) over the last dimension, in float64 (−inf entries get 0), then the top-answer
    map when given (module docstring): the calibrated probabilities of the answers when T (and the map)
    were fitted on valid, the raw softmax when ``temperature`` is None. The one place the product turns
    scores into probabilities (prediction, completion, calibration)."""
    p = torch.softmax(logits.double() / (temperature or 1.0), dim=-1)
    return apply_top_map(p, top_map) if top_map else p


def _interpolate(knots: list[tuple[float, float]], x: torch.Tensor) -> torch.Tensor:
    xs = torch.tensor([k[0] for k in knots], dtype=torch.float64)
    ys = torch.tensor([k[1] for k in knots], dtype=torch.float64)
    if len(knots) == 1:
        return ys.expand_as(x).clone()
    i = torch.searchsorted(xs, x.contiguous()).clamp(1, len(knots) - 1)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    w = ((x - x0) / (x1 - x0).clamp_min(1e-12)).clamp(0.0, 1.0)
    return y0 + w * (y1 - y0)


def apply_top_map(p: torch.Tensor, top_map: list[tuple[float, float]]) -> torch.Tensor:
    """``p`` (…, E) with each row's top probability p₁ mapped to g(p₁) and the others scaled to share
    1 − g(p₁); g is kept at or above what leaves the top answer on top, rows whose top is tied (or
    certain) are left as they are."""
    if p.shape[-1] < 2:
        return p
    two = p.topk(2, dim=-1)
    p1, p2, top = two.values[..., 0], two.values[..., 1], two.indices[..., 0]
    g = _interpolate(top_map, p1)
    g = torch.maximum(g, p2 / (1 - p1 + p2).clamp_min(1e-300))  # the top stays the top
    g = g.clamp(max=1 - 1e-12)
    keep = (p2 >= p1) | (p1 >= 1 - 1e-12)
    g = torch.where(keep, p1, g)
    scale = torch.where(keep, torch.ones_like(p1), (1 - g) / (1 - p1).clamp_min(1e-300))
    out = p * scale.unsqueeze(-1)
    return out.scatter(-1, top.unsqueeze(-1), g.unsqueeze(-1))


def fit_top_map(confidence: torch.Tensor, correct: torch.Tensor,
                min_block: int = TOP_MAP_MIN_BLOCK) -> list[tuple[float, float]]:
    """Isotonic regression of ``correct`` (n,) on ``confidence`` (n,) by pool adjacent violators, blocks
    then merged with a neighbour until each holds ``min_block`` questions (merging adjacent blocks of a
    monotone fit keeps it monotone); one (mean confidence, accuracy) knot per block, at most
    :data:`TOP_MAP_MAX_KNOTS`."""
    n = len(confidence)
    if n == 0:
        return []
    order = torch.argsort(confidence, stable=True)
    xs, ys = confidence[order].tolist(), correct[order].tolist()
    blocks: list[list[float]] = []  # [sum of x, sum of y, count]
    for x, y in zip(xs, ys):
        blocks.append([x, y, 1])
        while len(blocks) > 1 and blocks[-2][1] * blocks[-1][2] > blocks[-1][1] * blocks[-2][2]:
            sx, sy, c = blocks.pop()
            blocks[-1][0] += sx
            blocks[-1][1] += sy
            blocks[-1][2] += c
    need = max(min_block, math.ceil(n / TOP_MAP_MAX_KNOTS))
    merged: list[list[float]] = []
    for b in blocks:
        if merged and merged[-1][2] < need:
            merged[-1] = [merged[-1][0] + b[0], merged[-1][1] + b[1], merged[-1][2] + b[2]]
        else:
            merged.append(list(b))
    if len(merged) > 1 and merged[-1][2] < need:
        last = merged.pop()
        merged[-1] = [merged[-1][0] + last[0], merged[-1][1] + last[1], merged[-1][2] + last[2]]
    return [(sx / c, sy / c) for sx, sy, c in merged]


def _top(p: torch.Tensor, answers: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    conf, top = p.max(1)
    return conf, (top == answers).double()


def _ece(confidence: torch.Tensor, correct: torch.Tensor, bins: int = ECE_BINS) -> float:
    return ece_of(reliability(confidence, correct, bins), len(confidence))


def ece_of(stats: Reliability, n: int) -> float:
    """Top-1 ECE from a reliability diagram of ``n`` questions: Σ_b (n_b / n)·|accuracy_b − confidence_b|."""
    return float(sum(c / max(n, 1) * abs(a - m) for c, a, m in zip(stats.counts, stats.accuracy, stats.confidence) if c))


def cross_fitted_gain(logits: torch.Tensor, answers: torch.Tensor, temperature: float, seed: int = 0) -> float:
    """How much a top-answer map lowers the ECE on questions it was not fitted on: the split's questions
    cut in two seeded halves, the map fitted on each and measured on the other, the two gains averaged."""
    n = len(answers)
    if n < 4 * TOP_MAP_MIN_BLOCK:
        return 0.0
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    halves = (perm[: n // 2], perm[n // 2:])
    p = probabilities(logits, temperature)
    gains = []
    for fit, check in (halves, halves[::-1]):
        knots = fit_top_map(*_top(p[fit], answers[fit]))
        before = _ece(*_top(p[check], answers[check]))
        after = _ece(*_top(apply_top_map(p[check], knots), answers[check]))
        gains.append(before - after)
    return sum(gains) / len(gains)


def metrics(logits: torch.Tensor, answers: torch.Tensor, temperature: float = 1.0,
            bins: int = ECE_BINS, top_map: list[tuple[float, float]] | None = None) -> tuple[CalibrationMetrics, Reliability]:
    """NLL, Brier, top-1 ECE (``bins`` equal-width bins), accuracy and mean confidence."""
    p = probabilities(logits, temperature, top_map)
    n = len(answers)
    idx = torch.arange(n)
    p_true = p[idx, answers]
    nll = float(-torch.log(p_true.clamp_min(1e-300)).mean())
    brier = float(((p ** 2).sum(1) - 2 * p_true + 1).mean())
    conf, top = p.max(1)
    correct = (top == answers).double()
    stats = reliability(conf, correct, bins)
    ece = ece_of(stats, n)
    return CalibrationMetrics(float(ece), brier, nll, float(correct.mean()), float(conf.mean()), n), stats


def reliability(confidence: torch.Tensor, correct: torch.Tensor, bins: int = ECE_BINS) -> Reliability:
    """Equal-width bins of top-1 confidence: counts, mean confidence, accuracy."""
    b = torch.clamp((confidence * bins).long(), max=bins - 1)
    counts, conf, acc = [], [], []
    for i in range(bins):
        m = b == i
        k = int(m.sum())
        counts.append(k)
        conf.append(float(confidence[m].mean()) if k else 0.0)
        acc.append(float(correct[m].mean()) if k else 0.0)
    return Reliability([i / bins for i in range(bins)], counts, conf, acc)


def conformal_threshold(logits: torch.Tensor, answers: torch.Tensor, temperature: float, level: float,
                        top_map: list[tuple[float, float]] | None = None) -> float:
    """The probability a set member needs for coverage ``level``: 1 − q̂, q̂ the ⌈(n+1)·level⌉-th
    smallest nonconformity 1 − p_a (0: every entity, when n is too small for the level)."""
    p_true = probabilities(logits, temperature, top_map)[torch.arange(len(answers)), answers]
    scores = torch.sort(1 - p_true).values
    n = len(scores)
    k = math.ceil((n + 1) * level)
    if k > n:
        return 0.0
    return float(1 - scores[k - 1])


def set_size_stats(sizes: torch.Tensor, candidates: torch.Tensor | None = None) -> dict[str, float]:
    """Answer-set sizes (one per question) as {"mean", "median", "p90"} (the lower median and the 90th
    percentile by nearest rank: sizes a set actually had) and, given each question's ``candidates`` (the entities
    the filter leaves), "every": the share of questions whose set holds every candidate -- a set that rules
    nothing out, where the level is met by saying nothing."""
    if not len(sizes):
        return {"mean": 0.0, "median": 0.0, "p90": 0.0} | ({"every": 0.0} if candidates is not None else {})
    ordered = torch.sort(sizes.double()).values
    n = len(ordered)
    stats = {"mean": float(ordered.mean()), "median": float(ordered[(n - 1) // 2]),
             "p90": float(ordered[math.ceil(0.9 * n) - 1])}
    if candidates is not None:
        stats["every"] = float((sizes >= candidates).double().mean())
    return stats


def set_size_text(stats: dict[str, float], entities: int = 0, unit: str = "", every_after: str = "; ") -> str:
    """E.g. "median 4, 90th percentile 140, mean 32.5 entities (of 7,128); every candidate on 3.1% of the questions"
    (``unit``: "entities" here; ``every_after``: what precedes the every-candidate share, where the caller's own list
    is separated by semicolons)."""
    of = f" (of {entities:,})" if entities else ""
    every = (f"{every_after}every candidate on {100 * stats['every']:.1f}% of the questions" if stats.get("every")
             else "")
    return (f"median {stats['median']:,.0f}, 90th percentile {stats['p90']:,.0f}, mean {stats['mean']:,.1f}"
            f"{' ' + unit if unit else ''}{of}{every}")


def set_sizes_elsewhere_text(cal: "Calibration", level: float, elsewhere: str) -> str:
    """What the stored set sizes of a calibration fitted on other data (``elsewhere``) say, without a full stop: of
    that data's entities, nothing of this data's (walk-through 38 #2: "median 280 entities (of 22)")."""
    sizes = cal.set_sizes.get(f"{level:g}") or {}
    return (f"on the {cal.queries:,} {cal.split} questions of {elsewhere} the calibration was fitted on, "
            f"{100 * level:g}% sets held {set_size_text(sizes, 0, 'entities')} of that data; they say nothing of set "
            "sizes here")


def calibrate(kg: TemporalKG, ranker: Ranker, setting: Setting | str, *, split: str = "valid", max_queries: int = 2000,
              seed: int = 0, levels: tuple[float, ...] = LEVELS,
              on_batch: Callable[[int, int], None] | None = None) -> Calibration:
    """Fit the temperature and the conformal thresholds of ``setting`` on ``split`` (``on_batch``: as
    :func:`collect`'s)."""
    setting = Setting.parse(setting)
    logits, answers = collect(kg, ranker, setting, split, max_queries=max_queries, seed=seed, on_batch=on_batch)
    t, refused = trusted_temperature(fit_temperature(logits, answers), logits, answers)
    gain = cross_fitted_gain(logits, answers, t, seed)
    top_map = fit_top_map(*_top(probabilities(logits, t), answers)) if gain >= TOP_MAP_GAIN else []
    before, _ = metrics(logits, answers, 1.0)
    after, _ = metrics(logits, answers, t, top_map=top_map)
    thresholds = {f"{lv:g}": conformal_threshold(logits, answers, t, lv, top_map) for lv in levels}
    p = probabilities(logits, t, top_map)
    candidates = torch.isfinite(logits).sum(1)  # what the filter leaves of each question's entities
    sizes = {k: set_size_stats((p >= thr).sum(1), candidates) for k, thr in thresholds.items()}
    return Calibration(setting.value, t, split, len(answers), seed, before, after, thresholds, logits.shape[1], sizes,
                       top_map, gain, as_loaded(kg).fingerprint, refused)


def trusted_temperature(t: float, logits: torch.Tensor, answers: torch.Tensor) -> tuple[float, bool]:
    """(the temperature to use, whether the fit was refused): a fit is not used (T = 1 instead;
    :data:`UNBOUNDED_SHARPENING`) when it ran to T_BOUNDS[0], or when every fitting answer scored the top score of
    its question (alone or tied): then the NLL falls all the way to T -> 0, and where the fit stopped says only how
    flat the loss got. ``logits`` (n, E), ``answers`` (n,): what ``t`` was fitted on."""
    if at_lower_bound(t):
        return 1.0, True
    z = logits.detach().double()
    rows = torch.isfinite(z).any(1)
    if rows.any() and t < 1.0:
        z, a = z[rows], answers[rows].long()
        top = torch.where(torch.isfinite(z), z, torch.full_like(z, float("-inf"))).max(1).values
        if bool((z.gather(1, a.view(-1, 1)).squeeze(1) >= top).all()):
            return 1.0, True
    return t, False


#: a precision threshold rests on at least this many split questions above it (fewer: none is fitted)
MIN_PRECISION_SUPPORT = 10


@dataclass
class PrecisionThreshold:
    """The lowest top-1 probability at which a model's first proposals on ``split`` were right at least
    ``target`` of the time: proposals at or above ``threshold`` are the confident ones (``tpar complete``
    fills only those). ``threshold`` is ``inf`` when no threshold reaches the target on at least
    :data:`MIN_PRECISION_SUPPORT` questions."""

    setting: str
    target: float            # the precision asked for
    threshold: float         # calibrated probability a proposal needs (inf: none reaches the target)
    precision: float         # on ``split``: share right among the proposals at or above it (nan: none)
    filled: int              # ``split`` questions whose proposal is at or above it
    questions: int           # ``split`` questions asked
    split: str = "valid"

    @property
    def reached(self) -> bool:
        return math.isfinite(self.threshold)

    def text(self) -> str:
        """One line: the threshold, and what it did on the split."""
        if not self.questions:
            return (f"{self.setting}: no {self.split} questions to fit a threshold on, so no proposal counts as "
                    f"confident")
        if not self.reached:
            return (f"{self.setting}: no probability threshold reaches {100 * self.target:g}% precision on "
                    f"{self.questions:,} {self.split} questions (at least {MIN_PRECISION_SUPPORT} above it), so no "
                    "proposal counts as confident")
        return (f"{self.setting}: p ≥ {self.threshold:.3g}, fitted on {self.questions:,} {self.split} questions for "
                f"{100 * self.target:g}% precision: {self.filled:,} of them ({100 * self.filled / self.questions:.0f}%) "
                f"passed it, {100 * self.precision:.1f}% of those right")

    def to_dict(self) -> dict:
        return asdict(self) | {"threshold": self.threshold if self.reached else None}


def precision_threshold(logits: torch.Tensor, answers: torch.Tensor, temperature: float, target: float, *,
                        setting: str = "", split: str = "valid", min_support: int = MIN_PRECISION_SUPPORT,
                        top_map: list[tuple[float, float]] | None = None) -> PrecisionThreshold:
    """The lowest top-1 probability p* (under softmax(logits / T)) such that the questions whose top probability
    is ≥ p* number at least ``min_support`` and their first proposals are right at least ``target`` of the time
    (questions tied at p* are all in or all out)."""
    if not 0 < target <= 1:
        raise ValueError(f"precision {target} is not in (0, 1]")
    n = len(answers)
    if n == 0:
        return PrecisionThreshold(setting, target, math.inf, math.nan, 0, 0, split)
    conf, top = probabilities(logits, temperature, top_map).max(1)
    correct = (top == answers).double()
    order = torch.argsort(conf, descending=True, stable=True)
    c_sorted, right = conf[order], torch.cumsum(correct[order], 0)
    count = torch.arange(1, n + 1, dtype=torch.float64)
    group_end = torch.ones(n, dtype=torch.bool)  # the last question of each run of equal probabilities
    group_end[:-1] = c_sorted[:-1] != c_sorted[1:]
    ok = group_end & (right / count >= target) & (count >= min_support)
    if not ok.any():
        return PrecisionThreshold(setting, target, math.inf, math.nan, 0, n, split)
    k = int(torch.nonzero(ok).max())
    return PrecisionThreshold(setting, target, float(c_sorted[k]), float(right[k] / (k + 1)), k + 1, n, split)


@dataclass
class HeldOutReport:
    """Calibration figures on held-out questions (test): before and after scaling, the reliability
    diagram after, and each stored level's empirical coverage and mean set size."""

    before: CalibrationMetrics
    after: CalibrationMetrics
    reliability: Reliability
    coverage: dict[str, float]
    mean_set_size: dict[str, float]
    temperature: float
    set_sizes: dict[str, dict[str, float]] = field(default_factory=dict)  # level -> set_size_stats on the split

    def to_dict(self) -> dict:
        return {"temperature": self.temperature, "before": self.before.to_dict(), "after": self.after.to_dict(),
                "reliability": asdict(self.reliability), "coverage": self.coverage,
                "mean_set_size": self.mean_set_size, "set_sizes": self.set_sizes}


def held_out_caveats(report: HeldOutReport, entities: int, split: str = "test", fitted_on: str = "") -> list[str]:
    """What the held-out figures of a calibration say against it, each a sentence without its full stop: scaling
    (fitted on valid; on ``fitted_on``'s valid when it names other data) made NLL or ECE worse on ``split``; NLL above
    a uniform guess's ln(``entities``); an answer set's coverage below its level by more than two standard errors of
    its ``split`` questions."""
    b, a, n = report.before, report.after, report.after.queries
    notes = []
    worse = [f"{name} {x:.4f} -> {y:.4f}" for name, x, y in (("NLL", b.nll, a.nll), ("ECE", b.ece, a.ece))
             if y > x + (1e-4 if name == "NLL" else 0.01)]
    if worse and fitted_on:  # another data set's calibration: no wonder, and not "too few" (walk-through 38 #7)
        of = fitted_on + (", other data than these" if fitted_on != "other data" else "")
        notes.append(f"the temperature, fitted on the valid questions of {of}, made "
                     f"{' and '.join(w.split()[0] for w in worse)} worse on {split} ({'; '.join(worse)}): a "
                     "calibration does not carry over to other data")
    elif worse:
        notes.append(f"the temperature, fitted on valid, made {' and '.join(w.split()[0] for w in worse)} worse on "
                     f"{split} ({'; '.join(worse)}): the valid questions it was fitted on were too few or unlike "
                     f"these")
    if entities > 1 and a.nll > math.log(entities):
        notes.append(f"{split} NLL {a.nll:.3f} is above a uniform guess's (ln {entities:,} = {math.log(entities):.3f}): "
                     "these probabilities tell less than giving every entity the same")
    for level, cover in report.coverage.items():
        want = float(level)
        if n and cover < want - 2 * math.sqrt(want * (1 - want) / n):
            notes.append(f"the {100 * want:g}% answer sets held the answer for only {100 * cover:.1f}% of the "
                         f"{plural(n, f'{split} question')}, below their level")
    return notes


class HeldOutCollector:
    """Calibration figures gathered from an evaluation pass: pass :meth:`keep` as ``on_scores`` to
    :func:`tpar.evaluation.protocol.evaluate` (the ranks and the calibration then come from one scoring of
    the split, not two) and read :meth:`report` after. Streams batch by batch: bounded memory on any split."""

    def __init__(self, calibration: Calibration, source: str = "") -> None:
        self.calibration = calibration
        self.source = source  # where the calibration comes from (e.g. "stored in the checkpoint"), for reports
        self.levels = dict(calibration.thresholds)
        self.parts: dict[str, list[torch.Tensor]] = {f"{k}_{tag}": [] for tag in ("1", "t")
                                                     for k in ("p_true", "conf", "top", "brier")}
        self.covered = {k: 0 for k in self.levels}
        self.sizes: dict[str, list[torch.Tensor]] = {k: [] for k in self.levels}
        self.candidates: list[torch.Tensor] = []  # per question: the entities the filter leaves
        self.n = 0

    def keep(self, batch: QueryBatch, scores: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> None:
        """One batch: scores (B, E) and the time-aware filter's (row, entity) pairs."""
        logits = filtered_logits(scores, rows, cols)
        idx = torch.arange(len(batch))
        for tag, temp in (("1", 1.0), ("t", self.calibration.temperature)):
            p = probabilities(logits, temp, self.calibration.top_map if tag == "t" else None)
            pt = p[idx, batch.answer]
            conf, top = p.max(1)
            self.parts[f"p_true_{tag}"].append(pt)
            self.parts[f"conf_{tag}"].append(conf)
            self.parts[f"top_{tag}"].append((top == batch.answer).double())
            self.parts[f"brier_{tag}"].append((p ** 2).sum(1) - 2 * pt + 1)
            if tag == "t":
                self.candidates.append(torch.isfinite(logits).sum(1))
                for k, thr in self.levels.items():
                    member = p >= thr
                    self.covered[k] += int(member[idx, batch.answer].sum())
                    self.sizes[k].append(member.sum(1))
        self.n += len(batch)

    def report(self) -> HeldOutReport:
        """The figures over every batch kept (at least one question)."""
        if self.n == 0:
            raise ValueError("no questions were scored for the calibration report")
        cat = {k: torch.cat(v) for k, v in self.parts.items()}
        out = {}
        for tag in ("1", "t"):
            stats = reliability(cat[f"conf_{tag}"], cat[f"top_{tag}"])
            ece = ece_of(stats, self.n)
            out[tag] = (CalibrationMetrics(float(ece), float(cat[f"brier_{tag}"].mean()),
                                           float(-torch.log(cat[f"p_true_{tag}"].clamp_min(1e-300)).mean()),
                                           float(cat[f"top_{tag}"].mean()), float(cat[f"conf_{tag}"].mean()),
                                           self.n), stats)
        candidates = torch.cat(self.candidates) if self.candidates else torch.zeros(0)
        size_stats = {k: set_size_stats(torch.cat(v) if v else torch.zeros(0), candidates)
                      for k, v in self.sizes.items()}
        return HeldOutReport(out["1"][0], out["t"][0], out["t"][1],
                             {k: self.covered[k] / self.n for k in self.levels},
                             {k: size_stats[k]["mean"] for k in self.levels}, self.calibration.temperature,
                             size_stats)


def held_out(kg: TemporalKG, ranker: Ranker, calibration: Calibration, split: str = "test", *,
             max_queries: int = 0, seed: int = 0) -> HeldOutReport:
    """Apply ``calibration`` to ``split`` in a scoring pass of its own (an evaluation that also wants the
    ranks passes :class:`HeldOutCollector`'s ``keep`` to it instead)."""
    collector = HeldOutCollector(calibration)
    evaluate(kg, ranker, calibration.setting, split, progress=False, batch_size=64, max_queries=max_queries,
             seed=seed, on_scores=collector.keep)
    return collector.report()


def stored(extra: dict, setting: str) -> Calibration | None:
    """The calibration of ``setting`` kept in a checkpoint's ``extra`` (None when absent or unreadable)."""
    cals = (extra or {}).get("calibration")
    d = cals.get(setting) if isinstance(cals, dict) else None
    try:
        return Calibration.from_dict(d) if d else None
    except (KeyError, TypeError, ValueError, OverflowError):
        return None


#: valid questions a calibration is fitted on when a checkpoint stores none (what training stores by default)
FIT_QUERIES = 2000


def held_out_collector(kg: TemporalKG, ranker: Ranker, extra: dict, setting: str, split: str, *,
                       on_fit: Callable[[], None] | None = None) -> tuple[HeldOutCollector | None, str]:
    """What gathers the calibration figures of an evaluation of ``split`` (the CLI's and the app's):
    a :class:`HeldOutCollector` of the calibration of ``setting`` stored in the checkpoint (``extra``), or,
    when it stores none, one fitted on :data:`FIT_QUERIES` seeded valid questions now (``on_fit`` is called
    first, to say so). Returns (collector, note); the collector is None, with the reason in the note, when
    there is nothing held out to report: ``split`` is valid itself (its figures would be in-sample), or no
    calibration is stored and valid has no questions to fit one on; or (note empty: the evaluation says so
    itself, before any calibration is fitted) ``split`` has no questions."""
    if split == "valid":
        return None, "no calibration figures on valid: the calibration is fitted there (evaluate test to see them)"
    if not len(kg.facts(split)):
        return None, ""
    cal = stored(extra, setting)
    if cal is not None:
        return HeldOutCollector(cal, f"stored in the checkpoint (fitted on {cal.queries:,} {cal.split} questions)"), ""
    if not len(kg.facts("valid")):
        return None, (f"no calibration figures for {setting}: the checkpoint stores no calibration of it and "
                      f"{kg.name} has no valid questions to fit one on")
    if on_fit is not None:
        on_fit()
    cal = calibrate(kg, ranker, setting, split="valid", max_queries=FIT_QUERIES)
    return HeldOutCollector(cal, f"fitted now on {cal.queries:,} valid questions (the checkpoint stores none)"), ""
