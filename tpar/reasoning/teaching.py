"""Teaching views of a trained model: a question's reasoning as a walk-through of its recursive steps
(:func:`walkthrough`), and the learned relative time encoding (Eqs. 2-3) as curves
(:func:`time_encoding_curves`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from tpar.model.network import TPAR
from tpar.reasoning.explanation import ReasoningTrace
from tpar.reasoning.prediction import Prediction, probability_text, rank_range_text

#: the paper's equations (numbered as in Chen et al., ACL 2024) each step of the walk-through uses
EQUATIONS = {
    "2": r"\mathbf h^{p}_{t} = \sin(\omega_p \Delta t + \varphi_p), \quad \mathbf h^{np}_{t} = \omega_{np} \Delta t + \varphi_{np}"
         r"\qquad (\Delta t = t - t_q)",
    "3": r"\mathbf h_t = \mathbf h^{p}_{t} + \mathbf h^{np}_{t}",
    "5": r"\mathbf M_{(e_s, r, e_o, t)|q} = \mathbf h^{\ell-1}_{e_s} + \mathbf h^{\ell}_r + \mathbf h_t",
    "6": r"\mathbf U_{(e_s, r, e_o, t)|q} = [\mathbf h^{\ell-1}_{e_s} \,\|\, \mathbf h^{\ell}_r \,\|\, \mathbf h^{\ell}_{r_q}"
         r" \,\|\, \mathbf h_t]",
    "7": r"\alpha^{\ell}_{(e_s, r, e_o, t)|q} = \sigma\big((\mathbf w^{\ell}_\alpha)^\top \mathrm{ReLU}(\mathbf W^{\ell}_\alpha"
         r" \mathbf U_{(e_s, r, e_o, t)|q})\big)",
    "8": r"\mathbf h^{\ell}_{e_o} = \delta\Big(\mathbf W^{\ell} \sum_{\mathcal P_{e_q,(\ell)}} \alpha^{\ell}_{(e_s, r, e_o, t)|q}"
         r" \, \mathbf M_{(e_s, r, e_o, t)|q}\Big)",
    "9": r"f(q, e_a) = \mathbf w^\top \mathbf h^{L}_{e_a}",
    "10": r"\mathcal L = \sum_{(q, e_a)} \Big(-f(q, e_a) + \log \sum_{e \in \mathcal E} e^{f(q, e)}\Big)",
}

#: what each equation of :data:`EQUATIONS` is
EQUATION_NAMES = {"2": "periodic and linear time parts", "3": "relative time encoding", "5": "message",
                  "6": "what the attention reads", "7": "attention", "8": "aggregation: the new state",
                  "9": "score", "10": "training loss"}


@dataclass
class WalkStep:
    """One stop of the walk-through: 0 is the question (before any step), 1..L the recursive steps.

    ``best``: the entity with the highest w·h after this step and its value (``None`` at the question,
    when nothing is reached yet); at the last step the model's answer with its score f (Eq. 9) and
    probability. ``answer_*``: the answer being explained (``None`` while it is not reached)."""

    step: int
    title: str
    text: str                       # what happens in this stop, in two or three plain sentences
    equations: list[str]            # keys of :data:`EQUATIONS` this stop uses
    reached: int                    # entities with a state after the stop
    new_entities: list[str]
    links: int                      # temporal links admitted in the step (0 at the question)
    best: str | None = None
    best_score: float | None = None
    best_probability: float | None = None   # at the last step: the model's probability of ``best``
    calibrated: bool = False                # that probability is calibrated for this data (else the raw softmax)
    calibrated_elsewhere: str = ""          # the data its calibration was fitted on, when that is other data
    no_evidence: str = ""                   # at the last step: why the ranking carries no information ("" if it does)
    answer: str | None = None
    answer_score: float | None = None
    answer_rank: float | None = None
    answer_rank_range: tuple[int, int] | None = None  # its best and worst rank among the entities reached so far
    final: bool = False

    def standing(self) -> str:
        """Who answers at this stop, in one plain sentence (never a bare "None")."""
        if self.final and self.no_evidence:
            return (f"No answer: there is no evidence for this question ({self.no_evidence}), so the model's scores "
                    "do not tell the entities apart and naming the first of them would present a guess as an answer.")
        if self.best is None:
            return ("Nothing reached yet: no entity other than the question's has a state, so no entity has a "
                    "score. Every candidate answer is still open.")
        if self.final:
            how = ("(calibrated)" if self.calibrated else
                   f"(calibrated on {self.calibrated_elsewhere}, not on this data: a ranking, not a frequency)"
                   if self.calibrated_elsewhere else "(softmax over all entities, not calibrated)")
            sure = (f", probability {probability_text(self.best_probability)} {how}"
                    if self.best_probability is not None else "")
            return f"The model's answer: {self.best} — score f = w·hᴸ = {self.best_score:.3f}{sure}."
        return (f"Best candidate after step {self.step}: {self.best} (w·h = {self.best_score:.3f}; provisional: "
                "only the last step's value is the score f).")

    def answer_standing(self) -> str:
        """Where the answer being explained stands at this stop ("" when it is the best one, or none is explained)."""
        if self.answer is None or self.answer == self.best:
            return ""
        if self.final and self.no_evidence:
            return f"The answer being explained, {self.answer}, is not told apart from the other entities."
        if self.answer_score is None:
            return f"The answer being explained, {self.answer}, is not reached yet."
        rank = rank_range_text(*self.answer_rank_range) if self.answer_rank_range else f"{self.answer_rank:g}"
        return (f"The answer being explained, {self.answer}: rank {rank} among the entities "
                f"reached so far (w·h = {self.answer_score:.3f}).")


def walkthrough(trace: ReasoningTrace, prediction: Prediction) -> list[WalkStep]:
    """The question and each of the L recursive steps of ``trace``, with the answer named at every stop:
    the best provisional candidate w·h^ℓ, and at the last step the model's own top answer from
    ``prediction`` (the same forward pass's scores, with its probability). A stop led by the question's own
    entity says that no path explains it, unless some fact links that entity to itself
    (``prediction.entity_self_linked``)."""
    L = len(trace.layers)
    where = ("links before the question's time only (extrapolation: the future is unknown)"
             if trace.setting == "extrapolation" else
             "links before or after the question's time (interpolation; the facts that answer the question itself "
             "are hidden)")
    asked = (f"({trace.subject}, {trace.relation}, ?, {trace.time})" if trace.direction == "object" else
             f"(?, {trace.relation}, {trace.subject}, {trace.time})")
    steps = [WalkStep(0, "The question", (
        f"TPAR answers {asked} by walking temporal paths out of "
        f"{trace.subject}, using {where}. Before the first step only {trace.subject} is reached, with the state "
        "h⁰ = 0. A link's time enters only as Δt = t − t_q, encoded by a periodic and a linear part (Eqs. 2-3)."),
        ["2", "3"], 1, [trace.subject], 0, answer=trace.answer)]
    for x in trace.layers:
        final = x.layer == L
        if x.layer == 1:
            what = (f"Step 1 follows the links of {trace.subject} itself. Each link sends a message: the sender's "
                    "state, the relation's vector and the link's time encoding, added up (Eq. 5). Attention α between "
                    "0 and 1 weighs each message (Eqs. 6-7, a sigmoid, so several links can count at once); each "
                    "receiving entity sums its weighted messages (Eq. 8).")
        else:
            what = (f"Step {x.layer} repeats this from every entity reached so far, so paths grow to length "
                    f"{x.layer}; an entity keeps its earlier state through a self-loop.")
        if final:
            what += (f" After this last step (L = {L}) each reached entity scores f = w·hᴸ (Eq. 9); entities no path "
                     "reaches score 0. A softmax over all entities turns scores into probabilities (the distribution "
                     "the loss trains, Eq. 10).")
        step = WalkStep(x.layer, f"Step {x.layer} of {L}", what, ["5", "6", "7", "8"] + (["9", "10"] if final else []),
                        x.entities_reached, list(x.new_entities), x.num_links, answer=trace.answer,
                        answer_score=x.answer_score, answer_rank=x.answer_rank,
                        answer_rank_range=x.answer_rank_range, final=final)
        if final and prediction.no_evidence:  # as the Ask page: no ranking, so no answer named
            step.no_evidence = prediction.no_evidence
        elif final and prediction.answers:
            top = prediction.answers[0]
            step.best, step.best_score, step.best_probability = top.entity, top.score, top.probability
            step.calibrated, step.calibrated_elsewhere = prediction.calibrated, prediction.calibrated_elsewhere
        elif x.scores:
            step.best, step.best_score = max(x.scores.items(), key=lambda kv: (kv[1], kv[0]))
        if step.best == trace.subject and not prediction.entity_self_linked:  # its state, not a path, puts it first
            step.text += (f" The best candidate here is {trace.subject} itself, which no fact links to itself: it "
                          "keeps its own state through self-loops (and walks that leave and come back), so read it as "
                          "nothing reached scoring higher, not as an answer a path explains.")
        steps.append(step)
    return steps


@dataclass
class TimeEncodingCurves:
    """The learned relative time encoding (Eqs. 2-3) evaluated on a dense grid of Δt, for plotting
    (:data:`GRID_PER_STEP` points per time step, so even a two-step period draws as a smooth wave).

    ``periodic`` / ``linear``: (len(dt), k) values of the k selected dimensions. Periodic dimensions:
    for each period of interest (e.g. 7 and 30 days) the dimension whose learned period 2π/|ω_p| is
    nearest to it (``highlight`` names them), then other dimensions whose periods show as waves over
    the plotted range (longer than 4 steps, shorter than the range). Linear: the steepest slopes."""

    dt: list[float]
    periodic: list[list[float]]
    periodic_dims: list[int]
    periods: list[float]          # 2π/|ω_p| of each selected periodic dimension, in time steps
    linear: list[list[float]]
    linear_dims: list[int]
    slopes: list[float]           # ω_np of each selected linear dimension
    highlight: dict[int, float] = field(default_factory=dict)  # periodic dim -> the period of interest it is nearest to


#: grid points per time step of the time-encoding curves
GRID_PER_STEP = 16


def time_encoding_curves(model: TPAR, span: int = 60, k: int = 4,
                         periods_of_interest: tuple[float, ...] = (7.0, 30.0)) -> TimeEncodingCurves:
    """Evaluate ``model.time_encoding`` on Δt from -span to span, :data:`GRID_PER_STEP` points per step
    (the integer steps among them; on the CPU, no gradients); ``periods_of_interest`` in time steps
    (7 and 30 for daily data)."""
    te = model.time_encoding
    with torch.no_grad():
        dts = torch.linspace(-span, span, 2 * span * GRID_PER_STEP + 1, dtype=te.omega_p.dtype,
                             device=te.omega_p.device)
        per, lin = te.periodic(dts).cpu(), te.linear(dts).cpu()
        w_p, w_np = te.omega_p.detach().cpu(), te.omega_np.detach().cpu()
    periods = (2 * np.pi / w_p.abs().clamp_min(1e-9)).numpy()
    chosen: list[int] = []
    highlight: dict[int, float] = {}
    for target in periods_of_interest:
        order = np.argsort(np.abs(np.log(periods / target)))  # nearest on a log scale
        best = next((int(i) for i in order if int(i) not in chosen), None)
        if best is None:  # fewer periodic dimensions than periods of interest (a model of d = 1): draw what there is
            break
        chosen.append(best)
        highlight[best] = float(target)
    visible = [int(i) for i in np.argsort(periods) if 4 < periods[i] < 2 * span and int(i) not in chosen]
    step = max(1, len(visible) // max(1, k - len(chosen)))
    chosen += visible[::step][: max(0, k - len(chosen))]
    ld = torch.argsort(w_np.abs(), descending=True)[:k].tolist()
    return TimeEncodingCurves(dt=dts.cpu().tolist(), periodic=per[:, chosen].tolist(), periodic_dims=chosen,
                              periods=[float(periods[i]) for i in chosen], linear=lin[:, ld].tolist(),
                              linear_dims=ld, slopes=[float(w_np[i]) for i in ld], highlight=highlight)
