"""Why did TPAR rank an answer where it did: top-k temporal paths (paper Section 5.4, Eq. 14) and a
per-layer reasoning trace for teaching.

Path importance (Eq. 14, a first-order Taylor view of f as in NBFNet's explanations): one forward
pass in which every admitted link and every self-loop of every layer l carries a weight w = 1 on its
attention α (:class:`tpar.model.network.PropagationTrace` with ``weighted=True``); one backward pass of
f(q, answer) gives ∂f/∂w per link and layer. A path is a sequence of L links, one per layer, link
l+1 leaving the entity link l entered, starting at the query entity and ending at the answer;
its importance is the sum of its links' gradients -- the derivative w.r.t. the path of Eq. 14. The
top-k paths are found by a beam search over the layers (vectorised: every (link, partial path) pair
of a layer is scored at once and each entity keeps its ``beam`` best partial paths). Self-loops
stand for "stay" (paths shorter than L): they count nothing towards a path's importance (a path
whose every link has ∂f/∂link = 0 is worth 0 however the model keeps states alive), their
gradients are reported apart as the path's ``stay``; they are dropped from the shown path and paths
that become equal are merged (the best is kept). A path whose importance is below
:func:`evidence_floor` carries no meaningful evidence and is flagged so.
By default the search keeps simple paths only (no entity entered twice): walking a link and
straight back ("A → X → A") is how an L-step encoding stays put, and such detours repeat a shorter
path's evidence; ``simple=False`` keeps them (exactly Eq. 14's ranking over all walks).

``importance="integrated"`` replaces the single gradient by integrated gradients (Sundararajan et al.
2017) along the straight line from "every link and self-loop off" (w = 0) to the full pass (w = 1): each
link's attribution is the mean of ∂f/∂w over midpoints β of that line, and the attributions of all links
and self-loops sum to f − f₀ (completeness), f₀ being the score with no evidence at all -- 0 for the
paper's model (h = 0 there), not 0 with the GRU gate (``ModelConfig.gate``: its biases give every reached
entity a state). f₀ is measured and reported (``Explanation.baseline_score``). The midpoint rule starts
with ``steps`` points and triples them (reusing every point) until the shares add up to f − f₀ within
1% (or ``max_steps`` is reached; the remaining gap is reported and warned about). It credits evidence that
a single gradient misses where a pattern is saturated -- several repetitions of one fact pattern, each
of which alone changes little -- and costs a forward and backward pass per point. Where the propagation
itself changes along the line (top-K pruning ranks entities by their states), the gradient is used and
the explanation says so.

Paths that share links must not count them twice: the listed paths are ranked greedily by what each
adds beyond the paths above it (its *marginal* importance: the attributions of its links that no path
above walks; ``ranking="marginal"``, the default, from a pool of the best paths by Eq. 14), and each
path's ``importance`` is that marginal (``total`` keeps the sum over all its links). The listed paths'
importances plus the *rest* -- links on no listed path, self-loops ("staying put") and, for the
gradient, what a first-order view leaves unattributed -- then add up exactly to f − f₀
(:class:`Decomposition`), each propagation link counted once.

Backgrounds follow :class:`tpar.reasoning.prediction.Predictor`: extrapolation sees facts with t < t_q;
interpolation sees every known fact except those answering the question itself.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, replace

import torch

from tpar.errors import DataError, check_count, plural
from tpar.graph.queries import Direction, Question
from tpar.reasoning.prediction import AnsweredQuestion, PreparedQuestion, Predictor, rank_range, rank_range_text
from tpar.model.network import PropagationTrace


@dataclass
class PathLink:
    """One temporal link of a path, in the order it is traversed (``source`` → ``target``).

    ``subject``/``relation``/``object`` state the underlying fact as it is in the data; ``inverse``
    is True when the path walks it backwards (object → subject, relation r⁻¹ in the paper)."""

    layer: int
    source: str
    target: str
    subject: str
    relation: str
    object: str
    inverse: bool
    time: str
    time_step: int
    delta: int          # t_link − t_q in time steps
    delta_label: str    # e.g. "-3 d"
    attention: float    # α of Eq. 7 for this link in this layer
    gradient: float     # ∂f(q, answer)/∂w of this link in this layer
    when: str = ""      # delta in words, e.g. "2 days before"
    inferred: str = ""  # "" for an observed fact, else e.g. "inferred by a model (p = 93%), not observed"

    @property
    def relation_label(self) -> str:
        """The symbolic form (the paper's r⁻¹ for a link walked backwards)."""
        return f"{self.relation}⁻¹" if self.inverse else self.relation

    @property
    def arrow_label(self) -> str:
        """The relation for a drawing whose arrow points the way the path walks: a link walked
        backwards is marked ``←`` (the fact points from the arrow's target to its source)."""
        return f"← {self.relation}" if self.inverse else self.relation

    def sentence(self) -> str:
        """The fact in words, names spelt as in the data (searchable), with its time relative to the
        question, e.g. "Kelarara Council: Threaten → Faro of Corbeleth, 2 days before the question" (a
        backwards walk says so)."""
        when = "at the question's time" if self.delta == 0 else f"{self.when or self.delta_label} the question"
        back = f" (walked back from {self.source})" if self.inverse else ""
        guess = f" — {self.inferred}" if self.inferred else ""
        return f"{self.subject}: {self.relation} → {self.object}, {when}{back}{guess}"


def _signed(x: float) -> str:
    """``x`` to 4 decimals with its sign, float noise below them shown as +0.0000 (never -0.0000)."""
    return f"{round(x, 4) + 0.0:+.4f}"


def _plain(x: float) -> str:
    """``x`` to 4 decimals, never -0.0000."""
    return f"{round(x, 4) + 0.0:.4f}"


def evidence_floor(score: float) -> float:
    """The smallest |importance| that counts as evidence for an answer scoring ``score``: 1e-6, or
    0.01% of |score| when that is larger. Gradients below it are numerical dust (a link with
    α ≈ 1e-27 has ∂f/∂link ≈ 1e-20); kept low because Eq. 14's gradients are small wherever the
    activation saturates even for links that matter (the sample world's weekly link: 0.005 at f ≈ 5)."""
    return max(1e-6, 1e-4 * abs(score))


@dataclass
class TemporalPath:
    links: list[PathLink]
    importance: float   # what the path adds beyond the paths listed above it: Σ over its links no path above walks
    stay: float = 0.0   # Σ ∂f/∂w over the self-loops the walk took ("staying at an entity"), not in importance
    meaningful: bool = True  # |total| ≥ evidence_floor(f): the path carries evidence at all
    total: float = 0.0  # Σ over all of the path's links (Eq. 14's derivative w.r.t. the path), shared ones included
    link_keys: tuple[tuple[int, ...], ...] = field(default=(), repr=False, compare=False)  # (layer, link row)
    models: tuple[int, ...] = ()  # a composite: the models (1-based) whose listed paths walk these facts in this order

    @property
    def adds_nothing(self) -> bool:
        """Carries evidence, but none beyond the paths above it (its links are all theirs)."""
        return self.meaningful and abs(self.importance) < 1e-4 * max(abs(self.total), 1e-12)

    @property
    def length(self) -> int:
        return len(self.links)

    @property
    def signature(self) -> tuple[tuple[str, bool], ...]:
        """(relation, inverse) per hop: the path's rule body without entities or times."""
        return tuple((x.relation, x.inverse) for x in self.links)

    def describe(self) -> str:
        if not self.links:
            return "(no links)"
        parts = [self.links[0].source]
        for x in self.links:
            parts.append(f"—[{x.relation_label} @ {x.time} ({x.delta_label})]→ {x.target}")
        return " ".join(parts)

    def sentences(self) -> list[str]:
        return [x.sentence() for x in self.links]

    def to_dict(self) -> dict:
        return {"importance": self.importance, "total": self.total, "stay": self.stay, "meaningful": self.meaningful,
                "length": self.length, "text": self.describe(), "models": list(self.models),
                "links": [asdict(x) | {"relation_label": x.relation_label, "sentence": x.sentence()}
                          for x in self.links]}


@dataclass
class FactShare:
    """One known fact and its share of the answer's score: the summed importance of every link (any
    layer, either direction) that walks it -- what removing the fact takes away, to first order
    (``gradient``) or along the whole way from no evidence (``integrated``, where shares add up to f)."""

    subject: str
    relation: str
    object: str
    time: str
    time_step: int
    share: float
    links: int  # how many links of the propagation walk this fact
    removal: float | None = None  # measured: f(q, a) minus f(q, a) on the data without this fact (None: not measured)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Decomposition:
    """f − f₀ split without double counting: the listed paths' (marginal) importances, then the rest -- the
    links on no listed path, the self-loops ("staying put"), and what the method leaves unattributed
    (``residual``: the integration gap for integrated gradients; for the first-order gradient the whole
    difference between f − f₀ and the sum of all gradients, which it does not promise to match)."""

    score: float               # f(q, a)
    no_evidence_score: float   # f₀: every link and self-loop off
    paths: float               # Σ of the listed paths' importances = Σ over the union of their links, each once
    rest_links: float          # Σ over the propagation's links on no listed path
    stays: float               # Σ over every self-loop
    residual: float            # (f − f₀) − Σ over all links and self-loops
    links_on_paths: int        # distinct propagation links the listed paths walk
    links: int                 # all propagation links (self-loops not counted)
    method: str                # "integrated" or "gradient" ("mixed": a composite whose members used both)
    prior: float = 0.0         # a composite: the history prior's term β·log(1 + ψ/ε) of the score (0 for one model)
    models: int = 1            # a composite: the models whose scaled shares are summed here

    def caveat(self, integrated_tried: bool = False) -> str:
        """A warning when the first-order gradient leaves more than half of f − f₀ unattributed (fidelity review 39
        F2: it then gave a decisive fact the wrong sign on the sample world), else ""; it points to integrated
        importance unless that was asked for and could not be used (``integrated_tried``)."""
        if self.method == "gradient" and abs(self.residual) > 0.5 * abs(self.target) > 0:
            return ("the first-order gradient leaves most of f − f₀ unattributed: the paths' importances, even their "
                    "signs, can mislead here" + ("" if integrated_tried else
                                                 "; integrated importance attributes all of it"))
        return ""

    @property
    def rest(self) -> float:
        """Everything not on the listed paths: other links, stays and the residual."""
        return self.rest_links + self.stays + self.residual

    @property
    def target(self) -> float:
        """f − f₀: what the listed paths, the rest and (a composite) the prior's term add up to."""
        return self.score - self.no_evidence_score

    @property
    def composite(self) -> bool:
        return self.models > 1 or self.prior != 0.0

    def to_dict(self) -> dict:
        return asdict(self) | {"rest": self.rest, "total": self.paths + self.rest + self.prior, "target": self.target}

    def stays_note(self, num_layers: int, shortest_path: int | None) -> str:
        """Why most of the score goes to staying put, when it does ("" else): self-loops keep a state from one step
        to the next, so evidence that reaches an entity early (``shortest_path`` < L links) is carried along them to
        step L, and the importance method credits those self-loops, not the links that brought it."""
        if self.target <= 0 or self.stays <= self.target / 2:
            return ""
        what = ("S − S₀ (the score minus the score with no evidence" if self.composite else
                "f − f₀ (the score minus the score with no evidence")
        early = (f" The shortest path listed has {plural(shortest_path, 'link')} of the "
                 f"model's L = {num_layers}: it reaches the answer early, and self-loops carry that state to the "
                 "last step." if shortest_path is not None and shortest_path < num_layers else "")
        return (f"Most of {what}: {_signed(self.stays)} of {_signed(self.target)}) is credited to staying put: the "
                "self-loops along the walks, which keep an entity's state from one step to the next." + early
                + " The importance method credits those self-loops (each path's stay), not the links that brought "
                "the state; the paths still show where it came from.")

    def paths_note(self) -> str:
        """What the listed paths leave out, when the links on no listed path are the largest part of f − f₀ (the
        paths add less than half of it, and those links more than the paths, the self-loops -- :meth:`stays_note`
        -- the unattributed residual -- :meth:`caveat` -- and the prior); "most" only when they are more than half
        of it ("" else: the sum, :meth:`text`, shows where the rest lies). Scale audit 40: "most of the evidence,
        +1.01" was printed beside listed paths of +3.39 of +13.0, the residual holding most of it."""
        if self.target <= 0 or self.paths >= self.target / 2:
            return ""
        if self.rest_links <= max(self.paths, self.stays, self.residual, self.prior, 0.0):
            return ""
        what = "S − S₀" if self.composite else "f − f₀"
        others = self.links - self.links_on_paths
        part = "most of the evidence" if self.rest_links > self.target / 2 else "the largest part of it"
        return (f"The paths listed account for {_signed(self.paths)} of {what} = {_signed(self.target)} "
                f"({100 * self.paths / self.target:.0f}%): {part}, {_signed(self.rest_links)} "
                f"({100 * self.rest_links / self.target:.0f}%), runs over the {plural(others, 'link')} on no listed "
                "path, each adding little (more paths show more of it)")

    def text(self) -> str:
        """The sum in one line, e.g. "f − f₀ = 10.502 = listed paths 9.716 + rest 0.786 (other links −0.818,
        staying put 1.613, not attributed −0.009)"; for a composite "S − S₀ = ... + history prior ..."."""
        unattributed = ("not attributed by integrated gradients (their gap)" if self.method == "integrated" else
                        "not attributed: a first-order gradient does not add up to f − f₀" if self.method == "gradient"
                        else "not attributed (gradient or integration gaps)")
        if self.composite:
            n = self.models
            return (f"S − S₀ = {_plain(self.target)} (S₀ = {_plain(self.no_evidence_score)}, the score with no link "
                    f"of any model and no history) = listed paths {_signed(self.paths)} + history prior "
                    f"{_signed(self.prior)} + rest {_signed(self.rest)} (the {n} model{'s' if n > 1 else ''}' "
                    f"{plural(self.links - self.links_on_paths, 'link')} on no listed path {_signed(self.rest_links)}, staying "
                    f"put {_signed(self.stays)}, {unattributed} {_signed(self.residual)}; every model's share scaled "
                    "by its weight w/T)")
        return (f"f − f₀ = {_plain(self.target)} (f₀ = {_plain(self.no_evidence_score)}, the score with no evidence) = "
                f"listed paths {_signed(self.paths)} + rest {_signed(self.rest)} (the "
                f"{plural(self.links - self.links_on_paths, 'link')} on no listed path {_signed(self.rest_links)}, staying put "
                f"{_signed(self.stays)}, {unattributed} {_signed(self.residual)})")


@dataclass
class MemberShare:
    """One model of a composite and its part of the answer's score S: ``weight`` c = w/T (1/(n·T) with equal
    weights) times its own score f (Eq. 9)."""

    model: int                 # 1-based
    name: str                  # where it came from (the file it was combined from)
    temperature: float         # T: its calibration temperature
    weight: float              # c = w/T (1/(n·T) with equal weights)
    score: float               # f(q, answer), its own score
    no_evidence_score: float   # f₀: its score with every link off
    rank: float                # the answer's realistic rank by this model alone
    reached: bool              # some path of this model reaches the answer
    paths: int                 # listed paths this model's search found
    rank_low: int = 0          # its best and worst rank alone (ties within float noise, as the Ask page ranks)
    rank_high: int = 0

    def rank_text(self) -> str:
        return rank_range_text(self.rank_low, self.rank_high)

    @property
    def contribution(self) -> float:
        """c·f: what this model adds to S."""
        return self.weight * self.score

    def to_dict(self) -> dict:
        return asdict(self) | {"contribution": self.contribution}


@dataclass
class HistoryShare:
    """The history prior's part of a composite's score for the answer (:class:`tpar.model.composite.PriorEvidence`
    with times in the data's labels): how often and how recently the answer already answered the question in the
    history the question may see, ψ, and the term β·log(1 + ψ/ε) it adds."""

    contribution: float   # β·log(1 + ψ/ε)
    value: float          # ψ = α·ψ_λ + (1 − α)·ξ
    recency: float        # ψ_λ
    share: float          # ξ: the answer's share of the relation's links
    count: int            # times the answer already answered this question (links the question may see)
    last_time: str        # the most recent of them ("" when none)
    last_when: str        # e.g. "2 days before" the question ("" when none)
    times: list[str]      # up to the 10 most recent, latest first
    eps: float
    beta: float
    lmbda: float
    alpha: float

    @classmethod
    def from_evidence(cls, ev, kg, t_q: int) -> "HistoryShare":
        last = ev.times[-1] if ev.times else None
        return cls(ev.contribution, ev.value, ev.recency, ev.share, ev.count,
                   kg.time_axis.label(last) if last is not None else "",
                   kg.time_axis.describe_delta(last - t_q) if last is not None else "",
                   [kg.time_axis.label(t) for t in reversed(ev.times[-10:])], ev.eps, ev.beta, ev.lmbda, ev.alpha)

    def text(self) -> str:
        """One sentence, e.g. "answered this question 4 times before (most recently 2014-12-03, 2 days before):
        ψ = 0.213, adding 0.4·log(1 + ψ/0.01) = +1.231 to the score"."""
        how = (f"answered this question {plural(self.count, 'time')} before "
               f"(most recently {self.last_time}, {self.last_when})" if self.count else
               "never answered this question before")
        return (f"{how}; ψ = α·ψ_λ + (1 − α)·ξ = {self.value:.4g} (recency ψ_λ {self.recency:.4g} at λ = {self.lmbda:g}, "
                f"its share ξ {self.share:.4g} of the relation, α = {self.alpha:g}), adding "
                f"{self.beta:g}·log(1 + ψ/{self.eps:g}) = {self.contribution:+.4f} to the score")

    def to_dict(self) -> dict:
        return asdict(self) | {"text": self.text()}


#: the one sentence that says how the listed paths are ranked (``Explanation.ranking``)
RANKING_TEXT = {
    "marginal": "Paths are chosen one at a time, each the one that adds most beyond the paths above it: a path's "
                "importance counts only its links that no path above walks, so no link is counted twice (a later path "
                "can add more than an earlier one did, when a link it shares with a path above counted against it).",
    "total": "Paths are ranked by the sum over all their links (Eq. 14); a path's importance counts only its links "
             "that no path above walks, so no link is counted twice.",
}


@dataclass(kw_only=True)
class Explanation(AnsweredQuestion):
    answer: str
    score: float             # f(q, answer), Eq. 9
    rank: float              # among all entities; ties share the mean position (realistic rank)
    reached: bool            # some path of length ≤ L reaches the answer
    paths: list[TemporalPath]
    num_layers: int
    rank_low: int = 0        # best and worst rank: ties within float noise, as the Ask page ranks (rank = their mean)
    rank_high: int = 0
    warnings: list[str] = field(default_factory=list)
    importance: str = "gradient"  # how links were scored: "gradient" (Eq. 14) or "integrated" (see module doc)
    facts: list[FactShare] = field(default_factory=list)  # the facts with the largest shares, largest first
    baseline_score: float | None = None  # integrated only: f₀, the score with every link and self-loop off
    integration_steps: int = 0           # integrated only: midpoints used
    completeness_gap: float | None = None  # integrated only: Σ shares (links and stays) − (f − f₀)
    decomposition: Decomposition | None = None  # f − f₀ = listed paths + rest, each link once (None: not reached)
    ranking: str = "marginal"  # "marginal": greedily by what each path adds; "total": by Eq. 14's sum
    combines: str = ""         # a composite: what the ranking combines ("2 models and the history prior"); "" else
    formula: str = ""          # a composite: its score in symbols
    members: list["MemberShare"] = field(default_factory=list)  # a composite: each model's part of the score
    prior: "HistoryShare | None" = None  # a composite with a history prior: its part of the score

    @property
    def floor(self) -> float:
        return evidence_floor(self.score)

    def paths_note(self) -> str:
        """:meth:`Decomposition.paths_note` ("" without a decomposition or a listed path)."""
        return self.decomposition.paths_note() if self.decomposition is not None and self.paths else ""

    def stays_note(self, paths: list[TemporalPath] | None = None) -> str:
        """:meth:`Decomposition.stays_note` for ``paths`` (default: every listed path), "" when there is nothing
        to say: no decomposition, no path shown, or most of the score not credited to staying put."""
        paths = self.paths if paths is None else paths
        if self.decomposition is None or not paths:
            return ""
        return self.decomposition.stays_note(self.num_layers, min(p.length for p in paths))

    def rank_text(self) -> str:
        """The rank as shown to a user: "5", or "5–6" when the answer ties with another entity."""
        return rank_range_text(self.rank_low, self.rank_high)

    @property
    def meaningful_paths(self) -> list[TemporalPath]:
        return [p for p in self.paths if p.meaningful]

    @property
    def has_evidence(self) -> bool:
        """Some shown path carries meaningful evidence (else the answer's score is not explained by
        any path the search found: everything is ≈ 0)."""
        return bool(self.meaningful_paths)

    def to_dict(self) -> dict:
        return super().to_dict() | {"paths": [p.to_dict() for p in self.paths], "evidence_floor": self.floor,
                                    "has_evidence": self.has_evidence,
                                    "decomposition": self.decomposition.to_dict() if self.decomposition else None,
                                    "members": [m.to_dict() for m in self.members],
                                    "prior": self.prior.to_dict() if self.prior else None}


@dataclass
class AnswerPaths:
    """One answer's most important paths (Eq. 14, marginal ranking) as :meth:`Explainer.top_paths` finds them."""

    answer: str
    answer_id: int
    score: float             # f(q, answer), Eq. 9
    rank: float              # realistic rank among all entities
    reached: bool
    paths: list[TemporalPath]
    rank_low: int = 0        # best and worst rank (ties within float noise; ``rank`` is their mean)
    rank_high: int = 0

    def rank_text(self) -> str:
        return rank_range_text(self.rank_low, self.rank_high)


@dataclass(kw_only=True)
class TopPaths(AnsweredQuestion):
    """The top paths of several answers of one question (:meth:`Explainer.top_paths`)."""

    answers: list[AnswerPaths]


#: attention below which a link is not shown as one the model "attends to" in the teaching trace
ATTENTION_FLOOR = 0.01

#: integrated importance: the shares must add up to f − f₀ within this share of |f − f₀|
COMPLETENESS_TOLERANCE = 0.01


def answer_rank(scores: torch.Tensor, answer: int) -> tuple[float, int, int]:
    """(realistic rank, best rank, worst rank) of entity ``answer`` among all entities' ``scores`` (E,), ties within
    float noise as :class:`~tpar.reasoning.prediction.Answer` counts them (the Ask page's ranks): the realistic rank
    is the mean of the two, the expected place under random tie-breaking."""
    low, high = rank_range(scores, float(scores[answer]))
    return (low + high) / 2, low, high


def complete_enough(gap: float, target: float) -> bool:
    """Do integrated shares summing to ``target + gap`` meet f − f₀ = ``target`` within
    :data:`COMPLETENESS_TOLERANCE` (relative; 1e-3 absolute near 0)?"""
    return abs(gap) <= COMPLETENESS_TOLERANCE * max(abs(target), 1e-3)


@dataclass(kw_only=True)
class Counterfactual(AnsweredQuestion):
    """The smallest set of evidence facts found whose removal takes ``answer`` off rank 1: greedy over
    the links of the top paths (most important first), then pruned to a minimal set (every fact in
    it is needed). ``flipped`` False: removing every candidate fact did not do it (or the answer
    was not first to begin with; ``reason`` says which)."""

    answer: str
    removed: list[tuple[str, str, str, str]]   # (subject, relation, object, time) as in the data
    flipped: bool
    rank_before: float
    rank_after: float                          # realistic rank with ``removed`` gone
    top_after: str                             # the new first answer
    candidates: int                            # evidence facts considered
    reason: str = ""
    rank_after_low: int = 0                    # best and worst rank with ``removed`` gone (``rank_after``: their mean)
    rank_after_high: int = 0

    def rank_after_text(self) -> str:
        """The rank with ``removed`` gone as shown to a user: "3", or "259–263" in a tie."""
        return rank_range_text(self.rank_after_low, self.rank_after_high)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class LayerSummary:
    """Teaching view of one recursive step l (Eqs. 5-8).

    ``scores``: w·h_e^l (Eq. 9's scoring applied to the states after step l) of the ``top``
    highest entities (and of the answer, if one was given); only at l = L is this the model's
    score f(q, e), earlier layers show how it forms."""

    layer: int
    entities_reached: int        # |E^l|: entities with a state after this step
    new_entities: list[str]      # reached for the first time in this step (at most ``top`` names)
    num_links: int               # admitted temporal links (self-loops excluded)
    top_links: list[PathLink]    # the links with the highest attention α (gradient field 0); when an answer
                                 # was given and reached, only links on a walk to it with α ≥ ATTENTION_FLOOR
    scores: dict[str, float] = field(default_factory=dict)
    answer_score: float | None = None   # w·h_answer^l, None while the answer is not reached
    answer_rank: float | None = None    # among the entities reached so far (realistic: the mean of the range below)
    answer_rank_range: tuple[int, int] | None = None  # its best and worst rank among them (ties within float noise)
    links_towards_answer: int | None = None  # admitted links of this step on some walk to the answer


@dataclass(kw_only=True)
class ReasoningTrace(AnsweredQuestion):
    layers: list[LayerSummary]
    answer: str | None = None
    note: str = ""  # a composite: which of its models this trace follows (each has its own propagation)


def rank_paths(pool: list[TemporalPath], k: int, ranking: str = "marginal") -> list[TemporalPath]:
    """``k`` paths of ``pool`` (best first by Eq. 14), each with ``importance`` set to what it adds beyond the
    paths chosen before it (the attributions of its links no earlier path walks). ``marginal``: greedily the
    path that adds the most next (ties: the earlier in ``pool``); ``total``: ``pool``'s order."""
    covered: set[tuple[int, int]] = set()
    left, out = list(pool), []

    def adds(p: TemporalPath) -> float:
        return sum(x.gradient for x, key in zip(p.links, p.link_keys) if key not in covered)

    while left and len(out) < k:
        if ranking == "total":
            best = 0
        else:
            gains = [adds(p) for p in left]
            best = max(range(len(left)), key=lambda i: (gains[i], -i))
        path = left.pop(best)
        path.importance = adds(path)
        covered.update(path.link_keys)
        out.append(path)
    return out


def models_text(ids: list[int], total: int) -> str:
    """Which models of a composite a note is about: "model 2", "models 1 and 3", "all 3 models"."""
    if len(ids) == total and total > 1:
        return f"all {total} models"
    if len(ids) == 1:
        return f"model {ids[0]}"
    return "models " + ", ".join(map(str, ids[:-1])) + f" and {ids[-1]}"


def merge_member_paths(member_paths: list[list[TemporalPath]], weights: tuple[float, ...]) -> list[TemporalPath]:
    """A composite's paths: each member i's paths (importances its own marginals) scaled by its weight c_i in the
    score; paths walking the same facts in the same order merged -- their scaled importances, stays, totals and
    link gradients summed, ``models`` the members that found them, a link's α the mean over those members --
    largest merged importance first."""
    merged: dict[tuple, TemporalPath] = {}
    alphas: dict[tuple, list[list[float]]] = {}
    for i, (paths, c) in enumerate(zip(member_paths, weights)):
        for path in paths:
            key = tuple((x.subject, x.relation, x.object, x.time_step, x.inverse) for x in path.links)
            keys = tuple((i, *k) for k in path.link_keys)
            if key not in merged:
                merged[key] = TemporalPath([replace(x, gradient=c * x.gradient) for x in path.links],
                                           c * path.importance, c * path.stay, True, c * path.total, link_keys=keys,
                                           models=(i + 1,))
                alphas[key] = [[x.attention] for x in path.links]
                continue
            m = merged[key]
            m.importance += c * path.importance
            m.stay += c * path.stay
            m.total += c * path.total
            m.link_keys += keys
            m.models += (i + 1,)
            for x, y, seen in zip(m.links, path.links, alphas[key]):
                x.gradient += c * y.gradient
                seen.append(y.attention)
    for key, path in merged.items():
        for x, seen in zip(path.links, alphas[key]):
            x.attention = sum(seen) / len(seen)
    return sorted(merged.values(), key=lambda q: -q.importance)


def decompose(score: float, baseline: float, paths: list[TemporalPath], link_attr: list[torch.Tensor],
              loop_attr: list[torch.Tensor], method: str) -> Decomposition:
    """f − f₀ = Σ listed paths' importances + links on no listed path + self-loops + residual, each link once
    (the paths' importances must come from :func:`rank_paths`)."""
    on_paths = {key for p in paths for key in p.link_keys}
    all_links = sum(float(x.double().sum()) for x in link_attr)
    stays = sum(float(x.double().sum()) for x in loop_attr)
    covered = sum(float(link_attr[l][j]) for l, j in on_paths)
    return Decomposition(score, baseline, sum(p.importance for p in paths), all_links - covered, stays,
                         (score - baseline) - all_links - stays, len(on_paths), sum(int(x.numel()) for x in link_attr),
                         method)


class Explainer:
    """Explanations for questions on a :class:`Predictor`'s data and model (no gradients leak out:
    the model's parameters are left untouched and in eval mode)."""

    def __init__(self, predictor: Predictor) -> None:
        self.predictor = predictor
        self.kg = predictor.kg
        #: a composite model: one explainer per member (its own propagation, traced apart); None for one model
        self.members = ([Explainer(predictor.member_view(i)) for i in range(len(predictor.model.members))]
                        if predictor.composite else None)
        #: the last few questions' integrated gradients (most of an explanation's time: up to ``max_steps`` forward
        #: and backward passes), so that the same answer shown with more or fewer paths, or another ranking, does
        #: not integrate again (scale audit 40: 30 s per step of the app's Paths slider)
        self._integrated_memo: OrderedDict[tuple, tuple | None] = OrderedDict()
        self._memo_lock = threading.Lock()

    # -- forward pass with a trace ---------------------------------------------------------------
    def _traced(self, question: Question, weighted: bool) -> tuple[PreparedQuestion, torch.Tensor, PropagationTrace]:
        """One forward pass for ``question`` that records a :class:`PropagationTrace` (with link
        weights that take gradients when ``weighted``); returns the prepared question, the scores (E,)
        and the trace."""
        prepared = self.predictor.prepare(question)
        trace = PropagationTrace(weighted=weighted)
        with torch.set_grad_enabled(weighted):
            scores = self.predictor.model.eval()(prepared.batch, prepared.background, trace=trace)[0]
        return prepared, scores, trace

    def _link(self, layer: int, src: int, rel: int, dst: int, t_link: int, t_q: int, alpha: float,
              grad: float) -> PathLink:
        kg, R = self.kg, self.kg.num_relations
        inverse = rel >= R
        name = kg.relations.name(rel - R if inverse else rel)
        src_n, dst_n = kg.entities.name(src), kg.entities.name(dst)
        subj, obj = (dst_n, src_n) if inverse else (src_n, dst_n)
        fact = (dst, rel - R, src, t_link) if inverse else (src, rel, dst, t_link)
        return PathLink(layer, src_n, dst_n, subj, name, obj, bool(inverse), kg.time_axis.label(t_link), int(t_link),
                        int(t_link - t_q), kg.time_axis.format_delta(t_link - t_q), float(alpha), float(grad),
                        kg.time_axis.describe_delta(t_link - t_q), kg.inferred_text(*fact))

    # -- Eq. 14: top-k paths ---------------------------------------------------------------------
    def explain(self, subject: str, relation: str, time: str | int, answer: str, *, direction: Direction = "object",
                setting: str = "auto", num_paths: int = 5, beam: int | None = None,
                simple: bool = True, importance: str = "gradient", steps: int = 16, max_steps: int = 144,
                top_facts: int = 20, measure_facts: int = 0, ranking: str = "marginal") -> Explanation:
        """The ``num_paths`` most important temporal paths from ``subject`` to ``answer`` (only simple
        paths unless ``simple=False``; ``beam``: partial paths kept per entity and layer);
        ``importance``: ``gradient`` (Eq. 14) or ``integrated`` (``steps`` points; module docstring);
        ``top_facts``: how many facts to list by their share of the score (:class:`FactShare`);
        ``measure_facts``: for that many of them (largest share first) also measure what removing each one
        from the data does to the score (one forward pass each; ``FactShare.removal``). A share is an
        attribution -- facts that the rule needs together split it -- while the removal is what the model
        computes without the fact, other paths to the answer included. ``ranking``: ``marginal`` lists the
        paths greedily by what each adds beyond those above it (from a pool of the best by Eq. 14), ``total``
        by Eq. 14's sum; either way each path's ``importance`` is its marginal, and
        :attr:`Explanation.decomposition` adds the rest up to f − f₀.

        A composite model (:mod:`tpar.model.composite`) is explained through its members: each member's paths
        are searched as above, their importances scaled by the member's weight c_i = w_i/T_i in the composite score,
        and paths walking the same facts in the same order merged (their scaled importances summed); the
        history prior's term is reported apart (:class:`HistoryShare`), and the decomposition adds the merged
        paths, every member's rest and the prior's term up to S − S₀ (:meth:`_explain_composite`)."""
        for name, value, least in (("num_paths", num_paths, 1), ("beam", beam, 1), ("steps", steps, 1),
                                   ("max_steps", max_steps, 1), ("top_facts", top_facts, 0),
                                   ("measure_facts", measure_facts, 0)):
            check_count(name, value, least)
        kw = dict(direction=direction, setting=setting, num_paths=num_paths, beam=beam, simple=simple,
                  importance=importance, steps=steps, max_steps=max_steps, top_facts=top_facts,
                  measure_facts=measure_facts, ranking=ranking)
        if self.members is not None:
            return self._explain_composite(subject, relation, time, answer, **kw)
        return self._explain(subject, relation, time, answer, **kw)[0]

    def _explain(self, subject: str, relation: str, time: str | int, answer: str, *, direction: Direction,
                 setting: str, num_paths: int, beam: int | None, simple: bool, importance: str, steps: int,
                 max_steps: int, top_facts: int, measure_facts: int, ranking: str
                 ) -> tuple[Explanation, PropagationTrace, list[torch.Tensor]]:
        """:meth:`explain` for one model, with the (CPU) trace and the links' importances it searched."""
        if importance not in ("gradient", "integrated"):
            raise ValueError(f"importance must be 'gradient' or 'integrated', got {importance!r}")
        if ranking not in ("marginal", "total"):
            raise ValueError(f"ranking must be 'marginal' or 'total', got {ranking!r}")
        if not 1 <= steps <= max_steps:
            raise ValueError(f"need 1 ≤ steps ≤ max_steps, got steps={steps}, max_steps={max_steps}")
        question = Question(subject, relation, time, direction, setting)
        answer = self.kg.entities.resolve(answer, "answer entity")
        a = self.kg.entities.id(answer)
        prepared, scores, trace = self._traced(question, weighted=True)
        subject, relation = prepared.question.subject, prepared.question.relation
        s, t = prepared.subject_id, prepared.time_step
        f = scores[a]
        with torch.no_grad():
            sc = scores.detach().cpu()
            rank, low, high = answer_rank(sc, a)
        reached = any(bool(((n[:, 1] == a)).any()) for n in trace.nodes[-1:])
        link_grads, loop_grads = self._gradients(f, trace, reached)
        used = "gradient"
        extra_warnings = []
        baseline = gap = None
        used_steps = 0
        if importance == "integrated" and not reached:  # said, as the result reports "gradient" (audit 37)
            extra_warnings.append("integrated importance was not computed: no path reaches the answer, so there is "
                                  "nothing to integrate (every share is 0)")
        if importance == "integrated" and reached:
            integrated = self._integrated_once(prepared, a, trace, steps, max_steps=max_steps,
                                               score=float(f.detach()))
            if integrated is None:
                extra_warnings.append("integrated importance unavailable for this question (the model's top-K pruning "
                                      "changes the propagation along the integration path): paths ranked by the "
                                      "gradient")
            else:
                link_grads, loop_grads, used_steps, baseline, gap = integrated
                used = "integrated"
                target = float(f.detach()) - baseline
                if not complete_enough(gap, target):
                    extra_warnings.append(f"integrated importance is approximate: the shares add up to "
                                          f"{target + gap:.4g}, not f − f₀ = {target:.4g}, after {used_steps} points")
        trace = self._on_cpu(trace)  # the search runs on the CPU
        width = beam or max(4 * num_paths, 20)
        pool = self._beam_search(s, a, t, trace, link_grads, loop_grads, num_paths if ranking == "total" else width,
                                 width, simple) if reached else []
        paths = rank_paths(pool, num_paths, ranking)
        if baseline is None:
            baseline = self._no_evidence_score(prepared, a)
        decomposition = decompose(float(f.detach()), baseline, paths, link_grads, loop_grads, used)
        floor = evidence_floor(float(f.detach()))
        facts = self._fact_shares(trace, link_grads, floor, top_facts) if reached else []
        for x in facts[:measure_facts]:
            x.removal = float(f.detach()) - self._score_without(prepared, a, x)
        p = self.predictor
        warnings = list(p.warnings) + extra_warnings
        if not reached:
            warnings.append(f"no temporal path of length ≤ {len(trace.links)} reaches {answer!r}: its score is 0")
        if reached and a == s:
            warnings.append(f"{answer!r} is the question's own subject: every path starts there, and a path never "
                            f"re-enters an entity it has visited, so no path explains this answer (its score comes "
                            f"from the subject staying put through its self-loops and from walks that leave and come "
                            f"back, which are not listed)")
        elif reached and not paths and simple:
            warnings.append(f"no path found that reaches {answer!r} without revisiting an entity: its score comes from "
                            f"walks that revisit one, which are not listed")
        for path in paths:
            path.meaningful = abs(path.total) >= floor
        if paths and not any(path.meaningful for path in paths):
            warnings.append(f"no meaningful evidence for {answer!r}: every path found has |importance| below "
                            f"{floor:.1g}, so no path explains its score")
        caveat = decomposition.caveat(integrated_tried=importance == "integrated")
        warnings += [caveat] if caveat else []
        return Explanation(subject=subject, relation=relation, direction=direction, time=prepared.time_label,
                           time_step=t, setting=prepared.setting.value, answer=answer, score=float(f.detach()),
                           rank=rank, rank_low=low, rank_high=high, reached=reached, paths=paths,
                           num_layers=len(trace.links), warnings=warnings, importance=used, facts=facts,
                           baseline_score=baseline, integration_steps=used_steps,
                           completeness_gap=gap, decomposition=decomposition, ranking=ranking), trace, link_grads

    def _explain_composite(self, subject: str, relation: str, time: str | int, answer: str, *, direction: Direction,
                           setting: str, num_paths: int, beam: int | None, simple: bool, importance: str, steps: int,
                           max_steps: int, top_facts: int, measure_facts: int, ranking: str) -> Explanation:
        """A composite's explanation. Its score is S = Σ_i c_i·f_i + P with c_i = w_i/T_i (w_i = 1/n unless chosen on valid) and P = β·log(1 + ψ/ε)
        (:mod:`tpar.model.composite`), a linear combination, so: every member's path importances (Eq. 14 or
        integrated, ranked by the member's own marginals: no link of a member counted twice) are scaled by c_i;
        paths with the same facts in the same order are merged, their scaled importances summed, and the
        ``num_paths`` largest listed (the others count in the rest); facts' shares are the members' scaled link
        importances summed per fact, their removal measured on the composite; and S − S₀ (S₀ = Σ_i c_i·f₀_i: no
        link of any member, no history) = listed paths + every member's scaled rest (other links, staying put,
        not attributed) + P, exactly."""
        p = self.predictor
        model = p.model
        question = Question(subject, relation, time, direction, setting)
        answer = self.kg.entities.resolve(answer, "answer entity")
        a = self.kg.entities.id(answer)
        prepared = p.prepare(question)
        with torch.no_grad():
            parts = model.parts(prepared.batch, prepared.background)
        scores = parts.scores[0].detach().cpu()
        score = float(scores[a])
        rank, low, high = answer_rank(scores, a)
        reached = bool(parts.any_reached[0, a])
        coef = model.coefficients
        runs = [m._explain(subject, relation, time, answer, direction=direction, setting=setting, num_paths=num_paths,
                           beam=beam, simple=simple, importance=importance, steps=steps, max_steps=max_steps,
                           top_facts=0, measure_facts=0, ranking=ranking) for m in self.members]
        ranked = merge_member_paths([e.paths for e, _, _ in runs], coef)
        paths, dropped = ranked[:num_paths], ranked[num_paths:]
        floor = evidence_floor(score)
        for path in paths:
            path.meaningful = abs(path.total) >= floor
        prior = None
        if model.prior is not None:
            ev = model.prior.evidence(prepared.batch, prepared.background, a)
            prior = HistoryShare.from_evidence(ev, self.kg, prepared.time_step)
        decs = [e.decomposition for e, _, _ in runs]
        f = [e.score for e, _, _ in runs]
        f0 = [d.no_evidence_score for d in decs]
        prior_part = prior.contribution if prior is not None else 0.0
        decomposition = Decomposition(
            score, sum(c * x for c, x in zip(coef, f0)), sum(q.importance for q in paths),
            sum(c * d.rest_links for c, d in zip(coef, decs)) + sum(q.importance for q in dropped),
            sum(c * d.stays for c, d in zip(coef, decs)), sum(c * d.residual for c, d in zip(coef, decs)),
            len({k for q in paths for k in q.link_keys}), sum(d.links for d in decs),
            runs[0][0].importance if len({e.importance for e, _, _ in runs}) == 1 else "mixed",
            prior=prior_part, models=len(runs))
        warnings = list(p.warnings)
        said: dict[str, list[int]] = {}  # a warning several models give is said once, naming them all (audit 40)
        for i, (e, _, _) in enumerate(runs, start=1):  # the gradient's caveat is said once, of the whole score
            for w in e.warnings:
                if w not in p.warnings and w != e.decomposition.caveat(integrated_tried=importance == "integrated"):
                    said.setdefault(w, []).append(i)
        warnings += [f"{models_text(ids, len(runs))}: {w}" for w, ids in said.items()]
        mismatch = sum(c * x for c, x in zip(coef, f)) + prior_part - score
        if abs(mismatch) > 1e-4 * max(1.0, abs(score)):  # the parts must add up to what ranked the answer
            warnings.append(f"the models' scaled scores and the prior add up to {score + mismatch:.6g}, not the "
                            f"composite score {score:.6g}: the decomposition is off by {mismatch:+.2g}")
        if not reached:
            warnings.append(f"no temporal path of any of the {len(runs)} models reaches {answer!r} and the history "
                            "prior gives it nothing: its score is 0")
        links = [x for _, tr, _ in runs for x in tr.links]
        grads = [c * g for c, (_, _, gs) in zip(coef, runs) for g in gs]
        facts = self._fact_shares(PropagationTrace(links=links), grads, floor, top_facts) if reached else []
        for x in facts[:measure_facts]:
            x.removal = score - self._score_without(prepared, a, x)
        members = [MemberShare(i + 1, name, t, c, e.score, d.no_evidence_score, e.rank, e.reached,
                               sum(1 for q in paths if i + 1 in q.models), e.rank_low, e.rank_high)
                   for i, (name, t, c, (e, _, _), d) in enumerate(zip(self._member_names(), model.temperatures, coef,
                                                                      runs, decs))]
        first = runs[0][0]
        caveat = decomposition.caveat(integrated_tried=importance == "integrated")
        warnings += [caveat] if caveat else []
        return Explanation(subject=first.subject, relation=first.relation, direction=direction, time=first.time,
                           time_step=first.time_step, setting=first.setting, answer=answer, score=score, rank=rank,
                           rank_low=low, rank_high=high, reached=reached, paths=paths,
                           num_layers=max(e.num_layers for e, _, _ in runs),
                           warnings=warnings, importance=decomposition.method, facts=facts,
                           baseline_score=decomposition.no_evidence_score,
                           integration_steps=max(e.integration_steps for e, _, _ in runs),
                           completeness_gap=(sum(c * e.completeness_gap for c, (e, _, _) in zip(coef, runs))
                                             if all(e.completeness_gap is not None for e, _, _ in runs) else None),
                           decomposition=decomposition, ranking=ranking, combines=p.checkpoint.combination_text(),
                           formula=model.formula(), members=members, prior=prior)

    def _member_names(self) -> list[str]:
        ck = self.predictor.checkpoint
        names = list(getattr(ck, "member_names", []))
        return [names[i] if i < len(names) else f"model {i + 1}" for i in range(len(self.members or []))]

    @staticmethod
    def _gradients(f: torch.Tensor, trace: PropagationTrace, reached: bool, retain_graph: bool = False
                   ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """∂f/∂w of Eq. 14 per layer for the links and for the self-loops of a weighted ``trace`` (zeros when
        ``reached`` is False: no path reaches the answer), on the CPU."""
        weights = [w for pair in zip(trace.link_weight, trace.loop_weight) for w in pair]
        grads = (torch.autograd.grad(f, weights, allow_unused=True, retain_graph=retain_graph) if reached
                 else [None] * len(weights))
        grads = [torch.zeros_like(w) if g is None else g for w, g in zip(weights, grads)]
        return [g.detach().cpu() for g in grads[0::2]], [g.detach().cpu() for g in grads[1::2]]

    @staticmethod
    def _on_cpu(trace: PropagationTrace) -> PropagationTrace:
        """The parts of ``trace`` the path search reads, on the CPU."""
        return PropagationTrace(nodes=trace.nodes, links=[x.cpu() for x in trace.links],
                                alpha=[x.cpu() for x in trace.alpha], num_links=trace.num_links,
                                loops=[x.cpu() for x in trace.loops])

    def top_paths(self, question: Question, answers: int | list[str] = 1, *, num_paths: int = 5,
                  beam: int | None = None, simple: bool = True) -> TopPaths:
        """The cheapest way to the paths :meth:`explain` lists with ``importance="gradient"`` (Eq. 14, marginal
        ranking: the same paths and importances), for several answers of one question: one traced forward
        pass, one backward pass per answer, no f₀, decomposition or fact shares. ``answers``: the model's
        ``answers`` best-scoring reached entities (the question's own entity left out: no simple path ends
        there), or a list of entity names. A composite model: each member's paths to the composite's answers,
        scaled by the member's weight and merged as :meth:`explain` does (the history prior's part of the score is
        no path and is in none of them)."""
        if self.members is not None:
            return self._top_paths_composite(question, answers, num_paths=num_paths, beam=beam, simple=simple)
        prepared, scores, trace = self._traced(question, weighted=True)
        s, t = prepared.subject_id, prepared.time_step
        kg = self.kg
        with torch.no_grad():
            sc = scores.detach().float().cpu()
        on_last = torch.zeros(kg.num_entities, dtype=torch.bool)
        if trace.nodes:
            on_last[trace.nodes[-1][:, 1].cpu()] = True
        if isinstance(answers, int):
            candidates = torch.nonzero(on_last).squeeze(1)
            candidates = candidates[candidates != s]
            order = torch.argsort(sc[candidates], descending=True, stable=True)[:max(0, answers)]
            ids = candidates[order].tolist()
        else:
            ids = [kg.entities.id(kg.entities.resolve(a, "answer entity")) for a in answers]
        cpu_trace = self._on_cpu(trace)
        width = beam or max(4 * num_paths, 20)
        out = []
        for a in ids:
            reached = bool(on_last[a])
            paths: list[TemporalPath] = []
            if reached:
                link_grads, loop_grads = self._gradients(scores[a], trace, True, retain_graph=True)
                pool = self._beam_search(s, a, t, cpu_trace, link_grads, loop_grads, width, width, simple)
                paths = rank_paths(pool, num_paths, "marginal")
                floor = evidence_floor(float(sc[a]))
                for path in paths:
                    path.meaningful = abs(path.total) >= floor
            rank, low, high = answer_rank(sc, a)
            out.append(AnswerPaths(kg.entities.name(a), int(a), float(sc[a]), rank, reached, paths, low, high))
        q = prepared.question
        return TopPaths(subject=q.subject, relation=q.relation, direction=q.direction, time=prepared.time_label,
                        time_step=t, setting=prepared.setting.value, answers=out)

    def _top_paths_composite(self, question: Question, answers: int | list[str], *, num_paths: int,
                             beam: int | None, simple: bool) -> TopPaths:
        """:meth:`top_paths` of a composite: the answers ranked by the composite's score S, each member's top paths
        to them (:meth:`top_paths` of the member) scaled by its weight c_i and merged (:func:`merge_member_paths`,
        as :meth:`_explain_composite` lists them)."""
        p, kg = self.predictor, self.kg
        prepared = p.prepare(question)
        with torch.no_grad():
            parts = p.model.parts(prepared.batch, prepared.background)
        sc = parts.scores[0].detach().float().cpu()
        reached = parts.any_reached[0].cpu()
        if isinstance(answers, int):
            candidates = torch.nonzero(reached).squeeze(1)
            candidates = candidates[candidates != prepared.subject_id]
            ids = candidates[torch.argsort(sc[candidates], descending=True, stable=True)[:max(0, answers)]].tolist()
        else:
            ids = [kg.entities.id(kg.entities.resolve(a, "answer entity")) for a in answers]
        names = [kg.entities.name(a) for a in ids]
        runs = [m.top_paths(question, names, num_paths=num_paths, beam=beam, simple=simple) for m in self.members]
        out = []
        for j, a in enumerate(ids):
            paths = merge_member_paths([run.answers[j].paths for run in runs], p.model.coefficients)[:num_paths]
            floor = evidence_floor(float(sc[a]))
            for path in paths:
                path.meaningful = abs(path.total) >= floor
            rank, low, high = answer_rank(sc, a)
            out.append(AnswerPaths(names[j], int(a), float(sc[a]), rank, bool(reached[a]), paths, low, high))
        first = runs[0]
        return TopPaths(subject=first.subject, relation=first.relation, direction=first.direction, time=first.time,
                        time_step=first.time_step, setting=first.setting, answers=out)

    def _no_evidence_score(self, prepared: PreparedQuestion, a: int) -> float:
        """f₀: f(q, a) from one pass with every link's and self-loop's weight at 0."""
        with torch.no_grad():
            zero = PropagationTrace(weighted=True, weight_scale=0.0)
            return float(self.predictor.model.eval()(prepared.batch, prepared.background, trace=zero)[0, a])

    def _score_without(self, prepared: PreparedQuestion, a: int, fact: FactShare) -> float:
        """f(q, a) on the data without one known fact (the question's own setting and leakage rules)."""
        p = self.predictor
        data, _ = p.what_if_facts([(fact.subject, fact.relation, fact.object, fact.time)], ())
        q = prepared.question
        other = p.prepare(Question(q.subject, q.relation, q.time, q.direction, prepared.setting.value), data)
        with torch.no_grad():
            return float(p.model.eval()(other.batch, other.background)[0, a])

    def _fact_shares(self, trace: PropagationTrace, link_grads: list[torch.Tensor], floor: float,
                     top: int) -> list[FactShare]:
        """The ``top`` facts by share (|share| ≥ ``floor``): link importances summed per fact."""
        kg, R = self.kg, self.kg.num_relations
        E = kg.num_entities
        if not trace.links or top <= 0:
            return []
        rows = torch.cat(trace.links)  # (M, 5): query, src, rel, dst, time
        attr = torch.cat(link_grads).double()
        inv = rows[:, 2] >= R
        subj = torch.where(inv, rows[:, 3], rows[:, 1])
        obj = torch.where(inv, rows[:, 1], rows[:, 3])
        rel = torch.where(inv, rows[:, 2] - R, rows[:, 2])
        t = rows[:, 4]
        t0 = int(t.min()) if t.numel() else 0
        span = int(t.max()) - t0 + 1 if t.numel() else 1
        key = ((subj * R + rel) * E + obj) * span + (t - t0)
        uniq, inverse = torch.unique(key, return_inverse=True)
        share = torch.zeros(uniq.shape[0], dtype=torch.float64).index_add_(0, inverse, attr)
        count = torch.zeros(uniq.shape[0], dtype=torch.long).index_add_(0, inverse, torch.ones_like(inverse))
        order = torch.argsort(share.abs(), descending=True)[:top]
        out = []
        for i in order.tolist():
            if abs(float(share[i])) < floor:
                break
            k = int(uniq[i])
            k, dt = divmod(k, span)
            k, o = divmod(k, E)
            sid, r = divmod(k, R)
            tt = dt + t0
            out.append(FactShare(kg.entities.name(sid), kg.relations.name(r), kg.entities.name(o),
                                 kg.time_axis.label(tt), tt, float(share[i]), int(count[i])))
        return out

    #: how many questions' integrated gradients an explainer keeps (each some MB: one share per link and layer)
    INTEGRATED_MEMO = 4

    def _integrated_once(self, prepared: PreparedQuestion, a: int, full: PropagationTrace, steps: int, *,
                         max_steps: int | None = None, score: float | None = None
                         ) -> tuple[list[torch.Tensor], list[torch.Tensor], int, float, float] | None:
        """:meth:`_integrated`, computed once per question, answer and number of points among the last
        :data:`INTEGRATED_MEMO` asked (the data's fingerprint in the key: grown data is another question). Only for a
        question prepared on the data's known facts (``predictor.prepare(question)``): the key holds no what-if
        change. The tensors returned are shared by every caller (the app's sessions share one explainer): read them,
        never change them in place. Two sessions missing on one key at once both integrate (the lock guards the
        memo, not the computation)."""
        key = (self.kg.fingerprint, prepared.subject_id, prepared.relation_id, prepared.time_step,
               prepared.setting, a, steps, max_steps)
        with self._memo_lock:
            if key in self._integrated_memo:
                self._integrated_memo.move_to_end(key)
                return self._integrated_memo[key]
        got = self._integrated(prepared, a, full, steps, max_steps=max_steps, score=score)
        with self._memo_lock:
            self._integrated_memo[key] = got
            while len(self._integrated_memo) > self.INTEGRATED_MEMO:
                self._integrated_memo.popitem(last=False)
        return got

    def _integrated(self, prepared: PreparedQuestion, a: int, full: PropagationTrace, steps: int, *,
                    max_steps: int | None = None, score: float | None = None
                    ) -> tuple[list[torch.Tensor], list[torch.Tensor], int, float, float] | None:
        """Integrated gradients of f(q, a) per link and self-loop: (links per layer, self-loops per layer,
        points used, f₀, completeness gap Σ − (f − f₀)), on the CPU; None where a pass at some β admits
        other links than the full pass. Midpoint rule on ``steps`` points, tripled while the gap exceeds
        :data:`COMPLETENESS_TOLERANCE` of |f − f₀| and ``max_steps`` allows (the midpoints of n points
        are among those of 3n, so no pass is repeated)."""
        model = self.predictor.model.eval()
        max_steps = max_steps or steps

        def same(tr: PropagationTrace) -> bool:
            return len(tr.links) == len(full.links) and all(
                torch.equal(x, y) for x, y in zip(tr.links + tr.loops, full.links + full.loops))

        zero = PropagationTrace(weighted=True, weight_scale=0.0)
        with torch.no_grad():
            f0 = float(model(prepared.batch, prepared.background, trace=zero)[0, a])
        if not same(zero):
            return None
        if score is None:
            with torch.no_grad():
                score = float(model(prepared.batch, prepared.background)[0, a])
        sums = dtypes = None

        def add(points: list[float]) -> bool:
            nonlocal sums, dtypes
            for beta in points:
                tr = PropagationTrace(weighted=True, weight_scale=beta)
                with torch.enable_grad():
                    f = model(prepared.batch, prepared.background, trace=tr)[0, a]
                    if not same(tr):
                        return False
                    weights = [w for pair in zip(tr.link_weight, tr.loop_weight) for w in pair]
                    grads = torch.autograd.grad(f, weights, allow_unused=True)
                dtypes = [w.dtype for w in weights]
                grads = [torch.zeros_like(w, dtype=torch.float64) if g is None else g.detach().double()
                         for w, g in zip(weights, grads)]
                sums = grads if sums is None else [x + g for x, g in zip(sums, grads)]
            return True

        n = steps
        if not add([(j + 0.5) / n for j in range(n)]):
            return None
        target = score - f0
        while True:
            gap = sum(float(x.sum()) for x in sums) / n - target  # × (1 − 0): the line runs from w = 0 to 1
            if complete_enough(gap, target) or 3 * n > max_steps:
                break
            if not add([(k + 0.5) / (3 * n) for k in range(3 * n) if k % 3 != 1]):
                return None
            n *= 3
        mean = [(x / n).to(dtype).cpu() for x, dtype in zip(sums, dtypes)]  # in the model's own precision
        return mean[0::2], mean[1::2], n, f0, gap

    def _beam_search(self, s: int, a: int, t_q: int, trace: PropagationTrace, link_grads, loop_grads,
                     k: int, beam: int, simple: bool) -> list[TemporalPath]:
        # per layer: candidate links = admitted links then self-loops, with (src, dst, grad)
        state_ent = torch.tensor([s])
        state_score = torch.zeros(1, dtype=torch.float64)
        state_stay = torch.zeros(1, dtype=torch.float64)
        L = len(trace.links)
        state_hist = torch.full((1, L + 1), -1, dtype=torch.long)  # entities each partial path entered
        state_hist[0, 0] = s
        history = []  # per layer: (link row in layer arrays, parent state row) of every kept state
        for l in range(L):
            lk, lp = trace.links[l], trace.loops[l]
            src = torch.cat([lk[:, 1], lp[:, 1]])
            dst = torch.cat([lk[:, 3], lp[:, 1]])
            g_link = torch.cat([link_grads[l], torch.zeros_like(loop_grads[l])]).double()  # what the search ranks
            g_loop = torch.cat([torch.zeros_like(link_grads[l]), loop_grads[l]]).double()  # reported as "stay"
            if l == L - 1:  # only links into the answer can finish a path
                keep = torch.nonzero(dst == a).squeeze(1)
            else:
                keep = torch.arange(src.shape[0])
            # pair every kept link with every state row at its source entity
            order = torch.argsort(state_ent, stable=True)
            ent_sorted = state_ent[order]
            lo = torch.searchsorted(ent_sorted, src[keep])
            hi = torch.searchsorted(ent_sorted, src[keep], right=True)
            cnt = hi - lo
            link_rows = torch.repeat_interleave(keep, cnt)
            first = torch.repeat_interleave(lo, cnt)
            offs = torch.arange(link_rows.shape[0]) - torch.repeat_interleave(torch.cumsum(cnt, 0) - cnt, cnt)
            parent = order[first + offs]
            score = state_score[parent] + g_link[link_rows]
            stay = state_stay[parent] + g_loop[link_rows]
            cand_dst = dst[link_rows]
            hist = state_hist[parent]
            is_link = link_rows < lk.shape[0]
            if simple:  # a link may not enter an entity the path has already visited (self-loops may stay)
                ok = ~(is_link & (hist == cand_dst.unsqueeze(1)).any(1))
                link_rows, parent, score, stay, cand_dst, hist, is_link = (
                    x[ok] for x in (link_rows, parent, score, stay, cand_dst, hist, is_link))
            hist = hist.clone()
            hist[:, l + 1] = torch.where(is_link, cand_dst, torch.full_like(cand_dst, -1))
            # best `beam` candidates per destination entity
            o1 = torch.argsort(score, descending=True, stable=True)
            o2 = o1[torch.argsort(cand_dst[o1], stable=True)]
            d_sorted = cand_dst[o2]
            if d_sorted.numel() == 0:
                return []
            is_start = torch.ones_like(d_sorted, dtype=torch.bool)
            is_start[1:] = d_sorted[1:] != d_sorted[:-1]
            start_pos = torch.cummax(torch.where(is_start, torch.arange(d_sorted.shape[0]), 0), 0).values
            rank_in_group = torch.arange(d_sorted.shape[0]) - start_pos
            sel = o2[rank_in_group < beam]
            history.append((link_rows[sel], parent[sel]))
            state_ent, state_score, state_stay, state_hist = cand_dst[sel], score[sel], stay[sel], hist[sel]
        # walk back from the answer's states, best first
        final = torch.argsort(state_score, descending=True, stable=True).tolist()
        paths, seen = [], set()
        for row in final:
            hops = []
            r = row
            for l in range(L - 1, -1, -1):
                link_row, parent = history[l]
                hops.append((l, int(link_row[r])))
                r = int(parent[r])
            hops.reverse()
            links, key, ids = [], [], []
            for l, j in hops:
                m = trace.links[l].shape[0]
                if j >= m:  # a self-loop: the path stays where it is this step
                    continue
                q_, src, rel, dst, tl = trace.links[l][j].tolist()
                key.append((src, rel, dst, tl))
                ids.append((l, j))
                links.append(self._link(l + 1, src, rel, dst, tl, t_q, float(trace.alpha[l][j]),
                                        float(link_grads[l][j])))
            key = tuple(key)
            if not links or key in seen:
                continue
            seen.add(key)
            total = float(state_score[row])
            paths.append(TemporalPath(links, total, float(state_stay[row]), total=total, link_keys=tuple(ids)))
            if len(paths) == k:
                break
        return paths

    # -- counterfactual --------------------------------------------------------------------------
    def counterfactual(self, subject: str, relation: str, time: str | int, answer: str, *,
                       direction: Direction = "object", setting: str = "auto", num_paths: int = 10,
                       max_facts: int = 12) -> Counterfactual:
        """Which evidence facts, removed from the data, take ``answer`` off rank 1 (see :class:`Counterfactual`)."""
        p = self.predictor
        question = Question(subject, relation, time, direction, setting)
        e = self.explain(subject, relation, time, answer, direction=direction, setting=setting, num_paths=num_paths)
        a = self.kg.entities.id(e.answer)
        candidates: list[tuple[float, tuple[str, str, str, str]]] = []
        seen = set()
        for path in e.paths:
            for x in path.links:
                fact = (x.subject, x.relation, x.object, x.time)
                if fact not in seen:
                    seen.add(fact)
                    candidates.append((abs(x.gradient), fact))
        candidates.sort(key=lambda c: -c[0])
        facts = [f for _, f in candidates[:max_facts]]

        def rank_without(removed: list) -> tuple[tuple[float, int, int], str]:
            data, _ = p.what_if_facts(removed, ())
            prepared = p.prepare(question, data)
            with torch.no_grad():
                scores = p.model(prepared.batch, prepared.background)[0].float().cpu()
            top = int(torch.argmax(scores))
            return answer_rank(scores, a), self.kg.entities.name(top)

        base = Counterfactual(subject=e.subject, relation=e.relation, direction=e.direction, time=e.time,
                              time_step=e.time_step, setting=e.setting, answer=e.answer, removed=[], flipped=False,
                              rank_before=e.rank, rank_after=e.rank, top_after="", candidates=len(facts),
                              rank_after_low=e.rank_low, rank_after_high=e.rank_high)
        if e.rank != 1:  # a tie at the top is not first either: removing nothing already leaves it off rank 1
            base.reason = f"{e.answer!r} is not ranked first alone (rank {e.rank_text()}): nothing to take away"
            return base

        def done(rank: tuple[float, int, int], top: str, removed: list, flipped: bool) -> Counterfactual:
            (base.rank_after, base.rank_after_low, base.rank_after_high), base.top_after = rank, top
            base.removed, base.flipped = removed, flipped
            return base

        removed: list = []
        rank, top = (e.rank, e.rank_low, e.rank_high), e.answer
        for fact in facts:
            removed.append(fact)
            rank, top = rank_without(removed)
            if rank[0] > 1:
                break
        if rank[0] <= 1:
            base.reason = (f"removing all {len(removed)} evidence facts of the top {num_paths} paths leaves "
                           f"{e.answer!r} first: its score does not rest on these paths alone")
            return done(rank, top, removed, False)
        for fact in list(reversed(removed[:-1])):  # minimal: put back every fact that is not needed
            trial = [f for f in removed if f != fact]
            r, t = rank_without(trial)
            if r[0] > 1:
                removed, rank, top = trial, r, t
        return done(rank, top, removed, True)

    # -- teaching trace --------------------------------------------------------------------------
    def trace(self, subject: str, relation: str, time: str | int, *, direction: Direction = "object",
              setting: str = "auto", top: int = 10, answer: str | None = None, member: int = 0) -> ReasoningTrace:
        """Per layer: entities reached, the newly reached ones, the ``top`` links by attention, and
        the provisional scores w·h^l (of the ``top`` entities and of ``answer``). With an ``answer``
        that some walk reaches, the links shown are those on a walk of L steps (links or stays)
        from the question's entity to the answer: a link of step l whose target can still reach the
        answer in steps l+1..L, and whose attention is at least :data:`ATTENTION_FLOOR`. A composite has no single
        propagation: the trace follows its model ``member`` (0-based), and ``note`` says so."""
        check_count("top", top, 1)
        if self.members is None and member != 0:
            raise DataError(f"member {member!r}: this model is not a composite; it has only model 0")
        if self.members is not None:
            if not isinstance(member, int) or isinstance(member, bool) or not 0 <= member < len(self.members):
                raise DataError(f"member {member!r} is not one of the composite's {len(self.members)} models")
            tr = self.members[member].trace(subject, relation, time, direction=direction, setting=setting, top=top,
                                            answer=answer)
            n = len(self.members)
            tr.note = (f"This traces model {member + 1} of the {n} the ranking combines "
                       f"({self.predictor.checkpoint.combination_text()}); each model propagates on its own, and the "
                       "ranking weighs them all" + (" with the history prior" if self.predictor.model.prior else "")
                       + ": the scores shown here are this model's, not the ranking's.")
            return tr
        question = Question(subject, relation, time, direction, setting)
        if answer is not None:
            answer = self.kg.entities.resolve(answer, "answer entity")
        prepared, _, trace = self._traced(question, weighted=False)
        subject, relation = prepared.question.subject, prepared.question.relation
        s, t = prepared.subject_id, prepared.time_step
        kg = self.kg
        w = self.predictor.model.score
        a = kg.entities.id(answer) if answer is not None else None
        seen = {s}
        layers = []
        towards = self._towards(trace, a) if a is not None else None
        for l in range(len(trace.links)):
            ents = trace.nodes[l][:, 1].tolist()
            with torch.no_grad():
                prov = w(trace.states[l]).squeeze(-1).double()
            order = torch.argsort(prov, descending=True, stable=True)[:top].tolist()
            scores = {kg.entities.name(ents[i]): float(prov[i]) for i in order}
            a_score = a_rank = a_range = None
            if a is not None and a in ents:
                a_score = float(prov[ents.index(a)])
                a_rank, *a_range = answer_rank(prov, ents.index(a))
                scores.setdefault(answer, a_score)
            new = [e for e in ents if e not in seen]
            seen.update(ents)
            alpha = trace.alpha[l]
            if towards is not None:  # on a walk to the answer, and noticed by the attention at all
                on_walk = torch.nonzero(towards[l] & (alpha >= ATTENTION_FLOOR)).squeeze(1)
                best = on_walk[torch.argsort(alpha[on_walk], descending=True, stable=True)[:top]].tolist()
            else:
                best = torch.argsort(alpha, descending=True, stable=True)[:top].tolist()
            links = []
            for j in best:
                _, src, rel, dst, tl = trace.links[l][j].tolist()
                links.append(self._link(l + 1, src, rel, dst, tl, t, float(alpha[j]), 0.0))
            layers.append(LayerSummary(l + 1, len(ents), [kg.entities.name(e) for e in new[:top]],
                                       int(trace.num_links[l]), links, scores, a_score, a_rank,
                                       tuple(a_range) if a_range else None,
                                       None if towards is None else int(towards[l].sum())))
        return ReasoningTrace(subject=subject, relation=relation, direction=direction, time=prepared.time_label,
                              time_step=t, setting=prepared.setting.value, layers=layers, answer=answer)

    @staticmethod
    def _towards(trace: PropagationTrace, answer: int) -> list[torch.Tensor] | None:
        """Per step l, a mask (M_l,) of the admitted links on some L-step walk to ``answer`` (links
        and stays): backwards from {answer} after step L, a link of step l counts when its target
        can reach the answer afterwards, and its source joins the set for step l-1 (an entity
        can always stay). ``None`` when the answer is not reached."""
        L = len(trace.links)
        if not bool((trace.nodes[-1][:, 1] == answer).any()):
            return None
        reach = torch.tensor([answer])
        masks: list[torch.Tensor] = [torch.zeros(0, dtype=torch.bool)] * L
        for l in range(L - 1, -1, -1):
            links = trace.links[l]
            masks[l] = torch.isin(links[:, 3], reach) if links.numel() else torch.zeros(0, dtype=torch.bool)
            reach = torch.unique(torch.cat([reach, links[masks[l], 1]]))
        return masks


def facts_towards(trace: PropagationTrace, answer: int, num_relations: int) -> list[tuple[int, int, int, int]]:
    """The facts (s, r, o, t) walked by a link on some L-step walk (links and stays) from the question's entity
    to ``answer`` (:meth:`Explainer._towards`), each once, in layer then link order; ``[]`` when no walk reaches
    it. Only these facts can move the answer's score: the pool a fair random deletion draws from."""
    masks = Explainer._towards(trace, answer)
    if masks is None:
        return []
    R = num_relations
    out: dict[tuple[int, int, int, int], None] = {}
    for links, mask in zip(trace.links, masks):
        for _, src, rel, dst, t in links[mask].tolist():
            out[(dst, rel - R, src, t) if rel >= R else (src, rel, dst, t)] = None
    return list(out)
