"""Learned rules: what the model has learned about a relation, as temporal rules distilled from its top paths
(``tpar.reasoning.distilled_rules``, the same rules as ``tpar rules``), computed once per checkpoint and data set
and kept in the workspace."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote, urlencode

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

import explorer as ex
import palette
from tpar.errors import DataError
from tpar.data.catalog import checkpoint_dir
from tpar.reasoning.distilled_rules import (SCORE_TEXT, DistilledRule, RuleConfig, RuleSet, cache_path, cached_rules,
                                            follows_planted, resolve_setting, rule_questions)
from tpar.reasoning.rules import PlantedRules, parse_atom

RULES_DIR = ex.WORKSPACE / "rules"
#: rules distilled once for shipped checkpoints and data sets, under the same content keys (read-only)
SHIPPED_RULES = (checkpoint_dir() / "rules") if checkpoint_dir() is not None else None
#: rules drawn in the chart and listed in the table
SHOWN = 10


@st.cache_data(show_spinner=False, max_entries=8)
def read_rules(path: str, version: int) -> RuleSet:
    return RuleSet.read(path)


def render() -> None:
    st.title("Learned rules")
    ss = st.session_state
    sel = ex.require_model(ex.selection())
    ex.sync_url(("data", "model"))  # a reload or a shared link shows these rules, not the default model's
    kg = sel.kg
    ck = sel.match.info.checkpoint
    config = RuleConfig()
    setting = resolve_setting(ck.setting, config.setting)
    st.caption(f"What model **{ex.md(sel.match.info.name)}** has learned, as temporal rules. For each relation, up to "
               f"{config.questions} facts of the {config.source} split are asked both ways ({setting}); the model's "
               f"{config.answers} best answers of each question are explained, and their {config.paths} most important "
               "paths each (the gradient importance of the Evidence page) are grouped by their relations, directions "
               "and time gaps. The same rules as `tpar rules`.")
    ex.unfinished_warning(sel)
    rm = sel.match.relations
    if rm is not None:  # zero-shot: the rules are the model's behaviour on data it never saw (walk-through 38 #6)
        st.info(ex.sentence(f"{rm.describe()}. These rules are how the model, trained on "
                            f"{sel.match.info.checkpoint.data_name}, reasons on this data it never saw; questions "
                            "about a relation it does not know are not asked"))
    if config.source not in kg.splits or not len(kg.facts(config.source)):
        st.info(ex.md(f"Data set {sel.source.label!r} has no {config.source} split to ask questions from; "
                      "`tpar rules --from train` samples training facts."))
        st.stop()
    path = str(cache_path(RULES_DIR, sel.checkpoint_path, kg, config))  # keyed by the checkpoint's bytes
    shipped = SHIPPED_RULES and cache_path(SHIPPED_RULES, sel.checkpoint_path, kg, config)
    if not Path(path).is_file() and shipped and shipped.is_file():  # distilled once and shipped (the sample world)
        path = str(shipped)
    if not Path(path).is_file():
        compute_ui(sel, config)
        st.stop()
    try:
        rules = read_rules(path, ex.version(path))
    except DataError as e:
        if shipped and path == str(shipped):  # shipped beside the checkpoint: read-only, said as it is
            raise
        # the workspace's copy is a cache: an unreadable one (cut short, edited by hand) is distilled again, never a
        # dead end (hostile audit 38 #4)
        st.warning(ex.md(f"The rules kept in the workspace for this model could not be read ({e}). Distilling them "
                         "again replaces that file."))
        compute_ui(sel, config)
        st.stop()
    m = rules.meta
    heads = rules.head_names
    if not heads:
        st.info("No rules: no question of this data set was asked.")
        st.stop()
    default = ss.get("relation") if ss.get("relation") in heads else (
        planted_heads(sel, heads) or working_heads(rules, ss.get("rules_direction", "object") == "subject") or heads)[0]
    if ss.get("rules_head") not in heads:
        ss["rules_head"] = default
    c1, c2 = st.columns([3, 2])
    head = c1.selectbox("Head relation", heads, key="rules_head", help="Type to search.")
    direction = c2.radio("Questions", ["object", "subject"], horizontal=True, key="rules_direction",
                         format_func=lambda d: "(X, r, ?, t)" if d == "object" else "(?, r, X, t)",
                         help="Rules learned from object questions (X, r, ?, t) or from subject questions "
                              "(?, r, X, t): X is the question's entity, Y the answer.")
    inverse = direction == "subject"
    summary = next((h for h in rules.heads if h.head == head and h.head_inverse == inverse), None)
    learned = rules.for_head(head, inverse)
    st.caption(f"{m.get('questions', 0):,} questions in {m.get('seconds', 0):g} s ({ex.md(m.get('setting', ''))}); "
               + ("distilled once and shipped beside the checkpoint (`checkpoints/rules/`)." if shipped and path == str(shipped)
                  else "kept in the workspace.")
               + (f" Here: {summary.questions:,} questions, the model's first answer right for "
                  f"{100 * summary.answered_first:.0f}% of them; {summary.patterns:,} patterns seen, "
                  f"{len(learned):,} in at least {config.min_support} questions." if summary else ""))
    planted = planted_rules(sel, head, learned, rules)
    if not learned:
        st.info(ex.md(f"No rule for {head} ({direction} questions) was seen in enough questions to keep."))
        st.stop()
    reading_ui(learned[0], rules)
    chart_ui(learned[:SHOWN], rules, planted)
    table_ui(learned[:SHOWN], rules, planted)
    examples_ui(sel, learned, rules)


def compute_ui(sel: ex.Selection, config: RuleConfig) -> None:
    """The first visit for this checkpoint and data set: distil the rules with a progress bar, then keep them."""
    n = len(rule_questions(sel.kg, config))
    st.info(ex.md(f"The rules of {sel.match.info.name} on {sel.source.label} are not computed yet: {n:,} questions "
                  "to explain, about a minute per thousand on a CPU core. They are kept in the workspace, so this "
                  "happens once per model and data set. Stay on this page while it runs."))
    if not st.button("Distil the rules", type="primary", key="rules_run"):
        return
    bar = st.progress(0.0, text="Preparing the questions…")

    def tick(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"{done:,} / {total:,} questions explained")

    try:
        cached_rules(RULES_DIR, sel.checkpoint_path, sel.explainer(), config, on_progress=tick)
    except DataError as e:
        bar.empty()
        st.error(ex.md(e))
        return
    st.rerun()


def working_heads(rules: RuleSet, inverse: bool = False) -> list[str]:
    """The head relations with a rule of ``inverse``'s questions (object questions by default, where the page opens)
    that ended at a true answer at least once, best rule first: the page opens on one of them, not on a relation
    whose shown rules are always wrong (walk-through 38 #3)."""
    best: dict[str, float] = {}
    for r in rules.rules:
        if r.correct and r.head_inverse == inverse:
            best[r.head] = max(best.get(r.head, 0.0), r.score)
    return sorted(best, key=lambda h: -best[h])


def planted_heads(sel: ex.Selection, heads: list[str]) -> list[str]:
    """Of ``heads``, those a planted rule of the data (the sample world's rules.json) concludes, in their order: the
    page opens on one of them, where a class sees a learned rule beside the rule that made the data."""
    found = PlantedRules.find(sel.source.path)
    if found is None:
        return []
    named = set()
    for p in found.rules.values():
        try:
            named.add(parse_atom(p["head"])[1])
        except (ValueError, KeyError, TypeError):
            continue
    return [h for h in heads if h in named]


def planted_rules(sel: ex.Selection, head: str, learned: list[DistilledRule], rules: RuleSet) -> dict[int, str]:
    """On data with known generating rules (the sample world's rules.json): the rank of the learned rule that is each
    planted rule of this head (shown beside it), and a line per planted rule."""
    found = PlantedRules.find(sel.source.path)
    if found is None:
        return {}
    marks: dict[int, str] = {}
    lines = []
    for p in found.rules.values():
        try:
            if parse_atom(p["head"])[1] != head:
                continue
        except ValueError:
            continue
        hits = [r for r in learned if follows_planted(r, p, rules.scale)]
        body = "; ".join(p["body"])
        if hits:
            for r in hits:
                marks[r.rank] = p.get("id", "planted")
            best = hits[0]
            more = (f"; also as rule{'s' if len(hits) > 2 else ''} {', '.join(str(r.rank) for r in hits[1:])} (the same "
                    "relations and directions, its times in other buckets)" if len(hits) > 1 else "")
            lines.append(f"planted rule **{ex.md(p.get('id', ''))}** ({ex.md(body)} ⇒ {ex.md(p['head'])}): learned "
                         f"as rule **{best.rank}** (support {best.support}, confidence {100 * best.confidence:.0f}%){more}")
        else:
            lines.append(f"planted rule **{ex.md(p.get('id', ''))}** ({ex.md(body)} ⇒ {ex.md(p['head'])}): "
                         "not among the learned rules of these questions")
    if lines:
        text = "; ".join(lines)
        st.success(f"This data set was generated with known rules. {text[:1].upper()}{text[1:]}.")
    return marks


def reading_ui(first: DistilledRule, rules: RuleSet) -> None:
    """How to read the rule notation, with the best rule in words -- or, when even the best never ended at a true
    answer, that the patterns kept are where the model looked, not a rule that works (walk-through 38 #3)."""
    scale = rules.scale
    best = (f"Rule {first.rank} reads: {first.words(scale)}." if first.correct else "")
    st.markdown(ex.keep_together(ex.md(f"How to read a rule: X is the question's entity, Y the answer, Z1, Z2 the entities a path passes "
                      f"on the way; t is the question's time, and {scale.text(1)} means {scale.words(1)} "
                      f"({scale.text(4)}: {scale.words(4)}; a + for after t, which only interpolation can use). "
                      f"{best}")))
    if not first.correct:
        kind = "subject" if first.head_inverse else "object"
        st.warning(ex.md(f"No pattern kept for {first.head} ({kind} questions) ended at a true answer in the "
                         "questions asked (confidence 0% for each): they show where the model looked, not a rule it "
                         f"has learned that works. The model has no working rule for these {kind} questions here."))


#: characters of a rule's body in a chart label (the bar's hover shows the whole rule)
LABEL_CHARS = 30


def rule_label(r: DistilledRule, planted: dict[int, str], scale=None) -> str:
    """The chart's name for a rule: its rank and its body's relations (⁻¹: walked backwards) with their time windows
    (two rules of one relation differ only there), cut to :data:`LABEL_CHARS`; ★ for a planted rule."""
    body = " ∧ ".join(a.relation + ("⁻¹" if a.inverse else "") + (f" {scale.text(a.bucket)}" if scale else "")
                      for a in r.body)
    if len(body) > LABEL_CHARS:
        body = body[:LABEL_CHARS - 1].rstrip() + "…"
    return ex.plot_text(f"{r.rank}. {body}", most=LABEL_CHARS + 10) + (" ★" if r.rank in planted else "")


def chart_ui(shown: list[DistilledRule], rules: RuleSet, planted: dict[int, str]) -> None:
    """Confidence and support of the best rules, side by side; a planted rule's bars in their own colour."""
    labels = [rule_label(r, planted, rules.scale) for r in shown]
    texts = [ex.plot_text(r.text(rules.scale)) for r in shown]
    colours = [palette.KNOWN if r.rank in planted else palette.OTHER for r in shown]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=("confidence", "support"))
    fig.add_trace(go.Bar(y=labels, x=[r.confidence for r in shown], orientation="h", marker_color=colours,
                         customdata=texts, name="confidence", text=[f"{100 * r.confidence:.0f}%" for r in shown],
                         textposition="outside", cliponaxis=False,
                         hovertemplate="%{customdata}<br>confidence %{x:.0%}<extra></extra>"), 1, 1)
    fig.add_trace(go.Bar(y=labels, x=[r.support for r in shown], orientation="h", marker_color=colours,
                         customdata=texts, name="support", text=[str(r.support) for r in shown],
                         textposition="outside", cliponaxis=False,
                         hovertemplate="%{customdata}<br>support %{x}<extra></extra>"), 1, 2)
    fig.update_xaxes(range=[0, 1.15], tickvals=[0, 0.25, 0.5, 0.75, 1], tickformat=".0%", row=1, col=1)
    fig.update_xaxes(range=[0, 1.15 * max(r.support for r in shown)], row=1, col=2)
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_layout(height=90 + 30 * len(shown), margin=dict(l=10, r=10, t=40, b=10), showlegend=False,
                      bargap=0.25)
    ex.show_chart(fig)
    st.caption("Rules ranked by score, best first (★ and green: a planted rule of the data); each bar names the "
               "relations of the rule's path (⁻¹: a relation walked backwards), hover it for the whole rule. "
               "Confidence: of the questions whose top paths hold the rule, the share where its path ends at a true "
               "answer. Support: how many questions hold it. Score: the share of the head's questions the rule "
               "answers right, counted cautiously where few questions hold it (a rule right in 2 of 2 questions "
               "does not outrank one right in 40 of 50).",
               help=ex.md(SCORE_TEXT))


def table_ui(shown: list[DistilledRule], rules: RuleSet, planted: dict[int, str]) -> None:
    """The rules in words (they wrap at any width), then as a table."""
    lines = []
    for r in shown:
        mark = f" — ★ planted rule **{ex.md(planted[r.rank])}**" if r.rank in planted else ""
        lines.append(f"{r.rank}. {ex.keep_together(ex.md(r.text(rules.scale)))}  \n"
                     f"   support {r.support}, confidence {100 * r.confidence:.0f}%, importance {r.importance:.3g}, "
                     f"score {r.score:.3f}{mark}")
    st.markdown("\n".join(lines))
    with st.expander("As a table"):
        table_frame(shown, rules, planted)


def table_frame(shown: list[DistilledRule], rules: RuleSet, planted: dict[int, str]) -> None:
    table = pd.DataFrame([{"rank": r.rank, "planted": planted.get(r.rank, ""), "rule": r.text(rules.scale),
                           "support": r.support, "confidence": 100 * r.confidence,
                           "importance": r.importance, "score": r.score} for r in shown])
    st.dataframe(table, hide_index=True, column_config={
        "rank": st.column_config.NumberColumn("Rank", width="small"),
        "planted": st.column_config.TextColumn("Planted", width="small"),
        "rule": st.column_config.TextColumn("Rule (X: the question's entity, Y: the answer)", width="large"),
        "support": st.column_config.NumberColumn("Support", width="small"),
        "confidence": st.column_config.NumberColumn("Confidence", format="%.0f%%", width="small"),
        "importance": st.column_config.NumberColumn("Importance", format="%.3g", width="small",
                                                    help="mean of what the rule's path adds to the answer's score"),
        "score": st.column_config.NumberColumn("Score", format="%.3f", width="small")})


def question_url(page: str, sel: ex.Selection, x, importance: bool) -> str:
    """A link that opens the example question (and its answer) on another page, in a new tab (the URL's question
    is read by ``explorer.init_state``)."""
    params = {"data": sel.source.label, "model": sel.match.info.name, "subject": x.entity, "relation": x.relation,
              "time": x.time, "direction": x.direction, "setting": x.setting, "answer": x.answer}
    if importance:
        params["importance"] = "gradient"  # the importance the rules were read with
    return f"./{page}?{urlencode(params, quote_via=quote)}"


def examples_ui(sel: ex.Selection, learned: list[DistilledRule], rules: RuleSet) -> None:
    st.subheader("Examples")
    ranks = [r.rank for r in learned]
    pick = st.selectbox("Rule", ranks, key="rules_example_rank",
                        format_func=lambda k: f"#{k}: {learned[ranks.index(k)].text(rules.scale)}")
    rule = learned[ranks.index(pick)]
    if not rule.examples:
        st.info("No example kept for this rule.")
        return
    for x in rule.examples:
        verdict = "a true answer" if x.correct else f"not a true answer (the fact's answer: {x.true_answer})"
        st.markdown(f"**{ex.md(x.question_text())}** → {ex.md(x.answer)}, {ex.md(verdict)}  \n"
                    f"{ex.md(x.path)}  \n"
                    f"[Open in Ask]({question_url('ask', sel, x, False)}) · "
                    f"[Open in Evidence]({question_url('evidence', sel, x, True)})")
    st.caption("The links open the question in a new tab, on this data set and model; Evidence explains the rule's "
               "answer with the gradient importance the rules were read with.")


if __name__ == "__main__":  # run as a page by st.navigation (importable without side effects)
    render()
