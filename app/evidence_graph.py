"""The evidence graph: an explanation's top temporal paths as a self-contained pyvis (vis-network)
HTML page. Query entity at the left, answer at the right, hops as levels; each link labelled with
its relation and its time relative to the query; colour by past / same time / future of t_q;
links walked backwards dashed and marked ``←``; thickness on an absolute scale of the link's own
importance ∂f/∂link (a link worth ≈ 0 is drawn thin and dotted whatever the others are worth); hover shows the fact in
words with its absolute date and the paths' importance. The view fits its frame on load and on
resize; a button saves it as PNG; a dark variant follows the app's theme.

Offline and safe: vis-network is inlined (no CDN), pyvis's remaining external references
(bootstrap) are removed, and every name reaches the page only inside JSON that Jinja's ``tojson``
escapes (``<``, ``>``, ``&`` and quotes become ``\\u003c``-style escapes); vis-network shows titles as plain text.
"""

from __future__ import annotations

import functools
import math
import re
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


def graph_height(paths: list[TemporalPath]) -> int:
    """Frame height that fits the paths: more room when many hop entities stack up in one level."""
    per_level: dict[int, set] = {}
    for p in paths:
        for i, x in enumerate(p.links[:-1]):
            per_level.setdefault(i, set()).add(x.target)
    widest = max((len(v) for v in per_level.values()), default=1)
    return int(min(640, max(300, 120 + 90 * widest)))


def evidence_html(explanation: Explanation, height_px: int | None = None, paths: list[TemporalPath] | None = None,
                  dark: bool = False) -> str:
    """HTML of the explanation's paths (default: all of them) as an interactive graph (query entity
    left, answer right)."""
    paths = explanation.paths if paths is None else paths
    height_px = height_px or graph_height(paths)
    depth = max((p.length for p in paths), default=1)
    ink = "#e5e7eb" if dark else "#111827"
    # node labels stay dark on their light boxes in either theme; edge labels take the theme's ink
    net = Network(height=f"{height_px}px", width="100%", directed=True, cdn_resources="remote",
                  bgcolor="#0e1117" if dark else "#ffffff", font_color="#111827")
    box = {"size": 16, "color": "#111827"}
    subject, answer = explanation.subject, explanation.answer
    net.add_node("q", label=subject, level=0, color=QUERY_COLOUR, shape="box", font=box,
                 title=f"question's entity: {subject}")
    net.add_node("a", label=answer, level=depth, color=ANSWER_COLOUR, shape="box", font=box,
                 title=f"answer: {answer}\nscore f(q, a) = {explanation.score:.3f}, rank {explanation.rank:g}")
    level = {"q": 0, "a": depth}
    edges: dict[tuple, dict] = {}
    for k, path in enumerate(paths, start=1):
        links = path.links
        prev = "q"
        for i, link in enumerate(links):
            last = i == len(links) - 1
            node = "a" if last else f"h{i + 1}:{link.target}"
            if not last and node not in net.get_nodes():
                net.add_node(node, label=link.target, level=i + 1, color=HOP_COLOUR, shape="box", font=box,
                             title=f"{link.target} (hop {i + 1})")
                level[node] = i + 1
            key = (prev, node, link.subject, link.relation, link.object, link.time_step)
            e = edges.setdefault(key, {"link": link, "paths": [], "gradient": link.gradient})
            e["paths"].append(k)
            if abs(link.gradient) > abs(e["gradient"]):  # the same fact used in another layer
                e["gradient"] = link.gradient
            prev = node
    floor = explanation.floor
    parallel: dict[tuple[str, str], int] = {}
    for (src, dst, *_), e in edges.items():
        link = e["link"]
        i = parallel[(src, dst)] = parallel.get((src, dst), -1) + 1
        # parallel links between the same two nodes fan out: straight, then alternately bent; links
        # that skip a level (a short path drawn to the answer) always bend, around the hop nodes
        skips = level[dst] - level[src] > 1
        if i == 0 and not skips:
            smooth = {"enabled": False}
        else:
            j = i + 1 if skips else i
            smooth = {"enabled": True, "type": "curvedCW" if j % 2 else "curvedCCW",
                      "roundness": min(0.9, (0.3 if skips else 0.0) + 0.2 * ((j + 1) // 2))}
        weightless = abs(e["gradient"]) < floor
        title = (f"{link.sentence()}\nfact: ({link.subject}, {link.relation}, {link.object}, {link.time})\n"
                 f"in path{'s' if len(e['paths']) > 1 else ''} {', '.join('#' + str(p) for p in e['paths'])}; "
                 f"∂f/∂link {signed(e['gradient'])}" + (" (no meaningful weight)" if weightless else ""))
        net.add_edge(src, dst, label=f"{link.arrow_label}\n{link.delta_label}", title=title,
                     color=delta_colour(link.delta, dark),
                     # dotted: no weight; long dashes: an inferred fact; dashes: walked backwards
                     dashes=[2, 4] if weightless else [12, 6] if link.inferred else bool(link.inverse),
                     width=edge_width(e["gradient"], floor), arrows="to", smooth=smooth,
                     font={"size": 14, "align": "middle", "color": ink, "strokeWidth": 0,
                           "background": "rgba(14,17,23,0.85)" if dark else "rgba(255,255,255,0.85)"})
    net.set_options("""{
      "layout": {"hierarchical": {"enabled": true, "direction": "LR", "sortMethod": "directed",
                                  "levelSeparation": 260, "nodeSpacing": 90}},
      "physics": {"enabled": false},
      "interaction": {"hover": true, "tooltipDelay": 80, "navigationButtons": false}
    }""")
    html = offline(net.generate_html())
    return html.replace("</body>", _FIT_AND_EXPORT.replace("__BG__", "#0e1117" if dark else "#ffffff"), 1)


#: fit the drawing to its frame with a margin for the arcs (not zoomed past 1.6x for a short path), again when the frame is
#: resized; a button that saves the canvas as PNG (with the background painted in)
_FIT_AND_EXPORT = """
<button id="png" style="position:absolute;top:6px;right:6px;z-index:5;font:13px sans-serif;padding:3px 8px;
  border:1px solid #9ca3af;border-radius:4px;background:#f9fafb;color:#111827;cursor:pointer"
  title="Save the graph as a PNG image">PNG</button>
<script>
(function () {
  function fit() {
    if (typeof network === "undefined") return;
    network.fit({maxZoomLevel: 1.6, animation: false});
    // fit() frames the nodes only: the arcs of links that skip a level bulge past them, so leave a margin
    network.moveTo({scale: network.getScale() * 0.85, animation: false});
  }
  if (typeof network !== "undefined") { network.once("afterDrawing", fit); }
  window.addEventListener("resize", fit);
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
