"""A composite model (issue #29) in the Streamlit explorer, driven headless with AppTest: every page that answers
with a model says that the ranking combines several models and the history prior, and shows what was computed."""

from __future__ import annotations

import re
import shutil

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from helpers import open_app  # noqa: E402

QUESTION = {"subject": "Orora Front", "relation": "Mobilize against", "time": "2025-12-20",
            "setting": "extrapolation", "model": "sample-composite"}


def texts(at) -> str:
    raw = "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info])
    return re.sub(r"\\(.)", r"\1", raw).replace("\u2060", "").replace("\u2011", "-").replace("**", "")


@pytest.fixture()
def with_composite(monkeypatch, tmp_path, sample_composite):
    """A fresh app whose user models folder holds the small composite."""
    open_app({}, monkeypatch=monkeypatch, tmp_path=tmp_path)  # no benchmarks, the app's modules importable
    import explorer

    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(sample_composite, runs / "sample-composite.tpar")
    monkeypatch.setattr(explorer, "RUNS_DIR", runs)
    explorer.checkpoints.clear()
    yield
    explorer.checkpoints.clear()


def app(params: dict) -> AppTest:
    return open_app(params, timeout=240)


def test_ask_and_evidence_say_the_ranking_combines_models_and_the_prior(with_composite):
    at = app({**QUESTION, "answer": "Hugo of Zanistan", "importance": "gradient"}).run()
    assert not at.exception and not at.error
    assert at.session_state["model"] == "sample-composite"
    said = texts(at)
    assert "The ranking combines 2 models and the history prior" in said and "S = f₁/(2·" in said
    answers = at.dataframe[0].value
    assert answers.iloc[0]["entity"] == "Hugo of Zanistan"

    at.switch_page("views/evidence.py").run()
    assert not at.exception and not at.error
    said = texts(at)
    assert "This ranking combines 2 models and the history prior" in said and "composite score S(q, a)" in said
    assert "S − S₀" in said and "history prior" in said
    parts = at.dataframe[0].value  # each model's scaled score and the prior's term: they add up to the score
    assert list(parts["part"])[-1] == "history prior" and len(parts) == 3
    score = float(re.search(r"composite score S\(q, a\) = ([0-9]+\.[0-9]+)", said).group(1))
    assert parts["adds"].sum() == pytest.approx(score, abs=2e-3)
    paths = next(d.value for d in at.dataframe if "temporal path" in d.value.columns)
    assert "models" in paths.columns and paths.iloc[0]["models"] == "1, 2"
    assert "History prior: Hugo of Zanistan" in said


def test_teaching_page_steps_through_one_named_model(with_composite):
    at = app(QUESTION).run()
    at.switch_page("views/teach.py").run()
    assert not at.exception and not at.error
    said = texts(at)
    assert "The ranking on the Ask page combines 2 models and the history prior" in said
    assert "This traces model 1 of the 2" in said
    at.selectbox(key="teach_member").select(1).run()
    assert not at.exception and not at.error and "This traces model 2 of the 2" in texts(at)


def test_data_and_model_and_evaluate_pages(with_composite):
    at = app(QUESTION).run()
    at.switch_page("views/data_model.py").run()
    assert not at.exception and not at.error
    said = texts(at)
    assert "A composite model: the ranking combines 2 models and the history prior" in said
    assert "kind: composite" in said and "Selection on valid" in said
    at.switch_page("views/evaluate.py").run()
    assert not at.exception and not at.error
    assert "TPAR below is the composite sample-composite" in texts(at)
    at.number_input(key="eval_limit").set_value(150).run()
    at.checkbox(key="eval_rec").uncheck().run()
    at.button(key="eval_run").click().run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value.set_index("Method")
    assert table.loc["TPAR", "MRR"] > table.loc["frequency", "MRR"]
