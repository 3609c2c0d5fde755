"""A composite model: several trained TPAR models and a history prior that rank as one (issue #29).

For a question q = (s, r, ?, t_q) and a candidate e the composite scores

    S(q, e) = Σ_i w_i · f_i(q, e) / T_i  +  β · log(1 + ψ(e | q) / ε)

with f_i the score of member i (paper Eq. 9), T_i > 0 its calibration temperature (fitted on valid), w_i > 0
its weight (Σ w_i = 1: 1/n each unless weights were chosen on valid, :mod:`tpar.model.ensemble`), ψ the recurrency baseline's score (:class:`tpar.evaluation.baselines.RecurrencyBaseline`:
α·ψ_λ + (1 − α)·ξ, how often and how recently e answered (s, r, ?) before, plus its share of r; fitted on
valid) and ε > 0, β ≥ 0 chosen on valid (:mod:`tpar.model.ensemble`). n = 1 with the prior is a single model
with the copy mechanism; no prior is a plain ensemble.

**Why this is the ensemble of the calibrated distributions.** Member i's calibrated distribution is Eq. 10's
softmax at temperature T_i: log p_i(e) = f_i(e)/T_i − log Z_i with Z_i = Σ_e' exp(f_i(e')/T_i). The weighted
mean of the members' log-probabilities plus the prior's log(ε + ψ) is

    Σ_i w_i log p_i(e) + β·log(ε + ψ(e)) = S(q, e) − Σ_i w_i log Z_i + β·log ε,

and neither Z_i nor β·log ε depends on e: S differs from it by a constant per question, so both rank every
candidate alike, tie alike (realistic ranks are the same) and give the same softmax (the constant cancels).
S is the form kept because an entity with no evidence of any kind -- no member's path reaches it (f_i = 0: h = 0
in Eq. 9) and ψ = 0 -- scores exactly 0, as it does for a single model; and because S is a linear combination
of the members' f_i plus one prior term, an explanation can split it exactly (:mod:`tpar.reasoning.explanation`).

**Leakage.** The prior reads the question's background only through
:meth:`tpar.graph.background.Background.edges_from` and counts before t_q (extrapolation) or without the
question's own fact (interpolation), exactly as the members do: it sees what the model sees, never more.

**File.** One ``.tpar`` file (format :data:`COMPOSITE_FORMAT`, written by ``torch.save`` with plain data only,
read with ``weights_only=True``): each member's complete single-checkpoint metadata (configs, relations, time
axis, history, calibration, seed, its own sha256) and weights under ``members.<i>.``, the temperatures,
the member weights when chosen on valid (format version 2; a composite of equal weights keeps version 1, which
every tpar since the composite reads), the prior's fitted parameters with ε and β, the selection record (the valid MRR of every candidate tried),
the composite's own calibration (fitted on valid), the data fingerprint and seeds, and a sha256 over all of it.
Loading (:meth:`CompositeCheckpoint.from_payload`, reached through :meth:`Checkpoint.load`) checks the schema,
every member's digest and stored numbers, the temperatures, the prior's parameters and the selection's figures.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import nn

from tpar.errors import DataError, finite_number, plural
from tpar.evaluation.baselines import RecurrencyBaseline
from tpar.evaluation.calibration import T_BOUNDS
from tpar.graph.background import Background
from tpar.graph.queries import QueryBatch
from tpar.model.checkpoint import (Checkpoint, WeightsOnDisk, _check_meta_schema, atomic_torch_save,
                                   check_finite_weights, checked_weights, content_digest, number_problems,
                                   out_of_range, parse_meta, stored_number_problems, weights_digest)
from tpar.model.network import TPAR

#: the composite's file format: "tpar-composite-v<N>"; version 2 adds member weights (written only by a composite
#: whose weights were chosen on valid, so that a tpar reading version 1 only refuses it rather than averaging)
COMPOSITE_PREFIX, COMPOSITE_VERSION = "tpar-composite-v", 2
COMPOSITE_FORMAT = f"{COMPOSITE_PREFIX}{COMPOSITE_VERSION}"
COMPOSITE_FORMATS = tuple(f"{COMPOSITE_PREFIX}{v}" for v in range(1, COMPOSITE_VERSION + 1))
#: at most this many members (each a full model: the file stays a few MB)
MAX_MEMBERS = 8
#: the smallest share a member's weight may have (the weight search's smallest is 1/(1 + 4·7)); below it a model
#: would count for nothing while the card and the formula still list it
MIN_SHARE = 1e-3
#: selection record fields and the type each must have when present (:func:`check_selection`)
_SELECTION_TYPES = {"split": str, "queries": int, "subset": int, "seed": int, "metric": str, "chosen": str,
                    "eligible": str, "candidates": dict, "eps_grid": list, "beta_grid": list, "prior_asked": bool,
                    "weights_searched": bool, "given": list, "kept": list, "left_out": list,
                    "temperature_sources": list}
#: the prior's ε and β must lie in these ranges
EPS_RANGE, BETA_RANGE = (1e-12, 1e3), (0.0, 1e3)


def combine_scores(f: list[torch.Tensor], coefficients: tuple[float, ...], psi: torch.Tensor | None = None,
                   eps: float = 1.0, beta: float = 0.0) -> torch.Tensor:
    """S = Σ_i c_i·f_i + β·log(1 + ψ/ε) (the module docstring; c_i = w_i/T_i), (B, E) in the members' dtype.
    The one place the sum is computed: the composite model and the selection on valid (:mod:`tpar.model.ensemble`)
    both call it, so what was selected is what ranks."""
    out = coefficients[0] * f[0]
    for c, x in zip(coefficients[1:], f[1:]):
        out = out + c * x
    if psi is not None and beta:
        out = out + prior_term(psi, eps, beta).to(out.device, out.dtype)
    return out


def same_model(models: list[Checkpoint]) -> tuple[int, int] | None:
    """The first pair (i, j), i < j, of ``models`` that hold the same weights (a copy, renamed or with other
    metadata: the sha256 of its weights alone; a composite's sha256), or None: a composite averages different models,
    and a copy would weigh one twice. The one rule of ``tpar ensemble`` and the composite loader."""
    keys = [weights_digest(m.weights) if m.kind == "single" else m.digest for m in models]
    return next(((i, j) for j, b in enumerate(keys) for i, a in enumerate(keys[:j]) if a == b), None)


def normalised_weights(weights) -> tuple[float, ...]:
    """w_i / Σ w: the shares a composite stores (the one place they are computed, so that the selection on valid
    and the saved composite rank with the same floating-point coefficients)."""
    total = float(sum(weights))
    return tuple(float(w) / total for w in weights)


def member_coefficients(temperatures, weights=None) -> tuple[float, ...]:
    """c_i of S: 1/(n·T_i) with equal weights (``weights`` None), else w_i/T_i with the stored shares w_i."""
    if weights is None:
        n = len(temperatures)
        return tuple(1.0 / (n * t) for t in temperatures)
    return tuple(w / t for w, t in zip(weights, temperatures))


def prior_term(psi: torch.Tensor, eps: float, beta: float) -> torch.Tensor:
    """β·log(1 + ψ/ε): 0 where ψ = 0 (no history), computed as β·log1p(ψ/ε) (exact for small ψ/ε)."""
    return beta * torch.log1p(psi.double() / eps)


@dataclass
class PriorEvidence:
    """What the history prior gives one candidate of one question (for explanations). ``times``: the time
    steps at which the candidate already answered the question -- the links (s, r, e, t') the question's
    background admits (before t_q when forecasting; never the question's own fact) -- the most recent last."""

    value: float          # ψ = α·ψ_λ + (1 − α)·ξ, the recurrency score
    recency: float        # ψ_λ: the recency-weighted count of earlier (s, r, e, t')
    share: float          # ξ: e's share of the background's links of relation r
    lmbda: float          # λ used for this relation (per time step)
    alpha: float          # α used for this relation
    count: int            # how many such links
    times: list[int]      # their time steps, ascending
    contribution: float   # β·log(1 + ψ/ε): what it adds to the score
    eps: float
    beta: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class HistoryPrior:
    """β·log(1 + ψ/ε) with ψ the fitted recurrency baseline's score (see the module docstring). ψ is computed on
    the CPU (the baseline's arithmetic); a background on another device is copied once and kept."""

    recurrency: RecurrencyBaseline
    eps: float
    beta: float

    def __post_init__(self) -> None:
        self._cpu: tuple | None = None  # (index on the device, its CPU background): the index itself, never its id

    def psi(self, batch: QueryBatch, background: Background) -> torch.Tensor:
        """(B, E) float64 ψ of every entity, on the CPU."""
        bg = self._on_cpu(background)
        return self.recurrency.score(batch.to("cpu"), bg).double()

    def _on_cpu(self, background: Background) -> Background:
        if background.index.src.device.type == "cpu":
            return background
        cached = self._cpu
        if cached is None or cached[0] is not background.index or cached[1].setting is not background.setting:
            cached = self._cpu = (background.index, background.to("cpu"))
        return cached[1]

    def term(self, psi: torch.Tensor) -> torch.Tensor:
        return prior_term(psi, self.eps, self.beta)

    def evidence(self, batch: QueryBatch, background: Background, entity: int) -> PriorEvidence:
        """The prior's account of ``entity`` for the single question of ``batch``."""
        from tpar.evaluation.baselines import _direct_links

        b = batch.to("cpu")
        bg = self._on_cpu(background)
        rec = self.recurrency
        lam, alp = rec._params_for(b.relation)
        recency = float(rec.psi(b, bg, lam)[0, entity])
        share = float(rec.xi(b, bg)[0, entity])
        value = float(alp[0]) * recency + (1 - float(alp[0])) * share
        edges, _ = _direct_links(b, bg)
        times = sorted(int(t) for t in bg.index.time[edges[bg.index.dst[edges] == entity]].tolist())
        return PriorEvidence(value, recency, share, float(lam[0]), float(alp[0]), len(times), times,
                             float(self.term(torch.tensor([value], dtype=torch.float64))[0]), self.eps, self.beta)

    def to_dict(self) -> dict:
        return {"recurrency": self.recurrency.params(), "eps": self.eps, "beta": self.beta}

    @classmethod
    def from_dict(cls, d: dict, num_relations: int) -> "HistoryPrior":
        """The stored prior, every value checked (ValueError naming the first that is wrong)."""
        if not isinstance(d, dict):
            raise ValueError("the prior is not an object")
        for name, (lo, hi) in (("eps", EPS_RANGE), ("beta", BETA_RANGE)):
            v = d.get(name)
            if not (finite_number(v) and lo <= v <= hi):
                raise ValueError(f"prior {name} {str(v)[:40]!r} is not a finite number in {lo:g}..{hi:g}")
        return cls(RecurrencyBaseline.from_params(d.get("recurrency"), num_relations), float(d["eps"]),
                   float(d["beta"]))


def check_selection(selection: object) -> None:
    """The selection record's shape (ValueError naming the first field that is wrong): each known field of its
    type, every candidate an object with a number ``mrr``, the names and sources strings, ``kept`` positions
    (whole numbers at least 0). Its numbers' ranges are checked with the other stored figures."""
    if not isinstance(selection, dict):
        raise ValueError("selection must be an object")
    for key, kind in _SELECTION_TYPES.items():
        v = selection.get(key)
        if v is not None and (not isinstance(v, kind) or (kind is int and isinstance(v, bool))):
            raise ValueError(f"selection.{key} must be a {kind.__name__}, not {type(v).__name__}")
    for name, c in selection.get("candidates", {}).items():
        if not isinstance(c, dict) or isinstance(c.get("mrr"), bool) or not isinstance(c.get("mrr"), (int, float)):
            raise ValueError(f"selection candidate {str(name)[:60]!r} has no number mrr")
    for key in ("given", "left_out", "temperature_sources"):
        if not all(isinstance(x, str) for x in selection.get(key) or []):
            raise ValueError(f"selection.{key} must hold names")
    for key in ("eps_grid", "beta_grid"):
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in selection.get(key) or []):
            raise ValueError(f"selection.{key} must hold numbers")
    if not all(isinstance(j, int) and not isinstance(j, bool) and j >= 0 for j in selection.get("kept") or []):
        raise ValueError("selection.kept must hold positions (whole numbers from 0)")


def _file_meta(m: Checkpoint) -> dict | None:
    """``m``'s metadata as the file it was loaded from holds it, when that still describes ``m`` (nothing changed
    since: the same weights, and the same metadata once read again); None else."""
    mm = m.source_meta
    if mm is None or not mm.get("sha256"):
        return None
    weights = dict(m.weights.items())  # one read of weights kept on disk
    if content_digest(mm, weights) != mm["sha256"]:
        return None
    try:
        again = Checkpoint.from_meta(json.loads(json.dumps(mm)), weights)
    except (DataError, KeyError, TypeError, ValueError):
        return None
    return mm if again.meta() == m.meta() else None


@dataclass
class CompositeParts:
    """One forward pass of every part: ``f[i]`` (B, E) member i's scores (Eq. 9), ``reached[i]`` (B, E) what its
    paths reach, ``psi`` (B, E) the prior's ψ (None without a prior), ``scores`` the composite S."""

    f: list[torch.Tensor]
    reached: list[torch.Tensor]
    psi: torch.Tensor | None
    scores: torch.Tensor

    @property
    def any_reached(self) -> torch.Tensor:
        """(B, E): some member's path reaches the entity, or the prior gives it something (ψ > 0)."""
        out = self.reached[0].clone()
        for r in self.reached[1:]:
            out |= r
        if self.psi is not None:
            out |= (self.psi > 0).to(out.device)
        return out


class CompositeModel(nn.Module):
    """S(q, e) of the module docstring for a batch of questions, with the interface of
    :class:`~tpar.model.network.TPAR` that rankers and predictors use (``forward``, ``scores_and_reach``).
    Explanations go through each member (:mod:`tpar.reasoning.explanation`): a composite has no single
    propagation to trace."""

    def __init__(self, members: list[TPAR], temperatures: list[float], prior: HistoryPrior | None = None,
                 weights: list[float] | None = None) -> None:
        super().__init__()
        if not members or len(members) != len(temperatures):
            raise ValueError("a composite needs at least one member and one temperature per member")
        if weights is not None and (len(weights) != len(members) or not all(w > 0 for w in weights)):
            raise ValueError("a composite needs one positive weight per member")
        self.members = nn.ModuleList(members)
        self.temperatures = tuple(float(t) for t in temperatures)
        self.weights = None if weights is None else tuple(float(w) for w in weights)  # as stored (Σ = 1)
        self.prior = prior

    @property
    def coefficients(self) -> tuple[float, ...]:
        """c_i = w_i/T_i: each member's factor in S (:func:`member_coefficients`)."""
        return member_coefficients(self.temperatures, self.weights)

    def parts(self, batch: QueryBatch, background: Background) -> CompositeParts:
        f, reached = [], []
        for m in self.members:
            s, r = m.scores_and_reach(batch, background)
            f.append(s)
            reached.append(r)
        psi = self.prior.psi(batch, background) if self.prior is not None else None
        scores = combine_scores(f, self.coefficients, psi, *(
            (self.prior.eps, self.prior.beta) if self.prior is not None else (1.0, 0.0)))
        return CompositeParts(f, reached, psi, scores)

    def scores_and_reach(self, batch: QueryBatch, background: Background, trace=None) -> tuple[torch.Tensor, torch.Tensor]:
        """(S (B, E), reached (B, E)): reached by some member's path, or ψ > 0. An entity with neither scores 0."""
        if trace is not None:
            raise ValueError("a composite has no single propagation to trace: trace each member")
        p = self.parts(batch, background)
        return p.scores, p.any_reached

    def forward(self, batch: QueryBatch, background: Background, trace=None) -> torch.Tensor:
        return self.scores_and_reach(batch, background, trace)[0]

    def formula(self) -> str:
        """S in symbols with its numbers (:func:`composite_formula`)."""
        return composite_formula(self.temperatures, self.weights, self.prior)


def composite_formula(temperatures, weights, prior: HistoryPrior | None) -> str:
    """S in symbols with its numbers, e.g. "S = f₁/(2·0.958) + f₂/(2·0.972) + 0.4·log(1 + ψ/0.01)", or with
    weights chosen on valid "S = 0.25·f₁/0.958 + 0.75·f₂/0.972 + …" -- from the numbers alone, so a listed
    composite says it without building its models."""
    n = len(temperatures)
    sub = "₁₂₃₄₅₆₇₈₉"
    name = [f"f{sub[i] if i < 9 else i + 1}" for i in range(n)]
    if weights is None:
        parts = [f"{f}/({n}·{t:.3g})" for f, t in zip(name, temperatures)]
    else:
        parts = [f"{w:.3g}·{f}/{t:.3g}" for f, w, t in zip(name, weights, temperatures)]
    if prior is not None:
        parts.append(f"{prior.beta:g}·log(1 + ψ/{prior.eps:g})")
    return "S = " + " + ".join(parts)


@dataclass
class CompositeCheckpoint(Checkpoint):
    """A composite model's file content (see the module docstring). It is a :class:`Checkpoint` for every
    consumer: relations, time axis, setting, data fingerprint, calibration (``extra["calibration"]``, fitted
    on valid for the composite's own scores) and ``build_model``, which gives a :class:`CompositeModel`.
    ``config`` is the first member's run config (what one model's shape is asked for); ``members`` holds each
    member's, and ``weights`` all their weights under ``members.<i>.``."""

    members: list[Checkpoint] = field(default_factory=list)
    temperatures: list[float] = field(default_factory=list)
    prior: dict | None = None          # HistoryPrior.to_dict(), or None: no prior
    selection: dict = field(default_factory=dict)  # how it was chosen on valid (tpar.model.ensemble)
    member_names: list[str] = field(default_factory=list)  # where each member came from (file names)
    member_weights: list[float] | None = None  # w_i chosen on valid (Σ = 1), or None: 1/n each

    kind = "composite"

    @classmethod
    def assemble(cls, members: list[Checkpoint], temperatures: list[float], prior: HistoryPrior | None, *,
                 setting: str, selection: dict, member_names: list[str], extra: dict | None = None,
                 metrics: dict | None = None, member_weights: list[float] | None = None) -> "CompositeCheckpoint":
        """A composite of ``members`` (same relations, time axis and data), ready to save; ``member_weights``:
        each member's w_i (positive, normalised here), None for 1/n each."""
        if not 1 <= len(members) <= MAX_MEMBERS:
            raise DataError(f"a composite takes 1 to {MAX_MEMBERS} models, not {len(members)}")
        first = members[0]
        for i, m in enumerate(members[1:], start=2):
            if list(m.relations) != list(first.relations) or m.time_axis != first.time_axis:
                raise DataError(f"model {i} has other relations or another time axis than model 1: their scores "
                                "answer different questions and cannot be combined")
            if m.data_fingerprint != first.data_fingerprint:
                raise DataError(f"model {i} was trained on other data ({m.data_name}, fingerprint "
                                f"{m.data_fingerprint[:12]}) than model 1 ({first.data_name}, "
                                f"{first.data_fingerprint[:12]})")
            if m.kind != "single":
                raise DataError(f"model {i} is itself a composite: combine its members instead")
        if first.kind != "single":
            raise DataError("model 1 is itself a composite: combine its members instead")
        weights = {f"members.{i}.{k}": v.detach().cpu() for i, m in enumerate(members) for k, v in m.weights.items()}
        ck = cls(config=first.config, weights=weights, relations=list(first.relations), time_axis=first.time_axis,
                 setting=setting, data_name=first.data_name, data_fingerprint=first.data_fingerprint,
                 metrics=dict(metrics or {}), extra=dict(extra or {}), members=list(members),
                 temperatures=[float(t) for t in temperatures], prior=prior.to_dict() if prior is not None else None,
                 selection=selection, member_names=list(member_names),
                 member_weights=None if member_weights is None else list(normalised_weights(member_weights)))
        ck._check_parts()
        return ck

    # -- the model ----------------------------------------------------------------------------------
    @property
    def member_checkpoints(self) -> list[Checkpoint]:
        return list(self.members)

    def history_prior(self) -> HistoryPrior | None:
        return HistoryPrior.from_dict(self.prior, len(self.relations)) if self.prior is not None else None

    def build_model(self, device: str | torch.device = "cpu", *, exact_propagation: bool = False) -> CompositeModel:
        """The :class:`CompositeModel` (each member built as :meth:`Checkpoint.build_model` builds it; weights left
        on disk, :class:`~tpar.model.checkpoint.WeightsOnDisk`, are read once for all members)."""
        return CompositeModel([m.build_model(device, exact_propagation=exact_propagation) for m in self._held()],
                              self.temperatures, self.history_prior(), self.member_weights).eval()

    def formula(self) -> str:
        """S in symbols with its numbers (:func:`composite_formula`), without building a model."""
        return composite_formula(self.temperatures, self.member_weights, self.history_prior())

    def _held(self) -> list[Checkpoint]:
        """The members with their weights in memory: these, or those of one verified read of the file."""
        if isinstance(self.weights, WeightsOnDisk):
            return self.weights.checkpoint().member_checkpoints
        return self.members

    def _check_shapes(self, weights: dict[str, torch.Tensor] | None = None) -> None:
        for m in self._held():  # each member's own weights (``weights``, all of them, is not split again here)
            m._check_shapes()

    def describe(self) -> str:
        """E.g. "composite of 2 models (L=3, d=64; L=3, d=64, cap=24+repeats=1 from step 2) + history prior"."""
        inner = "; ".join(m.describe() for m in self.members)
        n = len(self.members)
        return (f"composite of {plural(n, 'model')} ({inner})" + self._weights_text()
                + (" + history prior" if self.prior is not None else ""))

    def _weights_text(self) -> str:
        """", weighted 0.25 / 0.75 on valid" when the weights were chosen, else ""."""
        if self.member_weights is None:
            return ""
        return ", weighted " + " / ".join(f"{w:.2g}" for w in self.member_weights) + " on valid"

    def combination_text(self) -> str:
        """What the ranking combines, in words: "2 models and the history prior"."""
        n = len(self.members)
        return (plural(n, 'model') + self._weights_text()
                + (" and the history prior" if self.prior is not None else ""))

    def unfinished(self) -> str:
        why = [f"model {i}: {m.unfinished()}" for i, m in enumerate(self.members, start=1) if m.unfinished()]
        return "; ".join(why)

    # -- io -----------------------------------------------------------------------------------------
    def meta(self) -> dict:
        members = []
        for m in self._held():  # as its file holds it (its sha256 the file's), else as it is now; one read on disk
            mm = _file_meta(m)
            if mm is None:
                mm = m.meta()
                mm["sha256"] = content_digest(mm, m.weights)
            members.append(mm)
        weights = {} if self.member_weights is None else {"member_weights": list(self.member_weights)}
        return {"kind": "composite", "members": members, "member_names": list(self.member_names),
                "temperatures": list(self.temperatures), **weights, "prior": self.prior, "selection": self.selection,
                "relations": list(self.relations), "time_axis": self.time_axis, "setting": self.setting,
                "data_name": self.data_name, "data_fingerprint": self.data_fingerprint, "metrics": self.metrics,
                "extra": self.extra, "version": self.version}

    def save(self, path: str | Path, *, optimizer: dict | None = None, position: dict | None = None) -> None:
        if optimizer is not None or position is not None:
            raise ValueError("a composite model is not trained: it has no optimiser state to resume")
        meta = self.meta()
        weights = dict(self.weights.items())  # one read of weights left on disk
        meta["sha256"] = content_digest(meta, weights)
        self.digest = meta["sha256"]
        fmt = COMPOSITE_FORMAT if self.member_weights is not None else COMPOSITE_FORMATS[0]  # readers of v1 too
        atomic_torch_save({"format": fmt, "meta": json.dumps(meta),
                           "weights": {k: v.detach().cpu() for k, v in weights.items()}}, path)

    @classmethod
    def from_payload(cls, payload: dict, p: Path) -> "CompositeCheckpoint":
        """The composite in a loaded payload, verified: the schema, the sha256 over everything, each member as a
        single checkpoint is verified (its own sha256, shapes, stored numbers, finite weights), the members'
        relations and time axis, the temperatures, the prior's parameters and the selection's figures."""
        try:
            meta = parse_meta(payload["meta"])
            _check_meta_schema(meta)
            if meta.get("kind") != "composite":
                raise ValueError("kind must be 'composite'")
            if meta.get("setting") == "unified":
                raise ValueError("a composite is chosen for one setting: 'unified' is not one")
            weights = checked_weights(payload["weights"])
            if content_digest(meta, weights) != meta.get("sha256"):
                raise DataError("refused: the metadata or weights do not match their recorded sha256 (file altered "
                                "or corrupt)")
            members_meta = meta["members"]
            if not isinstance(members_meta, list) or not 1 <= len(members_meta) <= MAX_MEMBERS:
                raise ValueError(f"members must be a list of 1 to {MAX_MEMBERS} models")
            members, claimed = [], set()
            for i, mm in enumerate(members_meta):
                prefix = f"members.{i}."
                own = {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}
                claimed.update(prefix + k for k in own)
                if not isinstance(mm, dict):
                    raise ValueError(f"member {i + 1} is not an object")
                _check_meta_schema(mm)
                if mm.get("kind", "single") != "single":
                    raise ValueError(f"model {i + 1} is not a single trained model")
                if content_digest(mm, own) != mm.get("sha256"):
                    raise DataError(f"refused: model {i + 1}'s metadata or weights do not match its recorded sha256 "
                                    "(file altered or corrupt)")
                try:
                    members.append(Checkpoint.from_meta(mm, own, f"{p} (model {i + 1})"))
                except DataError as e:
                    raise DataError(f"model {i + 1}: {e.problem}") from None
            twin = same_model(members)  # once, after every member is read: each one's weights hashed once
            if twin is not None:  # a composite averages different models: a copy would weigh one twice
                raise ValueError(f"model {twin[1] + 1} holds the same weights as model {twin[0] + 1}")
            stray = sorted(set(weights) - claimed)
            if stray:
                raise ValueError(f"weights of no member: {', '.join(stray[:3])}")
            temps = meta["temperatures"]
            names = meta.get("member_names", [])
            if not isinstance(temps, list) or len(temps) != len(members):
                raise ValueError("one temperature per member is needed")
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or len(names) not in (
                    0, len(members)):
                raise ValueError("member_names must be a list of one name per member")
            weights_meta = meta.get("member_weights")
            if (weights_meta is not None) != (payload.get("format") == COMPOSITE_FORMAT):
                raise ValueError(f"member weights belong to format {COMPOSITE_FORMAT}, and it needs them")
            selection = meta.get("selection", {})
            check_selection(selection)
            ck = cls(config=members[0].config, weights=weights, relations=meta["relations"],
                     time_axis=meta["time_axis"], setting=meta["setting"], data_name=meta["data_name"],
                     data_fingerprint=meta["data_fingerprint"], metrics=meta.get("metrics", {}),
                     extra=meta.get("extra", {}), version=meta.get("version", "?"), members=members,
                     temperatures=temps, prior=meta.get("prior"), selection=selection, member_names=names,
                     member_weights=weights_meta)
            ck._check_parts()
            digests = ck.extra.get("member_digests")
            if digests is not None and digests != [m.digest for m in members]:
                raise DataError("refused: the member digests recorded do not match the models (file altered or "
                                "corrupt)")
            problems = stored_number_problems(meta) + number_problems("selection", selection)
            if problems:
                raise DataError(out_of_range(problems))
            check_finite_weights(weights)
            ck.digest = str(meta["sha256"])
            ck._check_calibration()
            for i, m in enumerate(members, start=1):
                ck.load_notes += [f"model {i}: {n}" for n in m.load_notes]
        except DataError as e:
            raise DataError(e.problem, file=p) from None
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError, OverflowError) as e:
            raise DataError(f"composite model metadata is malformed ({type(e).__name__}: {str(e)[:200]})",
                            file=p) from None
        return ck

    def _check_parts(self) -> None:
        """Members that answer the composite's questions; temperatures in range; a readable prior (ValueError)."""
        for i, m in enumerate(self.members, start=1):
            if m.data_fingerprint != self.data_fingerprint:
                raise ValueError(f"model {i} was trained on other data than the composite's")
            if list(m.relations) != list(self.relations):
                raise ValueError(f"model {i}'s relations are not the composite's")
            if m.time_axis != self.time_axis:
                raise ValueError(f"model {i}'s time axis is not the composite's")
        for i, t in enumerate(self.temperatures, start=1):
            if not (finite_number(t) and T_BOUNDS[0] <= t <= T_BOUNDS[1]):
                raise ValueError(f"temperature of model {i} {str(t)[:40]!r} is not a finite number in "
                                 f"{T_BOUNDS[0]:g}..{T_BOUNDS[1]:g}")
        if self.member_weights is not None:
            w = self.member_weights
            if not isinstance(w, list) or len(w) != len(self.members) or not all(
                    finite_number(x) and MIN_SHARE <= x <= 1
                    for x in w) or abs(sum(w) - 1) > 1e-6:
                shown = w[:4] if isinstance(w, list) else type(w).__name__
                raise ValueError(f"member weights {str(shown)[:80]}{' …' if isinstance(w, list) and len(w) > 4 else ''} "
                                 f"are not one share of at least {MIN_SHARE:g} per model, summing to 1")
        if self.prior is not None:
            HistoryPrior.from_dict(self.prior, len(self.relations))
