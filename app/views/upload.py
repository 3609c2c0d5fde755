"""Upload: a CSV/TSV of quadruples -> validation report -> (incomplete rows completed by a model, each
proposal reviewed) -> a saved data set (then train on it); or new rows added to an existing data set (its
history grows, and every model answers over it at once)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import explorer as ex
from tpar.data.catalog import DataSource, sample_dir
from tpar.data.growth import GROW_SPLITS, GrowthReport, completions_growth, grow, relatives_text, save_grown
from tpar.data.kg import TemporalKG
from tpar.data.names import suggest_name
from tpar.data.tables import show_invisible
from tpar.data.textfile import MarkedText, decode_text
from tpar.data.upload import DROP_CONFIRM_SHARE, UploadReport, inspect_upload, row_texts, save_dataset
from tpar.errors import DataError
from tpar.model.checkpoint import Checkpoint
from tpar.model.registry import covering_checkpoints, time_unit_mismatches
from tpar.reasoning.completion import (Completion, apply_thresholds, complete_with_checkpoint, fit_thresholds,
                                       with_completions)
from tpar.reasoning.prediction import probability_text

#: incomplete rows proposed for in one go (each is a model query)
MAX_COMPLETIONS = 5000


def render() -> None:
    st.title("Upload your data")
    st.markdown(
        "A file of **quadruples**, one fact per row: a header with the columns `subject`, `relation`, `object`, "
        "`time` (any order, any case, or names such as `head`/`actor`, `predicate`/`event`, `tail`/`target`, "
        "`date`/`timestamp`; separated by commas, semicolons, tabs or pipes; UTF-8 or UTF-16), and optionally "
        "`split` (`train`/`valid`/`test`); other columns are skipped, and the report names them. "
        "Times may be ISO dates (`2014-02-02`), date-times (`2014-02-02T06:00`), dates such as `25/03/2014`, "
        "`03/25/2014`, `2014/03/25` or `25.03.2014`, months (`2014-02`), years or integer steps. A row may leave its `subject` or its `object` empty: a model then proposes the missing "
        "entity and you review the proposals. Nothing is used before you have seen the validation report below.")
    mode = st.radio("What to do", ["new", "grow"], horizontal=True, key="upload_mode",
                    format_func={"new": "a new data set", "grow": "add rows to an existing data set"}.get,
                    help="Adding rows: new facts (and entities) join a data set's history; every model that "
                         "serves it answers over the grown history at once, without retraining.")
    if mode == "grow":
        grow_ui()
        return
    example = sample_dir() / "world" / "facts.csv"
    if example.is_file():
        st.download_button("Download an example (the sample world, 23,481 facts)", example.read_bytes(),
                           file_name="sample-world-facts.csv", mime="text/csv")
    name, text = file_ui()
    options = options_ui()
    exclude = bool(st.session_state.get("upload_exclude_outliers", True))
    try:
        with st.spinner(checking_text(text)):
            report, kg = check(text, name, *options, exclude)
    except DataError as e:
        st.error(ex.md(f"This file cannot be used: {e}"))
        st.stop()
    report_ui(report)
    # the round trip of incomplete rows: save the complete rows, train on them, upload the file again -- its
    # complete rows are then a saved data set, and accepted proposals are added to it, not saved as a second one
    saved = saved_copy(kg.fingerprint) if report.incomplete else None
    completed = completion_ui(text, name, options, exclude, report, kg)
    if saved is not None:
        add_to_saved_ui(name, saved, completed)
        return
    save_ui(name, report, completed)


@st.cache_data(show_spinner=False, max_entries=64)
def data_fingerprint(path: str, version: int) -> str:
    return ex.load_kg(path, version).fingerprint


def saved_copy(fingerprint: str) -> DataSource | None:
    """The uploaded data set holding exactly these facts (the complete rows of a file saved before), if any."""
    for source in ex.datasets():
        if source.kind == "upload":
            try:
                if data_fingerprint(str(source.path), ex.version(source.path)) == fingerprint:
                    return source
            except DataError:  # an unreadable data set is no copy
                continue
    return None


def add_to_saved_ui(file_name: str, saved: DataSource, completed: TemporalKG) -> None:
    """The file's complete rows are the saved data set ``saved``: accepted proposals join it in place, as a growth
    step of its lineage (the models trained on it keep serving it), instead of a second data set."""
    st.subheader("Save")
    before = ex.load_kg(str(saved.path), ex.version(saved.path))
    st.info(ex.md(f"This file's complete rows are the data set {saved.label!r}, saved before: accepted proposals are "
                  "added to it (in place, recorded in its lineage, so the models trained on it keep serving it), not "
                  "saved as a second data set."))
    try:
        report = completions_growth(before, completed, file_name)
    except DataError as e:
        st.error(ex.md(e))
        return
    if not report.facts_added:
        st.caption("No proposal is accepted: nothing to add.")
        return
    if st.button(f"Add {ex.plural(report.facts_added, 'accepted proposal')} to {saved.label}", type="primary",
                 key="upload_add_completions"):
        try:
            save_grown(before, report, completed, ex.UPLOAD_DIR, saved.path.name, overwrite=True)
        except DataError as e:
            st.error(ex.md(e))
            return
        ex.datasets.clear()
        ex.choose_data(saved.label)
        st.success(ex.md(f"Added {ex.plural(report.facts_added, 'inferred fact')} to {saved.label} (training facts, "
                         f"marked inferred; {len(completed.all_facts()):,} facts in all)."))


#: the cache key of an uploaded file's text: two files with bytes that are not UTF-8 can give equal texts with their
#: marks in other places (a mark is a character its own file does not hold, which another file may), so marks count
TEXT_KEY = {MarkedText: lambda text: (str(text), text.marks.bad_byte_base)}


def file_ui() -> tuple[str, str]:
    """The uploaded file's name and text (a message and a stop for none, too large, or not text; a byte that is not
    UTF-8 is marked, and the reader drops its row)."""
    limit_mb = ex.max_upload_mb()
    up = st.file_uploader(f"Quadruple file (at most {limit_mb} MB)", type=["csv", "tsv", "txt"], key="upload_file")
    if up is None:
        st.stop()
    if up.size > limit_mb * 1024 * 1024:
        st.error(ex.md(f"{up.name} is {up.size / 1024 ** 2:.1f} MB, larger than the limit of {limit_mb} MB ")
                 + "(`server.maxUploadSize` in `.streamlit/config.toml`). Split the file or raise the limit.")
        st.stop()
    try:
        return up.name, decode_text(up.getvalue(), up.name, mark_bad_bytes=True)  # such rows are dropped, listed
    except DataError as e:
        st.error(ex.md(f"{e}."))
        st.stop()


def options_ui() -> tuple[str, str, int, tuple[float, float, float], bool | None]:
    """How to read times and how to split: (time format, split policy, seed, split fractions, day first)."""
    c1, c2, c3 = st.columns(3)
    with c1:
        time_format = st.selectbox("Read times as", ["auto", "date", "datetime", "month", "year", "int"],
                                   key="upload_time_format", persist_state="session",
                                   help="auto: detected from the values (integers within 1000–2999 are years).")
    with c2:
        policy = st.selectbox("Split", ["chronological", "random", "column"], key="upload_split", persist_state="session",
                              format_func={"chronological": "chronological", "random": "random",
                                           "column": "the file's split column"}.get,
                              help="chronological: the latest facts become valid and test (forecasting); random: a "
                                   "seeded shuffle (completion); the file's split column: the values train / valid / "
                                   "test in a column named split.")
    with c3:
        seed = st.number_input("Seed (random split)", min_value=0, value=0, step=1, key="upload_seed",
                               persist_state="session", disabled=policy != "random")
    f1, f2, f3 = st.columns(3)
    train_pct = f1.slider("Train share %", 50, 95, 80, key="upload_train", persist_state="session",
                          disabled=policy == "column")
    valid_pct = f2.slider("Valid share %", 1, 30, 10, key="upload_valid", persist_state="session",
                          disabled=policy == "column")
    order = f3.selectbox("Dates like 03/04/2024", ["file", "day", "month"], key="upload_day_first",
                         persist_state="session",
                         format_func={"file": "as the file shows", "day": "day first (DD/MM/YYYY)",
                                      "month": "month first (MM/DD/YYYY)"}.get,
                         help="as the file shows: a date whose first number is over 12 shows day first, its second "
                              "month first; when no date shows it, you are asked to choose here.")
    if train_pct + valid_pct >= 100:
        st.error("Train and valid shares must leave some facts for test.")
        st.stop()
    return (time_format, policy, int(seed), (train_pct / 100, valid_pct / 100, 1 - (train_pct + valid_pct) / 100),
            {"file": None, "day": True, "month": False}[order])


#: rows a check reads per second on one core of the 2-core build machine (a 99 MB file of 2.0 million rows naming
#: new entities: 116 s, peak 3.1 GB; hostile audit 38)
CHECK_ROWS_PER_SECOND = 17_000


def checking_text(text: str) -> str:
    """The spinner's text while a file is checked: for a large file, its rows and about how long (a check of minutes
    must not look like a hang)."""
    rows = text.count("\n")
    secs = rows / CHECK_ROWS_PER_SECOND
    if secs < 10:
        return "Checking the file…"
    took = f"about {secs / 60:.0f} minutes" if secs >= 90 else f"about {secs:.0f} seconds"
    return (f"Checking the file: {rows:,} rows, {took} on one CPU core (every row is read, each name looked up, the "
            "times parsed and the splits made)…")


@st.cache_data(show_spinner=False, max_entries=4, hash_funcs=TEXT_KEY)
def check(text: str, name: str, time_format: str, policy: str, seed: int, fractions: tuple, day_first: bool | None,
          exclude_outliers: bool):
    return inspect_upload(text, name, time_format=time_format, split_policy=policy, seed=seed, fractions=fractions,
                          day_first=day_first, exclude_outliers=exclude_outliers)


def report_ui(report: UploadReport) -> None:
    st.subheader("Validation report")
    m = st.columns(3)
    m[0].metric("Rows read", f"{report.rows_read:,}")
    m[1].metric("Facts kept", f"{report.rows_kept:,}")
    m[2].metric("Time step", report.granularity)
    m = st.columns(3)
    m[0].metric("Rows dropped", f"{len(report.dropped):,}")
    m[1].metric("Duplicates removed", f"{report.duplicates:,}")
    m[2].metric("Outlier times", f"{len(report.outliers):,}" + (" (left out)" if report.outliers_excluded else ""))
    st.caption(report.accounting() + ".")
    if report.preview:
        with st.expander("Preview: the first facts as read", expanded=True):
            st.dataframe(pd.DataFrame(report.preview), hide_index=True, width="stretch")
    if report.outliers:
        shown = ", ".join(f"row {r}: {t}" for r, t in report.outliers[:5]) + ("…" if len(report.outliers) > 5 else "")
        many = len(report.outliers) > 1
        st.warning(ex.md(f"{ex.plural(len(report.outliers), 'row')} {'have' if many else 'has'} a time far from all "
                         f"the others ({shown}): a gap longer "
                         "than the rest of the data spans. Kept, they would stretch the time range (and put the "
                         "default question after them)."))
        st.checkbox("Leave the outlier rows out", value=True, key="upload_exclude_outliers",
                    help="Unticked, they are kept as ordinary facts.")
        with st.expander(f"Outlier rows ({len(report.outliers):,})"):
            st.dataframe(pd.DataFrame([{"row": r, "time": t} for r, t in report.outliers[:1000]]), hide_index=True)
    if report.self_loops:
        st.info(f"{ex.plural(len(report.self_loops), 'fact links', 'facts link')} an entity to itself (subject = object), e.g. row"
                f"{'s' if len(report.self_loops) > 1 else ''} {', '.join(map(str, report.self_loops[:5]))}. They are "
                "kept; TPAR's paths may walk them like any link.")
    st.markdown(f"Times read as **{report.time_format}**, from **{report.time_range[0]}** to **{report.time_range[1]}**; "
                f"**{report.entities:,}** entities, **{report.relations:,}** relations. Split ({report.split_policy}): "
                + ", ".join(f"{s} {n:,}" for s, n in report.split_counts.items()) + ".")
    for note in report.notes:
        st.warning(ex.sentence(note))
    if report.info:  # how the file was read: nothing to act on, so not amber
        info_ui(report.info)
    if report.dropped:
        st.warning(f"{ex.plural(len(report.dropped), 'row')} of {ex.md(report.file)} "
                   f"{'was' if len(report.dropped) == 1 else 'were'} dropped"
                   + (f"; the first {min(len(report.dropped), 1000):,} with their row numbers, problems and content"
                      if len(report.dropped) > 1 else "; its row number, problem and content")
                   + " (row numbers are the file's lines, the header being row 1):")
        dropped_table_ui(report.problems_table())
    if report.duplicate_rows:
        listed = len(report.duplicate_rows)
        with st.expander(f"Duplicates removed ({report.duplicates:,})"):
            st.caption("Each row holds the fact of an earlier row again (the same subject, relation, object and time"
                       + (", and split" if report.split_policy == "column" else "") + "); the fact is kept once"
                       + (f"; the first {listed:,} are listed." if listed < report.duplicates else "."))
            st.dataframe(pd.DataFrame([{"row": r, "repeats row": first, "fact": fact}
                                       for r, first, fact in report.duplicate_rows]), hide_index=True, width="stretch")
    if report.normalised:
        with st.expander(f"Names normalised ({len(report.normalised):,})"):
            st.dataframe(pd.DataFrame([{"row": r, "as written": show_invisible(a), "as kept": b}
                                       for r, a, b in report.normalised[:1000]]), hide_index=True)
    if report.lookalikes:
        more = len(report.lookalikes) - 1
        st.warning(ex.md(f"{report.lookalike_text(report.lookalikes[0])} look alike (they differ only in case, accents, "
                         "spaces or letters of another script drawn alike) "
                         "but are kept as distinct names: if they name one thing, its facts and its probability are split "
                         "between them. Write them alike in the file and upload it again.")
                   + (f" {ex.plural(more, 'more group')} below." if more else ""))
        with st.expander(f"Distinct names that look alike ({ex.plural(len(report.lookalikes), 'group')})"):
            st.dataframe(pd.DataFrame([{"names": " / ".join(n if n == ascii(n)[1:-1] else f"{n} = {ascii(n)}" for n in g)}
                                       for g in report.lookalikes[:1000]]),
                         hide_index=True)


@st.cache_data(show_spinner="Proposing the missing entities…", max_entries=4, hash_funcs=TEXT_KEY)
def propose(text: str, name: str, options: tuple, exclude: bool, checkpoint_path: str, version: int) -> list[Completion]:
    report, kg = check(text, name, *options, exclude)
    # the accepted proposals join this data set's training facts: only its training facts may be evidence
    return complete_with_checkpoint(Checkpoint.load(checkpoint_path), kg, report.incomplete[:MAX_COMPLETIONS],
                                    evidence="train")


@st.cache_data(show_spinner="Fitting the threshold on the valid questions…", max_entries=8, hash_funcs=TEXT_KEY)
def thresholds(text: str, name: str, options: tuple, exclude: bool, checkpoint_path: str, version: int,
               settings: tuple, precision: float) -> dict:
    """The probability threshold per setting at which the model's proposals on this data's valid questions
    were right ``precision`` of the time (:func:`tpar.reasoning.completion.fit_thresholds`)."""
    _, kg = check(text, name, *options, exclude)
    return fit_thresholds(Checkpoint.load(checkpoint_path), kg, list(settings), precision)


#: precisions offered for the proposals ticked by default ("all": every proposal)
PRECISIONS = ("0.8", "0.9", "0.95", "0.99", "all")


def completion_ui(text: str, name: str, options: tuple, exclude: bool, report: UploadReport,
                  kg: TemporalKG) -> TemporalKG:
    """Incomplete rows: a model proposes each missing entity; the user accepts all above a probability
    or row by row. Returns the data set to save (accepted proposals added to train, marked inferred)."""
    rows = report.incomplete
    if not rows:
        return kg
    st.subheader("Incomplete rows")
    n_subject = sum(r.missing == "subject" for r in rows)
    n_object = len(rows) - n_subject
    if len(rows) == 1:
        lack = f"row lacks its {'subject' if n_subject else 'object'}"
    else:
        lack = "rows lack " + ("their subject" if not n_object else "their object" if not n_subject else
                               f"an entity: {n_subject:,} their subject, {n_object:,} their object")
    st.markdown(f"**{len(rows):,}** {lack}. They are not facts: unless you accept a model's proposal for a row, it is left out "
                "of the saved data set. Proposals are reasoned from the training facts only, and accepted ones join "
                "the **training** facts marked as *inferred* (never valid or test, so the test figures stay "
                "honest), and stay marked on the timeline and in evidence paths.")
    with st.expander(f"The incomplete rows ({len(rows):,})"):
        st.dataframe(pd.DataFrame([{"row": r.row, "subject": r.subject or "?", "relation": r.relation,
                                    "object": r.object or "?", "time": r.time} for r in rows[:1000]]), hide_index=True)
    infos, unreadable = ex.checkpoints()
    needed = sorted({r.relation for r in rows})
    matches = covering_checkpoints(kg, infos, needed)
    if not matches:
        shown = ", ".join(repr(r) for r in needed[:5]) + (" …" if len(needed) > 5 else "")
        other_unit = time_unit_mismatches(kg, infos, needed)
        if other_unit:  # they know the relations: the advice to train one would be wrong (walk-through 37)
            names = ", ".join(repr(n) for n in other_unit[:3]) + (" …" if len(other_unit) > 3 else "")
            st.info(ex.md(f"The models that know every relation of the incomplete rows ({names}) count time in "
                          f"another unit than this file is read in ({kg.time_axis.describe()}), so none can propose "
                          "the missing entities. If the file's times are dates, choose 'date' under 'Read times as' "
                          "above (a row with a time of day is then named among the dropped rows)."))
            return kg
        st.info(ex.md(f"No model here knows every relation of the incomplete rows ({shown}), so none can propose "
                      "the missing entities yet. Save the complete rows, train a model on them (Train page), then "
                      "upload this file again: a model that knows those relations is then offered here, and the "
                      "proposals you accept are added to the saved data set."))
        ex.unreadable_ui(unreadable)
        return kg
    by_label = {m.info.summary(): m for m in matches}
    label = st.selectbox("Model that proposes the missing entities", list(by_label), key="upload_complete_model",
                         help="Models that know every relation of the incomplete rows. A calibrated model's "
                              "probabilities say how often its proposals are right.")
    info = by_label[label].info
    for w in by_label[label].warnings:
        if "no evidence" in w:
            st.caption(ex.md(f"This model {w}."))
    if len(rows) > MAX_COMPLETIONS:
        st.warning(f"Only the first {MAX_COMPLETIONS:,} incomplete rows are proposed for; the others are left out.")
    if not st.toggle("Propose the missing entities", key="upload_complete_on"):
        return kg
    comps = propose(text, name, options, exclude, str(info.path), ex.version(info.path))
    proposed = [c for c in comps if c.entity is not None]
    if len(proposed) < len(comps):
        first = next(c for c in comps if c.entity is None)
        none = len(comps) - len(proposed)
        st.warning(ex.md(f"{ex.plural(none, 'row')} get{'s' if none == 1 else ''} no proposal, e.g. {first.problem}"))
    if not proposed:
        return kg
    calibrated = proposed[0].calibrated
    if not calibrated:
        st.warning("This model is not calibrated: its probabilities are raw softmax values, not how often it is "
                   "right (`tpar calibrate` fixes that).")
    precision = st.selectbox("Tick the confident proposals", PRECISIONS, index=1, key="upload_complete_precision",
                             format_func=lambda p: "every proposal (no threshold)" if p == "all" else
                             f"right {100 * float(p):g}% of the time on valid",
                             help="A probability threshold is fitted on this data's valid questions so that the "
                                  "model's proposals at or above it were right this often; proposals below it stay "
                                  "unticked (their rows are left out unless you tick them). Then tick or untick "
                                  "single rows in the table.")
    if precision == "all":
        for c in proposed:
            c.threshold = 0.0
    else:
        fits = thresholds(text, name, options, exclude, str(info.path), ex.version(info.path),
                          tuple(sorted({c.setting for c in proposed})), float(precision))
        apply_thresholds(proposed, fits)
        for fit in fits.values():
            st.caption(ex.md("Threshold " + fit.text() + "."))
    table = pd.DataFrame([{
        "accept": c.accepted(), "row": c.row.row,
        "subject": c.row.subject or f"➜ {c.entity}", "relation": c.row.relation,
        "object": c.row.object or f"➜ {c.entity}", "time": c.row.time,
        "probability %": round(100 * (c.probability or 0.0), 2),
        "how sure": "; ".join(x for x in ("" if c.accepted() else "below the threshold",
                                           f"ties with {c.ties}" if c.ties else "",
                                           f"{ex.plural(c.known_answers, 'known answer')} excluded" if c.known_answers else "",
                                           "" if calibrated else "uncalibrated") if x) or "–",
        "alternatives": ", ".join(f"{a.entity} ({probability_text(a.probability)})" for a in c.alternatives)}
        for c in proposed])
    edited = st.data_editor(table, hide_index=True, disabled=[c for c in table.columns if c != "accept"],
                            key=f"upload_complete_table_{precision}", width="stretch",
                            column_config={"accept": st.column_config.CheckboxColumn("Accept", width="small"),
                                           "probability %": st.column_config.NumberColumn(format="%.2f")})
    accepted = [c for c, ok in zip(proposed, edited["accept"]) if ok]
    confident = sum(c.accepted() for c in proposed)
    st.caption(f"➜ marks the proposed entity. {len(accepted):,} of {len(proposed):,} proposals accepted "
               f"({confident:,} above the threshold); rows not accepted are left out, their best guesses listed.")
    return with_completions(kg, accepted, 0.0) if accepted else kg


def save_ui(file_name: str, report: UploadReport, kg: TemporalKG) -> None:
    """A name for the data set (replace an existing one only when asked) and the save button."""
    ss = st.session_state
    st.subheader("Save")
    this_file = f"{file_name}:{report.rows_read}:{report.rows_kept}"
    if ss.pop("upload_replace_used", False):  # a consent to replace serves one save
        ss["upload_replace"] = False
    if ss.get("upload_name_for") != this_file:  # another file: its own suggested name, no consent carried over
        ss["upload_name"], ss["upload_replace"] = suggest_name(file_name.rsplit(".", 1)[0]), False
        ss["upload_name_for"] = this_file
    name = st.text_input("Data set name", key="upload_name")
    exists = f"upload: {name}" in {s.label for s in ex.datasets()}
    replace = st.checkbox(ex.md(f"Replace the existing data set {name!r}"), key="upload_replace") if exists else False
    accepted_loss = True
    if report.needs_confirmation:  # more than DROP_CONFIRM_SHARE of the file is lost: say so, and ask
        st.warning(ex.md(f"More than {DROP_CONFIRM_SHARE:.0%} of the file would be lost. " + report.loss_text()
                         + ". The table of dropped rows above lists each; the options above "
                         "(time reading, date order) may read them."))
        accepted_loss = st.checkbox("Save without " + ("this row" if len(report.dropped) == 1 else
                                                       f"these {len(report.dropped):,} rows"), key=f"upload_accept_loss_"
                                    f"{file_name}_{len(report.dropped)}_{report.rows_read}")
    if ss.get("upload_saved_as") == (this_file, name) and exists and not replace:  # said while it holds, not once
        st.success(ex.md(f"This file is saved as data set upload: {name}. Saving it again needs the tick above."))
    elif exists and not replace:  # the button is off: say why
        st.caption(ex.md(f"A data set named {name!r} exists: tick the box above to replace it, or choose another "
                         "name."))
    if st.button("Save data set", type="primary", disabled=(exists and not replace) or not accepted_loss,
                 key="upload_save"):
        try:
            save_dataset(kg, ex.UPLOAD_DIR, name, overwrite=replace)
        except DataError as e:
            st.error(ex.md(e))
        else:
            ex.datasets.clear()
            ex.choose_data(f"upload: {name}")  # the question belonged to the data set shown before
            ss["upload_replace_used"] = replace  # a consent serves one save
            ss["upload_saved_as"] = (this_file, name)
            inferred = f", {len(kg.inferred):,} of them inferred" if kg.inferred else ""
            st.success(f"Saved as data set **upload: {ex.md(name)}** ({len(kg.all_facts()):,} "
                       f"facts{inferred}). Train a model on it next.")
            st.page_link("views/train.py", label="Train a model", icon=":material/model_training:")


# -- adding rows to an existing data set ------------------------------------------------------------------
@st.cache_data(show_spinner="Checking the new rows against the data set…", max_entries=4, hash_funcs=TEXT_KEY)
def check_growth(data_path: str, data_version: int, text: str, name: str, split: str,
                 day_first: bool | None) -> tuple[GrowthReport, TemporalKG]:
    return grow(ex.load_kg(data_path, data_version), text, name, split=split, day_first=day_first)


def grow_ui() -> None:
    """Pick a data set, upload rows, see what they add, then save: an uploaded data set grows in place, a sample
    or benchmark one into a new uploaded data set (those folders are never rewritten)."""
    ss = st.session_state
    sources = {s.label: s for s in ex.datasets()}
    label = st.selectbox("Data set to grow", list(sources), key="upload_grow_target",
                         index=list(sources).index(ss["data"]) if ss.get("data") in sources else 0)
    source: DataSource = sources[label]
    st.markdown("The new rows use the upload format (a header with `subject`, `relation`, `object`, `time`, optionally "
                "`split`); their times are read as the data set's own. Rows the data set already holds are skipped.")
    c1, c2 = st.columns(2)
    split = c1.selectbox("The new facts go to", GROW_SPLITS, key="upload_grow_split",
                         format_func={"train": "train: the history every model reads", "valid": "valid",
                                      "test": "test (to evaluate on later)", "column": "the file's split column"}.get)
    order = c2.selectbox("Dates like 03/04/2024", ["file", "day", "month"], key="upload_grow_day_first",
                         format_func={"file": "as the file shows", "day": "day first (DD/MM/YYYY)",
                                      "month": "month first (MM/DD/YYYY)"}.get)
    file_name, text = file_ui()
    try:
        report, grown = check_growth(str(source.path), ex.version(source.path), text, file_name, split,
                                     {"file": None, "day": True, "month": False}[order])
    except DataError as e:
        st.error(ex.md(f"These rows cannot be added: {e}"))
        st.stop()
    growth_report_ui(report, text)
    if not report.changes:
        st.info("Nothing to add: every readable row is already in the data set.")
        return
    save_growth_ui(source, report, grown)


def growth_report_ui(report: GrowthReport, text: str = "") -> None:
    st.subheader("What the rows add")
    m = st.columns(3)
    m[0].metric("Rows read", f"{report.rows_read:,}")
    m[1].metric("Facts added", f"{report.facts_added:,}",
                help=", ".join(f"{s} {n:,}" for s, n in report.added.items()) or None)
    m[2].metric("New entities", f"{len(report.new_entities):,}")
    m = st.columns(3)
    m[0].metric("Already in the data set", f"{report.known:,}")
    m[1].metric("Repeated in the file", f"{report.duplicates:,}")
    m[2].metric("Rows dropped", f"{len(report.dropped):,}")
    if report.time_range:
        reach = (f", **{ex.md(report.extends_by)}** past its last time {ex.md(report.data_last)}" if report.extends_by
                 else f"; its last time stays {ex.md(report.data_last)}")
        st.markdown(f"New facts from **{ex.md(report.time_range[0])}** to **{ex.md(report.time_range[1])}**{reach}.")
    if report.new_entities:
        shown = ", ".join(report.new_entities[:10]) + (" …" if len(report.new_entities) > 10 else "")
        st.caption(ex.md(f"New entities: {shown}. TPAR embeds no entities: a model reasons about them from their "
                         "facts at once."))
    for new, old in report.lookalikes[:10]:
        st.warning(ex.md(f"New entity {new!r} differs from the existing {old!r} only in case, spaces or underscores: "
                         "check the spelling."))
    for new, names in report.relatives[:10]:
        st.info(ex.sentence(relatives_text(new, names)))
    for rel, n in report.new_relations:
        st.warning(ex.md(f"New relation {rel!r} ({ex.plural(n, 'fact')}): models trained before it do not know it; they leave "
                         "its facts out of what they read (a model trained on the grown data knows it)."))
    for new, old in report.relation_lookalikes[:10]:
        st.warning(ex.md(f"New relation {new!r} is spelled like the existing {old!r} but for case, spaces, underscores "
                         "or punctuation: the data set would hold both as two relations. Check the spelling."))
    for note in report.notes:
        st.warning(ex.sentence(note))
    if report.info:  # how the file was read: nothing to act on, so not amber
        info_ui(report.info)
    if report.dropped:
        st.warning(f"{ex.plural(len(report.dropped), 'row was', 'rows were')} dropped"
                   + (f"; the first {min(len(report.dropped), 1000):,}:" if len(report.dropped) > 1 else ":"))
        content = row_texts(text, [r for r, _ in report.dropped[:1000]])  # as a new upload's table shows them
        dropped_table_ui([{"row": r, "problem": p, "content": content.get(r, "")} for r, p in report.dropped[:1000]])


def info_ui(lines: list[str]) -> None:
    """How a file was read (separator, dates, names trimmed …): information, nothing to act on, so not amber."""
    st.info("How the file was read:\n" + "\n".join(f"- {ex.md(n)}" for n in lines))


def dropped_table_ui(rows: list[dict]) -> None:
    """The dropped rows (row, problem, content as in the file), for a new upload and for rows added alike: rows
    three lines high and columns of fixed width, so the grid wraps a long problem or row (at a row height of 70 px
    or more) instead of cutting it off, and both fit 820 px; up to 10 rows in view, then it scrolls."""
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", row_height=72,
                 height=35 + 72 * min(len(rows), 10) + 3,
                 column_config={"row": st.column_config.NumberColumn("row", width="small"),
                                "problem": st.column_config.TextColumn("problem", width=220),
                                # fixed, so it wraps too (sized to its text, it ran past the grid at 820 px)
                                "content": st.column_config.TextColumn("content (as in the file)", width=200)})


def save_growth_ui(source: DataSource, report: GrowthReport, grown: TemporalKG) -> None:
    """An uploaded data set grows in place; a sample or benchmark into a new uploaded data set."""
    ss = st.session_state
    st.subheader("Save")
    before = ex.load_kg(str(source.path), ex.version(source.path))
    if source.kind == "upload":
        name, replace = source.path.name, True
        st.caption(ex.md(f"The data set {source.label!r} is rewritten with the new facts (atomically: a failed save "
                         "leaves it as it was); its lineage records what was added."))
    else:
        st.caption(ex.md(f"{source.label!r} is never rewritten: the grown data set is saved as a new uploaded one."))
        # keyed by the data set (and the name): a widget's key alone is its identity, so one key would carry the
        # last data set's name, and the consent to replace its copy, over to another
        name = st.text_input("Name of the grown data set", value=f"{source.path.name}-grown"[:64],
                             key=f"upload_grow_name:{source.label}")
        exists = f"upload: {name}" in {s.label for s in ex.datasets()}
        replace = st.checkbox(ex.md(f"Replace the existing data set {name!r}"),
                              key=f"upload_grow_replace:{source.label}:{name}") if exists else False
        if exists and not replace:
            st.stop()
    label = (f"Add {ex.plural(report.facts_added, 'fact')}" if report.facts_added
             else f"Mark {ex.plural(report.confirmed, 'fact')} observed")
    if st.button(label, type="primary", key="upload_grow_save"):
        try:
            save_grown(before, report, grown, ex.UPLOAD_DIR, name, overwrite=replace)
        except DataError as e:
            st.error(ex.md(e))
            return
        ex.datasets.clear()
        ex.choose_data(f"upload: {name}")  # the grown data set: its own question
        st.success(f"Saved as data set **upload: {ex.md(name)}** ({len(grown.all_facts()):,} facts, "
                   f"{report.facts_added:,} new). Every model that serves it answers over the grown history now.")
        st.page_link("views/ask.py", label="Ask a question", icon=":material/help:")


if __name__ == "__main__":  # run as a page by st.navigation (importable without side effects)
    render()
