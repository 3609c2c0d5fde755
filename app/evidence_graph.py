"""The evidence graph: an explanation's top temporal paths as a self-contained pyvis (vis-network)
HTML page. Query entity at the left, answer at the right, hops as levels; each link labelled with
its relation and its time relative to the query; colour by past / same time / future of t_q;
inverse links dashed; hover shows the fact with its absolute date and the paths' importance.

Offline and safe: vis-network is inlined (no CDN), pyvis's remaining external references
(bootstrap) are removed, and every name reaches the page only inside JSON that Jinja's ``tojson``
escapes (``<``, ``>``, ``&`` and quotes become ``\\u003c``-style escapes); vis-network shows titles as plain text.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pyvis
from pyvis.network import Network

from tpar.reasoning.explanation import Explanation

PAST, SAME, FUTURE = "#1d4ed8", "#6b7280", "#ea580c"
QUERY_COLOUR, ANSWER_COLOUR, HOP_COLOUR = "#99f6e4", "#fed7aa", "#e5e7eb"
_EXTERNAL = re.compile(r"<(link|script)\b[^>]*(?:href|src)=\"https?://[^>]*>(?:\s*</script>)?", re.I | re.S)


def delta_colour(delta: int) -> str:
    return PAST if delta < 0 else (FUTURE if delta > 0 else SAME)


def evidence_html(explanation: Explanation, height_px: int = 520) -> str:
    """HTML of the explanation's paths as an interactive graph (query entity left, answer right)."""
    paths = explanation.paths
    depth = max((p.length for p in paths), default=1)
    net = Network(height=f"{height_px}px", width="100%", directed=True, cdn_resources="remote",
                  bgcolor="#ffffff", font_color="#111827")
    subject, answer = explanation.subject, explanation.answer
    net.add_node("q", label=subject, level=0, color=QUERY_COLOUR, shape="box",
                 title=f"query entity: {subject}")
    net.add_node("a", label=answer, level=depth, color=ANSWER_COLOUR, shape="box",
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
                net.add_node(node, label=link.target, level=i + 1, color=HOP_COLOUR, shape="box",
                             title=f"{link.target} (hop {i + 1})")
                level[node] = i + 1
            key = (prev, node, link.subject, link.relation, link.object, link.time_step)
            e = edges.setdefault(key, {"link": link, "paths": [], "importance": path.importance})
            e["paths"].append(k)
            e["importance"] = max(e["importance"], path.importance)
            prev = node
    top = max((abs(e["importance"]) for e in edges.values()), default=1.0) or 1.0
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
        fact = f"({link.subject}, {link.relation}, {link.object}, {link.time})"
        title = (f"{fact}\n{'walked backwards (inverse relation)' if link.inverse else 'walked forwards'}\n"
                 f"Δt = {link.delta_label} from the query time\n"
                 f"in path{'s' if len(e['paths']) > 1 else ''} {', '.join('#' + str(p) for p in e['paths'])}; "
                 f"importance {e['importance']:+.4f}")
        net.add_edge(src, dst, label=f"{link.relation_label}\n{link.delta_label}", title=title,
                     color=delta_colour(link.delta), dashes=bool(link.inverse),
                     width=1 + 4 * abs(e["importance"]) / top, arrows="to", smooth=smooth,
                     font={"size": 11, "align": "middle", "background": "rgba(255,255,255,0.85)"})
    net.set_options("""{
      "layout": {"hierarchical": {"enabled": true, "direction": "LR", "sortMethod": "directed",
                                  "levelSeparation": 300, "nodeSpacing": 110}},
      "physics": {"enabled": false},
      "interaction": {"hover": true, "tooltipDelay": 80, "navigationButtons": false}
    }""")
    return offline(net.generate_html())


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
