"""Train: start a background training job on any available data set, follow it live, cancel it.

Jobs run in their own processes (``tpar.runtime.jobs``) and report through files under
``workspace/jobs``: the page can be reloaded, other pages stay usable, and two browser sessions
training at once each get their own job and output file.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots
import streamlit as st

import explorer as ex
import palette
from tpar.data.kg import TemporalKG
from tpar.model.config import RunConfig, apply_propagation
from tpar.model.registry import CheckpointInfo
from tpar.training.defaults import TrainingDefaults, defaults_for_size
from tpar.errors import DataError
from tpar.data.names import NAME_RULE, is_valid_name, suggest_name
from tpar.training.timing import FINISH_PHASES, TrainingEstimate, about, duration, time_left
from tpar.training.estimate import estimate_training
from tpar.evaluation.baselines import ahead_text, frequency_comparison
from tpar.evaluation.chance import chance_text, figure_caveats, measured_count, test_figures
from tpar.runtime.jobs import JobSpec, JobStatus, TrainingJob, list_jobs, start_job
from tpar.training.snapshots import resume_path
from tpar.training.trainer import STOPPED_TEXT

#: the form's fields that take their default from the training-defaults policy (reset when the data set changes)
POLICY_FIELDS = ("train_layers", "train_dim", "train_epochs", "train_per_epoch", "train_lr", "train_window")


def render() -> None:
    st.title("Train a model")
    ss = st.session_state
    sel = ex.data_set_ui()
    kg = sel.data_kg  # the data set's own figures: a new model learns every relation, not the selected model's
    split_size = {s: len(kg.facts(s)) if s in kg.splits else 0 for s in ("train", "valid", "test")}
    st.caption(f"{kg.num_entities:,} entities, {kg.num_relations:,} relations, {split_size['train']:,} training facts; "
               f"valid {split_size['valid']:,}, test {split_size['test']:,}.")
    form = form_ui(sel.source.path.name, split_size["train"], kg.fingerprint)
    if form is not None:
        name, run, eval_test, action = form
        if action == "start" and (refusal := start_refusal(name)):  # said at once, before a run is timed
            st.warning(ex.md(refusal))
        else:
            estimate = estimate_ui(kg, run, eval_test and "test" in kg.splits)
            if action == "start" and estimate is not None:
                start_ui(sel, kg, name, run, eval_test, estimate)
    jobs = list_jobs(ex.JOBS_DIR)
    if not jobs:
        st.info("No training jobs yet.")
        st.stop()
    ids = [j.id for j in jobs]
    names = {j.id: j.status() for j in jobs}  # names and start times only: the state is drawn live below
    if ss.get("job") not in ids:  # a new session opens on the newest job that can be shown (walk-through 39)
        ss["job"] = next((i for i in ids if names[i].state != "broken"), ids[0])
    ex.keep_valid("job", ids)
    ex.bind(st.selectbox, "Job", "job", options=ids, format_func=lambda i: job_label(names[i]))
    follow(next(j for j in jobs if j.id == ss["job"]))
    ex.sync_url(("data",))


def form_ui(data_name: str, n_train: int, fingerprint: str = "") -> tuple[str, RunConfig, bool] | None:
    """The training form, its defaults from the policy shared with ``tpar train`` (tpar.training.defaults);
    on submit: (model name, run config, evaluate on test when done)."""
    ss = st.session_state
    policy: TrainingDefaults = defaults_for_size(n_train, ss.get("train_setting") or "unified")
    m, t = policy.run.model, policy.run.train
    defaults = dict(zip(POLICY_FIELDS, (m.num_layers, m.dim, t.epochs, min(t.max_train_queries, 2 * n_train), t.lr,
                                        m.history_window)))
    if ss.get("train_defaults_for") != fingerprint:  # another data set: its own defaults, not the last one's values
        # assigned, not popped: the browser sends the form's last values with the rerun that changed the data
        # set, and a popped key takes them back
        ss.update(defaults)
        ss["train_defaults_for"] = fingerprint
    for key, value in defaults.items():  # the widgets below read their values from here only
        ss.setdefault(key, value)
    lr_options = sorted({0.0005, 0.001, 0.002, 0.005, 0.01, t.lr})
    if ss["train_lr"] not in lr_options:
        ss["train_lr"] = t.lr
    st.caption(f"Defaults for a {policy.size} data set ({policy.reason}): L={m.num_layers}, d={m.dim}, "
               f"up to {ex.plural(t.epochs, 'epoch')}, validation on at most {t.max_valid_queries:,} questions per setting -- "
               "the same as `tpar train`.")
    # the suggested name follows the data set and setting until the user types one of their own (a model
    # trained on an upload must not keep the name suggested for the sample world)
    suggested = suggest_name(f"{data_name}-{ss.get('train_setting') or 'unified'}")  # within the name rule
    if not ss.get("train_name") or (suggested != ss.get("train_name_suggested")
                                     and ss.get("train_name") == ss.get("train_name_suggested")):
        ss["train_name"] = suggested
    ss["train_name_suggested"] = suggested
    if ss.pop("train_replace_used", False):  # a consent to replace serves one start, never a later one
        ss["train_replace"] = False
    # Enter in a field does not submit: a training run (and a replaced model) starts only by its button
    with st.form("train_form", enter_to_submit=False):
        c1, c2, c3 = st.columns(3)
        setting = c1.selectbox("Setting", ["unified", "extrapolation", "interpolation"], key="train_setting",
                               persist_state="session", help="unified: one model for both kinds of questions (recommended).")
        layers = c2.slider("Path length L (layers)", 1, 5, key="train_layers", persist_state="session")
        dim = c3.select_slider("Dimension d", [8, 16, 32, 64], key="train_dim", persist_state="session")
        c4, c5, c6 = st.columns(3)
        epochs = c4.number_input("Epochs (at most)", 1, 50, key="train_epochs", persist_state="session")
        per_epoch = c5.number_input("Training questions per epoch (0 = all)", 0, 1_000_000, step=1000,
                                    key="train_per_epoch", persist_state="session")
        lr = c6.select_slider("Learning rate", lr_options, key="train_lr", persist_state="session")
        c7, c8 = st.columns(2)
        propagation = c7.selectbox(
            "Propagation", ["sparse", "exact"], key="train_propagation", persist_state="session",
            format_func=lambda v: {"sparse": "sparse (default)", "exact": "exact"}[v],
            help="sparse: the first step walks every fact of the question's subject, later steps each entity's "
                 "24 links nearest the question's time, repeated facts once, and only from the 256 best-scoring "
                 "entities of each question -- five to six times cheaper to train, as accurate within a few "
                 "tenths of MRR on ICEWS14. exact: every link.")
        window = c8.number_input("History window (time steps, 0 = none)", 0, 100_000,
                                 key="train_window", persist_state="session",
                                 help="On top of the propagation above: only links within this many time steps of "
                                      "a question's time. Faster, forgets older evidence.")
        # a row of its own: a third of the form cut the suggested name at 820 px (walk-through 37)
        name = st.text_input("Model name", help="Saved as workspace/checkpoints/NAME.tpar", key="train_name",
                             persist_state="session")
        # one above the other: side by side, each label was cut at 820 px
        eval_test = st.checkbox("Evaluate on the test split when done", value=True, key="train_eval_test",
                                persist_state="session")
        st.checkbox("Replace an existing model of this name", key="train_replace",
                    help="Without it, a model name already in workspace/checkpoints is refused and the saved model kept.")
        b1, b2 = st.columns(2)
        submitted = b1.form_submit_button("Start training", type="primary")
        estimate = b2.form_submit_button("Estimate the time only")
    if not (submitted or estimate):
        return None
    if not is_valid_name(name or ""):
        st.error(f"Model name: {NAME_RULE}.")
        return None
    run = RunConfig.from_dict(policy.run.to_dict(), "training defaults")  # a fresh copy
    run.model.num_layers, run.model.dim = int(layers), int(dim)
    run.model = apply_propagation(run.model, setting, propagation)
    if int(window):
        run.model.history_window = int(window)
    run.train.setting, run.train.lr, run.train.epochs = setting, float(lr), int(epochs)
    run.train.max_train_queries = int(per_epoch)
    return name, run, eval_test, "start" if submitted else "estimate"


def estimate_ui(kg: TemporalKG, run: RunConfig, eval_test: bool):
    """Time a few training questions with this configuration and say how long the run should take
    (``eval_test``: the job will evaluate on test, i.e. asked for and the data has a test split)."""
    try:
        with st.spinner("Timing a few training questions…"):
            est = estimate_training(kg, run, eval_test=eval_test)
    except DataError as e:
        st.error(ex.md(e))
        return None
    finish = ""
    if est.finish_seconds:
        finish = (f", then {duration(est.finish_seconds)} to calibrate on valid"
                  + (" and evaluate on test" if eval_test else ""))
    total = time_left(est).seconds  # the same function prices the live time left once the run starts
    st.info(f"Estimated on this machine: {est.questions_per_epoch:,} training questions per epoch "
            f"({questions_note(len(kg.facts('train')), run)}) at "
            f"{1000 * est.seconds_per_question:.1f} ms each plus {duration(est.valid_seconds)} of validation: "
            f"**{about(est.epoch_seconds)} per epoch**; at most **{duration(total)}** in all "
            f"({ex.plural(est.epochs, 'epoch')}{finish}; plus a few seconds to start; early stopping "
            "may end sooner). Once it runs, the time left is this estimate refined by the pace the run measures, "
            "so other work on the machine shows up there.")
    return est


def questions_note(facts: int, run: RunConfig) -> str:
    """Where an epoch's training questions come from, for ``facts`` training facts (a new user read "340
    training questions" for 136 facts as a mistake)."""
    ways = f"{ex.plural(facts, 'training fact')}, each asked both ways"
    note = {"extrapolation": f"{ways}",
            "interpolation": f"{ways} unless drawn into the epoch's random background",
            "unified": f"{ways} for extrapolation, and again for interpolation unless drawn into the epoch's random "
                       "background"}.get(run.train.setting, ways)
    if run.train.max_train_queries:
        note += f"; at most {run.train.max_train_queries:,} of them"
    return note


def progress_time(s: JobStatus, now: float | None = None) -> str:
    """Time so far and time left, one number refined as the run goes (tpar.training.timing.time_left: the
    start's estimate, weighted against the pace measured so far), with the whole run's length it adds up to."""
    now = dt.datetime.now().timestamp() if now is None else now
    so_far = max(0.0, now - s.started) if s.started else s.seconds
    if s.state == "broken":
        return "nothing known of its progress"
    if s.finished:
        wall = f"{duration(s.ended - s.started)} in all, " if s.ended and s.started else ""
        return f"{wall}{duration(s.seconds)} of it optimiser steps"
    left = s.time_left(now)
    if left is None:
        return f"{duration(so_far)} so far"
    est = s.estimate()
    start = f"; estimated {duration(time_left(est).seconds)} at the start" if est else ""
    basis = "at the pace measured so far" if left.measured else "as estimated"
    return (f"{duration(so_far)} so far, {about(left.seconds)} left at most ({basis}; "
            f"{duration(so_far + left.seconds)} in all if every epoch runs{start})")


def job_label(s: JobStatus) -> str:
    started = (f"started {dt.datetime.fromtimestamp(s.started):%H:%M}" if s.started else
               "its files cannot be read" if s.state == "broken" else "starting")
    state = {"cancelled": " — cancelled" if s.kept else " — cancelled, UNFINISHED", "failed": " — failed",
             "broken": " — cannot be read"}.get(s.state, "")
    if s.state == "done" and s.message == "interrupted":  # stopped by SIGTERM (a shutdown): the CLI can resume it
        state = " — interrupted, UNFINISHED"
    if s.kept:
        state = f" — {'cancelled' if s.state == 'cancelled' else 'interrupted'}, the model there kept"
    if s.cut:  # cancelled after training ended: the model is whole, only its calibration or test was cut short
        state = " — trained; " + ("test" if s.cut == "evaluating on test" else "calibration") + " cancelled"
    return f"{s.name} ({started}; {s.id}){state}"


def saved_model(path: str) -> CheckpointInfo | None:
    """The listed checkpoint saved at ``path``, or ``None`` when it is not listed."""
    target = Path(path).resolve()
    return next((i for i in ex.checkpoints()[0] if i.path.resolve() == target), None)


def unfinished(path: str) -> str:
    """Why the model saved at ``path`` is unfinished ("" when it is not, or is not listed)."""
    info = saved_model(path)
    return info.checkpoint.unfinished() if info else ""


def tested_figures_ui(path: str, entities: int = 0) -> None:
    """The saved model's test figures, as its card records them (the job evaluates on test when asked): one row
    per setting, realistic ties, both directions, time-aware filter, with what the measures mean and what a uniform
    guess among the data's ``entities`` would score (0: not known); a line saying so when none were measured."""
    info = saved_model(path)
    tests = {k[len("test_"):]: v.get("realistic", {}) for k, v in (info.checkpoint.metrics if info else {}).items()
             if k.startswith("test_") and isinstance(v, dict)}
    if not tests:
        cut = info.checkpoint.extra.get("cut") if info else None
        why = ("the run stopped before its end, and only a finished run is tested" if info and
               info.checkpoint.unfinished() else f"the run was cancelled while {cut}" if cut in FINISH_PHASES else
               "not asked for, or the data set has none")
        st.caption(f"Not evaluated on the test split ({why}): the figures below are on valid, which chose the model.")
        return

    def pct(m: dict, key: str) -> float | None:
        v = m.get(key)
        return 100 * v if isinstance(v, (int, float)) and math.isfinite(v) else None

    st.markdown("**Test** (questions the run never trained or selected on; both directions, time-aware filter, "
                "realistic ties):")
    st.dataframe(pd.DataFrame([{"Setting": k, "MRR %": pct(m, "mrr"), "Hits@1 %": pct(m, "hits@1"),
                                "Hits@3 %": pct(m, "hits@3"), "Hits@10 %": pct(m, "hits@10"),
                                "Questions": measured_count(m)} for k, m in tests.items()]),
                 hide_index=True, width="stretch",  # the names the validation table and Evaluate use
                 column_config={**{c: st.column_config.NumberColumn(c, format="%.2f")
                                   for c in ("MRR %", "Hits@1 %", "Hits@3 %", "Hits@10 %")},
                                "Questions": st.column_config.NumberColumn("Questions", help="test questions, both "
                                                                           "directions of each test fact")})
    best, runs = info.checkpoint.extra.get("best_epoch"), len(info.checkpoint.history)
    if isinstance(best, int) and runs:
        st.caption(f"The model saved is the one after epoch {best} of the {ex.plural(runs, 'epoch')} run: the best "
                   "on valid MRR (the table below).")
    st.caption(measures_note(entities))
    for setting, m in test_figures(info.checkpoint.metrics).items():  # what limits these figures: a model that
        for caveat in figure_caveats(m, entities, "this model"):  # guesses, H@k all but free, few questions
            st.warning(ex.sentence(f"{setting}: {caveat}"))
    for setting, model, base in frequency_comparison(info.checkpoint.metrics, info.checkpoint.extra.get("baseline_test")):
        if model > base:
            st.caption(f"{setting.capitalize()}: the frequency baseline (each answer scored by how often it answered "
                       f"this question before) scores test MRR {100 * base:.2f}%; this model "
                       f"{ahead_text(model, base)}.")
        else:
            st.warning(f"{setting.capitalize()}: this model does not beat the frequency baseline (each answer scored "
                       f"by how often it answered this question before): test MRR {100 * model:.2f}% against "
                       f"{100 * base:.2f}% ({100 * (model - base):+.2f} points). On this data the answers repeat "
                       "earlier facts more than temporal paths explain them. If valid MRR was still rising when the "
                       "run ended (the chart below), train for more epochs; else read its answers with that in mind.")


def measures_note(entities: int) -> str:
    """What MRR and H@k mean, and (with the data's number of ``entities``) what a uniform guess scores."""
    text = ("MRR: the mean of 1 / the true answer's rank (100%: always first); H@k: how often the true answer is "
            "among the first k. Other answers true at the question's time do not count against the model (time-aware "
            "filter), and an answer tied with others takes the middle of their ranks (realistic ties).")
    if entities > 1:
        text += f" For scale, {chance_text(entities)} (a little more where the filter leaves fewer candidates)."
    return text


def own_running_job(out: Path) -> TrainingJob | None:
    """This session's job, when it is running and writes ``out``."""
    mine = next((j for j in list_jobs(ex.JOBS_DIR) if j.id == st.session_state.get("job")), None)
    return mine if mine is not None and not mine.status().finished and mine.spec().out == str(out) else None


def start_refusal(name: str) -> str:
    """Why a run named ``name`` may not start ("" when it may): a shipped checkpoint's name, or an existing model's
    without the form's "Replace" ticked."""
    if name in {i.name for i in ex.checkpoints()[0] if i.path.parent != ex.RUNS_DIR}:
        return f"{name!r} is the name of a shipped checkpoint; choose another name."
    out = ex.RUNS_DIR / f"{name}.tpar"
    if own_running_job(out) is not None:  # a repeated submit while it runs: start_ui says so, no refusal
        return ""
    if out.exists() and not st.session_state.get("train_replace"):
        return (f"A model named {name!r} exists and is kept: choose another name, or tick \"Replace an existing model "
                "of this name\" and start again.")
    if resume_path(out).exists() and not st.session_state.get("train_replace"):
        return (f"An interrupted run of {name!r} left its progress in {resume_path(out).name}, which a new run would "
                f"overwrite (`tpar train --out {out} --resume` continues it): choose another name, or tick \"Replace an "
                "existing model of this name\" and start again.")
    return ""


def start_ui(sel: ex.Selection, kg: TemporalKG, name: str, run: RunConfig, eval_test: bool,
             estimate: TrainingEstimate | None = None) -> None:
    """Start the job, once :func:`start_refusal` let it (an existing model is replaced only with the form's
    "Replace" ticked); ``estimate`` travels with it, the start of its live time left."""
    ss = st.session_state
    out = ex.RUNS_DIR / f"{name}.tpar"
    if own_running_job(out) is not None:
        # this session's own job on this output is running: a repeated submit (a second press, or the form's
        # trigger replayed by a rerun) must not read as a failure to start
        st.info(ex.md(f"Training {name!r} is already running (below)."))
    else:  # start_refusal was asked before the run was timed; start_job refuses an existing output unasked
        try:
            job = start_job(ex.JOBS_DIR, JobSpec(data=str(sel.source.path), setting=run.train.setting,
                                                 run=run.to_dict(), out=str(out), name=name,
                                                 data_label=sel.source.label,
                                                 eval_test=eval_test and "test" in kg.splits,
                                                 estimate=estimate.to_dict() if estimate else {},
                                                 replace=bool(ss.get("train_replace"))))
        except DataError as e:
            st.error(ex.md(e))
        else:
            ss["job"] = job.id
            ss["train_replace_used"] = True  # unticked on the next run
            st.success(ex.md(f"Training {name!r} started in the background."))


def follow(job: TrainingJob) -> None:
    """The job's panel: redrawn live every 1.5 s while the job runs, drawn once when it has finished.

    A finished job is drawn by the full page run, outside any polling fragment, so that its
    "Use this model in Ask" button navigates from a full run. Navigating from inside a ``run_every``
    fragment races the fragment's browser timer: a tick sent before the browser learns of the new
    page asks for a fragment rerun of the old page, which Streamlit runs after the new page and which
    leaves the new page blank (seen in CI; reproduced in 5 of 12 tries with a two-page app).
    """
    s = job.status()
    if s.finished:
        job_panel(job, s)
    else:
        follow_live(job)


@st.fragment(run_every=1.5)
def follow_live(job: TrainingJob) -> None:
    """The running job's panel, re-drawn every 1.5 s from its files; once the job has finished, one
    full page run draws it statically and the polling stops (the page run no longer creates this fragment)."""
    s = job.status()
    if s.finished:
        st.rerun(scope="app")
    job_panel(job, s)


def job_panel(job: TrainingJob, s: JobStatus) -> None:
    """The job's progress, live loss and validation MRR; a cancel button while it runs, a "use this
    model" button once done (drawn from ``s``, one status read, so a panel drawn as running never
    shows the finished job's buttons)."""
    ss = st.session_state
    job_id = job.id
    running = f"running, epoch {max(s.epoch, 1)} of at most {s.epochs}" + (f": {s.phase}…" if s.phase else "")
    label = {"starting": "starting…", "running": running,
             "done": f"finished ({STOPPED_TEXT.get(s.message, s.message)})", "cancelled": f"cancelled ({s.message})", "failed": f"failed: {s.message}",
             "broken": f"cannot be shown: {s.message}"}[s.state]
    if s.kept:  # the panel's message below says the rest
        label = f"{'cancelled' if s.state == 'cancelled' else 'interrupted'} before its first validation"
    st.progress(s.progress, text=ex.md(f"{s.name}: {label} — {progress_time(s)}"))
    trained_on = s.spec.get("data_label", "")
    if trained_on and trained_on != ss.get("data"):  # the form above may be on another data set (walk-through 38 #13)
        st.caption(ex.md(f"This job trains on {trained_on}, not on the data set chosen above ({ss.get('data')})."))
    if len(s.steps) >= 2 or s.epochs_done:  # one step is no curve (walk-through 39: a lone dot on odd axes)
        fig = make_subplots(specs=[[{"secondary_y": True}]])
        if s.steps:
            steps = pd.DataFrame(s.steps)
            x = steps["epoch"] + steps["batch"] / steps["batches"]
            # a batch's loss, sampled every few seconds: few samples are points, not a line that reads as a trend
            fig.add_trace(go.Scatter(x=x, y=steps["loss"], name="batch loss (sampled)",
                                     mode="lines" if len(steps) >= 20 else "markers",
                                     line={"color": palette.LOSS, "width": 1}, marker={"color": palette.LOSS, "size": 5},
                                     opacity=0.6))
        if s.entities > 1:  # the loss (Eq. 10) of scoring every entity alike
            fig.add_hline(y=math.log(s.entities), line={"dash": "dot", "color": palette.REFERENCE, "width": 1},
                          annotation_text=f"uniform guess (ln {s.entities:,})", annotation_position="bottom left")
        if s.epochs_done:
            ep = pd.DataFrame(s.epochs_done)
            if "loss" in ep:  # an epoch's mean: what the epoch table lists (a batch's loss alone is noisy)
                fig.add_trace(go.Scatter(x=ep["epoch"].tolist(), y=ep["loss"].tolist(), name="epoch's mean loss", mode="markers",
                                         marker={"color": palette.LOSS, "size": 9, "symbol": "diamond"},
                                         cliponaxis=False))
            if "valid_mrr" in ep:
                name = SELECTION_LABEL if len(setting_kinds(s.epochs_done)) > 1 else "valid MRR %"
                fig.add_trace(go.Scatter(x=ep["epoch"], y=100 * ep["valid_mrr"], name=name[0].lower() + name[1:],
                                         mode="lines+markers", line={"color": palette.METRIC}, cliponaxis=False),
                          secondary_y=True)
        fig.update_layout(height=320, margin=dict(l=10, r=10, t=40, b=10), xaxis_title="epoch",
                          legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0})  # above: clear of the axis title
        fig.update_yaxes(title_text="loss", secondary_y=False)
        fig.update_yaxes(title_text="valid MRR %", secondary_y=True, range=mrr_axis_range(s.epochs_done),
                         tickmode="auto", nticks=6, showgrid=False)  # its own round ticks (not the loss grid's)
        ex.show_chart(fig, key=f"chart-{job_id}")
    if not s.finished:
        if st.button("Cancel training", key=f"cancel-{job_id}"):
            try:
                job.cancel()
            except DataError as e:
                st.error(ex.md(e))
            else:
                st.info("Cancelling: the model is chosen; its calibration or test stops at the next batch, and the "
                        "model is saved without the figures that were not finished." if s.phase in FINISH_PHASES else
                        "Cancelling: the model so far will be saved (before the first validation, a model this run "
                        "was to replace is kept instead).")
    elif s.kept:
        st.info(ex.sentence(s.message + "; nothing of this run was saved over it"))
    else:
        if s.state == "done" or (s.state == "cancelled" and s.checkpoint):
            if job_id not in ss.setdefault("jobs_seen_finished", set()):
                ss["jobs_seen_finished"].add(job_id)
                ex.checkpoints.clear()  # once per finished job: the new model joins the lists
            model = s.spec.get("out", "")
            # a cancel while calibrating or testing (s.cut) came after training had finished: the model is whole
            why = unfinished(model) or ("cancelled" if s.state == "cancelled" and not s.cut else "")
            if why:  # offered only with the warning: its answers come from a model that did not finish training
                st.warning(ex.md(f"Saved {model}: an UNFINISHED model ({why}). Its answers and probabilities come "
                                 "from a model that did not finish training; every model list marks it so."))
            else:
                st.success(ex.md(f"Saved {model}."))
            if s.cut:
                st.info(ex.sentence(s.message))
            tested_figures_ui(model, s.entities)
            if st.button("Use this unfinished model in Ask" if why else "Use this model in Ask", key=f"use-{job_id}"):
                ss["data"] = s.spec.get("data_label") or ss.get("data")
                ss["model"] = job.spec().name or model
                st.switch_page("views/ask.py")
        if s.state == "failed":
            log = job.dir / "worker.log"
            if log.is_file():
                with st.expander("Worker log"):
                    st.code(log.read_text(encoding="utf-8", errors="replace")[-4000:], wrap_lines=True)
        if s.epochs_done:
            epochs_table(s.epochs_done)


#: a unified run's valid MRR, the mean of its two settings' (what selects the model and stops early)
SELECTION_LABEL = "Valid MRR % (mean of the settings: selects the model)"


def setting_kinds(epochs: list[dict]) -> set[str]:
    """The settings an epoch entry has a valid MRR for (``valid_<setting>_mrr``)."""
    return {k[len("valid_"):-len("_mrr")] for e in epochs for k in e if k.startswith("valid_") and k.endswith("_mrr")
            and k != "valid_mrr"}


def mrr_axis_range(epochs: list[dict]) -> list[float] | None:
    """The valid-MRR axis (%): the measured values with some room, never outside 0..100 (plotly pads a
    flat line, e.g. a perfect 100, to ticks above 100); ``None`` (automatic) before the first value."""
    values = [100 * float(e["valid_mrr"]) for e in epochs
              if isinstance(e.get("valid_mrr"), (int, float)) and math.isfinite(e["valid_mrr"])]
    if not values:
        return None
    lo, hi = min(values), max(values)
    pad = max(1.0, 0.15 * (hi - lo))
    return [max(0.0, lo - pad), min(100.0, hi + pad)]


def epochs_table(epochs: list[dict]) -> None:
    """Two narrow tables that fit an 820 px window: one row per finished epoch (loss, questions, time, the
    valid MRR that selects the model), then one row per epoch and setting (MRR and Hits in %)."""
    kinds = sorted(setting_kinds(epochs))
    rows = [{"Epoch": e.get("epoch"), "Loss": e.get("loss"), "Training questions": e.get("queries"),
             "Seconds": e.get("seconds"), "Valid MRR %": 100 * e["valid_mrr"] if "valid_mrr" in e else None}
            for e in epochs]
    mrr_help = ("Realistic MRR on the validation questions" + (", the mean of the settings'; it selects the model "
                "and stops the run early" if len(kinds) > 1 else "; it selects the model and stops the run early"))
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", column_config={
        "Loss": st.column_config.NumberColumn("Loss", format="%.3f"),
        "Training questions": st.column_config.NumberColumn("Questions", help="training questions in the epoch"),
        "Seconds": st.column_config.NumberColumn("Seconds", format="%.1f", help="the epoch's steps and validation"),
        "Valid MRR %": st.column_config.NumberColumn("Valid MRR %", format="%.2f", help=mrr_help)})
    per_setting = [{"Epoch": e.get("epoch"), "Setting": kind,
                    **{label: 100 * e[f"valid_{kind}_{metric}"] for metric, label in
                       (("mrr", "MRR %"), ("hits@1", "Hits@1 %"), ("hits@10", "Hits@10 %")) if f"valid_{kind}_{metric}" in e}}
                   for e in epochs for kind in kinds]
    if per_setting:
        st.caption("Validation per setting:")
        st.dataframe(pd.DataFrame(per_setting), hide_index=True, width="stretch", column_config={
            c: st.column_config.NumberColumn(c, format="%.2f") for c in ("MRR %", "Hits@1 %", "Hits@10 %")})


if __name__ == "__main__":  # run as a page by st.navigation (importable without side effects)
    render()
