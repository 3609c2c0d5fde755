"""Evaluate: a checkpoint on a split, next to the baselines, with the evaluation protocol of
``tpar.evaluation`` (both directions, time-aware filter, three tie modes)."""

from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots
import streamlit as st

import explorer as ex
import palette
from tpar.data.kg import TemporalKG
from tpar.data.relation_matching import RelationMatch
from tpar.errors import DataError
from tpar.evaluation.baselines import FrequencyBaseline, fit_recurrency
from tpar.evaluation.calibration import (MIN_RELIABLE_QUERIES, HeldOutReport, held_out_caveats, held_out_collector,
                                        set_size_text)
from tpar.evaluation.chance import below_chance_relations, chance_text, ranking_caveats, uniform_mrr
from tpar.evaluation.protocol import EvaluationResult, compare
from tpar.evaluation.reports import csv_text, metrics_rows, relation_rows
from tpar.model.checkpoint import Checkpoint
from tpar.reasoning.prediction import calibrated_elsewhere
from tpar.model.ranker import ModelRanker
from tpar.model.registry import listed_checkpoint

METRICS = ("mrr", "hits@1", "hits@3", "hits@10")


def render() -> None:
    st.title("Evaluate")
    ss = st.session_state
    sel = ex.require_model(ex.selection())
    marks = {m.info.name: m.info.marker() for m in sel.matches}  # an unfinished run says so in the list
    ex.bind(st.selectbox, "Checkpoint", "model", options=list(marks), format_func=lambda n: n + marks[n])
    sel = ex.require_model(ex.selection())
    ex.sync_url(("data", "model"))  # a reload or a shared link evaluates this model
    kg = sel.kg  # in the chosen model's relations (a model from other data reads the data in its vocabulary)
    splits = [s for s in ("test", "valid") if s in kg.splits and len(kg.facts(s))]
    if not splits:
        st.error("This data set has no valid or test facts to evaluate on.")
        st.stop()
    ck = listed_checkpoint(sel.checkpoint_path)  # as on disk now (a retrained model replaces the file)
    for note in ck.load_notes:  # e.g. a stored calibration set aside: calibrated on valid now instead
        st.warning(ex.md(note))
    if ck.kind == "composite":
        st.info(ex.md(f"TPAR below is the composite {sel.match.info.name}: its ranking combines "
                      f"{ck.combination_text()} ({ck.formula()}), chosen on valid."))
    rm = sel.match.relations  # a model from other data: the questions about an unmatched relation cannot be asked
    if rm is not None:
        st.info(ex.sentence(f"{rm.describe()}. Questions about a relation the model does not know cannot be asked: "
                            "the evaluation ranks the answerable ones, and below the metrics also reports them over "
                            "all the split's questions, the others counted as misses"))
    split, setting, limit, with_freq, with_rec = options_ui(kg, ck, splits, rm)
    key = (*sel.keys, split, setting, limit, with_freq, with_rec)
    if st.button("Run evaluation", type="primary", key="eval_run"):
        ranker = None  # built in the try below: a checkpoint whose weights do not load is an error shown, not a crash
        rankers = {"TPAR": lambda: ranker}
        if with_freq:
            rankers["frequency"] = FrequencyBaseline
        if with_rec:
            rankers["recurrency"] = lambda: fit_recurrency(kg, setting, progress=False)
        bar = st.progress(0.0, text="starting…")

        def tick(name: str, i: int, done: int, total: int) -> None:
            text = f"{name}: {done:,} / {total:,} queries" if done else f"{name}: preparing…"
            bar.progress((i + done / total) / len(rankers), text=text)

        # the calibration report rides on TPAR's ranking pass (the split is scored once)
        try:
            ranker = ModelRanker(ck.build_model(), micro_batch=16)
            collector, note = held_out_collector(kg, ranker, ck.extra, setting, split, on_fit=lambda: bar.progress(
                0.0, text="calibrating on valid (the checkpoint stores no calibration)…"))
            results = compare(kg, rankers, setting, split, max_queries=limit, on_progress=tick,
                              on_scores={"TPAR": collector.keep} if collector is not None else None)
        except DataError as e:
            bar.empty()
            st.error(ex.md(e))
            st.stop()
        report = collector.report() if collector is not None else None
        results["TPAR"].params["kernel"] = ranker.kernel_text()
        bar.progress(1.0, text="done")
        ss["eval_results"] = {"key": key, "results": results, "calibration": report,
                              "calibration_source": collector.source if collector is not None else "",
                              "calibration_note": note,
                              "calibration_caveats": collector.calibration.caveats() if collector is not None else [],
                              "calibration_fitted_on": calibrated_elsewhere(ck, kg, collector.calibration)
                              if collector is not None else ""}
    done = ss.get("eval_results")
    if not done or done["key"] != key:
        st.info("Choose the options and run the evaluation.")
        st.stop()
    results_ui(done["results"], split, setting, limit, kg.num_entities)
    if rm is not None and "TPAR" in done["results"]:
        st.info(ex.sentence(rm.all_question_metrics(done["results"]["TPAR"], split)["text"]))
    calibration_ui(done.get("calibration"), done.get("calibration_source", ""), done.get("calibration_note", ""),
                   done.get("calibration_caveats", []), split, kg.num_entities, done.get("calibration_fitted_on", ""))


def options_ui(kg: TemporalKG, ck: Checkpoint, splits: list[str],
               rm: RelationMatch | None = None) -> tuple[str, str, int, bool, bool]:
    """(split, setting, number of queries (0 = all), with the frequency baseline, with recurrency); ``rm``: the
    data's relations matched to the model's, when the model comes from other data (only its questions count)."""
    c1, c2, c3 = st.columns(3)
    split = c1.selectbox("Split", splits, key="eval_split", persist_state="session")
    settings = ["extrapolation", "interpolation"]
    default = ck.setting if ck.setting in settings else "extrapolation"
    setting = c2.selectbox("Setting", settings, index=settings.index(default), key="eval_setting",
                           persist_state="session",
                           help="extrapolation: each query sees the facts before its time; interpolation: the "
                                "training facts, before and after.")
    n_all = 2 * len(kg.facts(split))  # kg: the data in the model's relations, so the answerable questions
    of = f" of {rm.questions(split)[1]:,}, those the model can be asked" if rm is not None else ""
    limit = c3.number_input(f"Queries (0 = all {n_all:,}{of})", 0, n_all, min(n_all, 2000), step=500, key="eval_limit",
                            persist_state="session", help="A seeded random subset keeps large evaluations short.")
    b1, b2 = st.columns(2)
    has_valid = bool(len(kg.facts("valid")))  # the split may be there but empty
    with_freq = b1.checkbox("Frequency baseline", value=True, key="eval_freq", persist_state="session")
    with_rec = b2.checkbox("Recurrency baseline", value=has_valid,
                           help="Fits its λ and α on the valid split first (unavailable without one).",
                           disabled=not has_valid, key="eval_rec", persist_state="session")
    return split, setting, int(limit), with_freq, with_rec


def compact(table: pd.DataFrame) -> pd.DataFrame:
    """One row per method: realistic MRR and Hits, then the optimistic and pessimistic MRR."""
    rows = []
    for method, group in table.groupby("method", sort=False):
        by_ties = group.set_index("ties")
        real = by_ties.loc["realistic"]
        rows.append({"Method": method, "MRR": real["mrr"], "Hits@1": real["hits@1"], "Hits@3": real["hits@3"],
                     "Hits@10": real["hits@10"], "MRR opt.": by_ties.loc["optimistic", "mrr"],
                     "MRR pess.": by_ties.loc["pessimistic", "mrr"]})
    return pd.DataFrame(rows)


def results_ui(results: dict[str, EvaluationResult], split: str, setting: str, limit: int, entities: int = 0) -> None:
    """Metrics in all tie modes beside a uniform guess among the data's ``entities`` (with what limits them), the
    per-relation chart, and downloads."""
    first = next(iter(results.values()))
    st.caption(f"{first.num_queries:,} queries ({split}, {setting}, both directions, time-aware filter)"
               + (f"; seeded subset of {limit:,}" if first.params.get("subset") else "")
               + ". " + ", ".join(f"{k}: {v.seconds:.1f} s" if v.seconds >= 1 else f"{k}: {1000 * v.seconds:.0f} ms"
                                  for k, v in results.items()) + ".")
    kernel = results["TPAR"].params.get("kernel") if "TPAR" in results else None
    if kernel:
        st.caption(f"TPAR was scored with {kernel}. The C++ and torch kernels add in another order, so scores can "
                   "differ in their last float digits -- enough to make or break an exact tie between two answers: "
                   "figures measured with the other kernel (a model card's may be) can differ by a few hundredths.")
    table = pd.DataFrame(metrics_rows(results))
    tie_help = {"MRR opt.": "MRR with optimistic ties: the answer first among the entities with its score",
                "MRR pess.": "MRR with pessimistic ties: the answer last among the entities with its score"}
    by_method = compact(table)
    st.dataframe(by_method, hide_index=True, column_config={  # short headers: all seven fit at 820 px
        c: st.column_config.NumberColumn(c, format="%.2f", help=tie_help.get(c, "realistic ties, %"))
        for c in by_method.columns if c != "Method"})
    st.caption("All figures in %. MRR and Hits with realistic ties (the answer in the middle of the entities with its "
               "score: the honest figure, a method that scores many entities 0 gains nothing from it); the optimistic "
               "(MRR opt.: first among equals) and pessimistic (MRR pess.: last) MRR beside it show how much ties "
               "matter." + (f" For scale, {chance_text(entities)} (a little more where the filter leaves fewer "
                            "candidates)." if entities > 1 else ""))
    if "TPAR" in results:  # what limits these figures, the chart's per relation more so
        for caveat in ranking_caveats(results["TPAR"].metrics("realistic").mrr, entities, first.num_queries, "TPAR"):
            st.warning(ex.sentence(caveat))
        if "frequency" in results:  # said in words, as the Train page says it
            model, base = results["TPAR"].metrics("realistic").mrr, results["frequency"].metrics("realistic").mrr
            if model <= base:
                st.warning(f"TPAR does not beat the frequency baseline on these questions (each answer scored by how "
                           f"often it answered the question before): MRR {100 * model:.2f}% against {100 * base:.2f}% "
                           + ("(the same to two decimals)." if abs(model - base) < 5e-5 else
                              f"({100 * (model - base):+.2f} points)."))
    per_rel = pd.DataFrame(relation_rows(results))
    tpar_rows = per_rel[per_rel.method == "TPAR"]
    top = tpar_rows.sort_values("queries", ascending=False).head(20)["relation"].tolist()
    which = (f"the {len(top)} relations with most queries" if len(tpar_rows) > len(top)
             else f"all {ex.plural(len(top), 'relation')} with queries")
    fig = go.Figure()
    counts = dict(zip(tpar_rows["relation"], tpar_rows["queries"]))  # each bar rests on this many questions
    for name in results:
        d = per_rel[(per_rel.method == name) & per_rel.relation.isin(top)].set_index("relation").reindex(top)
        fig.add_trace(go.Bar(x=[f"{ex.plot_text(r)} ({counts.get(r, 0):,})" for r in d.index], y=d["MRR"], name=name))
    fig.update_layout(barmode="group", height=420, margin=dict(l=10, r=10, t=40, b=10),
                      title=f"Realistic MRR per relation ({which}; questions in brackets)", yaxis_title="MRR %",
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},  # above: the bars keep the width
                      xaxis={"tickangle": -60, "automargin": True})  # steep: slanted at 30° they overlapped at 820 px
    chance = 100 * uniform_mrr(entities) if entities > 1 else 0.0
    if chance:  # the scale a relation's bar must clear (walk-through 38 #4: 4 of 6 relations lay below it, unsaid)
        fig.add_hline(y=chance, line_dash="dot", line_color="grey",
                      annotation_text=f"uniform guess {chance:.1f}", annotation_position="top left")
    ex.show_chart(fig)
    if "TPAR" in results:
        below = below_chance_relations({r: (m["realistic"].mrr, m["realistic"].count)
                                        for r, m in results["TPAR"].by_relation().items()}, entities, "TPAR")
        if below:
            st.warning(ex.sentence(below))
    d1, d2, d3 = st.columns(3)
    for col, frame, label, file in ((d1, table, "Metrics (CSV)", "tpar-evaluation.csv"),
                                    (d2, per_rel, "Per relation (CSV)", "tpar-evaluation-relations.csv")):
        # the CSV's figures are in percent, the JSON's fractions (as `tpar evaluate --json`): the headers say so
        shown = frame.rename(columns={c: f"{c} (%)" for c in frame.columns if c.lower().startswith(("mrr", "hits@"))})
        col.download_button(label, csv_text(shown.to_dict("records")), file_name=file, mime="text/csv")
    st.caption("The CSV files give MRR and Hits in percent (their headers say so); the JSON file gives them as "
               "fractions from 0 to 1, as `tpar evaluate --json` does.")
    d3.download_button("Everything (JSON)", json.dumps({k: v.to_dict() for k, v in results.items()}, indent=2),
                       file_name="tpar-evaluation.json", mime="application/json")


def calibration_ui(report: HeldOutReport | None, source: str, note: str = "", caveats: list[str] = (),
                   split: str = "test", entities: int = 0, fitted_on: str = "") -> None:
    """How often TPAR's probabilities are right: a reliability diagram, ECE / Brier / NLL before and
    after temperature scaling, and the answer sets' coverage (or why there are none: ``note``); what limits them
    (the calibration's ``caveats``: fitted on few questions, a model that guesses; and a ``split`` too small to
    measure them on) said first."""
    st.subheader("Are the probabilities honest?")
    if report is None:
        st.info(ex.md(note[:1].upper() + note[1:] + "." if note else
                      "No calibration: evaluate on the test split of a data set with a valid split."))
        return
    for caveat in caveats:
        st.warning(ex.md(caveat))
    for caveat in held_out_caveats(report, entities, split, fitted_on):  # fitted_on: other data's name, or ""
        st.warning(ex.sentence(caveat))
    measured = report.after.queries
    if measured < MIN_RELIABLE_QUERIES:
        st.warning(f"Measured on only {ex.plural(measured, f'{split} question')} (fewer than {MIN_RELIABLE_QUERIES}): "
                   "the calibration figures below would move by several points on another sample of the same size.")
    r = report.reliability
    width = 1 / len(r.edges)
    bins = [(e + width / 2, a, c) for e, a, c in zip(r.edges, r.accuracy, r.counts) if c]
    mids, acc, counts = [b[0] for b in bins], [b[1] for b in bins], [b[2] for b in bins]
    # two panels on one x axis: the share right per bin above, how many questions each bin holds below (a bin
    # where nothing is right draws no bar above, however many questions it holds: the count below shows them)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.66, 0.34], vertical_spacing=0.1)
    fig.add_trace(go.Bar(x=mids, y=acc, width=width * 0.9, name="share right in the bin", marker_color=palette.OTHER,
                         customdata=counts,
                         hovertemplate="confidence %{x:.2f}<br>share right %{y:.2f}<br>%{customdata:,} questions"
                                       "<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                             line={"dash": "dash", "color": palette.T_Q}), row=1, col=1)
    fig.add_trace(go.Bar(x=mids, y=counts, width=width * 0.9, name="questions in the bin", marker_color=palette.METRIC,
                         text=[f"{c:,}" for c in counts], textposition="outside", cliponaxis=False,
                         hovertemplate="confidence %{x:.2f}<br>%{y:,} questions<extra></extra>"), row=2, col=1)
    # the legend above the charts: below them it sat on the lower x-axis title at 1400 px (walk-through 38 #8)
    fig.update_layout(height=440, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", yanchor="bottom",
                                                                                   y=1.02, x=0))
    fig.update_xaxes(range=[0, 1])
    fig.update_xaxes(title_text="top-1 probability (after scaling)", row=2, col=1)
    fig.update_yaxes(title_text="share right", range=[0, 1.05], tickvals=[0, 0.25, 0.5, 0.75, 1], row=1, col=1)
    fig.update_yaxes(title_text="questions", range=[0, 1.3 * max(counts, default=1)], row=2, col=1)
    ex.show_chart(fig)
    b, a = report.before, report.after
    st.dataframe(pd.DataFrame([
        {"Probabilities": "raw softmax", "ECE": b.ece, "Brier": b.brier, "NLL": b.nll},
        {"Probabilities": f"calibrated (T = {report.temperature:.3f})", "ECE": a.ece, "Brier": a.brier, "NLL": a.nll}]),
        hide_index=True, column_config={k: st.column_config.NumberColumn(k, format="%.4f") for k in ("ECE", "Brier", "NLL")})
    cover = "; ".join(f"{100 * float(k):g}% sets hold the answer for {100 * v:.1f}% of the questions (size "
                      + (set_size_text(report.set_sizes[k]) if k in report.set_sizes else
                         f"mean {report.mean_set_size[k]:.1f}") + ")" for k, v in report.coverage.items())
    st.caption(f"Temperature {ex.md(source)}. Above, each bar: of the questions whose top answer got a calibrated probability in "
               f"that bin, the share answered right; below, how many questions the bin holds; empty bins are not drawn. "
               f"ECE: top-1 expected calibration error, 15 bins; Brier: multi-class; NLL of the "
               f"true answer; the distribution leaves out each question's other known answers (the time-aware filter). "
               f"Answer sets: {cover}.")


if __name__ == "__main__":  # run as a page by st.navigation (importable without side effects)
    render()
