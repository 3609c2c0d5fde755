"""Entity timeline: every known fact of the question's entity over time, with the query time marked."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

import explorer as ex

st.title("Entity timeline")
ss = st.session_state
sel = ex.selection()
if sel is None:
    st.stop()
kg = sel.kg
axis = kg.time_axis
entities = sorted(kg.entities.names, key=str.casefold)
if ss.get("subject") not in kg.entities:
    ss["subject"] = entities[0]
ex.bind(st.selectbox, "Entity", "subject", options=entities, help="Type to search.")
e = kg.entities.id(ss["subject"])
facts = kg.all_facts()
mine = facts[(facts[:, 0] == e) | (facts[:, 2] == e)]
if len(mine) == 0:
    st.info(ex.md(f"{ss['subject']} has no facts."))
    st.stop()
as_subject = mine[:, 0] == e
df = pd.DataFrame({
    "time": [axis.label(int(t)) for t in mine[:, 3]],
    "step": mine[:, 3],
    "relation": [kg.relations.name(int(r)) for r in mine[:, 1]],
    "role": ["subject" if s else "object" for s in as_subject],
    "other entity": [kg.entities.name(int(o if s else x)) for x, o, s in zip(mine[:, 0], mine[:, 2], as_subject)],
})
dated = axis.granularity in ("day", "month", "hour", "minute", "second") and axis.origin is not None
if dated:
    df["when"] = pd.to_datetime(df["time"])
else:
    df["when"] = df["step"] if axis.origin is None else pd.to_numeric(df["time"], errors="coerce")
rels = sorted(df["relation"].unique(), key=str.casefold)
pick = st.multiselect("Relations", rels, default=[], placeholder="all relations")
if pick:
    df = df[df["relation"].isin(pick)]
t_q = None
if ss.get("time"):
    try:
        t_q = axis.parse(ss["time"])
    except ValueError:
        t_q = None
if t_q is not None:
    df["Δt"] = [axis.format_delta(int(s) - t_q) for s in df["step"]]
st.caption(f"{len(df):,} facts of **{ex.md(ss['subject'])}** ({int(as_subject.sum()):,} as subject, "
           f"{int((~as_subject).sum()):,} as object)" + (f"; query time {axis.label(t_q)}" if t_q is not None else ""))
shown = df.assign(relation=df["relation"].map(ex.plot_text), **{"other entity": df["other entity"].map(ex.plot_text)})
fig = px.scatter(shown, x="when", y="relation", color="role", symbol="role",
                 hover_data={"other entity": True, "time": True, "when": False,
                             **({"Δt": True} if "Δt" in df else {})},
                 color_discrete_map={"subject": "#1d4ed8", "object": "#ea580c"},
                 height=max(320, 28 * df["relation"].nunique() + 140))
if t_q is not None:
    x = pd.Timestamp(axis.label(t_q)) if dated else (t_q if axis.origin is None else float(axis.label(t_q)))
    fig.add_vline(x=x, line_dash="dash", line_color="#b91c1c")
    fig.add_annotation(x=x, y=1.02, yref="paper", text="t_q", showarrow=False, font={"color": "#b91c1c"})
fig.update_layout(margin=dict(l=10, r=10, t=30, b=10), xaxis_title=None, yaxis_title=None, legend_title=None)
st.plotly_chart(fig, config={"displaylogo": False})
with st.expander("Facts"):
    st.dataframe(df.drop(columns=["when", "step"]).sort_values("time"), hide_index=True)
ex.sync_url()
