"""Evidence: the top temporal paths from the query entity to a chosen answer (paper Section 5.4)."""

from __future__ import annotations


import pandas as pd
import streamlit as st

import explorer as ex
from evidence_graph import FUTURE, PAST, SAME, evidence_html
from tpar.evaluation.reports import csv_text
from tpar.reasoning.explanation import Explanation
from tpar.reasoning.prediction import Prediction


def render() -> None:
    st.title("Evidence")
    ss = st.session_state
    sel = ex.require_model(ex.selection())
    if not ex.question_ready():
        ex.ask_first()
    pred = ex.current_prediction(sel)
    st.markdown(f"#### {ex.md(ex.prediction_text(pred))}")
    if not pred.answers:
        st.info("No answers.")
        st.stop()
    answer_ui(pred, sel.kg.entities)
    e = ex.current_explanation(sel, ss["answer"], int(ss["paths"]))
    st.caption(f"Setting **{e.setting}**; score f(q, a) = {e.score:.3f}, rank {e.rank:g}. Importance of a path = "
               "the sum over its links of ∂f(q, a)/∂(link weight) in the layer that uses it (Eq. 14, found by beam "
               "search over the layers).")
    for w in e.warnings:
        st.info(ex.md(w))
    if not e.paths:
        st.warning("No temporal path reaches this answer, so the model gives it no evidence.")
        ex.sync_url()
        st.stop()
    st.markdown(f"<span style='color:{PAST}'>■ before t_q</span> &nbsp; <span style='color:{SAME}'>■ at t_q</span> "
                f"&nbsp; <span style='color:{FUTURE}'>■ after t_q</span> &nbsp; dashed: a fact walked backwards "
                "(inverse relation, ⁻¹); thicker: more important. Hover a link for its date.",
                unsafe_allow_html=True)  # constant text: no data in it
    st.iframe(evidence_html(e), height=540, alt="Temporal paths to the answer")
    paths_ui(e)
    ex.sync_url()


def answer_ui(pred: Prediction, entities) -> None:
    """The answer to explain (the top answers, plus an answer from the URL) and the number of paths."""
    ss = st.session_state
    answers = [a.entity for a in pred.answers]
    ex.keep_or_reset_answer(answers[0])  # the question changed elsewhere: its top answer
    if ss.get("answer") and ss["answer"] not in answers and ss["answer"] in entities:
        answers.append(ss["answer"])  # an answer from the URL that is not among the top K
    if ss.get("answer") not in answers:
        if ss.get("answer"):
            st.warning(ex.md(f"Unknown answer {ss['answer']!r}; showing the top answer."))
        ss["answer"] = answers[0]
    rank_of = {a.entity: a.rank for a in pred.answers}
    c1, c2 = st.columns([3, 1])
    with c1:
        ex.bind(st.selectbox, "Answer to explain", "answer", options=answers,
                format_func=lambda e: f"{rank_of[e]}. {e}" if e in rank_of else e)
    with c2:
        ex.bind(st.slider, "Paths", "paths", min_value=1, max_value=10)


def paths_ui(e: Explanation) -> None:
    """The path table, every link of the paths, and a CSV download."""
    table = pd.DataFrame([{"path": k, "importance": p.importance, "hops": p.length, "temporal path": p.describe(),
                           "times (relative)": ", ".join(x.delta_label for x in p.links)}
                          for k, p in enumerate(e.paths, start=1)])
    st.dataframe(table, hide_index=True, column_config={
        "importance": st.column_config.NumberColumn("Importance", format="%+.4f"),
        "temporal path": st.column_config.TextColumn("Temporal path", width="large")})
    links = pd.DataFrame([{"path": k, "hop": i + 1, "subject": x.subject, "relation": x.relation, "object": x.object,
                           "walked": "backwards" if x.inverse else "forwards", "time": x.time, "Δt": x.delta_label,
                           "attention α": x.attention, "∂f/∂link": x.gradient}
                          for k, p in enumerate(e.paths, start=1) for i, x in enumerate(p.links)])
    with st.expander("Every link of these paths"):
        st.dataframe(links, hide_index=True)
    st.download_button("Download the paths (CSV)", csv_text(links.to_dict("records")), file_name="tpar-paths.csv",
                       mime="text/csv")


if __name__ == "__main__":  # run as a page by st.navigation (importable without side effects)
    render()
