"""AppTest of the bring-your-own-data pages: upload (a good file, each kind of bad file), training
start -> progress -> finish -> ask, evaluation next to the baselines, and the teaching page."""

from __future__ import annotations

import hashlib
import json
import math

import re
import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402
import torch  # noqa: E402

from helpers import ROOT, tiny_world_csv  # noqa: E402
from tpar.training.defaults import defaults_for_size  # noqa: E402

APP = str(ROOT / "app" / "streamlit_app.py")


@pytest.fixture(autouse=True)
def workspace(monkeypatch, tmp_path):
    monkeypatch.setenv("TPAR_DATA_DIR", str(tmp_path / "no-benchmarks-here"))
    monkeypatch.syspath_prepend(str(Path(APP).parent))
    import explorer

    for name in ("UPLOAD_DIR", "RUNS_DIR", "JOBS_DIR"):
        monkeypatch.setattr(explorer, name, tmp_path / "ws" / name.lower())
    for fn in (explorer.datasets, explorer.checkpoints, explorer.load_kg, explorer.explainer):
        fn.clear()
    yield tmp_path / "ws"
    for fn in (explorer.datasets, explorer.checkpoints):
        fn.clear()


def untrained_model(kg, out: Path, setting: str = "unified", epochs: int = 1, **kw) -> Path:
    """An untrained L=2, d=8 model of ``kg`` saved at ``out`` (seed 0), with the run record ``kw`` gives
    (``history``, ``extra``; by default a finished run): what a page shows of a model, not what it learned."""
    from tpar.model.checkpoint import from_model
    from tpar.model.config import ModelConfig, RunConfig, TrainConfig
    from tpar.model.network import TPAR

    cfg = ModelConfig(dim=8, attn_dim=3, num_layers=2, num_relations=kg.num_relations,
                      time_span=kg.time_range[1] - kg.time_range[0] + 1)
    torch.manual_seed(0)
    out.parent.mkdir(parents=True, exist_ok=True)
    kw.setdefault("extra", {"stopped": "completed", "best_epoch": 1})
    from_model(TPAR(cfg), RunConfig(cfg, TrainConfig(setting=setting, epochs=epochs)), kg, setting, **kw).save(out)
    return out


def upload(at: AppTest, text: bytes, name: str = "mine.csv") -> AppTest:
    at.switch_page("views/upload.py").run()
    at.get("file_uploader")[0].upload(name, text, "text/csv").run()
    return at


def errors(at) -> str:
    """Error messages as rendered (the app backslash-escapes names in markdown)."""
    import re

    return re.sub(r"\\(.)", r"\1", " ".join(e.value for e in at.error)).replace("\u2060", "")


def test_an_export_with_other_columns_is_read_and_the_report_names_them(workspace):
    at = AppTest.from_file(APP, default_timeout=120).run()
    rows = tiny_world_csv().strip().splitlines()
    text = "\n".join(["source," + rows[0]] + [f"<i>wire</i>,{r}" for r in rows[1:]]) + "\n"
    upload(at, text.encode())
    assert not at.exception and not at.error
    assert {m.label: m.value for m in at.metric}["Facts kept"] == str(len(rows) - 1)
    said = " ".join(i.value for i in at.info).replace("\\", "")  # how the file was read: information, not amber
    assert "How the file was read" in said and "'source'" in said and "not read" in said
    assert not any("not read" in w.value for w in at.warning)


def test_upload_a_good_file_and_save(workspace):
    at = AppTest.from_file(APP, default_timeout=120).run()
    text = tiny_world_csv(extra="P0,meets,P1,2024-01-01\nP0,meets\n").encode()
    upload(at, text)
    assert not at.exception and not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows read"] == "122" and metrics["Facts kept"] == "120"
    assert metrics["Rows dropped"] == "1" and metrics["Duplicates removed"] == "1" and metrics["Time step"] == "day"
    dropped = next(d.value for d in at.dataframe if "problem" in d.value.columns)
    assert list(dropped["row"]) == [123] and "expected 4 columns" in dropped["problem"][0]
    assert dropped["content"][0] == "P0,meets"  # the row as it is in the file
    at.text_input(key="upload_name").set_value("mine").run()
    at.button(key="upload_save").click().run()
    assert not at.exception and any("Saved as data set" in s.value for s in at.success)
    assert (workspace / "upload_dir" / "mine" / "train.csv").is_file()
    assert at.session_state["data"] == "upload: mine"
    # saving again under the same name needs an explicit replace, and a consent serves one save
    at.run()
    assert at.button(key="upload_save").disabled
    at.checkbox(key="upload_replace").check().run()
    at.button(key="upload_save").click().run()
    assert not at.exception and any("Saved as data set" in s.value for s in at.success)
    at.run()
    assert not at.checkbox(key="upload_replace").value and at.button(key="upload_save").disabled
    # the page says why the button is off, and that this file is saved (a silent disabled button, walk-through)
    assert any("This file is saved as data set upload: mine" in s.value.replace("\\", "").replace("\u2060", "") for s in at.success)
    # another file: its own suggested name, no consent carried over
    upload(at, tiny_world_csv(days=30).encode(), "données.csv")
    assert at.text_input(key="upload_name").value == "donnees"
    at.text_input(key="upload_name").set_value("mine").run()
    assert not at.checkbox(key="upload_replace").value and at.button(key="upload_save").disabled
    assert any("exists: tick the box above to replace it" in c.value.replace("\\", "").replace("\u2060", "") for c in at.caption)


def test_rows_added_to_a_data_set_grow_its_history_and_the_sample_is_copied_not_rewritten(workspace):
    """Upload page, "add rows to an existing data set": the report before anything is saved; an uploaded data set
    grows in place (with its lineage); a sample data set grows into a new uploaded one, its own folder untouched."""
    from tpar.data.loading import load_dataset
    from tpar.data.upload import inspect_upload, save_dataset

    _, kg = inspect_upload(tiny_world_csv(), "ring.csv")
    save_dataset(kg, workspace / "upload_dir", "ring")
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("views/upload.py").run()
    at.radio(key="upload_mode").set_value("grow").run()
    at.selectbox(key="upload_grow_target").set_value("upload: ring").run()
    rows = "subject,relation,object,time\nP0,meets,Newcomer,2024-03-06\nP0,meets,P1,2024-01-01\nP1,calls\n"
    at.get("file_uploader")[0].upload("new.csv", rows.encode(), "text/csv").run()
    assert not at.exception and not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Facts added"], metrics["New entities"], metrics["Already in the data set"],
            metrics["Rows dropped"]) == ("1", "1", "1", "1")
    assert "2 days" in " ".join(m.value for m in at.markdown).replace("\\", "")  # past the last time 2024-03-04
    dropped = at.dataframe[-1].value  # the dropped row with its content, as a new upload's table shows it
    assert list(dropped["row"]) == [4] and list(dropped["content"]) == ["P1,calls"]
    at.button(key="upload_grow_save").click().run()
    assert not at.exception and any("Saved as data set" in s.value for s in at.success)
    grown = load_dataset(workspace / "upload_dir" / "ring")
    assert len(grown.all_facts()) == len(kg.all_facts()) + 1 and grown.lineage[0]["file"] == "new.csv"
    assert at.session_state["data"] == "upload: ring"
    # a sample data set is copied: its folder is never rewritten
    sample = "sample: world/chronological"
    at.selectbox(key="upload_grow_target").set_value(sample).run()
    at.get("file_uploader")[0].upload("jan.csv", b"subject,relation,object,time\nAristan,Criticize,Newland,"
                                      b"2026-01-02\n", "text/csv").run()
    assert not at.exception and at.text_input(key=f"upload_grow_name:{sample}").value == "chronological-grown"
    at.button(key="upload_grow_save").click().run()
    assert not at.exception and at.session_state["data"] == "upload: chronological-grown"
    copy = load_dataset(workspace / "upload_dir" / "chronological-grown")
    assert copy.lineage[0]["base_name"] == "chronological" and "Newland" in copy.entities
    # the Ask page answers over the grown copy with the sample model and says which data and how far past
    at.switch_page("views/ask.py").run()
    assert not at.exception
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "answering over chronological-grown" in said and "past its training facts" in said


def test_growing_another_data_set_never_keeps_the_last_ones_name_or_replace_choice(workspace):
    """The grown copy's name and the consent to replace a data set of that name belong to one data set: after a
    switch to another, the page proposes that one's name and asks again (the key alone kept both)."""
    from tpar.data.upload import inspect_upload, save_dataset

    _, kg = inspect_upload(tiny_world_csv(), "ring.csv")
    save_dataset(kg, workspace / "upload_dir", "chronological-grown")
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("views/upload.py").run()
    at.radio(key="upload_mode").set_value("grow").run()
    at.selectbox(key="upload_grow_target").set_value("sample: world/chronological").run()
    at.get("file_uploader")[0].upload("jan.csv", b"subject,relation,object,time\nAristan,Criticize,Newland,"
                                      b"2026-01-02\n", "text/csv").run()
    names = [t for t in at.text_input if t.label == "Name of the grown data set"]
    assert names[0].value == "chronological-grown"
    (replace,) = [c for c in at.checkbox if "Replace the existing data set" in c.label]
    replace.check().run()
    at.selectbox(key="upload_grow_target").set_value("sample: world/random").run()
    assert not at.exception
    names = [t for t in at.text_input if t.label == "Name of the grown data set"]
    assert names[0].value == "random-grown"
    names[0].set_value("chronological-grown").run()
    (replace,) = [c for c in at.checkbox if "Replace the existing data set" in c.label]
    assert not replace.value and not [b for b in at.button if b.key == "upload_grow_save"]


@pytest.mark.parametrize("content, message", [
    (b"subject\xff", "not UTF-8 text"),
    (b"\xff\xfesubject", "starts as UTF-16 text"),
    (b"", "file is empty"),
    (b"who,what,when\na,b,c\n", "header lacks column"),
    (b"subject,relation,object,time\na,b\n", "no valid rows"),
    (b"subject,relation,object,time\na,r,b,noon\n", "is not an ISO date"),
])
def test_bad_files_are_explained(content, message):
    at = AppTest.from_file(APP, default_timeout=120).run()
    upload(at, content, "bad.csv")
    assert not at.exception
    assert message in errors(at)
    if b"\xff" in content:
        assert "bad.csv, row 1" in errors(at)


def test_an_upload_with_a_byte_that_is_not_utf8_drops_that_row_and_shows_it(workspace):
    """The page says bad rows are dropped and listed, never fatal: a bad byte is one more bad row (its byte shown
    as �), not a refusal of the whole file."""
    at = AppTest.from_file(APP, default_timeout=120).run()
    rows = tiny_world_csv().strip().splitlines()
    upload(at, ("\n".join(rows[:3]) + "\n").encode() + b"Bad\xffName,r,X,2024-01-05\n"
           + ("\n".join(rows[3:]) + "\n").encode())
    assert not at.exception and not at.error
    assert "1 row of mine.csv was dropped" in " ".join(w.value for w in at.warning).replace("\\", "")
    (table,) = [d.value for d in at.dataframe if "problem" in list(d.value.columns)]
    assert table.to_dict("records") == [{"row": 4, "problem": "not UTF-8 text (invalid byte 0xff)",
                                         "content": "Bad\ufffdName,r,X,2024-01-05"}]


def test_two_files_with_bad_bytes_are_two_uploads_even_when_their_marked_texts_are_equal(workspace):
    """A byte that is not UTF-8 is marked with a private-use character the rest of its file does not hold, which
    another file may hold as a name: two files' marked texts can be equal as strings with their marks on other
    rows, and the page's cache must not give the second file the first's report (its bad row passed as a name)."""
    at = AppTest.from_file(APP, default_timeout=120).run()
    rows = tiny_world_csv().strip().splitlines()
    head, tail = ("\n".join(rows[:3]) + "\n").encode(), ("\n".join(rows[3:]) + "\n").encode()
    # U+E000 held: 0xff is marked U+E0FF           # U+E0FF held: 0x80 is marked U+E000
    first = b"Bad\xffName,r,X,2024-01-05\n" + "\ue000Name,r,Y,2024-01-06\n".encode()
    second = "Bad\ue0ffName,r,X,2024-01-05\n".encode() + b"\x80Name,r,Y,2024-01-06\n"
    for content, row, byte, shown in ((first, 4, "0xff", "Bad\ufffdName,r,X,2024-01-05"),
                                      (second, 5, "0x80", "\ufffdName,r,Y,2024-01-06")):
        upload(at, head + content + tail)
        assert not at.exception and not at.error
        (table,) = [d.value for d in at.dataframe if "problem" in list(d.value.columns)]
        assert table.to_dict("records") == [{"row": row, "problem": f"not UTF-8 text (invalid byte {byte})",
                                             "content": shown}]


@pytest.mark.slow
def test_train_progress_finish_then_ask(workspace):
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("views/train.py").run()
    assert at.text_input(key="train_name").value == "chronological-unified"  # the sample world's suggestion
    at.slider(key="train_layers").set_value(5).run()  # a value chosen for the sample world ...
    upload(at, tiny_world_csv().encode())
    at.text_input(key="upload_name").set_value("tiny").run()
    at.button(key="upload_save").click().run()
    at.switch_page("views/train.py").run()
    assert not at.exception and at.session_state["data"] == "upload: tiny"
    assert at.text_input(key="train_name").value == "tiny-unified"  # suggested for this data set, not the last one
    small = defaults_for_size(120).run  # the upload's 120 facts: a small data set
    assert at.slider(key="train_layers").value == small.model.num_layers == 3  # ... is not kept for another
    assert at.number_input(key="train_epochs").value == small.train.epochs  # the small-data schedule
    at.slider(key="train_layers").set_value(2)
    at.select_slider(key="train_dim").set_value(8)
    at.number_input(key="train_epochs").set_value(2)
    at.number_input(key="train_per_epoch").set_value(80)
    at.text_input(key="train_name").set_value("tiny-model")
    at.get("form_submit_button")[1].click().run()  # estimate only: a time, no job
    assert not at.exception and not at.success
    assert any("Estimated on this machine" in i.value and "per epoch" in i.value for i in at.info)
    # where the questions come from (a new user read 340 questions for 136 facts as a mistake)
    assert any("96 training facts, each asked both ways for extrapolation, and again for interpolation unless drawn "
               "into the epoch's random background; at most 80 of them" in i.value for i in at.info), \
        [i.value for i in at.info]
    assert "job" not in at.session_state
    at.get("form_submit_button")[0].click().run()
    assert not at.exception and any("started in the background" in s.value for s in at.success)
    from tpar.training.timing import TrainingEstimate

    spec = json.loads(next((workspace / "jobs_dir").glob("*/spec.json")).read_text())
    est = TrainingEstimate.from_dict(spec["estimate"])  # the shown estimate travels with the job: its live time left starts there
    assert est is not None and est.seconds_per_question > 0 and est.epochs == 2
    at.get("form_submit_button")[0].click().run()  # pressed again at once: never an error (it runs, or exists)
    assert not at.exception and not at.error, [e.value for e in at.error]
    seen_progress, t0 = [], time.time()
    while time.time() - t0 < 240:
        at.run()
        assert not at.exception
        bars = at.get("progress")
        if bars:
            seen_progress.append(bars[0].proto.value)
        if any("Saved" in s.value for s in at.success):
            break
        time.sleep(0.5)
    else:
        raise AssertionError("training did not finish")
    assert seen_progress and seen_progress[-1] == 100
    assert re.search(r"in all, .* of it optimiser steps", at.get("progress")[0].proto.text)  # wall time and step time
    assert (workspace / "runs_dir" / "tiny-model.tpar").is_file()
    from tpar.model.checkpoint import Checkpoint
    from tpar.model.config import sparse_propagation

    trained = Checkpoint.load(workspace / "runs_dir" / "tiny-model.tpar").config.model  # the page's default: sparse
    assert {k: getattr(trained, k) for k in sparse_propagation("unified")} == sparse_propagation("unified")
    epochs, per_setting = at.dataframe[-2].value, at.dataframe[-1].value  # narrow tables: they fit 820 px
    assert list(epochs.columns) == ["Epoch", "Loss", "Training questions", "Seconds", "Valid MRR %"]
    assert list(per_setting.columns) == ["Epoch", "Setting", "MRR %", "Hits@1 %", "Hits@10 %"]
    assert sorted(set(per_setting["Setting"])) == ["extrapolation", "interpolation"]  # one row per epoch and setting
    assert per_setting["MRR %"].between(0, 100).all() and (epochs["Training questions"] == 80).all()
    for _, row in epochs.iterrows():  # the selection MRR is the mean of the settings' (a unified run)
        mine = per_setting[per_setting["Epoch"] == row["Epoch"]]["MRR %"]
        assert row["Valid MRR %"] == pytest.approx(mine.mean())
    tested = at.dataframe[-3].value  # the test figures the job measured, as the model's card records them
    metrics = Checkpoint.load(workspace / "runs_dir" / "tiny-model.tpar").metrics
    assert sorted(tested["Setting"]) == sorted(k[len("test_"):] for k in metrics if k.startswith("test_")) != []
    for _, row in tested.iterrows():
        assert row["MRR %"] == pytest.approx(100 * metrics[f"test_{row['Setting']}"]["realistic"]["mrr"])
        assert row["Questions"] == metrics[f"test_{row['Setting']}"]["realistic"]["count"] == 24
    assert "The model saved is the one after epoch" in " ".join(c.value for c in at.caption)
    label = at.selectbox(key="w_job")
    assert "starting" not in label.format_func(label.value) and "tiny-model" in label.format_func(label.value)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)  # loss and valid MRR per epoch
    # each epoch's mean loss beside the noisy batch losses (one epoch's few batch losses read as a rise), and the
    # loss of a uniform guess over the data's 6 entities for scale
    traces = {t["name"]: t for t in spec["data"]}
    assert traces["epoch's mean loss"]["y"] == pytest.approx(list(epochs["Loss"]))
    assert "batch loss (sampled)" in traces
    guess = [sh for sh in spec["layout"]["shapes"] if sh.get("y0") == sh.get("y1")]
    assert [sh["y0"] for sh in guess] == [pytest.approx(math.log(6))]
    said = " ".join(c.value for c in at.caption)
    assert "a uniform guess among the 6 entities scores MRR about 40.8% and H@10 about 100%" in said
    warned = re.sub(r"\\(.)", r"\1", " ".join(w.value for w in at.warning)).replace("\u2060", "")  # per setting
    assert "H@10 is 100% whatever the model does" in warned and "measured on only 24 questions" in warned
    low, high = spec["layout"]["yaxis2"]["range"]
    mrr = list(epochs["Valid MRR %"].dropna())  # the axis carries the selection MRR (a unified run: the mean)
    assert 0 <= low <= min(mrr) and max(mrr) <= high <= 100  # an MRR axis never runs past 100 %
    at.button(key=f"use-{at.session_state['job']}").click().run()
    assert not at.exception and not at.error
    assert at.session_state["model"] == "tiny-model"
    assert at.dataframe and len(at.dataframe[0].value) >= 1  # the Ask page answers with the new model

    # the same name again: the saved model is kept unless "Replace" is ticked, and the tick serves one start only
    saved = workspace / "runs_dir" / "tiny-model.tpar"
    before, first_job = hashlib.sha256(saved.read_bytes()).hexdigest(), at.session_state["job"]
    at.switch_page("views/train.py").run()
    at.get("form_submit_button")[0].click().run()
    assert not at.exception and not any("started in the background" in s.value for s in at.success)
    assert any("exists and is kept" in w.value for w in at.warning)
    assert not any("Estimated on this machine" in i.value for i in at.info)  # refused at once, nothing timed
    assert at.session_state["job"] == first_job and hashlib.sha256(saved.read_bytes()).hexdigest() == before
    at.checkbox(key="train_replace").check()
    at.get("form_submit_button")[0].click().run()
    assert not at.exception and any("started in the background" in s.value for s in at.success), \
        [w.value for w in at.warning + at.error + at.info]
    second = at.session_state["job"]
    assert second != first_job
    at.run()
    assert not at.checkbox(key="train_replace").value  # unticked: a later start would not replace again
    if at.button(key=f"cancel-{second}").proto is not None:  # no need to train it: the consent is what is tested
        at.button(key=f"cancel-{second}").click().run()


def test_evaluate_next_to_baselines():
    at = AppTest.from_file(APP, default_timeout=300).run()
    at.switch_page("views/evaluate.py").run()
    at.number_input(key="eval_limit").set_value(200).run()
    at.button(key="eval_run").click().run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value.set_index("Method")  # one row per method
    assert sorted(table.index) == ["TPAR", "frequency", "recurrency"]
    for col in ("MRR", "Hits@1", "Hits@3", "Hits@10", "MRR opt.", "MRR pess."):
        assert table[col].between(0, 100).all()
    assert (table["MRR opt."] >= table["MRR"]).all() and (table["MRR"] >= table["MRR pess."]).all()
    assert table.loc["TPAR", "MRR"] > table.loc["frequency", "MRR"]  # the planted rules are what TPAR is for
    assert not any("does not beat the frequency baseline" in w.value for w in at.warning)
    # each bar says how many questions it rests on, and every method's time is said (walk-through 36 F7: "0.0 s")
    bars = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if json.loads(c.proto.spec)["data"][0].get("name") == "TPAR")
    assert all(re.search(r"\(\d+\)$", x) for x in bars["data"][0]["x"]), bars["data"][0]["x"]
    # the CSV downloads say their unit (percent), the JSON's fractions are said beside them (walk-through 37 #13)
    assert any("in percent" in c.value and "fractions" in c.value for c in at.caption)
    assert sum(int(re.search(r"\((\d+)\)$", x).group(1)) for x in bars["data"][0]["x"]) <= 200
    assert not any("0.0 s" in c.value for c in at.caption)
    calib = next(d.value for d in at.dataframe if "ECE" in d.value.columns)  # before / after temperature scaling
    assert len(calib) == 2 and calib["ECE"].between(0, 1).all()
    assert any("sets hold the answer" in c.value for c in at.caption)
    assert len(at.get("download_button")) == 3
    # the reliability chart counts every bin's questions in a panel of its own: a bin where nothing is right draws
    # no bar of accuracy, but its questions still show (walk-through: 153 of 200 questions in an invisible bar)
    chart = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                 if "questions in the bin" in [t.get("name") for t in json.loads(c.proto.spec)["data"]])
    share, counts = (next(t for t in chart["data"] if t.get("name") == n)
                     for n in ("share right in the bin", "questions in the bin"))
    assert share["x"] == counts["x"] and sum(counts["y"]) == 200 and min(counts["y"]) > 0
    assert not any("Measured on only" in w.value for w in at.warning)
    # a handful of questions: said before its figures (walk-through: ECE on 30 questions shown as it stood)
    at.number_input(key="eval_limit").set_value(40).run()
    at.button(key="eval_run").click().run()
    assert not at.exception and not at.error
    assert any("Measured on only 40 test questions (fewer than 100)" in w.value for w in at.warning)


def test_evaluate_says_what_limits_a_calibration_fitted_on_few_questions():
    """The caveats of the calibration in use (fitted on few questions, a model that guesses) are said on the
    Evaluate page as Ask says them."""
    def page() -> None:
        from views.evaluate import calibration_ui

        from tpar.evaluation.calibration import CalibrationMetrics, HeldOutReport, Reliability

        m = CalibrationMetrics(0.1, 0.5, 1.0, 0.5, 0.5, 30)
        calibration_ui(HeldOutReport(m, m, Reliability([0.0, 0.5], [10, 20], [0.2, 0.7], [0.2, 0.7]), {"0.9": 0.9},
                                     {"0.9": 2.0}, 0.05),
                       "fitted now on 34 valid questions", caveats=["The probabilities were calibrated on only 34 valid "
                                                                    "questions (fewer than 100): take them as rough."])

    at = AppTest.from_function(page, default_timeout=60).run()
    assert not at.exception, at.exception
    said = " ".join(w.value for w in at.warning)
    assert "calibrated on only 34 valid questions" in said and "Measured on only 30 test questions" in said


@pytest.mark.slow
def test_teaching_page_puts_the_rule_beside_the_path():
    at = AppTest.from_file(APP, default_timeout=120).run()  # opens on the escalation example
    at.switch_page("views/teach.py").run()
    assert not at.exception and not at.error
    reach = at.dataframe[0].value
    assert list(reach["ℓ"]) == [1, 2, 3]
    assert reach["reached"].is_monotonic_increasing
    # two figures a cell, so the table fits 820 px: the best so far with its w·h, the answer's w·h with its rank
    assert all(re.fullmatch(r".+ \(-?\d+\.\d{3}\)", b) for b in reach["best so far (w·h)"])
    assert all(re.fullmatch(r"-?\d+\.\d{3}, rank \d+(–\d+)?|not reached", a) for a in reach["answer (w·h, rank)"])
    codes = [c.value for c in at.code]
    assert any("(A, Threaten, B, t)" in c for c in codes)
    assert any("Threaten⁻¹" in c and "(-2 d)" in c for c in codes)
    assert any("follows the rule" in m.value and "does not" not in m.value and "2 days before" in m.value
               for m in at.markdown)
    assert not any("has not learned" in w.value for w in at.warning)


@pytest.mark.slow
def test_teaching_page_sets_the_rules_answer_beside_the_model_when_it_follows_another():
    """A showcase question shared without its answer (the model's first answer is not the one a rule made): section 3
    sets the rule's answer and the model's path to it side by side, not "pick an example question" (walk-through 38
    #5: the aid-repetition example, the rule's answer ranked 2nd)."""
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in {"subject": "Lumfaeth", "relation": "Provide aid to", "time": "2025-12-18",
                 "setting": "extrapolation"}.items():
        at.query_params[k] = v
    at.run()
    at.switch_page("views/teach.py").run()
    assert not at.exception and not at.error
    said = " ".join(i.value for i in at.info).replace("\\", "")
    assert "Pick an example question" not in said
    assert "the answer a rule made is Orenn: (Lumfaeth, Provide aid to, Orenn, 2025-12-18)" in said, said
    assert any("Planted rule" in m.value for m in at.markdown)
    assert any("has not learned" in w.value and "ranks the rule's answer 2" in w.value for w in at.warning)


def test_teaching_page_walks_through_the_steps_with_one_control():
    """The page opens at the question (nothing reached yet); Next, Back and the step control move one
    stop; Play moves the same control on, step by step, and stops at the last step, where the model's
    answer is named with its score and probability. At every stop an answer, or "nothing reached yet",
    is named (never "None"), with the stop's equations."""
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("views/teach.py").run()
    assert not at.exception and at.session_state["teach_step"] == 0
    control = at.segmented_control(key="teach_step")
    assert control.value == 0 and control.options == [
        "the question", "step 1", "step 2", "step 3"]

    def standing() -> str:
        return re.sub(r"\\(.)", r"\1", " ".join([b.value for b in at.info] + [b.value for b in at.success])).replace("\u2060", "")

    assert "Nothing reached yet" in standing() and "None" not in standing()
    assert [e.label for e in at.expander if "equations" in e.label] == ["The paper's equations in this stop (Eqs. 2, 3)"]
    def chart_titles() -> list[str]:  # a chart's title is bold text above it (show_chart), not Plotly's
        return [m.value for m in at.markdown if "after step" in m.value or "after the last step" in m.value]

    assert not chart_titles()  # no scores before the first step
    seen = []
    for step in (1, 2, 3):
        at.button(key="teach_next").click().run()
        assert not at.exception and at.session_state["teach_step"] == step
        said = standing()
        assert "None" not in said
        seen.append(said)
        spec = json.loads(at.get("plotly_chart")[0].proto.spec)  # the bars follow the same control
        assert "text" not in spec["layout"].get("title", {})  # where Plotly's toolbar would cover it
        assert chart_titles() == [f"**w·h after step {step} of 3 \\(provisional\\)**" if step < 3
                                  else "**score f \\= w·h after the last step \\(3\\)**"]
    assert all("Best candidate after step" in s for s in seen[:2])
    assert "The model's answer:" in seen[2] and "probability" in seen[2]
    assert at.button(key="teach_next").disabled
    at.button(key="teach_back").click().run()
    assert at.session_state["teach_step"] == 2
    at.segmented_control(key="teach_step").set_value(0).run()
    assert at.session_state["teach_step"] == 0
    # Play: the same control moves on each tick of the fragment's timer (a tick is due when teach_next_at has passed)
    at.button(key="teach_play").click().run()
    assert at.session_state["teach_playing"] and at.button(key="teach_stop")
    for step in (1, 2, 3):
        at.session_state["teach_next_at"] = 0.0
        at.run()
        assert not at.exception and at.session_state["teach_step"] == step
    assert not at.session_state["teach_playing"] and at.button(key="teach_play")  # stopped at the last step


@pytest.mark.slow
def test_teaching_page_from_a_url_checks_the_rules_timing():
    """A shared link opens the page on its question (no "ask first"); the weekly rule's pair is
    answered right, but from the meeting 14 days before: the check says it does not follow the
    7-day rule, and the page says the model has not learned the rule for this question."""
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in {"subject": "Keleth", "relation": "Meet", "time": "2025-12-20", "setting": "extrapolation",
                 "answer": "Quenara"}.items():
        at.query_params[k] = v
    at.run().switch_page("views/teach.py").run()
    assert not at.exception and not at.error
    assert any("(Keleth, Meet, ?, 2025-12-20)" in m.value.replace("\\", "") for m in at.markdown)
    assert any("answer followed through the steps (orange): **Quenara**" in c.value for c in at.caption)
    verdict = next(m.value for m in at.markdown if "most important path" in m.value)
    assert "does not follow the rule" in verdict and "14 days before" in verdict and "7 days" in verdict
    assert any("has not learned the weekly" in w.value.replace("\\", "") for w in at.warning)
    assert at.query_params["subject"] == "Keleth" and at.query_params["answer"] == "Quenara"


def test_files_over_the_size_limit_are_refused(monkeypatch):
    import explorer

    monkeypatch.setattr(explorer, "max_upload_mb", lambda: 0)  # any non-empty file is too big
    at = AppTest.from_file(APP, default_timeout=120).run()
    upload(at, tiny_world_csv().encode(), "big.csv")
    assert not at.exception
    assert "larger than the limit of 0 MB" in errors(at) and not at.metric


def test_a_corrupt_job_or_checkpoint_in_the_workspace_breaks_nothing(workspace):
    """A truncated job spec and a garbage checkpoint are shown as broken; every page still works."""
    from tpar.runtime.jobs import list_jobs, running_outputs

    jobs = workspace / "jobs_dir"
    (jobs / "20260101-000000-aaaaaa").mkdir(parents=True)
    (jobs / "20260101-000000-aaaaaa" / "spec.json").write_text('{"data": "x", "run": {"train": ')
    (jobs / "20260101-000001-bbbbbb").mkdir()
    (jobs / "20260101-000001-bbbbbb" / "spec.json").write_text('[' * 50_000 + ']' * 50_000)
    (jobs / "20251231-000000-cccccc").mkdir()  # a readable spec, and a damaged line amid its events (walk 39)
    (jobs / "20251231-000000-cccccc" / "spec.json").write_text(json.dumps(
        {"data": "x.csv", "setting": "unified", "run": {}, "out": str(workspace / "x.tpar")}))
    (jobs / "20251231-000000-cccccc" / "events.jsonl").write_text(
        '{"type": "start", "time": 1}\nnot json\n{"type": "done", "time": 2}\n')
    (workspace / "runs_dir").mkdir(parents=True)
    (workspace / "runs_dir" / "garbage.tpar").write_bytes(b"PK\x03\x04 not really a zip")
    states = [j.status() for j in list_jobs(jobs)]
    assert [s.state for s in states] == ["broken"] * 3
    assert all("spec.json" in s.message for s in states[:2]) and "line 2 is not a JSON event" in states[2].message
    assert running_outputs(jobs) == set()
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception and not at.error  # Ask still answers with the shipped model
    for page in ("views/train.py", "views/data_model.py", "views/evaluate.py"):
        at.switch_page(page).run()
        assert not at.exception and not at.error, page
    at.switch_page("views/train.py").run()
    assert "cannot be shown" in " ".join(str(p.proto.text) for p in at.get("progress"))
    labels = next(b for b in at.selectbox if b.label == "Job").options
    assert all("(its files cannot be read; " in x and x.endswith(" — cannot be read") for x in labels), labels


def ask_on_own_data(workspace, setting: str, params: dict, spread: float = 100.0) -> AppTest:
    """The Ask page on an uploaded ring world plus Q0 who meets Q1 and Q2 on one day and no one else, with a small
    random-weight checkpoint trained (nominally) for ``setting`` (its scoring weights times ``spread``)."""
    from tpar.data.upload import inspect_upload, save_dataset
    from tpar.model.checkpoint import from_model
    from tpar.model.config import ModelConfig, RunConfig, TrainConfig
    from tpar.model.network import TPAR

    _, kg = inspect_upload(tiny_world_csv(extra="Q0,meets,Q1,2024-01-05\nQ0,meets,Q2,2024-01-05\n"), "ring.csv")
    save_dataset(kg, workspace / "upload_dir", "ring", overwrite=True)
    torch.manual_seed(0)
    cfg = ModelConfig(dim=8, attn_dim=3, num_layers=2, dropout=0.0, num_relations=kg.num_relations,
                      time_span=kg.time_range[1] - kg.time_range[0] + 2)
    (workspace / "runs_dir").mkdir(parents=True, exist_ok=True)
    model = TPAR(cfg)
    with torch.no_grad():  # random scores a hair apart would be "no evidence" (no ranking shown): spread them
        model.score.weight.mul_(spread)
    from_model(model, RunConfig(cfg, TrainConfig(setting=setting)), kg, setting).save(
        workspace / "runs_dir" / f"ring-{setting}.tpar")
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in {"data": "upload: ring", "model": f"ring-{setting}", **params}.items():
        at.query_params[k] = v
    return at.run()


def shown(at) -> str:
    import re

    raw = "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [w.value for w in at.warning])
    return re.sub(r"\\(.)", r"\1", raw).replace("\u2060", "")


def test_ask_separates_unreached_entities_and_flags_a_foreign_setting(workspace):
    # weights of the sign that scores the reached entities above the unreached ones' 0 (with every reached one
    # below 0, the question has no evidence: the best answer is a tie of the unreached)
    at = ask_on_own_data(workspace, "extrapolation",
                         {"subject": "P0", "relation": "meets", "time": "2024-02-10", "setting": "interpolation"},
                         spread=-100.0)
    assert not at.exception and not at.error, [e.value for e in at.error]
    answers = at.dataframe[0].value
    assert not {"Q0", "Q1", "Q2"} & set(answers["entity"])  # no path from P0 reaches them: not listed
    text = shown(at)
    found = re.search(r"Not reached by any temporal path: \*\*(\d+)\*\* entities, all at score 0", text)
    assert found and int(found.group(1)) == 9 - len(answers) >= 3, text  # 6 P's and 3 Q's, all reached ones listed
    assert "trained for extrapolation only" in text  # asked as interpolation
    # the other sign: every reached entity below the unreached ones' 0 -- no ranking headed by rank 4 (walk-through 37)
    at = ask_on_own_data(workspace, "extrapolation",
                         {"subject": "P0", "relation": "meets", "time": "2024-02-10", "setting": "interpolation"})
    assert not at.exception and not at.dataframe
    said = re.sub(r"\\(.)", r"\1", " ".join(i.value for i in at.info))
    assert "No evidence for this question" in said and "-way tie of entities it has no evidence about" in said


def test_ask_labels_tied_answers(workspace):
    at = ask_on_own_data(workspace, "unified", {"subject": "Q0", "relation": "meets", "time": "2024-03-20",
                                                "setting": "extrapolation"})
    assert not at.exception and not at.error
    answers = at.dataframe[0].value.set_index("entity")
    assert set(answers.index) == {"Q0", "Q1", "Q2"}  # only its own group is reachable
    q1, q2 = answers.loc["Q1"], answers.loc["Q2"]  # identical evidence: the same score, one shared rank range
    assert q1["rank_shown"] == q2["rank_shown"] and q1["rank_shown"].endswith("(2 tied)") and "–" in q1["rank_shown"]
    assert "trained for" not in shown(at)  # a unified model fits both settings


def test_evidence_page_says_when_no_path_carries_weight(workspace, monkeypatch):
    from tpar.model.network import TPAR

    real_init = TPAR.__init__

    def weightless(self, cfg):  # w = 0: every score and every path's importance is 0
        real_init(self, cfg)
        torch.nn.init.zeros_(self.score.weight)

    monkeypatch.setattr(TPAR, "__init__", weightless)
    at = ask_on_own_data(workspace, "unified", {"subject": "P0", "relation": "meets", "time": "2024-02-10",
                                                "setting": "interpolation", "answer": "P1"})
    at.switch_page("views/evidence.py").run()
    assert not at.exception and not at.error
    assert "No meaningful evidence for this answer" in " ".join(i.value for i in at.info), shown(at)
    toggle = at.toggle(key="show_weak")
    assert toggle.value is True  # nothing meaningful: the weightless paths are shown, marked as such
    assert "no meaningful contribution" in shown(at)
    frame = at.get("iframe")[0].proto.srcdoc
    assert '"width": 1.0' in frame and '"width": 7' not in frame  # absolute scale: all thin


def test_upload_flags_an_outlier_year_and_leaves_it_out_unless_asked(workspace):
    at = AppTest.from_file(APP, default_timeout=120).run()
    upload(at, tiny_world_csv(extra="P0,meets,P1,2031-05-01\nP2,meets,P2,2024-01-03\n").encode())
    assert not at.exception and not at.error
    text = shown(at)
    assert "row 122: 2031-05-01" in text and "Leave the outlier rows out" in [c.label for c in at.checkbox]
    assert "1 fact links an entity to itself" in " ".join(i.value for i in at.info)  # one row, said in the singular
    facts = [m for m in at.markdown if "Times read as" in m.value][0].value
    assert "2024-03-04" in facts  # left out by default: the range ends with the data
    at.checkbox(key="upload_exclude_outliers").uncheck().run()
    facts = [m for m in at.markdown if "Times read as" in m.value][0].value
    assert "2031-05-01" in facts  # kept on request
    assert at.dataframe[0].value.iloc[0]["subject"] == "P0"  # the preview


def gappy_sample_world(masked: int = 20) -> bytes:
    """The sample world's train and valid facts, then its first ``masked`` test facts with the object
    (even rows) or the subject (odd rows) left empty: rows for the shipped model to complete."""
    import csv
    import io

    root = Path(APP).parent.parent / "sample_data" / "world" / "chronological"
    rows = []
    for split in ("train", "valid"):
        rows += list(csv.reader(io.StringIO((root / f"{split}.csv").read_text())))[1:]
    test = list(csv.reader(io.StringIO((root / "test.csv").read_text())))[1: 1 + masked]
    rows += [[s, r, "", t] if i % 2 == 0 else ["", r, o, t] for i, (s, r, o, t) in enumerate(test)]
    buf = io.StringIO()
    csv.writer(buf).writerows([["subject", "relation", "object", "time"]] + rows)
    return buf.getvalue().encode()


@pytest.mark.slow
def test_upload_completes_incomplete_rows_with_a_reviewed_model(workspace):
    from tpar.data.loading import load_dataset

    at = AppTest.from_file(APP, default_timeout=180).run()
    upload(at, gappy_sample_world(20), "gappy.csv")
    assert not at.exception and not at.error
    assert any("Incomplete rows" in h.value for h in at.subheader)
    assert any("20** rows lack an entity: 10 their subject, 10 their object." in m.value for m in at.markdown)
    assert at.selectbox(key="upload_complete_model").value.startswith("sample-world-unified")
    at.toggle(key="upload_complete_on").set_value(True).run()
    assert not at.exception
    # by default only the proposals above the threshold fitted on valid for 90% precision are ticked
    captions = " ".join(c.value for c in at.caption).replace("\\", "")
    fitted = re.search(r"p ≥ ([0-9.e-]+), fitted on ([\d,]+) valid questions for 90% precision", captions)
    assert fitted, captions
    table = next(d.value for d in at.dataframe if "accept" in d.value.columns)
    p_min = float(fitted.group(1))
    assert all(ok == (p / 100 >= p_min) or abs(p / 100 - p_min) < 1e-3  # the table rounds to 0.01%
               for ok, p in zip(table["accept"], table["probability %"]))
    # these rows lie past the training facts (the only evidence an upload's completion may use): near-uniform
    # guesses (~1/280), which the old default (accept above 80%, or everything at 0) would have let through
    assert table["probability %"].max() / 100 < p_min and not table["accept"].any()
    assert all("below the threshold" in h for h in table["how sure"])
    at.selectbox(key="upload_complete_precision").set_value("all").run()  # accept every proposal
    captions = " ".join(c.value for c in at.caption)
    m = re.search(r"(\d+) of (\d+) proposals accepted", captions)
    # 12 of the 20: past the training facts, the only entity above the others was often the row's own (its self-loop),
    # which is never proposed (new-user walk 38): those rows have no evidence and no proposal
    assert m and m.group(1) == m.group(2) and int(m.group(2)) >= 10, captions
    at.text_input(key="upload_name").set_value("gappy").run()
    at.button(key="upload_save").click().run()
    assert not at.exception and any(f"{m.group(2)} of them inferred" in s.value for s in at.success)
    kg = load_dataset(workspace / "upload_dir" / "gappy")
    assert len(kg.inferred) == int(m.group(2))
    assert all(kg.is_inferred(*f) for f in kg.inferred) and not any(
        kg.is_inferred(*f) for s in ("valid", "test") for f in kg.facts(s).tolist())
    # the timeline marks them
    s = next(iter(kg.inferred))[0]
    at.session_state["subject"] = kg.entities.name(s)
    at.switch_page("views/timeline.py").run()
    assert not at.exception
    assert any("inferred by a model (completed), not observed" in i.value for i in at.info)


@pytest.mark.slow
def test_the_incomplete_rows_round_trip_adds_the_proposals_to_the_saved_data_set(workspace):
    """Save the complete rows, upload the same file again: its complete rows are that data set, so accepted
    proposals join it in place as a growth step of its lineage (walk-through 36 F3: the round trip made a second
    data set, and the models trained on the first no longer matched)."""
    from tpar.data.loading import load_dataset

    at = AppTest.from_file(APP, default_timeout=180).run()
    upload(at, gappy_sample_world(6), "gappy.csv")
    at.text_input(key="upload_name").set_value("gappy").run()
    at.button(key="upload_save").click().run()  # no proposal asked for: the complete rows only
    assert not at.exception and any("Saved as data set" in s.value for s in at.success)
    first = load_dataset(workspace / "upload_dir" / "gappy")
    assert not first.inferred
    at = AppTest.from_file(APP, default_timeout=180).run()
    upload(at, gappy_sample_world(6), "gappy.csv")
    assert not at.exception and not at.error
    said = " ".join(i.value for i in at.info).replace("\\", "").replace("\u2060", "")
    assert "complete rows are the data set 'upload: gappy'" in said, said
    assert not [b for b in at.button if b.key == "upload_save"]  # no second data set is offered
    at.toggle(key="upload_complete_on").set_value(True).run()
    at.selectbox(key="upload_complete_precision").set_value("all").run()  # accept every proposal
    n = int(re.search(r"(\d+) of (\d+) proposals accepted", " ".join(c.value for c in at.caption)).group(1))
    assert n >= 4
    at.button(key="upload_add_completions").click().run()
    assert not at.exception and not at.error and any("inferred fact" in s.value for s in at.success)
    grown = load_dataset(workspace / "upload_dir" / "gappy")
    assert len(grown.inferred) == n and sorted(p.name for p in (workspace / "upload_dir").iterdir()) == ["gappy"]
    assert grown.lineage and grown.lineage[-1]["base_fingerprint"] == first.fingerprint  # models trained on it match
    assert grown.lineage[-1]["added"] == {"train": n}
    assert {tuple(f) for f in first.all_facts().tolist()} <= {tuple(f) for f in grown.all_facts().tolist()}
    assert all(grown.is_inferred(*f) for f in grown.inferred)


def test_upload_asks_for_the_date_order_and_confirms_a_lossy_save(workspace):
    """A ';' export with DD/MM dates that never show their order: the page names its date control; chosen, the
    file reads, and with over 5% of rows unreadable Save waits for a confirmation that counts them and says why."""
    rows = tiny_world_csv(days=12).strip().splitlines()[1:]  # days 1..12 of January: no day over 12
    dated = [";".join(r.split(",")[:3] + ["/".join(reversed(r.split(",")[3].split("-")))]) for r in rows]
    text = "\ufeffActor;Event;Target;Date\n" + "\n".join(dated + ["P0;meets;P1;soon", "P1;calls"]) + "\n"
    at = AppTest.from_file(APP, default_timeout=120).run()
    upload(at, text.encode(), "export.csv")
    assert not at.exception and "Dates like 03/04/2024" in errors(at)
    at.selectbox(key="upload_day_first").set_value("day").run()
    assert not at.exception and not at.error
    assert {m.label: m.value for m in at.metric}["Facts kept"] == str(len(rows))
    said = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "2 of 26 rows (7.7%) are not in the data set" in said and "expected 4 columns, found 2" in said
    at.text_input(key="upload_name").set_value("export").run()
    assert at.button(key="upload_save").disabled
    box = next(c for c in at.checkbox if c.label == "Save without these 2 rows")
    box.check().run()
    assert not at.button(key="upload_save").disabled
    at.button(key="upload_save").click().run()
    assert not at.exception and any("Saved as data set" in s.value for s in at.success)
    from tpar.data.loading import load_dataset

    kg = load_dataset(workspace / "upload_dir" / "export")
    assert kg.time_axis.label(int(kg.all_facts()[:, 3].max())) == "2024-01-12"  # read day first


@pytest.mark.slow
def test_upload_offers_a_model_whose_relations_cover_the_incomplete_rows(workspace):
    """A batch with a relation the shipped model never saw: the model is still offered for the rows whose
    relations it knows, and says that the other relation's facts are no evidence to it (issue #33)."""
    extra = "\n".join(f"Port {i},Fines,Harbor Express,2025-0{1 + i}-01" for i in range(5)) + "\n"
    at = AppTest.from_file(APP, default_timeout=180).run()
    upload(at, gappy_sample_world(6) + extra.encode(), "gappy-plus.csv")
    assert not at.exception and not at.error
    assert at.selectbox(key="upload_complete_model").value.startswith("sample-world-unified")
    assert any("facts of the others are no evidence to it" in c.value and c.value.startswith("This model knows ")
               for c in at.caption)  # "This model it knows" before (walk-through 37)
    at.toggle(key="upload_complete_on").set_value(True).run()
    assert not at.exception and not at.error
    table = next(d.value for d in at.dataframe if "accept" in d.value.columns)
    assert 1 <= len(table) <= 6 and "Fines" not in set(table["relation"])  # rows with no evidence get no proposal


@pytest.mark.slow
def test_a_model_left_out_for_its_time_unit_is_named_not_said_to_be_missing(workspace):
    """One date-time row reads the whole file in hours; the sample model (of days) knows every relation of the
    incomplete rows but counts time in days: the page says so and how to read the file as dates, instead of 'no
    model here knows every relation ... train one' (walk-through 37 #5)."""
    at = AppTest.from_file(APP, default_timeout=180).run()
    upload(at, gappy_sample_world(4) + b"Arovia,Accuse,Pelia,2025-03-05T10:00:00\n", "hours.csv")
    assert not at.exception and not at.error
    said = re.sub(r"\\(.)", r"\1", " ".join(i.value for i in at.info)).replace("\u2060", "")
    assert "('sample-world-unified') count time in another unit" in said and "No model here knows" not in said, said
    assert not [s for s in at.selectbox if s.key == "upload_complete_model"]


def test_a_cancelled_run_is_offered_only_as_unfinished(workspace):
    """A job cancelled after 0.1 epoch (never validated): the Train page offers its model only with the
    warning, and the model lists, Data and model and Ask all say UNFINISHED."""
    from helpers import SAMPLE_WORLD
    from tpar.data.loading import load_dataset

    kg = load_dataset(SAMPLE_WORLD)
    out = untrained_model(kg, workspace / "runs_dir" / "cut.tpar", epochs=4,
                          extra={"stopped": "cancelled", "best_epoch": -1, "epochs_trained": 0.1})
    job = workspace / "jobs_dir" / "20260101-000000-cccccc"
    job.mkdir(parents=True)
    (job / "spec.json").write_text(json.dumps({"data": str(SAMPLE_WORLD), "setting": "unified", "run": {"train": {"epochs": 4}},
                                              "out": str(out), "name": "cut", "data_label": "sample world (chronological)"}))
    (job / "events.jsonl").write_text(
        json.dumps({"type": "start", "time": 1.0}) + "\n"
        + json.dumps({"type": "cancelled", "time": 9.0, "checkpoint": str(out), "seconds": 8.0,
                      "message": "cancelled: the model so far was saved"}) + "\n")
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("views/train.py").run()
    assert not at.exception and not at.success
    warned = shown(at)
    assert "an UNFINISHED model (cancelled after 0.1 of 4 epochs, never validated (best epoch -1))" in warned
    said = " ".join(c.value for c in at.caption)  # the reason no test figures are shown (walk-through 39)
    assert "Not evaluated on the test split (the run stopped before its end, and only a finished run is tested)" in said
    label = at.selectbox(key="w_job")
    assert label.format_func(label.value).endswith("cancelled, UNFINISHED")
    use = at.button(key="use-20260101-000000-cccccc")
    assert use.label == "Use this unfinished model in Ask"
    use.click().run()
    assert not at.exception and at.session_state["model"] == "cut"
    assert "Model 'cut' is UNFINISHED (cancelled after 0.1 of 4 epochs" in shown(at)
    assert at.dataframe  # it still answers, under the warning
    for page in ("views/data_model.py", "views/evaluate.py"):
        at.switch_page(page).run()
        box = at.selectbox(key="w_model")
        said = box.format_func("cut")
        assert said.startswith("cut — UNFINISHED") and "cancelled after 0.1 of 4 epochs" in said, page
        assert "UNFINISHED" not in box.format_func("sample-world-unified"), page


def test_a_run_cancelled_while_testing_is_a_finished_model_whose_missing_test_figures_are_explained(workspace):
    """Cancel while calibrating or testing stops that pass (the job's event names the phase): the model finished
    training, so the page offers it without the UNFINISHED warning, says what the cancel cut, and says why no test
    figures are shown."""
    from helpers import SAMPLE_WORLD
    from tpar.data.loading import load_dataset
    from tpar.training.trainer import cut_text

    kg = load_dataset(SAMPLE_WORLD)
    out = untrained_model(
        kg, workspace / "runs_dir" / "untested.tpar", epochs=2,
        history=[{"epoch": 1, "loss": 3.0, "valid_mrr": 0.2}, {"epoch": 2, "loss": 2.0, "valid_mrr": 0.3}],
        extra={"stopped": "completed", "best_epoch": 2, "epochs_trained": 2.0, "cut": "evaluating on test"})
    job = workspace / "jobs_dir" / "20260101-000000-dddddd"
    job.mkdir(parents=True)
    (job / "spec.json").write_text(json.dumps({"data": str(SAMPLE_WORLD), "setting": "unified",
                                              "run": {"train": {"epochs": 2}}, "out": str(out), "name": "untested",
                                              "data_label": "sample world (chronological)"}))
    (job / "events.jsonl").write_text(
        json.dumps({"type": "start", "time": 1.0}) + "\n"
        + json.dumps({"type": "cancelled", "time": 9.0, "checkpoint": str(out), "seconds": 8.0,
                      "cut": "evaluating on test", "message": cut_text("evaluating on test")}) + "\n")
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("views/train.py").run()
    assert not at.exception
    text = shown(at)
    assert "UNFINISHED" not in text and at.success and "Saved" in at.success[0].value
    assert "Cancelled while evaluating on test: the model it chose is saved without test figures" in \
        " ".join(i.value for i in at.info).replace("\\", "")
    said = " ".join(c.value for c in at.caption)
    assert "Not evaluated on the test split (the run was cancelled while evaluating on test)" in said
    assert at.button(key="use-20260101-000000-dddddd").label == "Use this model in Ask"
    label = at.selectbox(key="w_job")  # the job list says the same as the panel (review 40: "cancelled, UNFINISHED")
    assert label.format_func(label.value).endswith("; 20260101-000000-dddddd) — trained; test cancelled")


def test_the_training_form_takes_the_new_data_sets_defaults_when_the_data_set_changes_on_its_page():
    """Switching the data set on the Train page itself (the browser sends the form's last values with that rerun)
    gives the form the new data set's defaults, as its caption says -- it kept the sample world's epochs."""
    at = AppTest.from_file(APP, default_timeout=120).run()
    upload(at, tiny_world_csv().encode())
    at.text_input(key="upload_name").set_value("tiny").run()
    at.button(key="upload_save").click().run()
    at.switch_page("views/train.py").run()
    at.selectbox(key="w_data").select("sample: world/chronological").run()
    sample_epochs = at.number_input(key="train_epochs").value
    small = defaults_for_size(120).run  # the upload's 120 facts: a small data set
    assert sample_epochs != small.train.epochs  # else the test could not tell the two apart
    at.selectbox(key="w_data").select("upload: tiny").run()
    assert not at.exception
    assert at.number_input(key="train_epochs").value == small.train.epochs
    assert at.number_input(key="train_per_epoch").value == min(small.train.max_train_queries, 2 * 120)
    assert at.slider(key="train_layers").value == small.model.num_layers
    assert f"up to {small.train.epochs} epochs" in " ".join(c.value for c in at.caption)


@pytest.mark.parametrize("late", ["9999-12-31", "9999-12-20", "2300-06-01"])
def test_a_fact_at_the_end_of_the_calendar_breaks_no_page(late):
    """A data set whose last fact lies at (or near) 9999-12-31, where one step more has no date, or past the
    dates pandas can draw (2262): Ask opens on a question the calendar can hold, and the Timeline counts steps
    and says why (an audit saw an internal error on Ask, and a blank timeline)."""
    at = AppTest.from_file(APP, default_timeout=120).run()
    text = tiny_world_csv(extra=f"P0,meets,P3,{late}\n").replace(",meets,", ",Meet,").replace(",calls,", ",Consult,")
    upload(at, text.encode())  # the sample world's relations: its model answers (zero-shot)
    at.checkbox(key="upload_exclude_outliers").uncheck().run()  # the late fact is kept, as the user asks
    at.text_input(key="upload_name").set_value("far").run()
    at.button(key="upload_save").click().run()
    assert not at.exception and at.session_state["data"] == "upload: far"
    at.switch_page("views/ask.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state["time"] <= "9999-12-31"
    at.session_state["subject"] = "P0"
    at.switch_page("views/timeline.py").run()
    assert not at.exception and not at.error
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert sum(len(t["y"]) for t in spec["data"] if t.get("name")) == len([1 for line in tiny_world_csv().splitlines()
                                                                           if "P0," in line]) + 1  # every fact drawn
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    # Plotly's date axis ends at 9999 (with its margins it would pass it): there the chart counts steps, and says so
    assert ("counts day steps" in said) == late.startswith("9999")
    xs = spec["data"][0]["x"]  # dates travel as ISO strings, steps as a typed array
    assert (isinstance(xs, list) and isinstance(xs[0], str)) != late.startswith("9999")


def test_choosing_another_data_set_starts_from_its_own_question_quietly(workspace):
    """A question asked of one data set is not carried to another (its entities, relation and time may not exist
    there): the next page asks the new data set's default question, with no warning blaming the user, and going
    back asks the first data set's own question again (walk-through: three warnings, then no answers)."""
    from tpar.data.upload import inspect_upload, save_dataset

    _, kg = inspect_upload(tiny_world_csv(), "ring.csv")
    save_dataset(kg, workspace / "upload_dir", "ring")
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"subject": "Orora Front", "relation": "Mobilize against", "time": "2025-12-20"})
    at.run()
    assert at.session_state["subject"] == "Orora Front" and not at.warning
    at.switch_page("views/data_model.py").run()
    at.selectbox(key="w_data").set_value("upload: ring").run()
    at.switch_page("views/timeline.py").run()  # no model fits this data set yet: the timeline needs none
    assert not at.exception and not at.error and not at.warning
    assert "time" not in at.session_state or at.session_state["time"] != "2025-12-20"  # the old question is gone
    at.switch_page("views/data_model.py").run()
    at.selectbox(key="w_data").set_value("sample: world/chronological").run()
    at.switch_page("views/ask.py").run()
    assert not at.exception and not at.error and not at.warning
    assert len(at.dataframe) and len(at.dataframe[0].value)  # answers, not a wall of warnings


def test_a_trained_model_that_does_not_beat_the_frequency_baseline_is_told_so_on_the_train_page(workspace, tmp_path,
                                                                                              capsys):
    """The Train page shows a finished run's test figures with the verdict `tpar train --eval-test` prints: on a
    deterministic ring the frequency baseline is perfect, so a model of one epoch does not beat it (walk-through:
    the page showed the figures and 'Use this model in Ask' only)."""
    import explorer

    from tpar.cli import main

    data = tmp_path / "ring.csv"
    data.write_text(tiny_world_csv(days=60))
    explorer.RUNS_DIR.mkdir(parents=True, exist_ok=True)
    out = explorer.RUNS_DIR / "ring-x.tpar"
    assert main(["train", "--data", str(data), "--setting", "extrapolation", "--out", str(out), "--quiet",
                 "--threads", "1", "--epochs", "1", "--eval-test"]) == 0
    printed = capsys.readouterr().out  # the CLI says what limits the test figures too: 6 entities, 24 questions
    assert "note: extrapolation: with 6 entities, a uniform guess already scores" in printed
    assert "note: extrapolation: measured on only 24 questions" in printed
    explorer.checkpoints.clear()

    def page(path: str) -> None:
        from views.train import tested_figures_ui

        tested_figures_ui(path)

    at = AppTest.from_function(page, args=(str(out),), default_timeout=120).run()
    assert not at.exception
    said = " ".join(w.value for w in at.warning)
    assert "Extrapolation: this model does not beat the frequency baseline" in said and "against 100.00%" in said


def test_names_apart_only_by_an_accent_are_warned_about_on_upload(workspace):
    """Walk-through 36: the report said "19 entities" for 18 actors and nothing else; the look-alike group now comes
    as a warning naming both spellings with their row counts, not only inside a folded expander."""
    at = AppTest.from_file(APP, default_timeout=120).run()
    rows = tiny_world_csv().strip().splitlines()
    extra = [f"Zoë Halvorsen,meets,P{i},2024-01-{i + 10:02d}" for i in range(4)] + ["Zoe Halvorsen,meets,P1,2024-01-20"]
    upload(at, ("\n".join(rows + extra) + "\n").encode())
    assert not at.exception and not at.error
    said = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "'Zoe Halvorsen' (1 row) and 'Zoë Halvorsen' (4 rows) look alike" in said, said


@pytest.mark.slow
def test_the_train_page_counts_the_data_sets_own_relations_and_facts_not_the_selected_models_view(workspace):
    """An upload with a relation the selected (sample) model never saw: the Train page's figures are the data set's
    own -- every relation, every test fact -- not the data as that model reads it (walk-through 37: "20 relations,
    test 15" for data of 19 relations and 17 test facts)."""
    from tpar.data.loading import load_dataset

    extra = "\n".join(f"Port {i},Fines,Harbor Express,2025-12-{20 + i}" for i in range(5)) + "\n"
    at = AppTest.from_file(APP, default_timeout=180).run()
    upload(at, gappy_sample_world(0) + extra.encode(), "plus.csv")
    at.text_input(key="upload_name").set_value("plus").run()
    at.button(key="upload_save").click().run()
    assert not at.exception and any("Saved as data set" in s.value for s in at.success)
    kg = load_dataset(workspace / "upload_dir" / "plus")
    assert len(kg.facts("test")) and "Fines" in kg.relations.names
    at.switch_page("views/train.py").run()
    assert not at.exception
    said = " ".join(c.value for c in at.caption).replace("\\", "")
    figures = (f"{kg.num_entities:,} entities, {kg.num_relations:,} relations, {len(kg.facts('train')):,} training "
               f"facts; valid {len(kg.facts('valid')):,}, test {len(kg.facts('test')):,}.")
    assert figures in said, said


def test_a_model_file_that_cannot_be_loaded_is_named_where_the_model_would_be(workspace):
    """A workspace model whose file is there but unreadable (truncated, from a newer tpar) is named with why on the
    Data and model page, and a link naming it says it cannot be loaded, not that it does not exist (audit 38 #1)."""
    from helpers import SAMPLE_CHECKPOINT

    runs = workspace / "runs_dir"
    runs.mkdir(parents=True)
    (runs / "broken.tpar").write_bytes(SAMPLE_CHECKPOINT.read_bytes()[:9000])
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["model"] = "broken"
    at.run()
    said = " ".join(w.value for w in at.warning).replace("\\", "")
    assert not at.exception and "Model 'broken' cannot be loaded" in said and "broken.tpar" in said, said
    assert "not a readable checkpoint" in said and "not available" not in said
    assert at.query_params["model"] == "sample-world-unified"  # the data set's own model is served meanwhile
    at.switch_page("views/data_model.py").run()
    said = " ".join(w.value for w in at.warning).replace("\\", "")
    assert not at.exception and "1 model file here could not be loaded, so it is not offered" in said, said
    assert "broken.tpar" in said


def _two_relations_csv() -> str:
    """'meets' repeats one pair (frequency gets it), 'visits' meets a new entity each day (frequency cannot)."""
    return "subject,relation,object,time\n" + "".join(f"A,meets,B,2024-02-{d:02d}\nC,visits,D{d},2024-02-{d:02d}\n"
                                                      for d in range(1, 29))


def test_evaluate_draws_a_uniform_guess_on_the_per_relation_chart_and_names_the_relations_below_it():
    """Walk-through 38 #4: 4 of 6 relations scored below a uniform guess and the chart had no line to show it; the
    headline's lead came from one relation."""
    def page(text: str) -> None:
        from views.evaluate import results_ui

        from tpar.data.upload import inspect_upload
        from tpar.evaluation.baselines import FrequencyBaseline
        from tpar.evaluation.protocol import evaluate

        _, kg = inspect_upload(text, "two.csv")
        res = evaluate(kg, FrequencyBaseline(), "extrapolation", "test", progress=False)
        results_ui({"TPAR": res}, "test", "extrapolation", 0, entities=kg.num_entities)

    at = AppTest.from_function(page, args=(_two_relations_csv(),), default_timeout=60).run()
    assert not at.exception, at.exception
    from tpar.evaluation.chance import uniform_mrr

    chance = 100 * uniform_mrr(31)  # A, B, C and D1..D28
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    lines = [s for s in spec["layout"]["shapes"] if s.get("type") == "line"]
    assert len(lines) == 1 and abs(lines[0]["y0"] - chance) < 1e-9
    said = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "TPAR scores below a uniform guess (MRR about 13.0%) on 1 of 2 relations (visits): 4 of the 8 " \
           "questions" in said, said


def test_a_time_axis_of_thousands_of_steps_is_a_list_to_type_into_not_a_slider(workspace):
    """YAGO11k's years run from -431 to 3171: on a 3,602-step slider a year could not be picked (835 arrow presses
    to reach one, scale audit 40). Past a few hundred steps the Time field is a searchable list; a short axis keeps
    its slider."""
    import random

    from tpar.data.upload import inspect_upload, save_dataset

    def dataset(name: str, lo: int, hi: int):
        rng = random.Random(0)
        rows = ["subject,relation,object,time"] + [
            f"P{i % 20},Meet,P{(i * 7 + 1) % 20},{lo if i == 0 else hi if i == 1 else rng.randint(lo, hi)}"
            for i in range(300)]
        _, kg = inspect_upload("\n".join(rows), f"{name}.csv")
        save_dataset(kg, workspace / "upload_dir", name)
        untrained_model(kg, workspace / "runs_dir" / f"{name}.tpar")

    dataset("years", -431, 3171)
    dataset("weeks", 0, 150)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("views/data_model.py").run()
    at.selectbox(key="w_data").select("upload: years").run()
    at.switch_page("views/ask.py").run()
    assert not at.exception
    time_box = at.selectbox(key="w_time")
    assert len(time_box.options) > 3_602 and "2010" in time_box.options and "Type to search" in time_box.help
    from streamlit.proto.Selectbox_pb2 import Selectbox

    modes = Selectbox.DESCRIPTOR.fields_by_name["filter_mode"].enum_type.values_by_name
    assert time_box.proto.filter_mode == modes["FILTER_MODE_PREFIX"].number  # "201" lists 201, 2010..2019
    time_box.select("2010").run()
    assert not at.exception and at.session_state["time"] == "2010"
    assert "2010" in shown(at) and at.dataframe  # the question at the year picked is answered
    at.switch_page("views/data_model.py").run()
    at.selectbox(key="w_data").select("upload: weeks").run()  # a short axis keeps its slider
    at.switch_page("views/ask.py").run()
    assert not at.exception and at.select_slider(key="w_time") is not None


@pytest.mark.parametrize("setting", ["interpolation", "extrapolation"])
def test_ask_opens_on_a_question_in_the_models_setting(workspace, setting):
    """Interpolation-only benchmarks opened on a forecast after the data, outside their model's setting, with its
    warnings first (scale audit 40): Ask now opens on a gap inside the data for such a model, and on a forecast for
    an extrapolation model, with no setting warning either way."""
    from tpar.data.upload import inspect_upload, save_dataset

    _, kg = inspect_upload(tiny_world_csv(), "ring.csv")
    save_dataset(kg, workspace / "upload_dir", "ring")
    untrained_model(kg, workspace / "runs_dir" / "ring.tpar", setting)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("views/data_model.py").run()
    at.selectbox(key="w_data").select("upload: ring").run()
    at.switch_page("views/ask.py").run()
    assert not at.exception
    t = kg.time_axis.parse(at.session_state["time"])
    inside = kg.time_range[0] < t < kg.time_range[1]
    assert inside == (setting == "interpolation") and (t > kg.time_range[1]) == (setting == "extrapolation")
    assert "outside its training setting" not in shown(at)
