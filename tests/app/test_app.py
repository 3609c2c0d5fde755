"""The Streamlit explorer driven headless with AppTest: it opens on the sample world with its
checkpoint; pick -> answers -> evidence; the question round-trips through the URL; bad input
shows messages, never a traceback."""

from __future__ import annotations

import json

import datetime as dt
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402
from helpers import ROOT

APP = str(ROOT / "app" / "streamlit_app.py")
QUESTION = {"subject": "Orora Front", "relation": "Mobilize against", "time": "2025-12-20",
            "setting": "extrapolation"}


def app(params: dict | None = None, monkeypatch=None, data_dir=None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    return at


def plain(elements) -> str:
    """Messages as rendered (the app backslash-escapes names in markdown)."""
    return re.sub(r"\\(.)", r"\1", " ".join(e.value for e in elements)).replace("\u2060", "").replace("\u2011", "-")


def texts(at) -> str:
    """Markdown and captions as rendered (the app backslash-escapes names)."""
    raw = "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])
    return re.sub(r"\\(.)", r"\1", raw).replace("\u2060", "").replace("\u2011", "-")


@pytest.fixture(autouse=True)
def no_benchmarks(monkeypatch, tmp_path):
    monkeypatch.setenv("TPAR_DATA_DIR", str(tmp_path / "no-benchmarks-here"))
    monkeypatch.syspath_prepend(str(Path(APP).parent))
    import explorer  # the module the app's pages import: forget data sets and models listed by an earlier test

    explorer.datasets.clear()
    explorer.checkpoints.clear()


def test_opens_on_the_sample_world_with_its_checkpoint():
    at = app().run()
    assert not at.exception and not at.error
    assert at.session_state["data"] == "sample: world/chronological"
    assert at.session_state["model"] == "sample-world-unified"
    answers = at.dataframe[0].value
    assert len(answers) == 10 and list(answers["rank_shown"]) == [str(i) for i in range(1, 11)]
    assert answers["p_text"].str.endswith("%").all()
    assert at.query_params["data"] == "sample: world/chronological"


@pytest.mark.slow
def test_pick_answer_explain():
    at = app().run()
    at.selectbox(key="w_subject").select("Orora Front").run()
    at.selectbox(key="w_relation").select("Mobilize against").run()
    at.date_input(key="w_time").set_value(dt.date(2025, 12, 20)).run()
    at.selectbox(key="w_setting").select("extrapolation").run()
    assert not at.exception and not at.error
    assert "(Orora Front, Mobilize against, ?, 2025-12-20)" in texts(at)
    # the heading's date keeps its hyphens together (U+2011): it wrapped as "2025-12-" / "20)" at 820 px
    assert any(m.value.endswith(", 2025\u201112\u201120\\)") for m in at.markdown)
    answers = at.dataframe[0].value
    # escalation: Hugo of Zanistan threatened Orora Front on 2025-12-19
    assert answers.iloc[0]["entity"] == "Hugo of Zanistan" and answers.iloc[0]["known"] == "yes"
    assert at.query_params["subject"] == "Orora Front" and at.query_params["time"] == "2025-12-20"

    at.switch_page("views/evidence.py").run()
    assert not at.exception and not at.error
    assert at.session_state["answer"] == "Hugo of Zanistan"
    facts, paths = at.dataframe[0].value, at.dataframe[1].value
    assert "Threaten⁻¹ @ 2025-12-19 (-1 d)" in paths.iloc[0]["temporal path"]
    # the facts by share: the planted rule's body first, its removal measured and large
    top = facts.iloc[0]
    assert (top["subject"], top["relation"], top["object"], top["time"]) == (
        "Hugo of Zanistan", "Threaten", "Orora Front", "2025-12-19")
    assert float(top["removal"]) > 1.0 and top["share"] > 0
    assert "not measured" in set(facts["removal"]) or len(facts) <= 5  # never the word None (walk-through 36 F6)
    assert "Hugo of Zanistan: Threaten → Orora Front, 1 day before the question (walked back from Orora Front)" in texts(at)
    # the page opens in plain words, the strongest path first; the derivation waits in an expander (walk-through:
    # an 8-line caption of integrated gradients came before the path in words)
    first = plain([m for m in at.markdown if m.value.startswith("Why ")])
    assert re.match(r"Why Hugo of Zanistan\? Rank 1 of 280 in the extrapolation setting, probability [\d.]+% \(next: "
                    r"[^,]+, [\d.]+%\)\.", first), first  # how sure, as Ask says it (walk-through 36 F6)
    assert "the strongest: Hugo of Zanistan: Threaten → Orora Front, 1 day before the question" in first
    assert "∂" not in first and "gradient" not in first
    how = next(x for x in at.expander if x.label == "How the paths and their shares are computed")
    assert "integrated gradients" in plain(how.markdown)
    frame = at.get("iframe")[0].proto.srcdoc
    assert "vis.Network" in frame and "-1 d" in frame
    assert 'src="http' not in frame and 'href="http' not in frame  # offline
    # another answer, fewer paths
    at.selectbox(key="w_answer").select_index(1).run()
    at.slider(key="w_paths").set_value(2).run()
    assert not at.exception and len(at.dataframe[0].value) <= 2

    at.switch_page("views/timeline.py").run()
    assert not at.exception and not at.error
    assert at.get("plotly_chart")
    assert "query time 2025-12-20" in texts(at)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    traces = {t.get("name"): t["marker"] for t in spec["data"]}
    subj, obj = traces["as subject"], traces["as object"]  # told apart by colour and by shape, at a readable size
    assert subj["color"] != obj["color"] and subj["symbol"] != obj["symbol"] and min(subj["size"], obj["size"]) >= 10
    if "xaxis2" in spec["layout"]:  # a tall chart: the same dates above it as below
        top, bottom = spec["layout"]["xaxis2"], spec["layout"]["xaxis"]
        assert top["side"] == "top" and top["tickvals"] == bottom["tickvals"] and top["ticktext"] == bottom["ticktext"]


@pytest.mark.parametrize("lo, hi, want", [
    ("2025-01-03", "2025-12-20", ["Feb 2025", "Apr 2025", "Jun 2025", "Aug 2025", "Oct 2025", "Dec 2025"]),
    ("2025-01-01", "2025-01-05", ["2025-01-01", "2025-01-02", "2025-01-03", "2025-01-04", "2025-01-05"]),
    ("1990-05-01", "2024-02-01", ["1995", "2000", "2005", "2010", "2015", "2020"]),
    ("1995-03-01", "2003-02-01", ["1996", "1998", "2000", "2002"]),
    ("1700-01-01", "2020-01-01", ["1700", "1750", "1800", "1850", "1900", "1950", "2000"]),
    ("0100-01-01", "2100-01-01", ["500", "1000", "1500", "2000"]),  # at once: no range of 730,000 days is built
    ("2025-01-01", "2025-01-12", ["2025-01-01", "2025-01-03", "2025-01-05", "2025-01-07", "2025-01-09",
                                  "2025-01-11"])])
def test_a_tall_timelines_dates_are_round_and_few(monkeypatch, lo, hi, want):
    import pandas as pd

    monkeypatch.syspath_prepend(str(Path(APP).parent))
    from views.timeline import date_ticks, tick_label

    ticks = date_ticks(pd.Timestamp(lo), pd.Timestamp(hi))
    assert [tick_label(t, ticks) for t in ticks] == want
    assert pd.Timestamp(lo) <= ticks[0] and ticks[-1] <= pd.Timestamp(hi)


def test_question_from_the_url():
    at = app({**QUESTION, "answer": "Hugo of Zanistan", "paths": "3"}).run()
    assert not at.exception
    assert at.session_state["subject"] == "Orora Front" and at.session_state["setting"] == "extrapolation"
    assert at.dataframe[0].value.iloc[0]["entity"] == "Hugo of Zanistan"
    at.switch_page("views/evidence.py").run()
    assert len(at.dataframe[0].value) <= 3 and not at.error


def test_interpolation_inside_the_range_and_forecast_after_it():
    at = app({"subject": "Keleth", "relation": "Meet", "time": "2025-12-20"}).run()
    assert "Setting: **interpolation**" in texts(at)
    at = app({"subject": "Keleth", "relation": "Meet", "time": "2026-01-02"}).run()
    assert "Setting: **extrapolation**" in texts(at)


def test_bad_url_values_are_messages_not_tracebacks():
    at = app({"subject": "Nobody", "relation": "Dance with", "time": "not a date", "k": "many",
              "data": "benchmark: nowhere/none"}).run()
    assert not at.exception
    warnings = plain(at.warning)
    assert "Unknown entity 'Nobody'" in warnings and "Unknown relation 'Dance with'" in warnings
    # each says what the page shows instead, which is what it asks
    used = re.search(r"uses '([^']+)' instead", warnings.split("Unknown relation")[1])
    assert used and at.session_state["relation"] == used.group(1)
    assert "does not fit this data set" in warnings
    assert at.dataframe  # it still answers a default question
    at = app({**QUESTION, "answer": "<script>alert(1)</script>"}).run()
    assert not at.exception
    assert "Unknown answer '<script>alert(1)</script>'" in plain(at.warning)
    at.switch_page("views/evidence.py").run()
    assert not at.exception and at.session_state["answer"] == "Hugo of Zanistan"


@pytest.mark.parametrize("page", ["views/evidence.py", "views/teach.py"])
def test_evidence_and_reasoning_mend_a_shared_link_as_ask_does(page):
    """A link straight to Evidence or How TPAR reasons with an unknown entity, a misspelt relation or a time the data
    cannot ask is mended with a warning and the page goes on (it stopped at a bare error; walk-through). AppTest
    opens Ask first, which mends the URL itself, so the bad parts are put into the session as such a link would."""
    at = app(QUESTION).run()
    at.session_state["subject"], at.session_state["relation"], at.session_state["time"] = "Nobody", "Threatn", "2029-12-20"
    at.switch_page(page).run()
    assert not at.exception and not at.error, plain(at.error)
    warnings = plain(at.warning)
    assert "Unknown entity 'Nobody'" in warnings and "Threatn" in warnings and "does not fit this data set" in warnings
    assert at.session_state["subject"] != "Nobody" and at.session_state["relation"] != "Threatn"


def test_data_set_without_a_checkpoint(tmp_path, monkeypatch):
    d = tmp_path / "data" / "user" / "toy"
    d.mkdir(parents=True)
    (d / "train.csv").write_text("subject,relation,object,time\nAnn,meets,Bob,2024-01-01\nBob,calls,Cid,2024-01-02\n")
    (d / "test.csv").write_text("subject,relation,object,time\nAnn,meets,Cid,2024-01-03\n")
    monkeypatch.setenv("TPAR_DATA_DIR", str(tmp_path / "data"))
    at = app({"data": "benchmark: user/toy"}).run()
    assert not at.exception
    assert "No checkpoint here fits" in plain(at.error)
    at.switch_page("views/data_model.py").run()
    assert not at.exception
    assert "benchmark: user/toy" in at.selectbox(key="w_data").options
    assert [m.value for m in at.metric][:2] == ["3", "2"]
    assert "valid split is not available" in plain(at.warning)
    assert "No checkpoint fits" in plain(at.warning)
    at.selectbox(key="w_data").select("sample: world/chronological").run()
    assert not at.exception and at.session_state["model"] == "sample-world-unified"


def test_showcase_examples():
    at = app().run()
    # a fresh session opens on the first extrapolation example (escalation) with its answer on top
    assert at.session_state["subject"] == "Faro of Corbeleth" and at.session_state["setting"] == "extrapolation"
    assert at.dataframe[0].value.iloc[0]["entity"] == "Kelarara Council"
    pick = at.selectbox(key="example")
    assert pick.value.startswith("escalation:")  # the box names the question the page opened on
    reciprocity = next(o for o in pick.options if o.startswith("reciprocity:"))
    pick.select(reciprocity).run()
    assert not at.exception
    assert at.session_state["relation"] == "Host a visit" and at.session_state["setting"] == "interpolation"
    assert "Setting: **interpolation**" in texts(at)
    assert at.dataframe[0].value.iloc[0]["entity"] == at.session_state["answer"]  # same-day visit, recovered
    assert at.selectbox(key="example").value.startswith("reciprocity:")
    # named by what it shows (the box cut 'rule: question — description (asked as …)' at any width)
    assert at.selectbox(key="example").value == "reciprocity: a visit is hosted by the visited country on the same day"
    at.selectbox(key="w_relation").select("Threaten").run()  # the user's own question now: no example named
    assert not at.exception and at.selectbox(key="example").value is None


def test_url_values_outside_the_widgets_are_clamped_or_ignored():
    at = app({**QUESTION, "k": "100", "paths": "50", "direction": "sideways"}).run()
    assert not at.exception
    assert at.session_state["k"] == 50 and len(at.dataframe[0].value) == 50
    said = plain(at.warning)
    assert "Not taken from the URL as given" in said and "direction='sideways' (not one of object, subject" in said
    assert "k=100 (shown as 50: it goes from 1 to 50)" in said and "paths=50 (shown as 10" in said
    at.switch_page("views/evidence.py").run()
    assert not at.exception and at.session_state["paths"] == 10
    at = app({**QUESTION, "setting": "sometimes"}).run()
    assert not at.exception and at.session_state["setting"] == "auto"


def test_one_layer_model_and_markdown_in_names(tmp_path, monkeypatch):
    """A user's L=1 model on the teaching page; names are shown as text, never as links."""
    import explorer

    from tpar.model.config import ModelConfig, RunConfig, TrainConfig
    from tpar.data.loading import load_dataset
    from tpar.training.trainer import train

    kg = load_dataset(Path(APP).parent.parent / "sample_data" / "world" / "chronological")
    runs = tmp_path / "runs"
    run = RunConfig(ModelConfig(dim=8, attn_dim=3, num_layers=1, dropout=0.0, activation="tanh"),
                    TrainConfig(setting="unified", lr=5e-3, batch_size=8, micro_batch=8, epochs=1,
                                max_train_queries=40, max_valid_queries=20))
    train(kg, run, runs / "one-layer.tpar", progress=False)
    monkeypatch.setattr(explorer, "RUNS_DIR", runs)
    explorer.checkpoints.clear()
    at = app({**QUESTION, "model": "one-layer"}).run()
    assert not at.exception and at.session_state["model"] == "one-layer"
    at.switch_page("views/teach.py").run()
    assert not at.exception and not at.error
    assert list(at.dataframe[0].value["ℓ"]) == [1]
    explorer.checkpoints.clear()
    at = app({**QUESTION, "subject": "[click](https://example.com)"}).run()
    assert not at.exception
    # escaped, and the scheme broken by an invisible word joiner (no auto-link)
    assert r"\[click\]\(https\:" + "\u2060" + r"\/\/example\.com\)" in " ".join(w.value for w in at.warning)


def test_a_bug_in_a_page_is_a_short_message_naming_the_log(monkeypatch, tmp_path):
    """An unexpected exception shows one message with the log's place, not Streamlit's exception box."""
    import explorer
    from tpar.data.kg import TemporalKG

    def broken(self):
        raise RuntimeError("stats exploded")

    monkeypatch.setattr(explorer, "WORKSPACE", tmp_path / "ws")
    monkeypatch.setattr(TemporalKG, "stats", broken)
    at = app().run()
    at.switch_page("views/data_model.py").run()
    assert not at.exception
    message = plain(at.error)
    assert "internal error (RuntimeError: stats exploded)" in message and "errors.log" in message
    log = (tmp_path / "ws" / "logs" / "errors.log").read_text()
    assert "stats exploded" in log and "Traceback" in log


def test_url_names_in_another_case_are_taken_and_unknown_ones_get_suggestions():
    at = app({**QUESTION, "subject": "orora FRONT", "relation": "mobilize against"}).run()
    assert not at.exception and not at.warning
    assert (at.session_state["subject"], at.session_state["relation"]) == ("Orora Front", "Mobilize against")
    at = app({**QUESTION, "subject": "Orora Frnt"}).run()
    assert "Unknown entity 'Orora Frnt'; did you mean 'Orora Front'" in plain(at.warning)


def test_ask_shows_calibrated_probabilities_and_the_answer_set():
    at = app(QUESTION).run()
    assert not at.exception and not at.error
    assert any("Probabilities are calibrated" in c.value for c in at.caption)
    found = [i.value.replace("\\", "") for i in at.info if "answer set:" in i.value]
    assert found and "The 90% answer set: " in found[0] and "Hugo of Zanistan" in found[0]
    assert "on average over questions, not for each one" in found[0]
    share = re.search(r"the model puts ([\d.]+)% of its probability on the set", found[0])
    assert share and ("less than 90%: it is unsure here" in found[0]) == (float(share.group(1)) < 90)
    at.selectbox(key="w_coverage").select("off").run()
    assert not any("answer set:" in i.value for i in at.info)
    assert at.query_params["coverage"] == "off"


def test_evidence_what_if_and_counterfactual():
    at = app({**QUESTION, "answer": "Hugo of Zanistan"}).run()
    at.switch_page("views/evidence.py").run()
    assert not at.exception and not at.error
    threat = ("Hugo of Zanistan", "Threaten", "Orora Front", "2025-12-19")
    assert not at.multiselect(key="whatif_off").proto.select_all  # no "Select all" entry to click first by mistake
    at.multiselect(key="whatif_off").select(threat).run()
    assert not at.exception and not at.error
    assert any("Hypothetical" in w.value for w in at.warning)
    said = " ".join(m.value for m in at.markdown).replace("\\", "")
    # without the threat the planted answer leaves rank 1 (the rank itself depends on the shipped model)
    moved = re.search(r"\*\*Hugo of Zanistan\*\* \(rank 1 on the real data\) would be at rank ([\d–]+)", said)
    assert moved and int(moved.group(1).split("–")[0]) > 1, said  # a range where it ties
    assert any("Probabilities as on the Ask page" in c.value for c in at.caption)  # what the figures are
    # the same hypothetical fact typed twice: said, not silently nothing (walk-through 38)
    for when in ("2025-12-17", " 2025-12-17 "):
        at.text_input(key="whatif_t").set_value(when)
        at.button(key="whatif_add").click().run()
    assert not at.exception and sum(m.value.startswith("Added:") for m in at.markdown) == 1
    assert any("Already added" in i.value for i in at.info), [e.value for e in at.error]
    at.button(key="whatif_rm_0").click().run()
    at.button(key="whatif_cf").click().run()
    cf = next(i.value.replace("\\", "") for i in at.info if "Counterfactual" in i.value)
    assert "Counterfactual: without 1 fact —" in cf
    if "(Hugo of Zanistan, Threaten, Orora Front, 2025-12-19)" in cf:  # the same fact off: the same rank, twice
        assert f"drops to rank {moved.group(1)} " in cf, (cf, moved.group(0))
    at.button(key="whatif_reset").click().run()
    assert not any("Hypothetical" in w.value for w in at.warning)
    # the widget value is reset too (the browser test checks that the chip is gone and stays gone)
    assert at.multiselect(key="whatif_off").value == []
    at.slider(key="w_paths").set_value(4).run()
    assert not at.exception and not any("Hypothetical" in w.value for w in at.warning)


# ---------------------------------------------------------------- one URL policy on every page (issue #32)
def test_every_url_value_not_taken_is_named_on_the_ask_page():
    at = app({**QUESTION, "k": "-1", "paths": "10^23", "subjct": "Keleth"}).run()
    assert not at.exception
    said = plain(at.warning)
    assert "k=-1 (shown as 1: it goes from 1 to 50)" in said and "paths='10^23' (not a whole number; ignored)" in said
    assert "subjct='Keleth' (not a parameter of this app; ignored)" in said
    assert at.session_state["k"] == 1 and at.session_state["paths"] == 5 and at.session_state["subject"] == "Orora Front"
    at = app({**QUESTION, "paths": "1" + "0" * 23}).run()
    assert "paths=100000000000000000000000 (shown as 10: it goes from 1 to 10)" in plain(at.warning)
    # a parameter given twice is said with the one used; digits of other scripts are no number here (audit 38 #7)
    at = app({**QUESTION, "k": ["5", "50"], "paths": "٣"}).run()
    said = plain(at.warning)
    assert "k given 2 times ('5', '50'; the last counts)" in said and at.session_state["k"] == 50, said
    assert "paths='٣' (not a whole number; ignored)" in said and at.session_state["paths"] == 5


def test_the_url_warning_outlives_a_page_that_reruns_on_its_first_run(monkeypatch):
    """A page that reruns or switches before it is drawn (the /ask path switches to /) must not swallow
    the list of URL values not taken: it stays until a page has run to its end, then is said once."""
    import streamlit as st

    import explorer

    real, calls = explorer.require_model, []

    def rerun_first(sel):
        if not calls:
            calls.append(1)
            st.rerun()
        return real(sel)

    monkeypatch.setattr(explorer, "require_model", rerun_first)
    at = app({**QUESTION, "k": "-1"}).run()
    assert calls and not at.exception
    assert "k=-1 (shown as 1" in plain(at.warning)
    at.run()
    assert "k=-1" not in plain(at.warning)


@pytest.mark.parametrize("name", ["Orora Frnt", "Orora\u200bFront", "Оrora Front"])  # typo, zero-width, Cyrillic О
def test_the_timeline_names_an_unknown_or_look_alike_entity_instead_of_silently_showing_another(name):
    at = app({"subject": name, "relation": "Threaten", "time": "2025-12-20"})
    at.switch_page("views/timeline.py").run()
    assert not at.exception
    said = plain(at.warning)
    shown = at.session_state["subject"]
    assert f"Unknown entity {name!r}" in said and f"this page shows {shown!r} instead" in said
    assert "did you mean 'Orora Front'" in said


def test_the_timeline_takes_another_spelling_and_names_an_impossible_time():
    at = app({"subject": "orora front", "time": "2025-02-30"})
    at.switch_page("views/timeline.py").run()
    assert not at.exception and at.session_state["subject"] == "Orora Front"
    said = plain(at.warning)
    assert "Time '2025-02-30' does not fit this data set" in said and "no query time is marked" in said
    assert "query time" not in " ".join(c.value for c in at.caption)
    at = app({"subject": "Orora Front", "time": "2025-12-20"})
    at.switch_page("views/timeline.py").run()
    assert not at.warning and "query time 2025-12-20" in texts(at)


def test_a_model_retrained_under_the_same_name_never_shows_the_old_card(tmp_path, monkeypatch):
    import shutil

    import explorer

    from tpar.model.card import write_card
    from tpar.model.checkpoint import Checkpoint

    runs = tmp_path / "runs"
    runs.mkdir()
    ckpt = runs / "mine.tpar"
    shutil.copy(Path(APP).parent.parent / "checkpoints" / "sample-world-unified.tpar", ckpt)
    write_card(ckpt)
    retrained = Checkpoint.load(ckpt)  # the same name, other weights and history
    retrained.history = [{**h, "valid_mrr": 0.1234} for h in retrained.history]
    retrained.weights = {k: v * 1.01 if v.is_floating_point() else v for k, v in retrained.weights.items()}
    retrained.save(ckpt)
    monkeypatch.setattr(explorer, "RUNS_DIR", runs)
    explorer.checkpoints.clear()
    at = app({**QUESTION, "model": "mine"}).run()
    at.switch_page("views/data_model.py").run()
    assert not at.exception and at.session_state["model"] == "mine"
    shown = texts(at)
    assert "mine.md was written for another model saved as mine.tpar" in shown
    assert "1: 12.34" in shown and "sha256" not in shown  # the new model's own history, no mark line


#: what acts in Streamlit's Markdown when it is not escaped (checked in chromium): LaTeX, strike, :colour[...] and
#: :emoji:, links and images, HTML; and the bare URL and e-mail markers GFM links even when escaped
_ACTS = re.compile(r"(?<!\\)[$~:\[<!]|www(?!\u2060)\\?\.|:(?!\u2060)\\?/\\?/|(?<=\S)@(?!\u2060)|(?<!\\)`")


def test_a_forged_card_and_a_checkpoints_strings_never_act_on_the_page(tmp_path, monkeypatch):
    """A checkpoint's strings are its writer's to choose, and a card file's sha256 mark is forgeable: on Data and
    model's card, nothing from either becomes a link, LaTeX, a colour, an emoji or HTML (outside code spans, where
    Markdown is text). Both the card written from the checkpoint and a forged card file are checked."""
    import shutil

    import explorer

    from tpar.model.card import CARD_MARK
    from tpar.model.checkpoint import Checkpoint

    hostile = ("Linux http://evil.example/login www.evil.example mail@evil.example $x^2+\\sqrt{y}$ :red[RED] :skull: "
               "~~strike~~ _it_ <b>bold</b> [a](http://evil.example) ![i](http://evil.example/i.png)")
    runs = tmp_path / "runs"
    runs.mkdir()
    ckpt = runs / "forged.tpar"
    ck = Checkpoint.load(Path(APP).parent.parent / "checkpoints" / "sample-world-unified.tpar")
    ck.extra = {**ck.extra, "hardware": {"platform": hostile, "torch": "$E=mc^2$", "gpu": hostile},
                "seed": "[s](http://evil.example/seed)"}  # a figure the card formats as a number is refused at load
    ck.save(ckpt)
    monkeypatch.setattr(explorer, "RUNS_DIR", runs)
    explorer.checkpoints.clear()

    def card_markdown() -> str:
        at = app({**QUESTION, "model": "forged"}).run()
        at.switch_page("views/data_model.py").run()
        assert not at.exception and at.session_state["model"] == "forged"
        found = [m.value for m in at.markdown if "Model card" in m.value]
        assert len(found) == 1, [m.value[:200] for m in at.markdown]
        (card,) = found
        return card

    written = card_markdown()
    assert "evil" in written and "$E=mc^2$" not in written
    (runs / "forged.md").write_text("# Model card\n\n" + hostile + "\n\n- `code $kept$`\n\n"
                                     + "- \\`[esc](http://evil.example/esc)\\` ``a`[b](http://e.x)`` ` _www.evil.example\n\n"
                                     + CARD_MARK.format(Checkpoint.load(ckpt).digest) + "\n")
    shutil.copy(runs / "forged.md", tmp_path / "kept.md")
    forged = card_markdown()
    assert "code $kept$" in forged and "evil" in forged  # the file was used (its mark names these weights)
    assert "\\`\\[esc\\]" in forged and "``a`[b](http://e.x)``" in forged  # an escaped backtick opens no span
    assert "\\` \\_www" in forged or "\\` _www\u2060" in forged  # a lone backtick is text; _www breaks no link
    for text in (written, forged):
        outside = re.sub(r"(?<!\\)(`+)(?!`).*?(?<!`)\1(?!`)", "", text)  # in a code span Markdown is text
        assert not _ACTS.findall(outside), _ACTS.findall(outside)
    assert (runs / "forged.md").read_text() == (tmp_path / "kept.md").read_text()


@pytest.mark.parametrize("forged", [
    "See `the docs\n- [re-login](https://phish.example) ![](https://tracker.example/p.png) `",  # a list item
    "`a\n# h [x](http://e.com) `", "`a\n> [x](http://e.com) `", "`a\n---\n[x](http://e.com) `",  # heading, quote
    "`a\n \n[x](http://e.com) `", "`a\n\t\n$E=mc^2$ `",  # a blank line of a space or a tab
    "| a | b |\n|---|---|\n| `x | ![t](https://tracker.example/p.png) ` |",  # a table cuts cells at |
    "See `the docs\r- [re-login](https://phish.example) ![](https://tracker.example/p.png) `",  # a lone CR ends a line
    "`a\r\r$E=mc^2$ `", "`a\r\n# h [x](http://e.com) `",
])
def test_a_code_span_never_spans_what_commonmark_would_cut(forged):
    """A code span is kept (its inside unescaped) only where CommonMark reads one whatever surrounds it: opener and
    closer on one line, no | between (hostile audit: a list item, heading, quote, blank-looking line or table cell
    between two backticks left a link, an image or LaTeX live on Data and model)."""
    from tpar.errors import defuse_markdown

    out = defuse_markdown(forged)
    assert not _ACTS.findall(out.replace("\\`", "")), out  # every backtick escaped: nothing is a span
    assert defuse_markdown("run `tpar train --data x.csv` then `a $b$` ``c`d``") == \
        "run `tpar train --data x.csv` then `a $b$` ``c`d``"  # spans on one line stay as written


def test_a_cards_fenced_code_block_is_kept_as_written_and_only_a_fence_every_renderer_reads():
    """A hand-written card's fenced block (after a blank line, at the start of its line) keeps its blank lines,
    brackets and dollars as written (hostile audit 35: they showed backslashes and the fence broke at a blank line);
    a fence a renderer could read otherwise -- indented into a list item, right under a paragraph or a table row,
    with a | after it -- stays text, defused."""
    from tpar.errors import defuse_markdown

    block = "```python\nrank = scores[answer]  # $x$ <b>\n\nprint(rank)\n```\n"
    tilde = "~~~\n[t](u) :smile:\n~~~~\n"
    card = f"# Card [x](y)\n\n{block}\n{tilde}\nafter [l](m)\n"
    assert defuse_markdown(card) == f"# Card \\[x\\](y)\n\n{block}\n{tilde}\nafter \\[l\\](m)\n"
    assert defuse_markdown("```\nunclosed [l](m)") == "```\nunclosed [l](m)"  # a fence ends with the text
    for forged in ("- item\n\n  ```\n[link](http://e.x)\n", "text\n```\n[link](http://e.x)\n```\n",
                   "| a | b |\n|---|---|\n\n``` | c\n[link](http://e.x)\n", "x\n\n```a`b\n[link](http://e.x)\n"):
        out = defuse_markdown(forged)
        assert "\\[link\\]" in out, out


def test_defusing_is_linear_in_the_card_and_emoji_names_stay_text():
    """Unmatched backtick runs of many lengths (hostile audit: 1.3M characters took 6.6 s, 10.5 MB 41 s, each run
    searching to its paragraph's end) are each looked up once; and ':smile:' gets a word joiner after its colon, so
    Streamlit's emoji plugin, loaded by anything else on the page, leaves it text."""
    from tpar.errors import WORD_JOINER, defuse_markdown, markdown_text

    text = " ".join("`" * n for n in range(600, 0, -1))
    assert defuse_markdown(text) == " ".join("\\`" * n for n in range(600, 0, -1))
    assert defuse_markdown("Model :smile: card, `--flag :x:`") == f"Model \\:{WORD_JOINER}smile\\: card, `--flag :x:`"
    assert markdown_text(":+1: at 12:30") == f"\\:{WORD_JOINER}\\+1\\: at 12\\:{WORD_JOINER}30"


def test_the_reasoning_page_names_an_unknown_answer_instead_of_silently_tracing_another():
    """A link to /reasoning opens that page first (AppTest opens Ask first, which mends the answer
    itself; so the answer is put into the session as the URL would put it)."""
    for given, said_here in (("Hugo of Zanistn", True), ("hugo of zanistan", False)):
        at = app(QUESTION).run()
        at.session_state["answer"], at.session_state["answer_question"] = given, "from the URL"
        at.switch_page("views/teach.py").run()
        assert not at.exception
        said = plain(at.warning)
        assert ("Unknown answer 'Hugo of Zanistn'; did you mean 'Hugo of Zanistan'" in said) == said_here, said
        assert ("this page traces" in said) == said_here
        assert at.session_state["answer"] != given or not said_here
        if not said_here:
            assert at.session_state["answer"] == "Hugo of Zanistan"


def test_a_question_without_evidence_is_said_so_once_on_evidence_and_the_reasoning_names_no_answer():
    """(Torora, Meet, ?, 2025-01-05): nothing before the sample world's first days to reason from. Evidence states the
    tie of all entities as a range and says once why the answer (the question's own entity) has no path; How TPAR
    reasons ends without naming an answer."""
    at = app({"subject": "Torora", "relation": "Meet", "time": "2025-01-05", "setting": "extrapolation"}).run()
    assert not at.exception and "No evidence for this question" in plain(at.info)
    at.switch_page("views/evidence.py").run()
    assert not at.exception and not at.error
    assert "rank 1–280" in texts(at)
    said = plain(at.warning) + plain(at.info)
    assert said.count("own subject") + said.count("own entity") == 1, said
    at.switch_page("views/teach.py").run()
    assert not at.exception and not at.error
    while not at.button(key="teach_next").disabled:  # to the last step
        at.button(key="teach_next").click().run()
    assert "No answer: there is no evidence for this question" in plain(at.success)
    assert "The model's answer" not in plain(at.success)


def test_a_step_whose_links_get_no_noticeable_attention_promises_no_list_of_them():
    """Step 3 of (Jonas of Jororistan, Consult, ?, 2025-12-18) towards Mara of Yarzanora: links lie on walks to the
    answer but none gets α above the floor; the caption must not announce a list "below" that the page then says
    does not exist (walk-through, session 32)."""
    at = app({"subject": "Jonas of Jororistan", "relation": "Consult", "time": "2025-12-18",
              "setting": "extrapolation", "answer": "Mara of Yarzanora"}).run()
    at.switch_page("views/teach.py").run()
    while not at.button(key="teach_next").disabled:  # to the last step (3)
        at.button(key="teach_next").click().run()
    assert not at.exception
    assert "gets noticeable attention in step 3" in plain(at.info)
    captions = plain(at.caption)
    assert "lie on a walk to Mara of Yarzanora" in captions and "below" not in captions, captions


def test_the_attention_table_wraps_to_fit_and_its_markdown_cells_are_escaped():
    """Step 1's links with the most attention: a static table (it wraps, so all five columns fit 820 px, where a data
    grid cut off the time), whose cells are Markdown, so each is written through ``ex.md``; a date's hyphens do not break."""
    at = app(QUESTION).run()
    at.switch_page("views/teach.py").run()
    at.button(key="teach_next").click().run()
    assert not at.exception and len(at.table) == 1
    table = at.table[0].value
    assert list(table.columns) == ["α", "from", "relation", "to", "when"] and len(table) >= 1
    assert all(re.fullmatch(r"\d\.\d{3}", a) for a in table["α"])
    # the date's hyphens non-breaking (U+2011): the narrow column broke '2025-' from '12-06' at 820 px
    assert all(re.search(r"\\\(\d{4}\u2011\d\d\u2011\d\d\\\)$", w) for w in table["when"]), list(table["when"])


def test_evidence_says_when_most_of_the_score_is_credited_to_staying_put(sample_checkpoint, sample_kg):
    """The reciprocity showcase: most of f − f₀ goes to self-loops (a short path reaches the answer early); the page
    says so with the decomposition's own figures -- and says nothing of the kind where the links carry the score."""
    from tpar.reasoning.explanation import Explainer
    from tpar.reasoning.prediction import Predictor

    q = {"subject": "Belareth Front", "relation": "Host a visit", "time": "2025-12-18", "setting": "interpolation",
         "answer": "Sami of Lumzanenn"}
    e = Explainer(Predictor(sample_checkpoint, sample_kg, "cpu")).explain(
        q["subject"], q["relation"], q["time"], q["answer"], setting=q["setting"], num_paths=5, importance="integrated")
    d = e.decomposition
    assert d.stays > (d.score - d.no_evidence_score) / 2  # the case the caption is for
    at = app(q).run()
    at.switch_page("views/evidence.py").run()
    assert not at.exception
    said = [c.value.replace("\\", "") for c in at.caption if "credited to staying put" in c.value]
    assert len(said) == 1 and f"+{d.stays:.4f} of +{d.target:.4f}" in said[0]
    shortest = min(p.length for p in e.paths)
    assert (f"The shortest path listed has {shortest} link" in said[0]) == (shortest < e.num_layers)
    at = app({"subject": "Jonas of Jororistan", "relation": "Consult", "time": "2025-12-18",  # stays: 1.6 of 10.5
              "setting": "extrapolation", "answer": "Mara of Yarzanora"}).run()
    at.switch_page("views/evidence.py").run()
    assert not at.exception and at.caption
    assert not any("credited to staying put" in c.value for c in at.caption)


def test_the_answer_table_shows_enough_decimals_to_tell_answers_of_different_rank_apart(monkeypatch):
    """Rows that look the same but rank apart read as an unexplained tie: the score column gets the decimals that
    separate every two neighbouring answers of different rank (tied ranks may look the same)."""
    import pandas as pd

    monkeypatch.syspath_prepend(str(ROOT / "app" / "views"))
    from ask import score_digits

    table = pd.DataFrame({"score": [1.48723, 0.13064, 0.13063, 0.12924], "rank_text": ["1", "2", "3", "4"]})
    assert score_digits(table) == 5
    table = pd.DataFrame({"score": [1.487, 0.131, 0.129], "rank_text": ["1", "2", "3"]})
    assert score_digits(table) == 3
    tied = pd.DataFrame({"score": [0.5, 0.5000001, 0.2], "rank_text": ["1-2", "1-2", "3"]})
    assert score_digits(tied) == 3  # a tie shares its rank range: looking the same is right


def test_long_names_stay_distinct_on_a_chart(monkeypatch):
    """Chart labels are cut at 60 characters; two long names that begin alike stay two categories (bars, rows),
    and short names pass whole, escaped for plotly."""
    monkeypatch.syspath_prepend(str(Path(APP).parent))
    import explorer as ex

    a, b = ex.plot_text("A" * 80 + "1"), ex.plot_text("A" * 80 + "2")
    assert a != b and len(a) == len(b) == 60 and a.startswith("A" * 53 + "…#")
    assert ex.plot_text("Kelarara <b>Council</b>") == "Kelarara &lt;b&gt;Council&lt;/b&gt;"
    assert ex.short("W" * 100) == "W" * 59 + "…" and ex.short("Arovia") == "Arovia"
    assert ex.sentence("the data has grown (x): it answers") == ex.md("The data has grown (x): it answers.")


def test_ask_says_where_a_time_lies_and_says_no_evidence_once():
    """A forecast asked before the data is not called "inside the known time range", and its warning does not
    claim later facts can be used; a question with nothing reached says so once (the reason there is no evidence),
    and the count of reached entities reads right for one (walk-through)."""
    at = app({"subject": "Faro of Corbeleth", "relation": "Mobilize against", "time": "2024-03-31",
              "setting": "extrapolation"}).run()
    assert not at.exception
    said = texts(at) + plain(at.warning) + plain(at.info)
    assert "inside the known time range" not in said and "only later facts can be used" not in said
    assert "lies before the first known fact: a forecast uses only earlier facts, and there are none" in said
    at = app({"subject": "Faro of Corbeleth", "relation": "Mobilize against", "time": "2024-03-01",
              "setting": "auto"}).run()  # auto picks interpolation there: not "inside the known time range" either
    said = texts(at)
    assert not at.exception and "inside the known time range" not in said
    assert "Setting: **interpolation** (before the first known fact: only later facts can be used)" in said
    at = app({"subject": "Faro of Corbeleth", "relation": "Mobilize against", "time": "2025-01-01",
              "setting": "extrapolation"}).run()
    assert not at.exception
    assert "no temporal path leads" not in plain(at.warning).lower()
    assert "no temporal path leads" in plain(at.info).lower()
    assert "1 of 280 entities is reached" in texts(at) and "(the question's own entity only)" in texts(at)
    # the first day of the data: the advice is a later time or the other setting, not "closer to the known facts"
    assert "a forecast reads only facts before its time, so try a later time" in plain(at.info), plain(at.info)


def test_the_walk_through_names_no_answer_where_there_is_no_evidence():
    """Every entity reached but none told apart: the walk-through follows the top-scored entity as "not an
    answer", and section 3 sets no "fact" beside a planted rule (walk-through: it called the guess the fact)."""
    at = app({"subject": "Faro of Corbeleth", "relation": "Mobilize against", "time": "2026-02-20"}).run()
    at.switch_page("views/teach.py").run()
    assert not at.exception and not at.error
    assert "No evidence for this question" in plain(at.info)
    assert "(not an answer: there is no evidence)" in texts(at)
    assert "no answer to set beside a planted rule" in plain(at.info) and "was not produced by" not in plain(at.info)


def test_a_hypothetical_fact_with_a_bad_time_is_refused_when_added_and_each_added_fact_can_go():
    """Evidence, What if: a time that is no real date is refused at "Add" (it jammed every later fact before), a
    good fact starts from the question's own subject and the explained answer, and each added fact has its own
    Remove (walk-through)."""
    at = app({**QUESTION, "answer": "Hugo of Zanistan"}).run()
    at.switch_page("views/evidence.py").run()
    assert at.selectbox(key="whatif_s").value == "Orora Front" and at.selectbox(key="whatif_o").value == "Hugo of Zanistan"
    at.text_input(key="whatif_t").set_value("2025-02-30").run()
    at.button(key="whatif_add").click().run()
    assert not at.exception and "Not added: time '2025-02-30'" in plain(at.error)
    assert at.session_state["whatif_added"] == [] and not any("Hypothetical" in w.value for w in at.warning)
    at.text_input(key="whatif_t").set_value("2025-12-10").run()
    at.button(key="whatif_add").click().run()
    assert not at.exception and not at.error and any("Hypothetical" in w.value for w in at.warning)
    assert at.session_state["whatif_added"] == [("Orora Front", "Mobilize against", "Hugo of Zanistan", "2025-12-10")]
    at.button(key="whatif_rm_0").click().run()
    assert not at.exception and at.session_state["whatif_added"] == []
    assert not any("Hypothetical" in w.value for w in at.warning)


def test_the_answer_set_is_shown_beside_what_such_sets_usually_hold():
    """The shipped sample model stores its answer sets' sizes on valid: Ask says how large sets at the chosen level
    usually are, and that a set far smaller than usual carries its level on average only (walk-through: '1 of
    280 entities' with nothing saying such sets usually hold all 280)."""
    at = app().run()
    said = " ".join(c.value for c in at.caption)
    assert "90% sets held median" in said and "not stored" not in said
    assert "far smaller than most" in said  # the default question's set holds one entity


@pytest.mark.parametrize("page", ["views/rules.py", "views/evaluate.py"])
def test_the_rules_and_evaluate_pages_keep_the_data_set_and_model_in_the_url(page):
    """A reload or a shared link of Learned rules or Evaluate shows the same model (walk-through: the URL lost it)."""
    at = app().run()
    at.switch_page(page).run()
    assert not at.exception
    assert at.query_params["data"] == "sample: world/chronological" and at.query_params["model"] == "sample-world-unified"


def test_evidence_says_a_stay_every_path_shares_once():
    """The same self-loops on every shown path: their stay is said once, not on each path (walk-through: three
    paths each read 'stay +0.1587', the total, so adding them up counted it three times)."""
    at = app({"subject": "Jonas of Jororistan", "relation": "Consult", "time": "2025-12-18",
              "setting": "extrapolation", "answer": "Gita of Kelia"}).run()
    at.switch_page("views/evidence.py").run()
    assert not at.exception
    heads = [m.value for m in at.markdown if m.value.startswith("**Path ")]
    shared = [m.value for m in at.markdown if m.value.startswith("Staying put on these paths' walks (the self-loops every path")]
    assert len(heads) > 1 and (len(shared) == 1) == (not any("; stay" in h for h in heads))


def test_the_walk_through_draws_the_followed_answer_at_every_step_on_an_axis_that_fits():
    """Step 1 of the opening question: the answer followed (Kelarara Council) is far down and slightly negative; the
    chart draws it anyway, in orange with its rank, on an axis that holds it (walk-through: a fixed 0-1 axis hid
    the negative value and left the small bars empty)."""
    at = app().run()
    at.switch_page("views/teach.py").run()
    at.button(key="teach_next").click().run()
    assert not at.exception
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    bar = spec["data"][0]
    followed = [i for i, y in enumerate(bar["y"]) if y.startswith("Kelarara Council")]
    assert len(followed) == 1 and re.fullmatch(r"Kelarara Council \(rank \d+\)", bar["y"][followed[0]])
    value = bar["x"][followed[0]]
    lo, hi = spec["layout"]["xaxis"]["range"]
    assert lo <= min(0.0, value) and max(bar["x"]) <= hi < 0.5  # fits the values: no fixed 0-1 span
    assert bar["marker"]["color"][followed[0]] != bar["marker"]["color"][0]  # the answer's own colour


def test_the_timeline_shades_what_a_forecast_never_sees():
    """For an extrapolation question the facts at or after its time are shaded and said to be unseen (walk-through:
    they were drawn like the facts the forecast uses); an interpolation question, which sees both sides, has none."""
    at = app(QUESTION).run()
    at.switch_page("views/timeline.py").run()
    assert not at.exception and at.session_state["setting"] == "extrapolation"
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [sh["type"] for sh in spec["layout"]["shapes"]].count("rect") == 1
    assert "which a forecast (extrapolation) at that time never sees" in texts(at)
    at = app({**QUESTION, "setting": "interpolation"}).run()
    at.switch_page("views/timeline.py").run()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert "rect" not in [sh["type"] for sh in spec["layout"].get("shapes", [])]


def test_the_timeline_marks_where_the_training_facts_end():
    """A chronologically split data set: a dotted line at the last training fact's time, labelled and said in a
    caption (walk-through 36 F13); the t_q label near the plot's right end is set left of its line (centred, the
    page's edge cut it at 820 px)."""
    from helpers import SAMPLE_WORLD
    from tpar.data.loading import load_dataset
    from views.timeline import training_end

    at = app(QUESTION).run()
    at.switch_page("views/timeline.py").run()
    assert not at.exception
    kg = load_dataset(SAMPLE_WORLD)
    end = kg.time_axis.label(int(kg.facts("train")[:, 3].max()))
    assert training_end(kg) == int(kg.facts("train")[:, 3].max())
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    dotted = [sh for sh in spec["layout"]["shapes"] if sh.get("line", {}).get("dash") == "dot"]
    assert len(dotted) == 1 and str(dotted[0]["x0"]).startswith(end)
    notes = {a["text"].strip(): a for a in spec["layout"]["annotations"]}
    assert "training facts end" in notes and notes["t_q"]["xanchor"] in ("right", "center")
    assert f"Dotted: the last training fact's time, {end}" in texts(at)
    # a random split has no time before which every training fact lies
    from dataclasses import replace

    mixed = replace(kg, splits={**kg.splits, "valid": kg.facts("train")[:5]})
    assert training_end(mixed) is None


def test_a_time_long_before_the_data_becomes_its_first_time_not_a_forecast_after_it():
    """Walk-through 37: a URL time of 2020-01-01 (the sample world starts in 2025) was replaced by the first step
    after the data, turning a question before the data into a forecast after it."""
    from helpers import SAMPLE_WORLD
    from tpar.data.loading import load_dataset

    kg = load_dataset(SAMPLE_WORLD)
    at = app({**QUESTION, "time": "2020-01-01"}).run()
    assert not at.exception
    first = kg.time_axis.label(kg.time_range[0])
    assert f"showing the data's first time, {first}" in plain(at.warning)
    assert at.session_state["time"] == first
    at = app({**QUESTION, "time": "2031-01-01"}).run()  # long after: the first step after the data, as before
    assert "showing the first step after the data" in plain(at.warning)


@pytest.mark.parametrize("params", [{"time": "2025-06-01"}, {"relation": "Mobilize against", "time": "2025-06-01"}])
def test_a_link_without_an_entity_keeps_what_it_gives(params):
    """Audit 37: a URL with a time (and a relation) but no subject was silently replaced by the showcase question;
    what the link gives is kept, the entity filled in, and the page says so."""
    at = app(params).run()
    assert not at.exception
    assert "The link names no entity" in plain(at.warning)
    for k, v in params.items():
        assert at.session_state[k] == v
    at = app({}).run()  # no link: the showcase question, without a word
    assert not at.exception and "The link names no entity" not in plain(at.warning)


def test_the_periodic_time_encoding_is_drawn_over_about_two_turns_of_its_longest_highlighted_period():
    """Walk-through 37: over ±60 days the short learned periods drew a solid band at 820 px; the periodic chart
    opens on ±1.1 x the longest highlighted period (about a month here) and the caption says how to see it all."""
    at = app(QUESTION).run()
    at.switch_page("views/teach.py").run()
    assert not at.exception
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    ranged = [c for c in charts if c["layout"].get("xaxis", {}).get("range")]  # show_chart sets titles apart
    assert len(ranged) == 1 and "Periodic part (habits)" in texts(at)  # the periodic chart; the linear one whole
    periodic = ranged[0]
    lo, hi = periodic["layout"]["xaxis"]["range"]
    assert lo == -hi and 14 <= hi < 60 and max(periodic["data"][0]["x"]) > hi  # the data reach further
    assert "double-click it for the whole" in texts(at)


def test_the_teaching_chart_gives_the_answer_below_the_bars_its_rank_among_every_entity_reached(monkeypatch):
    """The step's scores hold only the top 12 and the answer: the answer's label takes the trace's rank (the text's),
    not its place among the bars (walk-through 38 #1: "rank 13" beside a text saying rank 77)."""
    monkeypatch.syspath_prepend(str(Path(APP).parent))
    from views.teach import score_bars

    scores = {f"E{i}": 1.0 - 0.01 * i for i in range(12)} | {"Answer": -0.011}
    assert score_bars(scores, "Answer", 1, 3, (77, 77)).data[0].y[-1] == "Answer (rank 77)"
    assert score_bars(scores, "Answer", 1, 3, (76, 78)).data[0].y[-1] == "Answer (rank 76–78)"
    assert score_bars(scores | {"Answer": 2.0}, "Answer", 1, 3, (1, 1)).data[0].y[0] == "Answer"  # on top: no rank


def test_a_page_address_no_page_has_is_named_not_silently_ask(monkeypatch):
    """Walk-through 38 #14: /data_model (the page is /data) showed Ask without a word."""
    monkeypatch.syspath_prepend(str(Path(APP).parent))
    from explorer import unknown_page

    pages = ["", "evidence", "data"]
    assert unknown_page("http://localhost:8501/data_model", "", pages) == "data_model"
    assert unknown_page("http://localhost:8501/data", "data", pages) == ""          # served: a page has it
    assert unknown_page("http://localhost:8501/", "", pages) == ""                  # the default page itself
    assert unknown_page("http://host/tpar/", "", pages, base="/tpar") == ""          # the base path is no page path
    assert unknown_page("http://host/tpar/evidnce", "", pages, base="tpar") == "evidnce"
