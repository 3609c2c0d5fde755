"""AppTest of the Learned rules page: distilled once (a button, a progress bar) and then read from the workspace,
the planted rule marked, an example opened on the Evidence page through its URL, and names escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlparse

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from helpers import ROOT, SAMPLE_CHECKPOINT  # noqa: E402
from tpar.reasoning import distilled_rules  # noqa: E402
from tpar.reasoning.distilled_rules import (BodyAtom, DistilledRule, GapScale, HeadSummary, RuleConfig,  # noqa: E402
                                            RuleExample, RuleSet, cache_path)

APP = str(ROOT / "app" / "streamlit_app.py")
HEAD = "Mobilize against"


@pytest.fixture(autouse=True)
def workspace(monkeypatch, tmp_path):
    monkeypatch.setenv("TPAR_DATA_DIR", str(tmp_path / "no-benchmarks-here"))
    monkeypatch.syspath_prepend(str(Path(APP).parent))
    import explorer

    monkeypatch.setattr(explorer, "WORKSPACE", tmp_path / "ws")
    for fn in (explorer.datasets, explorer.checkpoints):
        fn.clear()
    yield tmp_path / "ws"
    for fn in (explorer.datasets, explorer.checkpoints):
        fn.clear()


@pytest.fixture()
def few_questions(monkeypatch, tmp_path):
    """The page's questions cut to 12 facts of one head (both directions), so that a distillation takes seconds; the
    shipped checkpoint served from a folder without the shipped rules (checkpoints/rules/), so the page distils."""
    import shutil

    from helpers import SAMPLE_CHECKPOINT

    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(SAMPLE_CHECKPOINT, models / SAMPLE_CHECKPOINT.name)
    monkeypatch.setenv("TPAR_CHECKPOINT_DIR", str(models))
    real = distilled_rules.rule_questions

    def few(kg, config):
        return real(kg, RuleConfig(questions=12, relations=(HEAD,), seed=config.seed))

    monkeypatch.setattr(distilled_rules, "rule_questions", few)


def markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def plain(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text).replace("\u2060", "").replace("\u2011", "-")


def rules_page(params: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.run()
    at.switch_page("views/rules.py").run()
    return at


def test_rules_are_distilled_once_with_a_progress_bar_then_read_from_the_workspace(workspace, few_questions,
                                                                                   monkeypatch):
    at = rules_page()
    assert not at.exception and not at.error
    assert "not computed yet: 24 questions" in plain(" ".join(i.value for i in at.info))
    at.button(key="rules_run").click().run()
    assert not at.exception and not at.error
    cached = list((workspace / "rules").glob("rules-*.json"))
    assert len(cached) == 1
    assert at.selectbox(key="rules_head").options == [HEAD]
    text = plain(markdown(at))
    assert "1. (Y, Threaten, X, t-3..-1) => (X, Mobilize against, Y, t)" in text
    # the notation is read out, the best rule in words (the walk-through met t-∞..-41 unexplained)
    assert "t-3..-1 means 1 to 3 days before t (t-∞..-41: 41 or more days before t" in text
    assert "Rule 1 reads: if Y Threaten X 1 to 3 days before t, then X Mobilize against Y at t." in text
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)  # bars named by their path, not "rule 1"
    assert spec["data"][0]["y"][0] == "1. Threaten⁻¹ t-3..-1 ★"  # with its time window: rules differ there
    assert "Wilson" not in " ".join(c.value for c in at.caption)  # the formula waits in the caption's help
    assert "★ planted rule **escalation**" in text
    said = plain(at.success[0].value)
    assert "Planted rule **escalation**" in said and "learned as rule **1**" in said
    at.radio(key="rules_direction").set_value("subject").run()
    assert "1. (X, Threaten, Y, t-3..-1) => (Y, Mobilize against, X, t)" in plain(markdown(at))  # the example

    def no_more(*a, **kw):
        raise AssertionError("distilled again although the workspace holds the rules")

    monkeypatch.setattr(distilled_rules, "distill_rules", no_more)
    again = rules_page()
    assert not again.exception and not again.error and not again.button
    assert "(Y, Threaten, X, t-3..-1) => (X, Mobilize against, Y, t)" in plain(markdown(again))


def test_an_unreadable_rules_file_in_the_workspace_is_distilled_again_not_a_dead_end(workspace, few_questions):
    """A rules cache cut short or edited out of range: the page says so and offers to distil again, which replaces
    the file (hostile audit 38 #4: it showed only the JSON error, for good)."""
    at = rules_page()
    at.button(key="rules_run").click().run()
    cached = next((workspace / "rules").glob("rules-*.json"))
    good = cached.read_text()

    def rules_of(text: str) -> dict:  # the file less how long distilling took
        d = json.loads(text)
        d["meta"].pop("seconds")
        return d
    for damaged in (good[: len(good) // 2], re.sub(r'"score": [0-9.e-]+', '"score": -3', good, count=1)):
        cached.write_text(damaged)
        again = rules_page()
        assert not again.exception and not again.error
        said = plain(" ".join(w.value for w in again.warning))
        assert "could not be read" in said and cached.name in said, said
        again.button(key="rules_run").click().run()
        assert not again.exception and not again.error
        assert rules_of(cached.read_text()) == rules_of(good)  # distilled again: the same rules
    assert "(Y, Threaten, X, t-3..-1) => (X, Mobilize against, Y, t)" in plain(markdown(again))


def test_an_example_opens_on_the_evidence_page_through_its_url(workspace, few_questions):
    at = rules_page()
    at.button(key="rules_run").click().run()
    links = re.findall(r"\[Open in Evidence\]\(([^)]+)\)", markdown(at))
    assert links and all(link.startswith("./evidence?") for link in links)
    params = dict(parse_qsl(urlparse(links[0]).query))
    assert params["relation"] == HEAD and params["importance"] == "gradient"
    assert params["data"] == "sample: world/chronological" and params["model"] == "sample-world-unified"
    ev = AppTest.from_file(APP, default_timeout=120)
    for k, v in params.items():
        ev.query_params[k] = v
    ev.run()
    ev.switch_page("views/evidence.py").run()
    assert not ev.exception and not ev.error
    ss = ev.session_state
    assert (ss["subject"], ss["relation"], ss["time"], ss["answer"]) == (
        params["subject"], HEAD, params["time"], params["answer"])
    paths = ev.dataframe[-1].value if "temporal path" in ev.dataframe[-1].value else ev.dataframe[1].value
    assert "Threaten⁻¹" in paths.iloc[0]["temporal path"]  # the rule's path is the answer's first path
    ask = [link for link in re.findall(r"\[Open in Ask\]\(([^)]+)\)", markdown(at))]
    assert ask and ask[0].startswith("./ask?") and "importance" not in ask[0]


def test_names_from_the_data_are_escaped(workspace, sample_kg):
    hostile = "<b>x</b>[click](https://example.com)"
    tag = "<img src=x onerror=alert(1)>"
    scale = GapScale.of(sample_kg.time_axis)
    example = RuleExample(tag, HEAD, "2025-12-20", 353, "object", "interpolation", "**bold**", True, "**bold**", 0.5,
                          f"{tag} —[{hostile} @ 2025-12-19 (-1 d)]→ **bold**")
    rule = DistilledRule(HEAD, False, 1, [BodyAtom(hostile, True, 1)], 9, 8, 0.5, 0.4, 10, [example])
    rules = RuleSet([rule], [HeadSummary(HEAD, False, 10, 0.8, 3)], scale, {"questions": 10, "setting": tag})
    path = cache_path(workspace / "rules", SAMPLE_CHECKPOINT, sample_kg, RuleConfig())
    path.parent.mkdir(parents=True)
    path.write_text(rules.to_json(), encoding="utf-8")
    at = rules_page()
    assert not at.exception and not at.error
    raw = markdown(at) + "\n".join(c.value for c in at.caption)
    assert hostile not in raw and tag not in raw and "**bold**" not in raw
    assert r"\<b\>x\<\/b\>\[click\]\(https\:" + "\u2060" + r"\/\/" in raw
    assert r"\<img src\=x" in raw and r"\*\*bold\*\*" in raw
    chart = at.get("plotly_chart")[0].proto.spec  # plotly reads a few tags: brackets escaped
    labels = json.loads(chart)["data"][0]["customdata"]
    assert labels[0].startswith("(Y, &lt;b&gt;x&lt;/b&gt;[click]") and "<b>x" not in chart
    bars = json.loads(chart)["data"][0]["y"]
    assert bars[0].startswith("1. &lt;b&gt;x&lt;/b&gt;[cli") and bars[0].endswith("…")  # cut, brackets escaped


def test_the_sample_worlds_rules_ship_under_the_key_the_page_looks_for(sample_kg):
    """The Learned rules page opens at once on the sample world: its rules are distilled once and shipped in
    checkpoints/rules/ under the content key of the shipped checkpoint, data and default configuration (a new
    checkpoint or data set changes the key, and the page then distils again instead of showing stale rules)."""
    from helpers import ROOT, SAMPLE_CHECKPOINT
    from tpar.reasoning.distilled_rules import RuleConfig, RuleSet, cache_path

    shipped = cache_path(ROOT / "checkpoints" / "rules", SAMPLE_CHECKPOINT, sample_kg, RuleConfig())
    assert shipped.is_file(), "regenerate: python benchmarks/distilled_rules.py ship"
    rules = RuleSet.read(shipped)
    assert rules.head_names and "Mobilize against" in rules.head_names


def test_the_page_opens_on_a_relation_a_planted_rule_concludes(sample_kg):
    """On the sample world, with no relation asked, the page opens on a head a planted rule makes (walk-through: it
    opened on Accuse, which none does, so the ★ of a planted rule never showed to a class)."""
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.session_state["relation"] = "no such relation"  # as a first visit straight to /rules: no question's relation
    at.switch_page("views/rules.py").run()
    assert not at.exception and not at.error
    head = at.selectbox(key="rules_head").value
    from tpar.reasoning.rules import PlantedRules, parse_atom
    from helpers import SAMPLE_WORLD

    planted = {parse_atom(p["head"])[1] for p in PlantedRules.find(SAMPLE_WORLD).rules.values()}
    assert head in planted and head != "Accuse"
    assert "★ planted rule" in plain(markdown(at))


def _rule(head: str, rank: int, correct: int, score: float):
    from tpar.reasoning.distilled_rules import BodyAtom, DistilledRule

    return DistilledRule(head, False, rank, [BodyAtom("Supply", False, 3)], 2, correct, 0.1, score, 10)


def test_a_head_whose_rules_never_end_at_a_true_answer_is_not_read_as_a_learned_rule(monkeypatch):
    """Walk-through 38 #3: the page opened on a relation whose only rule had confidence 0% and read it out as
    "Rule 1 reads: if ..."; it now opens on a relation with a working rule, and says the 0% patterns are no rule."""
    monkeypatch.syspath_prepend(str(Path(APP).parent))
    from views.rules import working_heads
    from tpar.reasoning.distilled_rules import GapScale, RuleSet

    rules = RuleSet([_rule("Hire staff from", 1, 0, 0.0), _rule("Supply", 1, 2, 0.4), _rule("Meet with", 1, 1, 0.6)],
                    [], GapScale("d", 1.0, True), {})
    assert working_heads(rules) == ["Meet with", "Supply"]
    # a head whose working rules are all of subject questions is no head to open object questions on (review 38)
    subject_only = _rule("Accuse", 1, 5, 0.9)
    subject_only.head_inverse = True
    both = RuleSet(rules.rules + [subject_only, _rule("Accuse", 2, 0, 0.0)], [], GapScale("d", 1.0, True), {})
    assert working_heads(both) == ["Meet with", "Supply"] and working_heads(both, inverse=True) == ["Accuse"]

    def page(rule_args):
        import sys

        sys.path.insert(0, rule_args[0])
        from views.rules import reading_ui
        from tpar.reasoning.distilled_rules import BodyAtom, DistilledRule, GapScale, RuleSet

        first = DistilledRule("Hire staff from", False, 1, [BodyAtom("Supply", False, 3)], 2, rule_args[1], 0.1,
                              0.0, 10)
        reading_ui(first, RuleSet([first], [], GapScale("d", 1.0, True), {}))

    for correct, reads in ((0, False), (1, True)):
        at = AppTest.from_function(page, args=([str(Path(APP).parent), correct],), default_timeout=60).run()
        assert not at.exception
        text = plain(" ".join(m.value for m in at.markdown) + " ".join(w.value for w in at.warning))
        assert ("Rule 1 reads: if X Supply Y" in text) is reads, text
        assert ("not a rule it has learned that works" in text) is not reads
        assert ("no working rule for these object questions" in text) is not reads
