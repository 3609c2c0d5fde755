"""The explorer in a real browser: Debian's chromium driven by Playwright against ``streamlit run`` on
a free loopback port. Ask -> answer table -> evidence graph, and no request leaves 127.0.0.1.

Skips with a reason where chromium or the Playwright package is absent (``.ci/run`` installs
Debian's chromium; ``requirements.txt`` has Playwright, whose own browser download is not needed).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode, urlparse

import pytest

from helpers import ROOT, write_renamed_world

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)"),
              pytest.mark.browser, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    workspace = tmp_path_factory.mktemp("workspace")
    SERVER_LOG["workspace"] = workspace
    write_renamed_world(workspace / "uploads" / "renamed")  # data whose relations only one checkpoint covers, by name
    env = dict(os.environ, TPAR_DATA_DIR=str(tmp_path_factory.mktemp("no-benchmarks")), TPAR_WORKSPACE=str(workspace))
    log = tmp_path_factory.mktemp("log") / "streamlit.log"
    SERVER_LOG["path"] = log
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "streamlit_app.py"),
                                 "--server.port", str(port), "--server.address", "127.0.0.1",
                                 "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail(f"streamlit did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


SERVER_LOG: dict[str, Path] = {}


@contextmanager
def diagnosed(page):
    """On a failed wait or assertion, fail with what the page showed and the server's log tail, so a
    failure seen once (a slow machine, a flaky render) can be read from the CI output. Every wait allows 90 s:
    the suite runs in two processes (pyproject.toml), so the app's server shares the CPU with another test file
    (an explanation that takes 17 s alone took 30 s there); waits bound a hang, they time nothing."""
    page.set_default_timeout(90_000)
    try:
        yield
    except Exception as e:
        try:
            lines = page.locator("body").inner_text(timeout=5_000).splitlines()
            shown = " | ".join(line.strip() for line in lines if line.strip())[-2500:]
        except Exception as inner:  # the page itself is gone
            shown = f"(page text unavailable: {inner})"
        log = SERVER_LOG.get("path")
        tail = log.read_text(errors="replace")[-2500:] if log and log.is_file() else "(no server log)"
        pytest.fail(f"{type(e).__name__}: {str(e)[:600]}\n--- page text ---\n{shown}\n--- server log ---\n{tail}")


def local_only(page, outside: list[str]) -> None:
    """Record and block every request that is not for the local server."""

    def guard(route):
        host = urlparse(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:", "about:")) or host == "127.0.0.1":
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", guard)


#: the chips of a multiselect's chosen options (Streamlit 1.67 marks each with data-tag)
CHIPS = "[data-testid='stMultiSelect'] [data-tag]"


def test_ask_answer_evidence_offline(server):
    outside: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        local_only(page, outside)
        with diagnosed(page):
            question = {"subject": "Orora Front", "relation": "Mobilize against", "time": "2025-12-20",
                        "setting": "extrapolation"}
            page.goto(f"{server}/?{urlencode(question)}")
            page.get_by_text("(Orora Front, Mobilize against, ?, 2025\u201112\u201120)").wait_for(timeout=90_000)  # unbroken date
            cells = page.locator("[data-testid='stDataFrame'] [role='gridcell']")
            cells.first.wait_for(state="attached", timeout=90_000)  # the grid draws on a canvas; cells are its a11y table
            texts = cells.all_inner_texts()
            assert texts[:2] == ["1", "Hugo of Zanistan"]  # the answer table, top row
            assert "yes" in texts[:7]  # known fact
            # the grid's own CSV download writes names raw (formulas from an upload would run): hidden; the page's
            # own download button writes them formula-safe
            page.locator("[data-testid='stDataFrame']").first.hover()
            toolbar = page.locator("[data-testid='stElementToolbar'] button")
            toolbar.first.wait_for(state="attached", timeout=30_000)
            assert "Search" in [b.get_attribute("aria-label") for b in toolbar.all()]
            grid_download = page.locator("button[data-testid='stBaseButton-elementToolbar'][aria-label='Download as CSV']")
            assert grid_download.count() == 1  # the CSS rule's selector still names Streamlit's button (not renamed)
            assert not grid_download.is_visible()  # and the rule hides it
            assert page.get_by_role("button", name="Download answers (CSV)").count() == 1

            page.get_by_role("link", name="Evidence").click()
            page.get_by_text("Answer to explain").wait_for(timeout=60_000)
            graph = page.frame_locator("iframe[title='Temporal paths to the answer']")
            graph.locator("#mynetwork canvas").wait_for(timeout=60_000)
            frame = next(f for f in page.frames if f != page.main_frame and "vis" in (f.content() or ""))
            labels = frame.evaluate("edges.get().map(e => e.label)")
            heads = frame.evaluate("edges.get().map(e => [e.label, e.arrows])")
            nodes = frame.evaluate("nodes.get().map(n => n.label)")
            # relation and relative time of the escalation link, walked backwards: its head points the way the fact reads
            assert ["Threaten\n-1 d", "from"] in heads
            assert {"Orora Front", "Hugo of Zanistan"} <= set(nodes)
            assert all(label.split("\n")[-1].endswith(" d") for label in labels)

            # what-if: switch a fact off, reset, then touch another control: the fact must stay switched on
            # (a reset that only forgot the value server-side left the chip in the browser, which sent it back)
            what_if = page.get_by_text("Switch off facts of these paths")
            what_if.scroll_into_view_if_needed()
            page.locator("[data-testid='stMultiSelect'] input").click()
            page.get_by_role("option").first.click()
            page.keyboard.press("Escape")
            hypothetical = page.locator("[data-testid='stAlert']", has_text="Hypothetical:")
            hypothetical.first.wait_for(timeout=60_000)
            chips = page.locator(CHIPS)
            assert chips.count() == 1  # the chip is found where it is (so the checks below can fail)
            page.get_by_role("button", name="Reset (back to the data as it is)").click()
            page.get_by_text("Nothing switched off or added").wait_for(timeout=60_000)
            assert chips.count() == 0, "the reset fact is still shown as switched off"
            page.get_by_role("button", name="Find the fewest facts whose removal changes the top answer").click()
            page.get_by_text("Counterfactual").first.wait_for(timeout=60_000)
            assert hypothetical.count() == 0 and chips.count() == 0
        browser.close()
    assert outside == [], f"requests left 127.0.0.1: {outside[:5]}"


def test_ask_answers_are_above_the_fold_at_1400_by_820(server):
    """On a laptop screen the first answers show without scrolling: the answer table's header and top
    three rows lie inside the 820 px high window."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 820})
        with diagnosed(page):
            page.goto(server)
            table = page.locator("[data-testid='stDataFrame']").first
            page.locator("[data-testid='stDataFrame'] [role='gridcell']").first.wait_for(state="attached",
                                                                                        timeout=90_000)
            box = table.bounding_box()
            assert box is not None and box["y"] + 36 + 3 * 35 <= 820, box  # header row + three answers
        browser.close()


def test_the_hypothetical_fact_form_stays_open_while_it_is_filled_in(server):
    """Evidence, What if: changing a field of "Add a hypothetical fact" reruns the page; the expander stays open
    (untracked, it closed at every change, so each field had to be reached again), a bad time is refused at Add,
    and a good fact is added and listed with its Remove."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        with diagnosed(page):
            page.goto(f"{server}/evidence?" + urlencode({"subject": "Orora Front", "relation": "Mobilize against",
                                                          "time": "2025-12-20", "setting": "extrapolation"}))
            page.get_by_text("Add a hypothetical fact").click()
            add = page.get_by_role("button", name="Add this fact")
            add.wait_for()
            time_box = page.get_by_label("Time", exact=True)
            time_box.fill("2025-02-30")
            time_box.press("Tab")
            page.wait_for_timeout(2_000)
            add.wait_for()  # still open after the rerun
            add.click()
            page.get_by_text("time '2025-02-30' is not a real ISO date").wait_for()  # (after 'Not added', a word joiner)
            time_box.fill("2025-12-10")
            time_box.press("Tab")
            page.wait_for_timeout(2_000)
            add.click()
            page.get_by_role("button", name="Remove").wait_for()
            page.get_by_text("Hypothetical", exact=False).first.wait_for()
        browser.close()


def test_one_click_on_reset_clears_the_facts_switched_off(server):
    """Evidence, What if: two facts chosen in the switch-off list, Escape, then one click on Reset. The list of long
    facts is a line taller while focused, so a Reset below it moved up as the click took the focus away and the click
    was lost (it took two); Reset now sits above the list. The list offers no "Select all" entry: a first click there
    switched off every fact at once (scale audit 40)."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        with diagnosed(page):
            page.goto(f"{server}/evidence?" + urlencode({"subject": "Jonas of Jororistan", "relation": "Consult",
                                                          "time": "2025-12-18", "setting": "extrapolation",
                                                          "answer": "Gita of Kelia"}))
            switch_off = page.locator("[data-testid='stMultiSelect']").first
            switch_off.wait_for(timeout=90_000)
            switch_off.scroll_into_view_if_needed()
            switch_off.click()
            options = page.locator("[role='option']")
            options.first.wait_for(timeout=30_000)
            assert page.get_by_text("Select all").count() == 0
            options.first.click()
            options.first.wait_for(timeout=30_000)  # the list stays open on the facts left
            options.first.click()
            page.keyboard.press("Escape")
            hypothetical = page.locator("[data-testid='stAlert']", has_text="Hypothetical:")
            hypothetical.first.wait_for(timeout=60_000)
            chips = page.locator(CHIPS)
            assert chips.count() >= 2
            page.get_by_role("button", name="Reset (back to the data as it is)").click()
            page.get_by_text("Nothing switched off or added").wait_for(timeout=30_000)
            assert chips.count() == 0 and hypothetical.count() == 0
        browser.close()


#: vis-network's own boxes of every edge label (as last drawn) and node, in drawing coordinates
LABEL_BOXES = """() => {
  var out = {labels: [], nodes: []};
  Object.keys(network.body.edges).forEach(function (id) {
    var e = network.body.edges[id], s = e.labelModule && e.labelModule.size;
    if (e.options.label && s) out.labels.push({text: e.options.label, x0: s.left, y0: s.top, x1: s.left + s.width,
                                              y1: s.top + s.height});
  });
  Object.keys(network.getPositions()).forEach(function (id) {
    var b = network.getBoundingBox(id); out.nodes.push({text: id, x0: b.left, y0: b.top, x1: b.right, y1: b.bottom});
  });
  return out;
}"""


@pytest.mark.parametrize("width", [820, 1400])
def test_evidence_graph_labels_never_overlap(server, width):
    """Two arcs whose labels met in the middle, and a long relation name wider than the gap between its
    nodes: every link's label stays clear of the others and of every node, at a narrow and a wide window."""
    question = {"subject": "Keleth", "relation": "Meet", "time": "2025-12-20", "setting": "extrapolation",
                "answer": "Quenara", "paths": 10}
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": width, "height": 1000})
        with diagnosed(page):
            page.goto(f"{server}/evidence?{urlencode(question)}")
            page.get_by_text("Show paths with no meaningful contribution").first.click()  # the multi-hop paths too
            page.frame_locator("iframe[title='Temporal paths to the answer']").locator("#mynetwork canvas").wait_for(
                timeout=90_000)
            time.sleep(3)  # the frame is sized, the layout redone and drawn
            frame = next(f for f in page.frames if f != page.main_frame and "vis" in (f.content() or ""))
            boxes = frame.evaluate(LABEL_BOXES)
            labels, nodes = boxes["labels"], boxes["nodes"]
            assert len(labels) >= 4 and any("Express intent to\ncooperate" in b["text"] for b in labels)

            def overlap(a, b):
                return a["x0"] < b["x1"] - 1 and b["x0"] < a["x1"] - 1 and a["y0"] < b["y1"] - 1 and b["y0"] < a["y1"] - 1

            for i, a in enumerate(labels):
                assert not [b["text"] for b in labels[i + 1:] if overlap(a, b)], a["text"]
                assert not [n["text"] for n in nodes if overlap(a, n)], a["text"]
            # readable at either width: never zoomed below 0.72 (14 px labels ~10 px); a frame too narrow for
            # the whole drawing at that zoom scrolls sideways and says so
            scale, wide, shown, hint = frame.evaluate(
                "() => [network.getScale(), document.body.scrollWidth > window.innerWidth + 2, window.innerWidth,"
                " getComputedStyle(document.getElementById('scroll-hint')).display]")
            assert scale >= 0.72 - 1e-6, scale
            assert (hint == "block") == wide, (hint, wide, shown)
            assert wide == (width == 820)  # this drawing needs the scroll at 820 px (sidebar open), not at 1400
        browser.close()


def test_upload_train_ask(server, tmp_path):
    rows = ["subject,relation,object,time"]
    for day in range(60):
        a, b = f"P{day % 6}", f"P{(day + 1) % 6}"
        date = f"2024-{1 + day // 28:02d}-{1 + day % 28:02d}"
        rows += [f"{a},meets,{b},{date}", f"{b},calls,{a},{date}"]
    csv_file = tmp_path / "people.csv"
    csv_file.write_text("\n".join(rows) + "\n")
    outside: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        local_only(page, outside)
        with diagnosed(page):
            page.goto(f"{server}/upload")
            page.locator("input[type=file]").set_input_files(str(csv_file))
            page.get_by_text("Validation report").wait_for(timeout=60_000)
            page.get_by_role("button", name="Save data set").click()
            page.get_by_text("Saved as data set").wait_for(timeout=90_000)
            page.get_by_role("link", name="Train a model").click()
            page.get_by_text("Start training").wait_for(timeout=90_000)
            page.get_by_label("Epochs (at most)", exact=True).and_(page.locator("input")).fill("1")
            page.get_by_label("Training questions per epoch (0 = all)", exact=True).and_(page.locator("input")).fill("60")
            page.get_by_label("Model name", exact=True).and_(page.locator("input")).fill("people-model")
            page.get_by_role("button", name="Start training").click()
            page.get_by_text("Saved ").first.wait_for(timeout=240_000)  # the fragment polls the job
            main = page.locator("[data-testid='stMain']")
            cells = page.locator("[data-testid='stDataFrame'] [role='gridcell']")
            # Train -> Ask a few times, at different moments: with the button inside the polling fragment,
            # 2 of 12 such trips ended on a blank Ask page (a stale fragment tick rerun after navigation)
            for trip in range(3):
                if trip:
                    page.get_by_role("link", name="Train", exact=True).click()
                use = page.get_by_role("button", name="Use this model in Ask")
                use.wait_for(timeout=60_000)
                time.sleep(0.5 * trip)
                use.click()
                page.get_by_text("model **people-model**".replace("**", "")).first.wait_for(timeout=60_000)
                cells.first.wait_for(state="attached", timeout=60_000)
                time.sleep(2.0)  # a stale rerun would blank the page now
                assert "people-model" in main.inner_text(), f"trip {trip}: the Ask page went blank"
                names = set(cells.all_inner_texts())
                assert names & {f"P{i}" for i in range(6)}  # answers come from the uploaded data
        browser.close()
    assert outside == [], f"requests left 127.0.0.1: {outside[:5]}"


def test_a_typed_start_address_opens_ask_without_a_page_not_found_dialog(server):
    """/start, /home and /ask are what people type for a start page: each opens Ask, with the question its URL
    carries, and no "Page not found" dialog (the default page is served at / only; walk-through)."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        with diagnosed(page):
            for path in ("start", "home", "ask"):
                page.goto(f"{server}/{path}?" + urlencode({"subject": "Arovia", "relation": "Accuse",
                                                            "time": "2025-12-20"}))
                page.get_by_text("(Arovia, Accuse, ?, 2025\u201112\u201120)").first.wait_for(timeout=90_000)
                assert page.get_by_text("Page not found").count() == 0, path
        browser.close()


def test_names_never_become_links(server):
    """A URL or e-mail address smuggled in as a name (here through the shared URL) is shown as text:
    Streamlit's markdown auto-links bare www., scheme: and a@b text even when escaped."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        outside: list[str] = []
        local_only(page, outside)
        with diagnosed(page):
            hostile = "www.e.xy HTTPS://e.xy a@e.xy <b@e.xy> :smile: :red[x] :material/home: @cmd"  # <= 80: not cut
            page.goto(f"{server}/?{urlencode({'subject': hostile, 'relation': 'Meet', 'time': '2025-12-20'})}")
            page.get_by_text("Unknown entity").first.wait_for(timeout=90_000)
            alerts = page.locator("[data-testid='stAlert']")
            shown = " ".join(alerts.all_inner_texts())
            assert hostile in shown.replace("\u2060", "")  # shown, readable, no emoji, colour or icon
            # the invisible joiner only inside the markers (it comes along when text is copied): after an "@" that
            # follows text, and after a colon before a word (Streamlit's emoji plugin reads ":smile:" past escapes)
            assert ":\u2060smile: :\u2060red[x] :\u2060material/home: @cmd" in shown
            hrefs = page.locator("[data-testid='stAlert'] a, [data-testid='stMarkdownContainer'] a").evaluate_all(
                "els => els.map(e => e.href)")
            assert hrefs and not [h for h in hrefs if urlparse(h).hostname != "127.0.0.1"], hrefs  # heading anchors only
        browser.close()
    assert outside == []


@pytest.fixture(scope="module")
def learned_rules(server):
    """The sample model's rules of two heads (12 facts each, asked both ways) where the Learned rules page keeps its
    rules in the server's workspace, as if the page had distilled them (that takes minutes; the AppTest clicks it)."""
    from tpar.data.loading import load_dataset
    from tpar.model.checkpoint import Checkpoint
    from tpar.reasoning.distilled_rules import RuleConfig, cache_path, distill_rules
    from tpar.reasoning.explanation import Explainer
    from tpar.reasoning.prediction import Predictor

    ckpt = ROOT / "checkpoints" / "sample-world-unified.tpar"
    kg = load_dataset(ROOT / "sample_data" / "world" / "chronological")
    rules = distill_rules(Explainer(Predictor(Checkpoint.load(ckpt), kg, "cpu")),
                          RuleConfig(questions=12, relations=("Consult", "Mobilize against")))
    path = cache_path(SERVER_LOG["workspace"] / "rules", ckpt, kg, RuleConfig())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(rules.to_json(), encoding="utf-8")
    return path


@pytest.mark.parametrize("width", [820, 1400])
def test_learned_rules_page_and_an_example_opened_in_ask(server, learned_rules, width, tmp_path):
    """The rules of a head with the planted rule marked, the chart drawn, nothing wider than the window; an example's
    link opens its question on the Ask page in a new tab."""
    outside: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": width, "height": 1000})
        local_only(context, outside)  # every page of the context, the one the link opens too
        page = context.new_page()
        with diagnosed(page):
            page.goto(f"{server}/rules?{urlencode({'relation': 'Consult'})}")
            page.get_by_text("Examples", exact=True).wait_for(timeout=90_000)
            page.locator(".js-plotly-plot .bars").first.wait_for(timeout=90_000)
            main = page.locator("[data-testid='stMain']").inner_text()
            assert "t\u201140..\u201111" in main or "t\u2011∞..\u201141" in main  # time windows never broken at 820 px
            main = main.replace("\u2011", "-")
            assert "planted rule composition" in main and "learned as rule 1" in main
            assert "★ planted rule composition" in main
            assert "(X, Form alliance with, Z1, t-40..-11) ∧ (Z1, Sign agreement with, Y, t-3..-1) => (X, Consult, Y, t)" \
                in main.replace("\n", " ") or "(X, Form alliance with, Z1, t-∞..-41) ∧ (Z1, Sign agreement with, Y, " \
                "t-3..-1) => (X, Consult, Y, t)" in main.replace("\n", " ")
            wide = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert wide[0] <= wide[1], wide  # no horizontal scrolling
            page.screenshot(path=str(tmp_path / f"rules-{width}.png"))
            link = page.get_by_role("link", name="Open in Ask").first
            link.scroll_into_view_if_needed()
            with context.expect_page() as opened:
                link.click()
            ask = opened.value
            ask.get_by_text(re.compile(r"^\(.+, Consult, \?, 2025\u201112\u2011\d\d\)$")).first.wait_for(timeout=90_000)
            ask.locator("[data-testid='stDataFrame'] [role='gridcell']").first.wait_for(state="attached",
                                                                                       timeout=60_000)
            assert "Setting: interpolation" in ask.locator("[data-testid='stMain']").inner_text()
        browser.close()
    assert outside == [], f"requests left 127.0.0.1: {outside[:5]}"


def test_a_foreign_checkpoint_is_chosen_for_data_with_other_relations(server, tmp_path):
    """Data and model offers the sample model for data whose relations it knows under other spellings, shows the
    coverage before it is used; Ask then answers with it and says which data it was trained on (issue #31)."""
    outside: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 820, "height": 1600})
        local_only(page, outside)
        main = page.locator("[data-testid='stMain']")
        with diagnosed(page):
            page.goto(f"{server}/data?" + urlencode({"data": "upload: renamed"}))
            page.get_by_text("Relations matched").wait_for(timeout=90_000)
            page.get_by_text(re.compile(r"^Fingerprint [0-9a-f]+$")).wait_for(timeout=90_000)  # the last element: run done
            text = main.inner_text()
            assert "20 of 21" in text and "99.9%" in text and "applied to renamed" in text
            page.screenshot(path=str(tmp_path / "data-model-820.png"), full_page=True)
            page.get_by_role("link", name="Ask", exact=True).click()
            cells = page.locator("[data-testid='stDataFrame'] [role='gridcell']")
            cells.first.wait_for(state="attached", timeout=90_000)
            text = main.inner_text()
            assert "model trained on chronological" in text and "answering over renamed" in text
            assert "applied to renamed" in text
        browser.close()
    assert outside == [], f"requests left 127.0.0.1: {outside[:5]}"
