"""Data and model: pick a data set and a checkpoint that serves it; statistics and the model card."""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

import explorer as ex
from tpar.data.kg import TemporalKG
from tpar.data.relation_matching import RelationMatch, share_text
from tpar.errors import DataError, defuse_markdown
from tpar.model.card import card_for
from tpar.model.registry import listed_checkpoint, not_offered
from tpar.training.timing import duration


def render() -> None:
    st.title("Data and model")
    sel = ex.data_set_ui(help="The embedded sample world comes first; benchmark data sets appear when "
                              "`$TPAR_DATA_DIR` or `../shared/datasets` exists.")
    if not any(s.kind == "benchmark" for s in ex.datasets()):
        st.caption("Benchmarks (ICEWS14, YAGO11k, ...) are not found here: set `$TPAR_DATA_DIR` or place them in "
                   "`../shared/datasets` to use them with the shipped benchmark checkpoints.")
    model_ui(sel)
    graph_ui(sel.data_kg)
    ex.sync_url(("data", "model"))


def model_ui(sel: ex.Selection) -> None:
    """The checkpoints that serve the data set, the chosen one's key figures and model card."""
    kg = sel.kg
    st.subheader("Model")
    ex.unreadable_ui(sel.unreadable)
    if not sel.matches:
        st.warning(f"No checkpoint fits this data set (none was trained on its {kg.num_relations} relations, or on "
                   f"relations whose names cover 95% of its facts, with time steps of {kg.time_axis.describe()}). "
                   "Questions need one: train with `tpar train`.")
    else:
        names = [m.info.name for m in sel.matches]
        fmt = {m.info.name: m.info.summary() + ("" if m.exact else " — trained on other data" if m.relations is None
                                                else f" — other relations: {share_text(m.relations.fact_coverage)} of "
                                                     "facts covered")  # plain text
               for m in sel.matches}
        ex.bind(st.selectbox, "Checkpoint", "model", options=names, format_func=lambda n: fmt[n])
        sel = ex.selection()
        if sel is None:
            st.stop()
        m = sel.match
        if m.relations is not None:
            relation_coverage_ui(m.relations)
        for w in m.warnings:
            st.info(ex.sentence(w))
        ex.unfinished_warning(sel)
        try:  # as on disk now: a model retrained under this name replaces the file (re-read only when it changed)
            ck = listed_checkpoint(m.info.path)
        except DataError as e:
            st.error(ex.md(e))
            return
        c = ck.config.model
        cols = st.columns(2) + st.columns(2)  # two by two: the values fit at 800 px
        cols[0].metric("Setting", ck.setting)
        secs = ck.extra.get("seconds")
        if ck.kind == "composite":
            st.info(ex.md(f"A composite model: the ranking combines {ck.combination_text()}, chosen on valid: "
                          f"{ck.formula()}. Its models were trained apart; the card lists each."))
            cols[1].metric("Models combined", f"{len(ck.members)}" + (" + history prior" if ck.prior else ""))
            cols[2].metric("Layers L · dimension d", "; ".join(f"{m.config.model.num_layers} · {m.config.model.dim}"
                                                               for m in ck.members))
            trained = sum(m.extra.get("seconds") or 0 for m in ck.members)
            cols[3].metric("Training time (all models)", duration(trained) if trained else "–",
                           help=f"combining them took {secs or 0:.0f} s on valid")
        else:
            cols[1].metric("Layers L · dimension d", f"{c.num_layers} · {c.dim}")
            cols[2].metric("Propagation", "exact" if c.propagation == "exact" else
                           "sparse default" if c.is_sparse_default else "pruned", help=c.propagation_words)
            cols[3].metric("Training time", duration(secs) if secs else "–")
        for note in ck.load_notes:  # e.g. a stored calibration set aside
            st.warning(ex.md(note))
        with st.expander("Model card", expanded=False):
            # the card file only when it was written for these weights (its sha256 mark), else one
            # written now from the checkpoint, saying why
            text, why = card_for(ck, m.info.path)
            if why:
                st.caption(ex.md(why))
            # its headings demoted below the page's own; a card file is a file (its sha256 mark is forgeable) and
            # a checkpoint's strings were chosen by whoever wrote it: no link, image, LaTeX or colour acts
            text = re.sub(r"(?m)^(#{1,4}) ", lambda h: "#" * min(6, len(h.group(1)) + 3) + " ", text)
            st.markdown(defuse_markdown(text))
    not_offered_ui(sel)


def not_offered_ui(sel: ex.Selection) -> None:
    """The models left out for this data set, each with why, so a user trying one on new data is not left guessing
    (walk-through 38 #10)."""
    left_out = not_offered(sel.data_kg, ex.checkpoints()[0], sel.matches)
    if left_out:
        with st.expander(f"Models not offered for this data set ({len(left_out):,})"):
            st.markdown("\n".join(f"- **{ex.md(n)}**: {ex.md(why)}" for n, why in left_out[:50])
                        + (f"\n- … and {len(left_out) - 50:,} more" if len(left_out) > 50 else ""))


def relation_coverage_ui(rm: RelationMatch) -> None:
    """How a model trained on other data covers this data set's relations (shown before it is used)."""
    ans, total = rm.questions("test")
    cols = st.columns(3)
    cols[0].metric("Relations matched", f"{len(rm.matched)} of {len(rm.data_relations)}")
    cols[1].metric("Facts covered", share_text(rm.fact_coverage),
                   help=f"{rm.facts_covered:,} of {rm.facts_total:,}; facts with an unmatched relation are left out")
    cols[2].metric("Test questions answerable", share_text(ans / total) if total else "–",
                   help=f"{ans:,} of {total:,} (both directions of each test fact)")
    if rm.unmatched:
        with st.expander(f"Unmatched relations ({len(rm.unmatched)})"):
            st.dataframe(pd.DataFrame([{"relation": u.data_relation, "facts": u.facts, "why": u.reason}
                                       for u in rm.unmatched]), hide_index=True, width="stretch")
    renamed = [x for x in rm.matched if x.how != "exact"]
    if renamed:
        with st.expander(f"Matched under another spelling ({len(renamed)})"):
            st.dataframe(pd.DataFrame([{"data relation": x.data_relation, "model relation": x.model_relation,
                                        "how": x.how, "facts": x.facts} for x in renamed]),
                         hide_index=True, width="stretch")


def graph_ui(kg: TemporalKG) -> None:
    """Statistics of the graph: counts, splits, notes, the most frequent relations, fingerprint."""
    st.subheader("Graph")
    stats = kg.stats()
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Entities", f"{stats['num_entities']:,}")
    c2.metric("Relations", f"{stats['num_relations']:,}")
    c3.metric("Facts", f"{sum(v.get('facts', 0) for v in stats['splits'].values()):,}")
    c4.metric("Time unit", kg.time_axis.granularity)
    st.caption(f"Time axis: {stats['time_axis']}")
    names = {"facts": "Facts", "entities": "Entities", "relations": "Relations", "time_steps": "Time steps",
             "time_range": "Time range"}
    def cell(v):  # counts with thousands separators, as the metrics above write them
        return " .. ".join(v) if isinstance(v, list) else f"{v:,}" if isinstance(v, int) else v

    rows = [{"Split": s, **{names.get(k, k.replace("_", " ").capitalize()): cell(v) for k, v in info.items()}}
            for s, info in stats["splits"].items()]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    for s in stats["missing_splits"]:
        st.warning(f"The {s} split is not available for this data set.")  # s: a split name
    for note in stats["notes"]:
        st.caption(ex.md(note))
    facts = kg.all_facts()
    if len(facts):
        counts = pd.Series(facts[:, 1]).value_counts()
        top = pd.DataFrame({"relation": [kg.relations.name(int(r)) for r in counts.index[:15]],
                            "facts": counts.values[:15]})
        with st.expander("Most frequent relations"):
            st.dataframe(top, hide_index=True)
    st.caption(f"Fingerprint {stats['fingerprint'][:16]}")


if __name__ == "__main__":  # run as a page by st.navigation (importable without side effects)
    render()
