"""How TPAR reasons: the current question stepped through the recursive encoding layer by layer,
the model's relative time encoding, and (on the sample world) the planted rule beside TPAR's top
path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import explorer as ex
import palette
from tpar.reasoning.explanation import ATTENTION_FLOOR, ReasoningTrace
from tpar.reasoning.prediction import Prediction
from tpar.reasoning.rules import PlantedRules, days_per_step, rule_followed
from tpar.reasoning.teaching import TimeEncodingCurves, time_encoding_curves

ANSWER_COLOUR, OTHER_COLOUR = palette.CHOSEN, palette.OTHER


def render() -> None:
    st.title("How TPAR reasons")
    ss = st.session_state
    sel = ex.require_model(ex.selection())
    kg = sel.kg
    if not ex.question_ready():
        ex.default_question_into_state(sel)
        st.info("Showing an example question; change it on the Ask page.")
    explainer = sel.explainer()
    model = explainer.predictor.model
    L = model.cfg.num_layers
    pred = ex.current_prediction(sel)
    if not pred.answers:
        st.info("No answers.")
        st.stop()
    ex.keep_or_reset_answer(pred.answers[0].entity)
    answer = ex.take_name("answer", kg.entities, "answer", pred.answers[0].entity, "this page traces")
    st.markdown(f"#### {ex.md(ex.prediction_text(pred))} → {ex.md(answer)}")
    st.caption(f"Setting **{pred.setting}**; model L = {L}, d = {model.cfg.dim}. Change the question on the Ask page "
               "and the answer on the Evidence page.")
    tr = ex.trace(*sel.keys, ex.current_question(), answer)
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
        rule_ui(sel, planted, pred, answer)
    ex.sync_url()


def steps_ui(tr: ReasoningTrace, pred: Prediction, answer: str, L: int) -> None:
    """Section 1: entities and links per step, the animation of w·h^ℓ, and one step's top links."""
    st.subheader("1 · Bellman-Ford over temporal paths")
    st.markdown(
        f"TPAR starts with every entity's state at zero (h⁰ = 0) and repeats one step L = {L} times. In step ℓ each "
        "entity reached so far sends a **message** along every temporal link it may use (Eq. 5: its state + the "
        "relation's vector + the link's **relative time** Δt = t − t_q, encoded by Eqs. 2-3). A small network gives "
        "each message an **attention** α between 0 and 1 (Eqs. 6-7, a sigmoid, so several links can matter at once), "
        "and each receiving entity sums its weighted messages (Eq. 8). An entity reached after L steps scores "
        "f = w·h^L (Eq. 9); entities no path reaches score 0. "
        + ("Links must lie before t_q (extrapolation)." if pred.setting == "extrapolation"
           else "Links may lie before or after t_q (interpolation); facts that answer the question itself are hidden."))
    st.dataframe(pd.DataFrame([{"step ℓ": x.layer, "reached": x.entities_reached, "links": x.num_links,
                                "answer's w·h": x.answer_score, "answer's rank": x.answer_rank} for x in tr.layers]),
                 hide_index=True, width="stretch", column_config={
                     "reached": st.column_config.NumberColumn("reached", help="entities with a state after the step"),
                     "links": st.column_config.NumberColumn("links", help="temporal links admitted in the step"),
                     "answer's w·h": st.column_config.NumberColumn("answer's w·h", format="%.4f",
                                                                   help="w·h of the answer after the step (Eq. 9 "
                                                                        "applied early; only the last step's is f)"),
                     "answer's rank": st.column_config.NumberColumn(
                         "answer's rank", help="among the entities reached so far (realistic ties)")})
    st.caption(f"Below: w·h^ℓ after each step; only ℓ = {L} is the model's score f. The answer in orange; press ▶ "
               "to play the steps.")
    st.plotly_chart(score_animation(tr, answer, L), config={"displaylogo": False})
    step = st.slider("Look inside step ℓ", 1, L, L, key="teach_layer") if L > 1 else 1
    x = tr.layers[step - 1]
    new = (f"; newly reached: {ex.md(', '.join(x.new_entities[:8]))}" + ("…" if len(x.new_entities) > 8 else "")
           if x.new_entities else "")
    st.markdown(f"**Step {step}**: {x.entities_reached:,} entities reached, {x.num_links:,} temporal links admitted"
                f"{new}.")
    if x.links_towards_answer is None:
        st.caption("The answer is not reached: the links with the most attention in this step, wherever they lead.")
    else:
        st.caption(f"{x.links_towards_answer:,} of these links lie on a walk to **{ex.md(answer)}** within the "
                   f"remaining steps; below, those the attention notices (α ≥ {ATTENTION_FLOOR:g}), highest first.")
    if not x.top_links:
        st.info(f"No link on the way to the answer gets noticeable attention in step {step}: the model carries its "
                "states over (self-loops) and uses the evidence in another step.")
        return
    st.dataframe(pd.DataFrame([{"α": lk.attention, "from": lk.source, "relation": lk.arrow_label, "to": lk.target,
                                "when": lk.when or lk.delta_label, "time": lk.time} for lk in x.top_links]),
                 hide_index=True, width="stretch", column_config={
                     "α": st.column_config.ProgressColumn("attention α", min_value=0.0, max_value=1.0, format="%.3f"),
                     "relation": st.column_config.TextColumn("relation", help="← : the fact walked backwards"),
                     "when": st.column_config.TextColumn("when (before/after the question)")})


def score_animation(tr: ReasoningTrace, answer: str, L: int) -> go.Figure:
    """Bars of the top provisional scores w·h^ℓ after each step (play button and layer slider)."""
    names = sorted({n for x in tr.layers for n in x.scores} | {answer}, key=str.casefold)
    frames = []
    for x in tr.layers:
        vals = {n: x.scores.get(n) for n in names}
        frames.append((x.layer, sorted(((v, n) for n, v in vals.items() if v is not None), reverse=True)[:12]))

    def x_range(top: list) -> list[float]:
        vals = [v for v, _ in top] or [0.0]
        lo, hi = min(0.0, min(vals)), max(0.0, max(vals))
        pad = 0.05 * (hi - lo or 1.0)
        return [lo - pad, hi + pad]

    def bars(top: list) -> go.Bar:
        return go.Bar(x=[v for v, _ in top], y=[ex.plot_text(n) for _, n in top], orientation="h",
                      marker_color=[ANSWER_COLOUR if n == answer else OTHER_COLOUR for _, n in top])

    fig = go.Figure(layout={"xaxis": {"range": x_range(frames[0][1])}}, data=[bars(frames[0][1])],
                    frames=[go.Frame(name=str(lv), data=[bars(top)], layout={"xaxis": {"range": x_range(top)}})
                            for lv, top in frames])  # each layer on its own scale
    fig.update_layout(
        height=460, margin=dict(l=10, r=10, t=20, b=90), yaxis={"autorange": "reversed"},
        updatemenus=[{"type": "buttons", "x": 0.0, "xanchor": "right", "y": -0.06, "yanchor": "top",
                      "showactive": False,
                      "buttons": [{"label": "▶ play", "method": "animate",
                                   "args": [None, {"frame": {"duration": 1200, "redraw": True}, "fromcurrent": True}]}]}],
        sliders=[{"currentvalue": {"visible": False}, "x": 0.0, "len": 1.0, "y": -0.04, "yanchor": "top",
                  "steps": [
            {"label": str(lv), "method": "animate",
             "args": [[str(lv)], {"mode": "immediate", "frame": {"duration": 0, "redraw": True}}]} for lv, _ in frames]}])
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
    st.plotly_chart(fig_of("Periodic part (habits)", traces), config={"displaylogo": False})
    st.plotly_chart(fig_of("Linear part (recency)", lin_traces), config={"displaylogo": False})
    if curves.highlight:
        found = ", ".join(f"{curves.periods[curves.periodic_dims.index(d)]:.1f} {unit} (for {t * (per_day or 1):g} days)"
                          for d, t in curves.highlight.items())
        st.caption(f"Learned periods nearest a week and a month: {found}. Thick lines; the thin ones are other "
                   "learned periods that show as waves over ±60 steps.")


def rule_ui(sel: ex.Selection, planted: PlantedRules, pred: Prediction, answer: str) -> None:
    """Section 3 (data with planted rules): the rule that produced the fact beside TPAR's top path,
    checked for relations, directions and timing; a clear label when the model has not learned it."""
    st.subheader("3 · TPAR's top path beside the rule that made the answer")
    subj, obj = (pred.subject, answer) if pred.direction == "object" else (answer, pred.subject)
    rule = planted.rule_of(subj, pred.relation, obj, pred.time)
    if rule is None:
        st.info(ex.md(f"The fact ({subj}, {pred.relation}, {obj}, {pred.time})") + " was not produced by a "
                "planted rule (it is not in the data, or it is a seed or noise fact). Pick an example question on "
                "the Ask page.")
        return
    e = ex.current_explanation(sel, answer, 3)
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**Planted rule** `{rule['id']}` ({ex.md(rule['kind'])}): {ex.md(rule['description'])}")
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
        why = (f"it ranks the rule's answer {e.rank:g}, not first" if e.rank != 1 else
               "its top path is not the rule's body at the rule's times")
        st.warning(f"This model has not learned the {ex.md(rule['id'])} rule for this question: {why}. The page shows "
                   "what the model computed, not what the rule says.")


if __name__ == "__main__":  # run as a page by st.navigation (importable without side effects)
    render()
