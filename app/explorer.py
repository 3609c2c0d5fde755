"""State shared by the explorer's pages: the chosen data set and checkpoint, the current question,
cached resources, and the URL that mirrors the question. Calls the ``tpar`` API only.

The question lives in ``st.session_state`` under plain keys (``subject``, ``relation``, ...);
widgets use ``w_``-prefixed copies so that values survive page switches (Streamlit forgets the
state of widgets that a page does not draw). :func:`sync_url` writes the question into the URL
query string; :func:`init_state` reads it back on a session's first run, so a URL can be shared.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import os
import re
from urllib.parse import urlparse
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from tpar.model.checkpoint import Checkpoint
from tpar.data.catalog import checkpoint_dir
from tpar.model.registry import CheckpointProblem, Match, find_checkpoints, matching_checkpoints
from tpar.data.catalog import DataSource, find_datasets
from tpar.data.kg import TemporalKG
from tpar.data.loading import load_dataset
from tpar.errors import DataError, markdown_text, plural  # noqa: F401  (ex.plural: the pages word counts as the library does)
from tpar.graph.queries import Question, check_question_time, default_question
from tpar.reasoning.explanation import Explainer, Explanation, ReasoningTrace
from tpar.reasoning.prediction import Prediction, Predictor

# the user's files: uploads, trained checkpoints, training jobs ($TPAR_WORKSPACE, default ./workspace)
WORKSPACE = Path(os.environ.get("TPAR_WORKSPACE") or Path(__file__).resolve().parent.parent / "workspace")
UPLOAD_DIR = WORKSPACE / "uploads"
RUNS_DIR = WORKSPACE / "checkpoints"
JOBS_DIR = WORKSPACE / "jobs"

# question keys mirrored in the URL, with defaults and allowed values
URL_KEYS = ("data", "model", "subject", "relation", "direction", "time", "setting", "k", "answer", "paths", "coverage",
            "importance")
DEFAULTS = {"direction": "object", "setting": "auto", "k": 10, "paths": 5, "coverage": "0.9", "importance": "integrated"}
INT_RANGES = {"k": (1, 50), "paths": (1, 10)}  # the widgets' ranges
CHOICES = {"direction": ("object", "subject"), "setting": ("auto", "extrapolation", "interpolation"),
           "importance": ("integrated", "gradient"),
           "coverage": ("off", "0.8", "0.9", "0.95")}
URL_ANSWER = "from the URL"
#: query parameters Streamlit itself reads (not the question's): never reported as ignored
STREAMLIT_PARAMS = ("embed", "embed_options")
#: evidence facts (largest share first) whose removal the Evidence page measures (a forward pass each)
MEASURED_FACTS = 5


def max_upload_mb() -> int:
    """The upload size limit (Streamlit's ``server.maxUploadSize``, in MB)."""
    return int(st.get_option("server.maxUploadSize"))


def md(text: object) -> str:
    """``text`` escaped for Streamlit markdown (names from uploads or URLs must never become links, images, LaTeX or
    formatting): :func:`tpar.errors.markdown_text`, the one escaping the library's model cards use too."""
    return markdown_text(text)


#: a hyphen the browser never breaks a line at (U+2011): dates and rule time windows wrapped at 820 px ("2025-12-" /
#: "18", "t-" / "40..-11")
NB_HYPHEN = "\u2011"
#: in Markdown-escaped text: an ISO date or month, or a rule's time window (t-3..-1, t+41..+∞)
_TIME_TOKEN = re.compile(r"\b[0-9]{4}\\-[0-9]{2}(?:\\-[0-9]{2})?\b|\bt\\[-+][0-9∞]+\\\.\\\.\\[-+][0-9∞]+")


def keep_together(escaped: str) -> str:
    """Markdown-escaped text (:func:`md`) whose dates and rule time windows never break at their hyphens: each
    escaped hyphen inside one becomes :data:`NB_HYPHEN` (shown the same; names and other text are left alone)."""
    return _TIME_TOKEN.sub(lambda m: m.group().replace("\\-", NB_HYPHEN), escaped)


def sentence(text: object) -> str:
    """A library note (written to follow "warning: " on a terminal, so starting lowercase, without a full stop)
    as a sentence of its own on a page: capitalised, ended, escaped for Markdown."""
    text = str(text).strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return md(text if text.endswith((".", "?", "!")) else text + ".")


def short(text: object, most: int = 60) -> str:
    """``text`` cut to ``most`` characters ("…" at the end): a name of hundreds of characters in a list, a chart's
    axis or a box, where the whole of it would crowd out everything else (tables and tooltips show it whole)."""
    text = str(text)
    return text if len(text) <= most else text[:most - 1] + "…"


def plot_text(text: object, most: int = 60) -> str:
    """``text`` for plotly labels, which read a few HTML tags (<a href>, <b>, ...): brackets escaped, cut to
    ``most`` characters. A cut name ends in a tag of its whole text ("…#3fa2"): a chart's categories are its
    labels, and two long names that begin alike must stay two bars (or rows), not merge into one."""
    text = str(text)
    if len(text) > most:
        text = text[:most - 7] + "…#" + hashlib.sha256(text.encode()).hexdigest()[:5]
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


#: Plotly's toolbar, cut to what these charts need (save, zoom, pan, reset): narrow enough to sit in the strip
#: above the plot at 820 px without covering a legend or a bar's label.
CHART_CONFIG = {"displaylogo": False,
                "modeBarButtonsToRemove": ["select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d"]}
CHART_TOP = 36  # pixels above every chart's plot area: the toolbar's strip (and a legend set above the plot)


def show_chart(fig, *, key: str | None = None) -> None:
    """Draw a plotly figure the same way on every page: its title as bold text above the chart (Plotly
    draws the toolbar over a title when the pointer is on the chart) and a strip above the plot area
    for the toolbar."""
    title = fig.layout.title.text if fig.layout.title else None
    if title:
        st.markdown(f"**{md(title)}**")
    top = fig.layout.margin.t if fig.layout.margin and fig.layout.margin.t is not None else CHART_TOP
    fig.update_layout(title=None, margin={"t": max(top, CHART_TOP)})
    st.plotly_chart(fig, config=CHART_CONFIG, key=key)


def version(path: str | Path) -> int:
    """A cache key part that changes when a file, or any file in a folder, is rewritten."""
    p = Path(path)
    try:
        if p.is_dir():
            return max((f.stat().st_mtime_ns for f in p.iterdir() if f.is_file()), default=0)
        return p.stat().st_mtime_ns
    except OSError:
        return 0


# -- cached resources --------------------------------------------------------------------------
@st.cache_resource(ttl=30, show_spinner=False)
def datasets() -> list[DataSource]:
    return find_datasets(extra_dirs=[("upload", UPLOAD_DIR)])


@st.cache_resource(ttl=30, show_spinner=False)
def checkpoints():
    """(shipped and user-trained checkpoints, problems with unreadable files)."""
    return find_checkpoints([checkpoint_dir(), RUNS_DIR])


@st.cache_resource(show_spinner="Loading the data set…", max_entries=4)
def load_kg(path: str, data_version: int = 0) -> TemporalKG:
    return load_dataset(path)


@st.cache_resource(show_spinner="Matching the model's relations to the data…", max_entries=4)
def fitted_kg(data_path: str, data_version: int, checkpoint_path: str, checkpoint_version: int) -> TemporalKG:
    """The data set in a checkpoint's relation vocabulary (relations matched by name), for a model
    trained on other data."""
    return Checkpoint.load(checkpoint_path).fit(load_kg(data_path, data_version))


@st.cache_resource(show_spinner="Loading the model…", max_entries=4)
def explainer(data_path: str, data_version: int, checkpoint_path: str, checkpoint_version: int) -> Explainer:
    """A predictor + explainer for one data set and checkpoint (keyed by their file versions, so a
    replaced upload or a retrained model is never served from a stale cache)."""
    kg = load_kg(data_path, data_version)
    return Explainer(Predictor(Checkpoint.load(checkpoint_path), kg, "auto"))


@st.cache_data(show_spinner=False, max_entries=512)
def ask(data_path: str, data_version: int, checkpoint_path: str, checkpoint_version: int, question: Question,
        k: int, coverage: float | None = None) -> Prediction:
    return explainer(data_path, data_version, checkpoint_path, checkpoint_version).predictor.answer(question, k, coverage)


@st.cache_data(show_spinner=False, max_entries=512)
def explain(data_path: str, data_version: int, checkpoint_path: str, checkpoint_version: int, question: Question,
            answer: str, paths: int, importance: str = "integrated") -> Explanation:
    return explainer(data_path, data_version, checkpoint_path, checkpoint_version).explain(
        question.subject, question.relation, question.time, answer, direction=question.direction,
        setting=question.setting, num_paths=paths, importance=importance, measure_facts=MEASURED_FACTS)


@st.cache_data(show_spinner="Answering the hypothetical…", max_entries=64)
def what_if(data_path: str, data_version: int, checkpoint_path: str, checkpoint_version: int, question: Question,
            without: tuple, extra: tuple) -> Prediction:
    """The question answered on the data without / with the given (s, r, o, time) facts (all answers)."""
    return explainer(data_path, data_version, checkpoint_path, checkpoint_version).predictor.answer(
        question, None, without=list(without), extra=list(extra))


@st.cache_data(show_spinner="Searching for the smallest set of facts…", max_entries=64)
def counterfactual(data_path: str, data_version: int, checkpoint_path: str, checkpoint_version: int,
                   question: Question, answer: str):
    return explainer(data_path, data_version, checkpoint_path, checkpoint_version).counterfactual(
        question.subject, question.relation, question.time, answer, direction=question.direction,
        setting=question.setting)


@st.cache_data(show_spinner="Tracing the reasoning…", max_entries=64)
def trace(data_path: str, data_version: int, checkpoint_path: str, checkpoint_version: int, question: Question,
          answer: str, member: int = 0) -> ReasoningTrace:
    """The per-step trace of the question (a composite model: of its model ``member``, 0-based)."""
    return explainer(data_path, data_version, checkpoint_path, checkpoint_version).trace(
        question.subject, question.relation, question.time, direction=question.direction, setting=question.setting,
        top=12, answer=answer, member=member)


@st.cache_data(show_spinner=False, max_entries=128)
def member_ask(data_path: str, data_version: int, checkpoint_path: str, checkpoint_version: int, question: Question,
               k: int, member: int) -> Prediction:
    """A composite model's member ``member`` (0-based) answering on its own (the teaching page steps through one)."""
    ex = explainer(data_path, data_version, checkpoint_path, checkpoint_version)
    return ex.members[member].predictor.answer(question, k)


# -- state and URL -------------------------------------------------------------------------------
def init_state() -> None:
    """On a session's first run, take the question from the URL. The one URL policy of every page:
    each value not taken as given is named (:func:`url_ignored_ui` shows the list): a parameter the
    app does not know, a number outside its widget's range (clamped), a choice not offered; names and
    times are checked against the data set by the page that uses them (:func:`take_name`,
    :func:`take_time`), which names what it shows instead."""
    ss = st.session_state
    if ss.get("_initialised"):
        return
    ignored = [f"{key}={str(st.query_params[key])[:80]!r} (not a parameter of this app; ignored)"
               for key in st.query_params if key not in URL_KEYS and key not in STREAMLIT_PARAMS]
    for key in URL_KEYS:
        if key in st.query_params:
            value = st.query_params[key]
            given = st.query_params.get_all(key)
            if len(given) > 1:  # a link edited by hand: which one counts is said, not guessed silently
                ignored.append(f"{key} given {len(given)} times ({', '.join(repr(v[:40]) for v in given[:4])}"
                               f"{' …' if len(given) > 4 else ''}; the last counts)")
            if key in INT_RANGES:
                lo, hi = INT_RANGES[key]
                try:  # ASCII digits only: int() takes '٣' as 3
                    if not re.fullmatch(r"[+-]?[0-9]+", value.strip()):
                        raise ValueError(value)
                    value = int(value)
                except ValueError:  # also beyond int()'s 4,300 digits
                    ignored.append(f"{key}={value[:80]!r} (not a whole number; ignored)")
                    continue
                if not lo <= value <= hi:
                    ignored.append(f"{key}={value} (shown as {max(lo, min(value, hi))}: it goes from {lo} to {hi})")
                value = max(lo, min(value, hi))
            elif key in CHOICES and value not in CHOICES[key]:
                ignored.append(f"{key}={value!r} (not one of {', '.join(map(str, CHOICES[key]))}; ignored)")
                continue
            ss[key] = value
    for key, value in DEFAULTS.items():
        ss.setdefault(key, value)
    if "answer" in ss:  # the URL's answer belongs to the URL's question, whatever defaults fill in
        ss["answer_question"] = URL_ANSWER
    ss["url_ignored"] = ignored
    ss["_initialised"] = True


def unknown_page(url: str, served: str, paths: list[str], base: str = "") -> str:
    """The page path the browser asked for at ``url`` when no page has it (Streamlit then serves the default page:
    ``served`` ""), else "". ``paths``: the pages' url paths; ``base``: the server's base URL path."""
    path = urlparse(url).path.strip("/")
    base = base.strip("/")
    if base and (path == base or path.startswith(base + "/")):
        path = path[len(base):].strip("/")
    return "" if served or not path or path in paths else path


def note_unknown_page(served: str, paths: list[str]) -> None:
    """On a session's first run: a page address that no page has (mistyped, or an old link) is named among the URL
    values not taken, with the pages there are (walk-through 38 #14: it showed Ask without a word)."""
    ss = st.session_state
    if ss.get("_page_checked"):
        return
    ss["_page_checked"] = True
    path = unknown_page(st.context.url or "", served, paths, str(st.get_option("server.baseUrlPath") or ""))
    if path:
        known = ", ".join(["/"] + [f"/{p}" for p in paths if p])
        ss.setdefault("url_ignored", []).append(f"the page '/{path[:80]}' (no such page; showing Ask; the pages are "
                                                f"{known})")


def url_ignored_ui() -> None:
    """The URL values not taken, as one warning on whichever page a shared link opens; kept until a
    page has run to its end (:func:`url_ignored_seen`), so a page that reruns or switches on its
    first run does not swallow it."""
    if st.session_state.get("url_ignored"):
        st.warning(md("Not taken from the URL as given: " + "; ".join(st.session_state["url_ignored"]) + "."))


def url_ignored_seen() -> None:
    """A page has been drawn to its end (or stopped on purpose) under the warning: it is not repeated."""
    st.session_state.pop("url_ignored", None)


def take_name(key: str, vocab, kind: str, fallback: str, shown: str = "this page shows") -> str:
    """``st.session_state[key]`` as a name of ``vocab`` (the data's own spelling of a name given in
    another case or spacing); an unknown or look-alike name is replaced by ``fallback`` with a warning
    that names it, the closest names and what is shown instead -- never silently another one."""
    ss = st.session_state
    given = ss.get(key)
    if given in vocab:
        return given
    problem = ""
    if given:
        try:
            ss[key] = vocab.resolve(given, kind)
            return ss[key]
        except DataError as e:
            problem = str(e) if str(e).endswith(("?", ".")) else f"{e}."
    ss[key] = fallback
    if problem:
        st.warning(md(f"{problem[:1].upper()}{problem[1:]} It is not in this data set, so {shown} "
                      f"{fallback!r} instead."))
    return fallback


def take_time(kg: TemporalKG, what: str = "no query time is marked") -> int | None:
    """The question's time as a step of ``kg``; a time that cannot be one (not a time of this axis, or
    far outside the data) is named with ``what`` the page does instead, and None returned."""
    from tpar.graph.queries import check_question_time

    time = st.session_state.get("time")
    if not time:
        return None
    try:
        t = kg.time_axis.parse(time)
        check_question_time(kg, t)
        return t
    except (ValueError, DataError) as e:
        st.warning(md(f"Time {str(time)[:80]!r} does not fit this data set ({e}); {what}."))
        return None


def keep_or_reset_answer(top_answer: str) -> None:
    """After a question change the answer is the new question's top one; the URL's answer (and a
    row the user picked) belong to the current question."""
    ss = st.session_state
    if ss.get("answer_question") == URL_ANSWER:
        ss["answer_question"] = question_key()
    elif ss.get("answer_question") != question_key():
        ss["answer"], ss["answer_question"] = top_answer, question_key()


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
    kg: TemporalKG              # for a model trained on other data: the data in its relation vocabulary
    match: Match | None
    matches: list[Match]
    unreadable: list[CheckpointProblem] = field(default_factory=list)  # model files here that could not be loaded

    @property
    def data_kg(self) -> TemporalKG:
        """The data set as loaded (its own relations), whatever the model."""
        return getattr(self.kg, "original", None) or self.kg

    @property
    def data_path(self) -> str:
        return str(self.source.path)

    @property
    def checkpoint_path(self) -> str:
        return str(self.match.info.path) if self.match else ""

    @property
    def keys(self) -> tuple[str, int, str, int]:
        """(data path, its version, checkpoint path, its version): the cache key of this pair."""
        return self.data_path, version(self.data_path), self.checkpoint_path, version(self.checkpoint_path)

    def explainer(self) -> Explainer:
        return explainer(*self.keys)


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
            st.warning(md(f"Data set {ss['data']!r} is not available here; showing {sources[0].label!r}."))
        ss["data"] = sources[0].label
    if ss.get("question_data") not in (None, ss["data"]):  # another data set was chosen: its own question, quietly
        forget_question()
    ss["question_data"] = ss["data"]  # the data set the question in the session belongs to
    source = by_label[ss["data"]]
    try:
        kg = load_kg(str(source.path), version(source.path))
    except DataError as e:
        if show_errors:
            st.error(md(f"Cannot read data set {source.label!r}: {e}"))
        return None
    infos, unreadable = checkpoints()
    matches = matching_checkpoints(kg, infos)
    names = [m.info.name for m in matches]
    if ss.get("model") and ss["model"] not in names and show_errors and not ss.get("_model_checked"):
        # said for a model the URL named; after a data set was chosen, its own first model is simply taken
        bad = next((p for p in unreadable if p.name == ss["model"]), None)
        if bad is not None:  # the file is there: never say the model does not exist (hostile audit 38)
            st.warning(md(f"Model {ss['model']!r} cannot be loaded: {bad.text}")
                       + (md(f" Showing {names[0]!r}.") if names else ""))
        elif names:
            st.warning(md(f"Model {ss['model']!r} is not available for this data set; showing {names[0]!r}."))
    if show_errors:
        ss["_model_checked"] = True
    keep_valid("model", names)
    match = next((m for m in matches if m.info.name == ss["model"]), None)
    if match is not None and match.relations is not None:  # a model from other data: its relation ids
        try:
            return Selection(source, fitted_kg(str(source.path), version(source.path), str(match.info.path),
                                               version(match.info.path)), match, matches, unreadable)
        except DataError as e:
            if show_errors:
                st.error(md(f"Model {match.info.name!r} cannot serve {source.label!r}: {e}"))
            return None
    return Selection(source, kg, match, matches, unreadable)


def forget_question() -> None:
    """Drop the question from the session (the next page fills in the data set's default or showcase question):
    a question asked of one data set names entities, a relation and a time another may not have, and its warnings
    would blame the user for a switch the app made."""
    ss = st.session_state
    for key in ("subject", "relation", "time", "answer", "answer_question", "example"):
        ss.pop(key, None)
    ss["direction"], ss["setting"] = DEFAULTS["direction"], DEFAULTS["setting"]


def choose_data(label: str) -> None:
    """Make ``label`` the chosen data set, with no question yet (the next page asks the data set's own): for a page
    that has just saved or grown it. The question put into the session after this belongs to it."""
    st.session_state["data"] = label
    forget_question()
    st.session_state["question_data"] = label


def keep_valid(key: str, options: list) -> None:
    """Keep ``st.session_state[key]`` if it is one of ``options``, else take the first (or None)."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0] if options else None


def require_selection() -> Selection:
    """The chosen data set (and checkpoint, if one fits); a message and a stop when none is usable."""
    sel = selection()
    if sel is None:
        st.stop()
    return sel


def data_set_ui(help: str | None = None) -> Selection:
    """A picker of every data set found here, bound to the question's data set; the new selection."""
    require_selection()  # the default data set, or a message and a stop
    bind(st.selectbox, "Data set", "data", options=[s.label for s in datasets()], help=help)
    return require_selection()


def unfinished_warning(sel: Selection) -> None:
    """A warning when the chosen model comes from a cancelled or interrupted training run."""
    why = sel.match.info.checkpoint.unfinished() if sel.match else ""
    if why:
        st.warning(md(f"Model {sel.match.info.name!r} is UNFINISHED ({why}): its answers and probabilities come "
                      "from a model that did not finish training."))


def require_model(sel: Selection | None) -> Selection:
    if sel is None:
        st.stop()
    if sel.match is None:
        st.error(md(f"No checkpoint here fits data set {sel.source.label!r}") + " (a model must be trained on the "
                 "same relations and time unit). Train one on the Train page, or pick another data set on the Data "
                 "and model page.")
        unreadable_ui(sel.unreadable)
        st.page_link("views/train.py", label="Train a model", icon=":material/model_training:")
        st.page_link("views/data_model.py", label="Data and model", icon=":material/database:")
        st.stop()
    return sel


def unreadable_ui(problems: list[CheckpointProblem]) -> None:
    """Name the model files here that could not be loaded, each with why (a model whose file is there but
    unreadable must not read as one that does not exist)."""
    if not problems:
        return
    one = len(problems) == 1
    st.warning(md(f"{plural(len(problems), 'model file')} here could not be loaded, so "
                  f"{'it is' if one else 'they are'} not offered, whatever data set {'it was' if one else 'they were'} "
                  "trained on:") + "\n\n" + "\n".join(f"- {md(p.text)}" for p in problems[:20])
               + (f"\n- … and {len(problems) - 20:,} more" if len(problems) > 20 else ""))


def current_question() -> Question:
    """The question in the session state (a message and a stop if it is not a valid one)."""
    ss = st.session_state
    try:
        return Question(ss["subject"], ss["relation"], ss["time"], ss["direction"], ss["setting"])
    except DataError as e:
        st.error(md(e))
        st.stop()


def fill_question(kg: TemporalKG, setting: str = "extrapolation") -> None:
    """Replace what the session holds that this data set cannot ask (with a warning) by the parts of the default
    question in the model's ``setting``: every page that shows the question mends a shared link the same way (an
    unknown entity, a misspelt relation, a time the data cannot ask)."""
    ss = st.session_state
    # only when something needs mending, and once: it reads every fact (review 40: ~1 s at 1M facts)
    default = functools.cache(lambda: default_question(kg, setting))

    for key, vocab, kind in (("subject", kg.entities, "entity"), ("relation", kg.relations, "relation")):
        if ss.get(key) not in vocab:
            take_name(key, vocab, kind, default().subject if key == "subject" else default().relation,
                      "the question uses")
    t_q = None
    try:
        t_q = kg.time_axis.parse(ss["time"]) if ss.get("time") else kg.time_axis.parse(default().time)
        check_question_time(kg, t_q)
    except (ValueError, DataError) as e:
        before = t_q is not None and len(kg.all_facts()) and t_q < kg.time_range[0]
        # a time long before the data becomes its first time, not a forecast after it (walk-through 37)
        t_q = kg.time_range[0] if before else kg.time_axis.parse(default().time)
        st.warning(md(f"Time {ss['time']!r} does not fit this data set ({e}); showing "
                      + (f"the data's first time, {kg.time_axis.label(t_q)}." if before else
                         "the first step after the data." if t_q > kg.time_range[1] else
                         f"{kg.time_axis.label(t_q)}, a gap inside the data, as the model was trained for.")))
    ss["time"] = kg.time_axis.label(t_q)


def current_prediction(sel: Selection, coverage: float | None = None) -> Prediction:
    """The answers to the question in the session state (cached), or an error message and a stop."""
    try:
        return ask(*sel.keys, current_question(), int(st.session_state.get("k", DEFAULTS["k"])), coverage)
    except DataError as e:
        st.error(md(e))
        sync_url()
        st.stop()


def current_explanation(sel: Selection, answer: str, paths: int, importance: str = "integrated") -> Explanation:
    """The temporal paths behind ``answer`` to the current question (cached), or a message and a stop."""
    try:
        return explain(*sel.keys, current_question(), answer, paths, importance)
    except DataError as e:
        st.error(md(e))
        st.stop()


def question_ready() -> bool:
    ss = st.session_state
    return all(ss.get(k) for k in ("subject", "relation", "time"))


def question_heading(pred: Prediction) -> str:
    """The question of ``pred`` for a page heading, each name cut to 60 characters (a name of hundreds filled the
    heading over four lines; the answers table, the CSV and the Evidence page keep it whole), Markdown-escaped."""
    text = md(Question(short(pred.subject), short(pred.relation), pred.time, pred.direction).text())
    head, sep, time = text.rpartition(", ")  # the time is last: kept on one line (names are left as written)
    return head + sep + keep_together(time)


def prediction_text(pred: Prediction) -> str:
    """The question of ``pred`` as "(s, r, ?, t)" with its resolved time label."""
    return Question(pred.subject, pred.relation, pred.time, pred.direction).text()


def default_question_into_state(sel: Selection) -> None:
    """Put a question into the session when none is there: the data set's first forecasting
    showcase question (the sample world's planted rules), else the default question in the model's setting (a
    forecast after the data; a gap inside it for a model trained for interpolation only)."""
    ss = st.session_state
    kg = sel.kg
    # a shared link may give the relation, time, setting or answer without an entity: those are kept, only what it
    # lacks is filled in, and the page says so (they were silently replaced by the showcase question: audit 37)
    given = {k: ss[k] for k in ("relation", "time", "direction", "setting", "answer")
             if ss.get(k) not in (None, "", DEFAULTS.get(k))}  # the defaults a data switch leaves are not given
    examples = [x for x in sel.source.examples() if x["subject"] in kg.entities and x["relation"] in kg.relations]
    if examples:
        x = next((x for x in examples if x.get("setting") == "extrapolation"), examples[0])
        ss.update(subject=x["subject"], relation=x["relation"], time=x["time"], direction="object",
                  setting=x.get("setting", "auto"))
        if x.get("answer") in kg.entities:
            ss["answer"] = x["answer"]
    else:  # in the model's setting: an interpolation model opens on a gap in the data, not on a forecast
        q = default_question(kg, sel.match.info.setting if sel.match is not None else "extrapolation")
        ss.update(subject=q.subject, relation=q.relation, time=q.time, direction=q.direction, setting="auto")
    if given:
        ss.update(given)
        st.warning(md(f"The link names no entity: the question asks about {ss['subject']} with the link's "
                      + ", ".join(k for k in ("relation", "time", "direction", "setting", "answer") if k in given)
                      + "."))
        if "answer" in given:
            ss["answer_question"] = URL_ANSWER
            return
    ss["answer_question"] = question_key()


def time_to_date(kg: TemporalKG, label: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(label[:10]) if kg.time_axis.granularity == "day" else None
    except ValueError:
        return None
