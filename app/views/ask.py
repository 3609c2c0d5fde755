"""Ask: (subject, relation, ?, time) -> ranked answers with scores and probabilities."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import explorer as ex
import palette
from tpar.data.kg import TemporalKG
from tpar.evaluation.calibration import Calibration, set_size_text, set_sizes_elsewhere_text
from tpar.evaluation.reports import csv_text
from tpar.graph.queries import Question
from tpar.reasoning.prediction import Prediction, probability_text


def render() -> None:
    st.title("Ask")
    ss = st.session_state
    sel = ex.require_model(ex.selection())
    kg = sel.kg
    t_min, t_max = kg.time_range
    st.caption(f"Data set **{ex.md(sel.source.label)}**, model **{ex.md(sel.match.info.name)}** "
               f"({sel.match.info.setting}). Known facts from {ex.keep_together(ex.md(kg.time_axis.label(t_min)))} to "
               f"{ex.keep_together(ex.md(kg.time_axis.label(t_max)))}: a time after that is forecast (extrapolation, using only earlier "
               "facts); a time inside it fills a gap (interpolation, using the facts before and after).")
    ex.unfinished_warning(sel)
    if not ss.get("subject"):  # a first visit: the page opens on a showcase question, else the default one
        ex.default_question_into_state(sel)
    examples_ui(sel)
    ex.fill_question(kg, sel.match.info.setting)
    question_ui(kg)
    predictor = sel.explainer().predictor
    calibrated = predictor.calibration(predictor.resolve_setting(kg.time_axis.parse(ss["time"]), ss["setting"]).value)
    level = float(ss["coverage"]) if ss.get("coverage") not in (None, "off") and calibrated else None
    pred = ex.current_prediction(sel, level)
    st.markdown(f"#### {ex.question_heading(pred)}")
    why = ""
    if ss["setting"] == "auto":
        why = (" (after the last known fact)" if pred.setting == "extrapolation" else
               " (before the first known fact: only later facts can be used)" if pred.time_step < t_min else
               " (inside the known time range)")
    elif pred.setting == "extrapolation" and pred.time_step < t_min:
        why = (f", chosen although {pred.time} lies before the first known fact: a forecast uses only earlier facts, "
               "and there are none")
    elif pred.setting == "extrapolation" and pred.time_step <= t_max:  # e.g. a showcase forecast
        why = (f", chosen although {pred.time} lies inside the known time range: a forecast from the facts before "
               f"{pred.time} only, the later ones hidden as if not yet known")
    elif pred.setting == "interpolation" and pred.time_step > t_max:
        why = f", chosen although {pred.time} lies after the last known fact: only earlier facts exist to use"
    L = sel.match.info.checkpoint.num_layers
    if pred.combines:
        st.caption(f"Setting: **{pred.setting}**{why}. The ranking combines **{ex.md(pred.combines)}**: "
                   f"{ex.md(pred.formula)} (f: a model's score, T: its temperature, ψ: how often and how recently the "
                   f"answer already answered this question). {pred.reached:,} of {kg.num_entities:,} entities have "
                   f"evidence (a temporal path of length ≤ {L} of some model, or ψ > 0); the others score 0.")
    else:
        n, E = pred.reached, kg.num_entities
        reached = (f"{n:,} of {E:,} entities {'is' if n == 1 else 'are'} reached by temporal paths of length ≤ {L}"
                   + (" (the question's own entity only)" if n == 1 else "") + ("" if n >= E else "; the others score 0")
                   + (": being reached is no evidence by itself (below)" if pred.no_evidence and n > 1 else ""))
        st.caption(f"Setting: **{pred.setting}**{why}. {reached}.")
    if pred.provenance:  # which model and data this answer used, and how far it lies past the training facts
        st.caption(ex.keep_together(ex.md(f"Model {sel.match.info.name}: {pred.provenance}.")))
    for w in pred.warnings:
        st.warning(ex.sentence(w))
    if pred.no_evidence:  # a ranking would present a guess as an answer
        t_min, t_max = kg.time_range
        if pred.setting == "extrapolation" and pred.time_step <= t_max:  # a forecast inside the data: little before it
            advice = ("a forecast reads only facts before its time, so try a later time, the interpolation setting "
                      "(facts before and after), or another entity or relation")
        elif pred.time_step > t_max or pred.time_step < t_min:
            advice = "try a time closer to the known facts, or another entity or relation"
        else:
            advice = "try another entity or relation, or another time"
        st.info(ex.md(f"No evidence for this question: {pred.no_evidence}. No ranking is shown; {advice}."))
        ex.sync_url()
        st.stop()
    if not pred.answers:
        st.info("No answers.")
        st.stop()
    answers = answers_ui(pred)  # first after the question: the answers sit above the fold at 1400 x 820
    if ss.get("answer") not in kg.entities:
        if ss.get("answer"):
            st.warning(ex.md(f"Unknown answer {ss['answer']!r}; the top answer is chosen instead."))
        ss["answer"], ss["answer_question"] = answers.iloc[0]["entity"], ex.question_key()
    else:
        ex.keep_or_reset_answer(answers.iloc[0]["entity"])
    # the link on a line of its own: beside the sentence, a narrow window (820 px with the sidebar) cut it off
    st.markdown(f"Select a row to choose the answer to explain (now: **{ex.md(ss['answer'])}**).")
    name = ss["answer"] if len(ss["answer"]) <= 30 else ss["answer"][:29] + "…"  # a long name leaves the link whole
    st.page_link("views/evidence.py", label=f"Why {ex.md(name)}? See the temporal paths",
                 icon=":material/account_tree:")
    answer_set_ui(pred, calibrated)
    downloads_ui(pred, answers)
    ex.sync_url()


def examples_ui(sel: ex.Selection) -> None:
    """The showcase questions of the data set (one per planted rule in the sample world); on a first
    visit the page opens on one (:func:`explorer.default_question_into_state`)."""
    ss = st.session_state
    kg = sel.kg
    examples = [x for x in sel.source.examples() if x["subject"] in kg.entities and x["relation"] in kg.relations]
    if not examples:
        return

    def use(x: dict) -> None:
        ss.update(subject=x["subject"], relation=x["relation"], time=x["time"], direction="object",
                  setting=x.get("setting", "auto"))
        if x.get("answer") in kg.entities:
            ss["answer"] = x["answer"]
        ss["answer_question"] = ex.question_key()

    # named by what each shows (the question itself fills the fields below): "escalation: a threatened country …"
    labels = {f"{x.get('rule', 'example')}: {x.get('description') or Question(x['subject'], x['relation'], x['time']).text()}":
              x for x in examples}

    def picked() -> None:
        if ss.get("example") in labels:
            use(labels[ss["example"]])

    # the box names the showcase question being asked (the one the page opened on, or one a link gives), and
    # nothing once the question was changed: it must not name a question not being asked
    asked = (ss.get("subject"), ss.get("relation"), ss.get("time"), ss.get("direction"))
    ss["example"] = next((k for k, x in labels.items()
                          if (x["subject"], x["relation"], x["time"], "object") == asked), None)
    st.selectbox("Example questions", list(labels), index=None, key="example", on_change=picked,  # plain text
                 placeholder="Pick a showcase question (one per planted rule) …",
                 help="Each example shows one rule planted in the sample world: its question fills the fields below, "
                      "asked in the setting the example names there.")


#: the most times a slider offers: past it a slider's step is under a pixel (scale audit 40: reaching a year of
#: YAGO11k's 3,602 took 835 arrow presses), so the Time field is a list to type into
SLIDER_STEPS = 400


def question_ui(kg: TemporalKG) -> None:
    """Direction, entity, relation, time (a widget that fits the time axis), setting, answers shown."""
    ss = st.session_state
    axis = kg.time_axis
    t_min, t_max = kg.time_range
    c1, c2, c3 = st.columns([3, 3, 3])
    with c1:
        ex.bind(st.radio, "Question", "direction", options=["object", "subject"], horizontal=True,
                format_func=lambda d: "(entity, relation, ?, time)" if d == "object" else "(?, relation, entity, time)")
        ex.bind(st.selectbox, "Entity", "subject", options=sorted(kg.entities.names, key=str.casefold),
                help="Type to search.")
    with c2:
        ex.bind(st.selectbox, "Relation", "relation", options=sorted(kg.relations.names, key=str.casefold),
                help="Type to search.")
        horizon = min(max(1, (t_max - t_min) // 10), axis.last_step - t_max)  # a calendar ends at 9999-12-31
        try:  # the widget's range holds the current question's time (from a URL or an example) too
            t_now = axis.parse(ss["time"])
        except ValueError:
            t_now = t_max
        if axis.granularity == "day" and axis.origin is not None:
            lo = dt.date.fromisoformat(axis.label(min(t_min, t_now)))
            hi = dt.date.fromisoformat(axis.label(max(t_max + horizon, t_now)))
            ex.bind(st.date_input, "Time", "time", min_value=lo, max_value=hi,
                    to_widget=lambda s: min(max(dt.date.fromisoformat(s), lo), hi),
                    from_widget=lambda d: d.isoformat() if isinstance(d, dt.date) else ss["time"],
                    help=f"Any day from {lo} to {hi}; after {axis.label(t_max)} the question is a forecast.")
        elif (max(t_max + horizon, t_now) - min(t_min, t_now)) <= 5000:
            options = [axis.label(t) for t in range(min(t_min, t_now), max(t_max + horizon, t_now) + 1)]
            if ss["time"] not in options:
                ss["time"] = options[-1]
            if len(options) <= SLIDER_STEPS:
                ex.bind(st.select_slider, "Time", "time", options=options)
            else:  # a slider of thousands of steps (YAGO11k's years: -431..3171) cannot be set to a given one
                ex.bind(st.selectbox, "Time", "time", options=options, filter_mode="prefix",  # "201": 201, 2010..
                        help=f"Type to search: any time from {options[0]} to {options[-1]}; after "
                             f"{axis.label(t_max)} the question is a forecast.")
        else:
            ex.bind(st.text_input, "Time", "time", help=f"A time label such as {axis.label(t_max)!r}.")
    with c3:
        ex.bind(st.selectbox, "Setting", "setting", options=["auto", "extrapolation", "interpolation"],
                help="auto: extrapolation when the time lies after the last known fact, else interpolation.")
        ex.bind(st.slider, "Answers shown", "k", min_value=1, max_value=50)


def answer_set_ui(pred: Prediction, calibrated: Calibration | None) -> None:
    """How far the probabilities can be trusted, and the conformal answer set of the chosen level
    (the calibration's own caveats, and a calibration fitted on other data, are among the prediction's
    warnings, shown above)."""
    if calibrated is None:
        return  # the prediction's own warning says the probabilities are raw
    c1, c2 = st.columns([1, 3])
    with c1:
        ex.bind(st.selectbox, "Answer set (coverage)", "coverage", options=["off", "0.8", "0.9", "0.95"],
                format_func=lambda v: "off" if v == "off" else f"{100 * float(v):g}%",
                help="Split-conformal sets from the valid split: over questions like the valid ones, the set holds "
                     "the answer at least this often -- on average over questions, not for each one.")
    with c2:
        top_map = " and the map of the top answer's probability" if calibrated.top_map else ""
        score = "S" if pred.combines else "f"
        fitted = (f"softmax({score} / T) with T = {pred.temperature:.3f}{top_map} fitted on "
                  f"{calibrated.queries:,} {ex.md(calibrated.split)} questions of this setting ({score}: each answer's "
                  "score in the table; T: a temperature, which spreads or sharpens the scores until the probabilities "
                  "match how often answers turn out right)")
        if pred.calibrated_elsewhere:  # e.g. a model from other data: its calibration describes that data
            st.caption(f"Probabilities: {fitted} of {ex.md(pred.calibrated_elsewhere)}; on this data they are not "
                       "calibrated, so read them as a ranking, not as frequencies.")
        elif calibrated.caveats():  # the warnings above say what limits them; promise nothing here
            st.caption(f"Probabilities: {fitted}; read them with the caveat above.")
        else:
            st.caption(f"Probabilities are calibrated: {fitted}, so across many questions like those, answers shown "
                       "at p ≈ 0.7 are right about 70% of the time.")
    if pred.coverage is not None:
        names = ", ".join(ex.md(ex.short(n)) for n in pred.answer_set[:25]) + (" …" if pred.answer_set_size > 25 else "")
        large = (" — a set this large says the model cannot narrow it down." if
                 pred.answer_set_size > max(25, pred.num_entities // 4) else "")
        lead = pred.answer_set_lead(ex.md(pred.calibrated_elsewhere))  # numbers, and the data name escaped
        lead = lead[0].upper() + lead[1:]
        names = f": {names}{large}" if pred.answer_set_size else ""
        if pred.calibrated_elsewhere:  # the level holds for questions like the calibration's, not these
            st.info(f"{lead}{names}\n\nOn {ex.md(pred.calibrated_elsewhere)} such sets held the answer "
                    f"{100 * pred.coverage:g}% of the time; on this data their level is not known.")
        else:
            st.info(f"{lead}{names}\n\n{ex.md(pred.answer_set_note())}")
        sizes = calibrated.set_sizes.get(f"{pred.coverage:g}")
        if sizes and pred.calibrated_elsewhere:  # sizes among another data set's entities: no measure of these
            # (walk-through 38 #2: "median 280 entities (of 22)" and "far smaller than most")
            st.caption(ex.sentence(set_sizes_elsewhere_text(calibrated, pred.coverage, pred.calibrated_elsewhere)))
        elif sizes:  # what such sets are like, beside what they promise
            typical = sizes.get("median")
            small = (f" This one is far smaller than most: the {100 * pred.coverage:g}% holds on average over "
                     "questions, not for this one alone." if isinstance(typical, (int, float))
                     and 0 < pred.answer_set_size <= typical / 4 else "")
            st.caption(f"On the {calibrated.queries:,} {calibrated.split} questions the calibration was fitted on, "
                       f"{100 * pred.coverage:g}% sets held {set_size_text(sizes, pred.num_entities, 'entities')}.{small}")
        else:
            st.caption("The sizes of such sets on valid are not stored with this model's calibration (`tpar "
                       "calibrate` adds them).")


def score_digits(answers: pd.DataFrame, least: int = 3, most: int = 6) -> int:
    """Decimals that tell every two neighbouring answers of different rank apart (rows that look the same but
    rank apart would read as an unexplained tie): ``least`` unless more are needed, at most ``most``."""
    scores, ranks = answers["score"].tolist(), answers["rank_text"].tolist()
    for digits in range(least, most + 1):
        if all(round(a, digits) != round(b, digits) for a, b, ra, rb in zip(scores, scores[1:], ranks, ranks[1:])
               if ra != rb):
            return digits
    return most


def answers_ui(pred: Prediction) -> pd.DataFrame:
    """The answer table (row selection picks the answer to explain) with the model's rank ranges
    (ties) and probabilities in %, a line for the entities no path reaches, a CSV download and a
    chart of the top probabilities; returns the table's rows."""
    ss = st.session_state
    answers = pd.DataFrame([{**a.__dict__, "rank_text": a.rank_text(), "ties": a.ties,
                             "percent": 100 * a.probability, "p_text": probability_text(a.probability)}
                            for a in pred.answers])
    answers["known"] = answers["known"].map(lambda k: "yes" if k else "")
    answers["rank_shown"] = [f"{r} ({n + 1} tied)" if n else r for r, n in zip(answers["rank_text"], answers["ties"])]
    question = ex.question_key()
    if ss.get("answer_question") not in (question, ex.URL_ANSWER):
        ss.pop("answer_table", None)  # a new question: the old row selection means nothing
    event = st.dataframe(
        answers[["rank_shown", "entity", "p_text", "score", "known"]], hide_index=True, on_select="rerun",
        selection_mode="single-row", key="answer_table", width="stretch",
        height=35 * (len(answers) + 1) + 3,  # every answer asked for in view ("auto" showed 10 and scrolled the rest)
        column_config={
            "rank_shown": st.column_config.TextColumn(
                "Rank", help="The model's rank; when answers tie (the same score), the range of ranks they share "
                             "and how many tie."),
            "entity": st.column_config.TextColumn("Answer"),
            "p_text": st.column_config.TextColumn("Probability", width="small",
                                                  help=(f"Calibrated: {pred.calibrator}, fitted on "
                                                        f"{pred.calibrated_elsewhere or 'valid'} (Eq. 10's softmax "
                                                        "over all entities, of the scores divided by T)"
                                                        if pred.temperature else "Softmax of the scores over all "
                                                        "entities (Eq. 10), not calibrated.")),
            "score": st.column_config.NumberColumn("Score", format=f"%.{score_digits(answers)}f", width="small",
                                                   help="S(q, e), the composite's score (see above)" if pred.combines
                                                   else "f(q, e) of Eq. 9"),
            "known": st.column_config.TextColumn("In data", width="small",
                                                 help="yes: this answer's fact is in the data set. The model never "
                                                      "sees it when answering (a question never sees its own fact, "
                                                      "and a forecast only earlier facts): it checks the answer, it "
                                                      "is not evidence for it."),
        })
    rows = [r for r in (event.selection.rows if event and event.selection else []) if 0 <= r < len(answers)]
    if rows:
        ss["answer"], ss["answer_question"] = answers.iloc[rows[0]]["entity"], question
    if pred.unreached:
        what = "No evidence (no path of any model, no history)" if pred.combines else "Not reached by any temporal path"
        one = pred.unreached == 1
        st.caption(f"{what}: **{pred.unreached:,}** entit{'y' if one else 'ies'}, "
                   + (f"at score 0 ({pred.unreached_rank_text}, {probability_text(pred.unreached_probability)}); it is "
                      "not listed." if one else
                      f"all at score 0 (tied at {pred.unreached_rank_text}, together "
                      f"{probability_text(pred.unreached_probability)}); they are not listed.")
                   + (f" {ex.sentence(pred.reached_below_text)}" if pred.reached_below else ""))
    return answers


def downloads_ui(pred: Prediction, answers: pd.DataFrame) -> None:
    """The answers as CSV, and a chart of the top probabilities (folded)."""
    out = answers.assign(question=ex.prediction_text(pred), setting=pred.setting, rank=answers["rank_text"],
                         probability=answers["probability"], known=answers["known"].map(bool))
    csv = csv_text(out[["question", "setting", "rank", "entity", "score", "probability", "ties", "known"]]
                   .to_dict("records"))
    st.download_button("Download answers (CSV)", csv, file_name="tpar-answers.csv", mime="text/csv")
    with st.expander("Chart of the top probabilities", expanded=False):
        top = answers.head(15).iloc[::-1]
        fig = go.Figure(go.Bar(x=top["percent"], y=[ex.plot_text(e) for e in top["entity"]], orientation="h",
                               marker_color=[palette.KNOWN if k else palette.OTHER for k in top["known"]],
                               customdata=top["p_text"], hovertemplate="%{y}<br>%{customdata}<extra></extra>"))
        fig.update_layout(height=max(260, 26 * len(top)), margin=dict(l=10, r=10, t=10, b=10),
                          xaxis_title="probability (%) — green: its fact is in the data (the model does not see it)")
        ex.show_chart(fig)


if __name__ == "__main__":  # run as a page by st.navigation (importable without side effects)
    render()
