"""The evidence graph: an explanation's top temporal paths as a self-contained pyvis (vis-network)
HTML page. Query entity at the left, answer at the right, hops as levels; each link labelled with
its relation and its time relative to the query; colour by past / same time / future of t_q;
every arrowhead points the way its fact reads (subject → object), so a link walked backwards (against its fact,
since paths run from the query entity at the left to the answer at the right) points back and is dashed; thickness on an absolute scale of the link's own
importance ∂f/∂link (a link worth ≈ 0 is drawn thin and dotted whatever the others are worth); hover shows the fact in
words with its absolute date and the paths' importance. Facts of one relation, walked the same way, on the
same side of t_q, between the same two entities are one link ("Meet ×6" with the range of their times, as
wide as its strongest fact; the tooltip lists each), so a weekly meeting is not six stacked arcs; links
that skip a level arc around the hops in between. The view fits its frame on load and on
resize; a button saves it as PNG; a dark variant follows the app's theme.

Offline and safe: vis-network is inlined (no CDN), pyvis's remaining external references
(bootstrap) are removed, and every name reaches the page only inside JSON that Jinja's ``tojson``
escapes (``<``, ``>``, ``&`` and quotes become ``\\u003c``-style escapes); vis-network shows titles as plain text.
"""

from __future__ import annotations

import functools
import math
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pyvis
from pyvis.network import Network

from palette import FUTURE, PAST, SAME
from tpar.reasoning.explanation import Explanation, TemporalPath

QUERY_COLOUR, ANSWER_COLOUR, HOP_COLOUR = "#99f6e4", "#fed7aa", "#e5e7eb"
DARK_PAST, DARK_SAME, DARK_FUTURE = "#60a5fa", "#9ca3af", "#fb923c"  # the same meanings, lighter on dark
#: importance drawn at the full width (in units of the score f); widths are absolute, not relative to
#: the other links, on a log scale from the evidence floor (1 px) up to this (7 px)
FULL_WIDTH_IMPORTANCE = 1.0
#: the hierarchical layout's distance between levels (left to right) and between the nodes of a level (px)
LEVEL_SEPARATION, NODE_SPACING = 260, 90
#: how far each further parallel link between two entities bends out (px at its middle): a two-line label's height
FAN_STEP_PX = 40
_EXTERNAL = re.compile(r"<(link|script)\b[^>]*(?:href|src)=\"https?://[^>]*>(?:\s*</script>)?", re.I | re.S)


def delta_colour(delta: int, dark: bool = False) -> str:
    if dark:
        return DARK_PAST if delta < 0 else (DARK_FUTURE if delta > 0 else DARK_SAME)
    return PAST if delta < 0 else (FUTURE if delta > 0 else SAME)


def edge_width(importance: float, floor: float) -> float:
    """1 px at or below the evidence ``floor`` to 7 px at |importance| ≥ FULL_WIDTH_IMPORTANCE, on a
    log scale (Eq. 14's gradients span orders of magnitude); the same importance always gets the
    same width, whatever the other links are worth."""
    x = abs(importance)
    if x <= floor:
        return 1.0
    if x >= FULL_WIDTH_IMPORTANCE:
        return 7.0
    return 1 + 6 * math.log(x / floor) / math.log(FULL_WIDTH_IMPORTANCE / floor)


def signed(x: float, digits: int = 4) -> str:
    """``x`` with its sign and ``digits`` decimals, never "-0.0000" (a value that rounds to zero is +0)."""
    return f"{round(float(x), digits) + 0.0:+.{digits}f}"


@dataclass
class Drawing:
    """What the graph draws: nodes by level ("q" the question's entity at 0, "a" the answer at the last
    level, "h<i>:<name>" a hop entity at level i) and, per drawn pair of nodes, the links between them
    (facts of one relation, direction and side of t_q merged: :func:`merged_links`)."""

    level: dict[str, int]
    label: dict[str, str]
    links: dict[tuple[str, str], list[dict]]

    @property
    def node_spacing(self) -> int:
        """Vertical px between the nodes of a level: NODE_SPACING, more when many links cross one gap between
        levels (their labels all sit near the gap's middle, so the nodes around it spread to make room)."""
        crossing: dict[int, int] = {}
        for (src, dst), groups in self.links.items():
            crossing[self.level[src]] = crossing.get(self.level[src], 0) + len(groups)
        widths = self.widths
        need = max((n * FAN_STEP_PX / max(widths.get(lv, 1), widths.get(lv + 1, 1), 2)
                    for lv, n in crossing.items()), default=0)
        return int(min(2.5 * NODE_SPACING, max(NODE_SPACING, need)))

    @property
    def height(self) -> int:
        """Frame height (px) that fits the drawing: its widest level at its node spacing, or its widest fan."""
        widest = max(self.widths.values(), default=1)
        fan = max((len(g) for g in self.links.values()), default=1)
        return int(min(640, max(300, 120 + self.node_spacing * widest, 140 + FAN_STEP_PX * fan)))

    @property
    def widths(self) -> dict[int, int]:
        """Nodes per level."""
        out: dict[int, int] = {}
        for lv in self.level.values():
            out[lv] = out.get(lv, 0) + 1
        return out


def drawing(paths: list[TemporalPath], subject: str, answer: str) -> Drawing:
    """Lay the paths out: one node per (hop level, entity), one entry per fact per pair of nodes (the
    paths it lies on; its largest |∂f/∂link| when a fact serves in several layers), then merged."""
    depth = max((p.length for p in paths), default=1)
    level, label = {"q": 0, "a": depth}, {"q": subject, "a": answer}
    edges: dict[tuple, dict] = {}
    for k, path in enumerate(paths, start=1):
        prev = "q"
        for i, link in enumerate(path.links):
            last = i == len(path.links) - 1
            node = "a" if last else f"h{i + 1}:{link.target}"
            if not last:
                level[node], label[node] = i + 1, link.target
            key = (prev, node, link.subject, link.relation, link.object, link.time_step)
            e = edges.setdefault(key, {"link": link, "paths": [], "gradient": link.gradient})
            e["paths"].append(k)
            if abs(link.gradient) > abs(e["gradient"]):  # the same fact used in another layer
                e["gradient"] = link.gradient
            prev = node
    return Drawing(level, label, merged_links(edges))


def repeated_entities(labels: dict[str, str]) -> list[str]:
    """The entities drawn at more than one hop level (one node per (level, entity)), in name order."""
    seen: dict[str, int] = {}
    for name in labels.values():
        seen[name] = seen.get(name, 0) + 1
    return sorted(name for name, n in seen.items() if n > 1)


def evidence_html(explanation: Explanation, height_px: int | None = None, paths: list[TemporalPath] | None = None,
                  dark: bool = False) -> str:
    """HTML of the explanation's paths (default: all of them) as an interactive graph (query entity
    left, answer right)."""
    paths = explanation.paths if paths is None else paths
    d = drawing(paths, explanation.subject, explanation.answer)
    height_px = height_px or d.height
    ink = "#e5e7eb" if dark else "#111827"
    # node labels stay dark on their light boxes in either theme; edge labels take the theme's ink
    net = Network(height=f"{height_px}px", width="100%", directed=True, cdn_resources="remote",
                  bgcolor="#0e1117" if dark else "#ffffff", font_color="#111827")
    box = {"size": 16, "color": "#111827"}
    for node, lv in d.level.items():
        colour, title = HOP_COLOUR, f"{d.label[node]} (hop {lv})"
        if node == "q":
            colour, title = QUERY_COLOUR, f"question's entity: {d.label[node]}"
        elif node == "a":
            colour = ANSWER_COLOUR
            title = f"answer: {d.label[node]}\nscore f(q, a) = {explanation.score:.3f}, rank {explanation.rank_text()}"
        net.add_node(node, label=node_label(d.label[node]), level=lv, color=colour, shape="box", font=box, title=title)
    parallel: dict[tuple[str, str], int] = {}
    widths, spacing = d.widths, d.node_spacing
    for (src, dst), groups in d.links.items():
        for group in groups:
            draw_link(net, src, dst, group, d.level, widths, spacing, parallel, explanation.floor, ink, dark)
    net.set_options("""{
      "layout": {"hierarchical": {"enabled": true, "direction": "LR", "sortMethod": "directed",
                                  "levelSeparation": %d, "nodeSpacing": %d}},
      "physics": {"enabled": false},
      "interaction": {"hover": true, "tooltipDelay": 80, "navigationButtons": false}
    }""" % (LEVEL_SEPARATION, d.node_spacing))
    html = offline(net.generate_html())
    script = (_FIT_AND_EXPORT.replace("__BG__", "#0e1117" if dark else "#ffffff")
              .replace("__SEPARATION__", str(LEVEL_SEPARATION)).replace("__DEPTH__", str(max(d.level.values()))))
    return html.replace("</body>", script, 1)


#: facts listed in a merged link's tooltip (then a count)
MAX_FACTS_IN_TOOLTIP = 12
#: characters per line of a link's relation label (longer relation names wrap, keeping labels narrow)
LABEL_CHARS = 18
LABEL_LINES = 3
NODE_CHARS = 28


def relation_label(text: str) -> str:
    """A link's relation label, wrapped at word breaks to lines of at most :data:`LABEL_CHARS` characters, at most
    :data:`LABEL_LINES` of them (a longer one ends in "…"; the link's tooltip names it whole)."""
    lines = textwrap.wrap(text, LABEL_CHARS, break_long_words=False)  # ICEWS's "Make_an_appeal_or_request" whole
    if len(lines) > LABEL_LINES or any(len(x) > 2 * LABEL_CHARS for x in lines):
        lines = textwrap.wrap(text, LABEL_CHARS, max_lines=LABEL_LINES, placeholder=" …")
    return "\n".join(lines) or text[:LABEL_CHARS]


def node_label(name: str) -> str:
    """An entity's box label: wrapped to at most two lines of :data:`NODE_CHARS` (the box's tooltip names it
    whole), so that a name of hundreds of characters does not cover the links around it."""
    return "\n".join(textwrap.wrap(name, NODE_CHARS, max_lines=2, placeholder=" …")) or name[:NODE_CHARS]


def merged_links(edges: dict[tuple, dict]) -> dict[tuple[str, str], list[dict]]:
    """Per pair of drawn nodes, the links to draw: facts grouped by (relation, walked backwards, inferred,
    side of t_q), each group a dict with its ``facts`` (the per-fact dicts of ``edges``: link, paths,
    gradient), most recent first."""
    groups: dict[tuple, list[dict]] = {}
    for (src, dst, *_), e in edges.items():
        link = e["link"]
        side = (link.delta > 0) - (link.delta < 0)
        groups.setdefault((src, dst, link.relation, link.inverse, bool(link.inferred), side), []).append(e)
    out: dict[tuple[str, str], list[dict]] = {}
    for (src, dst, *_), facts in groups.items():
        facts = sorted(facts, key=lambda e: (abs(e["link"].delta), e["link"].time_step))
        out.setdefault((src, dst), []).append({"facts": facts})
    return out


def draw_link(net: Network, src: str, dst: str, group: dict, level: dict[str, int], widths: dict[int, int],
              spacing: int, parallel: dict[tuple[str, str], int], floor: float, ink: str, dark: bool) -> None:
    """Add one drawn link (one fact, or several facts of the same relation merged: ``×n`` and the range of
    their times; width and dots from the strongest fact; the tooltip lists each fact with its importance)."""
    facts = group["facts"]
    link = facts[0]["link"]
    strongest = max(facts, key=lambda e: abs(e["gradient"]))["gradient"]
    i = parallel[(src, dst)] = parallel.get((src, dst), -1) + 1
    # parallel links between the same two nodes fan out: straight, then alternately bent; links
    # that skip a level (a short path drawn to the answer) always bend, around the hop nodes
    span = level[dst] - level[src]
    skips = span > 1
    if i == 0 and not skips:
        smooth = {"enabled": False}
    elif not skips:  # parallel links fan out, alternately bent, a label's height apart
        bend = 2 * FAN_STEP_PX * ((i + 1) // 2) / LEVEL_SEPARATION
        smooth = {"enabled": True, "type": "curvedCW" if i % 2 else "curvedCCW", "roundness": min(1.0, bend)}
    else:
        # a link that skips levels arcs around the hop nodes between its ends: vis-network's arc bulges
        # by roundness x length / 2, so pick the roundness that clears the widest level in between (hops
        # stacked LEVEL_SPACING apart) by a margin, further out for each further arc on the same side
        j = i + 1
        between = max((widths.get(lv, 0) for lv in range(level[src] + 1, level[dst])), default=0)
        clearance = max(between - 1, 0) * spacing / 2 + 55 + 45 * ((j - 1) // 2)
        smooth = {"enabled": True, "type": "curvedCW" if j % 2 else "curvedCCW",
                  "roundness": min(1.0, 2 * clearance / (span * LEVEL_SEPARATION))}
    weightless = abs(strongest) < floor

    def line(e: dict) -> str:
        x = e["link"]
        return (f"{x.sentence()}\nfact: ({x.subject}, {x.relation}, {x.object}, {x.time}); "
                f"in path{'s' if len(e['paths']) > 1 else ''} {', '.join('#' + str(p) for p in e['paths'])}; "
                f"∂f/∂link {signed(e['gradient'])}" + (" (no meaningful weight)" if abs(e["gradient"]) < floor else ""))

    if len(facts) == 1:
        label = f"{relation_label(link.relation)}\n{link.delta_label}"
        title = line(facts[0])
    else:
        last = facts[-1]["link"]
        label = f"{relation_label(f'{link.relation} ×{len(facts)}')}\n{link.delta_label} … {last.delta_label}"
        shown = facts[:MAX_FACTS_IN_TOOLTIP]
        more = len(facts) - len(shown)
        title = (f"{len(facts)} facts drawn as one link (width: the strongest, ∂f/∂link {signed(strongest)}):\n"
                 + "\n".join(line(e) for e in shown) + (f"\n… and {more} more" if more else ""))
    net.add_edge(src, dst, label=label, title=title, color=delta_colour(link.delta, dark),
                 dashes=line_style(weightless, bool(link.inferred), bool(link.inverse)),
                 width=edge_width(strongest, floor), smooth=smooth,
                 arrows="from" if link.inverse else "to",  # the head on the fact's object, whichever way it was walked
                 font={"size": 14, "align": "horizontal", "color": ink, "strokeWidth": 0,
                       "background": "rgba(14,17,23,0.85)" if dark else "rgba(255,255,255,0.85)"})


#: line patterns (dash, gap, ... in px) told apart at a glance, even on a thin line: a link that carries no weight is
#: dotted, a fact a model proposed (not observed) dash-dotted, a fact walked backwards dashed; else solid
DOTTED, DASH_DOT, DASHED = [1, 5], [14, 4, 2, 4], [9, 5]


def line_style(weightless: bool, inferred: bool, inverse: bool) -> list[int] | bool:
    """The edge's ``dashes`` for vis-network (False: solid); weightlessness shows first, then an inferred fact."""
    return DOTTED if weightless else DASH_DOT if inferred else DASHED if inverse else False


#: fit the drawing to its frame, arcs and their labels included (not zoomed past 1.6x for a short path), again when the
#: frame is resized; a button that saves the canvas as PNG (with the background painted in)
_FIT_AND_EXPORT = """
<style>body { margin: 0; overflow-x: auto; overflow-y: hidden; } center { display: none; }
#mynetwork { box-sizing: border-box; }
/* pyvis's empty heading and the body margin pushed the frame's bottom out of view; its border, its right edge */</style>
<button id="png" style="position:absolute;top:6px;right:6px;z-index:5;font:13px sans-serif;padding:3px 8px;
  border:1px solid #9ca3af;border-radius:4px;background:#f9fafb;color:#111827;cursor:pointer"
  title="Save the graph as a PNG image">PNG</button>
<div id="scroll-hint" style="display:none;position:fixed;left:6px;bottom:6px;z-index:5;font:13px sans-serif;
  padding:2px 6px;border-radius:4px;background:rgba(249,250,251,0.9);color:#111827">scroll sideways for the rest
  of the graph →</div>
<script>
(function () {
  // a narrow frame (a phone, a half-width window) draws the levels closer together, down to a label's width,
  // rather than shrinking the whole drawing; arcs get a rounder bend to keep their bulge in px
  var SEPARATION = __SEPARATION__, DEPTH = __DEPTH__, separation = SEPARATION, roundness = null;
  // the least zoom a too narrow frame fits the view at (14 px labels stay about 10 px high; the frame then scrolls
  // sideways); a drawing too tall for its frame (capped in height) may still be fitted smaller
  var MIN_SCALE = 0.72;
  // label and node sizes as vis-network draws them (edge labels 14 px, node labels 16 px, arial)
  var ruler = document.createElement("canvas").getContext("2d");
  function textSize(text, px) {
    ruler.font = px + "px arial";
    var lines = String(text || "").split("\\n");
    return {w: Math.max.apply(null, lines.map(function (l) { return ruler.measureText(l).width; })) + 6,
            h: lines.length * px * 1.15 + 6};
  }
  function nodeWidth(id) { return textSize(network.body.nodes[id].options.label, 16).w + 12; }
  function labelled() {
    return Object.keys(network.body.edges).filter(function (id) {
      var e = network.body.edges[id]; return e.from && e.to && e.options.label;
    });
  }
  // the level distance at which every straight link's label fits between its two nodes' boxes and clear of the
  // arrowhead: vis-network centres the label halfway between the node centres, so each half of the distance must
  // hold half the label and half its own node, and the half with the arrowhead (the target's, or the source's for a
  // link walked backwards) the arrowhead too: vis-network draws it 15 + 3 x the line's width px long (a thick link
  // has a long head), plus a gap
  function labelsNeed() {
    var need = 0;
    labelled().forEach(function (id) {
      var e = network.body.edges[id], s = e.options.smooth, arrow = 15 + 3 * (e.options.width || 1) + 6;
      var back = !!(e.options.arrows && e.options.arrows.from && e.options.arrows.from.enabled);
      if (s && s.enabled) return;
      need = Math.max(need, textSize(e.options.label, 14).w
                            + Math.max(nodeWidth(e.fromId) + (back ? 2 * arrow : 16),
                                       nodeWidth(e.toId) + (back ? 16 : 2 * arrow)));
    });
    return Math.ceil(need);
  }
  function relayout() {
    var width = document.getElementById("mynetwork").clientWidth;
    var want = Math.round(Math.max(160, Math.min(SEPARATION, (width - 180) / Math.max(DEPTH, 1))));
    want = Math.max(want, labelsNeed());  // never so close that a label covers a node (the view scales instead)
    if (Math.abs(want - separation) < 8) return false;
    var edges = network.body.data.edges;
    if (roundness === null) saveRoundness();
    separation = want;
    edges.update(Object.keys(roundness).map(function (id) {
      var s = roundness[id];
      return {id: id, smooth: {enabled: true, type: s.type, roundness: Math.min(1.5, s.roundness * SEPARATION / want)}};
    }));
    network.setOptions({layout: {hierarchical: {levelSeparation: want}}});
    return true;
  }
  function saveRoundness() {
    roundness = {};
    network.body.data.edges.get().forEach(function (e) { if (e.smooth && e.smooth.enabled) roundness[e.id] = e.smooth; });
  }
  // where vis-network puts an edge's label: the middle of the line, or of the quadratic curve (t = 1/2)
  function labelBox(e) {
    var x = (e.from.x + e.to.x) / 2, y = (e.from.y + e.to.y) / 2, t = e.edgeType;
    if (e.options.smooth && e.options.smooth.enabled && t && typeof t._getViaCoordinates === "function") {
      var v = t._getViaCoordinates();
      if (v && typeof v.x === "number") {
        x = 0.25 * e.from.x + 0.5 * v.x + 0.25 * e.to.x; y = 0.25 * e.from.y + 0.5 * v.y + 0.25 * e.to.y;
      }
    }
    var s = textSize(e.options.label, 14);
    return {x0: x - s.w / 2, x1: x + s.w / 2, y0: y - s.h / 2, y1: y + s.h / 2};
  }
  function overlaps(a, b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }
  // labels never overlap each other or a node: straight links keep theirs (the level distance made room);
  // an arc whose label would land on another label or a node bends further out until it is clear
  function declutter() {
    var taken = [], updates = [];
    Object.keys(network.getPositions()).forEach(function (id) {
      var b = network.getBoundingBox(id); taken.push({x0: b.left - 4, y0: b.top - 4, x1: b.right + 4, y1: b.bottom + 4});
    });
    var ids = labelled();
    function bend(id) { var s = network.body.edges[id].options.smooth; return s && s.enabled ? s.roundness : -1; }
    ids.sort(function (a, b) { return bend(a) - bend(b); });
    ids.forEach(function (id) {
      var e = network.body.edges[id], s = e.options.smooth, box = labelBox(e);
      if (s && s.enabled) {
        var r = s.roundness, tries = 0;
        while (tries < 25 && taken.some(function (o) { return overlaps(o, box); })) {
          r += 0.06; tries += 1;
          e.setOptions({smooth: {enabled: true, type: s.type, roundness: r}});
          box = labelBox(e);
        }
        if (tries) updates.push({id: id, smooth: {enabled: true, type: s.type, roundness: r}});
      }
      taken.push(box);
    });
    if (updates.length) network.body.data.edges.update(updates);
  }
  function fit() {
    if (typeof network === "undefined") return;
    if (roundness === null) saveRoundness();
    try {
      if (relayout()) {  // the new level distance takes effect with the next drawing: declutter and fit after it
        network.once("afterDrawing", fit); network.redraw(); return;
      }
      declutter();
    } catch (err) { console.warn("evidence graph layout: " + err); }  // still fit the view
    // network.fit() frames the nodes only; arcs (parallel links, links that skip a level) and their
    // labels bulge past them. Frame the nodes and every label instead.
    var box = null;
    function add(x0, y0, x1, y1) {
      if (!box) { box = {x0: x0, y0: y0, x1: x1, y1: y1}; return; }
      box.x0 = Math.min(box.x0, x0); box.y0 = Math.min(box.y0, y0);
      box.x1 = Math.max(box.x1, x1); box.y1 = Math.max(box.y1, y1);
    }
    Object.keys(network.getPositions()).forEach(function (id) {
      var b = network.getBoundingBox(id); add(b.left, b.top, b.right, b.bottom);
    });
    labelled().forEach(function (id) { var b = labelBox(network.body.edges[id]); add(b.x0, b.y0, b.x1, b.y1); });
    if (!box) return;
    var frame = document.getElementById("mynetwork"), pad = 18;
    var tall = (frame.clientHeight - 2 * pad) / Math.max(box.y1 - box.y0, 1);
    var scale = Math.min((frame.clientWidth - 2 * pad) / Math.max(box.x1 - box.x0, 1), tall, 1.6);
    if (scale < MIN_SCALE && tall >= MIN_SCALE) {
      // too narrow a frame (820 px with the sidebar open) would shrink the labels past reading: the drawing keeps
      // a readable size in a wider canvas, and the frame scrolls sideways to it
      var wide = Math.ceil((box.x1 - box.x0) * MIN_SCALE + 2 * pad);
      if (Math.abs(frame.clientWidth - wide) > 2) {
        frame.style.width = wide + "px";
        network.setSize(wide + "px", frame.clientHeight + "px");
      }
      scale = MIN_SCALE;
      document.getElementById("scroll-hint").style.display = "block";
    }
    network.moveTo({position: {x: (box.x0 + box.x1) / 2, y: (box.y0 + box.y1) / 2}, scale: scale, animation: false});
  }
  function refit() {  // a new frame size: start from the frame's own width again
    var frame = document.getElementById("mynetwork");
    if (frame.style.width !== "100%") { frame.style.width = "100%"; network.setSize("100%", frame.clientHeight + "px"); }
    document.getElementById("scroll-hint").style.display = "none";
    fit();
  }
  // the layout is computed when the network is built (before this script runs), so fit now; again after
  // the first drawing and whenever the frame is resized (Streamlit sizes its iframe after loading)
  if (typeof network !== "undefined") { fit(); network.once("afterDrawing", fit); }
  window.addEventListener("resize", refit);
  document.getElementById("png").addEventListener("click", function () {
    var src = document.querySelector("#mynetwork canvas");
    var out = document.createElement("canvas");
    out.width = src.width; out.height = src.height;
    var ctx = out.getContext("2d");
    ctx.fillStyle = "__BG__"; ctx.fillRect(0, 0, out.width, out.height); ctx.drawImage(src, 0, 0);
    var a = document.createElement("a");
    a.href = out.toDataURL("image/png"); a.download = "tpar-evidence.png";
    document.body.appendChild(a); a.click(); a.remove();
  });
})();
</script>
</body>"""


@functools.lru_cache(maxsize=1)
def _vis_assets() -> str:
    """vis-network's CSS and JS as inline tags, from the copy bundled with pyvis (read once)."""
    lib = Path(pyvis.__file__).resolve().parent / "templates" / "lib" / "vis-9.1.2"
    css = (lib / "vis-network.css").read_text(encoding="utf-8")
    js = (lib / "vis-network.min.js").read_text(encoding="utf-8")
    return f"<style>{css}</style>\n<script>{js}</script>\n"


def offline(html: str) -> str:
    """Replace every tag that would fetch from the network (pyvis's CDN links for vis-network and
    bootstrap) by nothing, and inline vis-network instead. (Rendering pyvis's own in-line template
    re-reads and re-renders the 700 kB library on every call: 10x slower.)"""
    html = _EXTERNAL.sub("", html)
    return html.replace("<head>", "<head>\n" + _vis_assets(), 1)
