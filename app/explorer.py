"""State shared by the explorer's pages: the chosen data set and checkpoint, the current question,
cached resources, and the URL that mirrors the question. Calls the ``tpar`` API only.

The question lives in ``st.session_state`` under plain keys (``subject``, ``relation``, ...);
widgets use ``w_``-prefixed copies so that values survive page switches (Streamlit forgets the
state of widgets that a page does not draw). :func:`sync_url` writes the question into the URL
query string; :func:`init_state` reads it back on a session's first run, so a URL can be shared.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from tpar.catalog import CHECKPOINT_DIR, DataSource, Match, find_checkpoints, find_datasets, matching_checkpoints
from tpar.data import TemporalKG
from tpar.errors import DataError
from tpar.explain import Explainer
from tpar.inference import Predictor
from tpar.readers import load_dataset

# the user's files: uploads, trained checkpoints, training jobs ($TPAR_WORKSPACE, default ./workspace)
WORKSPACE = Path(os.environ.get("TPAR_WORKSPACE") or Path(__file__).resolve().parent.parent / "workspace")
UPLOAD_DIR = WORKSPACE / "uploads"
RUNS_DIR = WORKSPACE / "checkpoints"
JOBS_DIR = WORKSPACE / "jobs"

# question keys mirrored in the URL, with defaults
URL_KEYS = ("data", "model", "subject", "relation", "direction", "time", "setting", "k", "answer", "paths")
DEFAULTS = {"direction": "object", "setting": "auto", "k": 10, "paths": 5}
INT_KEYS = {"k", "paths"}


def max_upload_mb() -> int:
    """The upload size limit (Streamlit's ``server.maxUploadSize``, in MB)."""
    return int(st.get_option("server.maxUploadSize"))


# -- cached resources --------------------------------------------------------------------------
@st.cache_resource(ttl=30, show_spinner=False)
def datasets() -> list[DataSource]:
    return find_datasets(extra_dirs=[("upload", UPLOAD_DIR)])


@st.cache_resource(ttl=30, show_spinner=False)
def checkpoints():
    """(shipped and user-trained checkpoints, problems with unreadable files)."""
    return find_checkpoints([CHECKPOINT_DIR, RUNS_DIR])


@st.cache_resource(show_spinner="Loading the data set…", max_entries=4)
def load_kg(path: str) -> TemporalKG:
    return load_dataset(path)


@st.cache_resource(show_spinner="Loading the model…", max_entries=4)
def explainer(data_path: str, checkpoint_path: str) -> Explainer:
    kg = load_kg(data_path)
    infos, _ = checkpoints()
    info = next(i for i in infos if str(i.path) == checkpoint_path)
    return Explainer(Predictor(info.checkpoint, kg, "auto"))


@st.cache_data(show_spinner=False, max_entries=512)
def ask(data_path: str, checkpoint_path: str, subject: str, relation: str, time: str, direction: str,
        setting: str, k: int) -> dict:
    return explainer(data_path, checkpoint_path).predictor.predict(
        subject, relation, time, direction=direction, setting=setting, top_k=k).to_dict()


@st.cache_data(show_spinner=False, max_entries=512)
def explain(data_path: str, checkpoint_path: str, subject: str, relation: str, time: str, direction: str,
            setting: str, answer: str, paths: int) -> dict:
    return explainer(data_path, checkpoint_path).explain(
        subject, relation, time, answer, direction=direction, setting=setting, num_paths=paths).to_dict()


# -- state and URL -------------------------------------------------------------------------------
def init_state() -> None:
    """On a session's first run, take the question from the URL (if any)."""
    ss = st.session_state
    if ss.get("_initialised"):
        return
    for key in URL_KEYS:
        if key in st.query_params:
            value = st.query_params[key]
            if key in INT_KEYS:
                try:
                    value = max(1, min(int(value), 100))
                except ValueError:
                    continue
            ss[key] = value
    for key, value in DEFAULTS.items():
        ss.setdefault(key, value)
    if "answer" in ss:  # the URL's answer belongs to the URL's question
        ss["answer_question"] = question_key()
    ss["_initialised"] = True


def question_key() -> tuple:
    ss = st.session_state
    return tuple(ss.get(k) for k in ("data", "subject", "relation", "time", "direction"))


def sync_url(keys: tuple[str, ...] = URL_KEYS) -> None:
    """Mirror the chosen keys of the question into the URL (others removed)."""
    ss = st.session_state
    want = {k: str(ss[k]) for k in keys if ss.get(k) not in (None, "")}
    if dict(st.query_params) != want:
        st.query_params.from_dict(want)


def bind(widget, label: str, key: str, *, to_widget=None, from_widget=None, **kwargs):
    """Draw ``widget`` bound to ``st.session_state[key]`` and return the value.

    The plain key is the truth (the URL and other pages set it); the widget's own ``w_`` key is
    set from it before drawing, and a change callback copies the user's edits back. Optional
    converters map between the stored value and the widget's value (e.g. ISO string <-> date)."""
    ss = st.session_state
    to_widget = to_widget or (lambda v: v)
    from_widget = from_widget or (lambda v: v)
    wkey = f"w_{key}"
    if key in ss:
        ss[wkey] = to_widget(ss[key])

    def copy_back() -> None:
        ss[key] = from_widget(ss[wkey])

    value = widget(label, key=wkey, on_change=copy_back, **kwargs)
    if key not in ss:
        ss[key] = from_widget(value)
    return ss[key]


@dataclass
class Selection:
    source: DataSource
    kg: TemporalKG
    match: Match | None
    matches: list[Match]

    @property
    def data_path(self) -> str:
        return str(self.source.path)

    @property
    def checkpoint_path(self) -> str:
        return str(self.match.info.path) if self.match else ""

    def explainer(self) -> Explainer:
        return explainer(self.data_path, self.checkpoint_path)


def selection(show_errors: bool = True) -> Selection | None:
    """The chosen data set and checkpoint (defaults: the sample world and its model); ``None`` with
    a message in the page when nothing usable is there."""
    ss = st.session_state
    sources = datasets()
    if not sources:
        if show_errors:
            st.error("No data set found: the embedded sample data is missing from `sample_data/`.")
        return None
    by_label = {s.label: s for s in sources}
    if ss.get("data") not in by_label:
        if ss.get("data") and show_errors:
            st.warning(f"Data set {ss['data']!r} is not available here; showing {sources[0].label!r}.")
        ss["data"] = sources[0].label
    source = by_label[ss["data"]]
    try:
        kg = load_kg(str(source.path))
    except DataError as e:
        if show_errors:
            st.error(f"Cannot read data set {source.label!r}: {e}")
        return None
    infos, _ = checkpoints()
    matches = matching_checkpoints(kg, infos)
    names = [m.info.name for m in matches]
    if ss.get("model") not in names:
        ss["model"] = names[0] if names else None
    match = next((m for m in matches if m.info.name == ss["model"]), None)
    return Selection(source, kg, match, matches)


def require_model(sel: Selection | None) -> Selection:
    if sel is None:
        st.stop()
    if sel.match is None:
        st.error(f"No checkpoint here fits data set {sel.source.label!r} (a model must be trained on the same "
                 "relations and time unit). Train one with `tpar train`, or pick another data set on the "
                 "Data and model page.")
        st.page_link("views/data_model.py", label="Data and model", icon=":material/database:")
        st.stop()
    return sel


def question_ready() -> bool:
    ss = st.session_state
    return all(ss.get(k) for k in ("subject", "relation", "time"))


def question_text(subject: str, relation: str, time: str, direction: str) -> str:
    return f"({subject}, {relation}, ?, {time})" if direction == "object" else f"(?, {relation}, {subject}, {time})"


def time_to_date(kg: TemporalKG, label: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(label[:10]) if kg.time_axis.granularity == "day" else None
    except ValueError:
        return None
