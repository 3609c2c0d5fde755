"""How TPAR reasons: the current question stepped through the recursive encoding layer by layer,
the model's relative time encoding, and (on the sample world) the planted rule beside TPAR's top
path."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import explorer as ex
import palette
from tpar.reasoning.explanation import ATTENTION_FLOOR, LayerSummary, ReasoningTrace
from tpar.reasoning.prediction import Prediction, rank_range_text
from tpar.reasoning.rules import PlantedRules, days_per_step, rule_followed
from tpar.reasoning.teaching import EQUATION_NAMES, EQUATIONS, TimeEncodingCurves, WalkStep, time_encoding_curves, walkthrough

ANSWER_COLOUR, OTHER_COLOUR = palette.CHOSEN, palette.OTHER


def render() -> None:
    st.title("How TPAR reasons")
    sel = ex.require_model(ex.selection())
    kg = sel.kg
    if not ex.question_ready():
        ex.default_question_into_state(sel)
        st.info("Showing an example question; change it on the Ask page.")
    ex.fill_question(kg, sel.match.info.setting)  # a shared link's unknown name or time: mended as Ask mends it
    explainer = sel.explainer()
    member = member_ui(sel, explainer)
    model = explainer.members[member].predictor.model if explainer.members else explainer.predictor.model
    L = model.cfg.num_layers
    pred = ex.current_prediction(sel)
    if not pred.answers:
        st.info("No answers.")
        st.stop()
    ex.keep_or_reset_answer(pred.answers[0].entity)
    answer = ex.take_name("answer", kg.entities, "answer", pred.answers[0].entity, "this page traces")
    ranking = pred  # the answers the Ask page ranks
    if explainer.members:  # the walk-through follows one model: its own answers
        pred = ex.member_ask(*sel.keys, ex.current_question(), int(st.session_state.get("k", ex.DEFAULTS["k"])),
                             member)
    st.markdown(f"#### {ex.question_heading(pred)}")
    if pred.provenance:  # which model and data, as on the Ask page
        st.caption(ex.keep_together(ex.md(f"Model {sel.match.info.name}: {pred.provenance}.")))
    for w in pred.warnings:  # the Ask page's caveats: a setting or data the model was not trained on, ties, …
        st.warning(ex.sentence(w))
    if pred.no_evidence:
        st.info(ex.md(f"No evidence for this question: {pred.no_evidence}. The steps below show why; the last one "
                      "names no answer."))
    followed = ("the answer followed through the steps" if not pred.no_evidence else
                "the entity followed through the steps (not an answer: there is no evidence)")
    st.caption(f"Setting **{pred.setting}**; model L = {L}, d = {model.cfg.dim}; {followed} "
               f"(orange): **{ex.md(answer)}**. Change the question on the Ask page and the answer on the Evidence page.")
    st.markdown("A five-minute walk-through: start at the question and press **Next ▶** (or **Play all**) through the "
                f"{L} recursive steps; each says what happens, with the paper's equations, and who answers so far. "
                "Section 2 shows how time enters the model, section 3 (on the sample world) the rule that made the fact.")
    tr = ex.trace(*sel.keys, ex.current_question(), answer, member)
    if tr.note:
        st.info(ex.md(tr.note))
    steps_ui(tr, pred, answer, L)
    st.subheader("2 · Relative time encoding (Eqs. 2-3)")
    st.markdown("Every link's time enters only as Δt = t − t_q. The model learned a **periodic** part "
                "sin(ω_p Δt + φ_p) (weekly or monthly habits) and a **linear** part ω_np Δt + φ_np (recency); their "
                "sum is h_t. Below: the dimensions with the shortest learned periods, and the linear dimensions that "
                "change fastest.")
    per_day = days_per_step(kg.time_axis)
    targets = tuple(d / per_day for d in (7, 30)) if per_day else ()
    curves = time_encoding_curves(model, int(min(max(explainer.predictor.time_span, 14), 60)),
                                  periods_of_interest=targets)
    time_encoding_ui(curves, kg.time_axis.unit, per_day)
    planted = PlantedRules.find(sel.source.path)
    if planted is not None:
        rule_ui(sel, planted, ranking, answer)
    ex.sync_url()


def member_ui(sel: ex.Selection, explainer) -> int:
    """For a composite model, the one of its models the page steps through (0-based), chosen in a select box and
    said plainly: the ranking combines them all; 0 for a single model."""
    if not explainer.members:
        return 0
    ck = sel.match.info.checkpoint
    n = len(explainer.members)
    names = list(getattr(ck, "member_names", []))
    st.info(ex.md(f"The ranking on the Ask page combines {ck.combination_text()} "
                  f"({explainer.predictor.model.formula()}). Each model propagates on its own, so this page steps "
                  "through one of them: the walk-through's scores and answers are that model's alone (the rule check "
                  "in section 3 uses the ranking's own explanation, all models merged)."))
    options = list(range(n))
    if st.session_state.get("teach_member") not in options:
        st.session_state["teach_member"] = 0
    return st.selectbox("Model of the composite to step through", options, key="teach_member",
                        format_func=lambda i: f"model {i + 1}" + (f" ({names[i]})" if i < len(names) else ""))


#: the walk-through's step control (0: the question, 1..L: the recursive steps)
STEP_KEY = "teach_step"
#: seconds per step while the walk-through plays
PLAY_SECONDS = 3.0


def steps_ui(tr: ReasoningTrace, pred: Prediction, answer: str, L: int) -> None:
    """Section 1: the question, then each recursive step, driven by one step control (Back / Next / Play
    move the same control); each stop says what happens (with the paper's equations), who answers so
    far, and shows the scores and the links with the most attention. A table of every step follows."""
    st.subheader("1 · Evidence spreads one hop a step")
    st.caption("Each step, every entity reached so far passes what it holds along the facts around it (Eqs. 5-8), so "
               "after step ℓ each entity ℓ hops from the question holds a summary of the temporal paths that reach it: "
               "the way the Bellman-Ford shortest-path algorithm spreads distances one edge at a time, which the paper "
               "builds on (its Section 3.2). An entity's standing after a step is w·h: its state h read through the "
               "model's scoring vector w (Eq. 9); after the last step, w·h is the answer's score f.")
    ss = st.session_state
    steps = walkthrough(tr, pred)
    key = (tr.subject, tr.relation, tr.time, tr.direction, tr.setting, answer, L)
    if ss.get("teach_for") != key or ss.get(STEP_KEY) not in range(L + 1):  # a new question starts at the question
        ss[STEP_KEY], ss["teach_playing"], ss["teach_for"] = 0, False, key
    playing = bool(ss.get("teach_playing"))
    st.fragment(stepper, run_every=PLAY_SECONDS if playing else None)(steps, tr, answer, playing)
    st.dataframe(pd.DataFrame([step_row(x, steps[x.layer]) for x in tr.layers]), hide_index=True, width="stretch",
                 column_config={  # narrow columns, two figures per cell: the table fits 820 px
                     "ℓ": st.column_config.NumberColumn("ℓ", width=36, help="the recursive step"),
                     "reached": st.column_config.NumberColumn("reached", width=68,
                                                              help="entities with a state after the step"),
                     "links": st.column_config.NumberColumn("links", width=60,
                                                            help="temporal links admitted in the step"),
                     "best so far (w·h)": st.column_config.TextColumn(
                         "best so far (w·h)", help="the highest w·h after the step (the last step's is the score f)"),
                     "answer (w·h, rank)": st.column_config.TextColumn(
                         "answer (w·h, rank)",
                         help=f"{ex.md(answer)}, the answer being explained: its w·h (only the last step's is f) and its "
                              "rank among the entities reached so far (a range where it ties); \"not reached\" before a "
                              "path reaches it")})


def step_row(x: LayerSummary, step: WalkStep) -> dict:
    """One row of the table of every step: ``x`` a layer of the trace, ``step`` its stop of the walk-through."""
    if step.best:
        best = f"{step.best} ({step.best_score:.3f})"
    else:
        best = "no answer (no evidence)" if step.no_evidence else "nothing reached yet"
    answer = "not reached" if x.answer_score is None else (
        f"{x.answer_score:.3f}" + (f", rank {rank_range_text(*x.answer_rank_range)}" if x.answer_rank_range else ""))
    return {"ℓ": x.layer, "reached": x.entities_reached, "links": x.num_links, "best so far (w·h)": best,
            "answer (w·h, rank)": answer}


def stepper(steps: list[WalkStep], tr: ReasoningTrace, answer: str, ticking: bool) -> None:
    """The walk-through's one step control and the stop it shows (a fragment: while playing it reruns
    every :data:`PLAY_SECONDS` and moves the control on; the last step stops it)."""
    ss = st.session_state
    L = len(steps) - 1
    if ticking != bool(ss.get("teach_playing")):  # Play or Stop was pressed: the fragment's timer must change
        st.rerun(scope="app")
    if ticking and time.time() >= ss.get("teach_next_at", 0.0):
        if ss[STEP_KEY] < L:
            ss[STEP_KEY] += 1
            ss["teach_next_at"] = time.time() + PLAY_SECONDS - 0.2
        if ss[STEP_KEY] >= L:
            ss["teach_playing"] = False
            st.rerun(scope="app")

    def stop() -> None:
        ss["teach_playing"] = False

    def move(by: int) -> None:
        ss[STEP_KEY] = max(0, min(L, ss[STEP_KEY] + by))
        stop()

    def play() -> None:  # every step in turn: from the question, wherever the control stood
        ss[STEP_KEY] = 0
        ss["teach_playing"], ss["teach_next_at"] = True, time.time() + PLAY_SECONDS

    row = st.container(horizontal=True, vertical_alignment="bottom")  # wraps onto a second line when narrow
    row.segmented_control("Walk through the reasoning", list(range(L + 1)), key=STEP_KEY, required=True,
                          format_func=lambda i: "the question" if i == 0 else f"step {i}", on_change=stop)
    row.button("◀ Back", key="teach_back", on_click=move, args=(-1,), disabled=ss[STEP_KEY] == 0)
    row.button("Next ▶", key="teach_next", on_click=move, args=(1,), disabled=ss[STEP_KEY] == L, type="primary")
    if ticking:
        row.button("■ Stop", key="teach_stop", on_click=stop)
    else:
        row.button("Play all", key="teach_play", on_click=play, icon=":material/play_arrow:",
                   help=f"every step in turn, {PLAY_SECONDS:g} s each, on the same control")
    x = steps[ss[STEP_KEY]]
    st.markdown(f"**{ex.md(x.title)}.** {ex.md(x.text)}")
    box = st.success if x.final else st.info
    box(ex.md(x.standing()), icon=":material/flag:" if x.final else ":material/search:")
    if x.answer_standing():
        st.caption(ex.md(x.answer_standing()))
    with st.expander(f"The paper's equations in this {'stop' if x.step == 0 else 'step'} "
                     f"(Eqs. {', '.join(x.equations)})"):
        for k in x.equations:
            st.caption(f"Eq. {k}: {EQUATION_NAMES[k]}")
            st.latex(EQUATIONS[k])
    if x.step == 0:
        return
    layer = tr.layers[x.step - 1]
    ex.show_chart(score_bars(layer.scores, answer, x.step, L, layer.answer_rank_range), key="teach_bars")
    new = (f"; newly reached: {', '.join(layer.new_entities[:8])}" + (", …" if len(layer.new_entities) > 8 else "")
           if layer.new_entities else "")
    st.markdown(ex.md(f"Step {x.step}: {ex.plural(layer.entities_reached, 'entity', 'entities')} reached, "
                      f"{ex.plural(layer.num_links, 'temporal link')} admitted{new}" + ("" if new.endswith("…") else ".")))
    if layer.links_towards_answer is None:
        st.caption(ex.md(f"{answer} is not reached" + (": below, the links with the most attention in this step, "
                                                        "wherever they lead." if layer.top_links else ".")))
    else:
        below = (f"; below, those the attention notices (α ≥ {ATTENTION_FLOOR:g}), highest first" if layer.top_links
                 else "")
        st.caption(ex.md(f"{layer.links_towards_answer:,} of these links lie on a walk to {answer} within the "
                         f"remaining steps{below}."))
    if not layer.top_links:
        st.info(ex.md(f"No link on the way to {answer} gets noticeable attention in step {x.step}: the model carries "
                      "its states over (self-loops) and uses the evidence in another step."))
        return
    # a static table wraps its cells, so all five columns fit 820 px (a data grid cut off the time); its cells are
    # Markdown, so every name is escaped
    st.table(pd.DataFrame([{"α": f"{lk.attention:.3f}", "from": ex.md(lk.source), "relation": ex.md(lk.arrow_label),
                            "to": ex.md(lk.target),
                            # the date kept on one line: a narrow column broke it at its hyphens ("2025-" / "12-06")
                            "when": ex.keep_together(ex.md(f"{lk.when or lk.delta_label} ({lk.time})"))}
                           for lk in layer.top_links]), hide_index=True)
    st.caption("α: the link's attention in this step; ← : the fact walked backwards; when: before or after the "
               "question, and the fact's time.")


#: the least span of the w·h axis (values within it of each other and of 0 are drawn as the small values they are)
MIN_SPAN = 0.01


def score_bars(scores: dict[str, float], answer: str, step: int, L: int,
               answer_rank: tuple[int, int] | None = None) -> go.Figure:
    """The highest w·h after ``step`` (at most 12 entities) and, wherever it stands, the answer being explained (in
    orange, with its rank among every entity reached when below them: ``answer_rank``, the trace's, since ``scores``
    holds only the top and the answer); the axis fits the values, negative ones included."""
    ranked = sorted(((v, n) for n, v in scores.items()), reverse=True)
    top = ranked[:12]
    labels = [ex.plot_text(n) for _, n in top]
    if answer in scores and all(n != answer for _, n in top):  # followed at every step, not only once on top
        # the rank among all reached (the text's and the table's), never among the bars (walk-through 38 #1: the
        # chart said rank 13 where the text said 77)
        rank = (f" (rank {rank_range_text(*answer_rank)})" if answer_rank else "")
        top.append((scores[answer], answer))
        labels.append(ex.plot_text(f"{answer}{rank}"))
    vals = [v for v, _ in top] or [0.0]
    lo, hi = min(0.0, min(vals)), max(0.0, max(vals))
    if hi - lo < MIN_SPAN:  # scores that differ by float noise must not fill the chart as if they mattered
        hi = lo + MIN_SPAN
    pad = 0.05 * (hi - lo)
    fig = go.Figure(go.Bar(x=[v for v, _ in top], y=labels, orientation="h",
                           marker_color=[ANSWER_COLOUR if n == answer else OTHER_COLOUR for _, n in top],
                           hovertemplate="%{y}: %{x:.3f}<extra></extra>"))
    title = (f"score f = w·h after the last step ({L})" if step == L
             else f"w·h after step {step} of {L} (provisional)")
    fig.update_layout(height=max(200, 60 + 26 * len(top)), margin=dict(l=10, r=10, t=36, b=10), title=title,
                      xaxis={"range": [lo - pad, hi + pad]}, yaxis={"autorange": "reversed"})
    return fig


def time_encoding_ui(curves: TimeEncodingCurves, unit: str, per_day: float | None) -> None:
    """Section 2: the periodic and linear parts of the learned time encoding against Δt; the learned
    periods nearest a week and a month drawn thick."""
    def fig_of(title: str, traces: list[go.Scatter]) -> go.Figure:
        fig = go.Figure(traces)
        fig.update_layout(height=340, margin=dict(l=10, r=10, t=40, b=10), title=title, xaxis_title=f"Δt ({unit})",
                          legend=dict(orientation="h", yanchor="top", y=-0.25))
        return fig

    periodic = np.array(curves.periodic)
    traces = []
    for j, (dim, period) in enumerate(zip(curves.periodic_dims, curves.periods)):
        target = curves.highlight.get(dim)
        name = f"period {period:.1f} {unit}" + (f" (nearest {target * (per_day or 1):g} days)" if target else "")
        traces.append(go.Scatter(x=curves.dt, y=periodic[:, j], mode="lines", name=name,
                                 line={"width": 3.5 if target else 1.2}, opacity=1.0 if target else 0.55))
    linear = np.array(curves.linear)
    lin_traces = [go.Scatter(x=curves.dt, y=linear[:, j], mode="lines", name=f"slope {w:+.3f} per {unit}")
                  for j, w in enumerate(curves.slopes)]
    span = max((abs(v) for v in curves.dt), default=60.0)
    # about two turns of the longest highlighted period in view: over the whole span the short periods drew a
    # solid band at 820 px (walk-through 37); double-clicking the chart shows all of it
    longest = max((curves.periods[curves.periodic_dims.index(d)] for d in curves.highlight), default=span)
    shown = min(span, max(14.0, 1.1 * longest))
    periodic_fig = fig_of("Periodic part (habits)", traces)
    periodic_fig.update_xaxes(range=[-shown, shown])
    ex.show_chart(periodic_fig)
    ex.show_chart(fig_of("Linear part (recency)", lin_traces))
    zoom = (f" The periodic chart shows Δt within ±{shown:.0f} {unit} of the question; double-click it for the "
            f"whole ±{span:.0f} {unit}." if shown < span else "")
    if curves.highlight:
        found = ", ".join(f"{curves.periods[curves.periodic_dims.index(d)]:.1f} {unit} (for {t * (per_day or 1):g} days)"
                          for d, t in curves.highlight.items())
        st.caption(f"Learned periods nearest a week and a month: {found}. Thick lines; the thin ones are other "
                   f"learned periods that show as waves.{zoom}")
    elif zoom:
        st.caption(zoom.strip())


def rule_ui(sel: ex.Selection, planted: PlantedRules, pred: Prediction, answer: str) -> None:
    """Section 3 (data with planted rules): the rule that produced the fact beside TPAR's top path,
    checked for relations, directions and timing; a clear label when the model has not learned it."""
    st.subheader("3 · TPAR's top path beside the rule that made the answer")
    if pred.no_evidence:  # no answer to set beside a rule: the entity followed is no fact the model proposes
        st.info("No evidence for this question, so there is no answer to set beside a planted rule. Pick an example "
                "question on the Ask page.")
        return
    subj, obj = (pred.subject, answer) if pred.direction == "object" else (answer, pred.subject)
    rule = planted.rule_of(subj, pred.relation, obj, pred.time)
    if rule is None:
        made = planted.answers_of(pred.subject, pred.relation, pred.time, pred.direction)
        if not made:
            st.info(ex.md(f"The fact ({subj}, {pred.relation}, {obj}, {pred.time})") + " was not produced by a "
                    "planted rule (it is not in the data, or it is a seed or noise fact). Pick an example question on "
                    "the Ask page.")
            return
        # a question whose answer a rule made, the model following another one (a showcase question shared without
        # its answer): the rule's answer is set beside the model's path to it (walk-through 38 #5)
        order = {a.entity: i for i, a in enumerate(pred.answers)}  # the rule-made answer the model ranks best
        answer, rule = min(made, key=lambda ar: (order.get(ar[0], len(order)), ar[0]))
        subj, obj = (pred.subject, answer) if pred.direction == "object" else (answer, pred.subject)
        which = ("the answer a rule made is" if len(made) == 1 else
                 f"of the {len(made)} answers rules made, the one the model ranks best is")
        st.info(ex.md(f"The answer followed above was not made by a planted rule; {which} {answer}: ({subj}, "
                      f"{pred.relation}, {obj}, {pred.time}). Below, the model's most important path to {answer} "
                      "beside that rule."))
    e = ex.current_explanation(sel, answer, 3)
    c1, c2 = st.columns(2)
    with c1:
        kind = f" ({ex.md(rule['kind'])})" if rule["kind"] != rule["id"] else ""  # not the name twice
        # the id is the data folder's text: escaped, not put in a code span a backtick in it could end
        st.markdown(f"**Planted rule** *{ex.md(rule['id'])}*{kind}: {ex.md(rule['description'])}")
        st.code("  ∧  ".join(rule["body"]) + f"\n  ⇒  {rule['head']}", language=None, wrap_lines=True)
    with c2:
        if e.paths:
            top = e.paths[0]
            check = rule_followed(top.links, rule, pred.direction, e.time_step, days_per_step(sel.kg.time_axis))
            mark = ":material/check_circle: follows the rule" if check.fits else ":material/cancel: does not follow the rule"
            st.markdown(f"**TPAR's most important path** {mark}: {ex.md(check.reason)}.")
            st.code(top.describe(), language=None, wrap_lines=True)
        else:
            check = None
            st.warning("No temporal path reaches this answer.")
    learned = e.rank == 1 and check is not None and check.fits
    if not learned:
        why = (f"it ranks the rule's answer {e.rank_text()}, not first" if e.rank != 1 else
               "its top path is not the rule's body at the rule's times")
        st.warning(f"This model has not learned the {ex.md(rule['id'])} rule for this question: {why}. The page shows "
                   "what the model computed, not what the rule says.")


if __name__ == "__main__":  # run as a page by st.navigation (importable without side effects)
    render()
