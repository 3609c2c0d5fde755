"""Evidence: the top temporal paths from the query entity to a chosen answer (paper Section 5.4)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import explorer as ex
from evidence_graph import drawing, evidence_html, repeated_entities, signed
from palette import FUTURE, PAST, SAME
from tpar.evaluation.reports import csv_text
from tpar.reasoning.explanation import RANKING_TEXT, Explanation
from tpar.errors import DataError
from tpar.reasoning.prediction import Prediction, probability_text


def render() -> None:
    st.title("Evidence")
    ss = st.session_state
    sel = ex.require_model(ex.selection())
    if not ex.question_ready():
        ex.default_question_into_state(sel)
        st.info("Showing an example question; change it on the Ask page.")
    ex.fill_question(sel.kg, sel.match.info.setting)  # a shared link's unknown name or time: mended as Ask mends it
    pred = ex.current_prediction(sel)
    st.markdown(f"#### {ex.question_heading(pred)}")
    if pred.no_evidence:  # the Ask page shows no ranking; here the paths show why
        st.info(ex.md(f"No evidence for this question: {pred.no_evidence}. The answer explained below is not told "
                      "apart from the others."))
    if not pred.answers:
        st.info("No answers.")
        st.stop()
    answer_ui(pred, sel.kg.entities)
    with st.spinner(ex.md(f"Finding the temporal paths to {ss['answer']} and weighing each link (a new answer "
                          "can take half a minute on a large graph) …")):
        e = ex.current_explanation(sel, ss["answer"], int(ss["paths"]), ss.get("importance", "integrated"))
    score = f"composite score S(q, a) = {e.score:.4f}" if e.combines else f"score f(q, a) = {e.score:.4f}"
    if pred.no_evidence:  # Ask shows no ranking for it: a "Rank 1 of 280" here would be one scores a hair apart
        opening = (f"{e.answer}: not ranked, as the question has no evidence (above), so its place among the "
                   f"{pred.num_entities:,} entities (rank {e.rank_text()}) says nothing; {e.setting} setting"
                   f"{how_sure(pred, e.answer)}")
    else:
        opening = (f"Why {e.answer}? Rank {e.rank_text()}" if e.meaningful_paths else  # no evidence: no "why"
                   f"{e.answer}: rank {e.rank_text()}")
        opening += f" of {pred.num_entities:,} in the {e.setting} setting{how_sure(pred, e.answer)}"
    st.markdown(ex.md(f"{opening}.") + plain_summary(e))
    for w in pred.warnings:  # the Ask page's caveats of this answer (a model that guesses, a thin calibration, …)
        if w not in e.warnings:
            st.warning(ex.sentence(w))
    if pred.coverage is not None and "unsure" in pred.answer_set_note():  # Ask's answer set says the model is unsure
        st.caption(ex.md(f"{100 * pred.coverage:g}% answer set, as on Ask: " + pred.answer_set_note()))
    if e.paths_note():
        st.caption(ex.md(e.paths_note() + "."))
    with st.expander("How the paths and their shares are computed"):
        how = ("integrated gradients: ∂f(q, a)/∂(link weight) averaged along the way from every link off to every "
               f"link on ({e.integration_steps} points)" if e.importance == "integrated" else
               "∂f(q, a)/∂(link weight) in the layer that uses it (Eq. 14, first order)")
        st.markdown(f"The model's {score}. {RANKING_TEXT[e.ranking]} A link's share is {how}; paths are found by "
                    "beam search over the layers, and staying at an entity (a self-loop) is counted apart, as *stay*."
                    + (f" {ex.md(e.decomposition.text())}." if e.decomposition is not None else ""))
    if e.combines:
        composite_ui(e)
    for w in e.warnings:
        st.warning(ex.sentence(w))
    if not e.paths:
        if e.answer == e.subject:
            if not e.reached:  # reached: the explanation's own warning already says why (said once, not twice)
                st.info("The answer is the question's own entity: the model keeps its state by staying there "
                        "(self-loops); no path of links leads back to it, so there is no path to show.")
        elif e.reached:
            st.info("The answer is reached, but the path search found no path of links with weight to show.")
        else:
            st.warning("No temporal path reaches this answer, so the model gives it no evidence.")
        ex.sync_url()
        st.stop()
    weak = [p for p in e.paths if not p.meaningful]
    shown = e.paths
    if weak:
        everything = st.toggle(f"Show paths with no meaningful contribution ({len(weak)})", key="show_weak",
                               value=not e.has_evidence,
                               help=f"Paths whose links together (alone) weigh below {e.floor:.1g} in absolute value: numerically "
                                    "zero, they do not explain the score.")
        shown = e.paths if everything else e.meaningful_paths
    if not e.has_evidence:
        st.info("No meaningful evidence for this answer: every path found carries ≈ 0 importance, so none of them "
                "explains its score (drawn thin and dotted).")
    # the browser's theme once the page has reported it, else the server's configured base theme
    dark = st.context.theme.type == "dark" or st.get_option("theme.base") == "dark"
    ink = {"past": PAST, "same": SAME, "future": FUTURE}
    proposed = any(x.inferred for p in shown for x in p.links)
    st.markdown("Colours by time, t_q being the question's time: "
                f"<span style='color:{ink['past']}'>■ before t_q</span> &nbsp; "
                f"<span style='color:{ink['same']}'>■ at t_q</span> &nbsp; "
                f"<span style='color:{ink['future']}'>■ after t_q</span> &nbsp; arrows point the way each fact reads "
                "(subject → object); paths run left to right, so a dashed link (– – –) pointing back is a fact walked "
                "backwards; " + ("dash-dotted (—·—): a fact a model proposed, not observed; " if proposed else "")
                + "thickness: the link's own importance on a log scale (thin and dotted ( · · · ): none); ×n: n facts of "
                "one relation drawn as one link (as thick as the strongest). Hover a link for the facts in words.",
                unsafe_allow_html=True)  # constant text: no data in it
    laid_out = drawing(shown, e.subject, e.answer)  # its height sizes the frame; its labels name repeated entities
    html = evidence_html(e, paths=shown, dark=dark)
    st.iframe(html, height=laid_out.height + 4, alt="Temporal paths to the answer")
    twice = repeated_entities(laid_out.label)
    if twice:  # the graph is laid out by hop: an entity some paths reach in one hop and others in two is drawn twice
        st.caption(f"Columns are hops from {ex.md(e.subject)}: {ex.md(', '.join(twice))} "
                   f"{'is' if len(twice) == 1 else 'are'} reached at more than one hop, so drawn once per hop.")
    paths_ui(e, shown)
    what_if_ui(sel, e, shown)
    ex.sync_url()


def plain_summary(e: Explanation) -> str:
    """The page's first words after the question, without formulas: what the drawing shows and the strongest path
    in words (Markdown-escaped; "" when no path carries weight: the page says why below)."""
    if not e.meaningful_paths:
        return ""
    first = e.meaningful_paths[0]
    steps = "; then ".join(x.sentence() for x in first.links)
    n = len(e.meaningful_paths)
    shown = "the temporal path that adds" if n == 1 else f"the {n} temporal paths that add"
    return ex.md(f" The drawing shows {shown} most to its score, from {e.subject} at the left to {e.answer} at the "
                 f"right; the strongest: {steps}.")


def how_sure(pred: Prediction, answer: str) -> str:
    """", probability 28.4% (next: Lumen Council, 13.3%); the 90% answer set holds only …": how sure the model is of
    ``answer``, as Ask says it -- "" when the answer is not among the listed ones (an unreached answer's rank says
    it). An explanation of a 28% guess must not read like one of a certainty."""
    mine = next((a for a in pred.answers if a.entity == answer), None)
    if mine is None:
        return ""
    other = next((a for a in pred.answers if a.entity != answer), None)
    beside = "next" if pred.answers[0].entity == answer else "first"
    out = f", probability {probability_text(mine.probability)}"
    if other is not None:
        out += f" ({beside}: {other.entity}, {probability_text(other.probability)})"
    return out


def composite_ui(e: Explanation) -> None:
    """What a composite model's score is made of: each model's scaled score and the history prior's term (they
    add up to the score), and how its paths below were merged."""
    n = len(e.members)
    st.info(f"This ranking combines **{ex.md(e.combines)}**: {ex.md(e.formula)}. The paths below are the {n} models' "
            "own paths, each model's importances scaled by its weight w/T (1/(n·T) with equal weights) and paths over the same facts in the same "
            "order merged (the *models* column says whose); the history prior is not a path and is listed apart.")
    rows = [{"part": f"model {m.model} ({m.name})", "score": m.score, "weight": m.weight, "adds": m.contribution,
             "rank alone": m.rank_text(), "paths listed": m.paths} for m in e.members]
    if e.prior is not None:
        rows.append({"part": "history prior", "score": e.prior.value, "weight": None, "adds": e.prior.contribution,
                     "rank alone": None, "paths listed": None})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", placeholder="–", column_config={
        "part": st.column_config.TextColumn("Part of the score"),
        "score": st.column_config.NumberColumn("Own score", format="%.4f",
                                               help="a model: its f(q, a) (Eq. 9); the prior: ψ, its recurrency score"),
        "weight": st.column_config.NumberColumn("Weight", format="%.4f", help="w/T (1/(n·T) with equal weights): w the model's weight "
                                                                           "chosen on valid (1/n unless chosen), T its "
                                                                           "calibration temperature, n the number of models"),
        "adds": st.column_config.NumberColumn("Adds to S", format="%+.4f",
                                              help="weight × own score; the prior: β·log(1 + ψ/ε). The parts add up "
                                                   "to the composite score S"),
        "rank alone": st.column_config.TextColumn("Rank alone", help="the answer's rank by this model on its own "
                                                                  "(a range where it ties with other entities)"),
        "paths listed": st.column_config.NumberColumn("Paths listed", help="listed paths this model found")})
    if e.prior is not None:
        st.caption(ex.md(f"History prior: {e.answer} {e.prior.text()}."))


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
    # ties as ranges, as on the Ask page; no rank where the question has no evidence (Ask shows no ranking then)
    rank_of = {} if pred.no_evidence else {a.entity: a.rank_text() for a in pred.answers}
    c1, c2, c3 = st.columns([3, 1, 1.3])
    with c1:
        ex.bind(st.selectbox, "Answer to explain", "answer", options=answers,
                format_func=lambda e: f"{rank_of[e]}. {e}" if e in rank_of else e)
    with c2:
        ex.bind(st.slider, "Paths", "paths", min_value=1, max_value=10)
    with c3:
        ex.bind(st.selectbox, "Path importance", "importance", options=["integrated", "gradient"],
                help="integrated: integrated gradients, complete (the links' shares add up to the score minus "
                     "the score with no evidence) and faithful where a pattern repeats (benchmarks/results/fidelity.md), "
                     "16 to 144 passes; gradient: Eq. 14's single derivative, one pass")


def paths_ui(e: Explanation, shown: list) -> None:
    """Each shown path in words, a table of the paths, every link of them, and a CSV download."""
    number = {id(p): k for k, p in enumerate(e.paths, start=1)}
    note = e.stays_note(shown)
    if note:
        st.caption(ex.md(note))
    stays = {round(p.stay, 4) for p in shown}
    shared_stay = len(shown) > 1 and len(stays) == 1  # the same self-loops on every path: said once, not per path
    if shared_stay:
        st.markdown(f"Staying put on these paths' walks (the self-loops every path below shares, counted once; all "
                    f"self-loops of the model are in the derivation above): {signed(shown[0].stay)}")
    for p in shown:
        k = number[id(p)]
        weight = (f"adds {signed(p.importance)} beyond the paths above, {signed(p.total)} alone"
                  + ("" if p.meaningful else ", no meaningful contribution")
                  + (f"; found by model{'s' if len(p.models) > 1 else ''} {', '.join(map(str, p.models))}"
                     if e.combines else ""))
        lines = "\n".join(f"{i}. {ex.md(x.sentence())}" for i, x in enumerate(p.links, start=1))
        stay = "" if shared_stay else f"; stay {signed(p.stay)}"
        st.markdown(f"**Path {k}** ({weight}{stay}):\n\n{lines}")
    table = pd.DataFrame([{"path": number[id(p)], "importance": p.importance, "alone": p.total, "stay": p.stay,
                           "hops": p.length, **({"models": ", ".join(map(str, p.models))} if e.combines else {}),
                           "temporal path": p.describe()} for p in shown])
    if e.facts:
        with st.expander(f"The facts behind the answer, by their share of the score ({len(e.facts)})"):
            st.caption("A fact's share sums the importance of every link that walks it, in any layer and either "
                       "direction" + (" -- integrated gradients, so all shares (with the stays) add up to the score minus the score with "
                                      "no evidence (f₀, stated above)."
                                      if e.importance == "integrated" else " (first order, Eq. 14).")
                       + " *Removal* is measured: the score minus the model's score on the data without that one fact "
                         "(other paths to the answer included; measured for the largest shares only). Facts a rule "
                         "needs together split their share, but removing either may take all of it.")
            # shown to 4 decimals: rounded here so that float noise below them reads +0.0000, never -0.0000
            st.dataframe(pd.DataFrame([{"share": round(x.share, 4) + 0.0,
                                        "removal": "not measured" if x.removal is None else f"{round(x.removal, 4) + 0.0:+.4f}",
                                        "subject": x.subject,
                                        "relation": x.relation, "object": x.object, "time": x.time, "links": x.links}
                                       for x in e.facts]),
                         hide_index=True, column_config={
                             "share": st.column_config.NumberColumn("Share", format="%+.4f", width="small"),
                             "removal": st.column_config.TextColumn("Removal", width="small",
                                                                    help="f(q, a) minus f(q, a) without this fact "
                                                                         "(measured for the largest shares only)"),
                             "subject": st.column_config.TextColumn("Subject"),
                             "relation": st.column_config.TextColumn("Relation"),
                             "object": st.column_config.TextColumn("Object"),
                             "time": st.column_config.TextColumn("Time"),
                             "links": st.column_config.NumberColumn("Links", width="small",
                                                                    help="links of the propagation that walk this fact")})
    with st.expander("The paths in symbols (r⁻¹: a relation walked backwards)"):
        st.dataframe(table, hide_index=True, column_config={
            "path": st.column_config.NumberColumn("Path", width="small"),
            "importance": st.column_config.NumberColumn("Adds", format="%+.4f", width="small",
                                                        help="what the path adds beyond the paths above it"),
            "alone": st.column_config.NumberColumn("Alone", format="%+.4f", width="small",
                                                   help="the sum over all its links, shared ones included"),
            "stay": st.column_config.NumberColumn("Stay", format="%+.4f", width="small",
                                                  help="∂f/∂(self-loop) along the path: staying at an entity (other paths may "
                                                       "share these self-loops: not to be added up)"),
            "hops": st.column_config.NumberColumn("Hops", width="small"),
            "temporal path": st.column_config.TextColumn("Temporal path", width="large")})
    # a composite: α is the mean over the models whose path walks the link, the gradient their scaled sum
    alpha_col = "attention α (mean over its models)" if e.combines else "attention α"
    grad_col = "Σ weight·∂f/∂link" if e.combines else "∂f/∂link"
    links = pd.DataFrame([{"path": number[id(p)], "hop": i + 1, "subject": x.subject, "relation": x.relation,
                           "object": x.object, "walked": "backwards" if x.inverse else "forwards", "time": x.time,
                           "Δt": x.delta_label, alpha_col: x.attention, grad_col: x.gradient,
                           "observed": "no: " + x.inferred if x.inferred else "yes", "in words": x.sentence()}
                          for p in shown for i, x in enumerate(p.links)])
    with st.expander("Every link of these paths"):
        st.dataframe(links, hide_index=True)
    st.download_button("Download the paths (CSV)", csv_text(links.to_dict("records")), file_name="tpar-paths.csv",
                       mime="text/csv")


def fact_label(f: tuple) -> str:
    return f"({f[0]}, {f[1]}, {f[2]}, {f[3]})"


def unreached_note(pred: Prediction, answer: str) -> str:
    """Why ``answer``'s rank in ``pred`` can lie far down: no path reaches it any more (score 0, tied
    with every unreached entity), or its remaining paths score it below 0, behind all of those; "" else."""
    mine = next((a for a in pred.answers if a.entity == answer), None)
    if mine is None:
        return "it is reached by no temporal path: score 0, tied with every unreached entity"
    if mine.score < 0 and pred.reached < pred.num_entities:
        return (f"it is still reached, but its remaining paths score it below 0, the score of the "
                f"{ex.plural(pred.num_entities - pred.reached, 'entity', 'entities')} no path reaches, so it ranks after "
                "them")
    return ""


def counterfactual_why(sel: ex.Selection, question, cf) -> str:
    """:func:`unreached_note` for the counterfactual's answer, read from the model's answer on the
    data without ``cf.removed`` (the rank it states)."""
    try:
        note = unreached_note(ex.what_if(*sel.keys, question, tuple(cf.removed), ()), cf.answer)
    except DataError:
        return ""
    return f" Then {note}." if note else ""


def reset_what_if() -> None:
    """Nothing switched off, nothing added. The multiselect's value is *assigned* (before the widget
    is drawn: a button callback, or the top of the run), never popped: a popped key leaves the
    browser showing, and sending back on the next click, the facts it had."""
    st.session_state["whatif_added"] = []
    st.session_state["whatif_off"] = []


def _index(options: list, value) -> int:
    """``value``'s position in ``options`` (0 when it is not there)."""
    try:
        return options.index(value)
    except ValueError:
        return 0


def _remove_added(i: int) -> None:
    """Take the ``i``-th hypothetical fact out (a button callback: before the page is drawn again)."""
    added = list(st.session_state.get("whatif_added", []))
    if 0 <= i < len(added):
        del added[i]
    st.session_state["whatif_added"] = added


def what_if_ui(sel: ex.Selection, e: Explanation, shown: list) -> None:
    """Switch off facts of the shown paths or add a hypothetical one, and see the answer's new rank;
    the smallest set of facts whose removal takes the answer off rank 1."""
    ss = st.session_state
    st.subheader("What if?")
    question = ex.current_question()
    facts = list(dict.fromkeys((x.subject, x.relation, x.object, x.time) for p in shown for x in p.links))
    ss.setdefault("whatif_added", [])
    key = ex.question_key()
    if ss.get("whatif_question") != key:  # a new question: nothing hypothetical carries over
        ss["whatif_question"] = key
        reset_what_if()
    # Reset sits above the list: a focused multiselect of long facts is a line taller than an idle one, so when a
    # click on a button below it took the focus away, the button moved up under the pointer and the click was lost
    reset_slot = st.empty()
    # no "Select all" as the list's first entry: a first click there switched off every fact at once (audit 40)
    off = st.multiselect("Switch off facts of these paths", facts, format_func=fact_label, key="whatif_off",
                         placeholder="Choose facts to remove from the data …", select_all=False)
    # keyed and tracked: a choice inside reruns the page, and an untracked expander closed again at every one
    with st.expander("Add a hypothetical fact", key="whatif_add_open", on_change="rerun"):
        kg = sel.kg
        entities = sorted(kg.entities.names, key=str.casefold)
        relations = sorted(kg.relations.names, key=str.casefold)
        # the question's own fact with the explained answer to start from (not the first entity twice: a self-loop)
        s0, o0 = (question.subject, e.answer) if question.direction == "object" else (e.answer, question.subject)
        c1, c2, c3, c4 = st.columns(4)
        subj = c1.selectbox("Subject", entities, index=_index(entities, s0), key="whatif_s")
        rel = c2.selectbox("Relation", relations, index=_index(relations, question.relation), key="whatif_r")
        obj = c3.selectbox("Object", entities, index=_index(entities, o0), key="whatif_o")
        when = c4.text_input("Time", value=e.time, key="whatif_t")
        if st.button("Add this fact", key="whatif_add"):
            try:  # checked here, so that one bad time never blocks the facts added after it
                t = kg.time_axis.parse(when.strip())
            except ValueError as err:
                st.error(ex.md(f"Not added: {err}"))
            else:
                fact = (subj, rel, obj, kg.time_axis.label(t))
                if fact not in ss["whatif_added"]:
                    ss["whatif_added"] = ss["whatif_added"] + [fact]
                else:  # typed in another form, the same fact: said, not silently nothing (walk-through 38 #12)
                    st.info(ex.md(f"Already added: {fact_label(fact)}."))
        for i, fact in enumerate(ss["whatif_added"]):  # each added fact with its own way out
            a, b = st.columns([5, 1], vertical_alignment="center")
            a.markdown(f"Added: {ex.md(fact_label(fact))}")
            b.button("Remove", key=f"whatif_rm_{i}", on_click=_remove_added, args=(i,))
    added = list(ss["whatif_added"])
    if not (off or added):
        st.caption("Nothing switched off or added: the answers above are the model's on the data as it is.")
    else:
        reset_slot.button("Reset (back to the data as it is)", key="whatif_reset", on_click=reset_what_if)
        try:
            pred = ex.what_if(*sel.keys, question, tuple(off), tuple(added))
        except DataError as err:
            st.error(ex.md(err))
        else:
            st.warning("**Hypothetical**: " + ex.md("; ".join(pred.hypothetical)) + ". Not the model's answer on the "
                       "real data.")
            for note in pred.unseen_changes:  # e.g. a fact dated at or after a forecast's time: it cannot count
                st.warning(ex.md(note))
            mine = next((a for a in pred.answers if a.entity == e.answer), None)
            where = (f"rank {mine.rank_text()}, probability {probability_text(mine.probability)}" if mine
                     else pred.unreached_rank_text)
            note = unreached_note(pred, e.answer)
            where += f" — {note}" if note else ""
            if pred.no_evidence:  # as Ask: a ranking would present a guess as an answer (walk-through 38 #12)
                st.info(ex.md(f"No evidence with these changes: {pred.no_evidence}. No ranking is shown: "
                              f"{e.answer} (rank {e.rank_text()} on the real data) would be no answer the model "
                              "can tell from the others."))
            else:
                st.markdown(f"**{ex.md(e.answer)}** (rank {e.rank_text()} on the real data) would be at {where}.")
                top = pd.DataFrame([{"Rank": a.rank_text(), "Answer": a.entity,
                                     "Probability": probability_text(a.probability)} for a in pred.answers[:5]])
                st.dataframe(top, hide_index=True, width="stretch")
                st.caption("Probabilities as on the Ask page (the same calibration and its caveats), for the data as "
                           "changed here." + (" Nearly uniform: the changes leave the model unsure." if
                                              pred.answers and pred.answers[0].probability < 3 / max(pred.num_entities, 1)
                                              else ""))
    if e.rank == 1 and st.button("Find the fewest facts whose removal changes the top answer", key="whatif_cf"):
        ss["whatif_cf_for"] = key + (e.answer,)
    if ss.get("whatif_cf_for") == key + (e.answer,):
        cf = ex.counterfactual(*sel.keys, question, e.answer)
        if cf.flipped:
            st.info(f"Counterfactual: without {ex.plural(len(cf.removed), 'fact')} — "
                    + "; ".join(ex.md(fact_label(f)) for f in cf.removed)
                    + f" — {ex.md(cf.answer)} drops to rank {cf.rank_after_text()} and {ex.md(cf.top_after)} comes first."
                    + counterfactual_why(sel, question, cf))
        else:
            st.info(ex.md(f"No counterfactual among the top paths' facts: {cf.reason}."))


if __name__ == "__main__":  # run as a page by st.navigation (importable without side effects)
    render()
