"""The evidence graph's layout: repeated facts of one relation between the same two entities are one drawn
link that still names every fact; links that skip levels arc around the hops between their ends."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import pytest

from helpers import ROOT
from tpar.reasoning.explanation import PathLink, TemporalPath

sys.path.insert(0, str(ROOT / "app"))
import evidence_graph as eg  # noqa: E402


def link(src: str, dst: str, rel: str, delta: int, grad: float, inverse: bool = False, layer: int = 1) -> PathLink:
    subj, obj = (dst, src) if inverse else (src, dst)
    return PathLink(layer, src, dst, subj, rel, obj, inverse, f"day {100 + delta}", 100 + delta, delta,
                    f"{delta:+d} d".replace("+", ""), 0.5, grad, f"{-delta} days before")


def path(*links: PathLink) -> TemporalPath:
    return TemporalPath(list(links), importance=sum(x.gradient for x in links))


# A -> B directly by weekly meetings (three facts, the question's time is day 100), once walked
# backwards, and once after t_q; and A -> H -> B through a hop, so the direct links skip a level.
PATHS = [path(link("A", "B", "Meet", -7, 0.9)), path(link("A", "B", "Meet", -14, 0.02)),
         path(link("A", "B", "Meet", -21, 0.3)), path(link("A", "B", "Meet", -2, 0.1, inverse=True)),
         path(link("A", "B", "Meet", 3, 0.05)),
         path(link("A", "H", "Consult", -5, 0.2, layer=1), link("H", "B", "Consult", -1, 0.2, layer=2))]


def test_facts_of_one_relation_direction_and_side_of_t_q_are_drawn_as_one_link():
    d = eg.drawing(PATHS, "A", "B")
    assert d.level == {"q": 0, "a": 2, "h1:H": 1}
    groups = d.links[("q", "a")]
    by_key = {(g["facts"][0]["link"].inverse, g["facts"][0]["link"].delta > 0): g for g in groups}
    assert len(groups) == 3  # past Meet x3, Meet walked backwards, Meet after t_q
    assert [e["link"].delta for e in by_key[(False, False)]["facts"]] == [-7, -14, -21]  # most recent first
    assert len(by_key[(True, False)]["facts"]) == 1 and len(by_key[(False, True)]["facts"]) == 1
    assert [len(g) for k, g in d.links.items() if k != ("q", "a")] == [1, 1]


def test_an_entity_reached_at_two_hops_is_drawn_once_per_hop_and_named():
    """The layout has one node per (hop, entity): H reached in one hop by one path and in two by another is two
    nodes, and ``repeated_entities`` names it (the page says so under the graph); the single-hop paths name none."""
    two = PATHS + [path(link("A", "K", "Visit", -9, 0.1, layer=1), link("K", "H", "Visit", -6, 0.1, layer=2),
                        link("H", "B", "Consult", -1, 0.1, layer=3))]
    d = eg.drawing(two, "A", "B")
    assert {"h1:H", "h2:H"} <= set(d.level) and d.level["h2:H"] == 2
    assert eg.repeated_entities(d.label) == ["H"]
    assert eg.repeated_entities(eg.drawing(PATHS, "A", "B").label) == []


def test_a_merged_link_names_every_fact_and_is_as_wide_as_its_strongest(sample_checkpoint, sample_kg):
    from tpar.reasoning.explanation import Explainer
    from tpar.reasoning.prediction import Predictor

    real = Explainer(Predictor(sample_checkpoint, sample_kg, "auto")).explain(
        "Orora Front", "Mobilize against", "2025-12-20", "Hugo of Zanistan", setting="extrapolation", num_paths=1)
    e = dataclasses.replace(real, subject="A", answer="B", score=5.0, paths=PATHS)
    html = eg.evidence_html(e)
    edges = json.loads(re.search(r"edges = new vis\.DataSet\((\[.*?\])\);", html, re.S).group(1))
    merged = [x for x in edges if x["label"].startswith("Meet ×3")]
    assert len(merged) == 1 and merged[0]["label"] == "Meet ×3\n-7 d … -21 d"
    title = merged[0]["title"]
    assert title.startswith("3 facts drawn as one link") and title.count("fact: (A, Meet, B,") == 3
    assert all(f"fact: (A, Meet, B, day {t})" in title for t in (93, 86, 79))
    assert merged[0]["width"] == pytest.approx(eg.edge_width(0.9, e.floor))  # the strongest fact's width
    assert len([x for x in edges if x["from"] == "q" and x["to"] == "a"]) == 3
    # the direct links skip the hop level: each bends, further out than the hop's height
    for x in (x for x in edges if x["from"] == "q" and x["to"] == "a"):
        assert x["smooth"]["enabled"] and x["smooth"]["roundness"] * 2 * eg.LEVEL_SEPARATION / 2 >= 55  # bulge in px
    # a link walked backwards points the way its fact reads (the walk-through read '← Meet' on an arrow to the answer
    # the wrong way round): its head on the drawn source, dashed, its label the bare relation
    backwards = [x for x in edges if x["arrows"] == "from"]
    assert len(backwards) == 1 and backwards[0]["dashes"] == eg.DASHED and merged[0]["dashes"] is False
    assert all(x["arrows"] == "to" for x in edges if x is not backwards[0])
    assert not any("←" in x["label"] for x in edges)


def test_the_line_patterns_are_told_apart_at_a_glance():
    """Dotted (no weight), dash-dotted (a proposed fact) and dashed (walked backwards) read as three patterns: the
    walk-through could not tell the old dotted [2, 4] from the default dashes [5, 5] on a thin line."""
    assert eg.line_style(False, False, False) is False
    styles = {eg.line_style(True, True, True) is eg.DOTTED, eg.line_style(False, True, True) is eg.DASH_DOT,
              eg.line_style(False, False, True) is eg.DASHED}
    assert styles == {True}
    assert max(eg.DOTTED[::2]) * 4 <= min(eg.DASHED[::2])  # a dot is far shorter than a dash
    assert len(eg.DASH_DOT) == 4 and eg.DASH_DOT[0] > eg.DASHED[0] and eg.DASH_DOT[2] < eg.DASHED[0]



@pytest.mark.parametrize("name", ["W" * 999, "a very long name " * 40, "Kelarara Council"])
def test_a_long_name_never_covers_the_graph(name):
    """Names of hundreds of characters (an audit: a 999-character node covered the links' labels) are drawn on at
    most two lines (entities) or three (relations); the tooltips keep them whole."""
    node, rel = eg.node_label(name), eg.relation_label(name)
    assert len(node.split("\n")) <= 2 and max(map(len, node.split("\n"))) <= eg.NODE_CHARS
    assert len(rel.split("\n")) <= eg.LABEL_LINES and max(map(len, rel.split("\n"))) <= 2 * eg.LABEL_CHARS
    if len(name) <= eg.NODE_CHARS:
        assert node == name
    assert eg.relation_label("Make_an_appeal_or_request") == "Make_an_appeal_or_request"  # one word stays whole
