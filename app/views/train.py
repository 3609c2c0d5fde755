"""Train: start a background training job on any available data set, follow it live, cancel it.

Jobs run in their own processes (``tpar.runtime.jobs``) and report through files under
``workspace/jobs``: the page can be reloaded, other pages stay usable, and two browser sessions
training at once each get their own job and output file.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots
import streamlit as st

import explorer as ex
from tpar.model.config import ModelConfig, RunConfig, TrainConfig
from tpar.errors import DataError
from tpar.data.names import NAME_RULE, is_valid_name
from tpar.runtime.jobs import JobSpec, list_jobs, start_job

st.title("Train a model")
ss = st.session_state
sel = ex.selection()
if sel is None:
    st.stop()
labels = [s.label for s in ex.datasets()]
ex.bind(st.selectbox, "Data set", "data", options=labels)
sel = ex.selection()
kg = sel.kg
n_train = len(kg.facts("train")) if "train" in kg.splits else 0
st.caption(f"{kg.num_entities:,} entities, {kg.num_relations:,} relations, {n_train:,} training facts; "
           f"valid {len(kg.facts('valid')) if 'valid' in kg.splits else 0:,}, "
           f"test {len(kg.facts('test')) if 'test' in kg.splits else 0:,}.")

with st.form("train_form"):
    c1, c2, c3 = st.columns(3)
    setting = c1.selectbox("Setting", ["unified", "extrapolation", "interpolation"], key="train_setting", persist_state="session",
                           help="unified: one model for both kinds of questions (recommended).")
    layers = c2.slider("Path length L (layers)", 1, 5, 3, key="train_layers", persist_state="session")
    dim = c3.select_slider("Dimension d", [8, 16, 32, 64], value=32, key="train_dim", persist_state="session")
    c4, c5, c6 = st.columns(3)
    epochs = c4.number_input("Epochs (at most)", 1, 50, 4, key="train_epochs", persist_state="session")
    per_epoch = c5.number_input("Training questions per epoch (0 = all)", 0, 1_000_000,
                                min(20_000, 2 * n_train), step=1000, key="train_per_epoch", persist_state="session")
    lr = c6.select_slider("Learning rate", [0.0005, 0.001, 0.002, 0.005, 0.01], value=0.002, key="train_lr", persist_state="session")
    default_name = f"{sel.source.path.name}-{setting}"
    name = st.text_input("Model name", value=default_name, help="Saved as workspace/checkpoints/NAME.tpar",
                         key="train_name", persist_state="session")
    eval_test = st.checkbox("Evaluate on the test split when done", value=True, key="train_eval_test", persist_state="session")
    submitted = st.form_submit_button("Start training", type="primary")

if submitted and not is_valid_name(name or ""):
    st.error(f"Model name: {NAME_RULE}.")
elif submitted:
    out = ex.RUNS_DIR / f"{name}.tpar"
    run = RunConfig(ModelConfig(dim=int(dim), attn_dim=5, num_layers=int(layers), dropout=0.2, activation="tanh"),
                    TrainConfig(setting=setting, lr=float(lr), batch_size=10, micro_batch=10, epochs=int(epochs),
                                patience=2, max_train_queries=int(per_epoch), max_valid_queries=1000,
                                checkpoint_every=120.0))
    shipped = {i.name for i in ex.checkpoints()[0] if i.path.parent != ex.RUNS_DIR}
    if name in shipped:
        st.error(ex.md(f"{name!r} is the name of a shipped checkpoint; choose another name."))
    elif out.exists() and not ss.get("confirm_overwrite") == str(out):
        ss["confirm_overwrite"] = str(out)
        st.warning(ex.md(f"A model named {name!r} exists; press Start again to replace it."))
    else:
        try:
            job = start_job(ex.JOBS_DIR, JobSpec(data=str(sel.source.path), setting=setting, run=run.to_dict(),
                                                 out=str(out), name=name, data_label=sel.source.label,
                                                 eval_test=eval_test and "test" in kg.splits))
        except DataError as e:
            st.error(ex.md(e))
        else:
            ss["job"] = job.id
            ss.pop("confirm_overwrite", None)
            st.success(ex.md(f"Training {name!r} started in the background."))

jobs = list_jobs(ex.JOBS_DIR)
if not jobs:
    st.info("No training jobs yet.")
    st.stop()
ids = [j.id for j in jobs]
if ss.get("job") not in ids:
    ss["job"] = ids[0]
status_of = {j.id: j.status() for j in jobs}
ex.bind(st.selectbox, "Job", "job", options=ids,
        format_func=lambda i: f"{status_of[i].name} — {status_of[i].state} ({i})")


@st.fragment(run_every=1.5)
def follow(job_id: str) -> None:
    job = next(j for j in list_jobs(ex.JOBS_DIR) if j.id == job_id)
    s = job.status()
    label = {"starting": "starting…", "running": f"epoch {s.epoch} of at most {s.epochs}",
             "done": f"finished ({s.message})", "cancelled": s.message, "failed": f"failed: {s.message}"}[s.state]
    st.progress(s.progress, text=ex.md(f"{s.name}: {label} — {s.seconds:.0f} s of training"))
    if s.steps or s.epochs_done:
        fig = make_subplots(specs=[[{"secondary_y": True}]])
        if s.steps:
            steps = pd.DataFrame(s.steps)
            x = steps["epoch"] + steps["batch"] / steps["batches"]
            fig.add_trace(go.Scatter(x=x, y=steps["loss"], name="loss", mode="lines", line={"color": "#577590"}))
        if s.epochs_done:
            ep = pd.DataFrame(s.epochs_done)
            if "valid_mrr" in ep:
                fig.add_trace(go.Scatter(x=ep["epoch"], y=100 * ep["valid_mrr"], name="valid MRR %",
                                         mode="lines+markers", line={"color": "#e76f51"}), secondary_y=True)
        fig.update_layout(height=300, margin=dict(l=10, r=10, t=30, b=10), xaxis_title="epoch",
                          legend={"orientation": "h"})
        fig.update_yaxes(title_text="loss", secondary_y=False)
        fig.update_yaxes(title_text="valid MRR %", secondary_y=True)
        st.plotly_chart(fig, config={"displaylogo": False}, key=f"chart-{job_id}")
    if not s.finished:
        if st.button("Cancel training", key=f"cancel-{job_id}"):
            job.cancel()
            st.info("Cancelling: the model so far will be saved.")
    else:
        if s.state == "done" or (s.state == "cancelled" and s.checkpoint):
            if job_id not in ss.setdefault("jobs_seen_finished", set()):
                ss["jobs_seen_finished"].add(job_id)
                ex.checkpoints.clear()  # once per finished job: the new model joins the lists
            model = s.spec.get("out", "")
            st.success(ex.md(f"Saved {model}."))
            if st.button("Use this model in Ask", key=f"use-{job_id}"):
                ss["data"] = s.spec.get("data_label") or ss.get("data")
                ss["model"] = job.spec().name or model
                st.switch_page("views/ask.py")
        if s.state == "failed":
            log = job.dir / "worker.log"
            if log.is_file():
                with st.expander("Worker log"):
                    st.code(log.read_text(encoding="utf-8", errors="replace")[-4000:])
        if s.epochs_done:
            st.dataframe(pd.DataFrame(s.epochs_done).drop(columns=["type", "time"], errors="ignore"), hide_index=True)


follow(ss["job"])
ex.sync_url(("data",))
