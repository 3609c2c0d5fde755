"""TPAR Explorer: the Streamlit entry point. Pages live in ``app/views/``; shared state in
``app/explorer.py``. The app calls the ``tpar`` API only and holds no model logic.

    streamlit run app/streamlit_app.py
"""

from __future__ import annotations

import streamlit as st

from explorer import WORKSPACE, init_state, md, note_unknown_page, url_ignored_seen, url_ignored_ui
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from tpar.errors import DataError, describe_internal_error, log_internal_error
from tpar.runtime.memory import bound_heap_growth
from tpar.runtime.warmup import start_warmup, warming_up

st.set_page_config(page_title="TPAR Explorer", page_icon="🕸️", layout="wide")  # an emoji favicon: a :material: one is fetched from Google
init_state()


@st.cache_resource(show_spinner=False)
def start_kernel_build() -> None:
    """Once per server: build (or load from cache) the fast C++ kernel in the background; a cached
    one loads in about a second, so wait that long before saying anything. The server's heap is bounded
    too: a long-lived process scoring large graphs must not keep every freed score matrix."""
    bound_heap_growth()
    start_warmup(3.0)


start_kernel_build()
if warming_up():
    st.sidebar.info("Preparing the fast C++ kernel (first start only, about a minute). Until it is ready, answers "
                    "come from the slower torch kernel: the same numbers, a little later.")

ask_page = st.Page("views/ask.py", title="Ask", icon=":material/help:", url_path="question", default=True)


def ask_by_path() -> None:
    """``/ask`` typed or bookmarked: the default page lives at ``/`` (Streamlit serves it nowhere
    else: its own path only reserves the name), so go there (the URL's question
    was read into the session by ``init_state`` and is written back by the page)."""
    st.switch_page(ask_page)


def ask_by_start() -> None:
    """``/start`` or ``/home``, typed as a start page's address: Ask, as :func:`ask_by_path` (a page of its own:
    Streamlit tells pages apart by their function)."""
    ask_by_path()


def ask_by_home() -> None:
    ask_by_path()


pages = {
    "Explore": [
        ask_page,
        st.Page("views/evidence.py", title="Evidence", icon=":material/account_tree:", url_path="evidence"),
        st.Page("views/rules.py", title="Learned rules", icon=":material/rule:", url_path="rules"),
        st.Page("views/timeline.py", title="Entity timeline", icon=":material/event_note:", url_path="timeline"),
        st.Page("views/teach.py", title="How TPAR reasons", icon=":material/school:", url_path="reasoning"),
        st.Page(ask_by_path, title="Ask", url_path="ask", visibility="hidden"),
        st.Page(ask_by_start, title="Ask", url_path="start", visibility="hidden"),
        st.Page(ask_by_home, title="Ask", url_path="home", visibility="hidden"),
    ],
    "Your data and models": [
        st.Page("views/data_model.py", title="Data and model", icon=":material/database:", url_path="data"),
        st.Page("views/upload.py", title="Upload", icon=":material/upload_file:", url_path="upload"),
        st.Page("views/train.py", title="Train", icon=":material/model_training:", url_path="train"),
        st.Page("views/evaluate.py", title="Evaluate", icon=":material/leaderboard:", url_path="evaluate"),
    ],
}
nav = st.navigation(pages)
# a mistyped page address opens Ask: said, with the pages there are (walk-through 38 #14)
note_unknown_page(nav.url_path, [p.url_path for group in pages.values() for p in group
                                 if getattr(p, "visibility", "visible") != "hidden"])
# A table's own "Download as CSV" (Streamlit's grid toolbar) writes cells as they are: a name such as
# '=HYPERLINK(...)' from an upload would run as a formula in a spreadsheet. Every table a user may want as a file
# has its own download button (formula-safe: tpar.textfile.csv_text); the grid's is hidden.
st.html('<style>button[data-testid="stBaseButton-elementToolbar"][aria-label="Download as CSV"] '
        '{ display: none; }</style>')
url_ignored_ui()  # whichever page a shared link opens says what it did not take
st.sidebar.caption("TPAR: temporal-path reasoning for interpolation and extrapolation "
                   "(Chen et al., ACL 2024).")
try:
    nav.run()
    url_ignored_seen()
except StopException:  # st.stop(): the page said what it had to; a rerun or page switch keeps the warning
    url_ignored_seen()
    raise
except DataError as e:  # bad input that a page did not catch itself: a message, never a traceback
    st.error(md(e))
except Exception as e:  # a bug: a short message naming the log (st.stop / st.rerun are not Exceptions)
    log, ref = log_internal_error(e, WORKSPACE / "logs")
    st.error(md(describe_internal_error(e, log, ref)))
