"""Entity timeline: every known fact of the question's entity over time, with the query time marked."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

import explorer as ex
import palette
from tpar.data.kg import TemporalKG
from tpar.graph.queries import resolve_setting

TALL = 10  # a timeline with more relations than this is tall enough to show its times above the plot as well


def render() -> None:
    st.title("Entity timeline")
    ss = st.session_state
    kg = ex.require_selection().data_kg  # every fact, with its own relations, whatever the chosen model knows
    entities = sorted(kg.entities.names, key=str.casefold)
    ex.take_name("subject", kg.entities, "entity", entities[0])  # an unknown or look-alike name is named
    ex.bind(st.selectbox, "Entity", "subject", options=entities, help="Type to search.")
    facts = kg.entity_facts(ss["subject"])
    if not facts:
        st.info(ex.md(f"{ss['subject']} has no facts."))
        st.stop()
    t_q = ex.take_time(kg)
    calendar = on_calendar(kg, t_q)
    df = timeline_frame(kg, pd.DataFrame([f.__dict__ for f in facts]), calendar)
    pick = st.multiselect("Relations", sorted(df["relation"].unique(), key=str.casefold), default=[],
                          placeholder="all relations")
    if pick:
        df = df[df["relation"].isin(pick)]
    if t_q is not None:
        df["Δt"] = [kg.time_axis.format_delta(int(s) - t_q) for s in df["time_step"]]
    n_subject = int((df["role"] == "subject").sum())  # of the facts shown (the relation filter applied)
    n_inferred = int(df["inferred"].sum())
    if n_inferred:
        st.info(f"{n_inferred:,} of these facts were inferred by a model (completed), not observed: drawn as "
                "hollow markers, marked in the table.")
    st.caption(f"{ex.plural(len(df), 'fact')} of **{ex.md(ss['subject'])}** ({n_subject:,} as subject, "
               f"{len(df) - n_subject:,} as object"
               + (f"; {len(facts):,} with all relations" if pick else "") + ")"
               + (f"; query time {kg.time_axis.label(t_q)} (t_q, dashed)" if t_q is not None else ""))
    if dated(kg) and not calendar:
        st.caption(f"This data set's times reach too near the calendar's ends (years 1 and 9999) for a date axis: "
                   f"the chart's axis counts {kg.time_axis.granularity} steps from {kg.time_axis.label(0)}; hover a "
                   "marker for its time.")
    forecast = t_q is not None and resolve_setting(ss.get("setting") or "auto", t_q, kg.time_range[1]).value \
        == "extrapolation"  # as the question is answered: auto is a forecast after the data
    if forecast and bool((df["time_step"] >= t_q).any()):
        st.caption("Shaded: the facts at or after the question time, which a forecast (extrapolation) at that time "
                   "never sees.")
    train_end = training_end(kg)
    if train_end is not None:
        st.caption(ex.md(f"Dotted: the last training fact's time, {kg.time_axis.label(train_end)}; the facts after it "
                         "are this data set's valid and test facts, which a model trained on it never learned from."))
    chart_ui(kg, df, t_q, calendar, forecast, train_end)
    with st.expander("Facts"):
        st.dataframe(df.drop(columns=["when", "time_step"]).assign(inferred=df["inferred"].map({True: "inferred",
                                                                                                False: ""})),
                     hide_index=True)
    ex.sync_url()


def training_end(kg: TemporalKG) -> int | None:
    """The last training fact's time step when the data set is split in time (its valid and test facts all lie
    after it, as a chronological split makes them); None otherwise (a random split has no such line)."""
    train = kg.facts("train")
    later = [kg.facts(s)[:, 3] for s in ("valid", "test") if len(kg.facts(s))]
    if not len(train) or not later:
        return None
    end = int(train[:, 3].max())
    return end if min(int(t.min()) for t in later) > end else None


def dated(kg: TemporalKG) -> bool:
    axis = kg.time_axis
    return axis.granularity in ("day", "month", "hour", "minute", "second") and axis.origin is not None


def on_calendar(kg: TemporalKG, t_q: int | None) -> bool:
    """Whether the chart can draw this data set on a date axis: a calendar whose times (and the question's),
    with the axis's margins of a tenth of their span, stay within years 1-9999 (beyond them Plotly's date axis
    falls back to an empty range in 2000); otherwise the chart counts time steps."""
    if not dated(kg):
        return False
    t_min, t_max = kg.time_range
    steps = [t_min, t_max] + ([t_q] if t_q is not None else [])
    try:
        lo, hi = (dt.datetime.fromisoformat(kg.time_axis.label(t).replace(" ", "T") + ("-01" if len(
            kg.time_axis.label(t)) == 7 else "")) for t in (min(steps), max(steps)))
        margin = (hi - lo) / 10 + dt.timedelta(days=31)
        _ = (lo - margin, hi + margin)  # raises OverflowError past year 1 or 9999 (assigned: a bare expression
        # would be written to the page by Streamlit's magic)
    except (ValueError, OverflowError):
        return False
    return True


def timeline_frame(kg: TemporalKG, df: pd.DataFrame, calendar: bool) -> pd.DataFrame:
    """The entity's facts with a plottable ``when``: dates where the axis has a calendar pandas can draw
    (``calendar``), else the label's number (years) or the step."""
    axis = kg.time_axis
    if calendar:
        df["when"] = pd.to_datetime(df["time"])
    else:
        df["when"] = df["time_step"] if axis.origin is None or dated(kg) else pd.to_numeric(df["time"], errors="coerce")
    return df.rename(columns={"other": "other entity"})


def chart_ui(kg: TemporalKG, df: pd.DataFrame, t_q: int | None, calendar: bool, forecast: bool = False,
             train_end: int | None = None) -> None:
    """Relations over time, the entity as subject (teal diamonds) or object (amber dots); t_q dashed and, for a
    ``forecast`` (extrapolation), the facts from t_q on shaded: the question never sees them; the last training
    fact's time (``train_end``) dotted."""
    axis = kg.time_axis
    shown = df.assign(relation=df["relation"].map(ex.plot_text), **{"other entity": df["other entity"].map(ex.plot_text)})
    # an inferred fact (completed by a model) is a hollow marker of its role's colour
    shown["kind"] = [f"as {r}" + (" (inferred)" if i else "") for r, i in zip(shown["role"], shown["inferred"])]
    fig = px.scatter(shown, x="when", y="relation", color="kind", symbol="kind",
                     hover_data={"other entity": True, "time": True, "when": False, "kind": True,
                                 **({"Δt": True} if "Δt" in df else {})},
                     color_discrete_map={"as subject": palette.QUERY, "as object": palette.AS_OBJECT,
                                         "as subject (inferred)": palette.QUERY, "as object (inferred)": palette.AS_OBJECT},
                     symbol_map={"as subject": "diamond", "as object": "circle", "as subject (inferred)": "diamond-open",
                                 "as object (inferred)": "circle-open"},
                     category_orders={"kind": ["as subject", "as object", "as subject (inferred)", "as object (inferred)"]},
                     height=max(320, 30 * df["relation"].nunique() + 150))
    # large enough to tell apart at a glance; a white rim keeps markers on the same day distinct
    fig.update_traces(marker={"size": 11, "opacity": 0.9, "line": {"width": 1, "color": "white"}})
    for trace in fig.data:
        if "inferred" in trace.name:  # hollow markers draw with their line: their own colour, thicker
            trace.marker.line = {"width": 2, "color": trace.marker.color}
    def where(t: int):
        return pd.Timestamp(axis.label(t)) if calendar else t if axis.origin is None or dated(kg) else float(axis.label(t))

    ends = [shown["when"].min(), shown["when"].max()] + [where(t) for t in (t_q, train_end) if t is not None]
    lo, hi = min(ends), max(ends)

    def anchor(x) -> str:
        """A label near the plot's right (left) end is set to the left (right) of its line: centred there, the
        page's edge cut it off at 820 px."""
        if hi == lo:
            return "center"
        share = (x - lo) / (hi - lo)
        return "right" if share > 0.9 else "left" if share < 0.1 else "center"

    if train_end is not None:
        xt = where(train_end)
        fig.add_vline(x=xt, line_dash="dot", line_color=palette.REFERENCE)
        fig.add_annotation(x=xt, y=0.0, yref="paper", yanchor="bottom", xanchor="right", text="training facts end ",
                           showarrow=False, font={"color": palette.REFERENCE, "size": 11})
    if t_q is not None:
        x = where(t_q)
        fig.add_vline(x=x, line_dash="dash", line_color=palette.T_Q)
        # above the plot area, where the dashed line ends (centred on 1.02, the line crossed the label's lower half)
        fig.add_annotation(x=x, y=1.0, yref="paper", yanchor="bottom", text="t_q", showarrow=False,
                           xanchor=anchor(x), font={"color": palette.T_Q})
        later = shown["when"][df["time_step"] >= t_q]
        if forecast and len(later):  # what a forecast at t_q may not use: shaded (it was drawn as any other fact)
            fig.add_vrect(x0=x, x1=later.max(), fillcolor=palette.REFERENCE, opacity=0.12, line_width=0, layer="below")
    moments = set(shown["when"].dropna()) | ({x} if t_q is not None else set())
    if len(moments) == 1:  # one moment: a few time steps either side, not an axis zoomed into a millisecond
        s0 = int(df["time_step"].iloc[0])
        step = pd.Timestamp(axis.label(s0 + 1)) - pd.Timestamp(axis.label(s0)) if calendar else 1
        only = next(iter(moments))
        fig.update_xaxes(range=[only - 3 * step, only + 3 * step])
    fig.update_layout(margin=dict(l=10, r=10, t=30, b=10), xaxis_title=None, yaxis_title=None,
                      legend={"title": None, "orientation": "h", "yanchor": "bottom", "y": 1.04, "x": 0})
    if df["relation"].nunique() > TALL:  # a tall chart: its times above it too, not only a screen's scroll away
        top = 74  # the toolbar's strip, the times above the plot, the legend above them
        plot_px = fig.layout.height - top - 10 - 60  # less the margins and the bottom axis's labels (about)
        fig.add_trace(go.Scatter(x=[shown["when"].min(), shown["when"].max()], y=[shown["relation"].iloc[0]] * 2,
                                 xaxis="x2", mode="markers", marker={"opacity": 0}, hoverinfo="skip",
                                 showlegend=False))
        fig.update_layout(xaxis2={"matches": "x", "overlaying": "x", "side": "top", "showgrid": False},
                          margin={"t": top}, legend={"y": 1 + 34 / max(plot_px, 1)})
        fig.update_xaxes(tickangle=0)  # level: a slanted date above the plot would run into the legend
        if calendar:  # Plotly labels a matched date axis's automatic ticks unlike the one below: the same ticks on both
            ticks = date_ticks(min(moments), max(moments), most=5)  # five fit a 820 px page level
            fig.update_xaxes(tickvals=ticks, ticktext=[tick_label(t, ticks) for t in ticks])  # both axes
    ex.show_chart(fig)


def date_ticks(lo: pd.Timestamp, hi: pd.Timestamp, most: int = 7) -> list[pd.Timestamp]:
    """At most ``most`` round dates spanning [lo, hi]: days, weeks, month starts, or years that are multiples of
    1, 2, 5, 10, … (1995, 2000, …)."""
    days = (hi - lo).days
    for freq, every in (("D", 1), ("2D", 2), ("3D", 3), ("7D", 7), ("14D", 14), ("MS", 30.4), ("2MS", 60.9),
                        ("3MS", 91.3), ("6MS", 182.6)):
        if days / every > 2 * most + 2:  # far too many: not built (a 2,000-year span has 730,000 days)
            continue
        ticks = list(pd.date_range(lo.normalize(), hi, freq=freq))
        if len(ticks) <= most:
            return ticks or [lo]
    for n in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000):
        first = -(-lo.year // n) * n  # the first multiple of n at or after lo's year …
        if first == lo.year and lo > pd.Timestamp(year=first, month=1, day=1):
            first += n  # … whose 1 January is not before lo
        years = range(first, hi.year + 1, n)
        if len(years) <= most:
            return [pd.Timestamp(year=y, month=1, day=1) for y in years] or [lo]
    return [lo, hi]


def tick_label(t: pd.Timestamp, ticks: list[pd.Timestamp]) -> str:
    """A tick's date as precise as the ticks' spacing needs: "2025-03-14", "Mar 2025" or "2025"."""
    if len(ticks) > 1 and all(x.month == 1 and x.day == 1 for x in ticks):
        return f"{t.year}"
    if len(ticks) > 1 and all(x.day == 1 for x in ticks):
        return f"{t:%b} {t.year}"
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}"


if __name__ == "__main__":  # run as a page by st.navigation (importable without side effects)
    render()
